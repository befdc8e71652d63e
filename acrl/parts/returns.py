"""Pure functions for returns and advantages, with termination and truncation kept apart.

Arrays are float32 numpy of shape (T, N): T time steps of N environments (N may be 1); V-trace's
targets (`vtrace`) are torch tensors (T, N), computed where IMPALA's learner holds its batch; the
replay buffers' n-step returns (`n_step_returns`) are torch tensors of sampled windows (B, n),
and the off-policy critics' one-step targets (`td_target`) torch tensors of sampled batches (B,).
A step that ends by *termination* has no future: nothing is bootstrapped. A step that ends
by *truncation* (a time limit) had a future the rollout did not see: it bootstraps from
V(final observation) (Pardo et al. 2018, "Time Limits in Reinforcement Learning").
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch


def gae(
    rewards: np.ndarray,
    values: np.ndarray,
    next_values: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    gamma: float,
    gae_lambda: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimation, GAE(lambda) (Schulman et al. 2016, Eq. 16).

    delta_t = r_t + gamma * (1 - terminated_t) * V(s_{t+1}) - V(s_t)
    A_t     = delta_t + gamma * lambda * (1 - done_t) * A_{t+1},   done = terminated or truncated

    Args:
        rewards, values: (T, N) float32: r_t and V(s_t).
        next_values: (T, N) float32: V of the observation that followed step t, i.e.
            V(s_{t+1}) inside an episode, V(final observation) where the episode was
            truncated, and the bootstrap value after the last step of the rollout.
        terminated, truncated: (T, N) bool.
        gamma: discount in [0, 1]; gae_lambda: in [0, 1].
    Returns:
        (advantages, returns) each (T, N) float32; returns = advantages + values are the
        value-function targets (TD(lambda) returns).
    """
    not_terminal = 1.0 - terminated.astype(np.float32)
    not_done = 1.0 - (terminated | truncated).astype(np.float32)
    deltas = rewards + gamma * not_terminal * next_values - values
    advantages = np.zeros_like(deltas, dtype=np.float32)
    running = np.zeros(deltas.shape[1:], dtype=np.float32)
    for t in range(len(deltas) - 1, -1, -1):
        running = deltas[t] + gamma * gae_lambda * not_done[t] * running
        advantages[t] = running
    return advantages, advantages + values


def segment_advantages(
    rewards: np.ndarray, values: np.ndarray, bootstrap_value: np.ndarray | float, gamma: float, gae_lambda: float
) -> tuple[np.ndarray, np.ndarray]:
    """GAE(lambda) advantages and value targets of rollout segments with no episode end inside (A3C):
    `gae` with V(s_T) = bootstrap_value after the last step and no termination or truncation before it.

    bootstrap_value is V(last observation) when the segment stopped mid-episode or was truncated
    by a time limit, 0 when it terminated. With lambda = 1 the targets are the n-step returns of
    Mnih et al. 2016, Algorithm S3, R_t = r_t + gamma * R_{t+1}, R_T = bootstrap_value, and
    A_t = R_t - V(s_t); with bootstrap_value = 0 and V = 0, the Monte Carlo discounted returns.

    Args:
        rewards, values: (T,) or (T, N) float32: r_t and V(s_t) of one segment, or of N
            segments of the same length side by side (one per environment).
        bootstrap_value: the value after the last step: a float, or (N,) float32.
        gamma: discount in [0, 1]; gae_lambda: in [0, 1].
    Returns:
        (advantages, targets), each float32 of the shape of `rewards`.
    """
    last = np.asarray(bootstrap_value, dtype=np.float32).reshape((1, *values.shape[1:]))
    no_end = np.zeros(rewards.shape, dtype=bool)
    return gae(rewards, values, np.concatenate([values[1:], last]), no_end, no_end, gamma, gae_lambda)


