"""Discrete CQL: conservative Q-learning for Discrete actions, offline from a fixed dataset.

Kumar, Zhou, Tucker, Levine 2020, "Conservative Q-Learning for Offline Reinforcement Learning",
NeurIPS, arXiv:2006.04779, Sec. 3.2 and 4 (CQL(H), Eq. 4) and Appendix F (the discrete form, on
QR-DQN for Atari in the paper); here on the Q-learning core that DQN shares (`acrl.algos.q_learning`),
as d3rlpy's DiscreteCQL puts it on Double DQN. With a finite action set the log-sum-exp is exact:

    loss:    Huber(Q(s, a) - y) + alpha * (log sum_a' exp Q(s, a') - Q(s, a)),  (s, a) ~ D       (Eq. 4)
    target:  y = r + gamma * not_done * Q'(s', argmax_a' Q(s', a'))  (Double DQN, van Hasselt et al.
             2016, Eq. 4; the target network Q' copied or soft-updated by the core's schedule)
    acting:  argmax_a Q(s, a)

The penalty (`discrete_cql_penalty`, alpha = cql_alpha, 1.0) pushes Q down on every action in
proportion to its softmax weight and up on the dataset's, so the greedy policy stays among the data's
actions. The Q-network, target, Huber update and target schedule are the core's; vectors get an MLP
and image frames (uint8 or bool) a CNN (`acrl.parts.heads.DiscreteQ`), each frame stored once
(`FrameReplayBuffer`). not_done comes from the dataset's `terminals` only (docs/correctness.md item
1); the target network starts as an exact copy (item 9). `num_steps` counts gradient updates.
Box actions: `acrl.algos.cql`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from acrl.algos.q_learning import OfflineQLearningConfig, QLearningAgent
from acrl.core.config import RunConfig
from acrl.core.errors import InputError
from acrl.parts.heads import DiscreteQ


@dataclass
class DiscreteCQLConfig(OfflineQLearningConfig):
    """Discrete CQL hyperparameters: the penalty's weight alpha 1.0 (Kumar et al. 2020, Appendix F; d3rlpy's
    DiscreteCQL), with discrete BCQ's learning settings (`OfflineQLearningConfig`).

    Attributes (besides OfflineQLearningConfig's):
        cql_alpha: alpha, the penalty's weight, >= 0 (1.0; 0 is offline Double DQN).
    """

    cql_alpha: float = 1.0

    def validate(self) -> None:
        """Raise `InputError` for values discrete CQL cannot run with (see the attribute list)."""
        super().validate()
        if not self.cql_alpha >= 0:
            raise InputError(
                f"cql_alpha must be >= 0 (the weight of the conservative penalty; 0 is offline DQN, the paper "
                f"uses 1 or 4), got {self.cql_alpha}."
            )


def discrete_cql_penalty(q: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """CQL(H)'s gap with the exact log-sum-exp over a finite action set, log sum_a' exp Q(s, a') - Q(s, a),
    averaged over the batch: a 0-d float32 tensor (Kumar et al. 2020, Eq. 4).

    Args:
        q: (B, n_actions) float32, Q(s, .) of the online network, with its gradient.
        actions: (B,) int64, the dataset's actions.
    """
    return (torch.logsumexp(q, dim=1) - q.gather(1, actions.unsqueeze(1)).squeeze(1)).mean()


class DiscreteCQL(QLearningAgent):
    """Discrete CQL agent, offline: `DiscreteCQL(dataset="cartpole.h5", seed=0).learn(5_000)`; `num_steps`
    counts updates; `predict` takes the greedy action. Vector observations or image frames.

    Raises:
        InputError: see `Agent` and `DiscreteCQLConfig.validate`; no dataset and no buffer; a Box action space
            (naming cql); an observation space no encoder takes; at `learn`, a dataset that does not fit the
            environment.
    """

    algo: ClassVar[str] = "discrete_cql"
    config_class: ClassVar[type[RunConfig]] = DiscreteCQLConfig
    action_space_hint = "For a Box action space use CQL (`acrl train cql`)."
    requires_data = True
    config: DiscreteCQLConfig

    def _make_net(self) -> DiscreteQ:
        """`DiscreteQ` for the observation space, one output per action; frames stay uint8 / bool up to it."""
        cfg = self.config
        net = DiscreteQ(self.observation_space, cfg.encoder, self.act_dim, cfg.hidden_sizes, cfg.channels)
        cfg.encoder = net.encoder_name
        return net

    def auxiliary_loss(
        self, obs: torch.Tensor, actions: torch.Tensor, q: torch.Tensor
    ) -> tuple[torch.Tensor, dict[str, Any]]:
        """cql_alpha * `discrete_cql_penalty` of the online Q(s, .) at the batch; metric train/cql_penalty (the
        gap before its weight)."""
        gap = discrete_cql_penalty(q, actions)
        return self.config.cql_alpha * gap, {"train/cql_penalty": gap.item()}
