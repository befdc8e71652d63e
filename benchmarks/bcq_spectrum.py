"""BCQ's spectrum: sampled actions n x perturbation scale phi, on one extrapolation experiment's buffers.

BCQ (Fujimoto, Meger, Precup 2019, "Off-Policy Deep Reinforcement Learning without Exploration", Sec. 4)
acts with the best by Q1 of n actions sampled from its VAE and perturbed by at most phi. acrl's design
documents describe it as a spectrum: with n = 1 and phi = 0 it is behavioral cloning from the VAE
(VAE-BC, `acrl train vae_bc`, takes the same actions), and with many samples and a large perturbation it
approaches Q-learning over the whole action space. This script trains BCQ on the grid

    n in {1, 10, 100} (n_action_samples, the target's samples per next state, and n_select_samples, the
    candidates when acting, both n), phi in {0, 0.05, 0.5}, seeds {0, 1, 2}, buffers imitation, imperfect

on the datasets of an `acrl experiment extrapolation` output directory (EXPERIMENT/sSEED/data-KIND/KIND.h5:
seed s trains on the experiment's seed-s data with BCQ seed s), with the experiment's budget, evaluation
settings and --bcq-set values (its experiment.yaml), so the n = 10, phi = 0.05 cell repeats the
experiment's own BCQ runs and every other cell changes n and phi only. The committed experiments ran at 4%
of the paper's scale (40k behavioral steps and transitions, 12k updates):

    acrl experiment extrapolation --env Hopper-v5 --seeds 0 1 2 --steps-behavioral 40000 \\
        --dataset-size 40000 --updates 12000 --eval-freq 2000 --behavioral-set start_steps=10000 \\
        --out runs/hopper-extrapolation
    python benchmarks/bcq_spectrum.py runs/hopper-extrapolation --out benchmarks/results/bcq_spectrum_hopper.json
    python benchmarks/bcq_spectrum.py runs/x --updates 200 --seeds 0 --n 1 100 --phi 0 0.5   # a check in minutes

The grid takes an estimated 19 core-hours on Hopper: an n = 100 update takes 0.24 s on an idle core (200 in 48 s,
2026-12-05; its target decodes 100 actions per next state through BCQ's 750-750 VAE), so each n = 100 run about
50 minutes, the 18 of them 15 hours; the n = 1 and 10 runs take 6-9 minutes. On 2 cores it runs in parts, one a
session, each on the experiment's data redone on that machine by `--datasets-only` (the behavioral DDPG alone, the
same run as the experiment's, so the same datasets: 184 s for Hopper's seed 0, whose three datasets and behavioral
returns came out equal to the committed experiment's to the last digit on another machine), then merged:

    acrl experiment extrapolation --env Hopper-v5 --seeds 0 --steps-behavioral 40000 --dataset-size 40000 \\
        --updates 12000 --eval-freq 2000 --behavioral-set start_steps=10000 --datasets-only --out runs/hopper-data
    python benchmarks/bcq_spectrum.py runs/hopper-data --seeds 0 --kinds imitation \\
        --reference benchmarks/results/bcq_hopper_extrapolation.json \\
        --out benchmarks/results/parts/bcq_spectrum_hopper_s0_imitation.json
    python benchmarks/bcq_spectrum.py --merge benchmarks/results/parts/bcq_spectrum_hopper_*.json \\
        --out benchmarks/results/bcq_spectrum_hopper.json

The runs are jobs of the experiments' executor (`acrl.sweep.executor.run_jobs`: a process pool, one run
per core, or a Ray cluster with --address) in EXPERIMENT/spectrum/KIND/nN-phiPHI-sSEED (a `--updates` other
than the experiment's: EXPERIMENT/spectrum-uUPDATES/...); a finished run (its job.json) is read, not rerun,
and an interrupted one continues from its checkpoint, so rerunning the command resumes. The result is the
JSON (--out, default benchmarks/results/tmp/bcq_spectrum.json) and a markdown table beside it (.md): per
buffer, n by phi, the final evaluation's IQM over seeds with rliable's 95% bootstrap CI (as `acrl sweep`)
and its mean ± std, and, when the experiment has finished (its extrapolation.json, or --reference), its
behavioral policy and learners for reference. Its meta (`acrl.offline.experiments.experiment_meta`) holds
the commit the command started at and every session that ran its jobs. A part's table covers its seeds and
buffers; --merge refuses parts of other settings, runs of one cell and seed twice, and a cell that lacks a
seed the others have.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from meta import scratch_path

from acrl.core.files import write_json_atomic, write_text_atomic
from acrl.core.plotting import read_curve
from acrl.core.provenance import load_average, provenance, source, wall_clock_s
from acrl.offline.experiments import experiment_meta
from acrl.sweep.executor import run_jobs
from acrl.sweep.grid import train_run
from acrl.sweep.jobs import ClusterOptions, Job
from acrl.sweep.results import BOOTSTRAP_REPS, interval_estimates

KINDS = ("imitation", "imperfect")
"""The buffers of the ablation: the experiment's noise-free and noisy demonstrations."""

