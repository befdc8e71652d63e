"""docs/benchmarks.md's IMPALA section (benchmarks/sections/impala.py) renders from hand-made results: the CartPole
and MinAtar learning results of benchmarks/seed_runs.py and the speed comparison of benchmarks/impala_vs_rllib.py,
with their goals met or not; without any of the files the page has no IMPALA section."""

from __future__ import annotations

import json
import shutil

from tests.unit.test_benchmarks_doc import ROOT, benchmark_module

META = {"command": "python benchmarks/seed_runs.py impala_cartpole", "date": "2026-12-06T08:00:00+00:00"}


def results_with(tmp_path, files: dict[str, dict]):
    """A copy of the committed results with `files` (stem -> JSON) added."""
    results = tmp_path / "results"
    shutil.copytree(ROOT / "benchmarks" / "results", results, ignore=shutil.ignore_patterns("tmp", "parts"))
    for stem, data in files.items():
        (results / f"{stem}.json").write_text(json.dumps(data))
    return results


def test_without_its_results_the_page_has_no_impala_section(tmp_path):
    report = benchmark_module()
    results = results_with(tmp_path, {})
    for stem in ("impala_cartpole", "impala_minatar", "impala_vs_rllib"):
        (results / f"{stem}.json").unlink(missing_ok=True)
    assert "## IMPALA" not in report.render(results)


def test_cartpole_goal_is_met_only_when_every_seeds_best_checkpoint_reaches_475(tmp_path):
    """best.pt on 10 fresh episodes: 500, 480, 490 -> every seed >= 475, met; 500, 470, 490 -> 2 of 3, not met."""
    report = benchmark_module()

    def cartpole(fresh: list[float]) -> dict:
        runs = [
            {"seed": s, "best_eval": 500.0, "best_step": 81920, "final_eval": 431.25}
            | {"best_checkpoint_fresh_10_episodes": f}
            for s, f in enumerate(fresh)
        ]
        return {"meta": META, "total_steps": 500_000, "evaluation": "10 episodes every 10,240 steps", "runs": runs}

    page = report.render(results_with(tmp_path, {"impala_cartpole": cartpole([500.0, 480.0, 490.0])}))
    assert "### CartPole-v1 within 500k steps" in page
    assert "| 1 | 500 at 82k | 431.2 | 480.0 |" in page
    assert "judged on best.pt's fresh episodes):\n**met**, 3 of 3 seeds." in page
    page = report.render(results_with(tmp_path / "b", {"impala_cartpole": cartpole([500.0, 470.0, 490.0])}))
    assert "**not met**, 2 of 3 seeds." in page


def test_minatar_goal_compares_impalas_iqm_with_a3cs(tmp_path):
    """IQM 6.5 against A3C's 6.4: met; 6.3 against 6.4: not met."""
    report = benchmark_module()

    def setting(iqm: float) -> dict:
        runs = [{"seed": s, "step": 1_000_000, "final_return_mean": iqm} for s in range(3)]
        return {"flags": [], "runs": runs, "mean": iqm, "iqm": iqm, "mean_ci": [iqm, iqm], "iqm_ci": [iqm - 1, iqm + 1]}

    for iqm, said in ((6.5, "met"), (6.3, "not met")):
        d = {
            "meta": META,
            "total_steps": 1_000_000,
            "statistic": "the last evaluation of each run",
            "settings": {
                "acrl IMPALA, 2 actors (the MinAtar preset)": setting(iqm),
                "acrl A3C, 2 workers (the MinAtar preset)": setting(6.4),
            },
        }
        page = report.render(results_with(tmp_path / said.replace(" ", "-"), {"impala_minatar": d}))
        assert f"| acrl IMPALA, 2 actors (the MinAtar preset) | {iqm}, {iqm}, {iqm} | {iqm:.2f} [" in page
        assert f"at the same steps): **{said}** ({iqm:.2f} against\n6.40)." in page
