"""Dataclass configs, YAML presets and validation.

Every algorithm has one config dataclass that extends `RunConfig`; each field carries its
meaning in the class docstring. Presets live in `acrl/presets/<algo>.yaml`, keyed by
environment id (or a glob pattern of ids, such as "ALE/*-v5"; an exact id comes first) and preset
name, each with a `source` that says where its values come from.
Precedence when the CLI builds a config: algorithm defaults < preset < `--set key=value`
< explicit flags (`--seed`, `--total-steps`, ...).
"""

from __future__ import annotations

import dataclasses
import difflib
import fnmatch
import types
import typing
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import yaml

from acrl.core.devices import PRECISIONS
from acrl.core.errors import InputError

PRESET_DIR = Path(__file__).parents[1] / "presets"


@dataclass
class RunConfig:
    """Settings every algorithm shares.

    Attributes:
        env_id: Gymnasium environment id (for BCQ: the environment used for evaluation).
        seed: master seed; environment i of a vector env gets seed + i, evaluation seed + 10_000.
        total_steps: training budget in environment steps (for BCQ: gradient updates).
        n_envs: environments stepped together through Gymnasium's vector API.
        eval_freq: evaluate every this many steps (0 disables periodic evaluation).
        eval_episodes: episodes per evaluation, deterministic actions.
        checkpoint_freq: write `checkpoints/latest.pt` every this many steps.
        torch_threads: `torch.set_num_threads` for the training process.
        device: "auto" (CUDA when available, else the CPU), "cpu", "cuda" or "cuda:N"; the
            agent records the device it resolved to ("cpu", "cuda:0"), so config.yaml says
            what was used (`acrl.core.devices`).
        precision: "fp32" (float32 throughout), "bf16" (the networks' forward passes under bfloat16
            autocast, with parameters, optimizer state, losses, returns, advantages, targets and
            checkpoints float32; refused on hardware without bfloat16 arithmetic:
            `acrl.core.devices.precision_context` and `check_precision`) or "auto" (bf16 where the
            algorithm measured it faster with the same learning, for image observations on a CPU with
            bfloat16 instructions, else fp32: `acrl.core.devices.auto_precision`); the agent records the
            one used.
        video_freq: record a video clip of the policy at every this many evaluations, into
            run_dir/videos/ and TensorBoard (0: never; `acrl.core.video`).
        video_length: steps of each such clip at most (one episode, cut there; the clip has a
            frame more, the reset's; at 20 fps, 200 steps of a MuJoCo task are 10 s of video
            and about 25 s of software rendering).
        target_return: end the run early (normally, with its final evaluation) once an
            evaluation's mean return reaches this (None: train for the whole budget).
        preset: name of the preset the values came from, recorded for `config.yaml`.
        channels: which axis of an image observation holds its channels: "last" (H, W, C), "first"
            (C, H, W) or "auto" (the environment's declared layout, else the shape's where it is unambiguous;
            `acrl.parts.observations.image_layout`); the agent records the one used. Vectors ignore it.
        sticky_actions: Atari (ALE ids) only: the probability that the emulator repeats the previous action
            instead of the agent's, at each frame (Machado et al. 2018, Sec. 5.2), the same in training and
            evaluation; None: the id's registration (ALE/Pong-v5 0.25, PongNoFrameskip-v4 0). The agent
            records the one used (`acrl.core.envs.with_sticky_actions`); setting it for another
            environment is an error.
    """

    env_id: str = "CartPole-v1"
    seed: int = 0
    total_steps: int = 100_000
    n_envs: int = 1
    eval_freq: int = 10_000
    eval_episodes: int = 10
    checkpoint_freq: int = 50_000
    torch_threads: int = 1
    device: str = "auto"
    precision: str = "auto"
    video_freq: int = 0
    video_length: int = 200
    target_return: float | None = None
    preset: str = ""
    channels: str = "auto"
    sticky_actions: float | None = None

    retired_fields: ClassVar[dict[str, str]] = {}
    """Fields an earlier acrl wrote into configs of this class (config.yaml, checkpoints) and this
    one no longer has, each with why: `update_config` drops them with a warning, so old runs load."""

    def validate(self) -> None:
        """Raise `InputError` for a value no run could use; subclasses extend this."""
        positive(self, "total_steps", "n_envs", "eval_episodes", "checkpoint_freq", "torch_threads", "video_length")
        if self.eval_freq < 0:
            raise InputError(f"eval_freq must be >= 0 (0 disables evaluation), got {self.eval_freq}.")
        if self.precision not in ("auto", *PRECISIONS):
            raise InputError(
                f"precision must be auto or one of {', '.join(PRECISIONS)} (float32, or bfloat16 autocast), "
                f"got {self.precision!r}."
            )
        if self.seed < 0:
            raise InputError(f"seed must be >= 0 (Gymnasium and numpy take non-negative seeds), got {self.seed}.")
        if self.sticky_actions is not None and not 0.0 <= self.sticky_actions <= 1.0:
            raise InputError(
                f"sticky_actions is a probability in [0, 1] (ALE v5's 0.25, 0 for none), got {self.sticky_actions}."
            )
        if self.video_freq < 0:
            raise InputError(f"video_freq must be >= 0 (0: no videos), got {self.video_freq}.")
        if self.video_freq and not self.eval_freq:
            raise InputError(
                f"video_freq={self.video_freq} records at every Nth evaluation, so it needs "
                "eval_freq > 0; got eval_freq=0."
            )

    def to_dict(self) -> dict[str, Any]:
        """Plain-data view (lists instead of tuples) for YAML and checkpoints."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}


def positive(config: Any, *names: str) -> None:
    """Raise `InputError` unless every named field of `config` is > 0."""
    for name in names:
        value = getattr(config, name)
        if value is not None and not value > 0:
            raise InputError(f"{name} must be > 0, got {value!r}.")


def layer_widths(config: Any, *names: str) -> None:
    """Raise `InputError` unless every named field of `config` that is not None is a non-empty
    sequence of positive layer widths (hidden sizes such as (64, 64))."""
    for name in names:
        sizes = getattr(config, name)
        if sizes is not None and (not sizes or any(h <= 0 for h in sizes)):
            raise InputError(
                f"{name} must be a non-empty list of positive layer widths such as [64, 64], got {list(sizes)}."
            )


def in_unit_interval(config: Any, *names: str, closed_low: bool = True) -> None:
    """Raise `InputError` unless every named field lies in [0, 1] (or (0, 1] if not closed_low)."""
    for name in names:
        value = getattr(config, name)
        low_ok = value >= 0 if closed_low else value > 0
        if not (low_ok and value <= 1):
            interval = "[0, 1]" if closed_low else "(0, 1]"
            raise InputError(f"{name} must lie in {interval}, got {value!r}.")


def _coerce(name: str, value: Any, annotation: Any) -> Any:
    """Convert a YAML/CLI value to the field's declared type or raise `InputError`."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(name, value, inner[0])
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise InputError(f"{name} must be a list such as [64, 64], got {value!r}.")
        return tuple(_coerce(name, v, args[0]) for v in value)
    if annotation is bool:
        if not isinstance(value, bool):
            raise InputError(f"{name} must be true or false, got {value!r}.")
        return value
    if annotation is int:
        if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, float) and value.is_integer())):
            raise InputError(f"{name} must be an integer, got {value!r}.")
        return int(value)
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f"{name} must be a number, got {value!r}.")
        return float(value)
    if annotation is str:
        if not isinstance(value, str):
            raise InputError(f"{name} must be a string, got {value!r}.")
        return value
    return value


