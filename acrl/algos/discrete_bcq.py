"""Discrete BCQ: batch-constrained Q-learning for Discrete actions, offline from a fixed dataset.

Fujimoto, Conti, Ghavamzadeh, Pineau 2019, "Benchmarking Batch Deep Reinforcement Learning
Algorithms", arXiv:1910.01708, Sec. 4; the authors' code github.com/sfujim/BCQ discrete_BCQ.
A Q-network and a generative model G(a|s) (an imitation head with unrestricted logits):

    allowed:  a with G(a|s) / max_a' G(a'|s) > threshold (tau = 0.3)                    (Eq. 3)
    acting:   pi(s) = argmax of Q(s, .) over the allowed actions
    target:   y = r + gamma * not_done * Q'(s', a'), a' the allowed argmax of the online Q at s'
              (Double DQN, van Hasselt et al. 2016, with BCQ's constraint)
    loss:     Huber(Q(s, a), y) + NLL of a under G + imitation_l2 * mean(logits^2)

The Q-network, its target, the Double DQN target, the Huber update and the target schedule are the
Q-learning core's, shared with DQN (`acrl.algos.q_learning`); this file adds what the paper adds:
the imitation network G, the allowed-action mask in every argmax (acting and the target's a') and
the imitation loss. Disallowed actions are masked with -inf, so they can never win an argmax
whatever the scale of Q; not_done comes from the dataset's `terminals` only (docs/correctness.md
item 1); the target network starts as an exact copy and is soft-updated in place every update
(tau 0.005, item 9). `num_steps` counts gradient updates. Observations are vectors (the authors'
FC_Q: two MLP trunks) or image frames, uint8 or bool as the dataset stores them (two CNN trunks of
`acrl.parts.encoders`; the authors' Atari Conv_Q shares its convolutions between the two heads).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from acrl.algos.q_learning import OfflineQLearningConfig, QLearningAgent
from acrl.core.config import RunConfig
from acrl.core.errors import InputError
from acrl.parts.encoders import make_encoder
from acrl.parts.nets import output_layer


@dataclass
class DiscreteBCQConfig(OfflineQLearningConfig):
    """Discrete BCQ hyperparameters: the authors' non-Atari settings (sfujim/BCQ discrete_BCQ/main.py).

    Attributes (besides OfflineQLearningConfig's, the learning settings; its hidden_sizes are the Q-network's
    and the imitation head's):
        threshold: tau: an action is allowed when G(a|s) / max G(.|s) > threshold; in [0, 1)
            (0.3). 0 allows every action (DQN), values near 1 imitate.
        imitation_l2: weight of the mean squared imitation logits in the loss (0.01).
    """

    threshold: float = 0.3
    imitation_l2: float = 0.01

    def validate(self) -> None:
        """Raise `InputError` for values discrete BCQ cannot run with (see the attribute list)."""
        super().validate()
        if self.imitation_l2 < 0:
            raise InputError(f"imitation_l2 must be >= 0, got {self.imitation_l2}.")
        if not 0.0 <= self.threshold < 1.0:
            raise InputError(f"threshold must lie in [0, 1) (at 1 no action would be allowed), got {self.threshold}.")


class DiscreteBCQNet(nn.Module):
    """Q-network and imitation head of discrete BCQ, two separate ReLU trunks as the authors' FC_Q.

    forward: obs (B, obs_dim) float32, or frames (B, *obs_shape) uint8 / bool -> (q (B, n_actions),
    logits (B, n_actions)). The logits are unrestricted (no ReLU on the output); `log_softmax(logits)`
    is log G(a|s).

    Args:
        space: the observation space; each trunk is the encoder `make_encoder` gives for it (vectors: a
            ReLU MLP of `hidden_sizes`; frames: the CNN `encoder` names) with its linear output layer;
        encoder: "auto" or a name of `acrl.parts.encoders.ENCODERS`; n_actions: the Discrete space's size;
        channels: the frames' layout, "first", "last" or "auto" (a config's `channels`).
    Attributes:
        encoder_name: the encoder used ("mlp", "nature", "a3c" or "minatar").
    Raises:
        InputError: an observation space no encoder takes, or an encoder that does not take it (`make_encoder`).
    """

    def __init__(
        self,
        space: gym.spaces.Box,
        encoder: str,
        n_actions: int,
        hidden_sizes: tuple[int, ...] = (256, 256),
        channels: str = "auto",
    ):
        super().__init__()
        trunks = []
        for gain in (1.0, 0.01):  # Q's output layer as DQN's, the imitation logits' as a policy head's
            trunk, features_dim, self.encoder_name = make_encoder(space, encoder, hidden_sizes, "relu", channels)
            layers = list(trunk) if isinstance(trunk, nn.Sequential) else [trunk]  # an MLP's layers as `mlp`'s
            trunks.append(nn.Sequential(*layers, output_layer(features_dim, n_actions, gain)))
        self.q, self.imitation = trunks

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """obs (B, ...) -> (Q(s, ·), the imitation network's logits of G(a|s)), each (B, n_actions) float32."""
        return self.q(obs).float(), self.imitation(obs).float()  # float32 under bf16 autocast too


def allowed_actions(logits: torch.Tensor, threshold: float) -> torch.Tensor:
    """Discrete BCQ's constraint: G(a|s) / max_a' G(a'|s) > threshold, as a bool mask (B, n_actions).

    Computed in log space, logits - max(logits) > log(threshold), which equals the ratio of
    softmax probabilities without their underflow (Fujimoto et al. 2019b, Sec. 4, Eq. 3).
    The most likely action is always allowed (ratio 1 > threshold for threshold < 1).
    """
    if threshold <= 0.0:
        return torch.ones_like(logits, dtype=torch.bool)
    return logits - logits.max(dim=-1, keepdim=True).values > float(np.log(threshold))


def masked_argmax(q: torch.Tensor, logits: torch.Tensor, threshold: float) -> torch.Tensor:
    """argmax of q (B, n_actions) over the actions `allowed_actions` permits -> (B,) int64.

    Disallowed actions get -inf, so none of them can win, whatever the values of q.
    """
    return q.masked_fill(~allowed_actions(logits, threshold), float("-inf")).argmax(dim=-1)


class DiscreteBCQ(QLearningAgent):
    """Discrete BCQ agent, offline: `DiscreteBCQ(dataset="cartpole.h5", seed=0).learn(5_000)`.

    As `BCQ` for the data (a dataset or `buffer=`, `num_steps` counts updates); `predict` takes
    the allowed argmax and ignores `deterministic`.

    Raises:
        InputError: see `Agent` and `DiscreteBCQConfig.validate`; no dataset and no buffer; a Box
            action space (use `BCQ`); at `learn`, a dataset that does not fit the environment.
    """

    algo: ClassVar[str] = "discrete_bcq"
    config_class: ClassVar[type[RunConfig]] = DiscreteBCQConfig
    action_space_hint = "For a Box action space use continuous BCQ (BCQ, `acrl train bcq`)."
    requires_data = True
    config: DiscreteBCQConfig

    def _make_net(self) -> DiscreteBCQNet:
        """The Q-network and the imitation network G, two trunks (`DiscreteBCQNet`) for the observation space."""
        cfg = self.config
        net = DiscreteBCQNet(self.observation_space, cfg.encoder, self.act_dim, cfg.hidden_sizes, cfg.channels)
        cfg.encoder = net.encoder_name
        return net

    def q_values(self, net: DiscreteBCQNet, obs: torch.Tensor) -> torch.Tensor:
        """Q(s, .) (B, n_actions) of `net`'s Q trunk."""
        return net.q(obs).float()

    def greedy_actions(self, net: DiscreteBCQNet, obs: torch.Tensor) -> torch.Tensor:
        """The argmax of Q over the actions G allows (`masked_argmax`), (B,) int64: for acting and for
        the target's a', both from the online network (Eq. 3)."""
        return masked_argmax(*net(obs), self.config.threshold)

    def auxiliary_loss(
        self, obs: torch.Tensor, actions: torch.Tensor, q: torch.Tensor
    ) -> tuple[torch.Tensor, dict[str, Any]]:
        """The imitation loss: NLL of the data's actions under G + imitation_l2 * mean(logits^2) (Q is not used);
        metrics train/imitation_loss and train/allowed_actions (the mean number of allowed actions)."""
        cfg = self.config
        logits = self.net.imitation(obs).float()
        imitation_loss = F.cross_entropy(logits, actions)
        with torch.no_grad():
            allowed = allowed_actions(logits, cfg.threshold).float().sum(1).mean()
        metrics = {"train/imitation_loss": imitation_loss.item(), "train/allowed_actions": allowed.item()}
        return imitation_loss + cfg.imitation_l2 * logits.square().mean(), metrics
