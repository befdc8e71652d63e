"""Experience storage: the on-policy rollout buffer and the off-policy replay buffer.

Both keep `terminated` and `truncated` apart (docs/correctness.md item 1): only termination
cuts the return; truncation bootstraps.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

from acrl.core.errors import InputError


class RolloutBuffer:
    """Fixed-size on-policy storage of shape (T, N): T steps of N environments.

    Fields (numpy, float32 unless noted): observations (T, N, *obs_shape) of `obs_dtype` as the
    policy saw them (normalised vectors float32; image frames uint8 or bool, never a float copy),
    actions (T, N, act_dim) raw samples or (T, N) int64, log_probs,
    rewards, values, next_values (T, N), terminated, truncated (T, N) bool, and the
    advantages and returns (T, N) that the agent computes from them (PPO: `acrl.parts.returns.gae`).

    Args:
        n_steps: T; n_envs: N; obs_shape: an observation's shape ((obs_dim,), or an int obs_dim);
            action_shape: () for Discrete, (act_dim,) for Box; obs_dtype: the observations' dtype.
    """

    def __init__(
        self,
        n_steps: int,
        n_envs: int,
        obs_shape: int | tuple[int, ...],
        action_shape: tuple[int, ...],
        obs_dtype: np.dtype | type = np.float32,
    ):
        shape = (n_steps, n_envs)
        obs_shape = (obs_shape,) if isinstance(obs_shape, int) else tuple(obs_shape)
        self.observations = np.zeros((*shape, *obs_shape), dtype=obs_dtype)
        self.actions = np.zeros((*shape, *action_shape), dtype=np.int64 if action_shape == () else np.float32)
        self.log_probs = np.zeros(shape, dtype=np.float32)
        self.rewards = np.zeros(shape, dtype=np.float32)
        self.values = np.zeros(shape, dtype=np.float32)
        self.next_values = np.zeros(shape, dtype=np.float32)
        self.terminated = np.zeros(shape, dtype=bool)
        self.truncated = np.zeros(shape, dtype=bool)
        self.advantages = np.zeros(shape, dtype=np.float32)
        self.returns = np.zeros(shape, dtype=np.float32)
        self.n_steps, self.n_envs = n_steps, n_envs

    def minibatches(
        self,
        batch_size: int,
        rng: np.random.Generator,
        n_epochs: int = 1,
        device: torch.device | str = "cpu",
        normalize_advantages: bool = False,
    ) -> Iterator[dict[str, torch.Tensor]]:
        """Yield `n_epochs` passes over the T * N samples in minibatches, each a dict of tensors (B, ...).

        Each pass shuffles the samples and cuts them into consecutive minibatches of `batch_size`
        (the last one shorter when batch_size does not divide T * N). Keys: observations, actions,
        log_probs, values, advantages, returns. The rollout goes to `device` once per call, and
        the minibatches are cut there. When one minibatch holds the whole rollout
        (batch_size >= T * N), each pass yields it unshuffled, since the order inside a minibatch
        does not change an update: on the CPU, views of the buffer's arrays, valid until the
        next rollout.

        With `normalize_advantages`, each minibatch's advantages of B >= 2 samples are
        (A - mean(A)) / (std(A) + 1e-8) over that minibatch (std with Bessel's correction, as
        SB3 and the 37 details' PPO; a whole-rollout minibatch is normalised once, not per pass).
        """
        size = self.n_steps * self.n_envs
        flat = {
            key: torch.from_numpy(getattr(self, key).reshape(size, *getattr(self, key).shape[2:])).to(device)
            for key in ("observations", "actions", "log_probs", "values", "advantages", "returns")
        }
        normalize = normalized_advantages if normalize_advantages else dict
        if batch_size >= size:
            whole = normalize(flat)
            for _ in range(n_epochs):
                yield dict(whole)
            return
        for _ in range(n_epochs):
            order = torch.from_numpy(rng.permutation(size)).to(device)
            shuffled = {key: value[order] for key, value in flat.items()}
            for start in range(0, size, batch_size):
                yield normalize({key: value[start : start + batch_size] for key, value in shuffled.items()})


def normalized_advantages(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A copy of the minibatch dict whose "advantages" (B,) are (A - mean) / (std + 1e-8), for B >= 2."""
    advantages = batch["advantages"]
    if len(advantages) < 2:
        return dict(batch)
    return {**batch, "advantages": (advantages - advantages.mean()) / (advantages.std() + 1e-8)}


class ReplayBuffer:
    """Ring buffer of transitions for off-policy learning (Lin 1992; Mnih et al. 2015), on a device.

    Stores torch tensors on `device`: observations and next_observations (capacity, obs_dim)
    float32, actions (capacity, act_dim) float32 in policy units (or (capacity,) int64),
    rewards (capacity,) float32, and terminated / truncated (capacity,) bool. `sample` gathers a
    batch on the device, so no transition is copied from the host (only the batch's indices).
    It returns `not_done = 1 - terminated`: a transition cut by a time limit still bootstraps.

    Args:
        capacity: the most transitions kept; older ones are overwritten.
        obs_dim: observation size; action_shape: (act_dim,) or () for Discrete.
        device: where the transitions live (the agent's device).
    """

    _KEYS = ("observations", "actions", "rewards", "next_observations", "terminated", "truncated")

    def __init__(self, capacity: int, obs_dim: int, action_shape: tuple[int, ...], device: torch.device | str = "cpu"):
        self.device = torch.device(device)
        zeros = lambda *shape, dtype=torch.float32: torch.zeros(shape, dtype=dtype, device=self.device)  # noqa: E731
        self.observations = zeros(capacity, obs_dim)
        self.next_observations = zeros(capacity, obs_dim)
        self.actions = zeros(capacity, *action_shape, dtype=torch.int64 if action_shape == () else torch.float32)
        self.rewards = zeros(capacity)
        self.terminated = zeros(capacity, dtype=torch.bool)
        self.truncated = zeros(capacity, dtype=torch.bool)
        self.capacity, self.position, self.size = capacity, 0, 0

    def __len__(self) -> int:
        return self.size

    def add(
        self,
        obs: np.ndarray,
        action: np.ndarray,
        reward: np.ndarray,
        next_obs: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
    ) -> None:
        """Append a batch of B transitions (numpy arrays or tensors, leading dimension B on every argument)."""
        n = len(reward)
        start = self.position
        # A slice while the batch does not wrap around the end (every step but one per lap), else indices.
        where = slice(start, start + n) if start + n <= self.capacity else (start + np.arange(n)) % self.capacity
        for key, value in zip(self._KEYS, (obs, action, reward, next_obs, terminated, truncated), strict=True):
            target = getattr(self, key)
            target[where] = torch.as_tensor(value, dtype=target.dtype, device=self.device)
        self.position = int((self.position + n) % self.capacity)
        self.size = min(self.size + n, self.capacity)

    def state_dict(self) -> dict[str, torch.Tensor | int]:
        """The filled part as CPU tensors (copies), with position and size: what `load_state_dict` restores."""
        return {
            **{key: getattr(self, key)[: self.size].cpu().clone() for key in self._KEYS},
            "position": self.position,
            "size": self.size,
        }

    def load_state_dict(self, state: dict[str, torch.Tensor | int]) -> None:
        """Restore `state_dict` output (from any device) into this buffer.

        Raises:
            InputError: the state holds more transitions than this buffer's capacity, or
                arrays of another shape.
        """
        size = int(state["size"])
        if size > self.capacity:
            raise InputError(
                f"the saved replay buffer holds {size} transitions, more than this buffer's capacity "
                f"{self.capacity} (buffer_size)."
            )
        for key in self._KEYS:
            saved, target = state[key], getattr(self, key)
            if saved.shape[1:] != target.shape[1:]:
                raise InputError(
                    f"the saved replay buffer's {key} have shape {tuple(saved.shape[1:])}, this "
                    f"buffer's {tuple(target.shape[1:])}."
                )
            target[:size] = saved.to(self.device)
        self.position, self.size = int(state["position"]) % self.capacity, size

    def sample(self, batch_size: int, rng: np.random.Generator) -> dict[str, torch.Tensor]:
        """Uniform sample with replacement (indices from `rng`): dict of tensors on the buffer's device,
        observations (B, obs_dim), actions, rewards (B,), next_observations (B, obs_dim), not_done (B,) float32."""
        index = torch.from_numpy(rng.integers(0, self.size, size=batch_size)).to(self.device)
        return {
            "observations": self.observations[index],
            "actions": self.actions[index],
            "rewards": self.rewards[index],
            "next_observations": self.next_observations[index],
            "not_done": 1.0 - self.terminated[index].float(),
        }
