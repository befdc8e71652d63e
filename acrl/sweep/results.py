"""A sweep's results: one table and one figure over seeds, with rliable's statistics.

Per configuration (the runs of a sweep that differ only in the seed): the final evaluation of
each run (its last `eval/return_mean`, deterministic, `eval_episodes` episodes), and over seeds
their mean, standard deviation and interquartile mean (IQM: the mean of the middle 50% of runs),
with 95% percentile-bootstrap confidence intervals of the mean and the IQM (Agarwal et al. 2021,
"Deep RL at the Edge of the Statistical Precipice", NeurIPS; their `rliable` library, 2,000
resamples, a fixed random state so the table repeats). The figure has a panel per environment
(the runs' own, each dataset's for an offline sweep without `--env`) and per configuration the
IQM learning curve with its 95% bootstrap band on the steps its seeds share
(`acrl.core.plotting.align_curves`), and each run's final evaluation as a point: what the table
summarises, and all there is to see when the runs evaluate once. Its colours, legend entries and
axis names are `acrl.core.plotting`'s, so `acrl plot` of the same runs colours them alike.

Written to SWEEP_DIR/results.json, results.md and curves.png; `acrl plot SWEEP_DIR` rewrites them.
"""

from __future__ import annotations

import time
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from acrl.core.errors import InputError
from acrl.core.files import write_json_atomic, write_text_atomic
from acrl.core.plotting import (
    align_curves,
    band,
    config_colors,
    config_key,
    legend_entry,
    plt,
    read_curve,
    run_config,
    run_step_unit,
    save_figure,
    step_label,
)
from acrl.sweep.jobs import is_done
from acrl.sweep.spec import sweep_runs

BOOTSTRAP_REPS = 2_000


def interval_estimates(scores: dict[str, np.ndarray]) -> dict[str, dict[str, Any]]:
    """Mean and IQM with 95% bootstrap CIs for each name's scores.

    Args:
        scores: name -> float array (n_runs,) or (n_runs, n_points): one value per run, or a curve.
    Returns:
        name -> {"mean", "iqm": point estimates (float or list), "mean_ci", "iqm_ci": [low, high]
        (each a float or a list over points)}.
    """
    import scipy.stats
    from rliable import library as rly
    from rliable import metrics

    def aggregate(x: np.ndarray) -> np.ndarray:  # x: (n_runs, 1 task[, points]) -> [means..., iqms...]
        if x.ndim == 2:
            return np.array([metrics.aggregate_mean(x), metrics.aggregate_iqm(x)])
        # per point, what metrics.aggregate_iqm computes over runs and tasks (scipy's 25% trimmed mean), at once
        runs_tasks = x.reshape(-1, x.shape[-1])
        return np.concatenate([runs_tasks.mean(axis=0), scipy.stats.trim_mean(runs_tasks, 0.25, axis=0)])

    score_dict = {name: np.asarray(v, dtype=float).reshape(len(v), 1, *np.shape(v)[1:]) for name, v in scores.items()}
    with warnings.catch_warnings():  # arch deprecates the random_state that rliable passes on
        warnings.simplefilter("ignore", FutureWarning)
        points, intervals = rly.get_interval_estimates(
            score_dict, aggregate, reps=BOOTSTRAP_REPS, random_state=np.random.RandomState(0)
        )
    out = {}
    for name in scores:  # (2 * points,) estimates and (2 bounds, 2 * points) intervals -> mean, iqm halves
        (mean, iqm), ci = np.split(points[name], 2), np.split(intervals[name], 2, axis=1)
        scalar = np.ndim(scores[name]) == 1
        value = (lambda a: float(a[0])) if scalar else (lambda a: a.tolist())
        out[name] = {
            "mean": value(mean),
            "iqm": value(iqm),
            "mean_ci": [value(ci[0][0]), value(ci[0][1])],
            "iqm_ci": [value(ci[1][0]), value(ci[1][1])],
        }
    return out


