"""acrl: deep reinforcement learning with PyTorch on Gymnasium: A3C, PPO, DDPG, TD3, SAC and BCQ.

    from acrl import PPO, evaluate
    agent = PPO(env="CartPole-v1", seed=0).learn(total_steps=50_000)
    print(evaluate(agent, "CartPole-v1", episodes=10)["return_mean"])

The package's layers, each importing only from the ones before it: `acrl.core` (run loop,
config, checkpoints, logging, evaluation, environments, errors), `acrl.parts` (networks,
buffers, returns, normalisation, optimizers, datasets), `acrl.tasks` (registered task
variants), `acrl.algos` (one file per algorithm and the registry), `acrl.offline` (the BCQ
paper's data collection and experiments), then this module and the CLI.
"""

from acrl import tasks  # noqa: F401  (registers acrl/AntDirectional-v5)
from acrl.algos import load
from acrl.algos.a3c import A3C, A3CConfig
from acrl.algos.base import Agent
from acrl.algos.bcq import BCQ, BCQConfig
from acrl.algos.ddpg import DDPG, DDPGConfig
from acrl.algos.discrete_bcq import DiscreteBCQ, DiscreteBCQConfig
from acrl.algos.ppo import PPO, PPOConfig
from acrl.algos.sac import SAC, SACConfig
from acrl.algos.td3 import TD3, TD3Config
from acrl.core.errors import InputError, TrainingError
from acrl.core.evaluation import evaluate
from acrl.core.loop import Callback
from acrl.core.version import __version__

__all__ = ["A3C", "A3CConfig", "BCQ", "BCQConfig", "DDPG", "DDPGConfig", "DiscreteBCQ", "DiscreteBCQConfig",
           "PPO", "PPOConfig", "SAC", "SACConfig", "TD3", "TD3Config", "Agent", "Callback", "InputError",
           "TrainingError", "evaluate", "load", "__version__"]
