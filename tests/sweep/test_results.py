"""A sweep's figure, from run directories written by hand: a panel per environment, and the final
evaluations as points when the runs evaluate once (checked on matplotlib's artists, not pixels)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

import acrl.sweep.results
from acrl.sweep.results import summarize

pytest.importorskip("rliable")


def test_an_offline_sweep_over_datasets_draws_a_panel_per_environment_and_one_evaluation_as_points(
    tmp_path, monkeypatch
):
    envs = {"final": "Pendulum-v1", "imperfect": "Pendulum-v1", "hopper": "Hopper-v5"}
    spec = {
        "algo": "bc",
        "env": None,
        "seeds": [0, 1],
        "total_steps": 1000,
        "preset": None,
        "dataset": [str(tmp_path / f"{name}.h5") for name in envs],
        "set": {},
    }
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(spec))
    finals = {}
    for name, env_id in envs.items():
        for seed in (0, 1):
            run = tmp_path / f"{name}-s{seed}"  # the sweep's names: the dataset's stem without --env
            run.mkdir()
            (run / "config.yaml").write_text(yaml.safe_dump({"algo": "bc", "config": {"env_id": env_id, "seed": seed}}))
            finals[run.name] = -100.0 * (seed + 1) - len(name)
            (run / "metrics.csv").write_text(f"step,eval/return_mean\n1000,{finals[run.name]}\n")  # one evaluation
            (run / "job.json").write_text(json.dumps({"steps": 1000}))
    kept = []
    monkeypatch.setattr(acrl.sweep.results, "save_figure", lambda fig, out: kept.append(fig) or out)

    summary = summarize(tmp_path)

    (fig,) = kept
    assert [ax.get_title() for ax in fig.axes] == ["Pendulum-v1", "Hopper-v5"]  # not one per dataset
    pendulum, hopper = fig.axes
    assert [t.get_text() for t in pendulum.get_legend().get_texts()] == ["final (2 seeds)", "imperfect (2 seeds)"]
    assert not pendulum.lines and not hopper.lines  # one evaluation each: no curve, and ...
    points = [c.get_offsets().tolist() for c in pendulum.collections]  # ... each run's final evaluation
    assert points == [
        [[1000, finals["final-s0"]], [1000, finals["final-s1"]]],
        [[1000, finals["imperfect-s0"]], [1000, finals["imperfect-s1"]]],
    ]
    np.testing.assert_allclose(hopper.collections[0].get_offsets(), [[1000, -106.0], [1000, -206.0]])
    assert [row["config"] for row in summary["table"]] == ["final", "imperfect", "hopper"]
    acrl.sweep.results.plt.close(fig)
