"""Where benchmark results go by default, and the repository's folders the benchmarks name.

Every result records the run that produced it as `meta`: `acrl.core.provenance.provenance()` (the
command, the commit, the date, the CPU, the load average before and after, the versions), which
benchmarks/report.py prints above each table. A benchmark writes to `scratch_path(NAME)`
(benchmarks/results/tmp/, git-ignored) unless `--out` names a file, so a trial run never overwrites a
committed result.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def scratch_path(name: str) -> Path:
    """benchmarks/results/tmp/NAME.json: the default `--out` of a benchmark (git-ignored)."""
    return RESULTS / "tmp" / f"{name}.json"
