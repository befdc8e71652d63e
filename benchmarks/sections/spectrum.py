"""docs/benchmarks.md, BCQ's spectrum on Hopper-v5: sampled actions n by perturbation phi
(bcq_spectrum_hopper.json, benchmarks/bcq_spectrum.py)."""

from __future__ import annotations

import statistics

from sections.formats import conditions, kilo, n, table

SPECTRUM_GRID = {"n": [1, 10, 100], "phi": [0.0, 0.05, 0.5], "seeds": [0, 1, 2]}
"""The spectrum issue #27 asks for: sampled actions n by perturbation phi over 3 seeds."""


def bcq_spectrum_hopper(results: dict[str, dict]) -> str:
    """BCQ's spectrum (benchmarks/bcq_spectrum.py, merged from its parts) on the Hopper experiment's imitation and
    imperfect data: a table per buffer, a sentence per row against the behavioral policy of the same seeds."""
    d = results.get("bcq_spectrum_hopper")
    if d is None:
        return ""
    experiment = results["bcq_hopper_extrapolation"]
    seeds, t = d["seeds"], d["table"]
    behavioral = {
        kind: statistics.mean(
            experiment["results"][kind]["behavioral"][experiment["seeds"].index(s)]["return"] for s in seeds
        )
        for kind in d["kinds"]
    }

    def mean(kind: str, n_: int, phi: float) -> float:
        return t[kind][f"n={n_}, phi={phi:g}"]["mean"]

    def verdict(value: float, reference: float) -> str:
        if abs(value - reference) <= 0.05 * abs(reference):
            return "level with it (within 5%)"
        return "above it" if value > reference else "below it"

    blocks = []
    for kind in d["kinds"]:
        rows = []
        for n_ in d["n"]:
            cells = []
            for phi in d["phi"]:
                c = t[kind][f"n={n_}, phi={phi:g}"]
                cells.append(
                    f"{n(c['iqm'])} [{n(c['iqm_ci'][0])}, {n(c['iqm_ci'][1])}] ({n(c['mean'])} ± {n(c['std'])})"
                )
            rows.append([f"n = {n_}", *cells])
        sentences = []
        for n_ in d["n"]:
            groups: dict[str, list[float]] = {}
            for phi in d["phi"]:
                groups.setdefault(verdict(mean(kind, n_, phi), behavioral[kind]), []).append(phi)
            said = "; ".join(
                f"{v} for phi {', '.join(f'{phi:g}' for phi in phis)} "
                f"({', '.join(n(mean(kind, n_, phi)) for phi in phis)})"
                for v, phis in groups.items()
            )
            role = {1: " (phi 0: VAE-BC's actions)", 10: " (phi 0.05: the paper's BCQ)"}.get(n_, "")
            sentences.append(f"- n = {n_}{role}: {said}.")
        blocks.append(
            f"""**{kind}** (behavioral policy of these seeds: {n(behavioral[kind])})

{table(["", *(f"phi = {phi:g}" for phi in d["phi"])], "l" + "r" * len(d["phi"]), rows)}

Against the behavioral policy, per row:
{chr(10).join(sentences)}"""
        )
    hurt = [
        f"{kind} n = {n_} ({n(mean(kind, n_, 0.5))} against {n(mean(kind, n_, 0.05))})"
        for kind in d["kinds"]
        for n_ in d["n"]
        if 0.5 in d["phi"] and 0.05 in d["phi"] and mean(kind, n_, 0.5) < 0.8 * mean(kind, n_, 0.05)
    ]
    level = [
        kind
        for kind in d["kinds"]
        if all(verdict(mean(kind, n_, phi), behavioral[kind]).startswith("level") for n_ in d["n"] for phi in d["phi"])
    ]
    missing = [f"n = {x}" for x in SPECTRUM_GRID["n"] if x not in d["n"]] + [
        f"seed {x}" for x in SPECTRUM_GRID["seeds"] if x not in seeds
    ]
    still = (
        f"Still to run: {', '.join(missing)}; until then a partial grid, not a claim over 3 seeds." if missing else ""
    )
    grid = (
        f"seeds {', '.join(map(str, seeds))}, n in {{{', '.join(map(str, d['n']))}}}, "
        f"phi in {{{', '.join(f'{phi:g}' for phi in d['phi'])}}}"
    )
    parts = "; ".join(
        f"`{p['file']}` ({p['meta']['date'][:10]}, commit {str(p['meta']['commit'])[:7]}, "
        f"{p['wall_clock_s'] / 60:.0f} min)"
        for p in d["parts"]
    )
    everywhere = f" Every cell is level with the behavioral policy on {' and '.join(level)} data." if level else ""
    return f"""### BCQ's spectrum on Hopper-v5

BCQ acts with the best by Q of n actions sampled from its VAE and perturbed by at most phi; with n = 1 and
phi = 0 it takes VAE-BC's actions, and with many samples and a large perturbation it approaches Q-learning
(Fujimoto et al. 2019, Sec. 4). `benchmarks/bcq_spectrum.py` trains BCQ with n_action_samples = n_select_samples
= n on the Hopper experiment's imitation and imperfect data (seed s on seed s's data, redone by `--datasets-only`:
the same datasets to the last digit), {kilo(d["updates"])} updates, every other setting the experiment's; the
n = 10, phi = 0.05 cell repeats the experiment's BCQ. Final evaluation: IQM [95% CI] (mean ± std) over {grid}
(`benchmarks/results/bcq_spectrum_hopper.{{json,md}}`, merged from the parts in `benchmarks/results/parts/`:
{parts}). {still}
{conditions(d)}

{(chr(10) * 2).join(blocks)}

The large perturbation (phi = 0.5, the Q-learning end) loses more than a fifth of phi = 0.05's return on
{"; ".join(hurt) if hurt else "no buffer"}.{everywhere}"""
