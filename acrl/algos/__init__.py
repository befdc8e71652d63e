"""The algorithms, one file each, and the registry that `acrl.load` and the CLI use.

Adding an algorithm: its file here (a subclass of `acrl.algos.base.Agent`, or of
`acrl.algos.off_policy.OffPolicyAgent` for replay-based ones), its preset file
`acrl/presets/NAME.yaml`, and one line in `ALGORITHMS`.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

from acrl.core.envs import EnvSpec
from acrl.core.errors import InputError

ALGORITHMS = {
    "ppo": ("acrl.algos.ppo", "PPO"),
    "a3c": ("acrl.algos.a3c", "A3C"),
    "ddpg": ("acrl.algos.ddpg", "DDPG"),
    "td3": ("acrl.algos.td3", "TD3"),
    "sac": ("acrl.algos.sac", "SAC"),
    "bcq": ("acrl.algos.bcq", "BCQ"),
    "discrete_bcq": ("acrl.algos.discrete_bcq", "DiscreteBCQ"),
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


def load(path: str | Path, env: EnvSpec | None = None, device: str | None = None):
    """Rebuild whichever agent a checkpoint holds (`Agent.load` of the class its `algo` names).

    Args:
        path: a checkpoint written by `Agent.save` (a run's checkpoints/best.pt or latest.pt).
        env: the environment, needed only for custom envs that are not registered ids.
        device: "auto", "cpu", "cuda" or "cuda:N" (default: the device it was trained on).
    Raises:
        InputError: a missing, corrupt or mismatched checkpoint, or an unknown algorithm.
    """
    from acrl.core.checkpoint import load_checkpoint

    return get_algorithm(load_checkpoint(path)["algo"]).load(path, env, device)
