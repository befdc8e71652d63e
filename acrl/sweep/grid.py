"""Grids of ordinary acrl runs (`acrl sweep`): algorithm x environments x datasets x `--set` lists x seeds.

A sweep file (YAML; every key but `algo` optional, flags given on the command line win):

    algo: ppo
    env: [CartPole-v1, Acrobot-v1]     # one id or a list
    seeds: [0, 1, 2]
    total_steps: 50000
    preset: null                       # a preset name of acrl/presets/ALGO.yaml
    dataset: [final.h5, imperfect.h5]  # offline algorithms: one file or a list (an axis)
    set:
      learning_rate: [3.0e-4, 1.0e-3]  # a list: an axis of the grid
      n_epochs: 10                     # a single value: the same in every run
      hidden_sizes: [[64, 64], [256, 256]]  # a list-valued field: a list of lists is an axis

Each run is an ordinary run directory `SWEEP_DIR/ENV[-DATASET][-KEY=VALUE...]-sSEED` (config.yaml,
metrics.csv, checkpoints, eval.json), so `acrl evaluate`, `acrl resume` and `acrl plot` work on it;
runs that differ only in the seed are one configuration of the results table
(`acrl.sweep.results`). `SWEEP_DIR/sweep.yaml` records the grid in this file format, so a rerun
of the same command (or `acrl sweep --file SWEEP_DIR/sweep.yaml`) skips finished runs and resumes
the others from their latest checkpoints.
"""

from __future__ import annotations

import hashlib
import itertools
import sys
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from acrl.core.errors import InputError
from acrl.sweep.executor import ClusterOptions, Job, run_jobs

SPEC_KEYS = ("algo", "env", "seeds", "total_steps", "preset", "dataset", "set")


@dataclass
class SweepSpec:
    """What `acrl sweep` runs; see the module docstring for the file format.

    Attributes:
        algo: a name in `acrl.algos.ALGORITHMS`.
        envs: environment ids ([None]: offline algorithms take each dataset's own env_id).
        seeds: master seeds; each configuration runs once per seed.
        values: config field -> value, or -> list of values (an axis of the grid).
        total_steps: each run's budget (None: the preset's or the algorithm's).
        preset: a preset name (None: each environment's `default`, if it has one).
        datasets: offline datasets ([None]: no dataset), an axis of the grid.
    """

    algo: str
    envs: list[str | None] = field(default_factory=lambda: [None])
    seeds: list[int] = field(default_factory=lambda: [0])
    values: dict[str, Any] = field(default_factory=dict)
    total_steps: int | None = None
    preset: str | None = None
    datasets: list[str | None] = field(default_factory=lambda: [None])

    @classmethod
    def from_file(cls, path: str | Path) -> SweepSpec:
        """Read a sweep file (YAML, the module docstring's keys).

        Raises:
            InputError: a missing or unreadable file, an unknown key, a missing `algo`.
        """
        try:
            data = yaml.safe_load(Path(path).read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise InputError(f"cannot read the sweep file {path}: {exc}") from None
        if not isinstance(data, dict) or "algo" not in data:
            raise InputError(f"{path} must be a YAML mapping with at least `algo` (and env, seeds, set, ...).")
        unknown = set(data) - set(SPEC_KEYS)
        if unknown:
            raise InputError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}; a sweep file has "
                             f"{', '.join(SPEC_KEYS)}.")
        return cls(algo=data["algo"], envs=_as_list(data.get("env"), "env"),
                   seeds=_as_list(data.get("seeds", [0]), "seeds"), values=dict(data.get("set") or {}),
                   total_steps=data.get("total_steps"), preset=data.get("preset"),
                   datasets=[str(Path(d).resolve()) if d else None for d in _as_list(data.get("dataset"), "dataset")])

    def to_dict(self) -> dict[str, Any]:
        """The spec in the sweep-file format (what `from_file` reads, what SWEEP_DIR/sweep.yaml holds)."""
        return {"algo": self.algo, "env": self.envs, "seeds": self.seeds, "total_steps": self.total_steps,
                "preset": self.preset, "dataset": self.datasets, "set": self.values}

    def default_dir(self) -> Path:
        """runs/sweep-ALGO-ENV-HASH: the same grid gives the same directory, so rerunning resumes."""
        digest = hashlib.sha256(yaml.safe_dump(self.to_dict(), sort_keys=True).encode()).hexdigest()[:8]
        env = (self.envs[0] or Path(self.datasets[0] or "data").stem).replace("/", "_")
        return Path("runs") / f"sweep-{self.algo}-{env}-{digest}"


