"""DQN's pieces against hand-computed values: the Double DQN and max targets, terminated against truncated,
n-step windows of the vector replay buffer, the epsilon schedule and its checkpoint, the target
network (an exact copy, updated as configured), exact resume with the buffer, and bad input
(docs/correctness.md items 1, 9, 13, 14)."""

import csv
import shutil

import gymnasium as gym
import numpy as np
import pytest
import torch

import acrl
from acrl import DQN
from acrl.algos.dqn import linear_epsilon
from acrl.core.envs import DiscretizedActions
from acrl.core.errors import InputError
from acrl.parts.buffers import FrameReplayBuffer, ReplayBuffer
from tests.conftest import Frames, set_linear, write_dataset

SMALL = {
    "hidden_sizes": (8,),
    "batch_size": 8,
    "start_steps": 50,
    "train_freq": 1,
    "utd_ratio": 1.0,
    "buffer_size": 1_000,
    "epsilon_decay_steps": 100,
    "eval_freq": 0,
    "iteration_steps": 50,
    "eval_episodes": 1,
    "device": "cpu",
}


def constant_q(agent: DQN, online: list[float], target: list[float]) -> None:
    """Make the online and target networks output these Q-values for every observation."""
    for net, bias in ((agent.net, online), (agent.net_target, target)):
        set_linear(net.head, torch.zeros(len(bias), net.head.in_features).tolist(), bias)


def test_double_dqn_target_uses_the_online_argmax_and_the_target_value():
    agent = DQN("CartPole-v1", gamma=0.9, **SMALL)
    constant_q(agent, online=[2.0, 1.0], target=[10.0, 20.0])  # online argmax 0; max of the target would be 20
    batch = {
        "next_observations": torch.zeros(3, 4),
        "rewards": torch.tensor([1.0, 2.0, 3.0]),
        "not_done": torch.tensor([1.0, 0.0, 1.0]),
        "discount": torch.tensor([0.9, 0.9, 0.81]),  # the third: a 2-step window
    }
    torch.testing.assert_close(agent.compute_target(batch), torch.tensor([1.0 + 9.0, 2.0, 3.0 + 8.1]))


def test_without_double_q_the_target_is_the_target_networks_max():
    """double_q=false: y = r + discount * not_done * max_a Q'(s', a) = r + discount * 20, whatever the online
    network prefers (its argmax, action 0, is worth 10 to the target network); for a discretised Box the mean of
    each dimension's max: Q'_0 = (0, 0, 7) and Q'_1 = (100, 0, 3) give (7 + 100) / 2 = 53.5."""
    agent = DQN("CartPole-v1", gamma=0.9, double_q=False, **SMALL)
    constant_q(agent, online=[2.0, 1.0], target=[10.0, 20.0])
    batch = {
        "next_observations": torch.zeros(3, 4),
        "rewards": torch.tensor([1.0, 2.0, 3.0]),
        "not_done": torch.tensor([1.0, 0.0, 1.0]),
        "discount": torch.tensor([0.9, 0.9, 0.81]),
    }
    torch.testing.assert_close(agent.compute_target(batch), torch.tensor([1.0 + 18.0, 2.0, 3.0 + 16.2]))
    agent = DQN(TwoJoints, action_bins=3, gamma=0.5, double_q=False, **SMALL)
    constant_q(agent, online=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], target=[0.0, 0.0, 7.0, 100.0, 0.0, 3.0])
    batch = {"next_observations": torch.zeros(1, 4), "rewards": torch.tensor([1.0]), "not_done": torch.tensor([1.0])}
    torch.testing.assert_close(agent.compute_target(batch), torch.tensor([1.0 + 0.5 * 53.5]))


