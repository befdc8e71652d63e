"""Where an off-policy agent's transitions come from: its data source, one object chosen once when the
agent is built (`acrl.algos.off_policy.ReplayAgent`), which the agent calls without asking what it is.

- `EnvSource`: an environment that the agent collects from with its exploration policy into a replay
  buffer, the gradient updates interleaved as the steps owe them (utd_ratio, train_freq); `num_steps`
  counts environment steps.
- `DatasetSource`: fixed data, an offline dataset loaded once or a replay buffer that another agent
  fills; `num_steps` counts gradient updates.

Both have one interface (`DataSource`): `step_unit` ("step" or "update"), `episode_stats` (the training
episodes' `EpisodeStats`; None from fixed data), `buffer` (the replay buffer,
None while a dataset is not loaded), `replay(agent)` (the buffer, loading a dataset on the first call),
`prepare(agent)` (checks before learning), `iteration(agent, max_steps)` (one iteration's metrics) and
`state_dict(agent, replay_buffer)` / `load_state_dict(agent, state)` (what a checkpoint keeps of it).

The agent they serve (`ReplayAgent`, `OffPolicyAgent`) is passed to each call and read for: config,
env, observation_space, action_space, action_adapter, device, num_steps (advanced here), total_steps,
`sampled_update(totals)` (one gradient update), `prepare_dataset(data)` (the algorithm's preprocessing of a
dataset), and, to collect, `random_actions(n)`, `explore(obs)`, `check_exploration()` and
`exploration_metrics()`. The observation space decides the replay buffer
(`acrl.parts.buffers.make_replay_buffer`, `replay_buffer_from`), and buffers hold actions in the action
space's policy units (`acrl.core.envs.ActionAdapter.to_buffer`), so any agent on that space can read them.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from acrl.core.envs import make_vec_env
from acrl.core.errors import InputError
from acrl.parts.buffers import FrameReplayBuffer, ReplayBuffer, make_replay_buffer, replay_buffer_from
from acrl.parts.datasets import load_dataset
from acrl.parts.stats import EpisodeStats

Buffer = ReplayBuffer | FrameReplayBuffer


class DatasetSource:
    """Fixed data: an offline dataset, loaded into a replay buffer on first use (`replay`), or a replay buffer
    that another agent fills (the BCQ paper's concurrent experiment), learnt from as it is. One iteration
    is `iteration_steps` gradient updates; `num_steps` counts them.

    Args:
        path: the dataset (HDF5, D4RL keys; `acrl.parts.datasets`), or None with a buffer.
        buffer: a replay buffer in policy units to learn from as it is, or None to load `path`.
    """

    step_unit = "update"
    episode_stats = None
    """No training episodes: the data were collected before (`EnvSource.episode_stats` has them)."""

    def __init__(self, path: str | None = None, buffer: Buffer | None = None):
        self.path, self.buffer = path, buffer

    def replay(self, agent: Any) -> Buffer:
        """The replay buffer, with the dataset loaded into it on the first call (`replay_buffer_from`: a
        `ReplayBuffer` for vector observations, a `FrameReplayBuffer` holding each frame observation once,
        in its own dtype, for image frames).

        Actions go from environment units to the units buffers hold (`ActionAdapter.to_policy`, then
        `to_buffer`): Box actions to [-1, 1], Discrete ones to int64 indices from 0. `terminals` become
        `terminated` and `timeouts` `truncated`, so only terminals stop bootstrapping
        (docs/correctness.md item 1). A dataset whose `env_id` differs from the environment only warns;
        the spaces are checked strictly. The agent's `prepare_dataset` preprocesses the data first.

        Raises:
            InputError: a missing, corrupt, empty or mismatched dataset (`acrl.parts.datasets.load_dataset`).
        """
        if self.buffer is None:
            data = load_dataset(self.path, agent.observation_space, agent.action_space)
            if len(data) == 0:
                raise InputError(f"{self.path} holds no transitions.")
            agent.prepare_dataset(data)  # the algorithm's preprocessing (TD3+BC's state normalisation)
            if data.attrs.get("env_id") not in (None, "unknown", agent.config.env_id):
                warnings.warn(
                    f"{self.path} was collected on {data.attrs['env_id']}; this agent evaluates on "
                    f"{agent.config.env_id}.",
                    stacklevel=3,
                )
            adapter = agent.action_adapter
            actions = adapter.to_buffer(adapter.to_policy(data.actions))
            arrays = (data.observations, actions, data.rewards, data.next_observations, data.terminals, data.timeouts)
            self.buffer = replay_buffer_from(agent.observation_space, *arrays, device=agent.device)
        return self.buffer

    def prepare(self, agent: Any) -> None:
        """Before learning: load and check the dataset (see `replay`)."""
        self.replay(agent)

    def iteration(self, agent: Any, max_steps: int) -> dict[str, float]:
        """Up to `iteration_steps` (and `max_steps`) gradient updates from the buffer; their mean train/ metrics.

        Raises:
            InputError: the buffer is empty.
        """
        budget = min(agent.config.iteration_steps, max_steps)
        if len(self.replay(agent)) == 0:
            raise InputError(f"{type(agent).__name__}'s replay buffer is empty; fill it before learning.")
        totals: dict[str, list[float]] = {}
        for _ in range(budget):
            agent.sampled_update(totals)
            agent.num_steps += 1  # as it goes: the progress bar follows inside the iteration
        return _means(totals)

    def state_dict(self, agent: Any, replay_buffer: bool) -> dict[str, Any]:
        """Nothing: the data is the dataset's (or the agent's that fills the buffer)."""
        return {}

    def load_state_dict(self, agent: Any, state: dict[str, Any]) -> None:
        """Nothing to restore (a checkpoint of an earlier version may hold an offline agent's empty
        collection state; it is ignored)."""


class EnvSource:
    """An environment that the agent collects from: `n_envs` copies stepped together with the agent's
    `explore` actions (uniformly random ones while the buffer holds fewer than `start_steps`
    transitions), their transitions stored in a replay buffer of `buffer_size` for the observation space
    (`make_replay_buffer`; a frame buffer stacks the vector env's `frame_stack` frames). One iteration is
    `iteration_steps` environment steps with the gradient updates they owe; `num_steps` counts the steps.

    Args:
        agent: the `OffPolicyAgent` to collect for (its env, config, spaces, device and action adapter).
    Raises:
        InputError: see `make_vec_env` and `make_replay_buffer` (a frame buffer larger than the memory
            available, frames with actions other than one Discrete index).
    """

    step_unit = "step"

    def __init__(self, agent: Any):
        cfg = agent.config
        self.envs = make_vec_env(agent.env, cfg.n_envs)
        self.obs, _ = self.envs.reset(seed=cfg.seed)
        self.envs.action_space.seed(cfg.seed)
        stack = getattr(self.envs, "frame_stack", 1)
        space, shape = agent.observation_space, agent.action_space.shape
        self.buffer = make_replay_buffer(space, cfg.buffer_size, shape, agent.device, cfg.n_envs, stack)
        self.episode_stats = EpisodeStats()
        self.owed_updates = 0.0
        """Gradient updates owed to the steps collected (utd_ratio per step; fractions accumulate)."""

    def replay(self, agent: Any) -> Buffer:
        """The replay buffer that collection fills."""
        return self.buffer

    def prepare(self, agent: Any) -> None:
        """Before learning: warn when a resumed run starts from an empty replay buffer (its random start
        steps come again), then the agent's exploration checks (`OffPolicyAgent.check_exploration`: a
        budget that never leaves the random start steps warns; DQN's epsilon schedule).

        Raises:
            InputError: see `check_exploration`.
        """
        cfg = agent.config
        if agent.num_steps > 0 and len(self.buffer) == 0:  # resumed from a checkpoint without the buffer
            random = (
                f"the next {cfg.start_steps} steps act uniformly at random, as at the start, and "
                if cfg.start_steps
                else ""
            )
            warnings.warn(
                f"resuming at step {agent.num_steps} with an empty replay buffer (a checkpoint holds one "
                f"only with save_replay_buffer=true, and best.pt never): {random}updates wait until it "
                f"holds {max(cfg.start_steps, cfg.batch_size)} new transitions. Train with --set "
                "save_replay_buffer=true to resume with the buffer.",
                stacklevel=3,
            )
        agent.check_exploration()

    def collect_step(self, agent: Any) -> None:
        """Step the vector env once with exploration actions and store the n_envs transitions.

        Uniformly random actions while the buffer holds fewer than start_steps transitions,
        then `explore`. Ended episodes store the true final observation (`info["final_obs"]`)
        as next_observation, with terminated and truncated kept apart (docs/correctness.md item 1).
        """
        if len(self.buffer) < agent.config.start_steps:
            actions = agent.random_actions(len(self.obs))
        else:
            with agent.autocast():  # acting in the run's precision
                actions = agent.explore(self.obs)
        adapter = agent.action_adapter
        next_obs, rewards, terminated, truncated, info = self.envs.step(adapter.to_env(actions))
        real_next = next_obs
        ended = np.flatnonzero(terminated | truncated)
        if ended.size:
            real_next = next_obs.copy()
            for i in ended:
                real_next[i] = info["final_obs"][i]
        self.buffer.add(self.obs, adapter.to_buffer(actions), rewards, real_next, terminated, truncated)
        self.obs = next_obs
        agent.num_steps += len(actions)
        self.episode_stats.add_from_info(info)

    def iteration(self, agent: Any, max_steps: int) -> dict[str, float]:
        """Up to `iteration_steps` (and `max_steps`) environment steps with their updates: the mean train/
        metrics, the episode statistics and the agent's `exploration_metrics`."""
        cfg = agent.config
        end = agent.num_steps + min(cfg.iteration_steps, max_steps)
        totals: dict[str, list[float]] = {}
        while agent.num_steps < end:
            before = agent.num_steps
            self.collect_step(agent)
            if len(self.buffer) >= max(cfg.start_steps, cfg.batch_size):
                self.owed_updates += cfg.n_envs * cfg.utd_ratio
                while agent.num_steps // cfg.train_freq > before // cfg.train_freq and self.owed_updates >= 1.0:
                    agent.sampled_update(totals)
                    self.owed_updates -= 1.0
        return _means(totals) | self.episode_stats.metrics() | agent.exploration_metrics()

    def state_dict(self, agent: Any, replay_buffer: bool) -> dict[str, Any]:
        """The updates owed, the episode statistics and, when `replay_buffer` and save_replay_buffer, the
        buffer ("replay_buffer")."""
        state: dict[str, Any] = {"owed_updates": self.owed_updates, **self.episode_stats.state_dict()}
        if replay_buffer and agent.config.save_replay_buffer:
            state["replay_buffer"] = self.buffer.state_dict()
        return state

    def load_state_dict(self, agent: Any, state: dict[str, Any]) -> None:
        """Restore `state_dict`'s output (the buffer when it holds one), then start fresh episodes: the
        environments' state is not in the checkpoint; they are seeded from the run's seed and step, so
        that a resume repeats exactly.

        Raises:
            InputError: a saved buffer larger than buffer_size or of other shapes.
        """
        self.owed_updates = float(state["owed_updates"])
        self.episode_stats.load_state_dict(state)
        if "replay_buffer" in state:
            self.buffer.load_state_dict(state["replay_buffer"])
        self.obs, _ = self.envs.reset(seed=agent.config.seed + agent.num_steps)


def _means(totals: dict[str, list[float]]) -> dict[str, float]:
    """key -> sum / count of the totals `sampled_update` adds to."""
    return {key: total / count for key, (total, count) in totals.items()}


DataSource = DatasetSource | EnvSource
"""Where an off-policy agent's transitions come from (see the module docstring)."""
