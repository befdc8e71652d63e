"""Ant walking along a direction: the design documents' +y task (PPO on Ant with a shaped reward)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class AntDirectional(gym.Wrapper):
    """Ant-v5 rewarded for walking along a direction in the ground plane (+y by default).

    reward = 20 * d . (p_t - p_{t-1}) + reward_survive + reward_ctrl + reward_contact, with p the
    torso's (x, y) position from the step's info and d a unit vector. With Ant-v5's dt of
    0.05 s the first term is the velocity along d in m/s. p_{t-1} on the first step comes from
    the reset info, so no transition is dropped. `info["y_displacement"]` (m) is the episode's
    displacement along d so far; it is the task's one `episode_metrics` entry, which
    `acrl.core.evaluation.evaluate` reports per episode.
    Source: acrl's design documents (PPO on Ant with a +y reward).

    Args:
        env: an Ant-v5 environment.
        direction: (dx, dy), normalised to unit length; (0, 1) is +y.
    """

    episode_metrics = ("y_displacement",)
    """info keys that `evaluate` reports per episode (see `acrl.tasks`)."""

    def __init__(self, env: gym.Env, direction: tuple[float, float] = (0.0, 1.0)):
        super().__init__(env)
        d = np.asarray(direction, dtype=np.float64)
        self.direction = d / np.linalg.norm(d)
        self._start = self._previous = np.zeros(2)

    def reset(self, **kwargs: Any):
        """Reset the Ant and the reference position; info gains y_displacement 0."""
        obs, info = self.env.reset(**kwargs)
        self._start = self._previous = np.array([info["x_position"], info["y_position"]])
        info["y_displacement"] = 0.0
        return obs, info

    def step(self, action):
        """Step the Ant; reward = 20 * the step's progress along `direction` (m) + reward_survive + reward_ctrl +
        reward_contact (from info); info gains y_displacement, the progress along `direction` since reset."""
        obs, _, terminated, truncated, info = self.env.step(action)
        position = np.array([info["x_position"], info["y_position"]])
        progress = float(self.direction @ (position - self._previous))
        self._previous = position
        reward = 20.0 * progress + info["reward_survive"] + info["reward_ctrl"] + info["reward_contact"]
        info["y_displacement"] = float(self.direction @ (position - self._start))
        return obs, float(reward), terminated, truncated, info


def make_ant_directional(direction: tuple[float, float] = (0.0, 1.0), **kwargs: Any) -> gym.Env:
    """The entry point of `acrl/AntDirectional-v5`: `AntDirectional(AntEnv(**kwargs), direction)`."""
    from gymnasium.envs.mujoco.ant_v5 import AntEnv  # MuJoCo loads only when the task is made

    return AntDirectional(AntEnv(**kwargs), direction)
