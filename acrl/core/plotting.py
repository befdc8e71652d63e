"""Learning curves from run directories: evaluation return against environment steps.

Runs whose configs differ only in the seed are drawn as their mean with a band of one standard
deviation on the steps they share (`align_curves`); a single run is drawn as its own line, and
runs that share fewer than two steps as points. Each curve's label is its algorithm,
environment and preset, followed by the settings in which its config differs from the other
curves of that algorithm, environment and preset (`curve_labels`), e.g. "ppo CartPole-v1
learning_rate=0.001".

What every figure of runs shares is here, so that they read alike: axes named in words
(`METRIC_NAMES`, `step_label`), one colour per configuration whatever figure draws it
(`config_colors`: `acrl plot` and a sweep's curves.png colour the same runs the same), and legend
entries that show a line (`legend_entry`), also for a configuration drawn as points.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import yaml  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from acrl.core.errors import InputError  # noqa: E402
from acrl.core.files import atomic_path  # noqa: E402


def read_curve(run_dir: str | Path, key: str = "eval/return_mean") -> tuple[np.ndarray, np.ndarray]:
    """(steps, values) float64 arrays of the rows of `run_dir/metrics.csv` that have `key`.

    Raises:
        InputError: no metrics.csv in `run_dir`.
    """
    path = Path(run_dir) / "metrics.csv"
    if not path.is_file():
        raise InputError(f"{run_dir} has no metrics.csv; is it an acrl run directory?")
    steps, values = [], []
    with path.open() as f:
        for row in csv.DictReader(f):
            if row.get(key):
                steps.append(float(row["step"]))
                values.append(float(row[key]))
    return np.array(steps), np.array(values)


IGNORED_SETTINGS = ("seed", "torch_threads", "checkpoint_freq")
"""Config fields that do not change what a run learns: runs that differ only in them are seeds of one curve."""


def run_config(run_dir: Path) -> tuple[str, dict[str, Any]]:
    """(algorithm, its config.yaml's config without `IGNORED_SETTINGS`) of a run; (the directory's
    name, {}) for a run without config.yaml."""
    config_path = run_dir / "config.yaml"
    if not config_path.is_file():
        return run_dir.name, {}
    with config_path.open() as f:
        config = yaml.safe_load(f) or {}
    return str(config.get("algo", "?")), {
        k: v for k, v in config.get("config", {}).items() if k not in IGNORED_SETTINGS
    }


METRIC_NAMES = {"eval/return_mean": "evaluation return"}
"""Logged keys -> their name on a figure's axis (a key not here is shown as it is)."""


def step_label(configs: list[dict[str, Any]]) -> str:
    """The x axis's name for runs with these configs (`run_config`'s settings): "gradient updates" when
    every run learned from a dataset (its `step` counts updates), else "environment steps"."""
    offline = bool(configs) and all(settings.get("dataset") for settings in configs)
    return "gradient updates" if offline else "environment steps"


def config_key(algo: str, settings: dict[str, Any]) -> str:
    """The identity of a configuration, (algorithm, `run_config`'s settings), as a string: the runs with
    equal keys are the seeds of one curve."""
    return f"{algo} {sorted(settings.items(), key=str)}"


def config_colors(keys: list[str]) -> list[str]:
    """A colour per configuration (`config_key`; equal keys, equal colours): matplotlib's default colours
    (tab10, then again) given to the distinct keys in sorted order, not in the order a figure meets
    them, so that `plot_runs` and a sweep's figure (`acrl.sweep.results.plot_curves`) colour the same
    runs the same."""
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    order = {key: i for i, key in enumerate(sorted(set(keys)))}
    return [palette[order[key] % len(palette)] for key in keys]


def legend_entry(color: str, label: str) -> Line2D:
    """A legend entry for a configuration: a line with a dot, in its colour (its curve is a line, a
    run's evaluation a dot), whatever the figure drew for it."""
    return Line2D([], [], color=color, marker="o", markersize=4, label=label)