class VTrace(NamedTuple):
    """What `vtrace` returns, each (T, N) float32 without gradients.

    Attributes:
        vs: the V-trace targets v_s of V(x_s) (Espeholt et al. 2018, Eq. 1).
        pg_advantages: rho_s (r_s + gamma v_{s+1} - V(x_s)) with the policy gradient's clipped rho (Sec. 4.2).
    """

    vs: torch.Tensor
    pg_advantages: torch.Tensor


@torch.no_grad()
def vtrace(
    behaviour_log_probs: torch.Tensor,
    target_log_probs: torch.Tensor,
    rewards: torch.Tensor,
    values: torch.Tensor,
    next_values: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    gamma: float,
    vtrace_lambda: float = 1.0,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
    pg_rho_bar: float = 1.0,
) -> VTrace:
    """V-trace targets and policy-gradient advantages of T steps of N environments acted by a behaviour policy
    mu and learned by a target policy pi (Espeholt et al. 2018, "IMPALA", Eq. 1 and Sec. 4.2).

    With the truncated importance weights rho_t = min(rho_bar, pi(a_t|x_t) / mu(a_t|x_t)) and
    c_t = lambda min(c_bar, pi(a_t|x_t) / mu(a_t|x_t)) (Sec. 4.1, and Remark 2 for lambda):

        delta_t V = rho_t (r_t + gamma V(x_{t+1}) - V(x_t))
        v_s       = V(x_s) + sum_{t >= s} gamma^{t-s} (c_s ... c_{t-1}) delta_t V                  (Eq. 1)
                  = V(x_s) + delta_s V + gamma c_s (v_{s+1} - V(x_{s+1}))                    (the recursion used)
        A_s       = min(pg_rho_bar, pi / mu)(a_s|x_s) (r_s + gamma v_{s+1} - V(x_s))          (Sec. 4.2)

    with v_T = V(x_T) after the last step. Episode ends are those of `gae` (docs/correctness.md items 1 and 15):
    a terminated step has no future (gamma V(x_{t+1}) and gamma v_{t+1} are 0); a truncated one bootstraps from
    V(final observation), its `next_values` entry, and v_{t+1} = V(final observation) (no later step of that
    episode corrects it); at either, the trace stops: step t + 1 belongs to another episode. On-policy
    (pi = mu) with rho_bar, c_bar >= 1 and lambda = 1, v_s is the n-step bootstrapped return
    r_s + gamma r_{s+1} + ... + gamma^{T-s} V(x_T), the target of A3C (Mnih et al. 2016, Algorithm S3).

    Worked example (one environment, the test's): log-ratios log 2, log 0.5, 0 (pi / mu = 2, 0.5, 1),
    rho_bar = pg_rho_bar = 1.5 and c_bar = 1 (so rho = [1.5, 0.5, 1], c = [1, 0.5, 1]: step 0 clips both),
    rewards [1, 2, 3], V = [1, 2, 3], V(x_3) = 4, gamma = 0.9, lambda = 1, no episode end:
    TD errors [1 + 1.8 - 1, 2 + 2.7 - 2, 3 + 3.6 - 3] = [1.8, 2.7, 3.6], delta V = [2.7, 1.35, 3.6];
    v_2 = 3 + 3.6 = 6.6, v_1 = 2 + 1.35 + 0.9 * 0.5 * 3.6 = 4.97, v_0 = 1 + 2.7 + 0.9 * 1 * 2.97 = 6.373;
    A = [1.5 (1 + 0.9 * 4.97 - 1), 0.5 (2 + 0.9 * 6.6 - 2), 1 (3 + 0.9 * 4 - 3)] = [6.7095, 2.97, 3.6].

    Args:
        behaviour_log_probs: (T, N) float32 log mu(a_t|x_t), as the actor acted.
        target_log_probs: (T, N) float32 log pi(a_t|x_t) under the learner's current policy.
        rewards, values: (T, N) float32 r_t and the learner's V(x_t).
        next_values: (T, N) float32 V of the observation after step t: V(x_{t+1}) inside an episode,
            V(final observation) where the episode was truncated (anything where it terminated), and the
            bootstrap value V(x_T) after the last step (as `gae` takes it).
        terminated, truncated: (T, N) bool.
        gamma: discount in [0, 1]; vtrace_lambda: lambda in [0, 1]; rho_bar, c_bar, pg_rho_bar: the clipping
            thresholds (the paper's 1, 1, 1).
    Returns:
        `VTrace` (vs, pg_advantages), each (T, N) float32, without gradients.
    """
    ratios = (target_log_probs - behaviour_log_probs).exp()
    rhos, cs = ratios.clamp(max=rho_bar), vtrace_lambda * ratios.clamp(max=c_bar)
    not_terminal = (~terminated).to(values.dtype)
    not_done = (~(terminated | truncated)).to(values.dtype)
    deltas = rhos * (rewards + gamma * not_terminal * next_values - values)
    corrections = torch.zeros_like(values)  # v_s - V(x_s)
    running = torch.zeros_like(values[0])
    for t in range(len(values) - 1, -1, -1):
        running = deltas[t] + gamma * cs[t] * not_done[t] * running
        corrections[t] = running
    # v_{s+1}: the next step's target inside an episode (v_T = V(x_T)); V(final observation) at a truncation
    next_vs = next_values + not_done * torch.cat([corrections[1:], torch.zeros_like(corrections[:1])])
    pg_advantages = ratios.clamp(max=pg_rho_bar) * (rewards + gamma * not_terminal * next_vs - values)
    return VTrace(values + corrections, pg_advantages)


