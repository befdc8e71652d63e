"""DQN with Double DQN targets (Mnih et al. 2015, "Human-level control through deep reinforcement
learning", Algorithm 1; van Hasselt, Guez, Silver 2016, "Deep Reinforcement Learning with Double
Q-learning", Eq. 4), for Discrete action spaces, on vectors or image frames, and for Box action
spaces discretised independently per dimension (`action_bins`).

    acting:  epsilon-greedy: a uniformly random action with probability epsilon(t), else
             argmax_a Q(s, a); epsilon(t) falls linearly from epsilon_start to epsilon_end over the
             first epsilon_decay_steps environment steps t, then stays (Mnih et al. 2015, Extended
             Data Table 1: 1 to 0.1 over 1M frames); uniformly random actions for the first
             start_steps transitions ("replay start size")
    target:  y = R + gamma^k * (1 - terminated) * Q'(s', argmax_a Q(s', a))  (Double DQN; n-step
             windows of k <= n_step transitions, Hessel et al. 2018, Sec. 3); with double_q=false
             the Nature DQN's y = R + gamma^k * (1 - terminated) * max_a Q'(s', a) (Mnih et al.
             2015, Algorithm 1), as SB3's DQN and the MinAtar paper's take it
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

A Box action space of J dimensions takes `action_bins` = K: the action adapter
`acrl.core.envs.DiscretizedActions` discretises each dimension on its own into K sub-actions evenly
spaced from its low to its high bound, so the agent acts with J indices and the network has J * K
outputs, Q_j(s, k) for output j * K + k, and Q(s, a) = (1/J) sum_j Q_j(s, a_j) (the Q-learning core's
`action_value`): the DQN baseline of Fujimoto, Meger, Precup 2019 ("Off-Policy Deep Reinforcement
Learning without Exploration", Supp. D: 10 sub-actions per dimension, 10 J outputs, each sub-action
taken updated toward the target of the mean). The greedy action takes each dimension's best
sub-action; an epsilon-greedy random action a random sub-action in every dimension. The replay
buffer and datasets keep continuous actions in the Box's policy units; a batch's actions go to their
nearest sub-actions (`DiscretizedActions.from_buffer`) for the update, so the DQN learns from any
continuous dataset (the extrapolation experiment's buffers) and reports value estimates at
evaluation as the continuous agents do. Nothing below asks which kind of action space it has.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from acrl.algos.off_policy import OffPolicyConfig
from acrl.algos.q_learning import QLearningAgent, QLearningConfig, double_q_target
from acrl.core.config import RunConfig, in_unit_interval
from acrl.core.envs import ActionAdapter, DiscretizedActions
from acrl.core.errors import InputError
from acrl.parts.heads import DiscreteQ


@dataclass
class DQNConfig(QLearningConfig, OffPolicyConfig):
    """DQN hyperparameters; defaults are Stable-Baselines3's DQN (v2), with Double DQN targets.

    Attributes (besides QLearningConfig's and OffPolicyConfig's; start_steps is SB3's learning_starts,
    train_freq and utd_ratio = gradient_steps / train_freq its update schedule):
        epsilon_start, epsilon_end: the exploration rate at step 0 and from epsilon_decay_steps on, in [0, 1].
        epsilon_decay_steps: environment steps over which epsilon falls linearly (0: epsilon_end
            from the start); online, at most total_steps, so that the schedule ends within the budget
            (`check_epsilon_decay`: with the config, and again when learning starts on a new budget;
            offline, with a dataset, epsilon is not used).
        action_bins: Box action spaces only (required there, refused for a Discrete one): sub-actions
            per dimension, >= 2, evenly spaced from low to high with both bounds included; each
            dimension is discretised independently (`DiscretizedActions`; Fujimoto et al. 2019, Supp. D: 10).
        double_q: Double DQN targets, a' chosen by the online network and valued by the target network
            (van Hasselt et al. 2016, Eq. 4); false: the target network's max over a' (Mnih et al. 2015),
            one forward pass fewer per update.
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
    action_bins: int | None = None
    double_q: bool = True

    def validate(self) -> None:
        """Raise `InputError` for values DQN cannot run with (see the attribute list)."""
        super().validate()
        in_unit_interval(self, "epsilon_start", "epsilon_end")
        if self.epsilon_decay_steps < 0:
            raise InputError(f"epsilon_decay_steps must be >= 0, got {self.epsilon_decay_steps}.")
        if self.dataset is None:  # collecting: the schedule must end within the budget
            check_epsilon_decay(self.epsilon_decay_steps, self.total_steps)
        if self.action_bins is not None and self.action_bins < 2:
            raise InputError(
                f"action_bins must be >= 2 (sub-actions per action dimension, from its low to its high bound), "
                f"got {self.action_bins}."
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
    `DQN("Hopper-v5", action_bins=10)` discretises a Box action space (see the module docstring).

    Raises:
        InputError: see `Agent` and `DQNConfig.validate`; a Box action space without action_bins
            (naming it and the continuous algorithms), or with an infinite bound or image
            observations; action_bins for a Discrete space; an observation space no encoder takes; a
            frame replay buffer larger than the memory available; at `learn`, an online epsilon
            schedule that ends after the budget.
    """

    algo: ClassVar[str] = "dqn"
    config_class: ClassVar[type[RunConfig]] = DQNConfig
    action_kinds = (gym.spaces.Discrete, gym.spaces.Box)
    config: DQNConfig

    def make_action_adapter(self) -> ActionAdapter:
        """`DiscretizedActions` for a Box action space (each dimension split into action_bins sub-actions), the
        plain adapter for a Discrete one; decided before the config is validated, so the action space is
        refused for what it is whatever else the config says.

        Raises:
            InputError: a Box action space without action_bins (what to set, and the continuous
                algorithms), or with an infinite bound; action_bins for a Discrete action space.
        """
        cfg = self.config
        if isinstance(self.action_space, gym.spaces.Box):
            if cfg.action_bins is None:
                what = (
                    "DQN needs discrete actions; this environment has the continuous {space}. Discretise it: "
                    "{option} splits each dimension independently into N sub-actions from its low to its high "
                    "bound (the BCQ paper's DQN baseline used 10), or use an algorithm for continuous "
                    "actions: ddpg, td3 or sac (bcq offline)."
                )
                raise InputError(
                    what.format(space=self.action_space, option="action_bins=N"),
                    cli=what.format(space=self.action_space, option="--set action_bins=N"),
                )
            return DiscretizedActions(self.action_space, cfg.action_bins, "DQN's action_bins")
        if cfg.action_bins is not None:
            raise InputError(
                f"action_bins discretises a Box action space; this environment's {self.action_space} is "
                "already discrete: drop action_bins.",
                cli=f"action_bins discretises a Box action space; this environment's {self.action_space} is "
                "already discrete: drop --set action_bins.",
            )
        return super().make_action_adapter()

    def _make_net(self) -> nn.Module:
        """`DiscreteQ` for the observation space, one output per entry of the action adapter's table: per
        action (Discrete), per sub-action of each dimension (J * action_bins, a Box, `make_action_adapter`);
        frames stay uint8 / bool up to the network."""
        cfg = self.config
        adapter = self.action_adapter
        net = DiscreteQ(
            self.observation_space, cfg.encoder, adapter.n * math.prod(adapter.shape), cfg.hidden_sizes, cfg.channels
        )
        cfg.encoder = net.encoder_name
        return net

    @torch.no_grad()
    def compute_target(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The Q-learning core's Double DQN target (B,) float32 with double_q; without, the target network's
        max over a' at s', max_a Q'(s', a) (Mnih et al. 2015, Algorithm 1; for a discretised Box the mean of
        each dimension's max, Fujimoto et al. 2019, Supp. D)."""
        if self.config.double_q:
            return super().compute_target(batch)
        next_q = self.q_values(self.net_target, batch["next_observations"])
        return double_q_target(
            next_q.argmax(dim=-1),
            next_q,
            batch["rewards"],
            batch["not_done"],
            batch.get("discount", self.config.gamma),
        )

    # ----------------------------------------------------------------- acting
    def epsilon(self) -> float:
        """The exploration rate at the current step, `linear_epsilon(num_steps, ...)`."""
        cfg = self.config
        return linear_epsilon(self.num_steps, cfg.epsilon_start, cfg.epsilon_end, cfg.epsilon_decay_steps)

    def explore(self, obs: np.ndarray) -> np.ndarray:
        """Epsilon-greedy actions for raw observations (n_envs, *obs_shape), indices (n_envs, *shape) int64 of
        the action adapter's table: (n_envs,), or (n_envs, J) sub-actions of a discretised Box; the random
        choices and actions from the agent's generator."""
        random = self.rng.random(len(obs)) < self.epsilon()
        actions = self.random_actions(len(obs))
        if not random.all():
            with torch.no_grad():
                greedy = self.greedy_actions(self.net, self.obs_normalizer(obs).to(self.device)).cpu().numpy()
            actions = np.where(random.reshape(-1, *(1,) * (actions.ndim - 1)), actions, greedy)
        return actions

    def _policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        """Greedy actions, (B, *shape) int64 indices; not deterministic: epsilon-greedy at the current epsilon
        (torch's generator)."""
        greedy = self.greedy_actions(self.net, obs)
        if not deterministic:
            random = torch.rand(len(obs), device=obs.device) < self.epsilon()
            greedy = torch.where(
                random.view(-1, *(1,) * (greedy.ndim - 1)), torch.randint_like(greedy, self.action_adapter.n), greedy
            )
        return greedy

    # ----------------------------------------------------------------- learning
    def check_exploration(self) -> None:
        """Before collecting: the off-policy core's warning, and that the epsilon schedule ends within the
        (new) budget.

        Raises:
            InputError: epsilon_decay_steps > total_steps (`check_epsilon_decay`).
        """
        check_epsilon_decay(self.config.epsilon_decay_steps, self.total_steps)
        super().check_exploration()

    def exploration_metrics(self) -> dict[str, float]:
        """rollout/epsilon, the exploration rate a collecting iteration ended at."""
        return {"rollout/epsilon": self.epsilon()}
