"""A sweep's figure, from run directories written by hand: a panel per environment, the final
evaluations as points when the runs evaluate once, legend entries that show lines, and the colours
`acrl plot` gives the same runs (checked on matplotlib's artists, not pixels)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from matplotlib.colors import to_hex

import acrl.core.plotting
import acrl.sweep.results
from acrl.core.plotting import plot_runs
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
            config = {"env_id": env_id, "seed": seed, "dataset": str(tmp_path / f"{name}.h5")}
            saved = {"algo": "bc", "step_unit": "update", "config": config}  # as the agent writes it
            (run / "config.yaml").write_text(yaml.safe_dump(saved))
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
    assert [h.get_linestyle() for h in pendulum.get_legend().legend_handles] == ["-", "-"]  # lines, not dots
    assert pendulum.get_xlabel() == "gradient updates"  # offline: its steps are updates
    assert not pendulum.lines and not hopper.lines  # one evaluation each: no curve, and ...
    points = [c.get_offsets().tolist() for c in pendulum.collections]  # ... each run's final evaluation
    assert points == [
        [[1000, finals["final-s0"]], [1000, finals["final-s1"]]],
        [[1000, finals["imperfect-s0"]], [1000, finals["imperfect-s1"]]],
    ]
    np.testing.assert_allclose(hopper.collections[0].get_offsets(), [[1000, -106.0], [1000, -206.0]])
    assert [row["config"] for row in summary["table"]] == ["final", "imperfect", "hopper"]
    acrl.sweep.results.plt.close(fig)


def test_the_sweep_and_acrl_plot_colour_the_same_runs_the_same(tmp_path, monkeypatch):
    """Three learning rates on CartPole, two seeds each, evaluated at steps 500 and 1000: in the sweep's
    figure (IQM curves) and in `acrl plot` of the same runs given in another order (mean curves), each
    learning rate has one colour, its legend entry's."""
    rates = [0.003, 0.001, 0.0003]
    spec = {"algo": "ppo", "env": "CartPole-v1", "seeds": [0, 1], "set": {"learning_rate": rates}}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(spec))
    runs = []
    for rate in rates:
        for seed in (0, 1):
            run = tmp_path / f"CartPole-v1-learning_rate={rate:g}-s{seed}"
            run.mkdir()
            config = {"env_id": "CartPole-v1", "seed": seed, "learning_rate": rate}
            (run / "config.yaml").write_text(yaml.safe_dump({"algo": "ppo", "config": config}))
            (run / "metrics.csv").write_text(f"step,eval/return_mean\n500,{rate}\n1000,{2 * rate}\n")
            (run / "job.json").write_text(json.dumps({"steps": 1000}))
            runs.append(run)
    kept = []
    monkeypatch.setattr(acrl.sweep.results, "save_figure", lambda fig, out: kept.append(fig) or out)
    monkeypatch.setattr(acrl.core.plotting, "save_figure", lambda fig, out: kept.append(fig) or out)

    summarize(tmp_path)
    plot_runs(runs[::-1], tmp_path / "plot.png", metrics=["eval/return_mean"])

    def colours(ax):  # learning rate -> (its legend entry's colour, its curve's colour)
        legend = ax.get_legend()
        entries = {
            t.get_text().split("learning_rate=")[1].split(" ")[0]: h
            for t, h in zip(legend.get_texts(), legend.legend_handles)
        }
        curves = {f"{line.get_ydata()[0]:g}": to_hex(line.get_color()) for line in ax.lines}
        return {rate: (to_hex(h.get_color()), curves[rate]) for rate, h in entries.items()}

    sweep, plot = (colours(fig.axes[0]) for fig in kept)
    assert sweep == plot and len({colour for colour, _ in sweep.values()}) == 3
    assert all(entry == curve for entry, curve in sweep.values())
    for fig in kept:
        acrl.sweep.results.plt.close(fig)
