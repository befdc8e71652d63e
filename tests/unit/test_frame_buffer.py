"""The frame replay buffer: each frame stored once, stacks rebuilt exactly as the environment gave them
(zero-padded after a reset, never reaching into another episode), next observations, n-step windows,
its checkpoint and its memory check (docs/correctness.md item 14); and which replay buffer the
observation space gets (`make_replay_buffer`, `replay_buffer_from`, `replay_capacity`)."""

import itertools

import gymnasium as gym
import numpy as np
import pytest
import torch

from acrl.core.errors import InputError
from acrl.parts.buffers import (
    FrameReplayBuffer,
    ReplayBuffer,
    make_replay_buffer,
    replay_buffer_from,
    replay_capacity,
)


def frame(i: int) -> np.ndarray:
    """A 6x6 uint8 frame that names its number i (< 65,536) in its first two pixels."""
    f = np.zeros((6, 6), np.uint8)
    f[0, 0], f[0, 1], f[1:] = i % 256, i // 256, 7
    return f


def stacked_play(n_envs: int, steps: int, k: int = 4, seed: int = 0):
    """Yield the batches (obs, action, reward, next_obs, terminated, truncated) that a vector env of
    zero-padded k-frame stacks gives, as AtariVecEnv: episodes end by termination with a reset, by
    truncation with a reset, or by a lost life (terminated, and the stack goes on). Each action is a
    distinct number, so that a sampled transition can be found again."""
    rng = np.random.default_rng(seed)
    frames = itertools.count(1)
    actions = itertools.count()

    def reset():
        return np.stack([np.zeros((6, 6), np.uint8)] * (k - 1) + [frame(next(frames))])

    stacks = [reset() for _ in range(n_envs)]
    for _ in range(steps):
        obs = np.stack(stacks)
        nxt = np.stack([np.concatenate([s[1:], frame(next(frames))[None]]) for s in stacks])
        event = rng.choice(["none", "terminated", "truncated", "life"], size=n_envs, p=[0.7, 0.1, 0.1, 0.1])
        terminated, truncated = np.isin(event, ["terminated", "life"]), event == "truncated"
        batch = (
            obs,
            np.array([next(actions) for _ in range(n_envs)]),
            rng.normal(size=n_envs),
            nxt,
            terminated,
            truncated,
        )
        yield batch
        stacks = [reset() if e in ("terminated", "truncated") else nxt[i] for i, e in enumerate(event)]


def by_action(batches):
    """action -> (obs, reward, next_obs, terminated) of every transition in `batches`."""
    return {
        int(a): (o, np.float32(r), n, t)
        for obs, act, rew, nxt, term, _ in batches
        for o, a, r, n, t in zip(obs, act, rew, nxt, term, strict=True)
    }


def test_each_frame_is_stored_once():
    buffer = FrameReplayBuffer(1_000, (4, 6, 6), np.uint8, n_envs=2, frame_stack=4)
    assert buffer.nbytes == 1_000 * 36  # one 6x6 frame per slot: a quarter of a stack, an eighth of obs + next_obs
    assert buffer.frames.shape == (2, 500, 6, 6) and buffer.frames.dtype == torch.uint8
    batches = list(stacked_play(2, 100))
    for batch in batches:
        buffer.add(*batch)
    assert len(buffer) == 200  # every transition, none overwritten
    for e in (0, 1):
        # A reset: the next transition does not start from this one's next observation.
        resets = sum(not np.array_equal(b[3][e], after[0][e]) for b, after in zip(batches, batches[1:]))
        lives = sum(b[4][e] for b in batches[:-1]) - resets + sum(b[5][e] for b in batches[:-1])
        assert resets > 5 and lives > 5  # episodes of every kind
        # The first stack's 4 frames, one new frame per step, and 4 for each reset's stack (3 zero
        # frames and its first one); a lost life (the stack goes on) costs nothing more.
        assert buffer.written[e] == 4 + 100 + 4 * resets


