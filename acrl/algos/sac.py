"""SAC: soft actor-critic (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications",
arXiv:1812.05905, Algorithm 1), with twin critics and automatic entropy tuning.

A stochastic policy pi(a|s) = tanh(N(mu(s), sigma(s))) maximises return plus alpha times entropy:

    critic:  minimise 1/2 (Q_i(s, a) - y)^2 for i = 1, 2, with the soft target               (Eq. 3, 5, 6)
             y = r + gamma * not_done * (min(Q1', Q2')(s', a') - alpha * log pi(a'|s')),  a' ~ pi(.|s')
    actor:   minimise alpha * log pi(a|s) - min(Q1, Q2)(s, a), a = tanh(mu + sigma * eps)     (Eq. 7, 8, 9)
    alpha:   minimise -log_alpha * (log pi(a|s) + target_entropy), target -dim(A)            (Sec. 5, Eq. 18)
    targets: theta' <- tau * theta + (1 - tau) * theta' after every update                  (Algorithm 1)

The squashing's change of variables, log pi(a|s) = log N(u) - sum_i log(1 - tanh(u_i)^2), is
Appendix C; `acrl.parts.heads.squashed_log_prob` writes log(1 - tanh(u)^2) as 2 (log 2 - u - softplus(-2u)),
finite at any u. Like SB3 and the authors' code, alpha is learned as log_alpha (positive by
construction; the gradient has Eq. 18's sign) and all three optimizers share one learning rate.

Collection, random start steps, the replay buffer and offline learning are the off-policy core's
(`acrl.algos.off_policy`): with `dataset=PATH` (or `buffer=`) SAC learns from fixed data only,
`num_steps` counts gradient updates, and it suffers the same extrapolation error as DDPG there.
Actions are in policy units [-1, 1] (tanh's range); `acrl.core.envs.ActionAdapter` maps them to
the environment's Box. Sampling uses torch's global generator, seeded and checkpointed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from acrl.algos.off_policy import OffPolicyAgent, OffPolicyConfig
from acrl.core.config import RunConfig, positive
from acrl.core.envs import require_finite_bounds
from acrl.parts.heads import SquashedGaussianHead
from acrl.parts.nets import TwinQ, mlp_encoder
from acrl.parts.optim import hard_update, polyak_update
from acrl.parts.returns import td_target

LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0
"""log-std clamp of the authors' code (haarnoja/sac) and SB3: -20 is only a numerical floor (the
entropy target keeps sigma far above it), 2 stops sigma (7.4) where tanh is saturated anyway."""


def squashed_gaussian_actor(
    obs_dim: int, act_dim: int, hidden_sizes: tuple[int, ...] = (256, 256)
) -> SquashedGaussianHead:
    """SAC's actor pi(a|s) = tanh(N(mu(s), diag(sigma(s)^2))) (Sec. 4.2): a ReLU `mlp_encoder`
    (hidden_sizes, orthogonal init) and a `SquashedGaussianHead` whose output layer holds the
    act_dim means and the act_dim log-stds, clamped to [LOG_STD_MIN, LOG_STD_MAX]."""
    encoder = mlp_encoder(obs_dim, hidden_sizes, "relu")
    return SquashedGaussianHead(encoder, (obs_dim, *hidden_sizes)[-1], act_dim, LOG_STD_MIN, LOG_STD_MAX)


@dataclass
class SACConfig(OffPolicyConfig):
    """SAC hyperparameters; defaults from Haarnoja et al. 2018 (arXiv:1812.05905), Appendix D, Table 1.

    Attributes (besides OffPolicyConfig's, set here to Table 1's: Adam learning_rate 3e-4 for the
    actor, the critics and alpha, batch 256, gamma 0.99, tau 0.005, buffer 1e6, 256-256 ReLU, one
    update per step; start_steps 10000 as rl-baselines3-zoo's MuJoCo `learning_starts`):
        ent_coef: a fixed temperature alpha > 0, or None (default) to tune alpha by Eq. 18.
        target_entropy: the entropy target in nats when alpha is tuned; None means -dim(A).
        init_ent_coef: alpha at the start when tuned (> 0; 1.0 as SB3's "auto").
    """

    learning_rate: float = 3e-4
    batch_size: int = 256
    start_steps: int = 10_000
    hidden_sizes: tuple[int, ...] = (256, 256)
    ent_coef: float | None = None
    target_entropy: float | None = None
    init_ent_coef: float = 1.0

    def validate(self) -> None:
        """Raise `InputError` for values SAC cannot run with (see the attribute list)."""
        super().validate()
        positive(self, "ent_coef", "init_ent_coef")


class Temperature(nn.Module):
    """The entropy temperature alpha = exp(log_alpha), a module so checkpoints keep log_alpha."""

    def __init__(self, alpha: float):
        super().__init__()
        self.log_alpha = nn.Parameter(torch.tensor(math.log(alpha), dtype=torch.float32))

    def forward(self) -> torch.Tensor:
        """alpha, a 0-d float32 tensor (differentiable in log_alpha)."""
        return self.log_alpha.exp()


class SAC(OffPolicyAgent):
    """SAC agent: `SAC(env="Pendulum-v1", seed=0).learn(20_000)`; offline `SAC(dataset="d.hdf5").learn(N)`.

    Raises:
        InputError: see `Agent` and `SACConfig.validate`; a Discrete or unbounded action space
            (use DQN, PPO or A3C online, or discrete BCQ offline); at `learn`, a dataset that is
            missing, corrupt or does not fit the environment's spaces.
    """

    algo: ClassVar[str] = "sac"
    config_class: ClassVar[type[RunConfig]] = SACConfig
    action_kinds = (gym.spaces.Box,)
    action_space_hint = (
        "It needs continuous actions: for a Discrete action space use DQN, PPO or A3C (online) or "
        "discrete BCQ (discrete_bcq, offline)."
    )
    config: SACConfig

    def _build_networks(self) -> None:
        self._build_sac(self.config.learning_rate)

    def _build_sac(self, actor_learning_rate: float) -> None:
        """The tanh-squashed actor, the twin critics and their targets (exact copies), the temperature, and their
        Adam optimizers: the critics at the config's learning_rate, the actor and the temperature (when tuned) at
        `actor_learning_rate` (SAC: the same, Table 1; CQL: slower)."""
        cfg = self.config
        require_finite_bounds(self.action_space, f"{self.algo.upper()}'s tanh-squashed actor")
        self.actor = squashed_gaussian_actor(self.obs_dim, self.act_dim, cfg.hidden_sizes)
        self.critic = TwinQ(self.obs_dim, self.act_dim, cfg.hidden_sizes)
        self.critic_target = TwinQ(self.obs_dim, self.act_dim, cfg.hidden_sizes)
        hard_update(self.critic_target, self.critic)  # exact copies at the start (docs/correctness.md item 9)
        self.critic_target.requires_grad_(False)
        self.auto_alpha = cfg.ent_coef is None
        self.temperature = Temperature(cfg.init_ent_coef if self.auto_alpha else cfg.ent_coef)
        self.temperature.requires_grad_(self.auto_alpha)
        self.target_entropy = float(-self.act_dim if cfg.target_entropy is None else cfg.target_entropy)
        self.nets = {
            "actor": self.actor,
            "critic": self.critic,
            "critic_target": self.critic_target,
            "temperature": self.temperature,
        }
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=actor_learning_rate, fused=True)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=cfg.learning_rate, fused=True)
        self.optimizers = {"actor": self.actor_optimizer, "critic": self.critic_optimizer}
        if self.auto_alpha:
            self.alpha_optimizer = torch.optim.Adam(self.temperature.parameters(), lr=actor_learning_rate)
            self.optimizers["temperature"] = self.alpha_optimizer

    # ----------------------------------------------------------------- acting
    def _policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        return self.actor.sample(obs, deterministic)[0]

    @torch.no_grad()
    def explore(self, obs: np.ndarray) -> np.ndarray:
        """a ~ pi(.|s): (n_envs, act_dim) float32 in [-1, 1] for raw observations (n_envs, obs_dim)."""
        return self.actor.sample(torch.as_tensor(obs, dtype=torch.float32, device=self.device))[0].cpu().numpy()

    # ----------------------------------------------------------------- learning
    @torch.no_grad()
    def compute_target(self, batch: dict[str, torch.Tensor], alpha: torch.Tensor) -> torch.Tensor:
        """Soft TD targets (B,) float32: r + gamma * not_done * (min(Q1', Q2')(s', a') - alpha log pi(a'|s')).

        a' ~ pi(.|s') from the current actor (Eq. 6, the soft value of Eq. 3); alpha a 0-d tensor.
        not_done = 1 - terminated, so a time-limit cut bootstraps (docs/correctness.md item 1).
        """
        next_obs = batch["next_observations"]
        next_actions, next_log_pi = self.actor.sample(next_obs)
        next_v = torch.min(*self.critic_target(next_obs, next_actions)) - alpha * next_log_pi
        return td_target(batch["rewards"], batch["not_done"], next_v, self.config.gamma)

    def alpha_loss(self, log_pi: torch.Tensor) -> torch.Tensor:
        """-mean(log_alpha * (log pi + target_entropy)) for log pi (B,) of fresh actions, detached (Eq. 18).

        Its gradient in log_alpha is -mean(log pi) - target_entropy = entropy - target: alpha
        rises while the policy's entropy is below the target and falls above it.
        """
        return -(self.temperature.log_alpha * (log_pi + self.target_entropy).detach()).mean()

    def policy_step(self, obs: torch.Tensor, alpha: torch.Tensor) -> dict[str, float]:
        """The actor's Adam step on E_s [alpha log pi(a|s) - min(Q1, Q2)(s, a)], a ~ pi(.|s) (Eq. 7, 9, on the
        critics as they are), then alpha's on `alpha_loss` when tuned (Eq. 18); obs (B, obs_dim) float32, alpha a
        0-d tensor. Keys: train/policy_loss, train/entropy (-mean log pi), train/ent_coef, train/ent_coef_loss
        when alpha is tuned."""
        with self.autocast():
            actions, log_pi = self.actor.sample(obs)
            policy_loss = (alpha * log_pi - torch.min(*self.critic(obs, actions))).mean()
        self.actor_optimizer.zero_grad(set_to_none=True)
        policy_loss.backward(inputs=list(self.actor.parameters()))  # no critic gradients needed
        self.actor_optimizer.step()
        metrics = {
            "train/policy_loss": policy_loss.item(),
            "train/entropy": -log_pi.detach().mean().item(),
            "train/ent_coef": alpha.item(),
        }
        if self.auto_alpha:
            ent_coef_loss = self.alpha_loss(log_pi)
            self.alpha_optimizer.zero_grad(set_to_none=True)
            ent_coef_loss.backward()
            self.alpha_optimizer.step()
            metrics["train/ent_coef_loss"] = ent_coef_loss.item()
        return metrics

    def _update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One gradient update (`OffPolicyAgent.update` counts it) of the critics, the actor, alpha
        (when tuned) and the target critics, from a replay batch (keys as `ReplayBuffer.sample`).

        All use alpha as it was at the start of the update. Keys: train/value_loss, train/q_mean,
        train/policy_loss, train/entropy (-mean log pi), train/ent_coef, and train/ent_coef_loss
        when alpha is tuned.
        """
        alpha = self.temperature().detach()
        obs = batch["observations"]
        with self.autocast():  # the forward passes in the run's precision; backward and steps outside
            target = self.compute_target(batch, alpha)
            q1, q2 = self.critic(obs, batch["actions"])
            value_loss = 0.5 * ((q1 - target).square().mean() + (q2 - target).square().mean())  # Eq. 5
        self.critic_optimizer.zero_grad(set_to_none=True)
        value_loss.backward()
        self.critic_optimizer.step()

        metrics = {"train/value_loss": value_loss.item(), "train/q_mean": q1.detach().mean().item()}
        metrics |= self.policy_step(obs, alpha)
        polyak_update(self.critic_target, self.critic, self.config.tau)
        return metrics
