"""benchmarks/offline_vs_d3rlpy.py: d3rlpy's config fields set to acrl's Hopper settings where their defaults differ
(without d3rlpy: the fields as data), and its docs/benchmarks.md section over a hand-made result."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

from acrl.algos import make_config

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "benchmarks") not in sys.path:
    sys.path.insert(0, str(ROOT / "benchmarks"))

import offline_vs_d3rlpy as script  # noqa: E402
from offline_vs_d3rlpy import d3rlpy_rows, d3rlpy_settings, table_datasets  # noqa: E402
from sections.offline import d4rl_hopper, offline_vs_d3rlpy  # noqa: E402


def hopper(algo: str):
    """acrl's config of `algo` on Hopper-v5 (its preset: the papers' D4RL settings), 50,000 updates."""
    return make_config(algo, "Hopper-v5", None, None, dataset="hopper.h5", total_steps=50_000)[1]


def test_d3rlpy_fields_that_differ_by_default_take_acrl_s_settings():
    td3_bc = d3rlpy_settings("td3_bc", hopper("td3_bc"))
    assert td3_bc["observation_scaler"] == "standard"  # d3rlpy: none; the paper normalises states
    assert (td3_bc["target_smoothing_sigma"], td3_bc["target_smoothing_clip"], td3_bc["alpha"]) == (0.2, 0.5, 2.5)
    assert td3_bc["update_actor_interval"] == 2 and td3_bc["actor_encoder_factory"] == [256, 256]
    iql = d3rlpy_settings("iql", hopper("iql"))
    assert iql["reward_scaler"] == 1000.0 and iql["actor_cosine_steps"] == 50_000  # d3rlpy: neither
    assert (iql["expectile"], iql["weight_temp"], iql["max_weight"]) == (0.7, 3.0, 100.0)
    cql = d3rlpy_settings("cql", hopper("cql"))
    assert (cql["alpha_learning_rate"], cql["initial_alpha"], cql["conservative_weight"]) == (0.0, 1.0, 5.0)
    assert "alpha_threshold" not in cql and cql["critic_encoder_factory"] == [256, 256, 256]  # d3rlpy: 256-256
    assert (cql["actor_learning_rate"], cql["critic_learning_rate"], cql["temp_learning_rate"]) == (1e-4, 3e-4, 1e-4)
    bc = d3rlpy_settings("bc", hopper("bc"))
    assert bc == {
        "learning_rate": 1e-3,
        "batch_size": 100,
        "policy_type": "deterministic",
        "encoder_factory": [400, 300],
    }


def run(algo: str, seed: int, scores: tuple[float, float], speeds: tuple[float, float]) -> dict:
    acrl, d3 = ({"score": s, "updates_per_s": v} for s, v in zip(scores, speeds, strict=True))
    return {"dataset": "medium.h5", "kind": "medium", "algo": algo, "seed": seed, "acrl": acrl, "d3rlpy": d3}


def test_the_section_shows_scores_speeds_and_the_goals():
    rows = [
        run("td3_bc", 0, (50.0, 40.0), (300.0, 100.0)),
        run("td3_bc", 1, (60.0, 50.0), (320.0, 140.0)),
        run("cql", 0, (10.0, 50.0), (90.0, 30.0)),
        run("cql", 1, (12.0, 60.0), (90.0, 30.0)),
    ]
    result = {"updates": 1000, "threads": 1, "jobs": 2, "eval_episodes": 10, "rows": rows, "meta": {}}
    result["corl"] = {"hopper-medium-v2": {"bc": 53.5, "td3_bc": 60.4, "cql": 59.1, "iql": 67.5}}
    text = offline_vs_d3rlpy({"offline_vs_d3rlpy": result})
    lines = {line.split(" | ")[1]: line for line in text.splitlines() if line.startswith("| medium |")}
    # TD3+BC: means 55 and 45 (each CI within [50, 60] and [40, 50]: they meet); updates/s medians 310 and 120.
    assert "| 55.0 [" in lines["TD3+BC"] and "] | **met** | 310.0 | 120.0 | 2.58× | **met** |" in lines["TD3+BC"]
    # CQL: 11 against 55, its CI below d3rlpy's: the score goal not met, the speed goal met (3×).
    assert "] | **not met** | 90.0 | 30.0 | 3.00× | **met** |" in lines["CQL"]
    assert "Score goal met on 1 of 2 rows, speed goal on 2." in text
    assert "| hopper-medium-v2 | 60.4 | 67.5 | 59.1 | 53.5 |" in text  # CORL's, in the order TD3+BC, IQL, CQL, BC
    assert offline_vs_d3rlpy({}) == "" and "The same update alone" not in text
    # the update alone, as the roofline section measured it (CQL's there; BCQ's has no row here): 4.0 / 5.0 = 0.80
    roofline = {"meta": {"commit": "abcdef0123"}, "threads": {"1": {"cql": {"acrl": 4.0, "d3rlpy": 5.0}}}}
    roofline["threads"]["1"]["bcq"] = {"acrl": 20.0, "d3rlpy": 10.0}
    text = offline_vs_d3rlpy({"offline_vs_d3rlpy": result, "update_roofline": roofline})
    assert "commit abcdef0), acrl's updates/s against d3rlpy's: CQL 4.0 against 5.0 (0.80×) (the table's" in text
    # run by parts: each part's algorithms with its own conditions
    for row in rows:
        row["part"] = 0 if row["algo"] == "td3_bc" else 1
    result["parts"] = [{"command": "first", "cpu": "Xeon"}, {"command": "second", "cpu": "EPYC"}]
    text = offline_vs_d3rlpy({"offline_vs_d3rlpy": result})
    assert "d3rlpy's side ran in 2 parts:\n\n- TD3+BC: Regenerate: `first`. Recorded: Xeon." in text
    assert "\n- CQL: Regenerate: `second`. Recorded: EPYC." in text


@pytest.mark.parametrize("algo", ["td3_bc", "iql", "cql", "bc"])
def test_every_field_is_json(algo):
    import json

    assert json.loads(json.dumps(d3rlpy_settings(algo, hopper(algo)))) == d3rlpy_settings(algo, hopper(algo))


def test_the_d4rl_table_shows_each_learner_s_scores_and_corl_s_beside_them():
    """A hand-made d4rl_hopper.json (two kinds, two learners): mean ± std and IQM [CI] per learner to one decimal,
    the behavioral policy's and the dataset's scores, CORL's last scores in the learners' order."""

    def cell(final: float) -> dict:
        return {"final": [final, 2.0], "iqm": final + 0.5, "iqm_ci": [final - 3.0, final + 4.0], "best": [80.0, 1.0]}

    table = {
        "behavioral": {k: {"return": [31.1, 0.0], "data_episodes": [32.4, 0.0]} for k in ("medium", "medium-replay")},
        "td3_bc": {"medium": cell(55.0), "medium-replay": cell(40.0)},
        "bc": {"medium": cell(50.0), "medium-replay": cell(20.0)},
    }
    d = {
        "meta": {}, "kinds": ["medium", "medium-replay"], "seeds": [0, 1, 2], "updates": 10000, "eval_episodes": 10,
        "wall_clock_s": 5400.0, "reference": "D4RL's hopper references", "table": table,
    }  # fmt: skip
    text = d4rl_hopper({"d4rl_hopper": d})
    assert "Hopper-v5 medium and medium-replay\ndatasets" in text and "its README):\nTD3+BC and BC, each" in text
    assert "\n3 seeds, 10,000 updates per run (CORL trains 1M), 1.5 hours of wall clock" in text
    assert "References: D4RL's hopper references." in text
    assert "| behavioral policy | 31.1 ± 0.0 | 31.1 ± 0.0 |" in text
    assert "| TD3+BC | 55.0 ± 2.0 | 40.0 ± 2.0 |" in text
    assert "| TD3+BC: IQM [95% CI] | 55.5 [52.0, 59.0] | 40.5 [37.0, 44.0] |" in text
    assert "| BC | 50.0 ± 2.0 | 20.0 ± 2.0 |" in text
    assert "| dataset episodes | 32.4 ± 0.0 | 32.4 ± 0.0 |" in text
    assert "| hopper-medium-v2 | 60.4 | 53.5 |" in text and "| hopper-medium-replay-v2 | 64.4 | 29.8 |" in text
    assert d4rl_hopper({}) == ""


def hopper_dataset(path: Path, rewards: list[float]) -> Path:
    """A 4-row Hopper-v5 medium dataset, two episodes of two steps (a terminal, then a timeout)."""
    import numpy as np

    from acrl.parts.datasets import OfflineDataset, save_dataset

    obs = np.zeros((4, 11), dtype=np.float32)
    data = OfflineDataset(
        observations=obs,
        actions=np.zeros((4, 3), dtype=np.float32),
        rewards=np.array(rewards, dtype=np.float32),
        next_observations=obs,
        terminals=np.array([False, True, False, False]),
        timeouts=np.array([False, False, False, True]),
        attrs={"env_id": "Hopper-v5", "kind": "medium", "random_return": -20.0},
    )
    save_dataset(path, data)
    return path


def test_d3rlpy_runs_beside_the_table_s_runs_on_its_own_datasets(tmp_path, monkeypatch):
    """acrl's numbers come from the table (its score, final return and updates/s); d3rlpy runs once per seed with
    the table's budget, evaluation episodes, seeds + 10,000 and overrides, its return scored with D4RL's hopper
    references; a finished run is not run again; a dataset with other episodes than the table's is refused."""
    h5 = hopper_dataset(tmp_path / "medium.h5", [1.0, 2.0, 3.0, 4.0])  # episodes 3 and 7: mean 5
    runs = [{"score": 40.0 + seed, "final": 1300.0, "updates_per_s": 90.0, "run_dir": f"s{seed}"} for seed in (0, 1)]
    table = {
        "env_id": "Hopper-v5",
        "kinds": ["medium"],
        "seeds": [0, 1],
        "updates": 3000,
        "eval_episodes": 7,
        "expert_return": None,
        "overrides": {"td3_bc_overrides": {"alpha": 1.0}},
        "results": {"medium": {"behavioral": [{"data_episode_return": 5.0}] * 2, "td3_bc": runs}},
    }
    assert table_datasets(table, [h5]) == {"medium": h5}
    other = hopper_dataset(tmp_path / "other.h5", [1.0, 2.0, 3.0, 5.0])
    with pytest.raises(SystemExit, match="the table's medium dataset 5.0"):
        table_datasets(table, [other])

    specs = []

    def fake_d3rlpy(python, spec, script):
        specs.append(spec)
        return {"return_mean": -20.0 + 3254.572305 * 0.5, "updates_per_s": 30.0}  # D4RL's hopper: score 50

    monkeypatch.setattr(script, "run_d3rlpy", fake_d3rlpy)
    monkeypatch.setattr(script, "SCRATCH", tmp_path)
    args = argparse.Namespace(algos=["td3_bc"], jobs=1, quick=False)
    saved = []
    rows = d3rlpy_rows(Path("python"), table, {"medium": h5}, args, [], saved.append)
    assert [(r["seed"], r["acrl"]["score"], r["acrl"]["updates_per_s"]) for r in rows] == [
        (0, 40.0, 90.0),
        (1, 41.0, 90.0),
    ]
    assert [r["d3rlpy"]["score"] for r in rows] == [pytest.approx(50.0, abs=0.01)] * 2
    assert [(s["seed"], s["updates"], s["eval_episodes"], s["eval_seed"]) for s in specs] == [
        (0, 3000, 7, 10_000),
        (1, 3000, 7, 10_001),
    ]
    assert specs[0]["settings"]["alpha"] == 1.0 and len(saved) == 2  # the table's override; saved after each run
    again = d3rlpy_rows(Path("python"), table, {"medium": h5}, args, rows[:1], saved.append)
    assert len(specs) == 3 and [r["seed"] for r in again] == [0, 1]  # seed 0 kept, seed 1 run again


