"""IQL: implicit Q-learning, offline from a fixed dataset.

Kostrikov, Nair, Levine 2022, "Offline Reinforcement Learning with Implicit Q-Learning", ICLR,
arXiv:2110.06169, Sec. 4 and Algorithm 1; the authors' code github.com/ikostrikov/implicit_q_learning.
IQL never evaluates Q at an action outside the dataset: a state value V(s) is fitted as an upper
expectile of the target critics' Q over the data's actions, the critics regress on r + gamma V(s'),
and the policy is extracted by advantage-weighted regression on the data's actions:

    V:       minimise E_(s, a) ~ D [L_2^tau(Q'(s, a) - V(s))],  Q' = min(Q1', Q2') the target critics,
             L_2^tau(u) = |tau - 1(u < 0)| u^2 (the expectile loss; tau 0.7)               (Eq. 5)
    Q:       minimise E_(s, a, r, s') ~ D [(r + gamma * not_done * V(s') - Q_i(s, a))^2], i = 1, 2  (Eq. 6)
    policy:  maximise E_(s, a) ~ D [min(exp(beta (Q'(s, a) - V(s))), 100) log pi(a | s)]    (Eq. 7)
    targets: theta' <- tau_target theta + (1 - tau_target) theta' after every update (0.005)

in the authors' order each update: V, then the policy with the new V, then the critics on the new V,
then the target critics. The policy is the authors' Gaussian: mean tanh(net(s)), a state-independent
log-std clamped to [-5, 2], no squashing of the distribution (log pi(a|s) is a diagonal Normal's
log-density of the data's action in [-1, 1]); acting deterministically takes the mean, otherwise a
sample clipped to [-1, 1]. The policy's Adam step size is cosine-decayed to 0 over the budget
(`cosine_decay`, the authors' `optax.cosine_decay_schedule`; `actor_lr_decay_steps` fixes its horizon
apart from the budget); V's and the critics' stay constant.

For locomotion the authors scale the rewards by 1000 / (max - min) of the dataset's episode returns
(train_offline.py `normalize`): `return_range` = 1000 does that (`prepare_dataset`; an episode ends
at a terminal or a timeout, and the data's last, unfinished one counts as one). Q and V are then in
scaled units, so the value estimates that evaluation reports are too; the returns are the
environment's. Correctness (docs/correctness.md items 1, 9, 18): not_done is 1 - terminated only; the
target critics start as exact copies; the expectile's weight tau goes to positive u = Q' - V; Q
regresses on V(s'), never on a maximum over actions; the weights are detached and clipped at 100.
Box actions and vector observations; `num_steps` counts gradient updates.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import ClassVar

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from acrl.algos.off_policy import OffPolicyAgent, TDConfig
from acrl.core.config import RunConfig, layer_widths, positive
from acrl.core.envs import require_finite_bounds
from acrl.core.errors import InputError
from acrl.parts.datasets import OfflineDataset
from acrl.parts.heads import bounded_log_std
from acrl.parts.nets import TwinQ, ValueNet, inplace_relu, mlp
from acrl.parts.optim import polyak_update
from acrl.parts.returns import td_target

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0
"""The clamp of the policy's log-std in the authors' code (learner.py log_std_min, policy.py LOG_STD_MAX)."""


@dataclass
class IQLConfig(TDConfig):
    """IQL hyperparameters; defaults are the paper's MuJoCo locomotion settings (Kostrikov et al. 2022,
    Appendix B; the authors' configs/mujoco_config.py).

    Attributes (besides TDConfig's: gamma 0.99; tau 0.005, the target critics' soft update):
        total_steps: gradient updates (1,000,000).
        batch_size: transitions per update (256).
        learning_rate: Adam step size of the policy (cosine-decayed to 0 over actor_lr_decay_steps), of V
            and of the critics (3e-4).
        actor_lr_decay_steps: the updates over which the policy's step size decays to 0 (None: the run's
            total_steps, the authors' max_steps; set it to split one schedule across sessions whose
            `learn` budgets grow).
        expectile: the expectile tau of V's loss, in (0, 1) (0.7; 0.5 fits V to the mean of Q, toward 1
            to the maximum over the data's actions).
        beta: the inverse temperature of the policy's weights exp(beta (Q - V)), >= 0 (3.0; 0 is
            behaviour cloning).
        max_weight: the weights' clip (100).
        hidden_sizes: hidden ReLU layers of the policy, V and each critic (256, 256).
        return_range: scale the dataset's rewards so that its best and worst episode returns lie this far
            apart (the authors' locomotion setting: 1000); None keeps them as they are.
    """

    total_steps: int = 1_000_000
    eval_freq: int = 5_000
    batch_size: int = 256
    learning_rate: float = 3e-4
    actor_lr_decay_steps: int | None = None
    expectile: float = 0.7
    beta: float = 3.0
    max_weight: float = 100.0
    hidden_sizes: tuple[int, ...] = (256, 256)
    return_range: float | None = None

    def validate(self) -> None:
        """Raise `InputError` for values IQL cannot run with (see the attribute list)."""
        super().validate()
        positive(self, "learning_rate", "actor_lr_decay_steps", "max_weight", "return_range")
        if not 0.0 < self.expectile < 1.0:
            raise InputError(
                f"expectile must lie in (0, 1) (0.5 fits V to the mean of Q; the paper's locomotion value is "
                f"0.7), got {self.expectile}."
            )
        if not self.beta >= 0:
            raise InputError(
                f"beta must be >= 0 (0: behaviour cloning; the paper's locomotion value is 3), got {self.beta}."
            )
        layer_widths(self, "hidden_sizes")


# --------------------------------------------------------------------------------------------
# The policy
# --------------------------------------------------------------------------------------------


class TanhMeanGaussianActor(nn.Module):
    """pi(a|s) = N(tanh(net(s)), diag(exp(2 log_std))), log_std a state-independent parameter clamped to
    [LOG_STD_MIN, LOG_STD_MAX] with a gradient on both sides (`bounded_log_std`): the authors' IQL policy
    (`NormalTanhPolicy` with state_dependent_std=False, tanh_squash_distribution=False).

    Args:
        obs_dim, act_dim: sizes; hidden_sizes: hidden ReLU layers of the mean's MLP.
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes: tuple[int, ...] = (256, 256)):
        super().__init__()
        self.net = mlp(obs_dim, hidden_sizes, act_dim, "relu")
        self.log_std = nn.Parameter(torch.zeros(act_dim))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """The mean tanh(net(s)), (B, act_dim) float32 in [-1, 1], for obs (B, obs_dim)."""
        return torch.tanh(self.net(obs).float())

    def log_prob(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """log pi(a|s) (B,) float32 of actions (B, act_dim) at obs (B, obs_dim): the Normal's log-density
        summed over the action dimensions."""
        log_std = bounded_log_std(self.log_std, LOG_STD_MIN, LOG_STD_MAX)
        z = (actions - self(obs)) / log_std.exp()
        return (-0.5 * z.square() - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)

    def sample(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        """Actions (B, act_dim) float32 in [-1, 1]: the mean, or a sample of pi clipped to [-1, 1]."""
        mean = self(obs)
        if deterministic:
            return mean
        std = self.log_std.clamp(LOG_STD_MIN, LOG_STD_MAX).exp()
        return (mean + std * torch.randn_like(mean)).clamp(-1.0, 1.0)


# --------------------------------------------------------------------------------------------
# Pure pieces: the losses and the schedule
# --------------------------------------------------------------------------------------------


def expectile_loss(u: torch.Tensor, expectile: float) -> torch.Tensor:
    """The expectile loss L_2^tau(u) = |tau - 1(u < 0)| u^2, elementwise (Kostrikov et al. 2022, Eq. 5):
    u (B,) float32 = Q'(s, a) - V(s); a positive u (V below Q') weighs tau, a negative one 1 - tau."""
    return torch.where(u < 0, 1.0 - expectile, expectile) * u.square()


def awr_weights(q: torch.Tensor, v: torch.Tensor, beta: float, max_weight: float) -> torch.Tensor:
    """The policy's weights min(exp(beta (Q - V)), max_weight), (B,) float32, detached (Eq. 7; the clip is
    the authors' code): q, v (B,) float32, Q'(s, a) of the data's actions and V(s)."""
    return torch.exp(beta * (q - v)).clamp(max=max_weight).detach()


def cosine_decay(learning_rate: float, step: int, total: int) -> float:
    """learning_rate * (1 + cos(pi * min(step, total) / total)) / 2: the policy's step size at update `step`
    (0 first) of `total` (optax.cosine_decay_schedule, the authors' policy schedule): learning_rate at
    the start, 0 at the end."""
    return learning_rate * 0.5 * (1.0 + math.cos(math.pi * min(step, total) / total))


def episode_returns(rewards: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The undiscounted return of each episode of a flat dataset, (E,) float64: rewards (N,) in order and
    ends (N,) bool, True at each episode's last transition (a terminal or a timeout); transitions after
    the last end make one more, unfinished, episode."""
    starts = np.concatenate([[0], np.flatnonzero(ends[:-1]) + 1])
    return np.add.reduceat(rewards.astype(np.float64), starts)


# --------------------------------------------------------------------------------------------
# The agent
# --------------------------------------------------------------------------------------------


class IQL(OffPolicyAgent):
    """IQL agent, offline: `IQL(dataset="hopper-medium.h5", seed=0).learn(100_000)`; `num_steps` counts updates.

    Without `env`, the environment is the dataset's `env_id` attribute; it is used to check the
    dataset's spaces and to evaluate. `predict` takes the policy's mean (deterministic) or a sample.

    Raises:
        InputError: see `Agent` and `IQLConfig.validate`; no dataset and no buffer; a Discrete action space
            (naming discrete CQL and discrete BCQ) or an unbounded Box; at `learn`, a dataset that is
            missing, corrupt or does not fit the environment's spaces, or, with return_range, whose episodes
            all have the same return.
    """

    algo: ClassVar[str] = "iql"
    config_class: ClassVar[type[RunConfig]] = IQLConfig
    action_kinds = (gym.spaces.Box,)
    action_space_hint = (
        "IQL needs continuous actions: for a Discrete action space use discrete CQL (DiscreteCQL, `acrl train "
        "discrete_cql`) or discrete BCQ (`acrl train discrete_bcq`)."
    )
    requires_data = True
    config: IQLConfig

    def _build_networks(self) -> None:
        cfg = self.config
        require_finite_bounds(self.action_space, "IQL's tanh policy mean")
        self.actor = TanhMeanGaussianActor(self.obs_dim, self.act_dim, cfg.hidden_sizes)
        self.critic = TwinQ(self.obs_dim, self.act_dim, cfg.hidden_sizes)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)  # an exact copy (item 9)
        self.value = ValueNet(self.obs_dim, cfg.hidden_sizes, "relu")
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=cfg.learning_rate, fused=True)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=cfg.learning_rate, fused=True)
        self.value_optimizer = torch.optim.Adam(self.value.parameters(), lr=cfg.learning_rate, fused=True)
        self.nets = {
            "actor": self.actor,
            "critic": self.critic,
            "critic_target": self.critic_target,
            "value": self.value,
        }
        self.optimizers = {
            "actor": self.actor_optimizer,
            "critic": self.critic_optimizer,
            "value": self.value_optimizer,
        }
        inplace_relu(*self.nets.values())

    def prepare_dataset(self, data: OfflineDataset) -> None:
        """With return_range, multiply the dataset's rewards by return_range / (max - min) of its episode returns
        (`episode_returns`; the authors' locomotion preprocessing), in place.

        Raises:
            InputError: every episode has the same return (nothing to scale by).
        """
        if self.config.return_range is None:
            return
        returns = episode_returns(data.rewards, data.terminals | data.timeouts)
        spread = returns.max() - returns.min()
        if not spread > 0:
            raise InputError(
                f"return_range scales rewards by the spread of the dataset's episode returns, but its {len(returns)} "
                f"episode(s) all return {returns[0]:.6g}: set return_range=null to keep the rewards as they are."
            )
        data.rewards = (data.rewards * (self.config.return_range / spread)).astype(np.float32)

    def _policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        return self.actor.sample(obs, deterministic)

    def _update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One update, in the authors' order: V (`expectile_loss` of Q' - V), the policy (-mean of `awr_weights`
        times log pi(a|s), on the new V, its step size `cosine_decay`ed), the critics (MSE to r + gamma *
        not_done * V(s'), the new V), then the target critics' soft update. Returns train/value_loss (V's),
        train/critic_loss, train/policy_loss, train/q_mean, train/v_mean, train/weight_mean, train/actor_lr."""
        cfg = self.config
        obs, actions = batch["observations"], batch["actions"]
        with torch.no_grad(), self.autocast():  # the forward passes in the run's precision; backward and steps outside
            q_target = torch.min(*self.critic_target(obs, actions))

        with self.autocast():
            v = self.value(obs)
            value_loss = expectile_loss(q_target - v, cfg.expectile).mean()
        self.value_optimizer.zero_grad(set_to_none=True)
        value_loss.backward()
        self.value_optimizer.step()

        with torch.no_grad(), self.autocast():
            weights = awr_weights(q_target, self.value(obs), cfg.beta, cfg.max_weight)
            target = td_target(batch["rewards"], batch["not_done"], self.value(batch["next_observations"]), cfg.gamma)
        with self.autocast():
            policy_loss = -(weights * self.actor.log_prob(obs, actions)).mean()
        actor_lr = cosine_decay(cfg.learning_rate, self.updates - 1, cfg.actor_lr_decay_steps or self.total_steps)
        for group in self.actor_optimizer.param_groups:
            group["lr"] = actor_lr
        self.actor_optimizer.zero_grad(set_to_none=True)
        policy_loss.backward()
        self.actor_optimizer.step()

        with self.autocast():
            q1, q2 = self.critic(obs, actions)
            critic_loss = ((q1 - target).square() + (q2 - target).square()).mean()
        self.critic_optimizer.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.critic_optimizer.step()

        polyak_update(self.critic_target, self.critic, cfg.tau)
        return {
            "train/value_loss": value_loss.item(),
            "train/critic_loss": critic_loss.item(),
            "train/policy_loss": policy_loss.item(),
            "train/q_mean": q1.detach().mean().item(),
            "train/v_mean": v.detach().mean().item(),
            "train/weight_mean": weights.mean().item(),
            "train/actor_lr": actor_lr,
        }

    def __repr__(self) -> str:
        return f"IQL(env_id={self.config.env_id!r}, dataset={self.config.dataset!r}, updates={self.num_steps})"
