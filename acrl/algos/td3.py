"""TD3: twin delayed DDPG (Fujimoto, van Hoof, Meger 2018, arXiv:1802.09477, Algorithm 1).

DDPG (`acrl.algos.ddpg`) with three changes:

    clipped double Q-learning:  y = r + gamma * not_done * min(Q1', Q2')(s', a')          (Eq. 10)
    target policy smoothing:    a' = clip(mu'(s') + clip(eps, -c, c), -1, 1), eps ~ N(0, sigma)  (Eq. 14)
    delayed policy updates:     the actor and the target networks move every `policy_delay`
                                critic updates                                          (Sec. 5.2)

Both critics are trained toward the same target (the sum of their MSEs); the actor's loss uses Q1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from acrl.algos.ddpg import DDPG, DDPGConfig
from acrl.core.config import RunConfig, positive
from acrl.core.errors import InputError
from acrl.parts.nets import TwinQ
from acrl.parts.returns import td_target


@dataclass
class TD3Config(DDPGConfig):
    """TD3 hyperparameters; defaults from Fujimoto et al. 2018, Sec. 6.1 and Appendix C.

    Attributes (besides DDPGConfig's):
        policy_noise: std of the target policy smoothing noise, policy units (0.2).
        noise_clip: the smoothing noise is clipped to [-noise_clip, noise_clip] (0.5).
        policy_delay: critic updates per actor and target update (d = 2).
    """

    policy_noise: float = 0.2
    noise_clip: float = 0.5
    policy_delay: int = 2

    def validate(self) -> None:
        """Raise `InputError` for values TD3 cannot run with (see the attribute list)."""
        super().validate()
        positive(self, "policy_delay")
        if self.policy_noise < 0 or self.noise_clip < 0:
            raise InputError(
                f"policy_noise and noise_clip must be >= 0, got {self.policy_noise} and {self.noise_clip}."
            )


def smooth_target_actions(actions: torch.Tensor, policy_noise: float, noise_clip: float) -> torch.Tensor:
    """TD3 target policy smoothing: clip(a' + clip(eps, -c, c), -1, 1), eps ~ N(0, policy_noise).

    Fujimoto et al. 2018, Sec. 5.3, Eq. 14. Actions (B, act_dim) float32 in policy units
    [-1, 1]; the noise comes from torch's global generator. Returns (B, act_dim) float32.
    """
    noise = (torch.randn_like(actions) * policy_noise).clamp(-noise_clip, noise_clip)
    return (actions + noise).clamp(-1.0, 1.0)


class TD3(DDPG):
    """TD3 agent: `TD3(env="Pendulum-v1", seed=0).learn(20_000)`; offline with `dataset=PATH` like DDPG.

    Raises:
        InputError: see `DDPG` and `TD3Config.validate`.
    """

    algo: ClassVar[str] = "td3"
    config_class: ClassVar[type[RunConfig]] = TD3Config
    config: TD3Config

    def _make_critic(self) -> nn.Module:
        """Twin critics Q1, Q2 (Sec. 4.2)."""
        return TwinQ(self.obs_dim, self.act_dim, self.config.hidden_sizes)

    @torch.no_grad()
    def compute_target(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """y = r + gamma * not_done * min(Q1', Q2')(s', a'), a' smoothed by `smooth_target_actions` (Eq. 10, 14)."""
        cfg = self.config
        next_obs = batch["next_observations"]
        next_actions = smooth_target_actions(self.actor_target(next_obs), cfg.policy_noise, cfg.noise_clip)
        next_q = torch.min(*self.critic_target(next_obs, next_actions))
        return td_target(batch["rewards"], batch["not_done"], next_q, cfg.gamma)

    def critic_loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """(MSE(Q1, y) + MSE(Q2, y), Q1 (B,)), the forward passes in the run's precision (`Agent.autocast`)."""
        with self.autocast():
            target = self.compute_target(batch)
            q1, q2 = self.critic(batch["observations"], batch["actions"])
            return (q1 - target).square().mean() + (q2 - target).square().mean(), q1

    def actor_due(self) -> bool:
        """Every `policy_delay`-th update (counted in `updates`) moves the actor and the targets."""
        return self.updates % self.config.policy_delay == 0
