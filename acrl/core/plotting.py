"""Figures of run directories: learning curves, any logged metric, and the pieces every figure of runs shares.

`plot_runs` (`acrl plot`, and each run's learning_curve.png) draws a panel per metric against
environment steps (gradient updates for runs that learn from fixed data), training episodes or
wall-clock time. Its default panel is the learning curve: the training episodes' returns
(episodes.csv; each one a faint dot for a single run, their moving average over 100 episodes solid) and
the evaluations as points with their spread (± the std over evaluation episodes, or over seeds),
on one axis, so that a run with two evaluations still shows what it learned between them and
where it started. A metric is any column of metrics.csv, or `episode/return` and `episode/length`
(episodes.csv): with `x="episodes"` the former is the design document's score plot, each
episode's return against its number with a moving average.

Runs whose configs differ only in the seed are drawn as their mean with a band of one standard
deviation on the x values they share (`align_curves`); a single run is drawn as its own line, and
runs that share fewer than two x values as points. Each curve's label is its algorithm,
environment and preset, followed by the settings in which its config differs from the other
curves of that algorithm, environment and preset (`curve_labels`), e.g. "ppo CartPole-v1
learning_rate=0.001".

What every figure of runs shares is here, so that they read alike (the sweep's curves.png, the
offline experiments' figures): axes named in words (`METRIC_NAMES`, `step_label`; the step unit is
the one each run's config.yaml records, the agent's `step_unit`), one colour per configuration
whatever figure draws it (`config_colors`: `acrl plot` and a sweep's curves.png colour the same
runs the same), bands drawn alike (`band`), and legend entries that show a line (`legend_entry`),
also for a configuration drawn as points.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import yaml  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import StrMethodFormatter  # noqa: E402

from acrl.core.errors import InputError  # noqa: E402
from acrl.core.files import atomic_path  # noqa: E402

X_AXES = ("steps", "episodes", "time")
"""What a figure's x axis can count: steps (environment steps, or gradient updates offline), training
episodes finished, or wall-clock seconds (`time/elapsed_s`)."""
EPISODE_KEYS = ("episode/return", "episode/length")
"""The metrics of episodes.csv, a value per training episode (`acrl.core.logging`)."""
WINDOW = 100
"""Episodes in a moving average: `rollout/ep_return_mean`'s (Stable-Baselines3's) window."""
METRIC_NAMES = {
    "eval/return_mean": "evaluation return",
    "eval/return_std": "evaluation return, std over episodes",
    "rollout/ep_return_mean": f"training return (mean of the last {WINDOW} episodes)",
    "rollout/ep_len_mean": f"training episode length (mean of the last {WINDOW})",
    "episode/return": "training episode return",
    "episode/length": "training episode length (steps)",
    "train/policy_loss": "policy loss",
    "train/value_loss": "value loss",
    "train/entropy": "policy entropy",
    "train/approx_kl": "approximate KL divergence",
    "train/clip_fraction": "fraction of ratios clipped",
    "time/fps": "steps per second",
    "time/elapsed_s": "wall-clock time (s)",
}
"""Logged keys -> their name on a figure's axis (a key not here is shown as it is)."""


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


