"""Behavioral cloning (BC): offline, a regression of the dataset's actions on its observations.

The BCQ paper's imitation baseline (Fujimoto, Meger, Precup 2019, "Off-Policy Deep
Reinforcement Learning without Exploration", ICML, Sec. 5 and Figure 2): a deterministic policy
pi(s) = tanh(net(s)) trained by supervised learning on the (s, a) pairs of a fixed dataset,

    loss = mean over the batch of || pi(s) - a ||^2        (a in policy units [-1, 1])

with no reward, no value function and no environment interaction but to evaluate. It can only
be as good as the data's actions on average, which is the point of comparing it with BCQ: near
the behavioral policy on noise-free (imitation) data, below it on imperfect data.

For a Discrete action space (the discrete experiment's baseline beside discrete BCQ, whose own
imitation network G is the same classifier, Fujimoto et al. 2019b, Sec. 4) the policy is a softmax
over the actions, an encoder (an MLP for vectors, a CNN for image frames) and a `CategoricalHead`,
trained by maximum likelihood of the logged actions,

    loss = mean over the batch of -log pi(a | s)             (cross-entropy; a an action index)

and acting takes the most likely action (deterministic) or samples the softmax.

It learns as a `ReplayAgent` (`acrl.algos.off_policy`), from a dataset or a given buffer: the
dataset's environment-unit actions are mapped to policy units when loading, `num_steps` counts
gradient updates, and `predict` maps the policy's actions back to the environment's units.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F

from acrl.algos.off_policy import ReplayAgent, ReplayConfig
from acrl.core.config import RunConfig, layer_widths, positive
from acrl.core.envs import require_finite_bounds
from acrl.core.errors import InputError
from acrl.parts.encoders import ENCODERS, is_image, make_encoder
from acrl.parts.heads import CategoricalHead
from acrl.parts.nets import DeterministicActor, inplace_relu
from acrl.parts.normalization import IdentityNormalizer


@dataclass
class BCConfig(ReplayConfig):
    """BC hyperparameters: the DDPG actor of the BCQ paper's experiments (400-300 ReLU, tanh
    output), Adam 1e-3, batch 100 (Fujimoto et al. 2019, Supp. D).

    Attributes (besides ReplayConfig's):
        learning_rate: Adam step size.
        hidden_sizes: hidden ReLU layers of the policy (an MLP; vector observations).
        encoder: the observation encoder of a Discrete-action policy: "auto" ("mlp" for vectors,
            "nature" for frames of 36 x 36 or more, else "minatar") or one of "mlp", "nature", "a3c",
            "minatar" (`acrl.parts.encoders.make_encoder`); a Box-action policy is the MLP. config.yaml
            records the one used.
    """

    retired_fields: ClassVar[dict[str, str]] = {
        "gamma": "BC has no value function to discount",
        "tau": "BC has no target network",
    }
    """Earlier BC configs held gamma and tau, as an off-policy agent's, which BC never used."""

    learning_rate: float = 1e-3
    hidden_sizes: tuple[int, ...] = (400, 300)
    encoder: str = "auto"

    def validate(self) -> None:
        """Raise `InputError` for a non-positive learning rate or layer width, or an unknown encoder."""
        super().validate()
        positive(self, "learning_rate")
        layer_widths(self, "hidden_sizes")
        if self.encoder not in ENCODERS:
            raise InputError(f"encoder must be one of {', '.join(ENCODERS)}, got {self.encoder!r}.")


class BC(ReplayAgent):
    """BC agent, offline: `BC(dataset="imitation.h5", seed=0).learn(50_000)`; `num_steps` counts updates.

    A Box action space gets the tanh policy (`DeterministicActor`, vector observations); a Discrete
    one the softmax policy (an encoder and a `CategoricalHead`, vectors or image frames).

    Raises:
        InputError: see `Agent` and `BCConfig.validate`; no dataset; an unbounded Box (the tanh policy
            needs finite bounds); image frames with a Box action space; an observation space no encoder
            takes; at `learn`, a dataset that is missing, corrupt or does not fit the environment.
    """

    algo: ClassVar[str] = "bc"
    config_class: ClassVar[type[RunConfig]] = BCConfig
    image_observations = True
    config: BCConfig

    def _build_networks(self) -> None:
        cfg = self.config
        space = self.observation_space
        if self.discrete:
            trunk, features_dim, cfg.encoder = make_encoder(space, cfg.encoder, cfg.hidden_sizes, "relu")
            self.actor = CategoricalHead(trunk, features_dim, self.act_dim)
            if is_image(space):
                self.obs_normalizer = IdentityNormalizer(dtype=None)  # frames stay uint8 / bool up to the network
        else:
            if is_image(space) or cfg.encoder not in ("auto", "mlp"):
                raise InputError(
                    f"BC's tanh policy for a Box action space is an MLP on vector observations (encoder auto or "
                    f"mlp); got observations {space} and encoder {cfg.encoder!r}. BC takes frames with a Discrete "
                    "action space."
                )
            require_finite_bounds(self.action_space, "BC's tanh policy")
            self.actor = DeterministicActor(self.obs_dim, self.act_dim, cfg.hidden_sizes)
            cfg.encoder = "mlp"
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=cfg.learning_rate, fused=True)
        self.nets = {"actor": self.actor}
        self.optimizers = {"actor": self.actor_optimizer}
        inplace_relu(self.actor)

    def _policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        """pi(s) (B, act_dim) in policy units for a Box; for a Discrete space the most likely action (deterministic)
        or a sample of the softmax, (B,) int64."""
        if self.discrete:
            return self.actor.sample(obs, deterministic, with_log_prob=False)[0]
        return self.actor(obs)

    def _update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One Adam step on the loss of the batch: the mean squared error between pi(s) and the actions, both
        (B, act_dim) float32 in policy units (Box), or the cross-entropy of the actions (B,) int64 under the
        softmax policy (Discrete). Returns {"train/bc_loss": the loss before the step}."""
        obs, actions = batch["observations"], batch["actions"]
        if self.discrete:
            loss = F.cross_entropy(self.actor(self.actor.encoder(obs)), actions)
        else:
            loss = (self.actor(obs) - actions).square().sum(dim=1).mean()
        self.actor_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.actor_optimizer.step()
        return {"train/bc_loss": loss.item()}
