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
