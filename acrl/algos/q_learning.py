"""The Q-learning core that DQN, discrete BCQ and discrete CQL share: a network Q(s, .) over Discrete actions, its
target network, the Double DQN target and the Huber TD update.

Both algorithms learn Q(s, a) for every action a of a Discrete space from replayed transitions:

    target:   y = R + gamma^k * not_done * Q'(s', a'),  a' = the online network's greedy action at s'
              (Double DQN: van Hasselt, Guez, Silver 2016, Eq. 4; k = 1 and R = r but for n-step returns)
    loss:     Huber(Q(s, a) - y)   (the error clipping of Mnih et al. 2015, Methods: a squared error
              within [-1, 1], an absolute one outside)
    target network: every `target_update_interval` updates, theta' <- tau * theta + (1 - tau) * theta'
              (tau = 1: the periodic copy of Mnih et al. 2015; tau < 1 every update: a soft update)

The same holds for a Box action space discretised independently per dimension (DQN's
`action_bins`, the action adapter `acrl.core.envs.DiscretizedActions`; the DQN baseline of Fujimoto,
Meger, Precup 2019, Supp. D): Q(s, .) is then a table (B, J, K) of sub-action values Q_j(s, k) for J
dimensions of K bins each, an action is J indices, the greedy action the argmax of each dimension,
Q(s, a) = (1/J) sum_j Q_j(s, a_j), the target y = R + gamma^k * not_done * (1/J) sum_j Q'_j(s', a'_j),
and the loss the mean over dimensions of Huber(Q_j(s, a_j) - y): every sub-action taken is moved
toward the one target. The code reads the table's shape from the action adapter (`shape`, `n`): a
Discrete space is the table (B, n) of actions with no dimension, so nothing here asks which it is.

What each algorithm adds is which actions are greedy (`greedy_actions`: DQN's argmax of Q, discrete
BCQ's argmax over the actions its imitation network allows), which network computes Q (`q_values`),
any loss besides the TD loss (`auxiliary_loss`: discrete BCQ's imitation, discrete CQL's penalty) and how
it collects data (DQN: epsilon-greedy online; discrete BCQ and discrete CQL: none, offline). The rest is
here: the networks and their target copy (an exact copy at the start, docs/correctness.md items 9 and
13), the optimizer, the gradient step with optional norm clipping, the target schedule, n-step sampling,
greedy and uniformly random actions, and the value estimates that evaluation reports (`q_value`:
Q(s, a) of the online network, as `OffPolicyAgent.evaluate` reads a critic's).
not_done is 1 - terminated only, so a transition cut by a time limit still bootstraps (item 1).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from acrl.algos.off_policy import OffPolicyAgent, TDConfig
from acrl.core.config import layer_widths, positive
from acrl.core.errors import InputError
from acrl.parts.nets import inplace_relu
from acrl.parts.optim import polyak_update


@dataclass
class QLearningConfig(TDConfig):
    """Settings of the Q-learning core (DQN, discrete BCQ).

    Attributes (besides TDConfig's; tau is the weight of each target update, 1 copies):
        learning_rate: the optimizer's step size.
        hidden_sizes: hidden ReLU layers of the Q-network's MLP (vector observations).
        target_update_interval: gradient updates between target network updates (1: every update).
            Gradient updates, not environment steps: Stable-Baselines3's (and rl-baselines3-zoo's,
            CleanRL's) target update interval counts environment steps. S such steps with G gradient
            steps every train_freq F steps hold S * G / F updates (CleanRL Atari: 1,000 steps, an
            update every 4: 250); where S < F the copies fall between the bursts of G updates, one per
            burst: G (zoo CartPole: S = 10, G = 128, F = 256: 128). The presets (acrl/presets/dqn.yaml)
            hold the converted values, each source saying which it took.
        n_step: transitions summed into each target (1: one-step targets; `n_step_returns`).
        max_grad_norm: clip the gradient's global norm to this (None: no clipping).
        optimizer: "adam" or "rmsprop" (centered RMSProp, Graves 2013, as DQN's and MinAtar's DQN).
        rmsprop_alpha: RMSProp's squared-gradient decay; optimizer_eps: epsilon of either optimizer
            (torch's form, outside the square root).
        encoder: the observation encoder, "auto" ("mlp" for vectors, "nature" for frames of 36 x 36
            or more, else "minatar") or one of "mlp", "nature", "a3c", "minatar"
            (`acrl.parts.encoders.make_encoder`, which refuses another); config.yaml records the one used.
    """

    learning_rate: float = 1e-4
    hidden_sizes: tuple[int, ...] = (256, 256)
    target_update_interval: int = 1
    n_step: int = 1
    max_grad_norm: float | None = None
    optimizer: str = "adam"
    rmsprop_alpha: float = 0.95
    optimizer_eps: float = 1e-8
    encoder: str = "auto"

    def validate(self) -> None:
        """Raise `InputError` for values the Q-learning core cannot run with (see the attribute list)."""
        super().validate()
        positive(self, "learning_rate", "target_update_interval", "n_step", "max_grad_norm")
        if self.optimizer not in ("adam", "rmsprop"):
            raise InputError(f"optimizer must be 'adam' or 'rmsprop', got {self.optimizer!r}.")
        if not 0 <= self.rmsprop_alpha < 1 or self.optimizer_eps < 0:
            raise InputError(
                f"rmsprop_alpha must lie in [0, 1) and optimizer_eps be >= 0, got {self.rmsprop_alpha} and "
                f"{self.optimizer_eps}."
            )
        layer_widths(self, "hidden_sizes")


@dataclass
class OfflineQLearningConfig(QLearningConfig):
    """The learning settings of the discrete offline learners, discrete BCQ and discrete CQL, so that the two
    compare on the same footing: discrete BCQ's authors' non-Atari settings (sfujim/BCQ discrete_BCQ/main.py).

    Attributes (besides QLearningConfig's: Adam, 256-256 ReLU layers, polyak tau 0.005 every update, no
    clipping):
        env_id: the environment used for evaluation (default: the dataset's `env_id`).
        total_steps: gradient updates (50,000).
        batch_size: transitions per update (64).
        learning_rate: Adam step size (3e-4).
    """

    env_id: str = "CartPole-v1"
    total_steps: int = 50_000
    batch_size: int = 64
    learning_rate: float = 3e-4


@torch.no_grad()
def double_q_target(
    next_actions: torch.Tensor,
    next_q_target: torch.Tensor,
    rewards: torch.Tensor,
    not_done: torch.Tensor,
    discount: torch.Tensor | float,
) -> torch.Tensor:
    """The Double DQN target y = R + discount * not_done * Q'(s', a') (van Hasselt et al. 2016, Eq. 4).

    With independently discretised action dimensions, Q'(s', a') is the mean over the J dimensions
    of the target network's sub-action values Q'_j(s', a'_j) (Fujimoto et al. 2019, Supp. D).

    Args:
        next_actions: (B,) int64, a' chosen by the online network at s' (its argmax, or discrete
            BCQ's allowed argmax); discretised dimensions: (B, J) int64, a sub-action per dimension.
        next_q_target: (B, n_actions) float32, the target network's Q(s', .), which values a';
            discretised dimensions: (B, J, K) float32, its sub-action values.
        rewards: (B,) float32 (n-step: the discounted sum over the window).
        not_done: (B,) float32, 1 - terminated (a truncation bootstraps).
        discount: gamma, or (B,) float32 gamma^k for n-step windows of k transitions.
    Returns:
        (B,) float32 targets.
    """
    return rewards + discount * not_done * action_value(next_q_target, next_actions)


def action_value(q: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """Q(s, a) (B,) float32 read from a table of values, the mean over the action's dimensions of the
    values of its sub-actions: q (B, n_actions) and actions (B,) int64 give q[b, a_b] (no dimension, a
    mean of one); independently discretised dimensions, q (B, J, K) and actions (B, J) int64, give
    (1/J) sum_j q[b, j, a_bj] (Fujimoto et al. 2019, Supp. D)."""
    taken = q.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    return taken.reshape(len(taken), -1).mean(dim=1)


class QLearningAgent(OffPolicyAgent):
    """Base of DQN, discrete BCQ and discrete CQL (see the module docstring): the online network `net` and its target
    `net_target` (checkpoint keys "net" and "net_target"), one optimizer, the Huber TD update.

    A subclass provides `_make_net` and, where it differs from DQN's, `q_values`, `greedy_actions`
    and `auxiliary_loss`; to learn online, `explore`. `num_steps` counts environment steps online,
    gradient updates offline. Observations are vectors or image frames (uint8 / bool, kept so up to
    the network). Actions are indices into the action adapter's table (`ActionAdapter.shape`, `n`):
    (B,) int64 for a Discrete space, (B, J) int64 for a discretised Box (`DiscretizedActions`).
    """

    config: QLearningConfig
    action_kinds: ClassVar[tuple[type, ...]] = (gym.spaces.Discrete,)
    image_observations = True

    # ----------------------------------------------------------------- what a subclass provides
    def _make_net(self) -> nn.Module:
        """The online network (its target is a deep copy)."""
        raise NotImplementedError

    def q_values(self, net: nn.Module, obs: torch.Tensor) -> torch.Tensor:
        """Q(s, .) float32 of `net` (the online or the target network) at obs (B, *obs_shape), its outputs as
        the action adapter's table (B, *shape, n): (B, n_actions) for a Discrete space, (B, J, K) sub-action
        values for independently discretised dimensions (output j * K + k is Q_j(s, k))."""
        adapter = self.action_adapter
        return net(obs).view(len(obs), *adapter.shape, adapter.n)

    def greedy_actions(self, net: nn.Module, obs: torch.Tensor) -> torch.Tensor:
        """The greedy actions (B,) int64 of `net` at obs (B, *obs_shape): argmax_a Q(s, a); for discretised
        dimensions (B, J) int64, the argmax of each dimension, which maximises their mean."""
        return self.q_values(net, obs).argmax(dim=-1)

    def auxiliary_loss(
        self, obs: torch.Tensor, actions: torch.Tensor, q: torch.Tensor
    ) -> tuple[torch.Tensor | None, dict[str, Any]]:
        """A loss added to the TD loss (None: none) and its train/ metrics, from the batch's
        observations (B, *obs_shape) and actions (B,) int64, and the online network's Q(s, .) (`q_values`,
        with its gradient) at them."""
        return None, {}

    @property
    def has_q_values(self) -> bool:
        """True: evaluation reports the Q-network's value estimates (`OffPolicyAgent.evaluate`)."""
        return True

    def q_value(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Q(s, a) (B,) float32 of the online network (`q_values`) at obs (B, *obs_shape) and actions (B,) int64,
        or (B, J) int64 sub-action indices of discretised dimensions (`action_value`), in policy units."""
        return action_value(self.q_values(self.net, obs), actions.long())

    # ----------------------------------------------------------------- networks
    def _build_networks(self) -> None:
        cfg = self.config
        self.net = self._make_net()
        self.net_target = copy.deepcopy(self.net).requires_grad_(False)  # an exact copy (items 9, 13)
        params = self.net.parameters()
        if cfg.optimizer == "adam":
            self.optimizer = torch.optim.Adam(params, lr=cfg.learning_rate, eps=cfg.optimizer_eps, fused=True)
        else:
            self.optimizer = torch.optim.RMSprop(
                params, lr=cfg.learning_rate, alpha=cfg.rmsprop_alpha, eps=cfg.optimizer_eps, centered=True
            )
        self.nets = {"net": self.net, "net_target": self.net_target}
        self.optimizers = {"optimizer": self.optimizer}
        inplace_relu(*self.nets.values())

    def _policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        return self.greedy_actions(self.net, obs)

    def random_actions(self, n: int) -> np.ndarray:
        """n uniformly random actions from the agent's generator, (n, *shape) int64 indices of the action
        adapter's table: (n,) for a Discrete space, (n, J) sub-actions for a discretised Box."""
        adapter = self.action_adapter
        return self.rng.integers(0, adapter.n, (n, *adapter.shape))

    # ----------------------------------------------------------------- learning
    def sample_batch(self) -> dict[str, torch.Tensor]:
        """A minibatch with n_step-step returns and its discount gamma^k (`ReplayBuffer.sample`), its actions
        as indices (`ActionAdapter.from_buffer`: a discretised Box's nearest sub-actions)."""
        cfg = self.config
        batch = self.buffer.sample(cfg.batch_size, self.rng, cfg.n_step, cfg.gamma)
        batch["actions"] = self.action_adapter.from_buffer(batch["actions"])
        return batch

    @torch.no_grad()
    def compute_target(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """`double_q_target` (B,) for a batch of `sample_batch`: the online network's greedy action at
        s' (next_observations), valued by the target network; discount gamma for a batch without one
        (a `ReplayBuffer.sample` without gamma: one-step transitions)."""
        next_obs = batch["next_observations"]
        return double_q_target(
            self.greedy_actions(self.net, next_obs),
            self.q_values(self.net_target, next_obs),
            batch["rewards"],
            batch["not_done"],
            batch.get("discount", self.config.gamma),
        )

    def _update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One gradient update: Huber(Q(s, a), `compute_target`) plus `auxiliary_loss`, the gradient
        norm clipped to max_grad_norm, then the target update when `updates` reaches a multiple of
        target_update_interval. Returns train/value_loss, train/q_mean and the auxiliary metrics.

        The batch's actions are indices, (B,) int64, or (B, J) int64 for discretised dimensions, whose
        loss is the mean over batch and dimensions of Huber(Q_j(s, a_j) - y), one target y per transition.
        """
        cfg = self.config
        obs, actions = batch["observations"], batch["actions"]
        with self.autocast():  # the forward passes in the run's precision; backward and step outside
            target = self.compute_target(batch)
            q = self.q_values(self.net, obs)
            q_taken = q.gather(-1, actions.unsqueeze(-1)).squeeze(-1)  # (B,) or (B, J)
            value_loss = F.smooth_l1_loss(q_taken, target.view(-1, *(1,) * (q_taken.ndim - 1)).expand_as(q_taken))
            extra, metrics = self.auxiliary_loss(obs, actions, q)
        loss = value_loss if extra is None else value_loss + extra
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.max_grad_norm is not None:
            nn.utils.clip_grad_norm_(self.net.parameters(), cfg.max_grad_norm)
        self.optimizer.step()
        if self.updates % cfg.target_update_interval == 0:
            polyak_update(self.net_target, self.net, cfg.tau)  # tau = 1: an exact copy
        return {"train/value_loss": value_loss.item(), "train/q_mean": q_taken.detach().mean().item(), **metrics}
