"""The offline experiments' results: tables, figures, and the merge of parts run apart.

From the results of any `acrl.offline.spec.ExperimentSpec` (results[buffer][agent], a list over seeds):
`results_table` (per learner and buffer the final evaluation's mean ± std over seeds with its IQM and
95% bootstrap CI, rliable's, as `acrl sweep`; the value estimates, the critic's Q at the evaluation
episodes' first steps against their true discounted return: the extrapolation error as a number,
`OffPolicyAgent.evaluate`), `experiment_markdown`, and `plot_experiment`, the layout of the BCQ paper's
Figure 2 (Fujimoto, Meger, Precup 2019): a column per buffer, evaluation return against updates
(concurrent: against the behavioral agent's time steps) with the behavioral policy dashed, and below it
the value estimates of the learners with a value function (solid) against the true value (dashed).
A D4RL experiment's (`ExperimentSpec.d4rl`) show D4RL's normalised score where the others show returns
(`SCORES`). `write_summary` writes all three as NAME.json, NAME.md and NAME.png. `merge_experiment` combines the
summaries of one experiment run in parts (seeds or learners in separate sessions or machines).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from acrl.core.errors import InputError  # noqa: E402
from acrl.core.files import write_json_atomic, write_text_atomic  # noqa: E402
from acrl.core.plotting import align_curves, band, save_figure  # noqa: E402
from acrl.core.provenance import provenance  # noqa: E402
from acrl.offline.spec import ExperimentSpec, Learner  # noqa: E402

CELL_VALUES = (
    ("q_initial", "q_initial_mean"),
    ("true_value", "discounted_return_mean"),
    ("q_data", "q_data_mean"),
    ("q_policy", "q_policy_mean"),
)
"""A table cell's value estimates: (its key, the run's value curve, `acrl.offline.jobs.VALUE_KEYS`)."""


def learners_in(spec: ExperimentSpec, held: dict[str, Any]) -> list[Learner]:
    """The learners of `spec` that `held` (a summary's table, or one buffer's results) has, in the spec's order."""
    return [learner for learner in spec.learners if learner.name in held]


def _mean_std(values: list[float | None]) -> list[float] | None:
    values = [v for v in values if v is not None]
    return [float(np.mean(values)), float(np.std(values))] if values else None


def _last(curve: list[list[float]]) -> float | None:
    return curve[-1][1] if curve else None


SCORES = {"final": "score", "best": "best_score", "return": "score", "data_episode_return": "data_episode_score"}
"""A D4RL experiment's tables and figure show a run's normalised score (`acrl.offline.experiments.d4rl_scores`)
where the others show its return: the key each shows instead, and "score_curve" for "curve"."""


def _key(spec: ExperimentSpec, key: str) -> str:
    """The results' key of what `spec`'s tables show as `key`: `SCORES`' for a D4RL experiment's."""
    return SCORES.get(key, "score_curve" if key == "curve" else key) if spec.d4rl else key


