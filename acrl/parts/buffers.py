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


class SequenceRolloutBuffer(RolloutBuffer):
    """A `RolloutBuffer` for a recurrent policy, cut into sequences: per-environment chunks of
    `seq_len` consecutive steps (docs/correctness.md item 12).

    Adds episode_starts (T, N) bool (the step begins an episode: the policy's state was reset
    before it) and the policy's LSTM state (h, c) at each chunk's first step, before that step's
    reset, hidden_states and cell_states (T / seq_len, N, hidden_size) float32 (chunk k of env n
    starts at step k * seq_len). From those, `sequences` lets the policy recompute every step's
    state as the rollout computed it.

    Args:
        n_steps, n_envs, obs_shape, action_shape, obs_dtype: as `RolloutBuffer`.
        seq_len: the steps of a sequence; must divide n_steps.
        hidden_size: the LSTM's cells.
    Raises:
        InputError: seq_len < 1 or not a divisor of n_steps.
    """

    def __init__(
        self,
        n_steps: int,
        n_envs: int,
        obs_shape: int | tuple[int, ...],
        action_shape: tuple[int, ...],
        seq_len: int,
        hidden_size: int,
        obs_dtype: np.dtype | type = np.float32,
    ):
        if seq_len < 1 or n_steps % seq_len:
            raise InputError(f"seq_len must be >= 1 and divide n_steps = {n_steps}; got {seq_len}.")
        super().__init__(n_steps, n_envs, obs_shape, action_shape, obs_dtype)
        self.seq_len = seq_len
        self.episode_starts = np.zeros((n_steps, n_envs), dtype=bool)
        chunks = (n_steps // seq_len, n_envs, hidden_size)
        self.hidden_states = np.zeros(chunks, dtype=np.float32)
        self.cell_states = np.zeros(chunks, dtype=np.float32)

    def sequences(
        self,
        batch_size: int,
        rng: np.random.Generator,
        n_epochs: int = 1,
        device: torch.device | str = "cpu",
        normalize_advantages: bool = False,
    ) -> Iterator[dict[str, torch.Tensor]]:
        """Yield `n_epochs` passes over the S = (T / seq_len) * N sequences, batch_size / seq_len
        whole sequences per minibatch, each pass in a fresh random order (from `rng`).

        A minibatch of M sequences of L = seq_len steps is a dict of tensors on `device`:
        observations (L, M, *obs_shape) and episode_starts (L, M) bool, time first, for the policy
        to run; states, the tuple (h, c) each (1, M, hidden_size) at the sequences' first steps;
        and actions, log_probs, values, advantages, returns flattened time-major to (L * M, ...),
        so that row t * M + m is step t of sequence m, as the policy's (L, M, ...) outputs
        flatten. Advantages are normalised over the minibatch's L * M samples as
        `RolloutBuffer.minibatches` does.

        Raises:
            InputError: batch_size not a positive multiple of seq_len.
        """
        length = self.seq_len
        if batch_size < length or batch_size % length:
            raise InputError(f"batch_size must be a multiple of seq_len = {length}; got {batch_size}.")
        chunks = self.n_steps // length
        n_sequences, per_batch = chunks * self.n_envs, batch_size // length

        def by_sequence(array: np.ndarray) -> torch.Tensor:
            # (T, N, ...) -> (L, chunks * N, ...): sequence k * N + n is chunk k of env n.
            split = array.reshape(chunks, length, self.n_envs, *array.shape[2:]).swapaxes(0, 1)
            return torch.from_numpy(np.ascontiguousarray(split.reshape(length, n_sequences, *array.shape[2:])))

        keys = ("observations", "episode_starts", "actions", "log_probs", "values", "advantages", "returns")
        data = {key: by_sequence(getattr(self, key)).to(device) for key in keys}
        hidden = torch.from_numpy(self.hidden_states.reshape(1, n_sequences, -1)).to(device)
        cell = torch.from_numpy(self.cell_states.reshape(1, n_sequences, -1)).to(device)
        normalize = normalized_advantages if normalize_advantages else dict
        for _ in range(n_epochs):
            order = torch.from_numpy(rng.permutation(n_sequences)).to(device)
            for start in range(0, n_sequences, per_batch):
                index = order[start : start + per_batch]
                batch = {key: value[:, index] for key, value in data.items()}
                flat = {key: batch[key].flatten(0, 1) for key in keys[2:]}
                yield {
                    "observations": batch["observations"],
                    "episode_starts": batch["episode_starts"],
                    "states": (hidden[:, index], cell[:, index]),
                    **normalize(flat),
                }


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