def test_terminated_cuts_and_truncated_bootstraps():
    agent = DQN("CartPole-v1", gamma=0.99, **SMALL)
    constant_q(agent, online=[0.0, 1.0], target=[7.0, 10.0])
    agent.source.buffer = ReplayBuffer(2, 4, ())
    obs = np.array([[1, 0, 0, 0], [2, 0, 0, 0]], np.float32)
    agent.buffer.add(obs, np.array([0, 1]), np.ones(2), obs + 1, np.array([True, False]), np.array([False, True]))
    batch = agent.sample_batch()
    target = agent.compute_target(batch)
    terminated = batch["observations"][:, 0] == 1
    torch.testing.assert_close(target[terminated], torch.ones(int(terminated.sum())))  # r only
    torch.testing.assert_close(target[~terminated], torch.full((int((~terminated).sum()),), 1 + 0.99 * 10.0))


def test_replay_buffer_n_step_windows_with_interleaved_envs():
    buffer = ReplayBuffer(12, 1, (), n_envs=2)
    # env 0: observations 0, 1, 2, 3, 4 (transition 2 -> 3 terminates), then a resume starts it at 10;
    # env 1: observations 100, 101, ... (transition 101 -> 102 truncated, then 200 after the reset).
    env0 = [(0, 1, 1.0, False), (1, 2, 2.0, False), (2, 3, 4.0, True), (10, 11, 8.0, False)]
    env1 = [(100, 101, 1.0, False), (101, 102, 2.0, False), (200, 201, 4.0, False), (201, 202, 8.0, False)]
    for a, b in zip(env0, env1, strict=True):
        buffer.add(
            np.array([[a[0]], [b[0]]], np.float32),
            np.array([0, 1]),
            np.array([a[2], b[2]]),
            np.array([[a[1]], [b[1]]], np.float32),
            np.array([a[3], b[3]]),
            np.array([False, b[0] == 101]),
        )
    batch = buffer.sample(200, np.random.default_rng(0), n_step=3, gamma=0.5)
    expected = {  # first observation: (return, discount, next observation, not_done)
        0: (1 + 1 + 1, 0.125, 3, 0.0),  # 1 + 0.5 * 2 + 0.25 * 4, cut by the termination in its third step
        1: (2 + 2, 0.25, 3, 0.0),
        2: (4, 0.5, 3, 0.0),
        10: (8, 0.5, 11, 1.0),  # the newest
        100: (1 + 1, 0.25, 102, 1.0),  # stops at the truncation and bootstraps
        101: (2, 0.5, 102, 1.0),
        200: (4 + 4, 0.25, 202, 1.0),
        201: (8, 0.5, 202, 1.0),
    }
    got = {
        int(o): (r.item(), d.item(), int(n), nd.item())
        for o, r, d, n, nd in zip(
            batch["observations"][:, 0],
            batch["rewards"],
            batch["discount"],
            batch["next_observations"][:, 0],
            batch["not_done"],
            strict=True,
        )
    }
    assert got == expected  # every transition sampled, each with its hand-computed window


def test_epsilon_schedule_values():
    assert [linear_epsilon(t, 1.0, 0.1, 100) for t in (0, 50, 100, 1_000)] == pytest.approx([1.0, 0.55, 0.1, 0.1])
    assert linear_epsilon(100, 1.0, 0.04, 100) == 0.04  # exactly the end value, no round-off
    assert linear_epsilon(0, 1.0, 0.2, 0) == 0.2


class KeepCheckpoint(acrl.Callback):
    """Copies checkpoints/latest.pt to `copy` when it is written at `step`."""

    def __init__(self, step, copy):
        self.step, self.copy = step, copy

    def on_checkpoint(self, step, path):
        if step == self.step:
            shutil.copy(path, self.copy)


