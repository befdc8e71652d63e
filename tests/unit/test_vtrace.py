"""V-trace (Espeholt et al. 2018, Eq. 1 and Sec. 4.2) against hand-worked values (docs/correctness.md item 15)."""

import math

import pytest
import torch

from acrl.parts.returns import vtrace


def col(values, dtype=torch.float32):
    """A (T,) list as a (T, 1) tensor: one environment."""
    return torch.tensor(values, dtype=dtype)[:, None]


def no_end(steps):
    return col([False] * steps, torch.bool)


def test_an_off_policy_unroll_clipping_both_rho_and_c_gives_the_hand_worked_targets_and_advantages():
    # The docstring's example: pi / mu = [2, 0.5, 1]; rho_bar = pg_rho_bar = 1.5, c_bar = 1, so step 0's rho is
    # clipped to 1.5 and its c to 1. rewards [1, 2, 3], V = [1, 2, 3], V(x_3) = 4, gamma 0.9, lambda 1.
    #   TD errors [1.8, 2.7, 3.6]; delta V = rho * TD = [2.7, 1.35, 3.6]
    #   v_2 = 3 + 3.6 = 6.6; v_1 = 2 + 1.35 + 0.9 * 0.5 * (6.6 - 3) = 4.97; v_0 = 1 + 2.7 + 0.9 * 1 * (4.97 - 2) = 6.373
    #   A = [1.5 (1 + 0.9 * 4.97 - 1), 0.5 (2 + 0.9 * 6.6 - 2), 1 (3 + 0.9 * 4 - 3)] = [6.7095, 2.97, 3.6]
    behaviour = col([0.0, 0.0, 0.0])
    target = col([math.log(2.0), math.log(0.5), 0.0])
    rewards, values, next_values = col([1, 2, 3]), col([1, 2, 3]), col([2, 3, 4])
    vs, advantages = vtrace(
        behaviour, target, rewards, values, next_values, no_end(3), no_end(3), 0.9, 1.0, 1.5, 1.0, 1.5
    )
    torch.testing.assert_close(vs[:, 0], torch.tensor([6.373, 4.97, 6.6]))
    torch.testing.assert_close(advantages[:, 0], torch.tensor([6.7095, 2.97, 3.6]))
    # Without clipping c (c_bar 2: c_0 = 2), v_0 = 1 + 2.7 + 0.9 * 2 * 2.97 = 9.046; v_1, v_2 unchanged.
    vs, _ = vtrace(behaviour, target, rewards, values, next_values, no_end(3), no_end(3), 0.9, 1.0, 1.5, 2.0, 1.5)
    torch.testing.assert_close(vs[:, 0], torch.tensor([9.046, 4.97, 6.6]))
    # pg_rho_bar 1 clips the advantage's weight apart from rho; lambda 0.5 halves c = [0.5, 0.25, 0.5]:
    # v_1 = 2 + 1.35 + 0.9 * 0.25 * 3.6 = 4.16, v_0 = 1 + 2.7 + 0.9 * 0.5 * (4.16 - 2) = 4.672,
    # A_0 = 1 (1 + 0.9 v_1 - 1).
    vs, advantages = vtrace(
        behaviour, target, rewards, values, next_values, no_end(3), no_end(3), 0.9, 0.5, 1.5, 1.0, 1.0
    )
    torch.testing.assert_close(vs[:, 0], torch.tensor([4.672, 4.16, 6.6]))
    assert advantages[0, 0].item() == pytest.approx(1 + 0.9 * 4.16 - 1)


def test_on_policy_targets_are_the_n_step_bootstrapped_returns_whatever_the_values():
    # pi = mu, rho = c = 1, lambda 1; rewards 1, V(x_3) = 10, gamma 0.5:
    # v_2 = 1 + 0.5 * 10 = 6, v_1 = 1 + 0.5 + 0.25 * 10 = 4, v_0 = 1 + 0.5 + 0.25 + 0.125 * 10 = 3.
    log_probs = col([-0.3, -1.2, -2.0])
    values = col([5, -2, 7])
    next_values = col([-2, 7, 10])
    vs, advantages = vtrace(log_probs, log_probs, col([1, 1, 1]), values, next_values, no_end(3), no_end(3), 0.5)
    torch.testing.assert_close(vs[:, 0], torch.tensor([3.0, 4.0, 6.0]))
    # on-policy, r_s + gamma v_{s+1} - V(x_s) is the n-step return minus the value: [3 - 5, 4 + 2, 6 - 7]
    torch.testing.assert_close(advantages[:, 0], torch.tensor([-2.0, 6.0, -1.0]))


def test_a_truncation_bootstraps_from_the_final_observation_and_a_termination_does_not():
    # The episode ends after step 1; V = 0, V(final obs) = 10 there, V(x_3) = 0, gamma = lambda = 1, on-policy.
    # Truncated: v_1 = 1 + 10 = 11 (the trace stops: step 2 is another episode), v_0 = 1 + 11 = 12, v_2 = 1;
    # A_1 = 1 + 10 - 0 (v_2 = V(final obs), not the next episode's v_2), A_0 = 1 + v_1 = 12.
    # Terminated: nothing after step 1: v = [2, 1, 1], A = [2, 1, 1].
    zeros = col([0.0, 0.0, 0.0])
    ended = col([False, True, False], torch.bool)
    rewards, next_values = col([1, 1, 1]), col([0, 10, 0])
    vs, advantages = vtrace(zeros, zeros, rewards, zeros, next_values, no_end(3), ended, 1.0)
    torch.testing.assert_close(vs[:, 0], torch.tensor([12.0, 11.0, 1.0]))
    torch.testing.assert_close(advantages[:, 0], torch.tensor([12.0, 11.0, 1.0]))
    vs, advantages = vtrace(zeros, zeros, rewards, zeros, next_values, ended, no_end(3), 1.0)
    torch.testing.assert_close(vs[:, 0], torch.tensor([2.0, 1.0, 1.0]))
    torch.testing.assert_close(advantages[:, 0], torch.tensor([2.0, 1.0, 1.0]))


def test_the_policy_gradient_advantage_uses_the_next_target_not_the_next_value():
    # V = 0 everywhere, rewards [0, 1], V(x_2) = 0, gamma 1, on-policy: v_1 = 1, v_0 = 1.
    # A_0 = r_0 + v_1 - V(x_0) = 1; with V(x_1) in place of v_1 it would be 0.
    zeros = col([0.0, 0.0])
    vs, advantages = vtrace(zeros, zeros, col([0, 1]), zeros, zeros, no_end(2), no_end(2), 1.0)
    torch.testing.assert_close(vs[:, 0], torch.tensor([1.0, 1.0]))
    torch.testing.assert_close(advantages[:, 0], torch.tensor([1.0, 1.0]))


def test_environments_side_by_side_are_independent_and_nothing_carries_gradients():
    # Two environments: the second is the first's rewards doubled; the targets double too (V = 0, on-policy).
    target = torch.zeros(3, 2, requires_grad=True)
    rewards = torch.tensor([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]])
    zeros = torch.zeros(3, 2)
    no = torch.zeros(3, 2, dtype=torch.bool)
    vs, advantages = vtrace(zeros, target, rewards, zeros, zeros, no, no, 1.0)
    torch.testing.assert_close(vs, torch.tensor([[3.0, 6.0], [2.0, 4.0], [1.0, 2.0]]))
    assert not vs.requires_grad and not advantages.requires_grad
