"""Running mean and variance, observation normalisation and reward scaling.

Statistics are float64 torch tensors so they can live in shared memory (A3C) and go into
checkpoints as plain tensors. Normalisation updates only when asked: training updates,
evaluation and `predict` never do (docs/correctness.md item 5).
"""

from __future__ import annotations

import numpy as np
import torch


class RunningMeanStd:
    """Mean and (population) variance of a stream of batches.

    Merges each batch with the parallel update of Chan, Golub and LeVeque 1979
    ("Updating formulae and a pairwise algorithm for computing sample variances"), so after
    any sequence of batches `mean` and `var` equal numpy's mean and var (ddof=0) of all data.

    Args:
        shape: shape of one sample, e.g. (obs_dim,).
    """

    def __init__(self, shape: tuple[int, ...]):
        self.mean = torch.zeros(shape, dtype=torch.float64)
        self.var = torch.ones(shape, dtype=torch.float64)
        self.count = torch.zeros((), dtype=torch.float64)

    def update(self, batch: np.ndarray | torch.Tensor) -> None:
        """Fold in a batch of shape (B, *shape)."""
        # numpy views of the tensors: the same (possibly shared) memory, updated in place, at a
        # fraction of torch's per-call overhead on these small arrays.
        mean, var, count = self.mean.numpy(), self.var.numpy(), self.count.numpy()
        # Sums rather than ndarray.mean/var: the same numbers with less Python around them,
        # which matters when this runs once per environment step on a batch of one.
        batch = np.asarray(batch, dtype=np.float64)
        n = batch.shape[0]
        batch_mean = batch.sum(0) / n
        batch_m2 = np.square(batch - batch_mean).sum(0)
        total = count + n
        delta = batch_mean - mean
        mean += delta * (n / total)
        var[...] = (var * count + batch_m2 + np.square(delta) * (count * n / total)) / total
        count[...] = total

    def share_memory(self) -> RunningMeanStd:
        """Move the statistics to shared memory (for A3C workers); returns self."""
        for t in (self.mean, self.var, self.count):
            t.share_memory_()
        return self

    def state_dict(self) -> dict[str, torch.Tensor]:
        """Copies of the statistics: {"mean", "var": float64 (shape), "count": float64 ()}."""
        return {"mean": self.mean.clone(), "var": self.var.clone(), "count": self.count.clone()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Copy `state_dict`'s statistics in place (shared memory stays shared)."""
        self.mean.copy_(state["mean"])
        self.var.copy_(state["var"])
        self.count.copy_(state["count"])


class IdentityNormalizer:
    """The normaliser of an agent that does not normalise: obs (B, ...) -> a tensor, unchanged.

    It has the interface of `ObservationNormalizer` (an empty state), so every agent has a
    normaliser and no code asks whether there is one.

    Args:
        dtype: the tensor's dtype, float32 by default; None keeps the array's own (PPO's uint8 or
            bool frames, which the network scales; a float copy of a frame is never made).
    """

    def __init__(self, dtype: torch.dtype | None = torch.float32):
        self.dtype = dtype

    def __call__(self, obs: np.ndarray, update: bool = False) -> torch.Tensor:
        """obs (B, ...) -> a tensor of the same shape, of `dtype` (no copy when it is the array's own);
        `update` changes nothing."""
        return torch.as_tensor(np.asarray(obs), dtype=self.dtype)

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The empty state: {}."""
        return {}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Accept the empty state (also what a checkpoint without normaliser statistics holds)."""


class ObservationNormalizer:
    """obs -> clip((obs - mean) / sqrt(var + eps), -clip, clip) with running statistics.

    Args:
        obs_dim: observation size.
        clip: bound on the normalised values (10 as in Stable-Baselines3's VecNormalize;
            the design documents' PPO used 5).
        epsilon: added to the variance, avoids division by zero for constant features.
    """

    def __init__(self, obs_dim: int, clip: float = 10.0, epsilon: float = 1e-8):
        self.stats = RunningMeanStd((obs_dim,))
        self.clip, self.epsilon = clip, epsilon

    def __call__(self, obs: np.ndarray, update: bool = False) -> torch.Tensor:
        """Normalise obs (B, obs_dim) (any float dtype) -> float32 tensor (B, obs_dim).

        With `update=True` the batch is first folded into the statistics (training only).
        """
        obs = np.asarray(obs, dtype=np.float64)
        if update:
            self.stats.update(obs)
        normalized = (obs - self.stats.mean.numpy()) / np.sqrt(self.stats.var.numpy() + self.epsilon)
        return torch.from_numpy(np.clip(normalized, -self.clip, self.clip).astype(np.float32))

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The running statistics (`RunningMeanStd.state_dict`)."""
        return self.stats.state_dict()

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restore what `state_dict` returned."""
        self.stats.load_state_dict(state)


class RewardScaler:
    """Divide rewards by the running std of the discounted return, per environment.

    The reward scaling of Engstrom et al. 2020 ("Implementation Matters in Deep Policy
    Gradients", Sec. 3, "Reward scaling"), as in Stable-Baselines3's VecNormalize: a running
    discounted return G <- gamma * G + r per env, reset at episode ends, whose variance
    scales the rewards; the result is clipped to [-clip, clip].

    Args:
        n_envs: number of parallel environments.
        gamma: the discount of the return being tracked.
        clip: bound on the scaled rewards.
    """

    def __init__(self, n_envs: int, gamma: float, clip: float = 10.0, epsilon: float = 1e-8):
        self.stats = RunningMeanStd(())
        self.discounted_return = np.zeros(n_envs)
        self.gamma, self.clip, self.epsilon = gamma, clip, epsilon

    def __call__(self, rewards: np.ndarray, dones: np.ndarray) -> np.ndarray:
        """rewards (N,) float, dones (N,) bool -> scaled rewards (N,) float32; updates the stats."""
        self.discounted_return = self.discounted_return * self.gamma + rewards
        self.stats.update(self.discounted_return)
        self.discounted_return[dones] = 0.0
        scale = float(np.sqrt(self.stats.var.numpy() + self.epsilon))
        return np.clip(rewards / scale, -self.clip, self.clip).astype(np.float32)

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The discounted return's running statistics (`RunningMeanStd.state_dict`)."""
        return self.stats.state_dict()

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restore what `state_dict` returned."""
        self.stats.load_state_dict(state)
