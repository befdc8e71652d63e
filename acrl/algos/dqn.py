"""DQN with Double DQN targets (Mnih et al. 2015, "Human-level control through deep reinforcement
learning", Algorithm 1; van Hasselt, Guez, Silver 2016, "Deep Reinforcement Learning with Double
Q-learning", Eq. 4), for Discrete action spaces, on vectors or image frames.

    acting:  epsilon-greedy: a uniformly random action with probability epsilon(t), else
             argmax_a Q(s, a); epsilon(t) falls linearly from epsilon_start to epsilon_end over the
             first epsilon_decay_steps environment steps t, then stays (Mnih et al. 2015, Extended
             Data Table 1: 1 to 0.1 over 1M frames); uniformly random actions for the first
             start_steps transitions ("replay start size")
    target:  y = R + gamma^k * (1 - terminated) * Q'(s', argmax_a Q(s', a))  (Double DQN; n-step
             windows of k <= n_step transitions, Hessel et al. 2018, Sec. 3)
    loss:    Huber(Q(s, a) - y); the target network copied every target_update_interval updates

The target, loss, target network and optimizer are the Q-learning core's (`acrl.algos.q_learning`),
shared with discrete BCQ; collection, random start steps, `utd_ratio` / `train_freq` and the replay
buffer are the off-policy core's (`acrl.algos.off_policy`). Vector observations get an MLP and a
`ReplayBuffer`; image frames (uint8 or bool) a CNN (`acrl.parts.encoders`, "auto": the Nature CNN
from 36 x 36 up, else MinAtar's) and a `FrameReplayBuffer`, which stores each frame once (for
Atari's stacks of 4, the vector env's `frame_stack`). Correctness (docs/correctness.md items 1, 13,
14): not_done is 1 - terminated, so a time-limit truncation bootstraps from the true final
observation; the target network starts as an exact copy; epsilon is a function of the environment
steps taken (`num_steps`, in every checkpoint), so a resume continues the schedule where it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
from torch import nn

from acrl.algos.off_policy import OffPolicyConfig
from acrl.algos.q_learning import QLearningAgent, QLearningConfig
from acrl.core.config import RunConfig, in_unit_interval
from acrl.core.errors import InputError
from acrl.parts.buffers import FrameReplayBuffer, ReplayBuffer
from acrl.parts.encoders import is_image
from acrl.parts.heads import DiscreteQ


@dataclass
class DQNConfig(QLearningConfig, OffPolicyConfig):
    """DQN hyperparameters; defaults are Stable-Baselines3's DQN (v2), with Double DQN targets.

    Attributes (besides QLearningConfig's and OffPolicyConfig's; start_steps is SB3's learning_starts,
    train_freq and utd_ratio = gradient_steps / train_freq its update schedule):
        epsilon_start, epsilon_end: the exploration rate at step 0 and from epsilon_decay_steps on, in [0, 1].
        epsilon_decay_steps: environment steps over which epsilon falls linearly (0: epsilon_end
            from the start); online, at most total_steps, so that the schedule ends within the budget
            (offline, with a dataset, epsilon is not used).
    """

    env_id: str = "CartPole-v1"
    total_steps: int = 100_000
    learning_rate: float = 1e-4
    buffer_size: int = 1_000_000
    start_steps: int = 100
    batch_size: int = 32
    tau: float = 1.0
    gamma: float = 0.99
    train_freq: int = 4
    utd_ratio: float = 0.25
    target_update_interval: int = 2_500
    max_grad_norm: float | None = 10.0
    hidden_sizes: tuple[int, ...] = (64, 64)
    epsilon_start: float = 1.0
    epsilon_end: float = 0.05
    epsilon_decay_steps: int = 10_000

    def validate(self) -> None:
        """Raise `InputError` for values DQN cannot run with (see the attribute list)."""
        super().validate()
        in_unit_interval(self, "epsilon_start", "epsilon_end")
        if self.dataset is None:
            check_epsilon_decay(self.epsilon_decay_steps, self.total_steps)
        if self.buffer_size % self.n_envs:
            raise InputError(
                f"buffer_size ({self.buffer_size}) must be a multiple of n_envs ({self.n_envs}): each "
                "environment gets an equal part of the replay buffer."
            )


def check_epsilon_decay(decay_steps: int, total_steps: int) -> None:
    """Refuse an epsilon schedule that does not end within the budget.

    Raises:
        InputError: decay_steps < 0 or > total_steps, saying the rule.
    """
    if not 0 <= decay_steps <= total_steps:
        raise InputError(
            f"the epsilon schedule must end within the budget: 0 <= epsilon_decay_steps <= total_steps, got "
            f"epsilon_decay_steps={decay_steps} and total_steps={total_steps}. Lower it (--set "
            f"epsilon_decay_steps={total_steps // 10}) or train longer."
        )


def linear_epsilon(step: int, start: float, end: float, decay_steps: int) -> float:
    """epsilon after `step` environment steps: start + step / decay_steps * (end - start) until
    decay_steps, then `end` exactly (throughout when decay_steps is 0; Mnih et al. 2015, Extended Data Table 1)."""
    if step >= decay_steps:
        return end
    return start + step / decay_steps * (end - start)


class DQN(QLearningAgent):
    """DQN agent: `DQN(env="CartPole-v1", seed=0).learn(50_000)`; `DQN.from_preset("ALE/Pong-v5")`.

    `predict(obs)` takes the greedy action; with deterministic=False, epsilon-greedy at the current
    epsilon. Offline (`dataset=PATH`, vectors or frames), it learns from the dataset as DDPG does,
    `num_steps` counting updates: the BCQ papers' offline DQN baseline (Fujimoto et al. 2019b, Sec. 5).

    Raises:
        InputError: see `Agent` and `DQNConfig.validate`; a Box action space (naming the continuous
            algorithms); an observation space no encoder takes; at `learn`, an epsilon schedule that
            ends after the budget (online), or a frame replay buffer larger than the memory available.
    """

    algo: ClassVar[str] = "dqn"
    config_class: ClassVar[type[RunConfig]] = DQNConfig
    action_space_hint = (
        "DQN needs a Discrete action space, and acrl offers no discretised version of a Box one: for "
        "continuous actions use ddpg, td3 or sac."
    )
    config: DQNConfig

    def _make_net(self) -> nn.Module:
        """`DiscreteQ` for the observation space; frames stay uint8 / bool up to the network."""
        cfg = self.config
        net = DiscreteQ(self.observation_space, cfg.encoder, self.act_dim, cfg.hidden_sizes)
        cfg.encoder = net.encoder_name
        return net

    def _make_buffer(self) -> ReplayBuffer | FrameReplayBuffer:
        """A `FrameReplayBuffer` for frames (stacks of the vector env's `frame_stack` frames, 1 if it
        has none), else a `ReplayBuffer`; buffer_size transitions, n_envs rings or strides.

        Raises:
            InputError: a frame buffer larger than the memory available on the device.
        """
        cfg = self.config
        space = self.observation_space
        if is_image(space):
            stack = getattr(self.envs, "frame_stack", 1)
            return FrameReplayBuffer(cfg.buffer_size, space.shape, space.dtype, cfg.n_envs, stack, self.device)
        return ReplayBuffer(cfg.buffer_size, self.obs_dim, (), self.device, cfg.n_envs)

    # ----------------------------------------------------------------- acting
    def epsilon(self) -> float:
        """The exploration rate at the current step, `linear_epsilon(num_steps, ...)`."""
        cfg = self.config
        return linear_epsilon(self.num_steps, cfg.epsilon_start, cfg.epsilon_end, cfg.epsilon_decay_steps)

    def explore(self, obs: np.ndarray) -> np.ndarray:
        """Epsilon-greedy actions (n_envs,) int64 for raw observations (n_envs, *obs_shape), the random
        choices and actions from the agent's generator."""
        random = self.rng.random(len(obs)) < self.epsilon()
        actions = self.random_actions(len(obs))
        if not random.all():
            with torch.no_grad():
                greedy = self.greedy_actions(self.net, self.obs_normalizer(obs).to(self.device)).cpu().numpy()
            actions = np.where(random, actions, greedy)
        return actions

    def _policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        """Greedy actions (B,) int64; not deterministic: epsilon-greedy at the current epsilon (torch's generator)."""
        greedy = self.greedy_actions(self.net, obs)
        if deterministic:
            return greedy
        random = torch.rand(len(obs), device=obs.device) < self.epsilon()
        return torch.where(random, torch.randint_like(greedy, self.act_dim), greedy)

    # ----------------------------------------------------------------- learning
    def before_learning(self) -> None:
        """The off-policy core's checks and, online, that the epsilon schedule ends within the (new) budget.

        Raises:
            InputError: epsilon_decay_steps > total_steps (`check_epsilon_decay`); see `OffPolicyAgent`.
        """
        if self.envs is not None:
            check_epsilon_decay(self.config.epsilon_decay_steps, self.total_steps)
        super().before_learning()

    def iteration(self, max_steps: int) -> dict[str, float]:
        """The off-policy core's iteration; online, with rollout/epsilon, the exploration rate it ended at."""
        metrics = super().iteration(max_steps)
        if self.envs is not None:
            metrics["rollout/epsilon"] = self.epsilon()
        return metrics
