"""The on-policy rollout buffer: T steps of N environments, cut into sequences for the minibatches.

Like the replay buffers (`acrl.parts.buffers`) it keeps `terminated` and `truncated` apart
(docs/correctness.md item 1): only termination cuts the return; truncation bootstraps.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from acrl.core.errors import InputError


class RolloutBuffer:
    """Fixed-size on-policy storage of shape (T, N): T steps of N environments, cut into sequences of
    `seq_len` consecutive steps of one environment, the units of the minibatches (docs/correctness.md item 12).

    Fields (numpy, float32 unless noted): observations (T, N, *obs_shape) of `obs_dtype` as the policy
    saw them (normalised vectors float32; image frames uint8 or bool, never a float copy), actions
    (T, N, act_dim) raw samples or (T, N) int64, log_probs, rewards, values, next_values (T, N),
    terminated, truncated, episode_starts (T, N) bool (the step begins an episode: the policy's state
    was reset before it), the advantages and returns (T, N) that the agent computes from them (PPO:
    `acrl.parts.returns.gae`), and `states`: the policy's state at each sequence's first step, before
    that step's reset, one array (T / seq_len, *shape) per tensor of the state (the state of a
    feed-forward policy is empty, and so is `states`). Sequence k of environment n starts at step
    k * seq_len; from its stored state the policy recomputes every step's state as the rollout did.

    Args:
        n_steps: T; n_envs: N; obs_shape: an observation's shape; obs_dtype: the observations' dtype;
            action_shape: () for Discrete, (act_dim,) for Box.
        state: the policy's state for the N environments (`ActorCritic.initial_state(N)`): what shapes
            `states` takes.
        seq_len: the steps of a sequence, a divisor of T (1: every step is a sequence, which a policy
            without state needs nothing more for).
    Raises:
        InputError: seq_len < 1 or not a divisor of n_steps.
    """

    def __init__(
        self,
        n_steps: int,
        n_envs: int,
        obs_shape: tuple[int, ...],
        obs_dtype: np.dtype | type,
        action_shape: tuple[int, ...],
        state: tuple[torch.Tensor, ...] = (),
        seq_len: int = 1,
    ):
        if seq_len < 1 or n_steps % seq_len:
            raise InputError(f"seq_len must be >= 1 and divide n_steps = {n_steps}; got {seq_len}.")
        shape = (n_steps, n_envs)
        self.observations = np.zeros((*shape, *obs_shape), dtype=obs_dtype)
        self.actions = np.zeros((*shape, *action_shape), dtype=np.int64 if action_shape == () else np.float32)
        self.log_probs = np.zeros(shape, dtype=np.float32)
        self.rewards = np.zeros(shape, dtype=np.float32)
        self.values = np.zeros(shape, dtype=np.float32)
        self.next_values = np.zeros(shape, dtype=np.float32)
        self.terminated = np.zeros(shape, dtype=bool)
        self.truncated = np.zeros(shape, dtype=bool)
        self.episode_starts = np.zeros(shape, dtype=bool)
        self.advantages = np.zeros(shape, dtype=np.float32)
        self.returns = np.zeros(shape, dtype=np.float32)
        self.states = tuple(np.zeros((n_steps // seq_len, *s.shape), dtype=np.float32) for s in state)
        self.n_steps, self.n_envs, self.seq_len = n_steps, n_envs, seq_len

    def add_state(self, t: int, state: tuple[torch.Tensor, ...]) -> None:
        """Keep the policy's state before step t (each tensor (layers, N, hidden)) if step t begins a sequence."""
        if t % self.seq_len == 0:
            for stored, tensor in zip(self.states, state, strict=True):
                stored[t // self.seq_len] = tensor.cpu().numpy()

    def minibatches(
        self,
        batch_size: int,
        rng: np.random.Generator,
        n_epochs: int = 1,
        device: torch.device | str = "cpu",
        normalize_advantages: bool = False,
    ) -> Iterator[dict[str, Any]]:
        """Yield `n_epochs` passes over the S = (T / seq_len) N sequences, M = batch_size / seq_len whole
        sequences per minibatch, each pass in a fresh random order (from `rng`).

        A minibatch of M sequences of L = seq_len steps is a dict on `device`: observations (L, M,
        *obs_shape), actions (L, M, ...), log_probs, values, advantages, returns and episode_starts (L, M),
        time first, as `ActorCritic.evaluate` takes and returns them; and states, the tuple of the state's
        tensors at the sequences' first steps, each (layers, M, hidden) (() for a feed-forward policy).
        The rollout goes to `device` once per call; each pass shuffles it once and cuts consecutive
        minibatches. When one minibatch holds the whole rollout, each pass yields it unshuffled, since
        the order inside a minibatch does not change an update (on the CPU, views of the buffer's
        arrays, valid until the next rollout).

        With `normalize_advantages`, each minibatch's advantages of L M >= 2 samples are
        (A - mean(A)) / (std(A) + 1e-8) over that minibatch (std with Bessel's correction, as SB3 and
        the 37 details' PPO; a whole-rollout minibatch is normalised once, not per pass).

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

        keys = ("observations", "actions", "log_probs", "values", "advantages", "returns", "episode_starts")
        data = {key: by_sequence(getattr(self, key)).to(device) for key in keys}
        # (chunks, layers, N, hidden) -> (layers, chunks * N, hidden), in the sequences' order
        states = tuple(
            torch.from_numpy(np.ascontiguousarray(s.swapaxes(0, 1)).reshape(s.shape[1], n_sequences, -1)).to(device)
            for s in self.states
        )
        normalize = normalized_advantages if normalize_advantages else dict
        if per_batch >= n_sequences:
            whole = normalize(data) | {"states": states}
            for _ in range(n_epochs):
                yield dict(whole)
            return
        for _ in range(n_epochs):
            order = torch.from_numpy(rng.permutation(n_sequences)).to(device)
            # index_select, not value[:, order]: advanced indexing gathers element by element, 5x slower on
            # PPO's Atari rollout (1024 frames of 4x84x84 uint8: 25 ms against 5 on one thread)
            shuffled = {key: value.index_select(1, order) for key, value in data.items()}
            ordered = tuple(s.index_select(1, order) for s in states)
            for start in range(0, n_sequences, per_batch):
                cut = slice(start, start + per_batch)
                batch = normalize({key: value[:, cut] for key, value in shuffled.items()})
                yield batch | {"states": tuple(s[:, cut] for s in ordered)}


def normalized_advantages(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A copy of the minibatch dict whose "advantages" (any shape, B elements) are (A - mean) / (std + 1e-8)
    over all of them, for B >= 2."""
    advantages = batch["advantages"]
    if advantages.numel() < 2:
        return dict(batch)
    return {**batch, "advantages": (advantages - advantages.mean()) / (advantages.std() + 1e-8)}