LABEL = "BCQ spectrum"
"""The start of a part's `run_jobs` label: the progress bar's name and its time's key in the experiment's
sessions.json."""

REFERENCE = {"behavioral": "behavioral policy", "bcq": "BCQ (the experiment's)", "vae_bc": "VAE-BC", "bc": "BC"}
"""Rows of the experiment's own table shown for reference, when its extrapolation.json holds them."""


def run_name(kind: str, n: int, phi: float, seed: int) -> str:
    """The run's directory under the spectrum root: KIND/nN-phiPHI-sSEED."""
    return f"{kind}/n{n}-phi{phi:g}-s{seed}"


def spectrum_jobs(
    experiment_dir: Path,
    experiment: dict[str, Any],
    root: str,
    n_values: list[int],
    phis: list[float],
    seeds: list[int],
    kinds: list[str],
    updates: int,
) -> list[Job]:
    """One `train_run` job per buffer, n, phi and seed (the costliest, largest n, first), each writing
    latest.pt at every evaluation, so that a run killed with its session resumes from there.

    Args:
        experiment_dir: the experiment's directory (absolute), the jobs' root.
        experiment: the experiment's experiment.yaml (env_id, eval_freq, eval_episodes, bcq_overrides).
        root: the spectrum's directory relative to the experiment's ("spectrum" or "spectrum-uUPDATES").
        n_values, phis, seeds, kinds: the grid (kinds: buffers of `KINDS`); updates: gradient updates per run.
    """
    overrides = {
        "checkpoint_freq": experiment["eval_freq"],
        **(experiment.get("bcq_overrides") or {}),
        "eval_freq": experiment["eval_freq"],
        "eval_episodes": experiment["eval_episodes"],
    }
    jobs = []
    for n in sorted(n_values, reverse=True):
        for phi in phis:
            for seed in seeds:
                for kind in kinds:
                    dataset = f"s{seed}/data-{kind}/{kind}.h5"
                    jobs.append(
                        Job(
                            f"{root}/{run_name(kind, n, phi, seed)}",
                            train_run,
                            {
                                "algo": "bcq",
                                "env_id": experiment["env_id"],
                                "preset": None,
                                "overrides": {**overrides, "n_action_samples": n, "n_select_samples": n, "phi": phi},
                                "flags": {
                                    "seed": seed,
                                    "total_steps": updates,
                                    "dataset": str(experiment_dir / dataset),
                                },
                            },
                            inputs=(dataset,),
                            steps=updates,
                        )
                    )
    return jobs


def cell(finals: list[float], estimate: dict[str, Any]) -> dict[str, Any]:
    """A table cell: the final evaluations over seeds, their mean and std, IQM and its 95% CI."""
    return {
        "finals": finals,
        "mean": float(np.mean(finals)),
        "std": float(np.std(finals)),
        "iqm": estimate["iqm"],
        "iqm_ci": estimate["iqm_ci"],
    }


def reference_rows(path: Path) -> dict[str, Any]:
    """An extrapolation.json's updates and rows {agent: {kind: its table cell}} for `REFERENCE`; {} without the
    file (an experiment not finished, or one of --datasets-only)."""
    if not path.exists():
        return {}
    summary = json.loads(path.read_text())
    table = summary["table"]
    rows = {agent: {kind: table[agent][kind] for kind in KINDS} for agent in REFERENCE if agent in table}
    return {"file": path.name, "updates": summary["updates"], "rows": rows}


SETTINGS = ("env_id", "dataset_size", "updates", "experiment_updates", "eval_freq", "eval_episodes")
"""What the parts of one spectrum share (`merge`); their n and phi may differ, the merged grid being the union."""


