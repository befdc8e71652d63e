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

    Fields (numpy, float32 unless noted): observations (T, N, obs_dim) as the policy saw
    them (normalised), actions (T, N, act_dim) raw samples or (T, N) int64, log_probs,
    rewards, values, next_values (T, N), terminated, truncated (T, N) bool. After
    `compute_advantages`, advantages and returns (T, N).

    Args:
        n_steps: T; n_envs: N; obs_dim: observation size; action_shape: () for Discrete,
            (act_dim,) for Box.
    """

    def __init__(self, n_steps: int, n_envs: int, obs_dim: int, action_shape: tuple[int, ...]):
        shape = (n_steps, n_envs)
        self.observations = np.zeros((*shape, obs_dim), dtype=np.float32)
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

    def minibatches(self, batch_size: int, rng: np.random.Generator,
                    n_epochs: int = 1) -> Iterator[dict[str, torch.Tensor]]:
        """Yield `n_epochs` passes over the T * N samples in minibatches, each a dict of tensors (B, ...).

        Each pass shuffles the samples and cuts them into consecutive minibatches of `batch_size`
        (the last one shorter when batch_size does not divide T * N). Keys: observations, actions,
        log_probs, values, advantages, returns. When one minibatch holds the whole rollout
        (batch_size >= T * N), each pass yields it unshuffled, since the order inside a minibatch
        does not change an update: views of the buffer's arrays, valid until the next rollout.
        """
        size = self.n_steps * self.n_envs
        flat = {key: torch.from_numpy(getattr(self, key).reshape(size, *getattr(self, key).shape[2:]))
                for key in ("observations", "actions", "log_probs", "values", "advantages", "returns")}
        for _ in range(n_epochs):
            if batch_size >= size:
                yield dict(flat)
                continue
            order = torch.from_numpy(rng.permutation(size))
            shuffled = {key: value[order] for key, value in flat.items()}
            for start in range(0, size, batch_size):
                yield {key: value[start:start + batch_size] for key, value in shuffled.items()}


class ReplayBuffer:
    """Ring buffer of transitions for off-policy learning (Lin 1992; Mnih et al. 2015).

    Stores observations and next_observations (capacity, obs_dim), actions (capacity,
    act_dim) float32 in policy units (or (capacity,) int64), rewards (capacity,), and
    terminated / truncated (capacity,) bool. `sample` returns `not_done = 1 - terminated`:
    a transition cut by a time limit still bootstraps.

    Args:
        capacity: the most transitions kept; older ones are overwritten.
        obs_dim: observation size; action_shape: (act_dim,) or () for Discrete.
    """

    def __init__(self, capacity: int, obs_dim: int, action_shape: tuple[int, ...]):
        self.observations = np.zeros((capacity, obs_dim), dtype=np.float32)
        self.next_observations = np.zeros((capacity, obs_dim), dtype=np.float32)
        self.actions = np.zeros((capacity, *action_shape), dtype=np.int64 if action_shape == () else np.float32)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.terminated = np.zeros(capacity, dtype=bool)
        self.truncated = np.zeros(capacity, dtype=bool)
        self.capacity, self.position, self.size = capacity, 0, 0

    def __len__(self) -> int:
        return self.size

    def add(self, obs: np.ndarray, action: np.ndarray, reward: np.ndarray, next_obs: np.ndarray,
            terminated: np.ndarray, truncated: np.ndarray) -> None:
        """Append a batch of B transitions (leading dimension B on every argument)."""
        index = (self.position + np.arange(len(reward))) % self.capacity
        self.observations[index] = obs
        self.actions[index] = action
        self.rewards[index] = reward
        self.next_observations[index] = next_obs
        self.terminated[index] = terminated
        self.truncated[index] = truncated
        self.position = int((self.position + len(reward)) % self.capacity)
        self.size = min(self.size + len(reward), self.capacity)

    _KEYS = ("observations", "actions", "rewards", "next_observations", "terminated", "truncated")

    def state_dict(self) -> dict[str, torch.Tensor | int]:
        """The filled part as tensors (copies), with position and size: what `load_state_dict` restores."""
        return {**{key: torch.from_numpy(getattr(self, key)[:self.size].copy()) for key in self._KEYS},
                "position": self.position, "size": self.size}

    def load_state_dict(self, state: dict[str, torch.Tensor | int]) -> None:
        """Restore `state_dict` output into this buffer.

        Raises:
            InputError: the state holds more transitions than this buffer's capacity, or
                arrays of another shape.
        """
        size = int(state["size"])
        if size > self.capacity:
            raise InputError(f"the saved replay buffer holds {size} transitions, more than this buffer's capacity "
                             f"{self.capacity} (buffer_size).")
        for key in self._KEYS:
            saved = state[key].numpy()
            if saved.shape[1:] != getattr(self, key).shape[1:]:
                raise InputError(f"the saved replay buffer's {key} have shape {saved.shape[1:]}, this buffer's "
                                 f"{getattr(self, key).shape[1:]}.")
            getattr(self, key)[:size] = saved
        self.position, self.size = int(state["position"]) % self.capacity, size

    def sample(self, batch_size: int, rng: np.random.Generator) -> dict[str, torch.Tensor]:
        """Uniform sample with replacement: dict of tensors observations (B, obs_dim),
        actions, rewards (B,), next_observations (B, obs_dim), not_done (B,) float32."""
        index = rng.integers(0, self.size, size=batch_size)
        return {
            "observations": torch.from_numpy(self.observations[index]),
            "actions": torch.from_numpy(self.actions[index]),
            "rewards": torch.from_numpy(self.rewards[index]),
            "next_observations": torch.from_numpy(self.next_observations[index]),
            "not_done": torch.from_numpy(1.0 - self.terminated[index].astype(np.float32)),
        }
