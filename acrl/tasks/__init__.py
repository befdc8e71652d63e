"""Registered task variants. Importing acrl registers them with Gymnasium.

A task wrapper may declare `episode_metrics`, names of `info` keys that hold a per-episode
quantity at the episode's last step; `acrl.core.evaluation.evaluate` reports each of them
(as a list and its mean) next to the returns, so the task, not the training code, decides
what is measured.
"""

import gymnasium as gym

from acrl.tasks.ant_directional import AntDirectional, make_ant_directional

if "acrl/AntDirectional-v5" not in gym.registry:
    gym.register(id="acrl/AntDirectional-v5", entry_point=make_ant_directional, max_episode_steps=1000)

__all__ = ["AntDirectional", "make_ant_directional"]
