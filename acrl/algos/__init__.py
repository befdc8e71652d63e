"""The algorithms, one file each, and the registry that `acrl.load` and the CLI use.

Adding an algorithm is its file here, one line in `ALGORITHMS` and its preset file
`acrl/presets/NAME.yaml` (each preset with its `source`), and nothing else: an on-policy one subclasses
`acrl.algos.base.Agent` on `acrl.parts.actor_critic.ActorCritic`, an off-policy one
`acrl.algos.off_policy.OffPolicyAgent`, an offline one `ReplayAgent` (or `OffPolicyAgent` with
`requires_data`). Then `acrl.CLASS`, `acrl train NAME`, `acrl resume` and `acrl.load` take it, and an
offline one joins an experiment as one `acrl.offline.spec.Learner` line of its spec
(tests/unit/test_adding_an_algorithm.py adds one of each kind so).
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import Any

from acrl.core.config import RunConfig
from acrl.core.envs import EnvSpec
from acrl.core.errors import InputError

ALGORITHMS = {
    "ppo": ("acrl.algos.ppo", "PPO"),
    "a3c": ("acrl.algos.a3c", "A3C"),
    "impala": ("acrl.algos.impala", "IMPALA"),
    "appo": ("acrl.algos.appo", "APPO"),
    "ddpg": ("acrl.algos.ddpg", "DDPG"),
    "td3": ("acrl.algos.td3", "TD3"),
    "sac": ("acrl.algos.sac", "SAC"),
    "dqn": ("acrl.algos.dqn", "DQN"),
    "bcq": ("acrl.algos.bcq", "BCQ"),
    "discrete_bcq": ("acrl.algos.discrete_bcq", "DiscreteBCQ"),
    "bc": ("acrl.algos.bc", "BC"),
    "discrete_bc": ("acrl.algos.discrete_bc", "DiscreteBC"),
    "vae_bc": ("acrl.algos.vae_bc", "VAEBC"),
    "td3_bc": ("acrl.algos.td3_bc", "TD3BC"),
    "iql": ("acrl.algos.iql", "IQL"),
    "cql": ("acrl.algos.cql", "CQL"),
    "discrete_cql": ("acrl.algos.discrete_cql", "DiscreteCQL"),
}
"""CLI name (also the checkpoint's `algo`) -> (module, class). Modules import lazily so `acrl --help` stays fast."""


def get_algorithm(name: str) -> type:
    """The agent class for a CLI algorithm name such as "ppo".

    Raises:
        InputError: an unknown name, listing the known ones.
    """
    if name not in ALGORITHMS:
        raise InputError(f"unknown algorithm {name!r}; choose one of {', '.join(ALGORITHMS)}.")
    module, cls = ALGORITHMS[name]
    return getattr(import_module(module), cls)


def make_config(
    algo: str,
    env_id: str | None = None,
    preset: str | None = None,
    overrides: dict[str, Any] | None = None,
    origin: str = "--set",
    **flags: Any,
) -> tuple[type, RunConfig]:
    """The agent class and full config of a run, as `acrl train`, `acrl sweep` and `Agent.from_preset` build them.

    Precedence: the algorithm's defaults < the preset (`preset`, else the environment's
    `default` if it has one; an environment's presets are those of its exact id in
    acrl/presets/ALGO.yaml, else of the first glob pattern there that matches it, such as
    "ALE/*-v5": `acrl.core.config.preset_values`) < `overrides` (what `--set` gives) < `flags` (explicit options
    such as seed, total_steps, n_envs, workers, actors, address, dataset, device; None values are ignored).
    The config is validated; the environment and action space are checked when the agent is
    built from it (`cls(env_id, config=config)`).

    Args:
        algo: a name in `ALGORITHMS`.
        env_id: the environment id (offline algorithms: default the dataset's `env_id`).
        preset: a preset name in acrl/presets/ALGO.yaml for this environment.
        overrides: config field -> value (YAML types).
        origin: where `overrides` come from, named in error messages (e.g. "--bcq-set").
        **flags: config fields set last.
    Raises:
        InputError: an unknown algorithm, preset or key, a bad value, no env for an online
            algorithm or no dataset for an offline one, a flag the algorithm has no field for.
    """
    from acrl.core.config import preset_values, update_config

    cls = get_algorithm(algo)
    flags = {k: v for k, v in flags.items() if v is not None}
    dataset = flags.get("dataset")
    if env_id is None and dataset is None:
        if getattr(cls, "requires_data", False):
            what = (
                f"{algo} learns from a fixed dataset: pass {{}} (an HDF5 file with the D4RL keys, e.g. from "
                "`acrl collect`); {} is then optional (default: the dataset's env_id) and names the environment "
                "to evaluate on."
            )
            raise InputError(what.format("dataset=FILE", "env_id"), cli=what.format("--dataset FILE", "--env ENV_ID"))
        from gymnasium.spaces import Discrete

        example = "CartPole-v1" if Discrete in cls.action_kinds else "Pendulum-v1"
        raise InputError(
            f"env_id is required for {algo} (for example env_id={example!r}).",
            cli=f"--env ENV_ID is required for {algo} (for example --env {example}).",
        )
    config = cls.config_class()
    for flag in ("dataset", "workers", "actors", "address", "n_envs"):
        if flag in flags and not hasattr(config, flag):
            raise InputError(
                f"{flag} does not apply to {algo}: its config has no {flag} field.",
                cli=f"--{flag.replace('_', '-')} does not apply to {algo}: it has no {flag} "
                f"setting (see `acrl train --help` for which algorithms take it).",
            )
    if env_id is None:  # the preset of the dataset's own environment
        from acrl.parts.datasets import dataset_env_id

        env_id = dataset_env_id(dataset)
    values, preset = preset_values(algo, env_id, preset)
    config = update_config(config, values, f"preset {preset!r}")
    config = update_config(config, overrides or {}, origin)
    config = update_config(config, {"env_id": env_id, "preset": preset, **flags}, "command line")
    try:
        config.validate()
    except InputError as error:
        if origin == "--set" or not overrides:
            raise
        # an experiment configures several agents: say whose settings were refused
        cli = error.cli or str(error)
        raise InputError(f"{algo}'s settings: {error}", cli=f"{origin} ({algo}): {cli}") from None
    return cls, config


def load(path: str | Path, env: EnvSpec | None = None, device: str | None = None, precision: str | None = None):
    """Rebuild whichever agent a checkpoint holds (`Agent.load` of the class its `algo` names).

    Args:
        path: a checkpoint written by `Agent.save` (a run's checkpoints/best.pt or latest.pt).
        env: the environment, needed only for custom envs that are not registered ids.
        device: "auto", "cpu", "cuda" or "cuda:N" (default: the device it was trained on).
        precision: "fp32" or "bf16" (default: the run's; "fp32" reads a bf16 run on hardware without bfloat16).
    Raises:
        InputError: a missing, corrupt or mismatched checkpoint, an unknown algorithm, or a precision this
            hardware cannot run (`acrl.core.devices.check_precision`).
    """
    from acrl.core.checkpoint import load_checkpoint

    return get_algorithm(load_checkpoint(path)["algo"]).load(path, env, device, precision)
