"""The conditional VAE of a dataset's actions, G_omega(a | s): BCQ's generative model, which VAE-BC
uses alone as its policy (Fujimoto, Meger, Precup 2019, "Off-Policy Deep Reinforcement Learning
without Exploration", ICML, arXiv:1812.02900, Sec. 4 and Supp. D; the authors' code
github.com/sfujim/BCQ, `VAE`).

Encoder q(z | s, a) with its log-std clamped to [-4, 15]; decoder D(s, z) with a tanh output, an
action in policy units [-1, 1]; sampling draws z ~ N(0, 1) clamped to [-0.5, 0.5], so only actions
near the mode of the data come out (docs/correctness.md item 8).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from acrl.parts.nets import mlp

LOG_STD_MIN, LOG_STD_MAX = -4.0, 15.0
"""Clamp of the VAE encoder's log-std (authors' code, "clamped for numerical stability")."""

LATENT_CLIP = 0.5
"""Decoder latents sampled from N(0, 1) are clamped to [-0.5, 0.5] (Supp. D; authors' code)."""


class VAE(nn.Module):
    """Conditional VAE of the dataset's actions, G_omega(a | s) (Fujimoto et al. 2019, Sec. 4).

    Encoder: [s, a] -> hidden ReLU layers -> (mean, log_std) of q(z | s, a), log_std clamped to
    [-4, 15]. Decoder: [s, z] -> hidden ReLU layers -> tanh, an action in [-1, 1] (policy units,
    max_action 1). Sampling (`decode` without z) draws z ~ N(0, 1) clamped to [-0.5, 0.5], so
    only actions near the mode of the data come out (Supp. D).

    Args:
        obs_dim, act_dim: sizes of s and a.
        latent_dim: size of z (BCQ: 2 * act_dim).
        hidden_sizes: hidden widths of the encoder and of the decoder (BCQ: (750, 750)).
    """

    def __init__(self, obs_dim: int, act_dim: int, latent_dim: int, hidden_sizes: tuple[int, ...] = (750, 750)):
        super().__init__()
        self.latent_dim = latent_dim
        self.encoder = mlp(obs_dim + act_dim, hidden_sizes, 2 * latent_dim, "relu")
        self.decoder = mlp(obs_dim + latent_dim, hidden_sizes, act_dim, "relu")

    def encode(self, obs: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """obs (B, obs_dim), actions (B, act_dim) float32 -> mean, log_std (B, latent_dim), log_std in [-4, 15]."""
        mean, log_std = self.encoder(torch.cat([obs, actions], dim=-1)).float().chunk(2, dim=-1)
        return mean, log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Reconstruct: z = mean + std * eps (reparameterised), returns (recon (B, act_dim), mean, log_std)."""
        mean, log_std = self.encode(obs, actions)
        z = mean + log_std.exp() * torch.randn_like(mean)
        return self.decode(obs, z), mean, log_std

    def sample_latent(self, n: int) -> torch.Tensor:
        """(n, latent_dim) float32 latents from N(0, 1) clamped to [-0.5, 0.5] (torch's global RNG)."""
        return torch.randn(n, self.latent_dim, device=self.decoder[0].weight.device).clamp(-LATENT_CLIP, LATENT_CLIP)

    def decode(self, obs: torch.Tensor, z: torch.Tensor | None = None) -> torch.Tensor:
        """obs (B, obs_dim) [, z (B, latent_dim)] -> actions (B, act_dim) in [-1, 1]; z defaults to `sample_latent`."""
        if z is None:
            z = self.sample_latent(len(obs))
        return torch.tanh(self.decoder(torch.cat([obs, z], dim=-1)).float())

    @staticmethod
    def loss(
        actions: torch.Tensor, recon: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor, kl_weight: float = 0.5
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(total, reconstruction, KL) losses, scalars: MSE(recon, a) + kl_weight * KL, the KL to
        N(0, I) averaged over batch and latent dims as in the authors' code:
        -0.5 * mean(1 + log sigma^2 - mu^2 - sigma^2) (Kingma & Welling 2014, Appendix B)."""
        recon_loss = F.mse_loss(recon, actions)
        kl = -0.5 * (1.0 + 2.0 * log_std - mean.square() - (2.0 * log_std).exp()).mean()
        return recon_loss + kl_weight * kl, recon_loss, kl
