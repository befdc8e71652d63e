"""acrl: deep reinforcement learning with PyTorch on Gymnasium: A3C, PPO, DDPG, TD3, SAC, DQN and BCQ.

    from acrl import PPO, evaluate
    agent = PPO(env="CartPole-v1", seed=0).learn(total_steps=50_000)
    print(evaluate(agent, "CartPole-v1", episodes=10)["return_mean"])

The package's layers, each importing only from the ones before it: `acrl.core` (run loop,
config, checkpoints, logging, evaluation, environments, errors), `acrl.parts` (networks,
buffers, returns, normalisation, optimizers, datasets), `acrl.tasks` (registered task
variants), `acrl.algos` (one file per algorithm and the registry), `acrl.offline` (the BCQ
paper's data collection and experiments), then this module and the CLI.

Every algorithm in `acrl.algos.ALGORITHMS` is importable from here with its config (`acrl.SAC`,
`acrl.SACConfig`), loaded on first use, so a new algorithm needs no line in this file.
"""

from importlib import import_module
from typing import Any

from acrl import tasks  # noqa: F401  (registers acrl/AntDirectional-v5)
from acrl.algos import ALGORITHMS, load
from acrl.algos.base import Agent
from acrl.core.errors import InputError, TrainingError
from acrl.core.evaluation import evaluate
from acrl.core.loop import Callback
from acrl.core.version import __version__


def __getattr__(name: str) -> Any:
    """`acrl.PPO`, `acrl.PPOConfig`, ...: an algorithm class of `ALGORITHMS` or its config, imported on first
    use (PEP 562); the registry is read at each call, so it is the one place that names them."""
    for module, cls in ALGORITHMS.values():
        if name in (cls, f"{cls}Config"):
            return getattr(import_module(module), name)
    raise AttributeError(f"module 'acrl' has no attribute {name!r}")


__all__ = [
    *(name for _, cls in ALGORITHMS.values() for name in (cls, f"{cls}Config")),
    "Agent",
    "Callback",
    "InputError",
    "TrainingError",
    "evaluate",
    "load",
    "__version__",
]
