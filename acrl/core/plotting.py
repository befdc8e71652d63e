"""Learning curves from run directories: evaluation return against environment steps.

Runs that share an algorithm, environment and preset (several seeds of one config) are drawn
as their mean with a band of one standard deviation, after interpolating each run onto a
common grid of steps; a single run is drawn as its own line.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import yaml  # noqa: E402

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


def _group(run_dir: Path) -> tuple[str, str]:
    """(legend label, grouping key): runs whose configs differ only in the seed share the key."""
    config_path = run_dir / "config.yaml"
    if not config_path.is_file():
        return run_dir.name, str(run_dir)
    with config_path.open() as f:
        config = yaml.safe_load(f) or {}
    hyper = config.get("config", {})
    preset = f" [{hyper['preset']}]" if hyper.get("preset") else ""
    label = f"{config.get('algo', '?')} {hyper.get('env_id', '?')}{preset}"
    settings = {k: v for k, v in hyper.items() if k not in ("seed", "torch_threads", "checkpoint_freq")}
    return label, f"{config.get('algo')} {sorted(settings.items(), key=str)}"


def plot_runs(run_dirs: list[str | Path], out: str | Path, key: str = "eval/return_mean",
              x_label: str = "environment steps") -> Path:
    """Draw the curves of `run_dirs` into the PNG `out`, grouping seeds of one config.

    Returns:
        the path written.
    Raises:
        InputError: a run directory without metrics.csv, no run with any `key` rows, or an
            `out` whose folder does not exist.
    """
    if not Path(out).parent.is_dir():
        raise InputError(f"cannot write the plot to {out}: the folder {Path(out).parent} does not exist.")
    groups: dict[str, list[tuple[np.ndarray, np.ndarray]]] = defaultdict(list)
    labels: dict[str, str] = {}
    for run_dir in map(Path, run_dirs):
        steps, values = read_curve(run_dir, key)
        if len(steps):
            label, group = _group(run_dir)
            groups[group].append((steps, values))
            labels.setdefault(group, label)
    if not groups:
        raise InputError(f"none of {', '.join(map(str, run_dirs))} has logged {key!r} yet.")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for group, curves in groups.items():
        # Configs that differ in more than the seed but share algo, env and preset get a number.
        same_label = [g for g in groups if labels[g] == labels[group]]
        label = labels[group] + (f" #{same_label.index(group) + 1}" if len(same_label) > 1 else "")
        if len(curves) == 1:
            ax.plot(*curves[0], marker="o", markersize=3, label=label)  # markers: one point still shows
            continue
        # The band covers only the steps every seed has reached: no value is extrapolated.
        grid = np.unique(np.concatenate([s for s, _ in curves]))
        grid = grid[(grid >= max(s[0] for s, _ in curves)) & (grid <= min(s[-1] for s, _ in curves))]
        stacked = np.stack([np.interp(grid, s, v) for s, v in curves])
        mean, std = stacked.mean(0), stacked.std(0)
        ax.plot(grid, mean, label=f"{label} ({len(curves)} seeds)")
        ax.fill_between(grid, mean - std, mean + std, alpha=0.25)
    ax.set_xlabel(x_label)
    ax.set_ylabel(key)
    ax.grid(alpha=0.3)
    ax.legend()
    return save_figure(fig, out)


def save_figure(fig: plt.Figure, out: str | Path) -> Path:
    """Lay out `fig`, write it as a PNG (110 dpi) atomically (temp file, then rename), close it; returns the path."""
    fig.tight_layout()
    out = Path(out)
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
    return out
