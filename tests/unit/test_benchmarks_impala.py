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
    """IQM 6.5 against A3C's 6.4: met; 6.3: not met; each CI [IQM - 1, IQM + 1], so those overlap A3C's
    [5.4, 7.4] and 9.0's [8, 10] does not."""
    report = benchmark_module()

    def setting(iqm: float) -> dict:
        runs = [{"seed": s, "step": 1_000_000, "final_return_mean": iqm} for s in range(3)]
        return {"flags": [], "runs": runs, "mean": iqm, "iqm": iqm, "mean_ci": [iqm, iqm], "iqm_ci": [iqm - 1, iqm + 1]}

    for iqm, said, overlap in ((6.5, "met", "overlap"), (6.3, "not met", "overlap"), (9.0, "met", "do not overlap")):
        d = {
            "meta": META,
            "total_steps": 1_000_000,
            "statistic": "the last evaluation of each run",
            "settings": {
                "acrl IMPALA, 2 actors (the MinAtar preset)": setting(iqm),
                "acrl A3C, 2 workers (the MinAtar preset)": setting(6.4),
            },
        }
        page = report.render(results_with(tmp_path / str(iqm), {"impala_minatar": d}))
        assert f"| acrl IMPALA, 2 actors (the MinAtar preset) | {iqm}, {iqm}, {iqm} | {iqm:.2f} [" in page
        assert f"at the same steps): **{said}** ({iqm:.2f} against\n6.40; the 95% CIs {overlap})." in page


def speed_result(rllib_steps_per_s: float | None) -> dict:
    """A hand-made impala_vs_rllib.json on CartPole-v1: acrl IMPALA 12,000 env steps/s with 2 actors (6,000 with
    1), waiting 25% and 40% of the learner's time; acrl A3C 8,000."""
    rllib = {"steps_per_s": rllib_steps_per_s, "version": "2.60.0"} if rllib_steps_per_s else None
    cartpole = {
        "settings": {"n_envs": 4, "unroll_length": 20, "batch_size": 8},
        "acrl": {"steps_per_s": 12000.0, "wait_fraction": 0.25},
        "rllib": rllib,
        "a3c": {"steps_per_s": 8000.0, "workers": 2},
        "scaling": {
            "1": {"steps_per_s": 6000.0, "wait_fraction": 0.4},
            "2": {"steps_per_s": 12000.0, "wait_fraction": 0.25},
        },
        "rllib_model_config": {"fcnet_hiddens": [64, 64], "vf_share_layers": False},
    }
    return {
        "meta": {**META, "command": "python benchmarks/impala_vs_rllib.py"},
        "settings": {"actors": 2, "steps": 200000, "repeats": 3, "threads": 1},
        "rllib": {"version": "2.60.0" if rllib else None, "run": rllib is not None},
        "envs": {"CartPole-v1": cartpole},
    }


def test_speed_goal_is_twice_rllibs_env_steps_per_second(tmp_path):
    """12,000 against RLlib's 5,000 is 2.40× (met), against 8,000 1.50× (not met); without RLlib, not met. Against
    A3C 12,000 / 8,000 = 1.50×; 2 actors run 2.00× one; the learner waits 25% and learns 75% of its time."""
    report = benchmark_module()
    for rllib, said in ((5000.0, "**met** (2.40×)"), (8000.0, "**not met** (1.50×)"), (None, "**not met**.")):
        results = results_with(tmp_path / str(rllib), {"impala_vs_rllib": speed_result(rllib)})
        page = report.render(results)
        assert f"Goal (#49: ≥ 2× RLlib's env steps/s): CartPole-v1 {said}" in page
    assert "| CartPole-v1 | 2 × 4, 20, 8 | 12,000 | not run | – | 8,000 | 1.50× |" in page
    assert "| CartPole-v1 | 2 | 12,000 | 2.00× | 25% | 75% |" in page
    assert "| CartPole-v1 | 1 | 6,000 | 1.00× | 40% | 60% |" in page
    assert "`DefaultModelConfig(fcnet_hiddens=[64, 64], vf_share_layers=False)`" in page


def test_rllib_gets_acrls_cartpole_network_layer_for_layer():
    """acrl IMPALA's CartPole preset: separate 64-64 tanh actor and critic, a linear output on each."""
    speed = benchmark_module("impala_vs_rllib")
    spec = speed.rllib_spec("CartPole-v1", actors=2, steps=1000, threads=1, seed=0)
    assert spec["model_config"] == {
        "fcnet_hiddens": [64, 64],
        "fcnet_activation": "tanh",
        "vf_share_layers": False,
        "head_fcnet_hiddens": [],
    }
    assert spec["minatar_game"] is None and spec["actors"] == 2
    assert {k: spec["settings"][k] for k in ("n_envs", "unroll_length", "batch_size")} == {
        "n_envs": 4,
        "unroll_length": 20,
        "batch_size": 8,
    }
