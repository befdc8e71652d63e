"""TD3+BC: TD3 with a behaviour-cloning term, offline from a fixed dataset.

Fujimoto and Gu 2021, "A Minimalist Approach to Offline Reinforcement Learning", NeurIPS,
arXiv:2106.06860, Sec. 5; the authors' code github.com/sfujim/TD3_BC. TD3 (`acrl.algos.td3`: twin
critics, target policy smoothing, delayed actor updates) changed in two places:

    actor:   pi = argmax_pi E_(s, a) ~ D [lambda Q1(s, pi(s)) - (pi(s) - a)^2]                (Eq. 3)
             lambda = alpha / ((1/N) sum_(s_i, a_i) |Q1(s_i, a_i)|), here with a_i = pi(s_i): the
             mean |Q1(s, pi(s))| over the minibatch, detached (Eq. 4; the authors' code), alpha 2.5
    states:  s_i <- (s_i - mu) / (sigma + eps), mu and sigma the dataset's per-feature mean and
             standard deviation, eps = 1e-3 (Eq. 5); applied to the dataset's states and next states
             once when it is loaded, and to every observation the policy acts on

The actor's loss is written as the authors' code computes it: -lambda * mean Q1 + mean of (pi(s) - a)^2
over the batch and the action dimensions (`actor_loss`). The critics' update is TD3's unchanged:
y = r + gamma * not_done * min(Q1', Q2')(s', a'), a' = clip(mu'(s') + clip(eps, -c, c), -1, 1).

The normaliser is the agent's `obs_normalizer` (an `ObservationNormalizer` holding the dataset's
statistics, unclipped): `predict`, evaluation and checkpoints use it as they use every agent's, so
a loaded agent acts on normalised states (docs/correctness.md item 17). Its denominator is
sqrt(sigma^2 + 1e-6), which equals the paper's sigma + 1e-3 for a constant feature and differs from
it by less than 1e-3 elsewhere. A resumed run keeps its checkpoint's statistics. A buffer passed as
`buffer=` (another agent's) is learnt from as it is, unnormalised.

Actions are in policy units [-1, 1] (`acrl.core.envs.ActionAdapter` maps the dataset's in and the
policy's out); `num_steps` counts gradient updates. Box actions and vector observations only; for a
Discrete action space, discrete CQL (`acrl.algos.discrete_cql`) or discrete BCQ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import gymnasium as gym
import torch

from acrl.algos.td3 import TD3, TD3Config
from acrl.core.config import RunConfig
from acrl.core.errors import InputError
from acrl.parts.datasets import OfflineDataset
from acrl.parts.normalization import ObservationNormalizer

STATE_STD_EPSILON = 1e-3
"""eps of the state normalisation s <- (s - mu) / (sigma + eps) (Fujimoto and Gu 2021, Eq. 5)."""


@dataclass
class TD3BCConfig(TD3Config):
    """TD3+BC hyperparameters; defaults are the paper's (Fujimoto and Gu 2021, Sec. 5 and Appendix C) and
    the authors' code (sfujim/TD3_BC main.py, TD3_BC.py).

    Attributes (besides TD3Config's, set here to the paper's: policy_noise 0.2, noise_clip 0.5,
    policy_delay 2, gamma 0.99, tau 0.005; the collection settings are not used offline):
        total_steps: gradient updates (1,000,000, the paper's).
        learning_rate: Adam step size of the actor and the critics (3e-4).
        batch_size: transitions per update (256).
        hidden_sizes: hidden ReLU layers of the actor and of each critic (256, 256).
        alpha: the weight of Q in lambda = alpha / mean |Q| (2.5); >= 0 (0: behaviour cloning only).
    """

    total_steps: int = 1_000_000
    learning_rate: float = 3e-4
    batch_size: int = 256
    hidden_sizes: tuple[int, ...] = (256, 256)
    alpha: float = 2.5

    def validate(self) -> None:
        """Raise `InputError` for values TD3+BC cannot run with (see the attribute list)."""
        super().validate()
        if not self.alpha >= 0:
            raise InputError(
                f"alpha must be >= 0 (lambda = alpha / mean|Q| weighs Q against behaviour cloning; the paper's "
                f"2.5), got {self.alpha}."
            )


def td3_bc_actor_loss(
    q: torch.Tensor, pi: torch.Tensor, actions: torch.Tensor, alpha: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """TD3+BC's actor loss -lambda * mean(Q) + mean((pi - a)^2) (Fujimoto and Gu 2021, Eq. 3 and 4).

    Args:
        q: (B,) float32, Q1(s, pi(s)) with its gradient to the actor.
        pi: (B, act_dim) float32, the actor's actions pi(s); actions: (B, act_dim) float32, the data's, both
            in policy units.
        alpha: the paper's alpha (2.5).
    Returns:
        (loss, lambda, bc): the 0-d loss; lambda = alpha / mean|q|, detached (a constant of the gradient);
        bc the mean of (pi - a)^2 over the batch and the action dimensions (the authors' `F.mse_loss`).
    """
    lmbda = alpha / q.abs().mean().detach()
    bc = (pi - actions).square().mean()
    return -lmbda * q.mean() + bc, lmbda, bc


class TD3BC(TD3):
    """TD3+BC agent, offline: `TD3BC(dataset="hopper-medium.h5", seed=0).learn(100_000)`; `num_steps` counts updates.

    Without `env`, the environment is the dataset's `env_id` attribute; it is used to check the
    dataset's spaces and to evaluate, on states normalised by the dataset's statistics.

    Raises:
        InputError: see `Agent` and `TD3BCConfig.validate`; no dataset and no buffer; a Discrete action
            space (naming discrete CQL and discrete BCQ) or an unbounded Box; at `learn`, a dataset that is
            missing, corrupt or does not fit the environment's spaces.
    """

    algo: ClassVar[str] = "td3_bc"
    config_class: ClassVar[type[RunConfig]] = TD3BCConfig
    action_kinds = (gym.spaces.Box,)
    action_space_hint = (
        "TD3+BC needs continuous actions: for a Discrete action space use discrete CQL (DiscreteCQL, `acrl train "
        "discrete_cql`) or discrete BCQ (`acrl train discrete_bcq`)."
    )
    requires_data = True
    config: TD3BCConfig

    def _build_networks(self) -> None:
        super()._build_networks()
        # the dataset's statistics, set by `prepare_dataset`; unclipped, as the paper's
        self.obs_normalizer = ObservationNormalizer(self.obs_dim, clip=math.inf, epsilon=STATE_STD_EPSILON**2)

    def prepare_dataset(self, data: OfflineDataset) -> None:
        """Normalise the dataset's observations and next observations, in place, by its per-feature mean and
        standard deviation (Eq. 5), which the agent's `obs_normalizer` keeps for acting; a resumed run (whose
        normaliser holds statistics already) keeps its checkpoint's."""
        stats = self.obs_normalizer.stats
        if stats.count == 0:
            stats.update(data.observations)
        data.observations = self.obs_normalizer(data.observations).numpy()
        data.next_observations = self.obs_normalizer(data.next_observations).numpy()

    def actor_loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
        """`td3_bc_actor_loss` on a replay batch, with Q1 at the actor's actions; metrics train/policy_loss,
        train/bc_loss and train/lmbda."""
        obs = batch["observations"]
        pi = self.actor(obs)
        loss, lmbda, bc = td3_bc_actor_loss(self.critic.q1(obs, pi), pi, batch["actions"], self.config.alpha)
        return loss, {"train/policy_loss": loss.item(), "train/bc_loss": bc.item(), "train/lmbda": lmbda.item()}

    def __repr__(self) -> str:
        return f"TD3BC(env_id={self.config.env_id!r}, dataset={self.config.dataset!r}, updates={self.num_steps})"
