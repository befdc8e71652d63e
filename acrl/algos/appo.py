"""APPO: IMPALA's actors and V-trace with PPO's clipped surrogate and a target network, as RLlib's APPO
(ray 2.60: `ray.rllib.algorithms.appo`, `APPOConfig` and `APPOTorchLearner.compute_loss_for_module`), which
follows IMPACT (Luo et al. 2020, arXiv:1912.00167, Sec. 4).

Everything but the policy term is IMPALA's (`acrl.algos.impala`: the Ray actors, the step counting, the faults,
the value loss and entropy bonus, RMSProp). The learner keeps a target network pi', a copy of the policy that
is refreshed every `target_update_interval` updates (RLlib's tau = 1), and per batch:

    rerun the batch with the policy pi and with pi' (no gradient)
    v_s, A_s = vtrace(log mu, log pi', r, V, ...)             (the targets and advantages from pi', not pi)
    r_s = min(mu / pi', target_worker_clipping) * pi / mu      (IMPACT's target-worker clipping, 2)
    loss = sum_{s, n} [-min(r_s A_s, clip(r_s, 1 - eps, 1 + eps) A_s)
                       + vf_coef 1/2 (v_s - V(x_s))^2 - ent_coef H[pi(.|x_s)]]       (eps = clip_range, 0.4)

Where acrl's APPO differs from RLlib's: the loss is summed over the batch's steps and stepped with IMPALA's
RMSProp (epsilon inside the square root), as acrl's IMPALA, where RLlib averages and steps with Adam (lr
0.0005); each batch is used once (RLlib's `use_circular_buffer=False`), and RLlib's optional KL term
(`use_kl_loss`, off by default) is not included.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import torch

from acrl.algos.impala import IMPALA, IMPALAConfig, batch_vtrace, rerun
from acrl.core.config import positive
from acrl.core.errors import InputError
from acrl.parts.actor_critic import ActorCritic


@dataclass
class APPOConfig(IMPALAConfig):
    """APPO hyperparameters: IMPALA's (`IMPALAConfig`, the paper's Atari settings) and RLlib APPOConfig's own
    defaults for the three below.

    Attributes (besides IMPALAConfig's):
        clip_range: eps of the clipped surrogate (RLlib's clip_param, 0.4).
        target_worker_clipping: the ratio mu / pi' is clipped at this (2.0).
        target_update_interval: learner updates between copies of the policy into the target network (RLlib's
            target_network_update_freq 2, in units of its circular buffer's 8 batches x 2 passes: 32).
    """

    clip_range: float = 0.4
    target_worker_clipping: float = 2.0
    target_update_interval: int = 32

    def validate(self) -> None:
        """Raise `InputError` for values APPO cannot run with (see the attribute lists)."""
        super().validate()
        positive(self, "target_worker_clipping", "target_update_interval")
        if not 0 < self.clip_range < 1:
            raise InputError(f"clip_range must lie in (0, 1), got {self.clip_range}.")


def surrogate_ratio(
    log_probs: torch.Tensor, target_log_probs: torch.Tensor, behaviour_log_probs: torch.Tensor, clipping: float
) -> torch.Tensor:
    """r = min(mu / pi', clipping) pi / mu (IMPACT's target-worker clipping, Luo et al. 2020, Sec. 4.2; RLlib's
    is_ratio * logp_ratio): pi / pi' while the behaviour policy mu is within a factor `clipping` of pi'.

    Args:
        log_probs: (T, B) float32 log pi(a|x), with gradients; target_log_probs: log pi'(a|x); behaviour_log_probs:
            log mu(a|x).
    Returns:
        (T, B) float32 r, with gradients through `log_probs`.
    """
    worker_ratio = (behaviour_log_probs - target_log_probs).exp().clamp(max=clipping)
    return worker_ratio * (log_probs - behaviour_log_probs).exp()


def clipped_surrogate(advantages: torch.Tensor, ratio: torch.Tensor, clip_range: float) -> torch.Tensor:
    """-min(r A, clip(r, 1 - eps, 1 + eps) A) per step (Schulman et al. 2017, Eq. 7, negated to a loss).

    Args:
        advantages: (T, B) float32 A_s, the V-trace policy-gradient advantages from pi'.
        ratio: (T, B) float32 r (`surrogate_ratio`); clip_range: eps.
    Returns:
        (T, B) float32, the policy term of each step (to be summed).
    """
    return -torch.min(ratio * advantages, ratio.clamp(1 - clip_range, 1 + clip_range) * advantages)


def appo_loss(
    model: ActorCritic, target_model: ActorCritic, batch: dict[str, Any], config: APPOConfig
) -> tuple[torch.Tensor, dict]:
    """APPO's loss of one batch (the module docstring's), summed over its T B steps.

    Args:
        model: the policy and value, pi and V; target_model: the target network pi' (no gradient flows to it).
        batch: `acrl.algos.impala.batch_unrolls`' dict.
        config: IMPALA's V-trace and loss weights, clip_range, target_worker_clipping.
    Returns:
        (the scalar loss with gradients to `model`, {"policy_loss", "value_loss", "entropy", "rho",
        "clip_fraction"}: the per-step means of the surrogate term, (v_s - V(x_s))^2 and the entropy, the mean
        pi' / mu, and the fraction of steps whose ratio r lies outside [1 - eps, 1 + eps]).
    """
    log_probs, entropy, values, next_values = rerun(model, batch)
    with torch.no_grad():
        target_log_probs = rerun(target_model, batch)[0]
    targets = batch_vtrace(batch, target_log_probs, values, next_values, config)
    behaviour = batch["behaviour_log_probs"]
    ratio = surrogate_ratio(log_probs, target_log_probs, behaviour, config.target_worker_clipping)
    policy_terms = clipped_surrogate(targets.pg_advantages, ratio, config.clip_range)
    squared_errors = (targets.vs - values).square()
    loss = policy_terms.sum() + config.vf_coef * 0.5 * squared_errors.sum() - config.ent_coef * entropy.sum()
    with torch.no_grad():
        clipped = ((ratio - 1).abs() > config.clip_range).float().mean()
        rho = (target_log_probs - behaviour).exp().mean()
        means = [policy_terms.mean(), squared_errors.mean(), entropy.mean(), rho, clipped]
    keys = ("policy_loss", "value_loss", "entropy", "rho", "clip_fraction")
    return loss, dict(zip(keys, torch.stack(means).tolist()))


class APPO(IMPALA):
    """APPO agent: `APPO(env="CartPole-v1", actors=2, seed=0).learn(total_steps)` (the `ray` extra); IMPALA's
    actors, checkpoints and faults (see `IMPALA`), with the loss and target network above. A checkpoint holds
    the target network too.

    Raises:
        InputError, TrainingError: see `IMPALA` and `APPOConfig.validate`.
    """

    algo = "appo"
    config_class = APPOConfig
    config: APPOConfig

    def _build(self) -> None:
        super()._build()
        self.target_model = copy.deepcopy(self.model).requires_grad_(False)
        self.nets["target_model"] = self.target_model

    def loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict]:
        """The learner's loss of a batch and its metrics (`appo_loss`)."""
        return appo_loss(self.model, self.target_model, batch, self.config)

    def iteration(self, max_steps: int) -> dict[str, float]:
        """IMPALA's iteration with APPO's loss; then, every `target_update_interval` updates, the policy is
        copied into the target network (Metrics: IMPALA's and train/clip_fraction)."""
        metrics = super().iteration(max_steps)
        if metrics and self.updates % self.config.target_update_interval == 0:
            self.target_model.load_state_dict(self.model.state_dict())
        return metrics
