"""The off-policy core that DDPG, TD3, SAC, the BCQs and BC share: a replay buffer and its data source.

A `ReplayAgent` (BC) learns from minibatches of a `ReplayBuffer` that it does not fill itself: a
dataset or another agent's buffer. An `OffPolicyAgent` (DDPG, TD3, SAC, the BCQs) extends it with
temporal-difference settings (gamma, tau), value estimates at evaluation and online collection;
its buffer is filled one of three ways:

- online (DDPG, TD3, SAC): `collect_step` steps the vector env with `explore` actions (uniformly
  random for the first `start_steps` transitions) and stores the transitions, the true final
  observation of an episode cut by its time limit included (docs/correctness.md item 1);
  `utd_ratio` gradient updates follow per environment step once the buffer holds
  `max(start_steps, batch_size)` transitions;
- from a dataset (`dataset=PATH`, every algorithm here; BCQ and BC only): the HDF5 file of
  `acrl.parts.datasets`, loaded once, actions mapped to policy units (vectors into a
  `ReplayBuffer`, image frames into a `FrameReplayBuffer`, each observation stored once, never as
  floats); `num_steps` counts gradient updates;
- from a buffer that another agent fills (`buffer=`), as in the BCQ paper's concurrent
  experiment; also counted in updates.

A subclass provides `_build_networks`, `_update(batch)`, `_policy_action` and, to learn
online, `explore(obs)`. An off-policy agent with a Q-function (`has_q_values`: a critic, `nets["critic"]`,
whose `q1` is the estimate, or the Q-learners' Q(s, .)) also reports its value estimates at every
evaluation (`evaluate`). Checkpoints add the update
counter, the episode statistics and, with `save_replay_buffer`, the buffer (never in best.pt:
the run loop saves that one without it).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from acrl.algos.base import EVAL_SEED_OFFSET, Agent
from acrl.core.config import RunConfig, in_unit_interval, layer_widths, positive
from acrl.core.envs import EnvSpec, make_vec_env
from acrl.core.errors import InputError
from acrl.core.evaluation import evaluate
from acrl.parts.buffers import FrameReplayBuffer, ReplayBuffer
from acrl.parts.datasets import dataset_env_id, load_dataset
from acrl.parts.encoders import is_image
from acrl.parts.stats import EpisodeStats


@dataclass
class ReplayConfig(RunConfig):
    """Settings of every agent that learns from replayed minibatches, online or from a dataset.

    Attributes:
        env_id: the environment (offline: the one used for evaluation and to check the
            dataset's spaces; default: the dataset's `env_id` attribute).
        total_steps: environment steps online; gradient updates offline.
        batch_size: transitions per gradient update.
        iteration_steps: environment steps (offline: updates) per iteration, i.e. per row of
            metrics.csv; an iteration also ends at each evaluation point.
        dataset: path of an offline dataset (HDF5, D4RL keys; `acrl.parts.datasets`). When
            set, the agent learns from it only and steps an environment only to evaluate.
    """

    env_id: str = "Pendulum-v1"
    eval_freq: int = 5_000
    batch_size: int = 100
    iteration_steps: int = 1_000
    dataset: str | None = None

    def validate(self) -> None:
        """Raise `InputError` for values no replay agent can run with (see the attribute list)."""
        super().validate()
        positive(self, "batch_size", "iteration_steps")


@dataclass
class TDConfig(ReplayConfig):
    """Settings of the replay agents that learn values by temporal differences against target
    networks (DDPG, TD3, SAC, BCQ, discrete BCQ).

    Attributes (besides ReplayConfig's):
        gamma: discount; also that of the discounted return reported at evaluation.
        tau: soft target update weight per update.
    """

    gamma: float = 0.99
    tau: float = 0.005

    def validate(self) -> None:
        """Raise `InputError` for a gamma or tau outside [0, 1]."""
        super().validate()
        in_unit_interval(self, "gamma", "tau")


@dataclass
class OffPolicyConfig(TDConfig):
    """Settings of the agents that can also collect their own data (DDPG, TD3, SAC).

    Attributes (besides TDConfig's):
        learning_rate: Adam step size of the actor and the critic.
        buffer_size: replay capacity in transitions; offline: ignored (the dataset's size).
        start_steps: uniformly random actions until the buffer holds this many transitions,
            and no update before.
        utd_ratio: update-to-data ratio, gradient updates per environment step collected
            (> 0; 1 as in the papers; fractions accumulate, 0.5 updates every other step).
        train_freq: the updates owed are made every this many environment steps, together
            (1: after every step; SB3's train_freq, with gradient_steps = utd_ratio * train_freq).
        hidden_sizes: hidden ReLU layers of the actor and the critic.
        save_replay_buffer: store the replay buffer in latest.pt (not best.pt) so that a resume
            continues with it; off by default (a resume refills with random steps).
    """

    learning_rate: float = 1e-3
    buffer_size: int = 1_000_000
    start_steps: int = 25_000
    utd_ratio: float = 1.0
    train_freq: int = 1
    hidden_sizes: tuple[int, ...] = (400, 300)
    save_replay_buffer: bool = False

    def validate(self) -> None:
        """Raise `InputError` for values an off-policy agent cannot run with (see the attribute list)."""
        super().validate()
        positive(self, "learning_rate", "buffer_size", "utd_ratio", "train_freq")
        if self.start_steps < 0:
            raise InputError(f"start_steps must be >= 0, got {self.start_steps}.")
        if self.dataset is None and self.buffer_size < max(self.batch_size, self.start_steps):
            raise InputError(
                f"buffer_size ({self.buffer_size}) must hold at least batch_size "
                f"({self.batch_size}) and start_steps ({self.start_steps}) transitions."
            )
        layer_widths(self, "hidden_sizes")


def warn_if_all_random(total_steps: int, start_steps: int) -> None:
    """Warn that a run of `total_steps` environment steps never leaves its `start_steps` uniformly
    random ones, so no gradient update happens (`OffPolicyAgent.before_learning`, and the
    experiments' check of their behavioral DDPG on the driver)."""
    if total_steps <= start_steps:
        warnings.warn(
            f"total_steps {total_steps} <= start_steps {start_steps}: every action will be uniformly "
            "random and no gradient update will happen. Train longer or lower start_steps (e.g. "
            f"start_steps={max(1, total_steps // 10)}).",
            stacklevel=3,
        )


class ReplayAgent(Agent):
    """Base of the agents that learn from a replay buffer they do not fill (BC; see the module docstring).

    `num_steps` counts gradient updates, `iteration_steps` of them per iteration; evaluation is
    `Agent.evaluate`'s. Checkpoints add the update counter.

    Args:
        env, config, **hyperparameters: as `Agent`; without `env`, a dataset's `env_id`
            attribute names the environment.
        buffer: a `ReplayBuffer` in policy units (a `FrameReplayBuffer` for image frames) to learn
            from as it is (another agent may be filling it); then no dataset is read (a `dataset`
            in the config is only recorded) and no environment is stepped but to evaluate.
    Raises:
        InputError: as `Agent`; no `env` and a dataset without a registered `env_id`; neither a
            dataset nor a buffer for a class that `requires_data`; a buffer whose shapes do not
            fit the environment.
    """

    config: ReplayConfig
    requires_data: ClassVar[bool] = True
    """True for algorithms that cannot collect their own data (BC, BCQ): they need a dataset or buffer."""
    step_unit: ClassVar[str] = "update"

    def __init__(
        self,
        env: EnvSpec | None = None,
        config: RunConfig | None = None,
        buffer: ReplayBuffer | FrameReplayBuffer | None = None,
        **hyperparameters: Any,
    ):
        dataset = hyperparameters.get("dataset", getattr(config, "dataset", None))
        if env is None and "env_id" not in hyperparameters and dataset is not None:
            env = dataset_env_id(dataset)
        self.buffer = buffer
        super().__init__(env, config, **hyperparameters)

    def _build(self) -> None:
        cfg = self.config
        self._build_networks()
        self.updates = 0
        """Gradient updates so far, the running one included (TD3's policy delay counts these)."""
        if self.buffer is not None:
            self._check_buffer(self.buffer)
        if cfg.dataset is not None:
            cfg.dataset = str(Path(cfg.dataset).resolve())  # config.yaml stays valid from any directory
        if self.buffer is None and cfg.dataset is None:
            self._without_data()

    def _without_data(self) -> None:
        """What `_build` does when given neither a dataset nor a buffer: refuse (`OffPolicyAgent`
        collects its own data instead, unless it `requires_data`).

        Raises:
            InputError: saying how to pass a dataset or a buffer.
        """
        raise InputError(
            f"{type(self).__name__} learns from a fixed dataset: pass --dataset FILE (an HDF5 "
            "file with the D4RL keys, e.g. from `acrl collect`), or buffer=ReplayBuffer from "
            "Python."
        )

    @property
    def _action_shape(self) -> tuple[int, ...]:
        return () if self.discrete else (self.act_dim,)

    # ----------------------------------------------------------------- what a subclass provides
    def _build_networks(self) -> None:
        """Create the networks (`self.nets`) and optimizers (`self.optimizers`)."""
        raise NotImplementedError

    def _update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """The algorithm's gradient update from a minibatch (keys as `ReplayBuffer.sample`); train/ metrics."""
        raise NotImplementedError

    # ----------------------------------------------------------------- data
    def _check_buffer(self, buffer: ReplayBuffer | FrameReplayBuffer) -> None:
        if buffer.device != self.device:
            raise InputError(
                f"the replay buffer lives on {buffer.device}, this agent on {self.device}; give both the same device."
            )
        if isinstance(buffer, FrameReplayBuffer):
            shape, needed = buffer.obs_shape, self.observation_space.shape
            actions = ()
        else:
            shape, needed = tuple(buffer.observations.shape[1:]), (self.obs_dim,)
            actions = tuple(buffer.actions.shape[1:])
        if shape != needed or actions != self._action_shape:
            raise InputError(
                f"the replay buffer holds observations of shape {shape} and actions of shape {actions}; "
                f"this environment needs {needed} and {self._action_shape}."
            )

    def load_data(self) -> ReplayBuffer | FrameReplayBuffer:
        """The replay buffer, with the offline dataset loaded into it on the first call: a `ReplayBuffer`
        for vector observations, a `FrameReplayBuffer` holding each frame observation once, in its own
        dtype (`FrameReplayBuffer.from_transitions`), for image frames.

        Actions go from environment units to policy units (`ActionAdapter.to_policy`): Box
        actions to [-1, 1] (clipped against float round-off at the bounds), Discrete ones to
        int64 indices from 0. `terminals` become `terminated` and `timeouts` `truncated`, so only terminals
        stop bootstrapping (docs/correctness.md item 1). A dataset whose `env_id` differs from
        the environment only warns; the spaces are checked strictly.

        Raises:
            InputError: a missing, corrupt, empty or mismatched dataset (`acrl.parts.datasets.load_dataset`).
        """
        if self.buffer is None:
            path = self.config.dataset
            data = load_dataset(path, self.observation_space, self.action_space)
            if len(data) == 0:
                raise InputError(f"{path} holds no transitions.")
            if data.attrs.get("env_id") not in (None, "unknown", self.config.env_id):
                warnings.warn(
                    f"{path} was collected on {data.attrs['env_id']}; this agent evaluates on {self.config.env_id}.",
                    stacklevel=2,
                )
            actions = self.action_adapter.to_policy(data.actions)
            if not self.discrete:
                actions = np.clip(actions, -1.0, 1.0)  # float round-off at the bounds
            arrays = (data.observations, actions, data.rewards, data.next_observations, data.terminals, data.timeouts)
            if is_image(self.observation_space):
                self.buffer = FrameReplayBuffer.from_transitions(*arrays, device=self.device)
            else:
                self.buffer = ReplayBuffer(len(data), self.obs_dim, self._action_shape, self.device)
                self.buffer.add(*arrays)
        return self.buffer

    def before_learning(self) -> None:
        """Load and check the dataset.

        Raises:
            InputError: see `load_data`.
        """
        self.load_data()

    # ----------------------------------------------------------------- learning
    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One gradient update from a minibatch (keys as `ReplayBuffer.sample`): counts it in
        `updates`, then runs the algorithm's `_update`; returns its train/ metrics."""
        self.updates += 1
        return self._update(batch)

    def sample_batch(self) -> dict[str, torch.Tensor]:
        """A minibatch of `batch_size` transitions drawn from the buffer (`ReplayBuffer.sample`)."""
        return self.buffer.sample(self.config.batch_size, self.rng)

    def _sampled_update(self, totals: dict[str, list[float]]) -> None:
        """`update` on a minibatch from `sample_batch`; adds its metrics to `totals` (key -> [sum,
        count]), which `_means` averages."""
        for key, value in self.update(self.sample_batch()).items():
            total = totals.setdefault(key, [0.0, 0])
            total[0] += value
            total[1] += 1

    def iteration(self, max_steps: int) -> dict[str, float]:
        """Up to `iteration_steps` (and `max_steps`) gradient updates from the buffer; their mean train/ metrics.

        Raises:
            InputError: the buffer is empty.
        """
        budget = min(self.config.iteration_steps, max_steps)
        if len(self.load_data()) == 0:
            raise InputError(f"{type(self).__name__}'s replay buffer is empty; fill it before learning.")
        totals: dict[str, list[float]] = {}
        for _ in range(budget):
            self._sampled_update(totals)
            self.num_steps += 1  # as it goes: the progress bar follows inside the iteration
        return _means(totals)

    # ----------------------------------------------------------------- checkpoints
    def _extra_state(self) -> dict[str, Any]:
        return {"updates": self.updates}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self.updates = int(state["updates"])


def _means(totals: dict[str, list[float]]) -> dict[str, float]:
    """key -> sum / count of `ReplayAgent._sampled_update`'s totals."""
    return {key: total / count for key, (total, count) in totals.items()}


class OffPolicyAgent(ReplayAgent):
    """Base of the agents that learn values by temporal differences from a replay buffer, which
    they can fill themselves (DDPG, TD3, SAC) or take as `ReplayAgent` does (the BCQs); see the
    module docstring.

    Args:
        as `ReplayAgent`; without a dataset or a buffer, the agent collects its own data.
    Raises:
        InputError: as `ReplayAgent`; an online agent of a class that `requires_data`.
    """

    config: TDConfig
    requires_data: ClassVar[bool] = False

    def _build(self) -> None:
        self.episode_stats = EpisodeStats()
        self._owed_updates = 0.0
        self.envs = None
        super()._build()

    def _without_data(self) -> None:
        """Online: collect our own data (a class that `requires_data` refuses, as `ReplayAgent`)."""
        if self.requires_data:
            super()._without_data()
        cfg = self.config
        self.envs = make_vec_env(self.env, cfg.n_envs)
        self._obs, _ = self.envs.reset(seed=cfg.seed)
        self.envs.action_space.seed(cfg.seed)
        self.buffer = self._make_buffer()

    def _make_buffer(self) -> ReplayBuffer:
        """The empty replay buffer that online collection fills: buffer_size transitions of vectors."""
        return ReplayBuffer(self.config.buffer_size, self.obs_dim, self._action_shape, self.device)

    @property
    def step_unit(self) -> str:
        """ "step" online, "update" when learning from a dataset or a given buffer."""
        return "step" if self.envs is not None else "update"

    def explore(self, obs: np.ndarray) -> np.ndarray:
        """Behaviour actions (n_envs, act_dim) float32 in policy units (Discrete: (n_envs,) int64 indices)
        for raw observations (n_envs, *obs_shape), after the random start steps."""
        raise NotImplementedError

    def random_actions(self, n: int) -> np.ndarray:
        """n uniformly random actions in policy units from the agent's generator: (n, act_dim) float32
        in [-1, 1] for a Box, (n,) int64 indices 0..n_actions - 1 for a Discrete space."""
        if self.discrete:
            return self.rng.integers(0, self.act_dim, n)
        return self.rng.uniform(-1.0, 1.0, (n, self.act_dim)).astype(np.float32)

    def before_learning(self) -> None:
        """Load and check the dataset (offline); online, warn when a resumed run starts from an empty
        replay buffer (its random start steps come again) or the budget never leaves the random start steps."""
        if self.envs is None:
            super().before_learning()
            return
        cfg = self.config
        if self.num_steps > 0 and len(self.buffer) == 0:  # resumed from a checkpoint without the buffer
            random = (
                f"the next {cfg.start_steps} steps act uniformly at random, as at the start, and "
                if cfg.start_steps
                else ""
            )
            warnings.warn(
                f"resuming at step {self.num_steps} with an empty replay buffer (a checkpoint holds one "
                f"only with save_replay_buffer=true, and best.pt never): {random}updates wait until it "
                f"holds {max(cfg.start_steps, cfg.batch_size)} new transitions. Train with --set "
                "save_replay_buffer=true to resume with the buffer.",
                stacklevel=2,
            )
        warn_if_all_random(self.total_steps, cfg.start_steps)

    # ----------------------------------------------------------------- collecting
    def collect_step(self) -> None:
        """Step the vector env once with exploration actions and store the n_envs transitions.

        Uniformly random actions while the buffer holds fewer than start_steps transitions,
        then `explore`. Ended episodes store the true final observation (`info["final_obs"]`)
        as next_observation, with terminated and truncated kept apart (docs/correctness.md item 1).
        """
        if len(self.buffer) < self.config.start_steps:
            actions = self.random_actions(len(self._obs))
        else:
            actions = self.explore(self._obs)
        next_obs, rewards, terminated, truncated, info = self.envs.step(self.action_adapter.to_env(actions))
        real_next = next_obs
        ended = np.flatnonzero(terminated | truncated)
        if ended.size:
            real_next = next_obs.copy()
            for i in ended:
                real_next[i] = info["final_obs"][i]
        self.buffer.add(self._obs, actions, rewards, real_next, terminated, truncated)
        self._obs = next_obs
        self.num_steps += len(actions)
        self.episode_stats.add_from_info(info)

    # ----------------------------------------------------------------- learning
    def iteration(self, max_steps: int) -> dict[str, float]:
        """Up to `iteration_steps` (and `max_steps`) environment steps with their updates, or updates offline."""
        if self.envs is None:
            return super().iteration(max_steps) | self.episode_stats.metrics()
        cfg = self.config
        end = self.num_steps + min(cfg.iteration_steps, max_steps)
        totals: dict[str, list[float]] = {}
        while self.num_steps < end:
            before = self.num_steps
            self.collect_step()
            if len(self.buffer) >= max(cfg.start_steps, cfg.batch_size):
                self._owed_updates += cfg.n_envs * cfg.utd_ratio
                while self.num_steps // cfg.train_freq > before // cfg.train_freq and self._owed_updates >= 1.0:
                    self._sampled_update(totals)
                    self._owed_updates -= 1.0
        return _means(totals) | self.episode_stats.metrics()

    # ----------------------------------------------------------------- evaluation
    def evaluate(self, episodes: int | None = None, deterministic: bool = True) -> dict[str, Any]:
        """`Agent.evaluate`, with the discounted return and, for an agent with a critic, its value estimates.

        The extrapolation error of Fujimoto et al. 2019 (Sec. 3 and 5, Figure 2's value plots) is
        the gap between what the critic believes and what the policy gets. Besides `Agent.evaluate`'s
        keys (undiscounted returns), the result holds
            discounted_return_mean: the Monte-Carlo value, sum_t gamma^t r_t of each evaluation
                episode from its first state, averaged (`acrl.core.evaluation.evaluate`); an episode
                cut by its time limit goes on past it, the policy acting, as the critic's targets
                bootstrap through truncation (`acrl.core.evaluation.discounted_past_time_limit`);
        and, for an agent with Q-values (`has_q_values`: DDPG, TD3, SAC, BCQ with their critic's Q1;
        DQN, on Discrete or discretised actions, and discrete BCQ with their Q(s, a); not BC or
        VAE-BC), with Q its `q_value`:
            q_initial_mean: Q(s_0, a_0) at the same episodes' first states and the actions the
                policy took there, averaged: the estimate of discounted_return_mean;
            q_data_mean, q_policy_mean: when the replay buffer or dataset is loaded, the mean of
                Q(s, a) over up to 1,000 of its (s, a) pairs (evenly spaced through it, the
                buffer's `evenly_spaced`) and of Q(s, pi(s)) on the same states with the policy's
                own actions.
        The policy's sampling draws from torch's generator seeded from the evaluation seed, on a
        forked state, so training's random stream is untouched.
        """
        seed = self.config.seed + EVAL_SEED_OFFSET
        firsts: list[tuple[np.ndarray, np.ndarray]] = []  # each episode's (s0, a0), where Q is read

        def first_step(obs: np.ndarray, action: Any) -> None:
            firsts.append((_as_observation(self, obs), np.asarray(action)))

        result = evaluate(
            self,
            self.env,
            self.config.eval_episodes if episodes is None else episodes,
            deterministic,
            seed=seed,
            gamma=self.config.gamma,
            first_step=first_step if self.has_q_values else None,
        )
        if not self.has_q_values:
            return result
        obs = self.obs_normalizer(np.stack([obs for obs, _ in firsts])).to(self.device)
        actions = self.action_adapter.to_policy(np.stack([action for _, action in firsts]))
        if not self.discrete:
            actions = np.clip(actions, -1.0, 1.0)  # float round-off at the bounds
        with torch.no_grad(), torch.random.fork_rng(devices=[self.device] if self.device.type == "cuda" else []):
            torch.manual_seed(seed)
            result["q_initial_mean"] = self.q_value(obs, torch.as_tensor(actions, device=self.device)).mean().item()
            if self.buffer is not None and len(self.buffer):
                states, data_actions = self.buffer.evenly_spaced(1_000)
                result["q_data_mean"] = self.q_value(states, data_actions).mean().item()
                result["q_policy_mean"] = self.q_value(states, self._policy_action(states, True)).mean().item()
        return result

    @property
    def has_q_values(self) -> bool:
        """Whether the agent estimates Q(s, a) (`q_value`), whose estimates `evaluate` reports: one with a critic."""
        return "critic" in self.nets

    def q_value(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """The agent's estimate Q(s, a), (B,) or (B, 1) float32, for observations (B, *obs_shape) as the
        networks take them and actions in policy units (B, act_dim) float32 or (B,) int64: the critic's Q1
        (the estimate the BCQ paper plots, Fujimoto et al. 2019, Figure 2)."""
        return self.nets["critic"].q1(obs, actions)

    # ----------------------------------------------------------------- checkpoints
    def state_dict(self, replay_buffer: bool = True) -> dict[str, Any]:
        """`Agent.state_dict`; the replay buffer too when `replay_buffer` and save_replay_buffer (online only)."""
        state = super().state_dict()
        if replay_buffer and self.envs is not None and self.config.save_replay_buffer:
            state["replay_buffer"] = self.buffer.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """`Agent.load_state_dict`, and the replay buffer when the checkpoint holds one.

        Raises:
            InputError: as `Agent.load_state_dict`; a saved buffer larger than buffer_size.
        """
        super().load_state_dict(state)
        if "replay_buffer" in state and self.envs is not None:
            self.buffer.load_state_dict(state["replay_buffer"])

    def _extra_state(self) -> dict[str, Any]:
        return {**super()._extra_state(), "owed_updates": self._owed_updates, **self.episode_stats.state_dict()}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        super()._load_extra_state(state)
        self._owed_updates = float(state["owed_updates"])
        self.episode_stats.load_state_dict(state)
        if self.envs is not None:
            # The environments' state is not in the checkpoint: fresh episodes, seeded from the
            # run's seed and step so that a resume repeats exactly.
            self._obs, _ = self.envs.reset(seed=self.config.seed + self.num_steps)


def _as_observation(agent: ReplayAgent, obs: np.ndarray) -> np.ndarray:
    """A raw observation as `Agent.predict` reads it: float32 for vectors, image frames in their own dtype."""
    space = agent.observation_space
    return np.asarray(obs, dtype=np.float32 if len(space.shape) == 1 else space.dtype)
