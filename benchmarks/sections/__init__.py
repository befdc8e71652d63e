"""The parts of docs/benchmarks.md, one module each, that benchmarks/report.py joins in its `SECTIONS` order.

Each section is a function of the loaded results (`{file stem: JSON}`) returning its markdown, or "" while its
result file does not exist; `formats` holds the number formats and a result's conditions that every section
writes with, and `glance` the README's "results at a glance" table. The modules import each other as `sections.*`,
with benchmarks/ on the path, as it is for a script run from there (`python benchmarks/report.py`).
"""
