"""Small environments for the A3C process tests: the documented hooks that make a worker fail.

- `FailingEnv(fail_after, how)`: a CartPole whose `step` number `fail_after` either raises
  `RuntimeError("FailingEnv: deliberate failure ...")` (how="raise") or sends SIGKILL to its own
  process (how="sigkill"), as the OS's out-of-memory killer would. Only worker processes step
  it (the parent steps environments only to evaluate, which these tests turn off), so the
  failure happens inside a worker.
- Importing this module registers "acrl_test/FailingCartPole-v0" (raises after 50 steps), so a
  subprocess that imports it can train on that id through the CLI's own `main`; under "spawn"
  the workers receive the id's EnvSpec and import this module again by its entry point.

This module lives next to the tests, outside the `acrl` package, on purpose: acrl itself has
no hidden switch that makes it fail.
"""

from __future__ import annotations

import os
import signal

import gymnasium as gym
from gymnasium.envs.classic_control.cartpole import CartPoleEnv


class FailingEnv(CartPoleEnv):
    """CartPole that fails at its `fail_after`-th step, counted over the env's lifetime."""

    def __init__(self, fail_after: int = 50, how: str = "raise"):
        super().__init__()
        self.fail_after, self.how, self.steps = fail_after, how, 0

    def step(self, action):
        self.steps += 1
        if self.steps >= self.fail_after:
            if self.how == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            raise RuntimeError(f"FailingEnv: deliberate failure at step {self.steps} in pid {os.getpid()}")
        return super().step(action)


def make_raising_env() -> gym.Env:
    """Factory (picklable by reference, so it works under "spawn"): raises after 50 steps."""
    return gym.wrappers.TimeLimit(FailingEnv(50, "raise"), 500)


def make_killing_env() -> gym.Env:
    """Factory: the worker process SIGKILLs itself at step 50."""
    return gym.wrappers.TimeLimit(FailingEnv(50, "sigkill"), 500)


if "acrl_test/FailingCartPole-v0" not in gym.registry:
    gym.register(
        id="acrl_test/FailingCartPole-v0",
        entry_point="a3c_test_envs:FailingEnv",
        max_episode_steps=500,
        kwargs={"fail_after": 50, "how": "raise"},
    )
