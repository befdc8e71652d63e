"""Policy evaluation on its own environment, normaliser frozen (docs/correctness.md item 11)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import numpy as np
import torch

from acrl.core.envs import CheckFinite, EnvSpec, env_factory
from acrl.core.errors import InputError


class Predictor(Protocol):
    """Anything with SB3-style `predict(obs, deterministic=...) -> action in env units`; one with a
    true `stateful` attribute (an acrl agent with an LSTM) has `predict(obs, state, episode_start,
    deterministic=...) -> (action, state)` (see `EpisodeActor`)."""

    def predict(self, obs: np.ndarray, deterministic: bool = True) -> np.ndarray:
        """obs (obs_shape) or (B, *obs_shape) -> the action(s) in the environment's units."""


class EpisodeActor:
    """Acts for a `Predictor` in one environment, step after step: `actor(obs)` -> the action in env units.

    For an agent whose policy has a state (`agent.stateful` true) it carries the policy's state from each call to
    the next and starts it fresh (zeros) at the first call after `reset()`, which the caller makes
    at every episode start (evaluation, videos, dataset collection); other agents are called as
    `agent.predict(obs, deterministic=...)`.

    Args:
        agent: the predictor; deterministic: its mode/mean action or a sample.
    """

    def __init__(self, agent: Predictor, deterministic: bool = True):
        self.agent, self.deterministic = agent, deterministic
        self.stateful = bool(getattr(agent, "stateful", False))
        self.state: Any = None

    def reset(self) -> None:
        """The next observation begins an episode: the policy's state starts fresh."""
        self.state = None

    def __call__(self, obs: np.ndarray) -> Any:
        if not self.stateful:
            return self.agent.predict(obs, deterministic=self.deterministic)
        action, self.state = self.agent.predict(obs, self.state, self.state is None, deterministic=self.deterministic)
        return action


def evaluate(
    agent: Predictor,
    env: EnvSpec,
    episodes: int = 10,
    deterministic: bool = True,
    seed: int | None = None,
    gamma: float | None = None,
    first_step: Callable[[np.ndarray, Any], None] | None = None,
) -> dict[str, Any]:
    """Run `episodes` full episodes and report their undiscounted (and discounted) returns.

    `agent.predict` never updates observation statistics, so evaluation leaves a trained
    agent unchanged; a recurrent agent's state starts fresh with each episode (`EpisodeActor`).
    The environment is reset with `seed` once, then continues its own RNG, so the episodes differ
    from each other but repeat for the same seed; torch's generator is seeded from `seed` too, on
    a forked state, so a policy that samples inside `predict` (BCQ's candidates, stochastic
    actions) repeats as well and training's random stream is untouched.

    Args:
        agent: an acrl agent (or any object with `predict`).
        env: an id, env instance or factory; evaluation should use an env apart from training.
        episodes: number of episodes, >= 1.
        deterministic: the policy's mode/mean action (default) or sampled actions.
        seed: seed for the first reset.
        gamma: a discount in [0, 1] to also report each episode's discounted return from its
            first state: the Monte-Carlo value that a critic's estimate at that state is compared
            with (Fujimoto et al. 2019, Sec. 5 and Figure 2). A critic bootstraps through a time
            limit (docs/correctness.md item 1): it learns the value of acting on forever. So an
            episode cut by its time limit (truncated, not terminated) after T steps goes on past
            it, the policy acting, until it terminates or gamma^t < `TAIL_TOLERANCE`
            (`discounted_past_time_limit`); its discounted return is sum_t gamma^t r_t over all
            those steps, while its return and length stay the episode's own, up to the limit.
        first_step: called with each episode's first observation (raw, as the env gave it) and the
            action taken there (env units), in episode order: where a critic's estimate Q(s0, a0) is
            read (`acrl.algos.off_policy.OffPolicyAgent.evaluate`), without keeping the other steps.
    Returns:
        JSON-ready dict: return_mean, return_std, returns (list), lengths (list),
        deterministic; with gamma, discounted_returns (list) and discounted_return_mean; for
        each name in the task's `episode_metrics` (an attribute of a wrapper, see `acrl.tasks`),
        NAME (the value in the last step's info, per episode) and NAME_mean, e.g. y_displacement
        and y_displacement_mean (m) for acrl/AntDirectional-v5.
    Raises:
        InputError: episodes < 1; an unknown environment id (see `acrl.core.envs.env_factory`).
        TrainingError: the environment returned a NaN or infinite observation or reward.
    """
    if isinstance(episodes, bool) or not isinstance(episodes, (int, np.integer)) or episodes < 1:
        raise InputError(f"episodes must be an integer >= 1 (the number of evaluation episodes), got {episodes!r}.")
    instance = CheckFinite(env_factory(env)[0]())  # a NaN observation must not reach predict
    metrics: dict[str, list[float]] = {name: [] for name in episode_metric_names(instance)}
    with seeded_torch(seed):
        returns, discounted, lengths = _episodes(
            agent,
            instance,
            episodes,
            deterministic,
            seed,
            metrics,
            gamma,
            first_step,
        )
    instance.close()
    result = {
        "return_mean": float(np.mean(returns)),
        "return_std": float(np.std(returns)),
        "returns": returns,
        "lengths": lengths,
        "deterministic": deterministic,
    }
    if gamma is not None:
        result.update(discounted_return_mean=float(np.mean(discounted)), discounted_returns=discounted)
    for name, values in metrics.items():
        result[f"{name}_mean"] = float(np.mean(values))
        result[name] = values
    return result