RECURRENT_FIELDS = ("lstm_hidden_size", "seq_len")
"""The config fields of a recurrent policy (PPO's `lstm_hidden_size` and `seq_len`; A3C and IMPALA have the
first, their training sequences being their rollouts and unrolls)."""


def update_config(config: RunConfig, values: dict[str, Any], origin: str) -> RunConfig:
    """Return a copy of `config` with `values` applied, type-checked field by field.

    Args:
        config: the config to start from.
        values: field name -> new value (YAML types: int, float, bool, str, list, None).
        origin: where the values come from, used in error messages (e.g. "--set", "preset").
    A field in the config class's `retired_fields` is dropped with a warning that says why.

    Raises:
        InputError: an unknown field (with the closest names; a recurrent policy's field for an algorithm
            without a recurrent policy says so) or a value of the wrong type.
    """
    hints = typing.get_type_hints(type(config))
    fields = {field.name: hints[field.name] for field in dataclasses.fields(config)}
    changes = {}
    for key, value in values.items():
        if key in config.retired_fields:
            warnings.warn(
                f"{origin}: {key} is no longer a setting of {type(config).__name__} "
                f"({config.retired_fields[key]}); ignored.",
                stacklevel=2,
            )
            continue
        if key not in fields and key in RECURRENT_FIELDS and "lstm_hidden_size" not in fields:
            raise InputError(
                f"{origin}: {key} sets a recurrent (LSTM) policy, which {type(config).__name__} does not have; "
                "choose an algorithm whose settings include lstm_hidden_size (PPO's, A3C's and IMPALA's do)."
            )
        if key not in fields:
            close = difflib.get_close_matches(key, fields, n=3)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise InputError(
                f"{origin}: unknown hyperparameter {key!r} for {type(config).__name__}.{hint} "
                f"Known keys: {', '.join(sorted(fields))}."
            )
        changes[key] = _coerce(key, value, fields[key])
    return dataclasses.replace(config, **changes)


