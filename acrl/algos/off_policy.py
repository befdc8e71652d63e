"""The off-policy core that DDPG, TD3, SAC, DQN, the BCQs and the BCs share: a replay buffer and the
data source that fills it.

A `ReplayAgent` (BC, discrete BC, VAE-BC) learns from minibatches of a replay buffer that it does not
fill itself. An `OffPolicyAgent` (DDPG, TD3, SAC, DQN, the BCQs) extends it with temporal-difference
settings (gamma, tau), value estimates at evaluation and exploration. Every agent reads from one
data source (`acrl.parts.sources`), an object chosen once when the agent is built, which the agent
calls without asking what it is (`source`):

- `EnvSource` (DDPG, TD3, SAC, DQN without data): an environment that the agent collects from,
  stepping the vector env with its `explore` actions (uniformly random ones for the first
  `start_steps` transitions) and storing the transitions in a replay buffer of `buffer_size`, the true
  final observation of an episode cut by its time limit included (docs/correctness.md item 1);
  `utd_ratio` gradient updates follow per environment step once the buffer holds
  `max(start_steps, batch_size)` transitions; `num_steps` counts environment steps;
- `DatasetSource` (`dataset=PATH`, every agent here; BCQ and BC only learn so): fixed data, the
  HDF5 file of `acrl.parts.datasets` loaded once, actions mapped to policy units, or a buffer that
  another agent fills (`buffer=`, the BCQ paper's concurrent experiment); `num_steps` counts
  gradient updates.

The observation space decides the buffer (`acrl.parts.buffers.make_replay_buffer`: vectors in a
`ReplayBuffer`, image frames in a `FrameReplayBuffer`, each observation stored once, never as
floats), and the normaliser: none (`make_normalizer(space, False)`: frames stay uint8 / bool up to
the network). Buffers hold actions in the action space's policy units (`ActionAdapter.to_buffer`),
so every agent on one space can learn from any buffer of it.

A subclass provides `_build_networks`, `_update(batch)`, `_policy_action` and, to learn
online, `explore(obs)`. An off-policy agent with a Q-function (`has_q_values`: a critic, `nets["critic"]`,
whose `q1` is the estimate, or the Q-learners' Q(s, .)) also reports its value estimates at every
evaluation (`evaluate`). Checkpoints add the update counter, what the source keeps (collecting:
the updates owed, the episode statistics and, with `save_replay_buffer`, the buffer, never in
best.pt: the run loop saves that one without it).
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
from acrl.core.envs import EnvSpec
from acrl.core.errors import InputError
from acrl.core.evaluation import evaluate
from acrl.parts.buffers import FrameReplayBuffer
from acrl.parts.datasets import OfflineDataset, dataset_env_id
from acrl.parts.observations import make_normalizer
from acrl.parts.sources import Buffer, DatasetSource, DataSource, EnvSource
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
        if self.dataset is None and self.buffer_size % self.n_envs:
            raise InputError(
                f"buffer_size ({self.buffer_size}) must be a multiple of n_envs ({self.n_envs}): each "
                "environment gets an equal part of the replay buffer."
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
    """Base of the agents that learn from a replay buffer (see the module docstring): BC, discrete BC and
    VAE-BC directly, learning from fixed data only; DDPG, TD3, SAC, DQN and the BCQs through `OffPolicyAgent`.

    The data source (`source`) is chosen once, when the agent is built: a `DatasetSource` of the given
    buffer or of the config's dataset, else, for a class that does not `requires_data`, an `EnvSource`.
    `num_steps` counts what the source's iterations count (`step_unit`). Checkpoints add the update
    counter and the source's state.

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

    def __init__(
        self,
        env: EnvSpec | None = None,
        config: RunConfig | None = None,
        buffer: Buffer | None = None,
        **hyperparameters: Any,
    ):
        dataset = hyperparameters.get("dataset", getattr(config, "dataset", None))
        if env is None and "env_id" not in hyperparameters and dataset is not None:
            env = dataset_env_id(dataset)
        self._given_buffer = buffer
        super().__init__(env, config, **hyperparameters)

    def _build(self) -> None:
        cfg = self.config
        self.obs_normalizer = make_normalizer(self.observation_space, False)  # frames stay uint8 / bool
        self._build_networks()
        self.updates = 0
        """Gradient updates so far, the running one included (TD3's policy delay counts these)."""
        if cfg.dataset is not None:
            cfg.dataset = str(Path(cfg.dataset).resolve())  # config.yaml stays valid from any directory
        buffer, self._given_buffer = self._given_buffer, None
        if buffer is not None:
            self._check_buffer(buffer)
            self.source: DataSource = DatasetSource(cfg.dataset, buffer)
        elif cfg.dataset is not None:
            self.source = DatasetSource(cfg.dataset)
        elif self.requires_data:
            raise InputError(
                f"{type(self).__name__} learns from a fixed dataset: pass --dataset FILE (an HDF5 file with the "
                "D4RL keys, e.g. from `acrl collect`), or buffer=ReplayBuffer from Python."
            )
        else:
            self.source = EnvSource(self)

    @property
    def step_unit(self) -> str:
        """What num_steps counts: "step" (environment steps) when collecting, "update" from fixed data."""
        return self.source.step_unit

    @property
    def episode_stats(self) -> EpisodeStats | None:
        """The training episodes' statistics when collecting; None learning from fixed data (no episodes)."""
        return self.source.episode_stats

    @property
    def buffer(self) -> Buffer | None:
        """The replay buffer the agent learns from (None while a dataset is not loaded yet: `load_data`)."""
        return self.source.buffer

    # ----------------------------------------------------------------- what a subclass provides
    def _build_networks(self) -> None:
        """Create the networks (`self.nets`) and optimizers (`self.optimizers`)."""
        raise NotImplementedError

    def _update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """The algorithm's gradient update from a minibatch (keys as `ReplayBuffer.sample`); train/ metrics."""
        raise NotImplementedError

    def prepare_dataset(self, data: OfflineDataset) -> None:
        """The algorithm's own preprocessing of an offline dataset, in place, once when it is loaded and before it
        fills the replay buffer (`DatasetSource.replay`): TD3+BC normalises its states, IQL scales its rewards.
        Default: none. A buffer given as `buffer=` is learnt from as it is."""

    # ----------------------------------------------------------------- data
    def _check_buffer(self, buffer: Buffer) -> None:
        if buffer.device != self.device:
            raise InputError(
                f"the replay buffer lives on {buffer.device}, this agent on {self.device}; give both the same device."
            )
        if isinstance(buffer, FrameReplayBuffer):
            shape, actions = buffer.obs_shape, ()
        else:
            shape, actions = tuple(buffer.observations.shape[1:]), tuple(buffer.actions.shape[1:])
        needed, needed_actions = self.observation_space.shape, self.action_space.shape
        if shape != needed or actions != needed_actions:
            raise InputError(
                f"the replay buffer holds observations of shape {shape} and actions of shape {actions}; "
                f"this environment needs {needed} and {needed_actions}."
            )

    def load_data(self) -> Buffer:
        """The replay buffer, with an offline dataset loaded into it on the first call (`DatasetSource.replay`).

        Raises:
            InputError: a missing, corrupt, empty or mismatched dataset (`acrl.parts.datasets.load_dataset`).
        """
        return self.source.replay(self)

    def before_learning(self) -> None:
        """The source's preparation: load and check a dataset; when collecting, `check_exploration` and the
        warnings of `EnvSource.prepare`.

        Raises:
            InputError: see `DatasetSource.replay` and `EnvSource.prepare`.
        """
        self.source.prepare(self)

    # ----------------------------------------------------------------- learning
    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One gradient update from a minibatch (keys as `ReplayBuffer.sample`): counts it in
        `updates`, then runs the algorithm's `_update`; returns its train/ metrics."""
        self.updates += 1
        return self._update(batch)

    def sample_batch(self) -> dict[str, torch.Tensor]:
        """A minibatch of `batch_size` transitions drawn from the buffer (`ReplayBuffer.sample`), its actions
        in policy units (`ActionAdapter.from_buffer`)."""
        batch = self.buffer.sample(self.config.batch_size, self.rng)
        batch["actions"] = self.action_adapter.from_buffer(batch["actions"])
        return batch

    def sampled_update(self, totals: dict[str, list[float]]) -> None:
        """`update` on a minibatch from `sample_batch`; adds its metrics to `totals` (key -> [sum,
        count]), which the source's iteration averages."""
        for key, value in self.update(self.sample_batch()).items():
            total = totals.setdefault(key, [0.0, 0])
            total[0] += value
            total[1] += 1

    def iteration(self, max_steps: int) -> dict[str, float]:
        """The source's iteration: up to `iteration_steps` (and `max_steps`) environment steps with their
        updates, or gradient updates from fixed data; their metrics.

        Raises:
            InputError: fixed data whose buffer is empty.
        """
        return self.source.iteration(self, max_steps)

    # ----------------------------------------------------------------- checkpoints
    def state_dict(self, replay_buffer: bool = True) -> dict[str, Any]:
        """`Agent.state_dict`; collecting, the replay buffer too when `replay_buffer` and save_replay_buffer."""
        state = super().state_dict()
        source = self.source.state_dict(self, replay_buffer)
        if "replay_buffer" in source:  # at the checkpoint's top level, where it has always been
            state["replay_buffer"] = source.pop("replay_buffer")
        state["extra"] |= source
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """`Agent.load_state_dict`, then the source's state (collecting: the replay buffer when the
        checkpoint holds one, and fresh episodes).

        Raises:
            InputError: as `Agent.load_state_dict`; a saved buffer larger than buffer_size; for an agent that
                collects, a checkpoint without the collection's state (one that learnt from fixed data).
        """
        super().load_state_dict(state)
        extra = dict(state["extra"])
        if "replay_buffer" in state:
            extra["replay_buffer"] = state["replay_buffer"]
        try:
            self.source.load_state_dict(self, extra)
        except KeyError as missing:
            raise InputError(
                f"the checkpoint does not match this {type(self).__name__}, which collects its data: it holds no "
                f"{missing} (a checkpoint of an agent that learnt from fixed data?)."
            ) from None

    def _extra_state(self) -> dict[str, Any]:
        return {"updates": self.updates}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self.updates = int(state["updates"])