@pytest.mark.filterwarnings("ignore:resuming at step 60 with an empty replay buffer")
def test_epsilon_is_logged_checkpointed_and_continues_after_a_resume(tmp_path):
    config = {**SMALL, "epsilon_end": 0.1, "iteration_steps": 20, "checkpoint_freq": 60}
    mid = tmp_path / "step60.pt"
    DQN("CartPole-v1", seed=0, **config).learn(
        100, run_dir=tmp_path / "run", progress=False, callbacks=[KeepCheckpoint(60, mid)]
    )
    with (tmp_path / "run" / "metrics.csv").open() as f:
        rows = [(int(r["step"]), float(r["rollout/epsilon"])) for r in csv.DictReader(f)]
    # epsilon(t) = 1 - 0.9 t / 100 at the end of each iteration of 20 steps, then 0.1
    assert [step for step, _ in rows] == [20, 40, 60, 80, 100]
    assert [eps for _, eps in rows] == pytest.approx([0.82, 0.64, 0.46, 0.28, 0.1])
    loaded = acrl.load(mid)  # the checkpoint of step 60 holds the schedule's position: the step
    assert loaded.num_steps == 60 and loaded.epsilon() == pytest.approx(0.46)
    seen = []

    class Epsilons(acrl.Callback):
        def on_iteration(self, step, metrics):
            seen.append((step, metrics["rollout/epsilon"]))

    loaded.learn(100, progress=False, callbacks=[Epsilons()])
    assert [step for step, _ in seen] == [80, 100] and [eps for _, eps in seen] == pytest.approx([0.28, 0.1])


def test_target_network_starts_as_a_copy_and_is_copied_every_interval():
    agent = DQN("CartPole-v1", seed=0, target_update_interval=3, tau=1.0, learning_rate=0.01, **SMALL)
    for target, online in zip(agent.net_target.parameters(), agent.net.parameters(), strict=True):
        assert torch.equal(target, online) and target.data_ptr() != online.data_ptr() and not target.requires_grad
    rng = np.random.default_rng(0)
    agent.buffer.add(
        rng.normal(size=(32, 4)), rng.integers(0, 2, 32), rng.normal(size=32), rng.normal(size=(32, 4)),
        np.zeros(32, bool), np.zeros(32, bool),
    )  # fmt: skip
    start = [p.detach().clone() for p in agent.net_target.parameters()]
    for update in (1, 2, 3):
        agent.update(agent.sample_batch())
        pairs = list(zip(agent.net_target.parameters(), agent.net.parameters(), strict=True))
        if update < 3:
            assert all(torch.equal(t, s) for (t, _), s in zip(pairs, start, strict=True))  # unchanged
            assert not all(torch.equal(t, o) for t, o in pairs)  # while the online net moved
        else:
            assert all(torch.equal(t, o) for t, o in pairs)  # an exact copy at the third update
    soft = DQN("CartPole-v1", seed=0, target_update_interval=1, tau=0.1, **SMALL)
    soft.source.buffer = agent.buffer
    old_t, old_o = [p.clone() for p in soft.net_target.parameters()], [p.clone() for p in soft.net.parameters()]
    soft.update(soft.sample_batch())
    for t, o_before, o_old, o in zip(soft.net_target.parameters(), old_t, old_o, soft.net.parameters(), strict=True):
        assert torch.equal(o_before, o_old)
        torch.testing.assert_close(t, 0.9 * o_before + 0.1 * o)  # (1 - tau) target + tau online


@pytest.mark.parametrize("images", [False, True])
def test_checkpoint_with_the_replay_buffer_resumes_exactly(tmp_path, images):
    env = Frames if images else "CartPole-v1"
    config = {**SMALL, "save_replay_buffer": True, "n_step": 3, "checkpoint_freq": 100}
    agent = DQN(env, seed=1, **config).learn(150, run_dir=tmp_path, progress=False)
    assert isinstance(agent.buffer, FrameReplayBuffer if images else ReplayBuffer)
    if images:  # one 12x12x3 frame per slot, no stacks (Frames is not a stacking env)
        assert agent.buffer.nbytes == 1_000 * 12 * 12 * 3
    latest = tmp_path / "checkpoints" / "latest.pt"
    loaded = DQN.load(latest, env=env)
    assert (loaded.num_steps, loaded.updates, len(loaded.buffer)) == (150, agent.updates, len(agent.buffer))
    a, b = (
        agent.buffer.sample(32, np.random.default_rng(0), 3, 0.9),
        loaded.buffer.sample(32, np.random.default_rng(0), 3, 0.9),
    )
    assert all(torch.equal(a[k], b[k]) for k in a)
    resumed = loaded.learn(250, progress=False)
    again = DQN.load(latest, env=env).learn(250, progress=False)
    assert resumed.updates == agent.updates + 100  # the buffer came back: an update every step
    for p, q in zip(resumed.net.parameters(), again.net.parameters(), strict=True):
        assert torch.equal(p, q)


