"""Behavioral cloning (BC): offline, a regression of the dataset's continuous actions on its observations.

The BCQ paper's imitation baseline (Fujimoto, Meger, Precup 2019, "Off-Policy Deep
Reinforcement Learning without Exploration", ICML, Sec. 5 and Figure 2): a deterministic policy
pi(s) = tanh(net(s)) trained by supervised learning on the (s, a) pairs of a fixed dataset,

    loss = mean over the batch of || pi(s) - a ||^2        (a in policy units [-1, 1])

with no reward, no value function and no environment interaction but to evaluate. It can only
be as good as the data's actions on average, which is the point of comparing it with BCQ: near
the behavioral policy on noise-free (imitation) data, below it on imperfect data.

It learns as a `ReplayAgent` (`acrl.algos.off_policy`), from a dataset or a given buffer: the
dataset's environment-unit actions are mapped to policy units when loading, `num_steps` counts
gradient updates, and `predict` maps the policy's actions back to the environment's units. Box
actions and vector observations only; for a Discrete action space, the classifier of
`acrl.algos.discrete_bc` (d3rlpy's split of BC and DiscreteBC).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import gymnasium as gym
import torch

from acrl.algos.off_policy import ReplayAgent, ReplayConfig
from acrl.core.config import RunConfig, layer_widths, positive
from acrl.core.envs import require_finite_bounds
from acrl.parts.nets import DeterministicActor, inplace_relu


@dataclass
class BCConfig(ReplayConfig):
    """BC hyperparameters: the DDPG actor of the BCQ paper's experiments (400-300 ReLU, tanh
    output), Adam 1e-3, batch 100 (Fujimoto et al. 2019, Supp. D).

    Attributes (besides ReplayConfig's):
        learning_rate: Adam step size.
        hidden_sizes: hidden ReLU layers of the policy (an MLP on vector observations).
    """

    retired_fields: ClassVar[dict[str, str]] = {
        "gamma": "BC has no value function to discount",
        "tau": "BC has no target network",
        "encoder": "BC's policy is an MLP on vector observations (discrete_bc takes an encoder)",
    }
    """Earlier BC configs held gamma and tau, as an off-policy agent's, which BC never used, and the
    encoder of its discrete form, now `acrl.algos.discrete_bc`."""

    learning_rate: float = 1e-3
    hidden_sizes: tuple[int, ...] = (400, 300)

    def validate(self) -> None:
        """Raise `InputError` for a non-positive learning rate or layer width."""
        super().validate()
        positive(self, "learning_rate")
        layer_widths(self, "hidden_sizes")


class BC(ReplayAgent):
    """BC agent, offline: `BC(dataset="imitation.h5", seed=0).learn(50_000)`; `num_steps` counts updates.

    The tanh policy `DeterministicActor` on vector observations, for a bounded Box action space.

    Raises:
        InputError: see `Agent` and `BCConfig.validate`; no dataset; a Discrete action space (naming
            discrete_bc) or an unbounded Box (the tanh policy needs finite bounds); at `learn`, a dataset
            that is missing, corrupt or does not fit the environment.
    """

    algo: ClassVar[str] = "bc"
    config_class: ClassVar[type[RunConfig]] = BCConfig
    action_kinds = (gym.spaces.Box,)
    action_space_hint = "For a Discrete action space use discrete BC (DiscreteBC, `acrl train discrete_bc`)."
    config: BCConfig

    def _build_networks(self) -> None:
        cfg = self.config
        require_finite_bounds(self.action_space, "BC's tanh policy")
        self.actor = DeterministicActor(self.obs_dim, self.act_dim, cfg.hidden_sizes)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=cfg.learning_rate, fused=True)
        self.nets = {"actor": self.actor}
        self.optimizers = {"actor": self.actor_optimizer}
        inplace_relu(self.actor)

    def _policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        """pi(s) (B, act_dim) float32 in policy units [-1, 1]."""
        return self.actor(obs)

    def _update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One Adam step on the mean squared error between pi(s) and the batch's actions, both (B, act_dim)
        float32 in policy units. Returns {"train/bc_loss": the loss before the step}."""
        with self.autocast():  # the forward pass in the run's precision
            loss = (self.actor(batch["observations"]) - batch["actions"]).square().sum(dim=1).mean()
        self.actor_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.actor_optimizer.step()
        return {"train/bc_loss": loss.item()}