def episode_metric_names(env: Any) -> tuple[str, ...]:
    """The `episode_metrics` a task wrapper of `env` declares (see `acrl.tasks`), or ()."""
    try:
        return tuple(env.get_wrapper_attr("episode_metrics"))
    except AttributeError:
        return ()


@contextlib.contextmanager
def seeded_torch(seed: int | None) -> Iterator[None]:
    """Torch's generators on a forked state, seeded with `seed` (when not None), restored on exit.

    Policies that sample inside predict (BCQ's candidate actions, stochastic actions) draw from
    torch's generator: seeded here, an evaluation or a video repeats for the same seed and
    leaves the training run's random stream untouched.
    """
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        if seed is not None:
            torch.manual_seed(seed)
        yield


TAIL_TOLERANCE = 1e-3
"""Where a discounted return stops looking past a time limit: at the first step t with gamma^t below it.
What is left out is at most TAIL_TOLERANCE * max|r| / (1 - gamma): 0.1 max|r| at gamma 0.99, e.g. 1.6 on
Pendulum-v1 (|r| <= 16.3) against values of -100 to -1,600. A time limit T with gamma^T below it (Hopper's
1,000 steps at 0.99: 4e-5) adds no step."""


def discounted_past_time_limit(actor: EpisodeActor, instance: Any, obs: np.ndarray, gamma: float, t: int) -> float:
    """sum_k gamma^k r_k for k = t, t + 1, ... of the policy acting on from `obs`, the observation at which
    the time limit cut its episode after t steps, until the environment terminates or gamma^k <
    `TAIL_TOLERANCE`: the rest of the infinite-horizon value a critic that bootstraps through time limits
    learns (docs/correctness.md item 1). The time-limit wrapper keeps counting and says truncated at each of
    these steps; only termination ends them. gamma < 1 (gamma = 1: no tail, 0.0)."""
    tail = 0.0
    while gamma < 1 and gamma**t >= TAIL_TOLERANCE:
        obs, reward, terminated, _, _ = instance.step(actor(obs))
        tail += gamma**t * float(reward)
        t += 1
        if terminated:
            break
    return tail


def _episodes(
    agent: Predictor,
    instance: Any,
    episodes: int,
    deterministic: bool,
    seed: int | None,
    metrics: dict[str, list[float]],
    gamma: float | None,
    first_step: Callable[[np.ndarray, Any], None] | None,
) -> tuple[list[float], list[float], list[int]]:
    returns, discounted_returns, lengths = [], [], []
    actor = EpisodeActor(agent, deterministic)
    obs, _ = instance.reset(seed=seed)
    for _ in range(episodes):
        total, discounted, length, done, info = 0.0, 0.0, 0, False, {}
        actor.reset()
        while not done:
            action = actor(obs)
            if first_step is not None and length == 0:
                first_step(obs, action)
            obs, reward, terminated, truncated, info = instance.step(action)
            total += float(reward)
            discounted += (1.0 if gamma is None else gamma**length) * float(reward)
            length += 1
            done = terminated or truncated
        for name, values in metrics.items():
            values.append(float(info[name]))
        if gamma is not None and truncated and not terminated:  # the critic's horizon goes on past the limit
            discounted += discounted_past_time_limit(actor, instance, obs, gamma, length)
        returns.append(total)
        discounted_returns.append(discounted)
        lengths.append(length)
        obs, _ = instance.reset()
    return returns, discounted_returns, lengths