def summarize(sweep_dir: str | Path) -> dict[str, Any]:
    """Write results.json, results.md and curves.png of a sweep directory; return the JSON.

    Raises:
        InputError: not a sweep directory, or no run with an evaluation yet.
    """
    sweep_dir = Path(sweep_dir)
    runs = sweep_runs(sweep_dir)
    finals: dict[str, dict[str, float]] = defaultdict(dict)
    curves: dict[str, list[tuple[np.ndarray, np.ndarray]]] = defaultdict(list)
    panels: dict[str, dict[str, str]] = defaultdict(dict)
    configs: dict[str, tuple[str, dict[str, Any]]] = {}
    units: dict[str, str] = {}
    for name, group, env_id, label in runs:
        if not is_done(sweep_dir, name):
            continue
        steps, values = read_curve(sweep_dir / name)
        if len(values):
            finals[group][name] = float(values[-1])
            curves[group].append((steps, values))
            configs.setdefault(group, run_config(sweep_dir / name))
            units.setdefault(group, run_step_unit(sweep_dir / name))
            panels[env_id or configs[group][1]["env_id"]][group] = label
    if not finals:
        raise InputError(f"no run of the sweep in {sweep_dir} has finished yet; nothing to summarise.")
    stats = interval_estimates({group: np.array(list(v.values())) for group, v in finals.items()})
    rows = []
    for group, per_run in finals.items():
        values = np.array(list(per_run.values()))
        rows.append(
            {
                "config": group,
                "seeds": len(values),
                "mean": float(values.mean()),
                "std": float(values.std()),
                "iqm": stats[group]["iqm"],
                "mean_ci": stats[group]["mean_ci"],
                "iqm_ci": stats[group]["iqm_ci"],
                "final": per_run,
            }
        )
    summary = {
        "sweep_dir": str(sweep_dir),
        "runs": len(runs),
        "finished": sum(r["seeds"] for r in rows),
        "statistic": "final evaluation (last eval/return_mean) over seeds; 95% percentile-bootstrap CIs "
        f"(rliable, {BOOTSTRAP_REPS} resamples)",
        "date": time.strftime("%Y-%m-%d"),
        "table": rows,
    }
    write_json_atomic(sweep_dir / "results.json", summary)
    write_text_atomic(sweep_dir / "results.md", markdown(summary))
    plot_curves(curves, panels, configs, units, sweep_dir / "curves.png")
    return summary


def markdown(summary: dict[str, Any]) -> str:
    """The results table as Markdown: a row per configuration."""
    lines = [
        f"{summary['finished']} of {summary['runs']} runs finished; {summary['statistic']}.",
        "",
        "| configuration | seeds | mean ± std | mean 95% CI | IQM | IQM 95% CI |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in summary["table"]:
        lines.append(
            f"| {r['config']} | {r['seeds']} | {r['mean']:.1f} ± {r['std']:.1f} | "
            f"[{r['mean_ci'][0]:.1f}, {r['mean_ci'][1]:.1f}] | {r['iqm']:.1f} | "
            f"[{r['iqm_ci'][0]:.1f}, {r['iqm_ci'][1]:.1f}] |"
        )
    return "\n".join(lines) + "\n"


def plot_curves(
    curves: dict[str, list[tuple[np.ndarray, np.ndarray]]],
    panels: dict[str, dict[str, str]],
    configs: dict[str, tuple[str, dict[str, Any]]],
    units: dict[str, str],
    out: Path,
) -> Path:
    """Per configuration, the IQM learning curve with a 95% bootstrap band and each run's final
    evaluation as a point, in the configuration's colour (`acrl.core.plotting.config_colors`, as
    `acrl plot` gives it); a panel per environment; a legend entry per configuration that shows its line.

    Args:
        curves: configuration -> [(steps, eval returns) per run].
        panels: panel title (the environment) -> {configuration: its legend label}.
        configs: configuration -> (algorithm, settings) of its runs (`acrl.core.plotting.run_config`).
        units: configuration -> what its runs' steps count (`acrl.core.plotting.run_step_unit`).
        out: the PNG to write (atomically).
    Each configuration's curve is on the steps its runs share (`align_curves`); with fewer than
    two such steps there is no curve, only the points.
    """
    aligned = {group: align_curves(runs) for group, runs in curves.items()}
    banded = {group: values for group, (steps, values) in aligned.items() if len(steps) > 1}
    stats = interval_estimates(banded) if banded else {}
    colors = dict(zip(configs, config_colors([config_key(*config) for config in configs.values()])))
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.2), squeeze=False)
    for ax, (panel, groups) in zip(axes[0], panels.items()):
        handles = []
        for group, label in groups.items():
            steps, _ = aligned[group]
            last = np.array([(s[-1], v[-1]) for s, v in curves[group]])
            seeds = f"{len(last)} seed{'s' if len(last) > 1 else ''}"
            ax.scatter(last[:, 0], last[:, 1], s=14, zorder=3, color=colors[group])
            if group in stats:
                low, high = stats[group]["iqm_ci"]
                band(ax, steps, np.asarray(stats[group]["iqm"]), np.asarray(low), np.asarray(high), colors[group])
            handles.append(legend_entry(colors[group], f"{label} ({seeds})"))
        ax.set_title(panel)
        ax.set_xlabel(step_label([units[group] for group in groups]))
        ax.set_ylabel("evaluation return (IQM, 95% CI; points: final)")
        ax.grid(alpha=0.3)
        ax.legend(handles=handles, fontsize=8)
    return save_figure(fig, out)
