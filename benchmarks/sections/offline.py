"""docs/benchmarks.md, D4RL's table on Hopper-v5 with datasets built here (d4rl_hopper.json, an `acrl experiment
d4rl` summary) and acrl's TD3+BC, IQL, CQL and BC against d3rlpy's on the same datasets (offline_vs_d3rlpy.json from
benchmarks/offline_vs_d3rlpy.py), each with CORL's published D4RL scores as the range."""

from __future__ import annotations

import functools
import statistics

from offline_vs_d3rlpy import CORL

from sections.formats import conditions, met, n, pm, table, x

D4RL_LEARNERS = {"td3_bc": "TD3+BC", "iql": "IQL", "cql": "CQL", "bcq": "BCQ", "bc": "BC"}
"""The D4RL experiment's learners (acrl.offline.spec.D4RL), in its table's order."""

LABELS = {"td3_bc": "TD3+BC", "iql": "IQL", "cql": "CQL", "bc": "BC"}
"""The algorithms, in the table's order."""

SPEED_GOAL = 2.0
"""Issue #50: acrl at least twice d3rlpy's updates/s on one thread."""


@functools.cache
def _ci(scores: tuple[float, ...]) -> tuple[float, float, float]:
    """Mean and its 95% bootstrap CI over seeds (`acrl.sweep.results.interval_estimates`, rliable's). Cached: about
    0.9 s each, 16 of them were nearly all of a render's 8 s, and the tests render the page about 30 times."""
    from acrl.sweep.results import interval_estimates

    estimate = interval_estimates({"x": list(scores)})["x"]
    return estimate["mean"], *estimate["mean_ci"]


def _cell(mean: float, low: float, high: float) -> str:
    return f"{n(mean, 1)} [{n(low, 1)}, {n(high, 1)}]"


def offline_vs_d3rlpy(results: dict[str, dict]) -> str:
    """A row per dataset and algorithm: each library's normalised score (mean over seeds, 95% bootstrap CI) and
    median updates/s, the speed ratio, and whether each of issue #50's two goals is met; CORL's figures below.
    Empty until the result exists."""
    d = results.get("offline_vs_d3rlpy")
    if d is None:
        return ""
    rows, scores_met, speeds_met = [], [], []
    kinds = list(dict.fromkeys(row["kind"] for row in d["rows"]))
    for kind in kinds:
        for algo, label in LABELS.items():
            runs = [row for row in d["rows"] if row["kind"] == kind and row["algo"] == algo]
            if not runs:
                continue
            ours, theirs = (tuple(row[lib]["score"] for row in runs) for lib in ("acrl", "d3rlpy"))
            speed = {lib: statistics.median(row[lib]["updates_per_s"] for row in runs) for lib in ("acrl", "d3rlpy")}
            ratio = speed["acrl"] / speed["d3rlpy"]
            if None in ours or None in theirs:
                cells, score_ok = ["-", "-"], False
            else:
                a, b = _ci(ours), _ci(theirs)
                cells, score_ok = [_cell(*a), _cell(*b)], a[2] >= b[1]  # our CI reaches theirs, or is above
            scores_met.append(score_ok)
            speeds_met.append(ratio >= SPEED_GOAL)
            rates = [n(speed["acrl"], 1), n(speed["d3rlpy"], 1), x(ratio)]
            rows.append([kind, label, str(len(runs)), *cells, met(score_ok), *rates, met(speeds_met[-1])])
    corl = [[name, *(n(scores[algo], 1) for algo in LABELS)] for name, scores in d["corl"].items()]
    parts = d.get("parts", [])
    if len(parts) > 1:  # run by parts: each one's algorithms and conditions
        ran = [
            ", ".join(LABELS[a] for a in LABELS if any(r["algo"] == a and r["part"] == i for r in d["rows"]))
            for i in range(len(parts))
        ]
        items = (f"- {algos}: {conditions({'meta': meta})}" for algos, meta in zip(ran, parts, strict=True))
        said = f"d3rlpy's side ran in {len(parts)} parts:\n\n" + "\n".join(items)
    else:
        said = conditions(d)
    header = ["dataset", "algorithm", "seeds", "acrl score", "d3rlpy score", "score goal", "acrl upd/s", "d3rlpy upd/s"]
    roofline = results.get("update_roofline")
    alone = {} if roofline is None else roofline["threads"]["1"]
    measured = [
        f"{label} {n(alone[algo]['acrl'], 1)} against {n(alone[algo]['d3rlpy'], 1)} "
        f"({x(alone[algo]['acrl'] / alone[algo]['d3rlpy'])})"
        for algo, label in LABELS.items()
        if "d3rlpy" in alone.get(algo, {}) and any(row["algo"] == algo for row in d["rows"])
    ]
    since = (
        ""
        if not measured
        else ' The same update alone, one thread, in one process ("The off-policy update against the roofline and'
        f" d3rlpy\" above, commit {roofline['meta']['commit'][:7]}), acrl's updates/s against d3rlpy's: "
        + "; ".join(measured)
        + " (the table's rates are its runs', at the commits the D4RL table's conditions list)."
    )
    return f"""## Offline RL beyond BCQ: TD3+BC, IQL, CQL and BC against d3rlpy

`python benchmarks/offline_vs_d3rlpy.py --table ... --datasets ...` (`benchmarks/offline_vs_d3rlpy.py`): acrl's side is
the D4RL table above (each run's final normalised score, and its training updates/s with its evaluations left out,
the table's runs two at a time on the 2 cores); d3rlpy 2.8 trains the same algorithms on the same datasets (checked
against the table's dataset returns), seeds and budget, {d["updates"]:,} updates, {d["jobs"]} runs at a time, with
acrl's settings given to its config classes (the script's docstring lists each field that differs by default and
how it is aligned), {d["threads"]} torch thread per run, evaluated on {d["eval_episodes"]} deterministic episodes.
Score: D4RL's normalised score, mean over seeds [95% bootstrap CI]; updates/s: the median over seeds. Goals (issue
#50): acrl's score at or above d3rlpy's (its CI reaching d3rlpy's or above), and at least {x(SPEED_GOAL, 0)}
d3rlpy's updates/s.
{said}

{table([*header, "acrl / d3rlpy", "speed goal"], "llrrrlrrrl", rows)}

Score goal met on {sum(scores_met)} of {len(rows)} rows, speed goal on {sum(speeds_met)}.{since} For scale, CORL's
published D4RL normalised scores (Tarasov et al. 2023, last checkpoint, 1M updates) on D4RL's own datasets, which were
made by other SAC runs on gym's v3 tasks: the range, not a like-for-like comparison.

{table(["CORL, D4RL", *LABELS.values()], "lrrrr", corl)}"""


