"""Experience storage for off-policy learning: the replay buffers (the on-policy rollout buffer is
`acrl.parts.rollouts.RolloutBuffer`).

Both keep `terminated` and `truncated` apart (docs/correctness.md item 1): only termination
cuts the return; truncation bootstraps. The replay buffers sample one-step transitions or, with
`n_step`, n-step returns over the transitions that follow them (`acrl.parts.returns.n_step_returns`).
`ReplayBuffer` stores vectors, each transition's next observation with it; `FrameReplayBuffer`
stores image frames (uint8 or bool) once each and rebuilds stacks and next observations from them.
Which of the two an agent gets is the observation space's decision, made here once:
`make_replay_buffer` (an empty one to fill), `replay_buffer_from` (one holding a dataset) and
`replay_capacity` (the capacity that keeps a given number of transitions).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch

from acrl.core.devices import available_memory
from acrl.core.errors import InputError
from acrl.parts.observations import is_image
from acrl.parts.returns import n_step_returns


class ReplayBuffer:
    """Ring buffer of transitions for off-policy learning (Lin 1992; Mnih et al. 2015), on a device.

    Stores torch tensors on `device`: observations and next_observations (capacity, obs_dim)
    float32, actions (capacity, act_dim) float32 in policy units (or (capacity,) int64),
    rewards (capacity,) float32, and terminated / truncated (capacity,) bool. `sample` gathers a
    batch on the device, so no transition is copied from the host (only the batch's indices).
    It returns `not_done = 1 - terminated`: a transition cut by a time limit still bootstraps.

    n-step sampling (`sample(..., n_step=n)`) reads the transitions that follow a sampled one in
    the same environment: with `n_envs` environments adding one transition each per `add` (online
    collection), transition t + 1 of an environment lies n_envs slots after transition t. A window
    stops at the newest transition and where the next transition does not start from this one's
    next observation (an episode that ended, or a resume that restarted the environments).

    Args:
        capacity: the most transitions kept; older ones are overwritten.
        obs_dim: observation size; action_shape: (act_dim,) or () for Discrete.
        device: where the transitions live (the agent's device).
        n_envs: environments whose transitions each `add` appends side by side (the stride of an
            n-step window); capacity must be a multiple of it.
    Raises:
        InputError: a capacity that is not a multiple of n_envs.
    """

    _KEYS = ("observations", "actions", "rewards", "next_observations", "terminated", "truncated")

    def __init__(
        self,
        capacity: int,
        obs_dim: int,
        action_shape: tuple[int, ...],
        device: torch.device | str = "cpu",
        n_envs: int = 1,
    ):
        if capacity % n_envs:
            raise InputError(f"the replay buffer's capacity ({capacity}) must be a multiple of n_envs ({n_envs}).")
        self.n_envs = n_envs
        self.device = torch.device(device)
        zeros = lambda *shape, dtype=torch.float32: torch.zeros(shape, dtype=dtype, device=self.device)  # noqa: E731
        self.observations = zeros(capacity, obs_dim)
        self.next_observations = zeros(capacity, obs_dim)
        self.actions = zeros(capacity, *action_shape, dtype=torch.int64 if action_shape == () else torch.float32)
        self.rewards = zeros(capacity)
        self.terminated = zeros(capacity, dtype=torch.bool)
        self.truncated = zeros(capacity, dtype=torch.bool)
        self.capacity, self.position, self.size = capacity, 0, 0
        # On the CPU, `add` writes through numpy views of the same memory: a step's six small writes take about
        # 7 us that way against 40-85 us through tensor indexing (timed on a loaded machine), which took DQN's
        # steps/s against SB3's from 1.16x to 1.21x (benchmarks/dqn_vs_sb3.py, idle).
        self._views = {key: getattr(self, key).numpy() for key in self._KEYS} if self.device.type == "cpu" else None

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
            if self._views is not None:
                self._views[key][where] = value.numpy(force=True) if isinstance(value, torch.Tensor) else value
            else:
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

    def transitions(self) -> dict[str, np.ndarray]:
        """Every stored transition as numpy arrays, oldest first (the order they were added): observations,
        next_observations (N, obs_dim) float32, actions (N, ...), rewards (N,) float32, terminated, truncated
        (N,) bool. What an online agent's replay becomes as an offline dataset
        (`acrl.offline.collect.buffer_dataset`), as `FrameReplayBuffer.transitions`."""
        oldest = self.position if self.size == self.capacity else 0
        order = (oldest + torch.arange(self.size, device=self.device)) % self.capacity
        return {key: getattr(self, key)[order].cpu().numpy() for key in self._KEYS}

    def evenly_spaced(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The observations (m, obs_dim) and actions (m, ...) of m = min(n, len) stored transitions evenly
        spaced through the filled part (indices linspace(0, len - 1, m), truncated), on the buffer's device:
        the data on which `OffPolicyAgent.evaluate` reads its critic."""
        index = torch.linspace(0, self.size - 1, min(n, self.size), device=self.device).long()
        return self.observations[index], self.actions[index]

    def sample(
        self, batch_size: int, rng: np.random.Generator, n_step: int = 1, gamma: float | None = None
    ) -> dict[str, torch.Tensor]:
        """Uniform sample with replacement (indices from `rng`): dict of tensors on the buffer's device,
        observations (B, obs_dim), actions, rewards (B,), next_observations (B, obs_dim), not_done (B,) float32.

        With n_step > 1 (gamma required), `rewards` are the n-step returns of `n_step_returns` over
        the transitions that follow each sampled one (see the class docstring), next_observations and
        not_done those of the window's last transition; with `gamma`, the batch also holds
        discount (B,) float32, gamma^k for a window of k transitions (gamma when n_step is 1).
        """
        index = torch.from_numpy(rng.integers(0, self.size, size=batch_size)).to(self.device)
        batch = {"observations": self.observations[index], "actions": self.actions[index]}
        if n_step == 1:
            batch |= {
                "rewards": self.rewards[index],
                "next_observations": self.next_observations[index],
                "not_done": 1.0 - self.terminated[index].float(),
            }
            if gamma is not None:
                batch["discount"] = torch.full((batch_size,), float(gamma), device=self.device)
            return batch
        oldest = self.position if self.size == self.capacity else 0
        steps = torch.arange(n_step, device=self.device) * self.n_envs
        window = (index[:, None] + steps) % self.capacity  # (B, n): transitions t .. t + n - 1 of one env
        valid = ((index - oldest) % self.capacity)[:, None] + steps < self.size  # not past the newest
        # transition t + j starts where t + j - 1 ended (else an episode or a resume came between them)
        valid[:, 1:] &= (self.observations[window[:, 1:]] == self.next_observations[window[:, :-1]]).all(-1)
        returns, discount, last = n_step_returns(
            self.rewards[window], self.terminated[window], self.truncated[window], valid, gamma
        )
        end = window.gather(1, last[:, None]).squeeze(1)
        return batch | {
            "rewards": returns,
            "next_observations": self.next_observations[end],
            "not_done": 1.0 - self.terminated[end].float(),
            "discount": discount,
        }


class FrameReplayBuffer:
    """Replay buffer of image frames (uint8 or bool), each frame stored once, for DQN on pixels (the
    replay memory of Mnih et al. 2015, laid out as Dopamine's circular buffer).

    Each of the `n_envs` environments has its own ring of capacity // n_envs frame slots on
    `device`. A slot holds one frame (frame_shape) and, when a transition starts from the
    observation that ends there, that transition: action (int64), reward, terminated, truncated (small
    numpy arrays on the host, moved per batch). An observation is the stack of the `frame_stack`
    frames ending at its slot, on a new first axis ((frame_stack, *frame_shape), as
    `acrl.tasks.atari.AtariVecEnv` and Gymnasium's FrameStackObservation give them); with frame_stack
    1 the frame is the observation (MinAtar's (10, 10, C)). A transition's next observation is the
    stack ending at the following slot. An Atari transition, (4, 84, 84) uint8, costs one 84 x 84
    frame, 7,056 bytes: 1M transitions take 7.1 GB, where keeping each observation and next
    observation would take 56 GB.

    `add` writes, per environment, the next observation's newest frame to a new slot. When the
    observation that the transition starts from is not the stack that the ring ends with (the first
    add, an episode that ended in a reset, a resume that restarted the environments), its
    frame_stack frames are written first, as the environment gave them (a reset's zero padding
    included), so a stack never reaches into another episode's frames (docs/correctness.md item 14)
    and every observation and next observation comes back exactly as the environment gave it.
    An episode that ends while its stack goes on (AtariVecEnv's lost life) stays one chain. The
    slots that hold no transition (those frames before an episode's first, an episode's final
    frame) cost frame_stack - 1 frames per reset and one per episode end; sampling skips them.

    n-step windows (`sample(..., n_step=n)`) follow the ring: the slots after a transition's hold the
    transitions that followed it in its environment, until a slot without one.

    An offline dataset of frames goes in whole through `from_transitions`: one ring that holds it exactly,
    each observation stored once.

    Args:
        capacity: frame slots in all (about the transitions kept; older ones are overwritten),
            a multiple of n_envs, each ring at least frame_stack + 1 slots.
        obs_shape: one observation's shape; dtype: its numpy dtype (uint8 or bool).
        n_envs: environments whose transitions each `add` holds, one each.
        frame_stack: frames per observation (1: the observation is one frame).
        device: where the frames live (the agent's device).
    Raises:
        InputError: a capacity that is not a multiple of n_envs or leaves a ring too small, an
            observation shape whose first axis is not frame_stack, a dtype other than uint8 or bool,
            or a buffer larger than the memory available on `device`, before anything is allocated;
            the message gives the size it would take.
    """

    def __init__(
        self,
        capacity: int,
        obs_shape: tuple[int, ...],
        dtype: np.dtype | type,
        n_envs: int = 1,
        frame_stack: int = 1,
        device: torch.device | str = "cpu",
    ):
        self.obs_shape, self.dtype = tuple(obs_shape), np.dtype(dtype)
        if self.dtype not in (np.uint8, np.bool_):
            raise InputError(f"FrameReplayBuffer stores uint8 or bool frames, got dtype {self.dtype}.")
        if frame_stack > 1 and self.obs_shape[0] != frame_stack:
            raise InputError(
                f"observations {self.obs_shape} are not stacks of {frame_stack} frames on their first axis."
            )
        self.slots = capacity // n_envs
        if capacity % n_envs or self.slots < frame_stack + 1:
            raise InputError(
                f"the frame replay buffer's capacity ({capacity}) must be a multiple of n_envs ({n_envs}) "
                f"and give each environment at least frame_stack + 1 = {frame_stack + 1} slots."
            )
        self.capacity, self.n_envs, self.frame_stack = capacity, n_envs, frame_stack
        self.frame_shape = self.obs_shape[1:] if frame_stack > 1 else self.obs_shape
        self.device = torch.device(device)
        frame_bytes = int(np.prod(self.frame_shape)) * self.dtype.itemsize
        needed = capacity * (frame_bytes + 8 + 4 + 3)  # the frame, action int64, reward float32, 3 flags
        free = available_memory(self.device)
        if needed > free:
            raise InputError(
                f"a frame replay buffer of {capacity:,} frames of {self.frame_shape} {self.dtype} takes "
                f"{needed / 1e9:,.1f} GB; {self.device} has {free / 1e9:,.1f} GB available. Lower buffer_size "
                f"(--set buffer_size=N: {frame_bytes + 15:,} bytes per transition)."
            )
        shape = (n_envs, self.slots)
        self.frames = torch.zeros(
            (*shape, *self.frame_shape), dtype=torch.bool if self.dtype == np.bool_ else torch.uint8, device=self.device
        )
        self.actions = np.zeros(shape, np.int64)
        self.rewards = np.zeros(shape, np.float32)
        self.terminated = np.zeros(shape, bool)
        self.truncated = np.zeros(shape, bool)
        self.is_transition = np.zeros(shape, bool)
        """Whether a slot starts a transition that can be sampled (its whole stack still in the ring)."""
        self.head = np.full(n_envs, -1, np.int64)
        """The slot of each ring's newest frame (-1 before the first)."""
        self.written = np.zeros(n_envs, np.int64)
        self.last_next = np.zeros((n_envs, *self.obs_shape), self.dtype)
        """The stack each ring ends with: the last next observation added for each environment."""
        self.size = 0

    @property
    def nbytes(self) -> int:
        """Bytes of the stored frames: capacity x one frame."""
        return self.frames.element_size() * self.frames.nelement()

    def __len__(self) -> int:
        """Transitions that can be sampled."""
        return self.size

    def _advance(self, env: int) -> int:
        """Move env's ring to its next slot (the oldest) and return it. The transition stored there is
        gone, and so is the one whose stack started there, frame_stack - 1 slots further on (those in
        between lost theirs at the writes before)."""
        slot = int((self.head[env] + 1) % self.slots)
        for lost in {slot, (slot + self.frame_stack - 1) % self.slots}:
            if self.is_transition[env, lost]:
                self.is_transition[env, lost] = False
                self.size -= 1
        self.head[env] = slot
        self.written[env] += 1
        return slot

    def add(
        self,
        obs: np.ndarray,
        action: np.ndarray,
        reward: np.ndarray,
        next_obs: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
    ) -> None:
        """Append one transition per environment: obs, next_obs (n_envs, *obs_shape) uint8 / bool
        numpy (next_obs the true next observation, an ended episode's final one); action (n_envs,)
        int; reward (n_envs,) float; terminated, truncated (n_envs,) bool.

        Raises:
            InputError: not n_envs transitions, or (frame_stack > 1) a next observation that is not
                the observation's last frame_stack - 1 frames and one new frame.
        """
        obs, next_obs = np.asarray(obs), np.asarray(next_obs)
        if len(obs) != self.n_envs:
            raise InputError(
                f"FrameReplayBuffer.add takes one transition per environment ({self.n_envs}), got {len(obs)}."
            )
        if self.frame_stack > 1 and not np.array_equal(next_obs[:, :-1], obs[:, 1:]):
            raise InputError(
                f"FrameReplayBuffer(frame_stack={self.frame_stack}) stores stacks whose next one is the last "
                f"{self.frame_stack - 1} frames and a new one; these observations are not."
            )
        envs, slots, frames = [], [], []

        def write(env: int, frame: np.ndarray) -> None:
            envs.append(env)
            slots.append(self._advance(env))
            frames.append(frame)

        for env in range(self.n_envs):
            if self.head[env] < 0 or not np.array_equal(obs[env], self.last_next[env]):  # a new chain
                for frame in obs[env] if self.frame_stack > 1 else obs[env][None]:
                    write(env, frame)
            slot = self.head[env]
            self.actions[env, slot], self.rewards[env, slot] = action[env], reward[env]
            self.terminated[env, slot], self.truncated[env, slot] = terminated[env], truncated[env]
            self.is_transition[env, slot] = True
            self.size += 1
            write(env, next_obs[env][-1] if self.frame_stack > 1 else next_obs[env])
            self.last_next[env] = next_obs[env]
        # one copy to the device; no slot repeats (a ring has more slots than the frame_stack + 1 written here)
        index = (torch.as_tensor(envs, device=self.device), torch.as_tensor(slots, device=self.device))
        self.frames[index] = torch.as_tensor(np.stack(frames)).to(self.device)

    @classmethod
    def from_transitions(
        cls,
        observations: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        next_observations: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        device: torch.device | str = "cpu",
    ) -> FrameReplayBuffer:
        """A buffer holding N recorded transitions exactly, in order: an offline dataset of frames.

        One ring (n_envs 1) of frame_stack 1, so each observation, whatever its shape, is one slot
        (an Atari dataset's (4, 84, 84) stacks are stored as stacks). Transition i continues the
        chain of transition i - 1 when its observation equals that one's next observation; else
        (the first transition, the first one after an episode's end) its observation takes a slot
        of its own first. The ring has exactly as many slots as that writes, N plus the number of
        chains, so nothing is overwritten; every observation and next observation comes back as
        recorded. Written in one vectorised pass, not N `add` calls.

        Args:
            observations, next_observations: (N, *obs_shape) uint8 or bool numpy arrays.
            actions: (N,) integer action indices; rewards (N,) float; terminated, truncated (N,) bool.
            device: where the frames live.
        Raises:
            InputError: no transitions, a dtype other than uint8 or bool, or (from the constructor)
                more frames than the memory available on `device`.
        """
        n = len(rewards)
        if n == 0:
            raise InputError("a frame replay buffer from transitions needs at least one transition.")
        starts = np.ones(n, bool)
        for lo in range(1, n, 65_536):  # in chunks: the comparison's temporary is a chunk of frames
            hi = min(lo + 65_536, n)
            starts[lo:hi] = (observations[lo:hi] != next_observations[lo - 1 : hi - 1]).reshape(hi - lo, -1).any(1)
        chains = np.cumsum(starts)
        obs_slots = np.arange(n) + chains - 1  # a new chain's observation, then each next observation, one slot each
        buffer = cls(n + int(chains[-1]), observations.shape[1:], observations.dtype, 1, 1, device)
        buffer.frames[0, torch.from_numpy(obs_slots[starts]).to(buffer.device)] = torch.from_numpy(
            np.ascontiguousarray(observations[starts])
        ).to(buffer.device)
        buffer.frames[0, torch.from_numpy(obs_slots + 1).to(buffer.device)] = torch.from_numpy(
            np.ascontiguousarray(next_observations)
        ).to(buffer.device)
        buffer.actions[0, obs_slots], buffer.rewards[0, obs_slots] = actions, rewards
        buffer.terminated[0, obs_slots], buffer.truncated[0, obs_slots] = terminated, truncated
        buffer.is_transition[0, obs_slots] = True
        buffer.head[0], buffer.written[0] = buffer.slots - 1, buffer.slots
        buffer.last_next[0] = next_observations[-1]
        buffer.size = n
        return buffer

    def _stacks(self, envs: np.ndarray, ends: np.ndarray) -> torch.Tensor:
        """The observations (B, *obs_shape) whose newest frames lie at slots `ends` (B,) of rings `envs` (B,):
        each the frame_stack frames ending there, on the buffer's device."""
        k = self.frame_stack
        slots = (ends[:, None] + np.arange(1 - k, 1)) % self.slots
        index = (torch.from_numpy(envs[:, None]).to(self.device), torch.from_numpy(slots).to(self.device))
        return self.frames[index].reshape(len(ends), *self.obs_shape)

    def evenly_spaced(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The observations (m, *obs_shape) and actions (m,) int64 of m = min(n, len) stored transitions
        evenly spaced through the rings' slots (ring after ring), on the buffer's device: the data on which
        `OffPolicyAgent.evaluate` reads its Q-values."""
        envs, slots = np.nonzero(self.is_transition)
        pick = np.linspace(0, len(envs) - 1, min(n, len(envs))).astype(np.int64)
        envs, slots = envs[pick], slots[pick]
        return self._stacks(envs, slots), torch.from_numpy(self.actions[envs, slots]).to(self.device)

    def transitions(self) -> dict[str, np.ndarray]:
        """Every stored transition as numpy arrays, ring after ring, each ring from its oldest slot (so in the
        order its environment took them): observations, next_observations (N, *obs_shape) uint8 / bool,
        actions (N,) int64, rewards (N,) float32, terminated, truncated (N,) bool. What an online DQN's
        replay becomes as an offline dataset (`acrl.offline.collect.buffer_dataset`)."""
        envs, slots = [], []
        for env in range(self.n_envs):
            oldest = (self.head[env] + 1) % self.slots if self.written[env] > self.slots else 0
            ring = (oldest + np.arange(self.slots)) % self.slots
            ring = ring[self.is_transition[env, ring]]
            envs.append(np.full(len(ring), env))
            slots.append(ring)
        envs, slots = np.concatenate(envs), np.concatenate(slots)
        return {
            "observations": self._stacks(envs, slots).cpu().numpy(),
            "actions": self.actions[envs, slots].copy(),
            "rewards": self.rewards[envs, slots].copy(),
            "next_observations": self._stacks(envs, slots + 1).cpu().numpy(),
            "terminated": self.terminated[envs, slots].copy(),
            "truncated": self.truncated[envs, slots].copy(),
        }

    def sample(
        self, batch_size: int, rng: np.random.Generator, n_step: int = 1, gamma: float | None = None
    ) -> dict[str, torch.Tensor]:
        """Transitions drawn uniformly with replacement (from `rng`), as `ReplayBuffer.sample`:
        observations, next_observations (B, *obs_shape) uint8 / bool, actions (B,) int64, rewards,
        not_done (B,) float32 and, with `gamma`, discount (B,) float32 = gamma^k; with n_step > 1,
        n-step returns over windows of k <= n_step transitions (`n_step_returns`).

        Raises:
            InputError: the buffer holds no transition.
        """
        if self.size == 0:
            raise InputError("the frame replay buffer holds no transition yet.")
        filled = np.minimum(self.written, self.slots)
        bounds = np.cumsum(filled)
        envs, slots = np.empty(batch_size, np.int64), np.empty(batch_size, np.int64)
        todo = np.arange(batch_size)
        while todo.size:  # uniform over the written slots, keeping those that start a transition
            flat = rng.integers(0, bounds[-1], size=todo.size)
            env = np.searchsorted(bounds, flat, side="right")
            slot = flat - (bounds[env] - filled[env])
            ok = self.is_transition[env, slot]
            envs[todo[ok]], slots[todo[ok]] = env[ok], slot[ok]
            todo = todo[~ok]
        rows = envs[:, None]
        window = (slots[:, None] + np.arange(n_step)) % self.slots
        returns, discount, last = n_step_returns(
            torch.from_numpy(self.rewards[rows, window]),
            torch.from_numpy(self.terminated[rows, window]),
            torch.from_numpy(self.truncated[rows, window]),
            torch.from_numpy(self.is_transition[rows, window]),
            1.0 if gamma is None else gamma,
        )
        end = window[np.arange(batch_size), last.numpy()]
        stacks = self._stacks(np.concatenate([envs, envs]), np.concatenate([slots, end + 1]))  # one gather for both
        batch = {
            "observations": stacks[:batch_size],
            "actions": torch.from_numpy(self.actions[envs, slots]).to(self.device),
            "rewards": returns.to(self.device),
            "next_observations": stacks[batch_size:],
            "not_done": torch.from_numpy(1.0 - self.terminated[envs, end].astype(np.float32)).to(self.device),
        }
        if gamma is not None:
            batch["discount"] = discount.to(self.device)
        return batch

    _HOST = ("actions", "rewards", "terminated", "truncated", "is_transition")

    def state_dict(self) -> dict[str, torch.Tensor | int]:
        """The written slots (frames, transitions) and ring positions as CPU tensors (copies): what
        `load_state_dict` restores."""
        filled = int(np.minimum(self.written, self.slots).max())
        return {
            "frames": self.frames[:, :filled].cpu().clone(),
            **{key: torch.from_numpy(getattr(self, key)[:, :filled].copy()) for key in self._HOST},
            "head": torch.from_numpy(self.head.copy()),
            "written": torch.from_numpy(self.written.copy()),
            "last_next": torch.from_numpy(self.last_next.copy()),
            "size": self.size,
            "slots": self.slots,
        }

    def load_state_dict(self, state: dict[str, torch.Tensor | int]) -> None:
        """Restore `state_dict` output (from any device) into this buffer.

        Raises:
            InputError: the saved buffer has other environments, another number of slots per
                environment or frames of another shape than this one.
        """
        frames = state["frames"]
        if (frames.shape[0], int(state["slots"]), tuple(frames.shape[2:])) != (
            self.n_envs,
            self.slots,
            self.frame_shape,
        ):
            raise InputError(
                f"the saved frame replay buffer has {frames.shape[0]} rings of {int(state['slots'])} slots of "
                f"frames {tuple(frames.shape[2:])}; this one {self.n_envs} of {self.slots} of {self.frame_shape} "
                "(n_envs, buffer_size / n_envs)."
            )
        filled = frames.shape[1]
        self.frames[:, :filled] = frames.to(self.device)
        for key in self._HOST:
            getattr(self, key)[:, :filled] = state[key].numpy()
        self.head[:], self.written[:] = state["head"].numpy(), state["written"].numpy()
        self.last_next[:] = state["last_next"].numpy()
        self.size = int(state["size"])


def make_replay_buffer(
    space: gym.spaces.Box,
    capacity: int,
    action_shape: tuple[int, ...],
    device: torch.device | str = "cpu",
    n_envs: int = 1,
    frame_stack: int = 1,
) -> ReplayBuffer | FrameReplayBuffer:
    """The empty replay buffer for observations of `space`: a `FrameReplayBuffer` for image frames (each
    frame stored once, in its own dtype; observations stacks of `frame_stack` frames on their first axis),
    a `ReplayBuffer` for vectors.

    Args:
        space: the single observation space; capacity: transitions (frame slots) kept;
        action_shape: one action's shape in the buffer, () for a Discrete index, (act_dim,) for a Box;
        device: where the transitions live; n_envs: environments adding one transition each per `add`;
        frame_stack: frames per observation (frames only: a vector env's `frame_stack`, 1 without).
    Raises:
        InputError: image frames with actions other than one Discrete index per transition (a frame
            buffer stores one int64 per transition), before anything is allocated; see the buffers' own.
    """
    if not is_image(space):
        return ReplayBuffer(capacity, int(space.shape[0]), action_shape, device, n_envs)
    if action_shape != ():
        raise InputError(
            f"image observations {space} take one Discrete action per transition (the frame replay buffer "
            f"stores one index each), not actions of shape {action_shape}: use a Discrete action space."
        )
    return FrameReplayBuffer(capacity, space.shape, space.dtype, n_envs, frame_stack, device)


def replay_buffer_from(
    space: gym.spaces.Box,
    observations: np.ndarray,
    actions: np.ndarray,
    rewards: np.ndarray,
    next_observations: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    device: torch.device | str = "cpu",
) -> ReplayBuffer | FrameReplayBuffer:
    """A replay buffer holding exactly these N recorded transitions (an offline dataset), for observations
    of `space`: image frames in a `FrameReplayBuffer` (`FrameReplayBuffer.from_transitions`, each
    observation stored once, in its own dtype, never as floats), vectors in a `ReplayBuffer` of capacity N.

    Args:
        observations, next_observations: (N, *obs_shape); actions: (N,) int64 indices or (N, act_dim)
            float32 in policy units; rewards (N,) float; terminated, truncated (N,) bool.
    Raises:
        InputError: no transitions; see `FrameReplayBuffer.from_transitions`.
    """
    if len(rewards) == 0:
        raise InputError("a replay buffer from transitions needs at least one transition.")
    arrays = (observations, actions, rewards, next_observations, terminated, truncated)
    if is_image(space):
        return FrameReplayBuffer.from_transitions(*arrays, device=device)
    buffer = ReplayBuffer(len(rewards), int(space.shape[0]), tuple(actions.shape[1:]), device)
    buffer.add(*arrays)
    return buffer


def replay_capacity(space: gym.spaces.Box, transitions: int, n_envs: int = 1) -> int:
    """A capacity with which `make_replay_buffer(space, ...)` keeps `transitions` transitions from `n_envs`
    environments, a multiple of n_envs: that many rounded up for vectors; twice as many frame slots for
    image frames (a frame buffer takes one slot per transition and frame_stack more at each episode's
    start: enough for episodes of frame_stack steps or more on average)."""
    capacity = -(-transitions // n_envs) * n_envs
    return 2 * capacity if is_image(space) else capacity
