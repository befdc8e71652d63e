"""Grids of ordinary acrl runs (`acrl sweep`): algorithm x environments x datasets x `--set` lists x seeds.

What a sweep runs is an `acrl.sweep.spec.SweepSpec` (a sweep file, or the command line's flags);
this module builds and validates every run of it (`expand`) and trains them as jobs (`run_sweep`).
Each run is an ordinary run directory `SWEEP_DIR/ENV[-DATASET][-KEY=VALUE...]-sSEED` (config.yaml,
metrics.csv, checkpoints, eval.json), so `acrl evaluate`, `acrl resume` and `acrl plot` work on it;
runs that differ only in the seed are one configuration of the results table
(`acrl.sweep.results`). `SWEEP_DIR/sweep.yaml` records the grid in the sweep-file format, so a
rerun of the same command (or `acrl sweep --file SWEEP_DIR/sweep.yaml`) skips finished runs and
resumes the others from their latest checkpoints.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from acrl.core.errors import InputError
from acrl.core.files import write_text_atomic
from acrl.sweep.executor import run_jobs
from acrl.sweep.jobs import ClusterOptions, Job
from acrl.sweep.results import summarize
from acrl.sweep.spec import SweepSpec, configurations


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: its directory name and how to build it (`acrl.algos.make_config`'s arguments)."""

    name: str
    algo: str
    env_id: str | None
    preset: str | None
    overrides: dict[str, Any]
    flags: dict[str, Any]


def expand(spec: SweepSpec, options: ClusterOptions) -> list[RunSpec]:
    """Every run of the grid, in a stable order, each config built and validated.

    Each run's torch threads (and A3C's workers) follow `options.cpus_per_job`, and its device
    is "cuda" when `options.gpus_per_job` > 0, else the CPU, unless the grid sets them.

    Raises:
        InputError: an unknown algorithm, environment, preset or key, a bad value, an empty
            list, a duplicate seed, an action space or dataset the algorithm cannot take.
    """
    from acrl.algos import get_algorithm, make_config

    if len(set(spec.seeds)) != len(spec.seeds) or not all(isinstance(s, int) for s in spec.seeds):
        raise InputError(f"seeds must be distinct integers, got {spec.seeds}.")
    fields = get_algorithm(spec.algo).config_class()
    runs, checked = [], set()
    for group, env_id, dataset, overrides in configurations(spec):
        for seed in spec.seeds:
            flags = {"seed": seed, "total_steps": spec.total_steps, "dataset": dataset}
            flags.update(options.run_settings(fields, overrides))
            cls, config = make_config(spec.algo, env_id, spec.preset, overrides, **flags)
            if (config.env_id, dataset) not in checked:  # the environment, its spaces and the dataset
                cls(config.env_id, config=config).before_learning()
                checked.add((config.env_id, dataset))
            runs.append(RunSpec(f"{group}-s{seed}", spec.algo, env_id, spec.preset, overrides, flags))
    return runs


def train_run(
    root: Path,
    run_dir: Path,
    callbacks: list[Any],
    algo: str,
    env_id: str | None,
    preset: str | None,
    overrides: dict[str, Any],
    flags: dict[str, Any],
) -> dict[str, Any]:
    """A sweep's job: train one run into `run_dir`, or resume it from checkpoints/latest.pt.

    Returns:
        {"steps": the run's final step, "best": its best evaluation's mean return}.
    Raises:
        InputError, TrainingError: as `Agent.learn`.
    """
    from acrl.algos import load, make_config

    latest = run_dir / "checkpoints" / "latest.pt"
    if latest.exists():
        agent = load(latest)
        if agent.num_steps >= agent.total_steps and (run_dir / "eval.json").exists():
            return {"steps": agent.num_steps, "best": agent.best_eval["return_mean"]}  # finished before a crash
    else:
        cls, config = make_config(algo, env_id, preset, overrides, **flags)
        agent = cls(config.env_id, config=config)
    agent.learn(run_dir=run_dir, progress=False, callbacks=callbacks)
    return {"steps": agent.num_steps, "best": agent.best_eval["return_mean"]}


def run_sweep(
    spec: SweepSpec, out: str | Path | None = None, options: ClusterOptions | None = None, progress: bool = True
) -> dict[str, Any]:
    """Run every run of `spec` on the executor `options` names, then write the sweep's table and figure.

    Args:
        spec: the grid.
        out: the sweep directory (default `spec.default_dir()`); a rerun with the same spec
            skips finished runs and resumes the rest.
        options: where and how runs execute (default: a local Ray instance, one run per core).
        progress: a progress bar over runs.
    Returns:
        the results summary (`acrl.sweep.results.summarize`).
    Raises:
        InputError: a bad grid (see `expand`), a directory that holds another sweep, Ray
            missing or unreachable, resources no node has. Raised before any run starts.
        TrainingError: runs that failed (the others complete first).
        KeyboardInterrupt: Ctrl-C, once every running run has written latest.pt.
    """
    options = options or ClusterOptions()
    options.validate()
    runs = expand(spec, options)
    out = Path(out) if out is not None else spec.default_dir()
    record = spec.to_dict()
    existing = out / "sweep.yaml"
    if existing.exists() and yaml.safe_load(existing.read_text()) != record:
        raise InputError(
            f"{out} holds another sweep (its sweep.yaml differs from this grid); rerun that "
            "sweep's own command to resume it, or choose another --out."
        )

    def write_record() -> None:  # once the grid is valid and Ray is up
        print(f"sweep of {spec.algo}: {len(runs)} runs -> {out}", file=sys.stderr)
        write_text_atomic(existing, yaml.safe_dump(record, sort_keys=False))

    jobs = [
        Job(
            run.name,
            train_run,
            {
                "algo": run.algo,
                "env_id": run.env_id,
                "preset": run.preset,
                "overrides": run.overrides,
                "flags": run.flags,
            },
            inputs=(run.flags["dataset"],) if run.flags.get("dataset") else (),
            steps=run.flags["total_steps"] or 0,
        )  # the bar counts steps when the budget is given
        for run in runs
    ]
    run_jobs(jobs, out, options, progress, on_start=write_record)
    return summarize(out)
