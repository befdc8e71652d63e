"""POPGym's partially observable tasks (Morad et al. 2023, "POPGym: Benchmarking Partially Observable
Reinforcement Learning", ICLR; the `popgym` package, acrl's `popgym` extra) as acrl builds them.

POPGym registers its ids without a namespace, `popgym-<Task><Difficulty>-v0`
("popgym-PositionOnlyCartPoleEasy-v0", "popgym-RepeatPreviousEasy-v0",
"popgym-PositionOnlyPendulumEasy-v0"), when `popgym` is imported (about 0.2 s): acrl imports it when
such an id is first built (`register_popgym`), through the "popgym-" family of
`acrl.core.envs.ENV_FAMILIES`. `make_popgym` builds the task and makes a `Discrete(n)` observation
(RepeatPrevious's card, CountRecall's, ...) the one-hot float32 vector (n,) that acrl's encoders
take (`OneHotObservation`); Box observations, rewards and actions are POPGym's own. POPGym's
episodes end as the paper's tasks do: the control tasks by a time limit (truncated: the
PositionOnly CartPole and Pendulum after 200 steps at Easy) or failure (terminated), the
card games when the deck runs out (terminated). Rewards are scaled so that an episode's return
lies in [-1, 1] (Sec. 3 of the paper).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class OneHotObservation(gym.ObservationWrapper):
    """A `Discrete(n, start)` observation k as the one-hot float32 vector (n,) with a 1 at k - start."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        space = env.observation_space
        self.n, self.start = int(space.n), int(space.start)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self.n,), np.float32)

    def observation(self, observation: int) -> np.ndarray:
        """A Discrete observation (an int from `start`) -> its one-hot (n,) float32."""
        one_hot = np.zeros(self.n, dtype=np.float32)
        one_hot[int(observation) - self.start] = 1.0
        return one_hot


def register_popgym() -> None:
    """Register POPGym's ids with Gymnasium (`import popgym`).

    Raises:
        ModuleNotFoundError: the `popgym` package is missing.
    """
    import popgym  # noqa: F401  (registers its ids when imported)


def make_popgym(env_id: str | gym.envs.registration.EnvSpec, render_mode: str | None = None) -> gym.Env:
    """The POPGym task of `env_id` (registered by `register_popgym`), Discrete observations one-hot.

    Args:
        env_id: a POPGym id, "popgym-RepeatPreviousEasy-v0", or its EnvSpec.
        render_mode: None, or "rgb_array" for the tasks that render (the CartPole and Pendulum ones).
    """
    env = gym.make(env_id) if render_mode is None else gym.make(env_id, render_mode=render_mode)
    if isinstance(env.observation_space, gym.spaces.Discrete):
        env = OneHotObservation(env)
    return env


__all__ = ["OneHotObservation", "make_popgym", "register_popgym"]
