"""GAE(lambda) and n-step returns against hand-worked values (docs/correctness.md items 1 and 2)."""

import numpy as np
import pytest
import torch

from acrl.parts.returns import gae, n_step_returns


def col(values, dtype=np.float32):
    """A (T,) list as a (T, 1) array: one environment."""
    return np.array(values, dtype=dtype)[:, None]


def test_gae_resets_at_termination():
    # Termination after index 1, bootstrap 0, gamma = lambda = 1:
    # episode 1 = steps 0,1 -> advantages [2, 1]; episode 2 = steps 2,3 (bootstrap 0) -> [2, 1].
    rewards, values = col([1, 1, 1, 1]), col([0, 0, 0, 0])
    terminated = col([0, 1, 0, 0], bool)
    truncated = col([0, 0, 0, 0], bool)
    next_values = col([0, 0, 0, 0])
    advantages, returns = gae(rewards, values, next_values, terminated, truncated, 1.0, 1.0)
    np.testing.assert_array_equal(advantages[:, 0], [2, 1, 2, 1])
    np.testing.assert_array_equal(returns[:, 0], [2, 1, 2, 1])


def test_truncation_bootstraps_from_final_observation_value():
    # Truncated after index 1 with V(final obs) = 10; gamma = lambda = 1.
    # Step 1: delta = 1 + 10 - 0 = 11, advantage 11 (the chain stops at the episode end).
    # Step 0: delta = 1 + V(s1)=0 - 0 = 1, advantage 1 + 11 = 12.
    rewards, values = col([1, 1, 1]), col([0, 0, 0])
    terminated = col([0, 0, 0], bool)
    truncated = col([0, 1, 0], bool)
    next_values = col([0, 10, 0])
    advantages, _ = gae(rewards, values, next_values, terminated, truncated, 1.0, 1.0)
    np.testing.assert_array_equal(advantages[:, 0], [12, 11, 1])
    # The same step marked terminated instead must not bootstrap: [2, 1, 1].
    advantages, _ = gae(rewards, values, next_values, truncated, terminated, 1.0, 1.0)
    np.testing.assert_array_equal(advantages[:, 0], [2, 1, 1])


def test_gae_with_discount_and_lambda_below_one():
    # gamma 0.9, lambda 0.5, values [1, 2], rewards [1, 1], bootstrap V = 3, no episode end.
    # delta_1 = 1 + 0.9*3 - 2 = 1.7          A_1 = 1.7
    # delta_0 = 1 + 0.9*2 - 1 = 1.8          A_0 = 1.8 + 0.9*0.5*1.7 = 2.565
    rewards, values = col([1, 1]), col([1, 2])
    next_values = col([2, 3])
    no = col([0, 0], bool)
    advantages, returns = gae(rewards, values, next_values, no, no, 0.9, 0.5)
    np.testing.assert_allclose(advantages[:, 0], [2.565, 1.7], rtol=1e-6)
    np.testing.assert_allclose(returns[:, 0], [3.565, 3.7], rtol=1e-6)


def test_gae_keeps_environments_apart():
    # Two envs side by side: env 0 terminates at step 0, env 1 does not; gamma = lambda = 1.
    rewards = np.ones((2, 2), np.float32)
    values = np.zeros((2, 2), np.float32)
    terminated = np.array([[True, False], [False, False]])
    truncated = np.zeros((2, 2), bool)
    advantages, _ = gae(rewards, values, np.zeros((2, 2), np.float32), terminated, truncated, 1.0, 1.0)
    np.testing.assert_array_equal(advantages, [[1, 2], [1, 1]])


@pytest.mark.parametrize("gamma", [0.0, 0.99])
def test_gae_lambda_one_equals_discounted_return_minus_value(gamma):
    # With lambda = 1 and no episode end, A_t + V_t is the discounted return bootstrapped from V_T.
    rng = np.random.default_rng(0)
    rewards = rng.normal(size=(6, 1)).astype(np.float32)
    values = rng.normal(size=(6, 1)).astype(np.float32)
    last = np.float32(0.7)
    next_values = np.append(values[1:, 0], last)[:, None]
    no = np.zeros((6, 1), bool)
    _, returns = gae(rewards, values, next_values, no, no, gamma, 1.0)
    expected = [sum(gamma**k * rewards[t + k, 0] for k in range(6 - t)) + gamma ** (6 - t) * last for t in range(6)]
    np.testing.assert_allclose(returns[:, 0], expected, rtol=1e-5, atol=1e-6)


def test_n_step_returns_cut_at_termination_truncation_and_invalid():
    # gamma 0.5, rewards 1, 2, 4 in every window of 3 transitions:
    # row 0: nothing ends: R = 1 + 0.5 * 2 + 0.25 * 4 = 3, k = 3;
    # row 1: transition 1 terminates: R = 1 + 0.5 * 2 = 2, k = 2 (the target cuts: not_done 0);
    # row 2: transition 0 is truncated: R = 1, k = 1 (it bootstraps from its final observation);
    # row 3: transition 2 is not valid (not collected yet, or another episode): R = 2, k = 2;
    # row 4: transition 1 is not valid, transition 2 is: the window still stops at 1: R = 1, k = 1.
    rewards = torch.tensor([[1.0, 2.0, 4.0]] * 5)
    terminated = torch.zeros(5, 3, dtype=torch.bool)
    truncated = torch.zeros(5, 3, dtype=torch.bool)
    valid = torch.ones(5, 3, dtype=torch.bool)
    terminated[1, 1] = True
    truncated[2, 0] = True
    valid[3, 2] = False
    valid[4, 1] = False
    returns, discount, last = n_step_returns(rewards, terminated, truncated, valid, 0.5)
    torch.testing.assert_close(returns, torch.tensor([3.0, 2.0, 1.0, 2.0, 1.0]))
    torch.testing.assert_close(discount, torch.tensor([0.125, 0.25, 0.5, 0.25, 0.5]))
    assert last.tolist() == [2, 1, 0, 1, 0]
    # One step: the one-step targets.
    returns, discount, last = n_step_returns(rewards[:, :1], terminated[:, :1], truncated[:, :1], valid[:, :1], 0.9)
    torch.testing.assert_close(returns, torch.ones(5))
    torch.testing.assert_close(discount, torch.full((5,), 0.9))
    assert last.tolist() == [0] * 5
