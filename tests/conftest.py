"""Shared test helpers: run the CLI in a subprocess, tiny custom environments."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """`python -m acrl ARGS` in a subprocess; returns the completed process (text output)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "acrl", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)



def signal_when_ready(proc: subprocess.Popen, ready: Callable[[], bool], signum: int, timeout: float = 120) -> str:
    """Poll `ready()` until true (failing if `proc` exits first), send `signum`, return proc's stderr.

    `proc` must have been started with stderr=PIPE and text=True; it is killed if it is still
    running when this returns or fails.
    """
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not ready():
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        proc.send_signal(signum)
        return proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


class ConstantRewardEnv(gym.Env):
    """One state (observation [0.]), reward 1 every step, never terminates.

    Wrapped in a 5-step TimeLimit it is the textbook case of truncation: the true value of the
    state under gamma 0.99 is 1 / (1 - 0.99) = 100, while treating the time limit as a
    termination would teach 1 + 0.99 + ... + 0.99**4 = 4.90.
    """

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 1.0, False, False, {}


@pytest.fixture
def constant_reward_env():
    """Factory for ConstantRewardEnv truncated every 5 steps."""
    return lambda: gym.wrappers.TimeLimit(ConstantRewardEnv(), max_episode_steps=5)
