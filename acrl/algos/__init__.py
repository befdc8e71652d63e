"""One file per algorithm family; each reads top to bottom."""

from __future__ import annotations

from importlib import import_module

from acrl.errors import InputError

ALGORITHMS = {"ppo": ("acrl.algos.ppo", "PPO"), "a3c": ("acrl.algos.a3c", "A3C"),
              "ddpg": ("acrl.algos.ddpg", "DDPG"), "td3": ("acrl.algos.ddpg", "TD3"),
              "bcq": ("acrl.algos.bcq", "BCQ")}
"""CLI name -> (module, class). Modules import lazily so `acrl --help` stays fast."""


def get_algorithm(name: str) -> type:
    """The agent class for a CLI algorithm name such as "ppo".

    Raises:
        InputError: an unknown name, listing the known ones.
    """
    if name not in ALGORITHMS:
        raise InputError(f"unknown algorithm {name!r}; choose one of {', '.join(ALGORITHMS)}.")
    module, cls = ALGORITHMS[name]
    return getattr(import_module(module), cls)