def results_table(spec: ExperimentSpec, results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """table[agent][buffer] of an experiment's results, for the behavioral policy and the learners that
    results[spec.buffers[0]] holds: the final evaluation over seeds as mean ± std ("final"), its IQM with
    95% bootstrap CI ("iqm", "iqm_ci"; `acrl.sweep.results.interval_estimates`), the best evaluation
    ("best"); for the learners with Q-values the last value estimates ("q_initial": Q(s_0, a_0),
    "true_value": the discounted return it estimates, "q_data", "q_policy"); for the behavioral policy
    "return" and the data's episode return ("data_episodes"). A D4RL experiment's (`spec.d4rl`) are
    normalised scores (`SCORES`), with each learner's final return beside them ("final_return"). A learner
    without runs in a buffer (the concurrent runs of an experiment from before it was added) has None in
    every entry."""
    from acrl.sweep.results import interval_estimates

    final, best = _key(spec, "final"), _key(spec, "best")
    learners = [learner.name for learner in learners_in(spec, results[spec.buffers[0]])]
    table: dict[str, dict[str, Any]] = {"behavioral": {}, **{name: {} for name in learners}}
    estimates = interval_estimates(
        {
            f"{name}/{kind}": np.array([x[final] for x in results[kind][name]])
            for kind in spec.buffers
            for name in learners
            if results[kind][name]
        }
    )  # one bootstrap for every cell
    missing = {"iqm": None, "iqm_ci": None}
    for kind in spec.buffers:
        r = results[kind]
        table["behavioral"][kind] = {
            "return": _mean_std([b[_key(spec, "return")] for b in r["behavioral"]]),
            "data_episodes": _mean_std([b[_key(spec, "data_episode_return")] for b in r["behavioral"]]),
        }
        for name in learners:
            runs = r[name]
            estimate = estimates.get(f"{name}/{kind}", missing)
            cell = {
                "final": _mean_std([x[final] for x in runs]),
                "iqm": estimate["iqm"],
                "iqm_ci": estimate["iqm_ci"],
                "best": _mean_std([x[best] for x in runs]),
                **({"final_return": _mean_std([x["final"] for x in runs])} if spec.d4rl else {}),
            }
            for key, curve in CELL_VALUES:
                cell[key] = _mean_std([_last(x["values"][curve]) for x in runs])
            table[name][kind] = cell
    return table


def _cell(value: list[float] | None) -> str:
    if value is None:
        return "-"
    mean, std = value
    return f"{mean:.1f} ± {std:.1f}"


def _iqm(cell: dict[str, Any]) -> str:
    """The cell's IQM and CI as " (IQM [low, high])", or "" for a cell without runs."""
    if cell["iqm"] is None:
        return ""
    return f" ({cell['iqm']:.1f} [{cell['iqm_ci'][0]:.1f}, {cell['iqm_ci'][1]:.1f}])"


def results_markdown(
    table: dict[str, Any], buffers: Sequence[str], learners: Sequence[Learner], what: str = "evaluation return"
) -> list[str]:
    """The result tables (`results_table`) as markdown lines, a column per buffer: the final `what` (the
    evaluation return, or a D4RL experiment's normalised score; mean ± std over seeds, IQM [95% CI]) of the
    behavioral policy and of each learner, the dataset's episodes, then the value estimates of the learners
    with Q-values (Q at the evaluation episodes' first steps against the true discounted return); "-" where a
    learner has no runs."""
    header = ["| | " + " | ".join(kind for kind in buffers) + " |", "| --- |" + " ---: |" * len(buffers)]
    lines = [
        f"Final {what}, mean ± std over seeds, and IQM [95% bootstrap CI]:",
        "",
        *header,
        "| behavioral policy | " + " | ".join(_cell(table["behavioral"][k]["return"]) for k in buffers) + " |",
    ]
    for learner in learners:
        cells = [f"{_cell(c['final'])}{_iqm(c)}" for c in (table[learner.name][k] for k in buffers)]
        lines.append(f"| {learner.label} | " + " | ".join(cells) + " |")
    lines += [
        "| dataset episodes | " + " | ".join(_cell(table["behavioral"][k]["data_episodes"]) for k in buffers) + " |",
        "",
        "Value estimates at the last evaluation: the critic's Q(s0, a0) at the evaluation episodes' "
        "first steps / their true discounted return (mean over seeds):",
        "",
        *header,
    ]
    for learner in learners:
        cells = [table[learner.name][k] for k in buffers]
        if any(c["q_initial"] is not None for c in cells):
            lines.append(
                f"| {learner.label} | "
                + " | ".join(f"{_cell(c['q_initial'])} / {_cell(c['true_value'])}" for c in cells)
                + " |"
            )
    return lines


def _what(spec: ExperimentSpec) -> str:
    """What `spec`'s tables and figure show of a run."""
    return "normalised score (D4RL)" if spec.d4rl else "evaluation return"


def experiment_markdown(spec: ExperimentSpec, summary: dict[str, Any]) -> str:
    """An experiment's tables as markdown (`results_markdown`) under the spec's title and settings line, with its
    notes, the notes of the learners it holds, and "-: no runs" where a learner has none in a buffer."""
    learners = learners_in(spec, summary["table"])
    labels = [learner.label for learner in learners]
    names = ", ".join(labels[:-1]) + " and " + labels[-1] if len(labels) > 1 else labels[0]
    fields = {**summary, "learners": names}
    notes = [spec.notes.format(**fields), *(learner.note for learner in learners if learner.note)]
    if any(summary["table"][learner.name][kind]["final"] is None for learner in learners for kind in spec.buffers):
        notes.append("-: no runs (a concurrent run from before the learner was added).")
    lines = [
        f"### {spec.title.format(**fields)}",
        "",
        spec.setup.format(**fields),
        "",
        *results_markdown(summary["table"], spec.buffers, learners, _what(spec)),
        "",
        " ".join(notes),
        "",
    ]
    return "\n".join(lines)


def _band(curves: list[list[list[float]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and std over seeds of several [step, value] curves on the steps they share (`align_curves`)."""
    steps, values = align_curves([tuple(np.asarray(c, dtype=float).T) for c in curves])
    return steps, values.mean(0), values.std(0)


def plot_experiment(spec: ExperimentSpec, summary: dict[str, Any], out: str | Path) -> Path:
    """Figure 2's layout, a column per buffer of the spec. Top: the evaluation return of the learners the
    summary holds (mean, band of one std over seeds; a D4RL experiment's in normalised score) against updates
    (concurrent: behavioral time steps), the behavioral policy dashed. Bottom: the value estimates of the
    learners with Q-values, Q(s0, a0) solid against the true discounted return dashed (symlog scale: a
    diverging critic stays on the plot). Returns the PNG path."""
    buffers = spec.buffers
    learners = learners_in(spec, summary["results"][buffers[0]])
    fig, axes = plt.subplots(2, len(buffers), figsize=(4.2 * len(buffers), 6.8), sharex="col", squeeze=False)
    for column, kind in enumerate(buffers):
        r = summary["results"][kind]
        top, bottom = axes[0, column], axes[1, column]
        for learner in learners:
            color, label = learner.color, learner.label
            curves = [x[_key(spec, "curve")] for x in r[learner.name] if x["curve"]]
            if curves:
                steps, mean, std = _band(curves)
                band(top, steps, mean, mean - std, mean + std, color, label)
            for key, style, suffix in (("q_initial_mean", "-", "estimate"), ("discounted_return_mean", "--", "true")):
                curves = [x["values"][key] for x in r[learner.name] if x["values"][key]]
                if curves:  # none for BC and VAE-BC, which have no Q-values
                    steps, mean, _ = _band(curves)
                    bottom.plot(steps, mean, style, color=color, label=f"{label} {suffix}")
        if kind == "concurrent":
            curves = [b["curve"] for b in r["behavioral"] if b.get("curve")]
            if curves:
                steps, mean, _ = _band(curves)
                top.plot(steps, mean, "k--", label="behavioral")
        elif any(b[_key(spec, "return")] is not None for b in r["behavioral"]):  # medium-expert: no one policy
            level = np.mean([b[_key(spec, "return")] for b in r["behavioral"]])
            top.axhline(level, color="k", ls="--", label="behavioral")
        top.set_title(f"{kind} dataset" if spec.d4rl else f"{kind.capitalize()} buffer")
        bottom.set_yscale("symlog")
        bottom.set_xlabel("time steps" if kind == "concurrent" else "updates")
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel(f"{'normalised score' if spec.d4rl else 'average return'} ({summary['env_id']})")
    axes[1, 0].set_ylabel("value at the first state")
    axes[0, 0].legend(fontsize=8)
    axes[1, 0].legend(fontsize=7)
    return save_figure(fig, out)


def write_summary(spec: ExperimentSpec, summary: dict[str, Any], out_dir: Path) -> None:
    """Write an experiment's summary as out_dir/NAME.json, its tables as NAME.md (both atomically) and its
    figure as NAME.png (NAME: the spec's)."""
    write_json_atomic(out_dir / f"{spec.name}.json", summary)
    write_text_atomic(out_dir / f"{spec.name}.md", experiment_markdown(spec, summary))
    plot_experiment(spec, summary, out_dir / f"{spec.name}.png")


def merge_experiment(spec: ExperimentSpec, parts: Sequence[dict[str, Any]], out_dir: str | Path) -> dict[str, Any]:
    """One experiment from summaries of `spec` with the same settings whose runs do not overlap: parts over
    disjoint seeds (run in separate sessions, each as long as its seeds take) and parts of other learners on
    the same seeds (`run_experiment`'s `learners`, e.g. those added after a table was made, on its datasets
    redone). Each learner's run of a seed comes from one part, and every learner has every seed. A seed's
    behavioral entries come from the first part that has it; any other part with that seed must report the
    same behavioral returns and data episode returns for every buffer, the mark of the same datasets (a D4RL
    experiment's parts all of them, whatever their seeds: one dataset of each kind serves every seed, e.g.
    given to each part by `run_experiment`'s `datasets_from`). A D4RL experiment's parts share their kinds and
    score references too.
    results[buffer][agent] in the order of the seeds (an agent with no runs in a buffer for some seed, as a
    concurrent run from before it was added, has none there), the table over all of them (`results_table`),
    wall_clock_s summed, the spec's constants, acrl_version the parts' versions (distinct, comma-separated),
    meta the merge's own `provenance` (no load average: it measures nothing) with the parts' meta as "parts";
    written to out_dir as `write_summary` writes it. The runs' directories stay those of the parts.

    Raises:
        InputError: fewer than two parts; a part without one of the spec's settings, overrides or
            acrl_version (written before summaries recorded them), with other settings than the first, with
            a learner's seed another part has too, or with a seed's behavioral returns other than another
            part's; a learner without a seed the others have; all before anything is written.
    """
    if len(parts) < 2:
        raise InputError(f"merging takes two or more {spec.name}.json files, got {len(parts)}.")
    first = parts[0]
    if spec.d4rl:  # its datasets' kinds, and the returns its scores scale by, are the parts' own
        spec = spec.with_buffers(first.get("kinds", spec.buffers))
    shared = ("env_id", *(("kinds", "reference") if spec.d4rl else ()), *spec.settings, "overrides")
    for p, part in enumerate(parts):
        missing = [key for key in (*shared, "acrl_version") if key not in part]
        if missing:
            raise InputError(
                f"part {p + 1} lacks {', '.join(missing)}: a {spec.name}.json written before the summary "
                "recorded them cannot be merged; rerun its seeds."
            )
        differ = [key for key in shared if part[key] != first[key]]
        if differ:
            raise InputError(
                f"part {p + 1} ran other settings than part 1 ({', '.join(differ)}: "
                + "; ".join(f"{part[key]!r} against {first[key]!r}" for key in differ)
                + "): only runs of one experiment merge."
            )
    behavioral: dict[int, tuple[int, int]] = {}  # seed -> (part, its index there)
    sources: dict[tuple[int, str], tuple[int, int]] = {}  # (seed, learner) -> (part, index)
    for p, part in enumerate(parts):
        for i, seed in enumerate(part["seeds"]):
            earlier = (0, 0) if spec.d4rl else behavioral.get(seed)  # D4RL: one dataset of a kind for every seed
            if earlier is not None:
                q, j = earlier
                for kind in spec.buffers:
                    ours, theirs = part["results"][kind]["behavioral"][i], parts[q]["results"][kind]["behavioral"][j]
                    for key in ("return", "data_episode_return"):
                        if ours[key] != theirs[key]:
                            raise InputError(
                                f"seed {seed}'s {kind} behavioral {key} is {ours[key]} in part {p + 1} and "
                                f"{theirs[key]} in part {q + 1}: learners merge only on the same datasets."
                            )
            behavioral.setdefault(seed, (p, i))
            for learner in learners_in(spec, part["results"][spec.buffers[0]]):
                if (seed, learner.name) in sources:
                    raise InputError(
                        f"seed {seed}'s {learner.label} is in parts {sources[seed, learner.name][0] + 1} and "
                        f"{p + 1}: each learner's run of a seed must come from one part."
                    )
                sources[seed, learner.name] = (p, i)
    seeds = sorted(behavioral)
    learners = [learner for learner in spec.learners if any(name == learner.name for _, name in sources)]
    lacking = [f"{x.label} seed {seed}" for x in learners for seed in seeds if (seed, x.name) not in sources]
    if lacking:
        raise InputError(f"the parts lack {', '.join(lacking)}: every learner needs every seed of the parts.")

    def runs(kind: str, agent: str) -> list[dict[str, Any]]:
        where = [behavioral[seed] if agent == "behavioral" else sources[seed, agent] for seed in seeds]
        held = [parts[p]["results"][kind][agent] for p, _ in where]
        return [entries[i] for entries, (_, i) in zip(held, where)] if all(held) else []

    agents = ("behavioral", *(learner.name for learner in learners))
    results = {kind: {agent: runs(kind, agent) for agent in agents} for kind in spec.buffers}
    times = [part["wall_clock_s"] for part in parts]
    summary = {
        "meta": {**provenance(None, spec.libraries), "parts": [part.get("meta") for part in parts]},
        **{key: first[key] for key in shared},
        **spec.constants,
        "acrl_version": ", ".join(dict.fromkeys(part["acrl_version"] for part in parts)),
        "seeds": seeds,
        "wall_clock_s": None if None in times else round(sum(times), 1),
        "results": results,
        "table": results_table(spec, results),
    }
    write_summary(spec, summary, Path(out_dir))
    return summary


__all__ = ["experiment_markdown", "merge_experiment", "plot_experiment", "results_table", "write_summary"]