class OffPolicyAgent(ReplayAgent):
    """Base of the agents that learn values by temporal differences from a replay buffer, which
    they can fill themselves (DDPG, TD3, SAC, DQN: an `EnvSource`) or take as `ReplayAgent` does (the
    BCQs, and the others with a dataset: a `DatasetSource`); see the module docstring.

    Args:
        as `ReplayAgent`; without a dataset or a buffer, the agent collects its own data.
    Raises:
        InputError: as `ReplayAgent`; without data, for a class that `requires_data`.
    """

    config: TDConfig
    requires_data: ClassVar[bool] = False

    def explore(self, obs: np.ndarray) -> np.ndarray:
        """Behaviour actions (n_envs, act_dim) float32 in policy units (Discrete: (n_envs,) int64 indices)
        for raw observations (n_envs, *obs_shape), after the random start steps."""
        raise NotImplementedError

    def random_actions(self, n: int) -> np.ndarray:
        """n uniformly random actions in policy units from the agent's generator: (n, act_dim) float32 in
        [-1, 1] (the Q-learners: indices, `QLearningAgent.random_actions`)."""
        return self.rng.uniform(-1.0, 1.0, (n, self.act_dim)).astype(np.float32)

    def check_exploration(self) -> None:
        """Before collecting: warn when the budget never leaves the random start steps (`warn_if_all_random`);
        DQN also refuses an epsilon schedule that ends after the budget.

        Raises:
            InputError: exploration settings the budget cannot hold (DQN's epsilon schedule).
        """
        warn_if_all_random(self.total_steps, self.config.start_steps)

    def exploration_metrics(self) -> dict[str, float]:
        """rollout/ metrics of the exploration after a collecting iteration (default: none; DQN's epsilon)."""
        return {}

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
            firsts.append((np.array(obs), np.asarray(action)))  # copies, in the dtype the environment gave

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
        forked = torch.random.fork_rng(devices=[self.device] if self.device.type == "cuda" else [])
        with torch.no_grad(), forked, self.autocast():
            torch.manual_seed(seed)
            result["q_initial_mean"] = self.q_value(obs, torch.as_tensor(actions, device=self.device)).mean().item()
            if self.buffer is not None and len(self.buffer):
                states, data_actions = self.buffer.evenly_spaced(1_000)
                data_actions = self.action_adapter.from_buffer(data_actions)
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