def test_stacks_after_a_reset_are_zero_padded_and_a_lost_life_keeps_the_stack():
    buffer = FrameReplayBuffer(64, (4, 6, 6), np.uint8, frame_stack=4)
    zeros = [np.zeros((6, 6), np.uint8)] * 3
    s0 = np.stack([*zeros, frame(1)])  # a reset
    s1 = np.stack([*zeros[:2], frame(1), frame(2)])
    s2 = np.stack([zeros[0], frame(1), frame(2), frame(3)])  # a life lost here: terminated, the stack goes on
    s3 = np.stack([frame(1), frame(2), frame(3), frame(4)])  # truncated, then a reset
    r0 = np.stack([*zeros, frame(10)])
    r1 = np.stack([*zeros[:2], frame(10), frame(11)])
    steps = [(s0, s1, False, False), (s1, s2, True, False), (s2, s3, False, True), (r0, r1, False, False)]
    for i, (obs, nxt, term, trunc) in enumerate(steps):
        buffer.add(obs[None], np.array([i]), np.array([float(i)]), nxt[None], np.array([term]), np.array([trunc]))
    # 3 zero frames + frame 1, frames 2, 3, 4 (the lost life writes nothing more), then 3 zero frames
    # + frame 10 for the reset, and frame 11: 12 frames for 4 transitions.
    assert buffer.written.tolist() == [12] and len(buffer) == 4
    batch = buffer.sample(200, np.random.default_rng(0))
    seen = set()
    for obs, action, nxt, not_done in zip(
        batch["observations"], batch["actions"], batch["next_observations"], batch["not_done"], strict=True
    ):
        i = int(action)
        seen.add(i)
        np.testing.assert_array_equal(obs.numpy(), steps[i][0])
        np.testing.assert_array_equal(nxt.numpy(), steps[i][1])
        assert not_done == (0.0 if steps[i][2] else 1.0)  # the lost life cuts; the truncation bootstraps
    assert seen == {0, 1, 2, 3}
    assert (batch["observations"][batch["actions"] == 3][:, :3] == 0).all()  # no frame of the old episode


@pytest.mark.parametrize("n_envs, capacity", [(1, 2_000), (2, 2_000), (3, 90)])
def test_sampling_rebuilds_exactly_what_the_env_gave(n_envs, capacity):
    buffer = FrameReplayBuffer(capacity, (4, 6, 6), np.uint8, n_envs=n_envs, frame_stack=4)
    batches = list(stacked_play(n_envs, 300, seed=n_envs))
    for batch in batches:
        buffer.add(*batch)
    given = by_action(batches)
    batch = buffer.sample(1_000, np.random.default_rng(1))
    o, r, n, t = (np.stack(x) for x in zip(*(given[int(a)] for a in batch["actions"]), strict=True))
    np.testing.assert_array_equal(batch["observations"].numpy(), o)
    np.testing.assert_array_equal(batch["next_observations"].numpy(), n)
    np.testing.assert_array_equal(batch["rewards"].numpy(), r)
    np.testing.assert_array_equal(batch["not_done"].numpy(), 1.0 - t)
    sampled = set(batch["actions"].tolist())
    if capacity >= 300 * n_envs + 1_000:
        assert len(buffer) == 300 * n_envs and len(sampled) > 0.7 * len(buffer)
    else:  # the ring wrapped: only the newest transitions remain, each rebuilt exactly (above)
        assert len(buffer) < capacity and min(sampled) > 300 * n_envs - capacity


def test_single_frames_and_bool():
    buffer = FrameReplayBuffer(10, (3, 3, 2), np.bool_, frame_stack=1)
    rng = np.random.default_rng(0)
    obs = [rng.random((3, 3, 2)) < 0.5 for _ in range(6)]
    for i in range(5):
        buffer.add(obs[i][None], np.array([i]), np.array([1.0]), obs[i + 1][None], np.array([False]), np.array([False]))
    assert buffer.nbytes == 10 * 18 and buffer.written.tolist() == [6]  # the first observation, then one frame a step
    batch = buffer.sample(50, np.random.default_rng(0))
    assert batch["observations"].dtype == torch.bool
    for o, a, n in zip(batch["observations"], batch["actions"], batch["next_observations"], strict=True):
        np.testing.assert_array_equal(o.numpy(), obs[int(a)])
        np.testing.assert_array_equal(n.numpy(), obs[int(a) + 1])


