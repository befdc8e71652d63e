"""docs/benchmarks.md, acrl's TD3+BC, IQL, CQL and BC against d3rlpy's on the same D4RL-style datasets
(offline_vs_d3rlpy.json from benchmarks/offline_vs_d3rlpy.py), with CORL's published D4RL scores as the range."""

from __future__ import annotations

import statistics

from sections.formats import conditions, met, n, table, x

LABELS = {"td3_bc": "TD3+BC", "iql": "IQL", "cql": "CQL", "bc": "BC"}
"""The algorithms, in the table's order."""

SPEED_GOAL = 2.0
"""Issue #50: acrl at least twice d3rlpy's updates/s on one thread."""


def _ci(scores: list[float]) -> tuple[float, float, float]:
    """Mean and its 95% bootstrap CI over seeds (`acrl.sweep.results.interval_estimates`, rliable's)."""
    from acrl.sweep.results import interval_estimates

    estimate = interval_estimates({"x": scores})["x"]
    return estimate["mean"], *estimate["mean_ci"]


def _cell(mean: float, low: float, high: float) -> str:
    return f"{n(mean, 1)} [{n(low, 1)}, {n(high, 1)}]"


def offline_vs_d3rlpy(results: dict[str, dict]) -> str:
    """A row per dataset and algorithm: each library's normalised score (mean over seeds, 95% bootstrap CI) and
    median updates/s, the speed ratio, and whether issue #50's goals are met; CORL's figures below. Empty until
    the result exists."""
    d = results.get("offline_vs_d3rlpy")
    if d is None:
        return ""
    rows, goals = [], []
    kinds = list(dict.fromkeys(row["kind"] for row in d["rows"]))
    for kind in kinds:
        for algo, label in LABELS.items():
            runs = [row for row in d["rows"] if row["kind"] == kind and row["algo"] == algo]
            if not runs:
                continue
            ours, theirs = ([row[lib]["score"] for row in runs] for lib in ("acrl", "d3rlpy"))
            speed = {lib: statistics.median(row[lib]["updates_per_s"] for row in runs) for lib in ("acrl", "d3rlpy")}
            ratio = speed["acrl"] / speed["d3rlpy"]
            if None in ours or None in theirs:
                cells, score_ok = ["-", "-"], False
            else:
                a, b = _ci(ours), _ci(theirs)
                cells, score_ok = [_cell(*a), _cell(*b)], a[2] >= b[1]  # our CI reaches theirs, or is above
            goals.append(score_ok and ratio >= SPEED_GOAL)
            rates = [n(speed["acrl"], 1), n(speed["d3rlpy"], 1), x(ratio)]
            rows.append([kind, label, str(len(runs)), *cells, *rates, met(goals[-1])])
    corl = [[name, *(n(scores[algo], 1) for algo in LABELS)] for name, scores in d["corl"].items()]
    header = ["dataset", "algorithm", "seeds", "acrl score", "d3rlpy score", "acrl upd/s", "d3rlpy upd/s"]
    return f"""## Offline RL beyond BCQ: TD3+BC, IQL, CQL and BC against d3rlpy

`python benchmarks/offline_vs_d3rlpy.py --datasets ... --updates {d["updates"]}` (`benchmarks/offline_vs_d3rlpy.py`):
each algorithm in both libraries on the same D4RL-style datasets built here (`acrl experiment d4rl`, `acrl collect
--kind`), with acrl's settings for the task given to d3rlpy's config classes (the script's docstring lists each field
that differs by default and how it is aligned), {d["updates"]:,} updates, {d["threads"]} torch thread(s), the two
runs of a pair side by side, evaluated on {d["eval_episodes"]} deterministic episodes. Score: D4RL's normalised
score, mean over seeds [95% bootstrap CI]; updates/s: the median over seeds. Goals (issue #50): acrl's score at or
above d3rlpy's (its CI reaching d3rlpy's or above), and at least {x(SPEED_GOAL, 0)} d3rlpy's updates/s.
{conditions(d)}

{table([*header, "acrl / d3rlpy", "goals"], "lllrrrrrrl", rows)}

Met for {sum(goals)} of {len(goals)} rows. For scale, CORL's published D4RL normalised scores (Tarasov et al. 2023,
last checkpoint, 1M updates) on D4RL's own datasets, which were made by other SAC runs on gym's v3 tasks: the range,
not a like-for-like comparison.

{table(["CORL, D4RL", *LABELS.values()], "lrrrr", corl)}"""
