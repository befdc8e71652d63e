"""Running statistics against numpy, and the observation normaliser's formula."""

import numpy as np
import torch

from acrl.parts.normalization import ObservationNormalizer, RewardScaler, RunningMeanStd


def test_running_mean_std_matches_numpy_over_uneven_batches():
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 2.0, size=(n, 4)) for n in (1, 7, 100, 3)]
    stats = RunningMeanStd((4,))
    for batch in batches:
        stats.update(batch)
    data = np.concatenate(batches)
    np.testing.assert_allclose(stats.mean.numpy(), data.mean(0), rtol=1e-10)
    np.testing.assert_allclose(stats.var.numpy(), data.var(0), rtol=1e-10)
    assert stats.count.item() == len(data)


def test_normalizer_formula_and_clip():
    norm = ObservationNormalizer(2, clip=5.0)
    norm(np.array([[0.0, 0.0], [2.0, 4.0]]), update=True)  # mean [1, 2], var [1, 4]
    out = norm(np.array([[3.0, 2.0], [1.0, 100.0]]))
    expected = [[2.0 / np.sqrt(1 + 1e-8), 0.0], [0.0, 5.0]]  # (100 - 2) / 2 = 49 clipped to 5
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    assert out.dtype == torch.float32


def test_normalizer_without_update_leaves_statistics():
    norm = ObservationNormalizer(3)
    norm(np.ones((4, 3)), update=True)
    before = {k: v.clone() for k, v in norm.state_dict().items()}
    norm(np.random.default_rng(1).normal(size=(10, 3)))
    for key, value in norm.state_dict().items():
        assert torch.equal(value, before[key])


def test_reward_scaler_divides_by_return_std():
    # gamma 0: the tracked "return" is the reward itself; after rewards 1 and 3 the variance is 1.
    scaler = RewardScaler(n_envs=1, gamma=0.0, epsilon=1e-12)
    scaler(np.array([1.0]), np.array([False]))
    out = scaler(np.array([3.0]), np.array([False]))
    np.testing.assert_allclose(out, [3.0])


def test_reward_scaler_tracks_discounted_returns_reset_at_episode_ends():
    """Two envs, gamma 0.5; env 1's episode ends at the first step. By hand:
    step 1: G = (1, 3), statistics of {1, 3}: var 1, so the rewards are divided by 1; G -> (1, 0).
    step 2: G = (0.5 * 1 + 2, 0 + 4) = (2.5, 4); statistics of {1, 3, 2.5, 4}: mean 2.625,
    var (1.625^2 + 0.375^2 + 0.125^2 + 1.375^2) / 4 = 1.171875; rewards (2, 4) / sqrt(1.171875).
    (Without the reset, G would be (2.5, 5.5); a no-op scaler would return (2, 4).)"""
    scaler = RewardScaler(n_envs=2, gamma=0.5)
    np.testing.assert_allclose(scaler(np.array([1.0, 3.0]), np.array([False, True])), [1.0, 3.0], rtol=1e-6)
    out = scaler(np.array([2.0, 4.0]), np.array([False, False]))
    np.testing.assert_allclose(out, np.array([2.0, 4.0]) / np.sqrt(1.171875), rtol=1e-6)
    assert out.dtype == np.float32