def parse_set_options(options: list[str]) -> dict[str, Any]:
    """Parse CLI `--set key=value` strings; values are read as YAML (`0.2`, `3e-4`, `true`, `[64, 64]`).

    Raises:
        InputError: an option without `=`.
    """
    values = {}
    for option in options:
        key, sep, raw = option.partition("=")
        if not sep or not key:
            raise InputError(f"--set expects key=value (for example --set clip_range=0.1), got {option!r}.")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError:
            raise InputError(
                f"--set {option!r}: the value is not valid YAML; quote strings and write lists as [64, 64]."
            ) from None
        values[key.strip()] = _numbers(value)
    return values


def _numbers(value: Any) -> Any:
    """YAML 1.1 reads 3e-4 (no dot) as a string; read it as Python does, inside lists too."""
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    return value


def load_presets(algo: str) -> dict[str, dict[str, dict[str, Any]]]:
    """Read `acrl/presets/<algo>.yaml`: env id -> preset name -> values (with `source`).

    Returns an empty mapping when the algorithm has no preset file.
    """
    path = PRESET_DIR / f"{algo}.yaml"
    if not path.exists():
        return {}
    with path.open() as f:
        return yaml.safe_load(f) or {}


def preset_values(algo: str, env_id: str, preset: str | None) -> tuple[dict[str, Any], str]:
    """Values of the named preset for (algo, env_id), or of `default` when `preset` is None.

    The presets of an environment are those of its exact id when the file has it, else those of
    the first key that is a glob pattern matching the id (`fnmatch.fnmatchcase`: "ALE/*-v5" for
    every Atari game), in the file's order.

    Returns:
        (values without the `source` key, the preset's name or "" when none applies).
    Raises:
        InputError: a named preset that does not exist for this algorithm and environment.
    """
    by_env = load_presets(algo)
    matching = (presets for key, presets in by_env.items() if fnmatch.fnmatchcase(env_id, key))
    available = by_env[env_id] if env_id in by_env else next(matching, {})
    if preset is None:
        if "default" not in available:
            return {}, ""
        preset = "default"
    if preset not in available:
        names = [f"{env}:{name}" for env, presets in by_env.items() for name in presets]
        raise InputError(
            f"no preset {preset!r} for {algo} on {env_id}. Available presets (env:name): {', '.join(names) or 'none'}."
        )
    values = {k: v for k, v in available[preset].items() if k != "source"}
    return values, preset
