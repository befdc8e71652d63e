"""What `acrl sweep` runs: a grid of algorithm x environments x datasets x `--set` lists x seeds.

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

`SweepSpec` holds it (`from_file`, or `from_command` for a file and the command line's flags);
`configurations` names each point of the grid but the seed, the name of its runs' directories
`ENV[-DATASET][-KEY=VALUE...]-sSEED` (`acrl.sweep.grid` trains them, `acrl.sweep.results`
summarises them by configuration).
"""

from __future__ import annotations

import hashlib
import itertools
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from acrl.core.errors import InputError

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
            raise InputError(
                f"{path}: unknown key(s) {', '.join(sorted(unknown))}; a sweep file has {', '.join(SPEC_KEYS)}."
            )
        return cls(
            algo=data["algo"],
            envs=_as_list(data.get("env"), "env"),
            seeds=_as_list(data.get("seeds", [0]), "seeds"),
            values=dict(data.get("set") or {}),
            total_steps=data.get("total_steps"),
            preset=data.get("preset"),
            datasets=[str(Path(d).resolve()) if d else None for d in _as_list(data.get("dataset"), "dataset")],
        )

    @classmethod
    def from_command(
        cls,
        file: str | None,
        algo: str | None,
        envs: list[str],
        seeds: list[int],
        datasets: list[str],
        values: dict[str, Any],
        total_steps: int | None,
        preset: str | None,
    ) -> SweepSpec:
        """The sweep a command line describes (`acrl sweep`): the sweep file's spec, if given, with
        every flag given replacing the file's key and `values` (`--set`) added to its `set:`.

        Args:
            file: a sweep file, or None (then `algo` is required).
            algo, total_steps, preset: None keeps the file's.
            envs, seeds, datasets: [] keeps the file's; dataset paths are made absolute.
            values: config field -> value or list of values (an axis), from `--set`.
        Raises:
            InputError: neither a file nor an algorithm; an unreadable or malformed file (`from_file`).
        """
        if file is None and algo is None:
            raise InputError(
                "acrl sweep needs ALGO or --file SWEEP.yaml (for example: acrl sweep ppo --env "
                "CartPole-v1 --seeds 0 1 2 --set 'learning_rate=[3e-4, 1e-3]')."
            )
        spec = cls.from_file(file) if file else cls(algo)
        spec.algo = algo if algo is not None else spec.algo
        spec.envs = list(envs) if envs else spec.envs
        spec.seeds = list(seeds) if seeds else spec.seeds
        spec.datasets = [str(Path(d).resolve()) for d in datasets] if datasets else spec.datasets
        spec.values.update(values)
        spec.total_steps = total_steps if total_steps is not None else spec.total_steps
        spec.preset = preset if preset is not None else spec.preset
        return spec

    def to_dict(self) -> dict[str, Any]:
        """The spec in the sweep-file format (what `from_file` reads, what SWEEP_DIR/sweep.yaml holds)."""
        return {
            "algo": self.algo,
            "env": self.envs,
            "seeds": self.seeds,
            "total_steps": self.total_steps,
            "preset": self.preset,
            "dataset": self.datasets,
            "set": self.values,
        }

    def default_dir(self) -> Path:
        """runs/sweep-ALGO-ENV-HASH: the same grid gives the same directory, so rerunning resumes."""
        digest = hashlib.sha256(yaml.safe_dump(self.to_dict(), sort_keys=True).encode()).hexdigest()[:8]
        env = "+".join([e for e in self.envs if e] or [Path(d or "data").stem for d in self.datasets]).replace("/", "_")
        return Path("runs") / f"sweep-{self.algo}-{env}-{digest}"


def _as_list(value: Any, name: str) -> list[Any]:
    if value is None:
        return [None]
    values = value if isinstance(value, list) else [value]
    if not values:
        raise InputError(f"{name} is an empty list; give at least one value.")
    return values


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


def sweep_runs(sweep_dir: Path) -> list[tuple[str, str, str | None, str]]:
    """(run name, configuration name, environment id or None (the run's dataset's own), the
    configuration's name without the environment) of every run of the sweep in `sweep_dir`, in order.

    Raises:
        InputError: no sweep.yaml in `sweep_dir`.
    """
    path = sweep_dir / "sweep.yaml"
    if not path.is_file():
        raise InputError(f"{sweep_dir} is not a sweep directory: it has no sweep.yaml (`acrl sweep` writes one).")
    spec = SweepSpec.from_file(path)
    return [
        (f"{group}-s{seed}", group, env_id, group.removeprefix(f"{_label(env_id)}-") if env_id else group)
        for group, env_id, _, _ in configurations(spec)
        for seed in spec.seeds
    ]
