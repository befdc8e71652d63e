"""DDPG/TD3 pieces with values worked out by hand: TD targets, target smoothing, soft updates,
the replay buffer's not_done, truncation bootstrapping, delayed actor updates, checkpoints."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from acrl import DDPG, SAC, TD3
from acrl.algos.td3 import smooth_target_actions
from acrl.core.errors import InputError
from acrl.parts.buffers import ReplayBuffer
from acrl.parts.datasets import collect_transitions, save_dataset
from acrl.parts.returns import td_target
from acrl.parts.sources import DatasetSource

TINY = {"hidden_sizes": (1,), "buffer_size": 100, "batch_size": 2, "start_steps": 0}
SMALL = {
    "hidden_sizes": (16, 16),
    "batch_size": 32,
    "buffer_size": 5_000,
    "start_steps": 100,
    "iteration_steps": 100,
    "eval_freq": 0,
}


class ArangeRng:
    """Stands in for np.random.Generator in ReplayBuffer.sample: indices 0, 1, ..., B-1."""

    def integers(self, low, high, size):
        return np.arange(size)


def set_linear(layer, weight, bias):
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weight, dtype=torch.float32))
        layer.bias.copy_(torch.tensor(bias, dtype=torch.float32))


def fix_tiny_nets(agent, q_scales):
    """mu'(s) = tanh(atanh(0.5)) = 0.5 everywhere; Qi'(s, a) = q_scales[i] * relu(s0 + 2 a) + 0.5."""
    actor = agent.actor_target.net
    set_linear(actor[0], [[0.0, 0.0, 0.0]], [0.0])
    set_linear(actor[2], [[0.0]], [math.atanh(0.5)])
    twin = isinstance(agent, TD3)
    nets = [agent.critic_target.q1_net, agent.critic_target.q2_net] if twin else [agent.critic_target.q_net]
    for net, scale in zip(nets, q_scales):
        set_linear(net[0], [[1.0, 0.0, 0.0, 2.0]], [0.0])
        set_linear(net[2], [[scale]], [0.5])


def two_transitions(agent):
    """A terminated and a truncated transition, both reward 1 and next state s0 = 1."""
    buffer = ReplayBuffer(10, 3, (1,))
    obs = np.zeros((2, 3), np.float32)
    next_obs = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]], np.float32)
    buffer.add(
        obs,
        np.zeros((2, 1), np.float32),
        np.ones(2, np.float32),
        next_obs,
        np.array([True, False]),
        np.array([False, True]),
    )
    return buffer.sample(2, ArangeRng())


def test_td_target_by_hand():
    y = td_target(torch.tensor([1.0, 2.0]), torch.tensor([0.0, 1.0]), torch.tensor([5.0, 5.0]), 0.9)
    torch.testing.assert_close(y, torch.tensor([1.0, 6.5]))


def test_ddpg_target_terminal_is_reward_and_truncation_bootstraps():
    agent = DDPG("Pendulum-v1", seed=0, **TINY)
    fix_tiny_nets(agent, [3.0])
    # Q'(s'=(1,0,0), a'=0.5) = 3 * relu(1 + 1) + 0.5 = 6.5
    target = agent.compute_target(two_transitions(agent))
    torch.testing.assert_close(target, torch.tensor([1.0, 1.0 + 0.99 * 6.5]))


def test_td3_target_takes_min_of_twin_critics():
    agent = TD3("Pendulum-v1", seed=0, policy_noise=0.0, **TINY)
    fix_tiny_nets(agent, [3.0, 1.0])
    # Q1' = 6.5, Q2' = 1 * 2 + 0.5 = 2.5: the target uses the smaller one.
    target = agent.compute_target(two_transitions(agent))
    torch.testing.assert_close(target, torch.tensor([1.0, 1.0 + 0.99 * 2.5]))


def test_td3_target_smoothing_noise_is_clipped():
    agent = TD3("Pendulum-v1", seed=0, policy_noise=100.0, noise_clip=0.3, **TINY)
    fix_tiny_nets(agent, [3.0, 1.0])
    torch.manual_seed(0)
    batch = two_transitions(agent)
    batch = {k: v[1:].repeat_interleave(400, 0) for k, v in batch.items()}  # 400 copies of the truncated one
    target = agent.compute_target(batch)
    # a' = 0.5 + clip(eps, -0.3, 0.3) lies in [0.2, 0.8]: Q2' in [2 * 0.2 + 1.5, 2 * 0.8 + 1.5] = [1.9, 3.1]
    low, high = 1.0 + 0.99 * 1.9, 1.0 + 0.99 * 3.1
    assert target.min() >= low - 1e-5 and target.max() <= high + 1e-5
    at_ends = ((target - low).abs() < 1e-4) | ((target - high).abs() < 1e-4)
    assert at_ends.float().mean() > 0.95  # noise with std 100 is almost always clipped


def test_smooth_target_actions_clips_noise_then_action():
    torch.manual_seed(0)
    actions = torch.full((1000, 2), 0.9)
    smoothed = smooth_target_actions(actions, policy_noise=100.0, noise_clip=0.5)
    # 0.9 - 0.5 = 0.4 at the low end; 0.9 + 0.5 = 1.4 clamped to the action bound 1.
    assert smoothed.min().item() == pytest.approx(0.4)
    assert smoothed.max().item() == 1.0
    assert ((smoothed - 0.4).abs() < 1e-6).any() and (smoothed == 1.0).any()
    unsmoothed = smooth_target_actions(actions, policy_noise=0.0, noise_clip=0.5)
    torch.testing.assert_close(unsmoothed, actions)


@pytest.mark.parametrize("cls", [DDPG, TD3])
def test_targets_start_as_exact_copies_not_shared(cls):
    agent = cls("Pendulum-v1", seed=0, hidden_sizes=(8, 8))
    for online, target in ((agent.actor, agent.actor_target), (agent.critic, agent.critic_target)):
        pairs = list(zip(online.parameters(), target.parameters()))
        assert pairs and all(torch.equal(p, t) for p, t in pairs)
        assert all(p.data_ptr() != t.data_ptr() for p, t in pairs)
        assert not any(t.requires_grad for _, t in pairs)


def test_polyak_update_moves_targets_by_tau_in_place():
    agent = DDPG("Pendulum-v1", seed=0, hidden_sizes=(8, 8), tau=0.1, start_steps=0, batch_size=16)
    for _ in range(20):
        agent.source.collect_step(agent)
    old = [p.detach().clone() for p in agent.critic.parameters()]
    target_tensors = list(agent.critic_target.parameters())
    agent.update(agent.buffer.sample(16, agent.rng))
    new = list(agent.critic.parameters())
    for o, n, t in zip(old, new, agent.critic_target.parameters()):
        # the target equalled the old online weights; it moves a tenth of the way to the new ones
        torch.testing.assert_close(t, o + 0.1 * (n.detach() - o))
    assert all(a is b for a, b in zip(target_tensors, agent.critic_target.parameters()))
    assert not any(torch.equal(o, n) for o, n in zip(old, new))


def test_replay_buffer_not_done_uses_terminated_only():
    buffer = ReplayBuffer(4, 1, (1,))
    buffer.add(
        np.zeros((4, 1)),
        np.zeros((4, 1)),
        np.zeros(4),
        np.zeros((4, 1)),
        terminated=np.array([True, False, False, True]),
        truncated=np.array([False, True, False, True]),
    )
    batch = buffer.sample(4, ArangeRng())
    torch.testing.assert_close(batch["not_done"], torch.tensor([0.0, 1.0, 1.0, 0.0]))


def test_replay_buffer_wraps_around_and_round_trips():
    """Capacity 5: 4 transitions (rewards 0-3), then 3 (rewards 4-6) overwrite slots 4, 0, 1."""
    buffer = ReplayBuffer(5, 1, (1,))
    buffer.add(
        np.zeros((4, 1)), np.zeros((4, 1)), np.arange(4.0), np.zeros((4, 1)), np.zeros(4, bool), np.zeros(4, bool)
    )
    buffer.add(
        np.zeros((3, 1)), np.zeros((3, 1)), np.arange(4.0, 7.0), np.zeros((3, 1)), np.zeros(3, bool), np.ones(3, bool)
    )
    assert buffer.rewards.tolist() == [5.0, 6.0, 2.0, 3.0, 4.0]
    assert buffer.truncated.tolist() == [True, True, False, False, True]
    assert (buffer.position, len(buffer)) == (2, 5)
    copy = ReplayBuffer(5, 1, (1,))
    copy.load_state_dict(buffer.state_dict())
    assert copy.rewards.tolist() == buffer.rewards.tolist() and (copy.position, len(copy)) == (2, 5)
    with pytest.raises(InputError, match="more than this buffer's capacity 3"):
        ReplayBuffer(3, 1, (1,)).load_state_dict(buffer.state_dict())
    one = torch.ones(1, 1)  # tensors too: the transition goes to slot 2
    buffer.add(one, one, torch.tensor([7.0]), one, torch.tensor([True]), torch.tensor([False]))
    assert buffer.rewards.tolist() == [5.0, 6.0, 7.0, 3.0, 4.0] and buffer.terminated.tolist()[2]
    assert buffer.observations[:, 0].tolist() == [0.0, 0.0, 1.0, 0.0, 0.0] and buffer.position == 3


def test_truncated_step_stores_the_true_final_observation():
    agent = DDPG("Pendulum-v1", seed=3, hidden_sizes=(8, 8), start_steps=1_000)
    for _ in range(201):  # one 200-step episode, truncated, then the first step of the next
        agent.source.collect_step(agent)
    buf = agent.buffer
    assert not buf.terminated[:201].any()
    assert np.flatnonzero(buf.truncated[:201]).tolist() == [199]
    # Replay the stored actions in a fresh env with the same seed: the same 200 next states.
    env = gym.make("Pendulum-v1")
    env.reset(seed=3)
    for t in range(200):
        next_obs, *_ = env.step(agent.action_adapter.to_env(buf.actions[t].numpy()))
        np.testing.assert_allclose(buf.next_observations[t], next_obs, rtol=1e-6, atol=1e-6)
    # the stored next state of step 199 is the episode's last, not the next episode's first
    assert not np.allclose(buf.next_observations[199], buf.observations[200])


def test_td3_delays_actor_and_target_updates():
    agent = TD3("Pendulum-v1", seed=0, hidden_sizes=(8, 8), start_steps=0, batch_size=16, policy_delay=2)
    for _ in range(20):
        agent.source.collect_step(agent)

    def snapshot():
        return {name: [p.detach().clone() for p in net.parameters()] for name, net in agent.nets.items()}

    def changed(before, name):
        return not all(torch.equal(a, b) for a, b in zip(before[name], agent.nets[name].parameters()))

    before = snapshot()
    metrics = agent.update(agent.buffer.sample(16, agent.rng))
    assert "train/policy_loss" not in metrics
    assert changed(before, "critic")
    assert not any(changed(before, name) for name in ("actor", "actor_target", "critic_target"))
    before = snapshot()
    metrics = agent.update(agent.buffer.sample(16, agent.rng))
    assert "train/policy_loss" in metrics
    assert all(changed(before, name) for name in ("critic", "actor", "actor_target", "critic_target"))


def test_ddpg_updates_actor_every_step():
    agent = DDPG("Pendulum-v1", seed=0, hidden_sizes=(8, 8), start_steps=0, batch_size=16)
    for _ in range(20):
        agent.source.collect_step(agent)
    before = [p.detach().clone() for p in agent.actor.parameters()]
    assert "train/policy_loss" in agent.update(agent.buffer.sample(16, agent.rng))
    assert not all(torch.equal(a, b) for a, b in zip(before, agent.actor.parameters()))


def test_exploration_adds_seeded_gaussian_noise_to_the_actor_in_policy_units():
    agent = DDPG("Pendulum-v1", seed=0, expl_noise=0.2, **TINY)
    set_linear(agent.actor.net[0], [[0.0, 0.0, 0.0]], [0.0])
    set_linear(agent.actor.net[2], [[0.0]], [math.atanh(0.5)])  # mu(s) = 0.5 everywhere
    agent.rng = np.random.default_rng(7)
    for _ in range(5):
        agent.source.collect_step(agent)
    # a_t = clip(mu(s) + 0.2 z_t, -1, 1), z_t the generator's standard normals; Pendulum gets 2 a_t
    z = np.random.default_rng(7).standard_normal((5, 1))
    np.testing.assert_allclose(agent.buffer.actions[:5].numpy(), np.clip(0.5 + 0.2 * z, -1.0, 1.0), rtol=1e-5)
    torch.manual_seed(3)
    stochastic = agent.predict(np.zeros(3, np.float32), deterministic=False)
    torch.manual_seed(3)
    expected = 2.0 * np.clip(0.5 + 0.2 * torch.randn(1).item(), -1.0, 1.0)
    assert stochastic[0] == pytest.approx(expected, rel=1e-5)
    assert agent.predict(np.zeros(3, np.float32))[0] == pytest.approx(1.0, rel=1e-6)  # deterministic: 2 mu(s)


def test_discrete_action_space_is_refused_with_alternatives():
    with pytest.raises(InputError, match="use DQN, PPO or A3C.*discrete BCQ"):
        DDPG("CartPole-v1")
    with pytest.raises(InputError, match="use DQN, PPO or A3C"):
        TD3("CartPole-v1")
    with pytest.raises(InputError, match="use DQN, PPO or A3C.*discrete BCQ"):
        SAC("CartPole-v1")


def test_bad_hyperparameters_are_refused():
    with pytest.raises(InputError, match="tau"):
        DDPG("Pendulum-v1", tau=1.5)
    with pytest.raises(InputError, match="buffer_size"):
        DDPG("Pendulum-v1", buffer_size=10, start_steps=100)
    with pytest.raises(InputError, match="policy_delay"):
        TD3("Pendulum-v1", policy_delay=0)


def test_same_seed_same_learning():
    params = []
    for _ in range(2):
        agent = TD3("Pendulum-v1", seed=7, **SMALL).learn(300, progress=False)
        params.append(torch.cat([p.flatten() for p in agent.actor.parameters()]))
    assert torch.equal(params[0], params[1])


@pytest.mark.parametrize("save_buffer", [False, True])
def test_checkpoint_round_trip_and_resume(tmp_path, save_buffer):
    # The run loop writes latest.pt and (at the final evaluation) best.pt.
    agent = TD3("Pendulum-v1", seed=1, save_replay_buffer=save_buffer, eval_episodes=1, **SMALL)
    agent.learn(300, run_dir=tmp_path, progress=False)
    tmp_path = tmp_path / "checkpoints"
    loaded = TD3.load(tmp_path / "latest.pt")
    for name, net in agent.nets.items():
        for a, b in zip(net.parameters(), loaded.nets[name].parameters()):
            assert torch.equal(a, b), name
    for name, opt in agent.optimizers.items():
        a, b = opt.state_dict()["state"], loaded.optimizers[name].state_dict()["state"]
        assert all(torch.equal(a[i]["exp_avg"], b[i]["exp_avg"]) for i in a)
        assert all(torch.equal(a[i]["step"], b[i]["step"]) for i in a)
    assert (loaded.num_steps, loaded.updates) == (300, agent.updates) and agent.updates == 201
    assert len(TD3.load(tmp_path / "best.pt").buffer) == 0  # best.pt never carries the buffer
    if save_buffer:
        assert len(loaded.buffer) == 300
        np.testing.assert_array_equal(loaded.buffer.actions[:300], agent.buffer.actions[:300])
    else:
        assert len(loaded.buffer) == 0
    # Resume for 100 steps. With the buffer: 100 more updates. Without: the buffer refills with
    # random actions and the first update comes when it holds start_steps = 100 transitions.
    resumed = loaded.learn(400, progress=False)
    assert resumed.updates == (201 + 100 if save_buffer else 201 + 1)
    # a resume repeats exactly
    again = TD3.load(tmp_path / "latest.pt").learn(400, progress=False)
    for a, b in zip(resumed.actor.parameters(), again.actor.parameters()):
        assert torch.equal(a, b)


def test_offline_learns_from_dataset_only(tmp_path):
    env = gym.make("Pendulum-v1")
    data = collect_transitions(env, lambda obs: env.action_space.sample(), 250, seed=0, kind="custom")
    path = tmp_path / "random.hdf5"
    save_dataset(path, data)
    agent = DDPG(dataset=str(path), seed=0, hidden_sizes=(8, 8), iteration_steps=20, eval_freq=0)
    assert agent.config.env_id == "Pendulum-v1" and isinstance(
        agent.source, DatasetSource
    )  # env from the dataset's attrs
    agent.learn(50, progress=False)
    assert (agent.num_steps, agent.updates) == (50, 50)
    buf = agent.buffer
    assert len(buf) == 250
    np.testing.assert_allclose(buf.actions, data.actions / 2.0, rtol=1e-6)  # Pendulum's max_action is 2
    np.testing.assert_array_equal(buf.truncated, data.timeouts)
    assert buf.truncated[199] and not buf.terminated.any()


def test_offline_dataset_of_another_env_is_refused(tmp_path):
    env = gym.make("MountainCarContinuous-v0")
    data = collect_transitions(env, lambda obs: env.action_space.sample(), 20, seed=0)
    path = tmp_path / "car.hdf5"
    save_dataset(path, data)
    agent = DDPG("Pendulum-v1", dataset=str(path), hidden_sizes=(8, 8))
    with pytest.raises(InputError, match="observation"):
        agent.learn(10, run_dir=tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()  # refused before anything was written