def summarize(settings: dict[str, Any], runs: list[dict[str, Any]], reference: dict[str, Any]) -> dict[str, Any]:
    """The result over `runs` (each: kind, n, phi, seed, final, ...): `settings` (SETTINGS and more), the buffers
    and seeds the runs cover, and table[kind]["n=N, phi=PHI"] = `cell` of the final evaluations over seeds.

    Raises:
        ValueError: a (kind, n, phi) cell without a run for one of the seeds the runs cover, or two runs of one
            (kind, n, phi, seed).
    """
    kinds = [kind for kind in KINDS if any(r["kind"] == kind for r in runs)]
    seeds = sorted({r["seed"] for r in runs})
    keys = [(r["kind"], r["n"], r["phi"], r["seed"]) for r in runs]
    if len(set(keys)) < len(keys):
        raise ValueError(f"two runs of one cell and seed: {sorted(k for k in set(keys) if keys.count(k) > 1)}")
    finals = {}
    for kind in kinds:
        for n in settings["n"]:
            for phi in settings["phi"]:
                by_seed = {r["seed"]: r["final"] for r in runs if (r["kind"], r["n"], r["phi"]) == (kind, n, phi)}
                if sorted(by_seed) != seeds:
                    raise ValueError(
                        f"{kind}, n={n}, phi={phi:g} has runs of seeds {sorted(by_seed)}, not of all seeds {seeds}: "
                        "run the missing part first."
                    )
                finals[(kind, f"n={n}, phi={phi:g}")] = [by_seed[seed] for seed in seeds]
    estimates = interval_estimates({f"{k}/{c}": np.array(v) for (k, c), v in finals.items()})
    table: dict[str, dict[str, Any]] = {kind: {} for kind in kinds}
    for (kind, name), values in finals.items():
        table[kind][name] = cell(values, estimates[f"{kind}/{name}"])
    return {**settings, "kinds": kinds, "seeds": seeds, "runs": runs, "table": table, "reference": reference}


def merge(paths: list[Path]) -> dict[str, Any]:
    """The spectrum over the runs of several results of it (parts: e.g. one seed and buffer each, or some of the
    n, run in separate sessions): `summarize` over their runs on the union of their n and phi, wall_clock_s
    summed, each part's meta kept under "parts", the merge's own (its command; no load average, as it measures
    nothing) as "meta".

    Raises:
        ValueError: fewer than two parts, parts of other settings (`SETTINGS`), or runs that overlap or leave a
            cell without a seed (`summarize`).
    """
    if len(paths) < 2:
        raise ValueError(f"--merge takes two or more results, got {len(paths)}")
    parts = [json.loads(path.read_text()) for path in paths]
    for path, part in zip(paths, parts, strict=True):
        differ = [key for key in SETTINGS if part[key] != parts[0][key]]
        if differ:
            raise ValueError(f"{path} ran other settings than {paths[0]}: {', '.join(differ)}")
    settings = {
        **{key: parts[0][key] for key in SETTINGS},
        "n": sorted({n for part in parts for n in part["n"]}),
        "phi": sorted({phi for part in parts for phi in part["phi"]}),
    }
    times = [part["wall_clock_s"] for part in parts]
    reference = next((part["reference"] for part in parts if part["reference"]), {})
    return {
        "meta": provenance(None, ("h5py", "mujoco")),
        "parts": [
            {"file": path.name, "meta": part["meta"], "wall_clock_s": part["wall_clock_s"]}
            for path, part in zip(paths, parts, strict=True)
        ],
        "wall_clock_s": None if None in times else round(sum(times), 1),
        **summarize(settings, [run for part in parts for run in part["runs"]], reference),
    }


def markdown(result: dict[str, Any]) -> str:
    """Per buffer, a table of n (rows) by phi (columns): IQM [95% CI] and mean ± std of the final evaluations."""
    phis = result["phi"]
    lines = [
        f"### BCQ's spectrum on {result['env_id']}: n sampled actions x perturbation phi",
        "",
        f"BCQ (Fujimoto et al. 2019) with n_action_samples = n_select_samples = n and perturbation phi; seeds "
        f"{result['seeds']}, each on the experiment's data of its seed ({result['dataset_size']} transitions); "
        f"{result['updates']} updates; final evaluation ({result['eval_episodes']} deterministic episodes): IQM "
        f"[95% bootstrap CI] (rliable, {BOOTSTRAP_REPS} resamples) and mean ± std over seeds. n = 1, phi = 0 is "
        "VAE-BC; n = 10, phi = 0.05 the paper's BCQ.",
        "",
    ]
    reference = result["reference"]
    for kind in result["kinds"]:
        lines += [
            f"**{kind}**",
            "",
            "| n \\ phi | " + " | ".join(f"{phi:g}" for phi in phis) + " |",
            "| --- |" + " ---: |" * len(phis),
        ]
        for n in result["n"]:
            cells = []
            for phi in phis:
                c = result["table"][kind][f"n={n}, phi={phi:g}"]
                cells.append(
                    f"{c['iqm']:.1f} [{c['iqm_ci'][0]:.1f}, {c['iqm_ci'][1]:.1f}] ({c['mean']:.1f} ± {c['std']:.1f})"
                )
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
        lines.append("")
        if reference:
            shown = []
            for agent, label in REFERENCE.items():
                ref = reference["rows"].get(agent, {}).get(kind)
                value = None if ref is None else ref.get("return", ref.get("final"))
                if value is not None:
                    shown.append(f"{label} {value[0]:.1f} ± {value[1]:.1f}")
            lines += [
                f"The experiment's ({reference['file']}, {reference['updates']} updates), for reference (final "
                "evaluation, mean ± std): " + "; ".join(shown) + ".",
                "",
            ]
    return "\n".join(lines)