def test_a_dataset_goes_in_whole_each_observation_once_and_comes_back_exactly():
    """Frames f1 -> f2 -> f3 (terminated), a reset to f4 -> f5, then f5 -> f5 (truncated; the next transition
    starts from f5 too, so its chain goes on) and f5 -> f6: two chains, so 5 transitions take 5 + 2 slots."""
    f = [np.full((2, 2), i, np.uint8) for i in range(7)]
    obs = np.stack([f[1], f[2], f[4], f[5], f[5]])
    nxt = np.stack([f[2], f[3], f[5], f[5], f[6]])
    actions, rewards = np.array([10, 11, 12, 13, 14]), np.array([1.0, 2.0, 4.0, 8.0, 16.0], np.float32)
    terminated, truncated = np.array([False, True, False, False, False]), np.array([False, False, False, True, False])
    buffer = FrameReplayBuffer.from_transitions(obs, actions, rewards, nxt, terminated, truncated)
    assert (buffer.slots, len(buffer), buffer.frames.dtype) == (7, 5, torch.uint8)
    assert buffer.frames[0, :, 0, 0].tolist() == [1, 2, 3, 4, 5, 5, 6]
    back = buffer.transitions()
    for key, want in (("observations", obs), ("actions", actions), ("rewards", rewards), ("next_observations", nxt)):
        np.testing.assert_array_equal(back[key], want)
    np.testing.assert_array_equal(back["terminated"], terminated)
    np.testing.assert_array_equal(back["truncated"], truncated)
    states, data_actions = buffer.evenly_spaced(3)  # transitions 0, 2 and 4
    assert states[:, 0, 0].tolist() == [1, 4, 5] and data_actions.tolist() == [10, 12, 14]
    # Two-step windows stop at the termination; a truncated transition ends its window (it bootstraps there).
    batch = buffer.sample(200, np.random.default_rng(0), n_step=2, gamma=0.5)
    expected = {10: (1 + 0.5 * 2, 3, 0.0), 11: (2.0, 3, 0.0), 12: (4 + 0.5 * 8, 5, 1.0), 13: (8.0, 5, 1.0)}
    expected[14] = (16.0, 6, 1.0)
    seen = set()
    for a, r, n, nd in zip(*(batch[k] for k in ("actions", "rewards", "next_observations", "not_done")), strict=True):
        seen.add(int(a))
        assert (r.item(), int(n[0, 0]), nd.item()) == pytest.approx(expected[int(a)])
    assert seen == set(expected)


def test_transitions_of_a_wrapped_ring_come_oldest_first():
    """Capacity 4, one chain of frames 1..6: the writes of frames 5 and 6 overwrite the slots of the first two
    transitions; the other three come back in the order they were taken."""
    buffer = FrameReplayBuffer(4, (2, 2), np.uint8)
    for i in range(1, 6):
        frames = np.full((1, 2, 2), i, np.uint8), np.full((1, 2, 2), i + 1, np.uint8)
        buffer.add(frames[0], np.array([i]), np.array([0.0]), frames[1], np.array([False]), np.array([False]))
    back = buffer.transitions()
    assert back["actions"].tolist() == [3, 4, 5]
    assert back["observations"][:, 0, 0].tolist() == [3, 4, 5] and back["next_observations"][:, 0, 0].tolist() == [
        4,
        5,
        6,
    ]


def test_n_step_windows_follow_the_ring():
    buffer = FrameReplayBuffer(20, (2, 3, 3), np.uint8, frame_stack=2)
    f = [np.full((3, 3), i, np.uint8) for i in range(9)]
    stack = lambda a, b: np.stack([f[a], f[b]])  # noqa: E731
    # rewards 1, 2, 4, 8; transition 2 terminates (its window cut there), then a reset and one more.
    steps = [(stack(0, 1), stack(1, 2), 1.0, False), (stack(1, 2), stack(2, 3), 2.0, False)]
    steps += [(stack(2, 3), stack(3, 4), 4.0, True), (stack(0, 6), stack(6, 7), 8.0, False)]
    for i, (obs, nxt, reward, term) in enumerate(steps):
        buffer.add(obs[None], np.array([i]), np.array([reward]), nxt[None], np.array([term]), np.array([False]))
    batch = buffer.sample(100, np.random.default_rng(0), n_step=3, gamma=0.5)
    expected = {  # action: (return, discount, next observation, not_done)
        0: (1 + 0.5 * 2 + 0.25 * 4, 0.125, stack(3, 4), 0.0),
        1: (2 + 0.5 * 4, 0.25, stack(3, 4), 0.0),
        2: (4.0, 0.5, stack(3, 4), 0.0),
        3: (8.0, 0.5, stack(6, 7), 1.0),  # the newest: its window ends with it
    }
    for a, r, d, n, nd in zip(
        *(batch[k] for k in ("actions", "rewards", "discount", "next_observations", "not_done")), strict=True
    ):
        want = expected[int(a)]
        assert (r.item(), d.item(), nd.item()) == pytest.approx((want[0], want[1], want[3]))
        np.testing.assert_array_equal(n.numpy(), want[2])


def test_state_dict_round_trip_samples_the_same():
    buffer = FrameReplayBuffer(60, (4, 6, 6), np.uint8, n_envs=2, frame_stack=4)
    batches = list(stacked_play(2, 50))
    for batch in batches[:40]:
        buffer.add(*batch)
    copy = FrameReplayBuffer(60, (4, 6, 6), np.uint8, n_envs=2, frame_stack=4)
    copy.load_state_dict(buffer.state_dict())
    for batch in batches[40:]:  # both go on alike, the chains they were in included
        buffer.add(*batch)
        copy.add(*batch)
    a, b = buffer.sample(64, np.random.default_rng(3), 3, 0.9), copy.sample(64, np.random.default_rng(3), 3, 0.9)
    for key in a:
        assert torch.equal(a[key], b[key]), key
    with pytest.raises(InputError, match="rings of 30 slots"):
        FrameReplayBuffer(80, (4, 6, 6), np.uint8, n_envs=2, frame_stack=4).load_state_dict(buffer.state_dict())


