"""acrl: deep reinforcement learning with PyTorch on Gymnasium: A3C, PPO, DDPG/TD3 and BCQ.

    from acrl import PPO, evaluate
    agent = PPO(env="CartPole-v1", seed=0).learn(total_steps=50_000)
    print(evaluate(agent, "CartPole-v1", episodes=10)["return_mean"])
"""

__version__ = "0.1.0"

from acrl import envs  # noqa: E402,F401  (registers acrl/AntDirectional-v5)
from acrl.agent import Agent  # noqa: E402
from acrl.algos.a3c import A3C, A3CConfig  # noqa: E402
from acrl.algos.bcq import BCQ, BCQConfig  # noqa: E402
from acrl.algos.ddpg import DDPG, TD3, DDPGConfig, TD3Config  # noqa: E402
from acrl.algos.ppo import PPO, PPOConfig  # noqa: E402
from acrl.errors import InputError, TrainingError  # noqa: E402
from acrl.evaluation import evaluate  # noqa: E402

load = Agent.load
"""`acrl.load(path)`: rebuild whichever agent a checkpoint holds."""

__all__ = ["A3C", "A3CConfig", "BCQ", "BCQConfig", "DDPG", "DDPGConfig", "TD3", "TD3Config", "PPO", "PPOConfig",
           "Agent", "InputError", "TrainingError", "evaluate", "load", "__version__"]
