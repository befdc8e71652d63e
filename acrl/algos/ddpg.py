"""DDPG (Lillicrap et al. 2016, arXiv:1509.02971), the behavioral agent of the BCQ experiments.

DDPG learns a deterministic policy mu(s) and a critic Q(s, a) from a replay buffer:

    critic:  minimise (Q(s, a) - y)^2,  y = r + gamma * (1 - terminated) * Q'(s', mu'(s'))   (Alg. 1)
    actor:   maximise Q(s, mu(s))                       (deterministic policy gradient, Eq. 6)
    targets: theta' <- tau * theta + (1 - tau) * theta'  (soft updates, Sec. 3)

with the simplifications of the BCQ authors' DDPG (github.com/sfujim/BCQ, DDPG.py, the
behavioral agent of Fujimoto et al. 2019): 400-300 ReLU networks with [s, a] at the critic's
input, Adam lr 1e-3 for both networks and no weight decay, tau 0.005, batch 100, Gaussian
exploration noise N(0, expl_noise * max_action) instead of Ornstein-Uhlenbeck, uniformly random
actions for the first `start_steps` steps, then one gradient update per environment step.

Collection, random start steps, the replay buffer and offline learning are the off-policy
core's (`acrl.algos.off_policy`). Correctness details (docs/correctness.md items 1, 9, 10): the
replay buffer keeps terminated and truncated apart and a time-limit truncation bootstraps from
the true final observation; target networks start as exact copies and are soft-updated in
place under no_grad; python, numpy, torch, the environments and the agent's own generator
(exploration noise, random actions, minibatch indices) are seeded.

Actions live in policy units [-1, 1] per dimension inside the agent (the tanh actor's range,
the replay buffer, the noise); `acrl.core.envs.ActionAdapter` maps them to the environment's Box
bounds, so expl_noise = 0.1 is N(0, 0.1 * max_action) in environment units for a symmetric Box.

With `dataset=PATH` (or `buffer=`) the agent learns from fixed data and `num_steps` counts
updates: the "plain off-policy learning on the same data" baseline of the BCQ paper (Fujimoto
et al. 2019, Sec. 3 and Fig. 2), which fails from extrapolation error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from acrl.algos.off_policy import OffPolicyAgent, OffPolicyConfig
from acrl.core.config import RunConfig
from acrl.core.envs import require_finite_bounds
from acrl.core.errors import InputError
from acrl.parts.nets import DeterministicActor, QNet
from acrl.parts.optim import hard_update, polyak_update
from acrl.parts.returns import td_target


@dataclass
class DDPGConfig(OffPolicyConfig):
    """DDPG hyperparameters; defaults are the BCQ authors' DDPG (sfujim/BCQ DDPG.py, main.py).

    Attributes (besides OffPolicyConfig's: learning_rate 1e-3 for actor and critic, batch 100,
    gamma 0.99, tau 0.005, buffer 1e6, 25e3 random start steps as in BCQ's main.py, 400-300):
        expl_noise: std of the Gaussian exploration noise as a fraction of max_action (0.1).
    """

    expl_noise: float = 0.1

    def validate(self) -> None:
        """Raise `InputError` for values DDPG cannot run with (see the attribute list)."""
        super().validate()
        if self.expl_noise < 0:
            raise InputError(f"expl_noise must be >= 0, got {self.expl_noise}.")


class DDPG(OffPolicyAgent):
    """DDPG agent: `DDPG(env="Pendulum-v1", seed=0, **hyperparameters).learn(total_steps)`.

    Offline (no environment interaction, `num_steps` counts gradient updates):
    `DDPG(dataset="final.hdf5", seed=0).learn(100_000)`. Without `env`, the environment is
    the dataset's `env_id` attribute; it is used to check the dataset's spaces and to evaluate.

    Raises:
        InputError: see `Agent` and `DDPGConfig.validate`; a Discrete or unbounded action space
            (use DQN, PPO or A3C online, or discrete BCQ offline); at `learn`, a dataset that is
            missing, corrupt or does not fit the environment's spaces.
    """

    algo: ClassVar[str] = "ddpg"
    config_class: ClassVar[type[RunConfig]] = DDPGConfig
    action_kinds = (gym.spaces.Box,)
    action_space_hint = (
        "It needs continuous actions: for a Discrete action space use DQN, PPO or A3C (online) or "
        "discrete BCQ (discrete_bcq, offline)."
    )
    config: DDPGConfig

    def _make_critic(self) -> nn.Module:
        """The critic: one Q(s, a) network."""
        return QNet(self.obs_dim, self.act_dim, self.config.hidden_sizes)

    def _build_networks(self) -> None:
        cfg = self.config
        require_finite_bounds(self.action_space, f"{self.algo.upper()}'s tanh actor")
        self.actor = DeterministicActor(self.obs_dim, self.act_dim, cfg.hidden_sizes)
        self.critic = self._make_critic()
        self.actor_target = DeterministicActor(self.obs_dim, self.act_dim, cfg.hidden_sizes)
        self.critic_target = self._make_critic()
        for target, source in ((self.actor_target, self.actor), (self.critic_target, self.critic)):
            hard_update(target, source)  # exact copies at the start (docs/correctness.md item 9)
            target.requires_grad_(False)
        self.nets = {
            "actor": self.actor,
            "critic": self.critic,
            "actor_target": self.actor_target,
            "critic_target": self.critic_target,
        }
        # fused: one kernel per step for all tensors; ~4x less time in Adam than foreach=True at 400-300 on CPU
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=cfg.learning_rate, fused=True)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=cfg.learning_rate, fused=True)
        self.optimizers = {"actor": self.actor_optimizer, "critic": self.critic_optimizer}

    # ----------------------------------------------------------------- acting
    def _policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        actions = self.actor(obs)
        if not deterministic:
            actions = (actions + self.config.expl_noise * torch.randn_like(actions)).clamp(-1.0, 1.0)
        return actions

    @torch.no_grad()
    def explore(self, obs: np.ndarray) -> np.ndarray:
        """mu(s) + N(0, expl_noise) clipped to [-1, 1], (n_envs, act_dim) float32 in policy units."""
        actions = self.actor(torch.as_tensor(obs, dtype=torch.float32, device=self.device)).cpu().numpy()
        noise = self.rng.normal(0.0, self.config.expl_noise, actions.shape)
        return np.clip(actions + noise, -1.0, 1.0).astype(np.float32)

    # ----------------------------------------------------------------- learning
    @torch.no_grad()
    def compute_target(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """TD targets (B,) for a replay batch: y = r + gamma * not_done * Q'(s', mu'(s')) (Alg. 1)."""
        next_obs = batch["next_observations"]
        next_q = self.critic_target(next_obs, self.actor_target(next_obs))
        return td_target(batch["rewards"], batch["not_done"], next_q, self.config.gamma)

    def critic_loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """(MSE of Q(s, a) to `compute_target`, Q(s, a) (B,)) for a replay batch, the forward passes in the run's
        precision (`Agent.autocast`)."""
        with self.autocast():
            q = self.critic(batch["observations"], batch["actions"])
            return (q - self.compute_target(batch)).square().mean(), q

    def actor_loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
        """The actor's loss -mean Q1(s, mu(s)) (the deterministic policy gradient, Eq. 6) on a replay batch, and
        its train/ metrics (train/policy_loss). TD3+BC adds its behaviour-cloning term here."""
        obs = batch["observations"]
        policy_loss = -self.critic.q1(obs, self.actor(obs)).mean()
        return policy_loss, {"train/policy_loss": policy_loss.item()}

    def actor_due(self) -> bool:
        """Whether this update also moves the actor and the targets (DDPG: every update)."""
        return True

    def _update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One gradient update from a replay batch; returns train/ metrics of this update.

        Critic: `critic_loss`. Actor (when `actor_due`): minimise `actor_loss`, then
        soft-update both target networks in place with `tau` (docs/correctness.md item 9).
        Keys: train/value_loss, train/q_mean, and the actor's metrics (train/policy_loss) when it moved.
        """
        value_loss, q = self.critic_loss(batch)
        self.critic_optimizer.zero_grad(set_to_none=True)
        value_loss.backward()
        self.critic_optimizer.step()
        metrics = {"train/value_loss": value_loss.item(), "train/q_mean": q.detach().mean().item()}
        if self.actor_due():
            with self.autocast():
                policy_loss, actor_metrics = self.actor_loss(batch)
            self.actor_optimizer.zero_grad(set_to_none=True)
            policy_loss.backward(inputs=list(self.actor.parameters()))  # no critic gradients needed
            self.actor_optimizer.step()
            polyak_update(self.critic_target, self.critic, self.config.tau)
            polyak_update(self.actor_target, self.actor, self.config.tau)
            metrics |= actor_metrics
        return metrics
