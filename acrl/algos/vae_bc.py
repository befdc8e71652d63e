"""VAE behavioral cloning (VAE-BC): offline, acting with the decoder of BCQ's conditional VAE alone.

One of the BCQ paper's baselines (Fujimoto, Meger, Precup 2019, "Off-Policy Deep Reinforcement
Learning without Exploration", ICML, arXiv:1812.02900, Sec. 5 and Figure 2, "VAE-BC"): the
generative model G_omega of BCQ, trained on the dataset's (s, a) pairs, used as the policy with no
value function, no perturbation and no choice among samples:

    VAE:     BCQ's conditional VAE (`acrl.parts.vae.VAE`, 750-750, latent 2 x act_dim, log-std
             clamped to [-4, 15]) minimising reconstruction + kl_weight * KL          (Sec. 4, Supp. D)
    acting:  a = D_omega(s, z),  z ~ N(0, 1) clamped to [-0.5, 0.5]        (BCQ's sampling, Supp. D)

Acting draws the latent as BCQ's decoder does (the authors' `VAE.decode` in sfujim/BCQ), not the
mean latent z = 0: VAE-BC is then exactly the end of BCQ's spectrum with one sampled action and no
perturbation (BCQ with n_select_samples = 1 and phi = 0 takes the same action from the same VAE and
the same random numbers; tests/unit/test_vae_bc.py), where BC (`acrl.algos.bc`) regresses the data's
mean action instead. Like BCQ, `predict` therefore samples whatever `deterministic` says.

It learns as a `ReplayAgent` (`acrl.algos.off_policy`), as BC does: from a dataset or a given
buffer, actions in policy units [-1, 1] inside the agent, `num_steps` counting gradient updates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import gymnasium as gym
import torch

from acrl.algos.off_policy import ReplayAgent, ReplayConfig
from acrl.core.config import RunConfig, layer_widths, positive
from acrl.core.envs import require_finite_bounds
from acrl.core.errors import InputError
from acrl.parts.nets import inplace_relu
from acrl.parts.vae import VAE


@dataclass
class VAEBCConfig(ReplayConfig):
    """VAE-BC hyperparameters: those of BCQ's VAE (Fujimoto et al. 2019, Supp. D), batch 100.

    Attributes (besides ReplayConfig's):
        learning_rate: Adam step size of the VAE (BCQ's vae_learning_rate, 1e-3).
        hidden_sizes: hidden ReLU layers of the VAE's encoder and of its decoder (BCQ's
            vae_hidden_sizes, (750, 750)).
        latent_dim: size of the latent z (None: 2 * act_dim, as BCQ's).
        kl_weight: weight of the KL term in the VAE loss (0.5); >= 0.
    """

    learning_rate: float = 1e-3
    hidden_sizes: tuple[int, ...] = (750, 750)
    latent_dim: int | None = None
    kl_weight: float = 0.5

    def validate(self) -> None:
        """Raise `InputError` for a non-positive learning rate, latent size or layer width, or a negative kl_weight."""
        super().validate()
        positive(self, "learning_rate", "latent_dim")
        layer_widths(self, "hidden_sizes")
        if self.kl_weight < 0:
            raise InputError(f"kl_weight must be >= 0, got {self.kl_weight}.")


class VAEBC(ReplayAgent):
    """VAE-BC agent, offline: `VAEBC(dataset="imitation.h5", seed=0).learn(50_000)`; `num_steps` counts updates.

    Raises:
        InputError: see `Agent` and `VAEBCConfig.validate`; no dataset and no buffer; a Discrete
            action space or an unbounded Box (the tanh decoder needs finite bounds); at `learn`, a
            dataset that is missing, corrupt or does not fit the environment.
    """

    algo: ClassVar[str] = "vae_bc"
    config_class: ClassVar[type[RunConfig]] = VAEBCConfig
    action_kinds = (gym.spaces.Box,)
    action_space_hint = (
        "VAE-BC models continuous actions; for a Discrete action space use discrete_bcq (its imitation "
        "network is the discrete counterpart)."
    )
    config: VAEBCConfig

    def _build_networks(self) -> None:
        cfg = self.config
        require_finite_bounds(self.action_space, "VAE-BC's tanh decoder")
        self.vae = VAE(self.obs_dim, self.act_dim, cfg.latent_dim or 2 * self.act_dim, cfg.hidden_sizes)
        self.vae_optimizer = torch.optim.Adam(self.vae.parameters(), lr=cfg.learning_rate, fused=True)
        self.nets = {"vae": self.vae}
        self.optimizers = {"vae": self.vae_optimizer}
        inplace_relu(self.vae)

    def _policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        """obs (B, obs_dim) -> (B, act_dim) actions in [-1, 1]: the decoder at a latent drawn from N(0, 1)
        and clamped to [-0.5, 0.5] (torch's generator), whatever `deterministic` says."""
        return self.vae.decode(obs)

    def _update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One Adam step on the VAE loss `VAE.loss` (MSE reconstruction + kl_weight * KL) of the batch's
        observations (B, obs_dim) and actions (B, act_dim) in policy units. Returns train/vae_loss (before
        the step), train/recon_loss and train/kl, as BCQ logs them."""
        with self.autocast():  # the forward pass in the run's precision
            recon, mean, log_std = self.vae(batch["observations"], batch["actions"])
            loss, recon_loss, kl = VAE.loss(batch["actions"], recon, mean, log_std, self.config.kl_weight)
        self.vae_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.vae_optimizer.step()
        return {"train/vae_loss": loss.item(), "train/recon_loss": recon_loss.item(), "train/kl": kl.item()}