def _value_text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def curve_labels(configs: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """A legend label per (algorithm, settings) pair, all pairs distinct: "ALGO ENV_ID [PRESET]"
    (no brackets without a preset), followed by `key=value` for every setting whose value differs
    between the configs with that same first part, in the configs' key order.

    Example: [("ppo", {"env_id": "CartPole-v1", "learning_rate": 0.001, "n_epochs": 10}), ("ppo",
    {"env_id": "CartPole-v1", "learning_rate": 0.0003, "n_epochs": 10})] ->
    ["ppo CartPole-v1 learning_rate=0.001", "ppo CartPole-v1 learning_rate=0.0003"].
    """
    heads = []
    for algo, settings in configs:
        preset = f" [{settings['preset']}]" if settings.get("preset") else ""
        heads.append(f"{algo} {settings['env_id']}{preset}" if "env_id" in settings else algo)
    labels = []
    for head, (_, settings) in zip(heads, configs):
        others = [s for h, (_, s) in zip(heads, configs) if h == head]
        keys = dict.fromkeys(k for s in others for k in s)  # every key, first seen first
        differing = [k for k in keys if any(s.get(k) != settings.get(k) for s in others)]
        labels.append(" ".join([head, *(f"{k}={_value_text(settings.get(k))}" for k in differing)]))
    return labels


def align_curves(curves: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Several runs' curves (the seeds of one config) on one grid of steps, for a statistic over
    runs at each step: the band of `plot_runs`, `acrl.sweep.results` and `acrl.offline.experiments`.

    The grid is every step at which some run evaluated, from the latest first evaluation to the
    earliest last one, and each run is linearly interpolated onto it (`np.interp`). Interpolation,
    not truncation to the shortest run's number of points: runs that evaluate at different steps
    (A3C's workers cross evaluation boundaries at different steps, a budget that is not a multiple
    of the rollout) would otherwise be averaged at the same index, which mixes values from
    different steps and draws them at the first run's steps; where the runs share their steps,
    the two agree. Nothing is extrapolated past a run's first or last evaluation.

    Args:
        curves: per run, (steps (P_i,) increasing, values (P_i,)), P_i >= 1, float64.
    Returns:
        (grid (G,) float64, values (n_runs, G) float64); G = 0 when the runs' step ranges do not overlap.
    """
    grid = np.unique(np.concatenate([steps for steps, _ in curves]))
    grid = grid[(grid >= max(steps[0] for steps, _ in curves)) & (grid <= min(steps[-1] for steps, _ in curves))]
    return grid, np.stack([np.interp(grid, steps, values) for steps, values in curves])


def plot_runs(
    run_dirs: list[str | Path], out: str | Path, key: str = "eval/return_mean", x_label: str | None = None
) -> Path:
    """Draw the curves of `run_dirs` into the PNG `out`, grouping seeds of one config.

    The y axis is `key` in words (`METRIC_NAMES`), the x axis `x_label` (None: `step_label`); each
    configuration has its colour (`config_colors`).

    Returns:
        the path written.
    Raises:
        InputError: a run directory without metrics.csv, no run with any `key` rows, or an
            `out` whose folder does not exist.
    """
    if not Path(out).parent.is_dir():
        raise InputError(f"cannot write the plot to {out}: the folder {Path(out).parent} does not exist.")
    groups: dict[str, list[tuple[np.ndarray, np.ndarray]]] = defaultdict(list)
    configs: dict[str, tuple[str, dict[str, Any]]] = {}
    for run_dir in map(Path, run_dirs):
        steps, values = read_curve(run_dir, key)
        if len(steps):
            algo, settings = run_config(run_dir)
            group = config_key(algo, settings) if settings else str(run_dir)
            groups[group].append((steps, values))
            configs.setdefault(group, (algo, settings))
    if not groups:
        raise InputError(f"none of {', '.join(map(str, run_dirs))} has logged {key!r} yet.")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    labels, colors = curve_labels(list(configs.values())), config_colors(list(groups))
    handles = []
    for curves, label, color in zip(groups.values(), labels, colors):
        if len(curves) == 1:
            ax.plot(*curves[0], color=color, marker="o", markersize=3)  # markers: one point still shows
        else:
            grid, stacked = align_curves(curves)
            label = f"{label} ({len(curves)} seeds)"
            if len(grid) < 2:  # no common stretch to draw a band on (e.g. one evaluation each): every evaluation
                ax.scatter(
                    np.concatenate([s for s, _ in curves]), np.concatenate([v for _, v in curves]), s=12, color=color
                )
            else:
                mean, std = stacked.mean(0), stacked.std(0)
                ax.plot(grid, mean, color=color)
                ax.fill_between(grid, mean - std, mean + std, color=color, alpha=0.25)
        handles.append(legend_entry(color, label))
    ax.set_xlabel(x_label or step_label([settings for _, settings in configs.values()]))
    ax.set_ylabel(METRIC_NAMES.get(key, key))
    ax.grid(alpha=0.3)
    ax.legend(handles=handles)
    return save_figure(fig, out)


def save_figure(fig: plt.Figure, out: str | Path) -> Path:
    """Lay out `fig`, write it as a PNG (110 dpi) atomically (temp file, then rename), close it; returns the path."""
    fig.tight_layout()
    out = Path(out)
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
    return out