def write(result: dict[str, Any], out: Path) -> None:
    """The result as JSON at `out` and its tables as markdown beside it (.md); the tables on stdout."""
    write_json_atomic(out, result)
    write_text_atomic(out.with_suffix(".md"), markdown(result))
    print(markdown(result))
    print(f"result: {out}; table: {out.with_suffix('.md')}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "experiment",
        type=Path,
        nargs="?",
        help="an `acrl experiment extrapolation` output directory (or one of its --datasets-only)",
    )
    parser.add_argument("--n", type=int, nargs="+", default=[1, 10, 100], help="sampled actions (default 1 10 100)")
    parser.add_argument("--phi", type=float, nargs="+", default=[0.0, 0.05, 0.5], help="perturbation scales")
    parser.add_argument("--seeds", type=int, nargs="+", help="default: the experiment's seeds")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS), help="buffers (default both)")
    parser.add_argument("--updates", type=int, help="updates per run (default: the experiment's; a quick check)")
    parser.add_argument(
        "--reference", type=Path, help="the extrapolation.json whose rows the tables show (default: the experiment's)"
    )
    parser.add_argument("--merge", type=Path, nargs="+", help="instead of running: combine these results (parts)")
    parser.add_argument("--address", help="a Ray cluster for the runs (auto or HOST:PORT; default: this machine)")
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    parser.add_argument("--out", type=Path, help="result file (default benchmarks/results/tmp/bcq_spectrum.json)")
    args = parser.parse_args(argv)
    out = args.out or scratch_path("bcq_spectrum")
    if args.merge:
        try:
            write(merge(args.merge), out)
        except ValueError as exc:
            parser.error(str(exc))
        return 0
    if args.experiment is None:
        parser.error("give an experiment directory, or --merge results")
    experiment_dir = args.experiment.resolve()
    settings_path = experiment_dir / "experiment.yaml"
    if not settings_path.exists():
        parser.error(f"{experiment_dir} holds no experiment.yaml: give an `acrl experiment extrapolation` --out.")
    experiment = yaml.safe_load(settings_path.read_text())
    if experiment.get("experiment") != "extrapolation":
        parser.error(f"{experiment_dir} holds a {experiment.get('experiment')} experiment, not extrapolation.")
    seeds = args.seeds or experiment["seeds"]
    missing = [
        f"s{s}/data-{k}/{k}.h5"
        for s in seeds
        for k in args.kinds
        if not (experiment_dir / f"s{s}/data-{k}/{k}.h5").exists()
    ]
    if missing:
        parser.error(f"{experiment_dir} lacks {', '.join(missing)}: run (or resume) its experiment first.")
    if min(args.n) < 1 or min(args.phi) < 0:
        parser.error("--n must be >= 1 and --phi >= 0.")
    updates = args.updates or experiment["updates"]
    root = "spectrum" if updates == experiment["updates"] else f"spectrum-u{updates}"
    load_before, origin = load_average(), source()
    jobs = spectrum_jobs(experiment_dir, experiment, root, args.n, args.phi, seeds, args.kinds, updates)
    # each part its own label: its time in sessions.json is its own, summed over the sessions that ran it
    label = f"{LABEL}, seeds {seeds}, {' '.join(args.kinds)}, n {args.n}, phi {args.phi}, {updates} updates"
    done = run_jobs(jobs, experiment_dir, ClusterOptions(address=args.address), args.progress, label=label)

    runs = []
    for n in args.n:
        for phi in args.phi:
            for seed in seeds:
                for kind in args.kinds:
                    name = f"{root}/{run_name(kind, n, phi, seed)}"
                    steps, values = read_curve(experiment_dir / name, "eval/return_mean")
                    runs.append(
                        {
                            "kind": kind,
                            "n": n,
                            "phi": phi,
                            "seed": seed,
                            "final": float(values[-1]),
                            "final_step": int(steps[-1]),
                            "best": done[name]["best"],
                            "run_dir": str(experiment_dir / name),
                        }
                    )
    settings = {
        "env_id": experiment["env_id"],
        "dataset_size": experiment["dataset_size"],
        "updates": updates,
        "experiment_updates": experiment["updates"],
        "eval_freq": experiment["eval_freq"],
        "eval_episodes": experiment["eval_episodes"],
        "n": args.n,
        "phi": args.phi,
    }
    reference = reference_rows(args.reference or experiment_dir / "extrapolation.json")
    result = {
        "meta": experiment_meta(experiment_dir, label, load_before, origin, ("h5py", "mujoco")),
        "experiment": str(experiment_dir),
        "wall_clock_s": wall_clock_s(experiment_dir, label),
        **summarize(settings, runs, reference),
    }
    write(result, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
