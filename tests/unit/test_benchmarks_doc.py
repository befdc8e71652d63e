"""docs/benchmarks.md (and the README's results table) is what benchmarks/report.py builds from
benchmarks/results/*.json, byte for byte.

A result file changed without rebuilding the page (`./run bench report`) fails here; so does a
result without the command that regenerates it.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_report():
    spec = importlib.util.spec_from_file_location("benchmarks_report", ROOT / "benchmarks" / "report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_page_is_what_the_results_build():
    report = load_report()
    assert (ROOT / "docs" / "benchmarks.md").read_text() == report.render(), (
        "docs/benchmarks.md is out of date: run ./run bench report"
    )


def test_readme_results_block_is_what_the_results_build():
    report = load_report()
    readme = (ROOT / "README.md").read_text()
    assert readme == report.with_glance(readme), "README.md's results block is out of date: run ./run bench report"


def test_a_changed_result_changes_the_page(tmp_path):
    """The page reads its numbers from the JSON: SAC seed 0's last evaluation 3205.13 -> 2400.0 shows as
    '2,400' in its row, the mean of the last evaluations (2400 + 3160.50 + 3249.41) / 3 = 2936.64 as
    '**2,937**' (the README's mean row too), and the per-seed ≥ 2,500 target turns to not met."""
    report = load_report()
    results = tmp_path / "results"
    shutil.copytree(ROOT / "benchmarks" / "results", results, ignore=shutil.ignore_patterns("tmp"))
    data = json.loads((results / "sac_hopper.json").read_text())
    data["runs"][0]["final_eval"] = 2400.0
    data["mean_final_eval"] = (2400.0 + data["runs"][1]["final_eval"] + data["runs"][2]["final_eval"]) / 3
    (results / "sac_hopper.json").write_text(json.dumps(data))
    page = report.render(results)
    assert "| 0 | 3,253 (285k) | 2,400 | 3,256 ± 8 |" in page
    assert "| **mean** | 3,318 | **2,937** | **3,257** |" in page
    assert "Target (≥ 2,500 at 300k steps) **not met**" in page
    assert (
        "| SAC Hopper-v5 at 300k steps, last evaluation, mean of 3 seeds | 2,937 | ≥ 2,500: met |"
        in report.with_glance("x\n<!-- results:start -->\n<!-- results:end -->\n", results)
    )


def test_every_result_names_its_command():
    for path in sorted((ROOT / "benchmarks" / "results").glob("*.json")):
        data = json.loads(path.read_text())
        command = data.get("command") or data.get("meta", {}).get("command")  # bench_meta's, or one added by hand
        assert isinstance(command, str) and command, f"{path.name} has no command"


def test_conditions_name_what_an_old_result_does_not_record():
    """A result without bench_meta's block says which conditions it lacks instead of inventing them."""
    report = load_report()
    text = report.conditions(
        {"command": "./run bench x", "date": "2026-12-01", "machine": {"load_average_before": [0.5, 0.4, 0.3]}}
    )
    assert text == (
        "Regenerate: `./run bench x`. Recorded: 2026-12-01; load average 0.50 before. "
        "Not recorded (the file predates `bench_meta()`): commit, CPU, load after, versions."
    )


def test_numbers_use_separators_and_a_typographic_minus():
    report = load_report()
    assert [report.n(-1632.4), report.n(3457.5), report.n(-0.2), report.n(0.456, 1)] == ["−1,632", "3,458", "0", "0.5"]
    assert [report.signed(742.0), report.signed(-686.3)] == ["+742", "−686"]


def load_meta():
    spec = importlib.util.spec_from_file_location("benchmarks_meta", ROOT / "benchmarks" / "meta.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_meta_records_the_conditions():
    meta = load_meta().bench_meta([0.5, 0.25, 0.125], ["no-such-distribution"])
    assert meta["load_average_before"] == [0.5, 0.25, 0.125]
    assert len(meta["load_average_after"]) == 3
    assert meta["versions"]["no-such-distribution"] is None and meta["versions"]["acrl"]
    assert meta["date"].endswith("+00:00") and meta["cores"] >= 1 and meta["command"].startswith("python ")


def test_benchmarks_write_to_the_scratch_folder_by_default():
    """Every benchmark's --out defaults to benchmarks/results/tmp/ (git-ignored), never a committed result."""
    meta = load_meta()
    assert meta.scratch_path("x") == ROOT / "benchmarks" / "results" / "tmp" / "x.json"
    assert "benchmarks/results/tmp/" in (ROOT / ".gitignore").read_text().split()
    checked = []
    for script in sorted((ROOT / "benchmarks").glob("*.py")):
        text = script.read_text()
        for call in ast.walk(ast.parse(text)):
            if isinstance(call, ast.Call) and call.args and getattr(call.args[0], "value", None) == "--out":
                default = next(
                    (ast.get_source_segment(text, k.value) for k in call.keywords if k.arg == "default"), None
                )
                if default is None:  # chosen after parsing (seed_runs.py: per result name)
                    default = text[text.index("args.out or") :].split("\n")[0]
                assert "scratch_path(" in default or '"tmp"' in default or "SCRATCH" in default, script.name
                checked.append(script.stem)
    assert {"a3c_scaling", "a3c_vs_a2c", "ppo_vs_sb3", "seed_runs", "update_roofline", "vector_env"} <= set(checked)