def n_step_returns(
    rewards: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    valid: torch.Tensor,
    gamma: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """n-step returns of sampled transitions from the windows of transitions that follow them
    (Sutton and Barto 2018, Sec. 7.1; the n-step targets of Hessel et al. 2018, "Rainbow", Eq. 2).

    Window j of row b is transition t + j of the environment that gave transition t, the sampled one
    (j = 0). The window is cut after its first transition that ended (terminated or truncated) and
    before its first one that is not `valid` (not yet collected, overwritten, or of another episode),
    leaving k >= 1 transitions; then

        R = sum_{j < k} gamma^j r_{t+j},    target y = R + gamma^k * (1 - terminated_{t+k-1}) * Q'(s_{t+k})

    so a termination inside the window cuts the return and a truncation bootstraps from the true
    final observation (docs/correctness.md item 1). With n = 1 these are the one-step returns.

    Args:
        rewards: (B, n) float32; terminated, truncated, valid: (B, n) bool (valid[:, 0] is taken as
            True: the sampled transition itself); gamma: discount in [0, 1].
    Returns:
        (R (B,) float32, gamma^k (B,) float32, k - 1 (B,) int64: the window's last transition, whose
        next observation and terminated flag the target uses).
    """
    n = rewards.shape[1]
    ended = terminated | truncated
    go_on = valid.clone()
    go_on[:, 0] = True
    go_on[:, 1:] &= ~ended[:, :-1]
    included = go_on.to(torch.int8).cummin(dim=1).values.to(rewards.dtype)  # 1 until the first stop, then 0
    powers = gamma ** torch.arange(n, dtype=rewards.dtype, device=rewards.device)
    k = included.sum(dim=1)
    return (rewards * powers * included).sum(dim=1), gamma**k, k.long() - 1


def td_target(rewards: torch.Tensor, not_done: torch.Tensor, next_q: torch.Tensor, gamma: float) -> torch.Tensor:
    """One-step TD target y = r + gamma * not_done * Q'(s', a') (Lillicrap et al. 2016, Alg. 1): the
    critics' target of DDPG, TD3 (next_q the min of the twin target critics) and SAC (the soft value).

    Args:
        rewards, not_done, next_q: (B,) float32; not_done = 1 - terminated, so a transition cut
            by a time limit still bootstraps (docs/correctness.md item 1).
        gamma: discount in [0, 1].
    Returns:
        (B,) float32 targets.
    """
    return rewards + gamma * not_done * next_q