def test_bad_input():
    with pytest.raises(InputError, match=r"DQN needs discrete actions.*action_bins=N.*use .*ddpg, td3 or sac"):
        DQN("Pendulum-v1")
    with pytest.raises(InputError, match=r"DQN's action_bins need at least 2 sub-actions per dimension"):
        DQN("Pendulum-v1", action_bins=1)
    with pytest.raises(InputError, match=r"Discrete\(2\) is already discrete: drop action_bins"):
        DQN("CartPole-v1", action_bins=5)
    with pytest.raises(InputError, match=r"image observations .* take one Discrete action per transition"):
        DQN(BoxFrames, action_bins=5)
    with pytest.raises(InputError, match=r"epsilon_start must lie in \[0, 1\]"):
        DQN("CartPole-v1", epsilon_start=1.5)
    with pytest.raises(InputError, match=r"epsilon_end must lie in \[0, 1\]"):
        DQN("CartPole-v1", epsilon_end=-0.1)
    with pytest.raises(InputError, match="the epsilon schedule must end within the budget"):
        DQN("CartPole-v1", total_steps=1_000, epsilon_decay_steps=2_000).learn(progress=False)
    # the spaces first: a Box action space is refused for what it is, whatever the schedule says
    with pytest.raises(InputError, match=r"DQN needs discrete actions"):
        DQN("MountainCarContinuous-v0", total_steps=1_000, epsilon_decay_steps=2_000)
    agent = DQN("CartPole-v1", **SMALL)
    with pytest.raises(InputError, match="epsilon_decay_steps=100 and total_steps=60"):
        agent.learn(60, progress=False)  # a budget cut below the schedule at learn
    with pytest.raises(InputError, match="multiple of n_envs"):
        DQN("CartPole-v1", n_envs=3, buffer_size=1_000)
    with pytest.raises(InputError, match=r"takes [\d,.]+ GB; cpu has"):
        DQN(Frames, buffer_size=10**11, device="cpu")  # refused before allocating
    with pytest.raises(InputError, match="optimizer must be 'adam' or 'rmsprop'"):
        DQN("CartPole-v1", optimizer="sgd")