def _as_list(value: Any, name: str) -> list[Any]:
    if value is None:
        return [None]
    values = value if isinstance(value, list) else [value]
    if not values:
        raise InputError(f"{name} is an empty list; give at least one value.")
    return values


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: its directory name and how to build it (`acrl.algos.make_config`'s arguments)."""

    name: str
    algo: str
    env_id: str | None
    preset: str | None
    overrides: dict[str, Any]
    flags: dict[str, Any]


def _axes(spec: SweepSpec) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """Split `spec.values` into grid axes (key -> values) and fixed values, by each field's type.

    Raises:
        InputError: an unknown algorithm or key, or an empty list.
    """
    from acrl.algos import get_algorithm
    from acrl.core.config import update_config

    config_class = get_algorithm(spec.algo).config_class
    hints = typing.get_type_hints(config_class)
    update_config(config_class(), {k: None for k in spec.values if k not in hints}, "--set")  # unknown keys
    axes, fixed = {}, {}
    for key, value in spec.values.items():
        if not isinstance(value, list):
            fixed[key] = value
            continue
        if not value:
            raise InputError(f"--set {key}=[]: an empty list gives no runs; give at least one value.")
        annotation = hints[key]
        inner = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
        list_field = any(typing.get_origin(a) is tuple for a in [annotation, *inner])
        if list_field and not all(isinstance(v, list) for v in value):
            fixed[key] = value  # [64, 64] for hidden_sizes is one value; [[64, 64], [256, 256]] an axis
        else:
            axes[key] = value
    return axes, fixed


def _label(value: Any) -> str:
    if isinstance(value, list):
        return "x".join(map(_label, value))
    if isinstance(value, float):
        return f"{value:g}"
    return str(value).replace("/", "_").replace(" ", "")


def configurations(spec: SweepSpec) -> list[tuple[str, str | None, str | None, dict[str, Any]]]:
    """(configuration name, env_id, dataset, overrides) of every point of the grid but the seed.

    Raises:
        InputError: an unknown algorithm or key, or an empty list.
    """
    axes, fixed = _axes(spec)
    points = []
    for env_id, dataset, combo in itertools.product(spec.envs, spec.datasets, itertools.product(*axes.values())):
        parts = [_label(env_id)] if env_id else []
        if len(spec.datasets) > 1 or (dataset and not env_id):
            parts.append(Path(dataset).stem if dataset else "nodata")
        parts += [f"{key}={_label(value)}" for key, value in zip(axes, combo)]
        points.append(("-".join(parts) or spec.algo, env_id, dataset, {**fixed, **dict(zip(axes, combo))}))
    return points


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


def train_run(root: Path, run_dir: Path, callbacks: list[Any], algo: str, env_id: str | None, preset: str | None,
              overrides: dict[str, Any], flags: dict[str, Any]) -> dict[str, Any]:
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


def run_sweep(spec: SweepSpec, out: str | Path | None = None, options: ClusterOptions | None = None,
              progress: bool = True) -> dict[str, Any]:
    """Run every run of `spec` on Ray, then write the sweep's table and figure.

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
    from acrl.sweep.results import summarize

    options = options or ClusterOptions()
    options.validate()
    runs = expand(spec, options)
    out = Path(out) if out is not None else spec.default_dir()
    record = spec.to_dict()
    existing = out / "sweep.yaml"
    if existing.exists() and yaml.safe_load(existing.read_text()) != record:
        raise InputError(f"{out} holds another sweep (its sweep.yaml differs from this grid); rerun that "
                         "sweep's own command to resume it, or choose another --out.")

    def write_record() -> None:  # once the grid is valid and Ray is up
        if progress:
            print(f"sweep of {spec.algo}: {len(runs)} runs -> {out}", file=sys.stderr)
        out.mkdir(parents=True, exist_ok=True)
        existing.write_text(yaml.safe_dump(record, sort_keys=False))

    jobs = [Job(run.name, train_run, {"algo": run.algo, "env_id": run.env_id, "preset": run.preset,
                                      "overrides": run.overrides, "flags": run.flags},
                inputs=(run.flags["dataset"],) if run.flags.get("dataset") else (),
                steps=run.flags["total_steps"] or 0)  # the bar counts steps when the budget is given
            for run in runs]
    run_jobs(jobs, out, options, progress, on_start=write_record)
    return summarize(out)


def sweep_runs(sweep_dir: Path) -> list[tuple[str, str, str]]:
    """(run name, configuration name, environment or dataset) of every run of the sweep in
    `sweep_dir`, in order.

    Raises:
        InputError: no sweep.yaml in `sweep_dir`.
    """
    path = sweep_dir / "sweep.yaml"
    if not path.is_file():
        raise InputError(f"{sweep_dir} is not a sweep directory: it has no sweep.yaml (`acrl sweep` writes one).")
    spec = SweepSpec.from_file(path)
    return [(f"{group}-s{seed}", group, env_id or Path(dataset or spec.algo).stem)
            for group, env_id, dataset, _ in configurations(spec) for seed in spec.seeds]