def _config_yaml(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "config.yaml"
    if not path.is_file():
        return {}
    with path.open() as f:
        return yaml.safe_load(f) or {}


def run_config(run_dir: Path) -> tuple[str, dict[str, Any]]:
    """(algorithm, its config.yaml's config without `IGNORED_SETTINGS`) of a run; (the directory's
    name, {}) for a run without config.yaml."""
    saved = _config_yaml(run_dir)
    if not saved:
        return run_dir.name, {}
    settings = {k: v for k, v in saved.get("config", {}).items() if k not in IGNORED_SETTINGS}
    return str(saved.get("algo", "?")), settings


def run_step_unit(run_dir: Path) -> str:
    """What the run's `step` counts, as its config.yaml records it (`acrl.algos.base.Agent.step_unit`):
    "step" (environment steps) or "update" (gradient updates); "step" without a record."""
    return str(_config_yaml(run_dir).get("step_unit", "step"))


def step_label(units: list[str]) -> str:
    """The x axis's name for runs whose steps count `units` (`run_step_unit`): "gradient updates" when
    every run learned from fixed data, "environment steps" when none did, else "steps"."""
    if units and all(unit == "update" for unit in units):
        return "gradient updates"
    return "environment steps" if all(unit == "step" for unit in units) else "steps"


def moving_average(values: np.ndarray, window: int = WINDOW) -> np.ndarray:
    """(n,) float64: at each i the mean of values[max(0, i - window + 1) : i + 1], the last `window`
    values (fewer at the start), as `rollout/ep_return_mean` is at the episode that ends there.
    Example: [1, 2, 3, 4] with window 2 -> [1, 1.5, 2.5, 3.5]."""
    sums = np.concatenate([[0.0], np.cumsum(values, dtype=np.float64)])
    ends = np.arange(1, len(values) + 1)
    starts = np.maximum(ends - window, 0)
    return (sums[ends] - sums[starts]) / (ends - starts)


@dataclass
class RunLog:
    """What a run directory logged (`read_run`), with its configuration.

    Attributes:
        run_dir: the directory.
        algo, settings: `run_config`'s; seed: its config's seed (None without config.yaml).
        step_unit: `run_step_unit`'s.
        metrics: metrics.csv's columns, `step` among them: name -> (R,) float64, NaN where a row lacks it.
        episodes: episodes.csv's columns (`acrl.core.logging.EPISODE_COLUMNS`) -> (E,) float64; {} without
            the file (offline runs, runs written before it existed).
    """

    run_dir: Path
    algo: str
    settings: dict[str, Any]
    seed: int | None
    step_unit: str
    metrics: dict[str, np.ndarray]
    episodes: dict[str, np.ndarray] = field(default_factory=dict)

    def keys(self) -> list[str]:
        """The metrics this run has a value of: metrics.csv's columns with one, then `EPISODE_KEYS`."""
        logged = [k for k, v in self.metrics.items() if k != "step" and not np.isnan(v).all()]
        return logged + (list(EPISODE_KEYS) if len(self.episodes.get("step", ())) else [])

    def series(self, key: str, x: str = "steps") -> tuple[np.ndarray, np.ndarray]:
        """(x (P,), values (P,)) float64 of `key` over the rows that have it; x counts steps, training
        episodes finished by the row's step (an episode key: the episode's number) or wall-clock seconds
        (`time/elapsed_s` interpolated at the row's step). (empty, empty) when the run has no such rows.

        Raises:
            InputError: x="episodes" for a run without episodes.csv, x="time" without `time/elapsed_s`.
        """
        if key in EPISODE_KEYS:
            steps, values = self.episodes.get("step", np.zeros(0)), self.episodes.get(key.split("/")[1], np.zeros(0))
            if x == "episodes":
                return self.episodes.get("episode", np.zeros(0)), values
        else:
            column = self.metrics.get(key, np.full(len(self.metrics["step"]), np.nan))
            has = ~np.isnan(column)
            steps, values = self.metrics["step"][has], column[has]
        if x == "steps":
            return steps, values
        if x == "episodes":
            if not len(self.episodes.get("step", ())):
                raise InputError(
                    f"{self.run_dir} has no episodes.csv: it played no training episodes (a run that learns from "
                    "a dataset), or was written before acrl logged them; use --x steps or --x time."
                )
            return np.searchsorted(self.episodes["step"], steps, side="right").astype(np.float64), values
        elapsed = self.metrics.get("time/elapsed_s", np.full(len(self.metrics["step"]), np.nan))
        known = ~np.isnan(elapsed)
        if not known.any():
            raise InputError(
                f"{self.run_dir}'s metrics.csv has no time/elapsed_s column; use --x steps or --x episodes."
            )
        at = np.concatenate([[0.0], self.metrics["step"][known]])  # the run started at step 0, second 0
        return np.interp(steps, at, np.concatenate([[0.0], elapsed[known]])), values


def _columns(path: Path) -> dict[str, np.ndarray]:
    with path.open() as f:
        reader = csv.DictReader(f)
        rows = list(reader)
        names = list(reader.fieldnames or [])
    return {name: np.array([float(row[name]) if row.get(name) else np.nan for row in rows]) for name in names}


def read_run(run_dir: str | Path) -> RunLog:
    """The `RunLog` of `run_dir`: its metrics.csv, episodes.csv (when there is one) and config.yaml.

    Raises:
        InputError: no metrics.csv in `run_dir`.
    """
    run_dir = Path(run_dir)
    if not (run_dir / "metrics.csv").is_file():
        raise InputError(f"{run_dir} has no metrics.csv; is it an acrl run directory?")
    episodes = run_dir / "episodes.csv"
    algo, settings = run_config(run_dir)
    seed = _config_yaml(run_dir).get("config", {}).get("seed")
    return RunLog(
        run_dir,
        algo,
        settings,
        seed,
        run_step_unit(run_dir),
        _columns(run_dir / "metrics.csv"),
        _columns(episodes) if episodes.is_file() else {},
    )


def config_key(algo: str, settings: dict[str, Any]) -> str:
    """The identity of a configuration, (algorithm, `run_config`'s settings), as a string: the runs with
    equal keys are the seeds of one curve."""
    return f"{algo} {sorted(settings.items(), key=str)}"


def config_colors(keys: list[str], universe: list[str] = ()) -> list[str]:
    """A colour per configuration (`config_key`; equal keys, equal colours): matplotlib's default colours
    (tab10, then again) given to the distinct keys of `keys` and `universe` in sorted order, not in the
    order a figure meets them. With `universe` the configurations of every run in the runs' directories
    (`directory_configs`), a configuration has one colour in every figure of its directory: `acrl plot`
    of some of a sweep's runs colours them as the sweep's curves.png (`acrl.sweep.results.plot_curves`)."""
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    order = {key: i for i, key in enumerate(sorted({*keys, *universe}))}
    return [palette[order[key] % len(palette)] for key in keys]


def directory_configs(run_dirs: list[Path]) -> list[str]:
    """The `config_key` of every run (a folder with config.yaml) beside `run_dirs`, in their parent folders."""
    parents = {Path(run_dir).resolve().parent for run_dir in run_dirs}
    siblings = [path for parent in parents for path in parent.iterdir() if (path / "config.yaml").is_file()]
    return [config_key(*run_config(path)) for path in siblings if run_config(path)[1]]


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


def band(
    ax: plt.Axes,
    x: np.ndarray,
    center: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    color: str,
    label: str | None = None,
) -> None:
    """A curve `center` over `x` with a band from `low` to `high`, all (G,), in `color` (the curve labelled
    `label` for a legend): how every figure of runs draws a statistic over seeds (mean ± std here and in the
    offline experiments' figures, the IQM's bootstrap interval in a sweep's)."""
    ax.plot(x, center, color=color, label=label)
    ax.fill_between(x, low, high, color=color, alpha=0.25, linewidth=0)


def _draw_curves(ax: plt.Axes, curves: list[tuple[np.ndarray, np.ndarray]], color: str) -> None:
    """One configuration's runs of a metric: a run's own line (dots where it has few points), the seeds'
    mean and std band on the x values they share, or, sharing fewer than two, every point."""
    if len(curves) == 1:
        x, y = curves[0]
        ax.plot(x, y, color=color, marker="o" if len(x) <= 50 else None, markersize=3)
        return
    grid, stacked = align_curves(curves)
    if len(grid) < 2:
        ax.scatter(np.concatenate([x for x, _ in curves]), np.concatenate([y for _, y in curves]), s=12, color=color)
    else:
        mean, std = stacked.mean(0), stacked.std(0)
        band(ax, grid, mean, mean - std, mean + std, color)


def _series(run: RunLog, key: str, x: str, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """`RunLog.series` with the x values divided by `scale` (a time axis in minutes or hours)."""
    xs, values = run.series(key, x)
    return xs / scale, values


def _draw_metric(ax: plt.Axes, runs: list[RunLog], key: str, x: str, scale: float, color: str) -> None:
    """A panel's curves of one configuration: an episode key as a moving average (a single run's episodes
    faint dots behind it), any other key as it was logged; x values divided by `scale`."""
    curves = [curve for curve in (_series(run, key, x, scale) for run in runs) if len(curve[0])]
    if not curves:
        return
    if key in EPISODE_KEYS:
        if len(curves) == 1:  # dots: an iteration's episodes share its step
            ax.plot(*curves[0], color=color, alpha=0.35, linestyle="none", marker=".", markersize=3)
        curves = [(xs, moving_average(ys)) for xs, ys in curves]
    _draw_curves(ax, curves, color)


def _draw_returns(ax: plt.Axes, runs: list[RunLog], x: str, scale: float, color: str) -> set[str]:
    """The learning-curve panel of one configuration: the training returns (episodes.csv's as `_draw_metric`
    draws them; a run without it, its `rollout/ep_return_mean`) and the evaluations as points with error
    bars (± eval/return_std for a single run, ± the std over seeds for several), joined by a line where
    there is no training curve (runs that learn from a dataset). Returns what it drew, of "episodes" (a
    single run's every episode), "training" (the moving average) and "evaluation"."""
    episodes = all(len(run.episodes.get("step", ())) for run in runs)
    training = "episode/return" if episodes else "rollout/ep_return_mean"
    _draw_metric(ax, runs, training, x, scale, color)
    drawn = {"training"} if any(len(run.series(training, x)[0]) for run in runs) else set()
    if drawn and episodes and len(runs) == 1:
        drawn.add("episodes")
    evaluated = [run for run in runs if len(run.series("eval/return_mean", x)[0])]
    evaluations = [_series(run, "eval/return_mean", x, scale) for run in evaluated]
    style = dict(color=color, fmt="o-" if not drawn else "o", markersize=4, capsize=2, elinewidth=1, zorder=3)
    if len(evaluations) == 1:
        std = evaluated[0].series("eval/return_std", x)[1]
        ax.errorbar(*evaluations[0], yerr=std if len(std) == len(evaluations[0][0]) else None, **style)
    elif evaluations:
        grid, stacked = align_curves(evaluations)
        if len(grid) < 2:
            ax.scatter(*(np.concatenate(part) for part in zip(*evaluations)), s=12, color=color, zorder=3)
        else:
            ax.errorbar(grid, stacked.mean(0), yerr=stacked.std(0), **style)
    return drawn | ({"evaluation"} if evaluations else set())


def _return_entries(drawn: set[str], color: str, spread: str) -> list[Line2D]:
    """The learning-curve panel's legend entries for what `_draw_returns` `drawn`, in `color`; the
    evaluations' error bars are ± `spread` ("std over seeds", "std over 10 episodes")."""
    entries = []
    if "episodes" in drawn:
        dots = dict(alpha=0.35, linestyle="none", marker=".", markersize=3)
        entries.append(Line2D([], [], color=color, **dots, label="training episode return"))
    if "training" in drawn:
        entries.append(Line2D([], [], color=color, label=f"training return, moving average of {WINDOW} episodes"))
    if "evaluation" in drawn:
        marker = dict(marker="o", markersize=4, linestyle="none" if "training" in drawn else "-")
        entries.append(Line2D([], [], color=color, **marker, label=f"evaluation return, mean ± {spread}"))
    return entries


def _time_scale(seconds: float) -> tuple[float, str]:
    """(divisor, unit) for a wall-clock axis that reaches `seconds`: s below 2 min, min below 2 h, else h."""
    return (1.0, "s") if seconds < 120 else (60.0, "min") if seconds < 7200 else (3600.0, "h")


def runs_figure(run_dirs: list[str | Path], metrics: list[str] | tuple[str, ...] = (), x: str = "steps") -> plt.Figure:
    """The figure of `run_dirs` (see the module docstring): a panel per key of `metrics`, or the learning-curve
    panel when it is empty, against `x` (one of `X_AXES`), the seeds of one configuration grouped, a colour
    per configuration (`config_colors`, the same in every figure of the runs' directories) named in the
    legend. A single run's figure is titled "ALGO on ENV, seed S".

    Raises:
        InputError: a run directory without metrics.csv; an `x` not in `X_AXES`; a key no run has logged
            (the message lists the keys they have); nothing to draw yet; x="episodes" for a run without
            episodes.csv or x="time" without `time/elapsed_s` (`RunLog.series`).
    """
    if x not in X_AXES:
        raise InputError(f"unknown x axis {x!r}; use one of {', '.join(X_AXES)}.")
    runs = [read_run(run_dir) for run_dir in run_dirs]
    available = list(dict.fromkeys(key for run in runs for key in run.keys()))
    unknown = [key for key in metrics if key not in available]
    if unknown:
        have = ", ".join(available) or "nothing yet"
        raise InputError(f"no run has logged {', '.join(map(repr, unknown))}; the runs have: {have}.")
    if not metrics and not {"eval/return_mean", "rollout/ep_return_mean", "episode/return"} & set(available):
        names = ", ".join(str(run.run_dir) for run in runs)
        raise InputError(f"none of {names} has finished a training episode or an evaluation yet.")
    groups: dict[str, list[RunLog]] = defaultdict(list)
    for run in runs:
        groups[config_key(run.algo, run.settings) if run.settings else str(run.run_dir)].append(run)
    labels = curve_labels([(members[0].algo, members[0].settings) for members in groups.values()])
    colors = config_colors(list(groups), directory_configs([run.run_dir for run in runs]))
    configurations = [
        legend_entry(color, f"{label} ({len(members)} seeds)" if len(members) > 1 else label)
        for members, label, color in zip(groups.values(), labels, colors)
    ]
    scale, unit = 1.0, ""
    if x == "time":
        seconds = max(float(np.nanmax(run.metrics.get("time/elapsed_s", np.zeros(1)))) for run in runs)
        scale, unit = _time_scale(seconds)
    panels = list(metrics) or [None]
    fig, axes = plt.subplots(len(panels), 1, figsize=(7, 1.3 + 3.4 * len(panels)), sharex=True, squeeze=False)
    for ax, key in zip(axes[:, 0], panels):
        if key is None:  # the learning curve
            drawn = set()
            for members, color in zip(groups.values(), colors):
                drawn |= _draw_returns(ax, members, x, scale, color)
            if len(groups) == 1:
                (members,) = groups.values()
                episodes = members[0].settings.get("eval_episodes")
                spread = (
                    "std over seeds" if len(members) > 1 else f"std over {episodes} episodes" if episodes else "std"
                )
                handles = _return_entries(drawn, colors[0], spread)
            else:
                handles = configurations + _return_entries(drawn - {"episodes"}, "grey", "std over seeds")
        else:
            for members, color in zip(groups.values(), colors):
                _draw_metric(ax, members, key, x, scale, color)
            moving = [Line2D([], [], color="grey", label=f"moving average of {WINDOW} episodes")]
            handles = configurations + (moving if key in EPISODE_KEYS else [])
        ax.set_ylabel("return" if key is None else METRIC_NAMES.get(key, key))
        ax.grid(alpha=0.3)
        ax.legend(handles=handles, fontsize=8)
    if x == "time":
        axes[-1, 0].set_xlabel(f"wall-clock time ({unit})")
    else:
        axes[-1, 0].xaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))  # 200,000 steps, not 200000
        axes[-1, 0].set_xlabel("training episodes" if x == "episodes" else step_label([run.step_unit for run in runs]))
    if len(runs) == 1:
        run = runs[0]
        where = f" on {run.settings['env_id']}" if "env_id" in run.settings else ""
        axes[0, 0].set_title(f"{run.algo.upper()}{where}" + (f", seed {run.seed}" if run.seed is not None else ""))
    return fig


def plot_runs(
    run_dirs: list[str | Path], out: str | Path, metrics: list[str] | tuple[str, ...] = (), x: str = "steps"
) -> Path:
    """Draw `runs_figure(run_dirs, metrics, x)` into the PNG `out` (atomically); returns the path written.

    Raises:
        InputError: an `out` whose folder does not exist, and what `runs_figure` raises.
    """
    if not Path(out).parent.is_dir():
        raise InputError(f"cannot write the plot to {out}: the folder {Path(out).parent} does not exist.")
    return save_figure(runs_figure(run_dirs, metrics, x), out)


def save_figure(fig: plt.Figure, out: str | Path) -> Path:
    """Lay out `fig`, write it as a PNG (110 dpi) atomically (temp file, then rename), close it; returns the path."""
    fig.tight_layout()
    out = Path(out)
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
    return out
