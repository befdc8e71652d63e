"""CQL: conservative Q-learning on SAC, for Box actions, offline from a fixed dataset.

Kumar, Zhou, Tucker, Levine 2020, "Conservative Q-Learning for Offline Reinforcement Learning",
NeurIPS, arXiv:2006.04779, Sec. 3.2 and 4, Appendix F; the authors' code
github.com/aviralkumar2907/CQL (d4rl/rlkit/torch/sac/cql.py). SAC (`acrl.algos.sac`: a tanh-squashed
Gaussian policy, twin critics, a tuned entropy temperature) whose critics also push Q down at actions
the policy and a uniform proposal pick and up at the dataset's, the CQL(H) regulariser:

    critics: minimise for i = 1, 2                                                             (Eq. 4)
               (Q_i(s, a) - y)^2 + alpha * (log sum_a' exp Q_i(s, a') - Q_i(s, a)),  (s, a) ~ D
             y = r + gamma * not_done * min(Q1', Q2')(s', a'), a' ~ pi(.|s') (no entropy term: the
             authors' deterministic backup)
    log-sum-exp: estimated by importance sampling over 3N actions per state (Appendix F): N uniform
             on [-1, 1]^d (density 2^-d), N from pi(.|s) and N from pi(.|s'), each valued at s and
             corrected by its own log-density, log sum_j exp(Q_i(s, a_j) - log mu(a_j)) (the authors'
             min_q_version 3, without the paper's constant 1 / 3N; the actions from s' valued at s as
             their code does)
    Lagrangian (target_action_gap set): the penalty becomes alpha' * (alpha * diff_i - gap), diff_i the
             log-sum-exp minus Q_i(s, a), and alpha' = exp(log alpha') >= 0 rises while the weighted mean
             diff exceeds the gap (the paper's dual variable, Appendix F; the authors' with_lagrange);
             without, alpha is fixed
    actor:   minimise E_s [alpha_ent log pi(a|s) - min(Q1, Q2)(s, a)], a ~ pi(.|s)  (SAC, Eq. 7)
    alpha_ent: tuned toward the target entropy -dim(A) (SAC, Eq. 18), or fixed by ent_coef
    targets: theta' <- tau theta + (1 - tau) theta' after every update

Each update, as acrl's SAC: the critics (TD + CQL penalty; the Lagrange multiplier, when tuned, steps on
the same batch's diffs), the actor on the updated critics, the entropy temperature, the target critics.
`CQL` is a `SAC`: the networks, their optimizers and the actor's and temperature's steps are SAC's
(`SAC._build_sac` with actor_learning_rate, `SAC.policy_step`); the critics' loss and target are its own.
The sampled actions and their log-densities are drawn without gradients (the authors' detach), so the
penalty trains the critics only. Not included: the authors' optional behaviour-cloning warm-up of the
policy (policy_eval_start) and the max-backup target. Correctness (docs/correctness.md items 1, 9, 19):
not_done is 1 - terminated only; the target critics start as exact copies; every sampled action's
log-density is subtracted inside the log-sum-exp.

Actions are in policy units [-1, 1] (tanh's range); `num_steps` counts gradient updates. Box actions and
vector observations; for a Discrete action space, `acrl.algos.discrete_cql`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import gymnasium as gym
import torch

from acrl.algos.off_policy import TDConfig
from acrl.algos.sac import SAC, Temperature
from acrl.core.config import RunConfig, layer_widths, positive
from acrl.core.errors import InputError
from acrl.parts.nets import inplace_relu
from acrl.parts.optim import polyak_update
from acrl.parts.returns import td_target

MAX_LAGRANGE_MULTIPLIER = 1e6
"""The clamp of the Lagrange multiplier alpha' (the authors' code: clamp(exp(log_alpha_prime), 0, 1e6))."""


@dataclass
class CQLConfig(TDConfig):
    """CQL hyperparameters; defaults are the paper's for the D4RL Gym tasks (Kumar et al. 2020, Appendix F)
    and the authors' code (examples/cql_mujoco_new.py): SAC's networks and settings with a slower policy.

    Attributes (besides TDConfig's: gamma 0.99, tau 0.005):
        total_steps: gradient updates (1,000,000).
        batch_size: transitions per update (256).
        learning_rate: Adam step size of the critics and of the Lagrange multiplier (3e-4).
        actor_learning_rate: Adam step size of the policy and of the entropy temperature (1e-4).
        hidden_sizes: hidden ReLU layers of the policy and of each critic (256, 256, 256).
        cql_alpha: alpha, the weight of the CQL penalty, >= 0 (5.0, the authors' min_q_weight for Gym; CORL
            uses 10).
        n_action_samples: N, actions sampled per state from each of the three proposals (10).
        target_action_gap: None: alpha fixed; a number: the Lagrangian version, alpha' tuned so that
            alpha * (log-sum-exp - Q(s, a)) stays near this threshold (the authors' lagrange_thresh).
        ent_coef: a fixed entropy temperature > 0, or None (default) to tune it toward target_entropy.
        target_entropy: the entropy target in nats when tuned; None means -dim(A).
        init_ent_coef: the temperature at the start when tuned (1.0).
    """

    total_steps: int = 1_000_000
    eval_freq: int = 5_000
    batch_size: int = 256
    learning_rate: float = 3e-4
    actor_learning_rate: float = 1e-4
    hidden_sizes: tuple[int, ...] = (256, 256, 256)
    cql_alpha: float = 5.0
    n_action_samples: int = 10
    target_action_gap: float | None = None
    ent_coef: float | None = None
    target_entropy: float | None = None
    init_ent_coef: float = 1.0

    def validate(self) -> None:
        """Raise `InputError` for values CQL cannot run with (see the attribute list)."""
        super().validate()
        positive(self, "learning_rate", "actor_learning_rate", "n_action_samples", "ent_coef", "init_ent_coef")
        if not self.cql_alpha >= 0:
            raise InputError(
                f"cql_alpha must be >= 0 (the weight of the conservative penalty; 0 is SAC on the data, the paper "
                f"uses 5 or 10), got {self.cql_alpha}."
            )
        layer_widths(self, "hidden_sizes")


def cql_penalty(q_sampled: torch.Tensor, log_density: torch.Tensor, q_data: torch.Tensor) -> torch.Tensor:
    """CQL(H)'s gap per state, log sum_j exp(Q(s, a_j) - log mu(a_j)) - Q(s, a) (B,) float32 (Kumar et al.
    2020, Eq. 4 with Appendix F's importance-sampled log-sum-exp).

    Args:
        q_sampled: (B, M) float32, Q(s, a_j) of M sampled actions per state.
        log_density: (B, M) float32, log mu(a_j) of each under the proposal that drew it (uniform on
            [-1, 1]^d: -d log 2; the policy: log pi(a_j | .)), without gradient.
        q_data: (B,) float32, Q(s, a) of the dataset's action.
    """
    return torch.logsumexp(q_sampled - log_density, dim=1) - q_data


class CQL(SAC):
    """CQL agent on SAC, offline: `CQL(dataset="hopper-medium.h5", seed=0).learn(100_000)`; `num_steps` counts
    updates. `predict` takes tanh of the policy's mean (deterministic) or a sample.

    Raises:
        InputError: see `Agent` and `CQLConfig.validate`; no dataset and no buffer; a Discrete action space
            (naming discrete CQL) or an unbounded Box; at `learn`, a dataset that is missing, corrupt or does
            not fit the environment's spaces.
    """

    algo: ClassVar[str] = "cql"
    config_class: ClassVar[type[RunConfig]] = CQLConfig
    action_kinds = (gym.spaces.Box,)
    action_space_hint = "For a Discrete action space use discrete CQL (DiscreteCQL, `acrl train discrete_cql`)."
    requires_data = True
    config: CQLConfig

    def _build_networks(self) -> None:
        cfg = self.config
        self._build_sac(cfg.actor_learning_rate)
        self.lagrangian = cfg.target_action_gap is not None
        self.lagrange_multiplier = Temperature(1.0)  # alpha' = exp(log alpha'), the authors' log_alpha_prime 0
        self.lagrange_multiplier.requires_grad_(self.lagrangian)
        self.nets["lagrange_multiplier"] = self.lagrange_multiplier
        if self.lagrangian:
            self.lagrange_optimizer = torch.optim.Adam(self.lagrange_multiplier.parameters(), lr=cfg.learning_rate)
            self.optimizers["lagrange_multiplier"] = self.lagrange_optimizer
        inplace_relu(self.critic, self.critic_target)

    @torch.no_grad()
    def sampled_actions(self, obs: torch.Tensor, next_obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The penalty's 3N actions per state and their log-densities, without gradients (Appendix F).

        obs, next_obs (B, obs_dim) -> actions (B, 3N, act_dim) in [-1, 1] and log mu (B, 3N) float32: N uniform
        (log density -act_dim log 2), N from pi(.|s), N from pi(.|s'), N = n_action_samples, from torch's
        generator.
        """
        n, (b, d) = self.config.n_action_samples, (len(obs), self.act_dim)
        uniform = torch.rand(b, n, d, device=obs.device) * 2.0 - 1.0
        at_s, log_pi_s = self.actor.sample_n(obs, n)
        at_next, log_pi_next = self.actor.sample_n(next_obs, n)
        log_uniform = torch.full((b, n), -d * math.log(2.0), device=obs.device)
        return torch.cat([uniform, at_s, at_next], dim=1), torch.cat([log_uniform, log_pi_s, log_pi_next], dim=1)

    def _update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One update (`OffPolicyAgent.update` counts it): the critics on the TD error plus the CQL penalty
        (`cql_penalty`, weighted by cql_alpha, or by alpha' against target_action_gap with alpha' stepped
        too), the actor, the entropy temperature when tuned, then the target critics.

        Keys: train/value_loss (the TD part), train/cql_penalty (the mean log-sum-exp gap of Q1 and Q2),
        train/q_mean, train/policy_loss, train/entropy, train/ent_coef, train/ent_coef_loss when tuned,
        train/lagrange_multiplier when the Lagrangian is used.
        """
        cfg = self.config
        obs, actions = batch["observations"], batch["actions"]
        alpha = self.temperature().detach()
        with self.autocast():  # the forward passes in the run's precision; backward and steps outside
            with torch.no_grad():
                next_actions, _ = self.actor.sample(batch["next_observations"])
                next_q = torch.min(*self.critic_target(batch["next_observations"], next_actions))
                target = td_target(batch["rewards"], batch["not_done"], next_q, cfg.gamma)
            sampled, log_density = self.sampled_actions(obs, batch["next_observations"])
            m = sampled.shape[1]
            q1_sampled, q2_sampled = self.critic(obs.repeat_interleave(m, dim=0), sampled.view(-1, self.act_dim))
            q1, q2 = self.critic(obs, actions)
            value_loss = (q1 - target).square().mean() + (q2 - target).square().mean()
            gap1 = cql_penalty(q1_sampled.view(-1, m), log_density, q1).mean()
            gap2 = cql_penalty(q2_sampled.view(-1, m), log_density, q2).mean()
        metrics: dict[str, float] = {}
        if self.lagrangian:
            multiplier = self.lagrange_multiplier().clamp(max=MAX_LAGRANGE_MULTIPLIER)
            excess = cfg.cql_alpha * 0.5 * (gap1 + gap2).detach() - cfg.target_action_gap
            lagrange_loss = -multiplier * excess  # gradient ascent on alpha' while the gap exceeds the target
            self.lagrange_optimizer.zero_grad(set_to_none=True)
            lagrange_loss.backward()
            self.lagrange_optimizer.step()
            multiplier = multiplier.detach()
            penalty = multiplier * (cfg.cql_alpha * (gap1 + gap2) - 2.0 * cfg.target_action_gap)
            metrics["train/lagrange_multiplier"] = multiplier.item()
        else:
            penalty = cfg.cql_alpha * (gap1 + gap2)
        critic_loss = value_loss + penalty
        self.critic_optimizer.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.critic_optimizer.step()

        metrics |= {
            "train/value_loss": value_loss.item(),
            "train/cql_penalty": 0.5 * (gap1 + gap2).item(),
            "train/q_mean": q1.detach().mean().item(),
        }
        metrics |= self.policy_step(obs, alpha)  # SAC's actor and temperature steps, on the updated critics
        polyak_update(self.critic_target, self.critic, cfg.tau)
        return metrics

    def __repr__(self) -> str:
        return f"CQL(env_id={self.config.env_id!r}, dataset={self.config.dataset!r}, updates={self.num_steps})"