def test_a_comparison_run_by_parts_keeps_each_part_s_runs_and_conditions(tmp_path, monkeypatch):
    """`main` twice on one --out, TD3+BC then BC: the second keeps the first's rows, adds its own, and records both
    invocations' provenance in `parts`, each row its part's index."""
    import json

    h5 = hopper_dataset(tmp_path / "medium.h5", [1.0, 2.0, 3.0, 4.0])  # episodes 3 and 7: mean 5
    run = {"score": 40.0, "final": 1300.0, "updates_per_s": 90.0, "run_dir": "s0"}
    table = {
        "env_id": "Hopper-v5", "kinds": ["medium"], "seeds": [0], "updates": 3000, "eval_episodes": 7,
        "expert_return": None, "overrides": {},
        "results": {"medium": {"behavioral": [{"data_episode_return": 5.0}], "td3_bc": [run], "bc": [run]}},
    }  # fmt: skip
    (tmp_path / "table.json").write_text(json.dumps(table))
    monkeypatch.setattr(script, "ensure_venv", lambda: Path("python"))
    monkeypatch.setattr(script, "run_d3rlpy", lambda python, spec, file: {"return_mean": 0.0, "updates_per_s": 30.0})
    monkeypatch.setattr(script, "SCRATCH", tmp_path)
    out = tmp_path / "out.json"
    common = ["--table", str(tmp_path / "table.json"), "--datasets", str(h5), "--jobs", "1", "--out", str(out)]
    assert script.main([*common, "--algos", "td3_bc"]) == 0
    assert script.main([*common, "--algos", "bc"]) == 0
    summary = json.loads(out.read_text())
    assert [(r["algo"], r["part"]) for r in summary["rows"]] == [("td3_bc", 0), ("bc", 1)]
    assert len(summary["parts"]) == 2 and summary["parts"][1] == summary["meta"]
