"""Batch-Constrained deep Q-learning (BCQ), continuous actions: offline RL from a fixed dataset.

Fujimoto, Meger, Precup 2019, "Off-Policy Deep Reinforcement Learning without Exploration",
ICML, arXiv:1812.02900, Sec. 4 and Algorithm 1; the authors' code github.com/sfujim/BCQ. BCQ
learns only about actions that resemble the dataset's:

    VAE G_omega(s):  a conditional VAE of the behavioural policy, trained on (s, a) pairs with
                     reconstruction + 0.5 * KL(N(mu, sigma) || N(0, 1))            (Sec. 4, Supp. D)
    perturbation:    xi_phi(s, a) in [-phi, phi] (phi * tanh), a' = clip(a + xi, -1, 1)    (Eq. 11)
    critics:         twin Q1, Q2 trained toward the soft clipped double-Q target
                     y = r + gamma * not_done * max_{a_i} [lmbda * min_j Q'_j(s', a_i)
                                                           + (1 - lmbda) * max_j Q'_j(s', a_i)]
                     over n actions a_i = xi'(s', G(s')) sampled per next state     (Eq. 13)
    actor:           maximise Q1(s, xi(s, G(s)))                                      (Eq. 12)
    acting:          pi(s) = argmax_{a_i} Q1(s, a_i) over n perturbed VAE samples     (Eq. 10)

Correctness details (docs/correctness.md items 1, 8, 9, 10): not_done comes from the dataset's
`terminals` only, so a time-limit `timeout` bootstraps; the VAE's log-std is clamped to
[-4, 15] and the decoder's latent is drawn from N(0, 1) and clamped to [-0.5, 0.5] (the VAE,
`acrl.parts.vae`, which VAE-BC shares); next states
are repeated with `repeat_interleave` so that each state's samples are contiguous before the
per-state maximum; the actor's loss uses Q1 only; target networks start as exact copies and are
soft-updated in place under no_grad.

Actions live in policy units [-1, 1] per dimension inside the agent (max_action = 1 there);
`acrl.core.envs.ActionAdapter` maps the dataset's environment-unit actions in when loading and
the chosen actions back out in `predict`. `num_steps` counts gradient updates. Discrete actions:
`acrl.algos.discrete_bcq`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import ClassVar

import gymnasium as gym
import torch
import torch.nn.functional as F
from torch import nn

from acrl.algos.off_policy import OffPolicyAgent, TDConfig
from acrl.core.config import RunConfig, in_unit_interval, layer_widths, positive
from acrl.core.envs import require_finite_bounds
from acrl.core.errors import InputError
from acrl.parts.nets import TwinQ, inplace_relu, mlp
from acrl.parts.optim import polyak_update
from acrl.parts.vae import VAE


@dataclass
class BCQConfig(TDConfig):
    """BCQ hyperparameters; defaults are the paper's (Fujimoto et al. 2019, Sec. 5 and Supp. D).

    Attributes (besides TDConfig's: batch 100, gamma 0.99, tau 0.005, evaluation every 5,000
    updates as in the authors' code):
        total_steps: gradient updates (300,000: the length of the paper's Figure 2 curves).
        learning_rate: Adam step size of the actor and the critics (1e-3, torch's default in the
            authors' code).
        vae_learning_rate: Adam step size of the VAE (1e-3).
        lmbda: weight of min(Q1', Q2') in the soft clipped double-Q target (0.75).
        phi: the perturbation's range as a fraction of max_action (0.05).
        n_action_samples: VAE actions sampled per next state in the target (10).
        n_select_samples: candidate actions per state when acting (10 in the paper and the
            authors' original code; their later code uses 100).
        kl_weight: weight of the KL term in the VAE loss (0.5).
        latent_dim: VAE latent size (None: 2 * act_dim).
        actor_hidden_sizes: hidden ReLU layers of the perturbation actor (400, 300).
        critic_hidden_sizes: hidden ReLU layers of each critic (400, 300).
        vae_hidden_sizes: hidden ReLU layers of the VAE's encoder and of its decoder (750, 750).
    """

    total_steps: int = 300_000
    learning_rate: float = 1e-3
    vae_learning_rate: float = 1e-3
    lmbda: float = 0.75
    phi: float = 0.05
    n_action_samples: int = 10
    n_select_samples: int = 10
    kl_weight: float = 0.5
    latent_dim: int | None = None
    actor_hidden_sizes: tuple[int, ...] = (400, 300)
    critic_hidden_sizes: tuple[int, ...] = (400, 300)
    vae_hidden_sizes: tuple[int, ...] = (750, 750)

    def validate(self) -> None:
        """Raise `InputError` for values BCQ cannot run with (see the attribute list)."""
        super().validate()
        positive(self, "learning_rate", "vae_learning_rate", "n_action_samples", "n_select_samples", "latent_dim")
        in_unit_interval(self, "lmbda")
        if self.phi < 0 or self.kl_weight < 0:
            raise InputError(f"phi and kl_weight must be >= 0, got {self.phi} and {self.kl_weight}.")
        layer_widths(self, "actor_hidden_sizes", "critic_hidden_sizes", "vae_hidden_sizes")


# --------------------------------------------------------------------------------------------
# Networks
# --------------------------------------------------------------------------------------------


class PerturbationActor(nn.Module):
    """xi_phi(s, a): a' = clip(a + phi * tanh(net([s, a])), -1, 1) (Fujimoto et al. 2019, Eq. 11).

    obs (B, obs_dim), actions (B, act_dim) float32 in policy units -> (B, act_dim) in [-1, 1];
    the perturbation is at most phi (max_action = 1 in policy units).
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes: tuple[int, ...] = (400, 300), phi: float = 0.05):
        super().__init__()
        self.phi = phi
        self.net = mlp(obs_dim + act_dim, hidden_sizes, act_dim, "relu")

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """obs (B, obs_dim), actions (B, act_dim) float32 -> the perturbed actions (B, act_dim) float32 in [-1, 1]."""
        perturbation = self.phi * torch.tanh(self.net(torch.cat([obs, actions], dim=-1)).float())
        return (actions + perturbation).clamp(-1.0, 1.0)


# --------------------------------------------------------------------------------------------
# Pure pieces: the target and action selection
# --------------------------------------------------------------------------------------------


def soft_clipped_double_q(q1: torch.Tensor, q2: torch.Tensor, lmbda: float) -> torch.Tensor:
    """lmbda * min(q1, q2) + (1 - lmbda) * max(q1, q2), elementwise (Fujimoto et al. 2019, Eq. 13)."""
    return lmbda * torch.min(q1, q2) + (1.0 - lmbda) * torch.max(q1, q2)


@torch.no_grad()
def continuous_target(
    next_obs: torch.Tensor,
    rewards: torch.Tensor,
    not_done: torch.Tensor,
    vae: VAE,
    actor_target: nn.Module,
    critic_target: nn.Module,
    gamma: float,
    lmbda: float,
    n_samples: int,
    latent: torch.Tensor | None = None,
) -> torch.Tensor:
    """BCQ's critic target y (B,) (Fujimoto et al. 2019, Eq. 13 and Algorithm 1).

    Each next state is repeated n_samples times with `repeat_interleave` (rows s'_0 x n, s'_1 x n,
    ...), an action is decoded from the VAE and perturbed by the target actor for every row, the
    target critics' values are mixed by `soft_clipped_double_q`, reshaped to (B, n_samples) and
    maximised per state: y = r + gamma * not_done * max_i Q_mix(s', a_i).

    Args:
        next_obs: (B, obs_dim) float32; rewards, not_done: (B,) float32 (not_done = 1 -
            terminal; a time-limit timeout keeps not_done = 1 and bootstraps).
        vae, actor_target, critic_target: the VAE (online, as in the paper), the target
            perturbation actor and the target twin critics.
        gamma: discount; lmbda: soft clipping weight; n_samples: actions per next state.
        latent: optional (B * n_samples, latent_dim) latents in repeat_interleave row order
            (default: sampled and clamped by `VAE.decode`), for tests.
    Returns:
        (B,) float32 targets, no gradient.
    """
    repeated = next_obs.repeat_interleave(n_samples, dim=0)
    actions = actor_target(repeated, vae.decode(repeated, latent))
    q = soft_clipped_double_q(*critic_target(repeated, actions), lmbda)
    return rewards + gamma * not_done * q.view(len(next_obs), n_samples).max(dim=1).values


@torch.no_grad()
def select_continuous(obs: torch.Tensor, vae: VAE, actor: nn.Module, critic: nn.Module, n_samples: int) -> torch.Tensor:
    """BCQ's policy (Eq. 10): for each state, n_samples perturbed VAE actions, the one with the largest Q1.

    obs (B, obs_dim) float32 -> actions (B, act_dim) float32 in policy units [-1, 1]. Batched:
    the B * n_samples candidates go through the networks in one pass.
    """
    repeated = obs.repeat_interleave(n_samples, dim=0)
    candidates = actor(repeated, vae.decode(repeated))
    best = critic.q1(repeated, candidates).view(len(obs), n_samples).argmax(dim=1)
    return candidates.view(len(obs), n_samples, -1)[torch.arange(len(obs)), best]


# --------------------------------------------------------------------------------------------
# The agent
# --------------------------------------------------------------------------------------------


class BCQ(OffPolicyAgent):
    """BCQ agent, offline: `BCQ(dataset="data.hdf5", seed=0).learn(100_000)`; `num_steps` counts updates.

    Without `env`, the environment is the dataset's `env_id` attribute; it is used only to check
    the dataset's spaces and to evaluate. Instead of a dataset, a `ReplayBuffer` in policy units
    can be passed (`buffer=`); BCQ then samples from it as it is, which lets it learn from a
    buffer that another agent is filling (the paper's concurrent experiment).

    `predict` ignores `deterministic`: BCQ's policy always takes the best of `n_select_samples`
    sampled candidates by Q1 (Eq. 10).

    Raises:
        InputError: see `Agent` and `BCQConfig.validate`; no dataset and no buffer; a dataset
            without an `env_id` attribute and no env given; a Discrete action space (use
            `DiscreteBCQ`) or an unbounded Box; at `learn`, a dataset that is missing, corrupt or
            does not fit the environment's spaces.
    """

    algo: ClassVar[str] = "bcq"
    config_class: ClassVar[type[RunConfig]] = BCQConfig
    action_kinds = (gym.spaces.Box,)
    action_space_hint = "For a Discrete action space use discrete BCQ (DiscreteBCQ, `acrl train discrete_bcq`)."
    requires_data = True
    config: BCQConfig

    def _build_networks(self) -> None:
        cfg = self.config
        require_finite_bounds(self.action_space, "BCQ's VAE and perturbation model")
        latent_dim = cfg.latent_dim or 2 * self.act_dim
        self.vae = VAE(self.obs_dim, self.act_dim, latent_dim, cfg.vae_hidden_sizes)
        self.actor = PerturbationActor(self.obs_dim, self.act_dim, cfg.actor_hidden_sizes, cfg.phi)
        self.critic = TwinQ(self.obs_dim, self.act_dim, cfg.critic_hidden_sizes)
        # Exact copies at the start, never trained directly (docs/correctness.md item 9).
        self.actor_target = copy.deepcopy(self.actor).requires_grad_(False)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.vae_optimizer = torch.optim.Adam(self.vae.parameters(), lr=cfg.vae_learning_rate, fused=True)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=cfg.learning_rate, fused=True)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=cfg.learning_rate, fused=True)
        self.nets = {
            "vae": self.vae,
            "actor": self.actor,
            "critic": self.critic,
            "actor_target": self.actor_target,
            "critic_target": self.critic_target,
        }
        self.optimizers = {"vae": self.vae_optimizer, "actor": self.actor_optimizer, "critic": self.critic_optimizer}
        inplace_relu(*self.nets.values())

    def _policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        return select_continuous(obs, self.vae, self.actor, self.critic, self.config.n_select_samples)

    def _update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One gradient update of every network from a batch (keys as `ReplayBuffer.sample`).

        In the authors' order: VAE (reconstruction + kl_weight * KL), critics (MSE of Q1 and Q2
        to `continuous_target`), perturbation actor (-Q1(s, xi(s, G(s)))), then soft target
        updates. Returns train/ metrics of this update.
        """
        cfg = self.config
        obs, actions = batch["observations"], batch["actions"]

        with self.autocast():  # each forward pass in the run's precision; backward and steps outside
            recon, mean, log_std = self.vae(obs, actions)
            vae_loss, recon_loss, kl = VAE.loss(actions, recon, mean, log_std, cfg.kl_weight)
        self.vae_optimizer.zero_grad(set_to_none=True)
        vae_loss.backward()
        self.vae_optimizer.step()

        with self.autocast():
            target = continuous_target(
                batch["next_observations"],
                batch["rewards"],
                batch["not_done"],
                self.vae,
                self.actor_target,
                self.critic_target,
                cfg.gamma,
                cfg.lmbda,
                cfg.n_action_samples,
            )
            q1, q2 = self.critic(obs, actions)
            value_loss = F.mse_loss(q1, target) + F.mse_loss(q2, target)
        self.critic_optimizer.zero_grad(set_to_none=True)
        value_loss.backward()
        self.critic_optimizer.step()

        with self.autocast():
            with torch.no_grad():
                sampled = self.vae.decode(obs)
            policy_loss = -self.critic.q1(obs, self.actor(obs, sampled)).mean()
        self.actor_optimizer.zero_grad(set_to_none=True)
        policy_loss.backward(inputs=list(self.actor.parameters()))  # no critic weight gradients needed
        self.actor_optimizer.step()

        polyak_update(self.critic_target, self.critic, cfg.tau)
        polyak_update(self.actor_target, self.actor, cfg.tau)
        return {
            "train/vae_loss": vae_loss.item(),
            "train/recon_loss": recon_loss.item(),
            "train/kl": kl.item(),
            "train/value_loss": value_loss.item(),
            "train/policy_loss": policy_loss.item(),
            "train/q_mean": q1.detach().mean().item(),
        }

    def __repr__(self) -> str:
        return f"BCQ(env_id={self.config.env_id!r}, dataset={self.config.dataset!r}, updates={self.num_steps})"
