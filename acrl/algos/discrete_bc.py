"""Discrete behavioral cloning (discrete BC): offline, a classifier of the dataset's Discrete actions.

The baseline beside discrete BCQ in the discrete offline experiment, whose own imitation network G
is the same classifier (Fujimoto, Conti, Ghavamzadeh, Pineau 2019, "Benchmarking Batch Deep
Reinforcement Learning Algorithms", arXiv:1910.01708, Sec. 4): a softmax policy pi(a | s), an
encoder (an MLP for vectors, a CNN for image frames, `acrl.parts.encoders.make_encoder`) and a
`CategoricalHead`, trained by maximum likelihood of the logged actions,

    loss = mean over the batch of -log pi(a | s)             (cross-entropy; a an action index)

with no reward, no value function and no environment interaction but to evaluate. Acting takes the
most likely action (deterministic) or samples the softmax. Continuous actions: `acrl.algos.bc`
(d3rlpy's split of BC and DiscreteBC).

It learns as a `ReplayAgent` (`acrl.algos.off_policy`), from a dataset or a given buffer: actions as
int64 indices from 0, image frames kept uint8 / bool up to the network, `num_steps` counting
gradient updates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import gymnasium as gym
import torch
import torch.nn.functional as F

from acrl.algos.off_policy import ReplayAgent, ReplayConfig
from acrl.core.config import RunConfig, layer_widths, positive
from acrl.parts.encoders import make_encoder
from acrl.parts.heads import CategoricalHead
from acrl.parts.nets import inplace_relu


@dataclass
class DiscreteBCConfig(ReplayConfig):
    """Discrete BC hyperparameters: those of continuous BC (400-300 ReLU, Adam 1e-3, batch 100), with an
    encoder for image frames.

    Attributes (besides ReplayConfig's):
        env_id: the environment used for evaluation (default: the dataset's `env_id`).
        learning_rate: Adam step size.
        hidden_sizes: hidden ReLU layers of the MLP encoder (vector observations).
        encoder: the observation encoder: "auto" ("mlp" for vectors, "nature" for frames of 36 x 36 or
            more, else "minatar") or one of "mlp", "nature", "a3c", "minatar"
            (`acrl.parts.encoders.make_encoder`, which refuses another); config.yaml records the one used.
    """

    env_id: str = "CartPole-v1"
    learning_rate: float = 1e-3
    hidden_sizes: tuple[int, ...] = (400, 300)
    encoder: str = "auto"

    def validate(self) -> None:
        """Raise `InputError` for a non-positive learning rate or layer width."""
        super().validate()
        positive(self, "learning_rate")
        layer_widths(self, "hidden_sizes")


class DiscreteBC(ReplayAgent):
    """Discrete BC agent, offline: `DiscreteBC(dataset="cartpole.h5", seed=0).learn(5_000)`; `num_steps`
    counts updates. Vector observations or image frames.

    Raises:
        InputError: see `Agent` and `DiscreteBCConfig.validate`; no dataset and no buffer; a Box action
            space (naming bc); an observation space no encoder takes; at `learn`, a dataset that is missing,
            corrupt or does not fit the environment.
    """

    algo: ClassVar[str] = "discrete_bc"
    config_class: ClassVar[type[RunConfig]] = DiscreteBCConfig
    action_kinds = (gym.spaces.Discrete,)
    action_space_hint = "For a Box action space use BC (`acrl train bc`)."
    image_observations = True
    config: DiscreteBCConfig

    def _build_networks(self) -> None:
        cfg = self.config
        trunk, features_dim, cfg.encoder = make_encoder(
            self.observation_space, cfg.encoder, cfg.hidden_sizes, "relu", cfg.channels
        )
        self.actor = CategoricalHead(trunk, features_dim, self.act_dim)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=cfg.learning_rate, fused=True)
        self.nets = {"actor": self.actor}
        self.optimizers = {"actor": self.actor_optimizer}
        inplace_relu(self.actor)

    def _policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        """The most likely action (deterministic) or a sample of the softmax, (B,) int64."""
        return self.actor.sample(obs, deterministic, with_log_prob=False)[0]

    def _update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One Adam step on the cross-entropy of the batch's actions (B,) int64 under the softmax policy.
        Returns {"train/bc_loss": the loss before the step}."""
        with self.autocast():  # the forward pass in the run's precision
            loss = F.cross_entropy(self.actor(self.actor.encoder(batch["observations"])), batch["actions"])
        self.actor_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.actor_optimizer.step()
        return {"train/bc_loss": loss.item()}