def test_bad_input_and_the_memory_check():
    with pytest.raises(InputError, match=r"takes 7,071\.0 GB; cpu has .* GB available. Lower buffer_size"):
        FrameReplayBuffer(10**9, (4, 84, 84), np.uint8, frame_stack=4)  # refused before allocating
    with pytest.raises(InputError, match="uint8 or bool"):
        FrameReplayBuffer(10, (4, 6, 6), np.float32, frame_stack=4)
    with pytest.raises(InputError, match="multiple of n_envs"):
        FrameReplayBuffer(11, (4, 6, 6), np.uint8, n_envs=2, frame_stack=4)
    with pytest.raises(InputError, match="not stacks of 3 frames"):
        FrameReplayBuffer(10, (4, 6, 6), np.uint8, frame_stack=3)
    buffer = FrameReplayBuffer(10, (2, 6, 6), np.uint8, frame_stack=2)
    with pytest.raises(InputError, match="holds no transition"):
        buffer.sample(1, np.random.default_rng(0))
    obs = np.zeros((1, 2, 6, 6), np.uint8)
    with pytest.raises(InputError, match="whose next one is the last 1 frames and a new one"):
        buffer.add(obs, np.array([0]), np.array([0.0]), obs + 1, np.array([False]), np.array([False]))
    with pytest.raises(InputError, match="needs at least one transition"):
        empty, none = np.zeros((0, 2, 2), np.uint8), np.zeros(0)
        FrameReplayBuffer.from_transitions(empty, none, none, empty, none.astype(bool), none.astype(bool))


def test_the_observation_space_chooses_the_replay_buffer():
    vectors, frames = gym.spaces.Box(-1.0, 1.0, (3,)), gym.spaces.Box(0, 255, (4, 6, 6), np.uint8)
    buffer = make_replay_buffer(vectors, 8, (2,), n_envs=2)
    assert isinstance(buffer, ReplayBuffer) and buffer.observations.shape == (8, 3) and buffer.actions.shape == (8, 2)
    assert buffer.n_envs == 2 and buffer.actions.dtype == torch.float32
    buffer = make_replay_buffer(frames, 12, (), n_envs=2, frame_stack=4)
    assert isinstance(buffer, FrameReplayBuffer) and buffer.frames.shape == (2, 6, 6, 6)  # one 6x6 frame per slot
    with pytest.raises(InputError, match=r"take one Discrete action per transition .*, not actions of shape \(2,\)"):
        make_replay_buffer(frames, 12, (2,))
    # a dataset: vectors whole in a ReplayBuffer of its size, frames each observation once
    obs = np.arange(6, dtype=np.float32).reshape(2, 3)
    flags = np.zeros(2, bool)
    buffer = replay_buffer_from(vectors, obs, np.array([[0.5], [-0.5]], np.float32), np.ones(2), obs + 1, flags, flags)
    assert isinstance(buffer, ReplayBuffer) and buffer.capacity == len(buffer) == 2
    stacks = np.zeros((2, 4, 6, 6), np.uint8)
    buffer = replay_buffer_from(frames, stacks, np.array([0, 1]), np.ones(2), stacks, flags, flags)
    assert isinstance(buffer, FrameReplayBuffer) and len(buffer) == 2
    with pytest.raises(InputError, match="at least one transition"):
        replay_buffer_from(vectors, obs[:0], obs[:0], np.ones(0), obs[:0], flags[:0], flags[:0])
    # capacities that keep 10 transitions of 4 environments: 12 (a multiple of 4); frames twice that
    assert (replay_capacity(vectors, 10, 4), replay_capacity(frames, 10, 4), replay_capacity(vectors, 10)) == (
        12,
        24,
        10,
    )


def test_a_vector_buffers_transitions_come_oldest_first_after_a_wrap():
    buffer = ReplayBuffer(3, 1, ())
    for i in range(5):  # transitions 0..4 into 3 slots: 2, 3, 4 remain, in slots 2, 0, 1
        buffer.add(np.array([[i]]), np.array([i]), np.array([i]), np.array([[i + 1]]), [i == 4], [False])
    data = buffer.transitions()
    assert data["observations"][:, 0].tolist() == [2, 3, 4] and data["actions"].tolist() == [2, 3, 4]
    assert data["next_observations"][:, 0].tolist() == [3, 4, 5] and data["terminated"].tolist() == [False, False, True]