def d4rl_hopper(results: dict[str, dict]) -> str:
    """The D4RL experiment's table on Hopper-v5: each learner's final normalised score per dataset kind (mean ± std
    over seeds, and the IQM with its 95% bootstrap CI), the behavioral policy's and the dataset's episodes', and
    CORL's last scores on D4RL's datasets of the same names below. Empty until the result exists."""
    d = results.get("d4rl_hopper")
    if d is None:
        return ""
    t, kinds = d["table"], d["kinds"]
    learners = [name for name in D4RL_LEARNERS if name in t]
    rows = [["behavioral policy", *(pm(t["behavioral"][k]["return"], 1) for k in kinds)]]
    for name in learners:
        cells = [t[name][k] for k in kinds]
        rows.append([D4RL_LEARNERS[name], *(pm(c["final"], 1) for c in cells)])
        rows.append([f"{D4RL_LEARNERS[name]}: IQM [95% CI]", *(_cell(c["iqm"], *c["iqm_ci"]) for c in cells)])
    rows.append(["dataset episodes", *(pm(t["behavioral"][k]["data_episodes"], 1) for k in kinds)])
    corl = [
        [f"hopper-{k}-v2", *(n(CORL[f"hopper-{k}-v2"][a], 1) if a in CORL[f"hopper-{k}-v2"] else "-" for a in learners)]
        for k in kinds
        if f"hopper-{k}-v2" in CORL
    ]
    hours = "not recorded" if d["wall_clock_s"] is None else f"{d['wall_clock_s'] / 3600:.1f} hours"
    labels = [D4RL_LEARNERS[a] for a in learners]
    names = " and ".join([", ".join(labels[:-1]), labels[-1]] if len(labels) > 1 else labels)
    return f"""## D4RL's table on Hopper-v5, datasets built here

`acrl experiment d4rl` (`benchmarks/results/d4rl_hopper.{{json,md,png}}`) on the Hopper-v5 {" and ".join(kinds)}
datasets committed in `benchmarks/data/d4rl_hopper_v5` (built here the way D4RL built them: its README):
{names}, each with its preset for the task (the papers' D4RL settings, `acrl/presets/`),
{len(d["seeds"])} seeds, {d["updates"]:,} updates per run (CORL trains 1M), {hours} of wall clock. Score: D4RL's
normalised score of each run's last evaluation ({d["eval_episodes"]} deterministic episodes), mean ± std over seeds
and the IQM with its 95% bootstrap CI (rliable; with 3 seeds the IQM is the mean). References: {d["reference"]}.
{conditions(d)}

{table(["", *kinds], "l" + "r" * len(kinds), rows)}

For scale, CORL's last scores (Tarasov et al. 2023, 1M updates, D4RL's own datasets made by other SAC runs on gym's
v3 task): the range, not a like-for-like comparison.

{table(["CORL, D4RL", *(D4RL_LEARNERS[a] for a in learners)], "l" + "r" * len(learners), corl)}"""