# ------------------------------------------------------------------- a Box action space, discretised
class TwoJoints(gym.Env):
    """Actions in [-2, 2] x [0, 1] (unequal bounds), observations 4 zeros, reward -|a_0|, 5 steps per episode."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(4, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(4, np.float32), -abs(float(action[0])), False, self.t >= 5, {}


class BoxFrames(Frames):
    """Frames with a Box action space: what action_bins refuses."""

    action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


def test_bins_and_the_nearest_bin_by_hand():
    """5 bins over [-1, 1]: -1, -0.5, 0, 0.5, 1; -0.75, halfway between the first two, goes to the upper one;
    values past the bounds to the end bins. TwoJoints' bounds [-2, 2] x [0, 1]: index k of 5 is -2 + k and
    k / 4 in the environment."""
    adapter = DiscretizedActions(gym.spaces.Box(-1.0, 1.0, (4,), np.float32), 5)
    np.testing.assert_array_equal(adapter.bins, [-1.0, -0.5, 0.0, 0.5, 1.0])
    actions = torch.tensor([[-1.0, -0.74, -0.75, 0.2], [1.3, -1.2, 0.5, 0.76]])
    assert adapter.from_buffer(actions).tolist() == [[0, 1, 1, 2], [4, 0, 3, 4]]
    ten = DiscretizedActions(gym.spaces.Box(-1.0, 1.0, (10,), np.float32), 10)
    assert ten.from_buffer(torch.from_numpy(ten.bins)).tolist() == list(range(10))  # each bin maps to itself
    joints = DiscretizedActions(TwoJoints.action_space, 5)
    assert (joints.shape, joints.n) == ((2,), 5)
    np.testing.assert_array_equal(joints.to_env(np.array([[0, 4], [3, 1]])), [[-2.0, 1.0], [1.0, 0.25]])
    np.testing.assert_array_equal(joints.to_buffer(np.array([3, 1])), [0.5, -0.5])
    assert joints.to_policy(np.array([[0.9, 0.3], [-2.0, 1.0]], np.float32)).tolist() == [[3, 1], [0, 4]]
    with pytest.raises(InputError, match="at least 2 sub-actions"):
        DiscretizedActions(TwoJoints.action_space, 1)
    with pytest.raises(InputError, match="needs finite action bounds"):
        DiscretizedActions(gym.spaces.Box(-np.inf, np.inf, (2,), np.float32), 3)


def test_discretised_greedy_action_and_q_by_hand():
    """J = 2 dimensions of K = 5 bins; output j * 5 + k is Q_j(s, k). Dimension 0 (bounds -2, 2: bins -2, -1,
    0, 1, 2) is best at bin 3, dimension 1 (bounds 0, 1: 0, 0.25, ..., 1) at bin 0, so the greedy env action is
    (1, 0), and Q(s, a) = (Q_0(s, a_0) + Q_1(s, a_1)) / 2: (9 + 50) / 2 = 29.5 for it; for the policy-unit
    action (0, 0.5), bins 2 and 3, (3 + 40) / 2 = 21.5."""
    agent = DQN(TwoJoints, action_bins=5, **SMALL)
    q = [1.0, 2.0, 3.0, 9.0, 5.0, 50.0, 20.0, 30.0, 40.0, 10.0]
    constant_q(agent, online=q, target=q)
    np.testing.assert_array_equal(agent.predict(np.zeros(4, np.float32)), [1.0, 0.0])
    obs = torch.zeros(1, 4)
    assert agent.q_value(obs, torch.tensor([[2, 3]])).item() == pytest.approx(21.5)
    assert agent.q_value(obs, agent.action_adapter.from_buffer(torch.tensor([[0.0, 0.5]]))).item() == 21.5
    result = agent.evaluate(episodes=1)  # the critic's estimate at the first state, as DDPG's and BCQ's
    assert result["q_initial_mean"] == pytest.approx(29.5)


def test_discretised_double_dqn_target_and_loss_by_hand():
    """J = 2, K = 3. Online Q_0 = (1, 2, 3), Q_1 = (4, 5, 6): its argmax is bin 2 in both dimensions; the target
    network values them 7 and 3 (its own argmax of dimension 1 would be 100), so Q'(s', a') = (7 + 3) / 2 = 5 and
    y = r + 0.5 * not_done * 5 = (1 + 2.5, 2) for r = (1, 2), not_done = (1, 0). Actions (bins (0, 2) and
    (1, 1)) take Q = (1, 6) and (2, 5): errors (-2.5, 2.5) and (0, 3), Huber 2, 2, 0, 2.5, mean 1.625."""
    agent = DQN(TwoJoints, action_bins=3, gamma=0.5, **SMALL)
    constant_q(agent, online=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], target=[0.0, 0.0, 7.0, 100.0, 0.0, 3.0])
    batch = {
        "observations": torch.zeros(2, 4),
        "actions": torch.tensor([[0, 2], [1, 1]]),
        "rewards": torch.tensor([1.0, 2.0]),
        "next_observations": torch.zeros(2, 4),
        "not_done": torch.tensor([1.0, 0.0]),
    }
    torch.testing.assert_close(agent.compute_target(batch), torch.tensor([3.5, 2.0]))
    metrics = agent.update(batch)
    assert metrics["train/value_loss"] == pytest.approx(1.625) and metrics["train/q_mean"] == pytest.approx(3.5)


def test_discretised_batches_take_the_nearest_bins_and_exploration_only_sub_actions():
    agent = DQN(TwoJoints, action_bins=5, **SMALL)
    agent.source.buffer = ReplayBuffer(2, 4, (2,))
    obs = np.array([[1, 0, 0, 0], [2, 0, 0, 0]], np.float32)
    actions = np.array([[-0.8, 0.3], [0.74, 1.0]], np.float32)  # policy units
    agent.buffer.add(obs, actions, np.zeros(2), obs, np.zeros(2, bool), np.zeros(2, bool))
    batch = agent.sample_batch()
    expected = {1: [0, 3], 2: [3, 4]}
    assert all(expected[int(o)] == a for o, a in zip(batch["observations"][:, 0], batch["actions"].tolist()))
    bins = {-1.0, -0.5, 0.0, 0.5, 1.0}
    assert set(agent.random_actions(50).ravel().tolist()) == {0, 1, 2, 3, 4}  # sub-action indices
    assert set(agent.action_adapter.to_buffer(agent.random_actions(50)).ravel().tolist()) == bins
    agent = DQN(TwoJoints, action_bins=5, **SMALL).learn(200, progress=False)  # epsilon-greedy, then greedy
    assert agent.updates > 0 and set(agent.buffer.actions[: len(agent.buffer)].ravel().tolist()) <= bins
    assert set(np.unique(agent.predict(np.zeros((3, 4), np.float32), deterministic=False))) <= {
        -2,
        -1,
        0,
        1,
        2,
        0.25,
        0.5,
        0.75,
    }


def test_offline_dqn_learns_from_a_continuous_dataset_without_an_epsilon_schedule(tmp_path):
    """Offline, total_steps counts updates and nothing explores: a schedule longer than the budget is fine,
    and the evaluation reports value estimates on the data (Q of the data's actions, of the policy's)."""
    write_dataset(tmp_path / "pendulum.h5", n=40)
    agent = DQN(
        dataset=str(tmp_path / "pendulum.h5"),
        action_bins=10,
        total_steps=100,
        epsilon_decay_steps=10_000,
        hidden_sizes=(8,),
        batch_size=8,
        eval_freq=0,
        iteration_steps=50,
        eval_episodes=1,
    )
    agent.learn(progress=False)
    result = agent.evaluate(episodes=1)
    assert agent.updates == 100 and {"q_initial_mean", "q_data_mean", "q_policy_mean"} <= set(result)


def test_a_discretised_dqn_learns_from_another_agents_buffer_as_it_is():
    """The concurrent experiment's DQN: a buffer of a continuous agent's actions in policy units, read through
    the nearest sub-actions; nothing explores, so no epsilon schedule is checked against the short budget."""
    buffer = ReplayBuffer(4, 4, (2,))
    obs = np.zeros((4, 4), np.float32)
    actions = np.array([[-1.0, 1.0], [0.1, -0.2], [0.6, 0.9], [-0.3, 0.0]], np.float32)
    buffer.add(obs, actions, np.ones(4), obs, np.zeros(4, bool), np.zeros(4, bool))
    agent = DQN(TwoJoints, action_bins=3, buffer=buffer, **{**SMALL, "epsilon_decay_steps": 10_000})
    assert agent.step_unit == "update" and agent.buffer is buffer
    batch = agent.sample_batch()
    assert {tuple(a) for a in batch["actions"].tolist()} <= {(0, 2), (1, 1), (2, 2), (1, 1)}
    agent.learn(20, progress=False)
    assert (agent.num_steps, agent.updates) == (20, 20) and buffer.actions[0].tolist() == [-1.0, 1.0]  # untouched
