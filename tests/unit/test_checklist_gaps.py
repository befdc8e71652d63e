"""Checks for items of docs/correctness.md that had none: an A3C worker runs with one torch
thread (item 7), BCQ's default latent size (item 8), DiscreteBCQ's target network (item 9) and
evaluation's own, separately seeded environment (item 11). Expected values are worked out by hand."""

import os

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

from acrl import A3C, BCQ, PPO, DiscreteBCQ
from acrl.algos.a3c import UPDATE_STATS, SharedState, run_worker
from acrl.algos.base import EVAL_SEED_OFFSET
from acrl.parts.buffers import ReplayBuffer
from acrl.parts.workers import StepBudget, WorkerStats
from tests.unit.test_bcq import SMALL, write_dataset


class CountdownEnv(gym.Env):
    """Observation [t / 5], an episode of exactly 5 steps whatever the actions, reward drawn
    uniformly from the env's own RNG (so returns depend on the seed and only on it). Every
    instance is appended to `made`; it records the seed of each reset, its step count and, in
    `threads`, torch.get_num_threads() at each reset and step."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, made):
        made.append(self)
        self.resets, self.threads, self.steps, self.t = [], [], 0, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.resets.append(seed)
        self.threads.append(torch.get_num_threads())
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.threads.append(torch.get_num_threads())
        self.steps += 1
        self.t += 1
        return np.array([self.t / 5], np.float32), float(self.np_random.uniform()), self.t >= 5, False, {}


# --------------------------------------------------------------------------- item 7
def test_a3c_worker_runs_with_one_torch_thread():
    """`run_worker` in this process (no child process needed), with a budget of 12 global steps."""
    made = []
    original = torch.get_num_threads()
    try:
        agent = A3C(lambda: CountdownEnv(made), seed=0, workers=1, n_steps=3, hidden_sizes=(4,))
        budget = StepBudget(mp.get_context(), 1, 0, 12, parent_pid=os.getppid())
        shared = SharedState(agent.model, agent.parameters, agent.optimizer, agent.obs_normalizer,
                             mp.get_context().Lock(), WorkerStats(1, UPDATE_STATS))
        torch.set_num_threads(3)  # what the worker inherits; it must drop to one thread itself
        run_worker(0, budget, agent.config, lambda: CountdownEnv(made), shared)
        worker_env = made[-1]
        assert worker_env.steps == 12 and budget.steps_taken() == 12
        assert worker_env.threads and set(worker_env.threads) == {1}  # at every reset and step
        assert torch.get_num_threads() == 1
        assert worker_env.resets[0] == agent.config.seed + 0  # rank 0: seed + rank
    finally:
        torch.set_num_threads(original)


# --------------------------------------------------------------------------- item 8
@pytest.mark.parametrize("env_id, obs_dim, act_dim", [("Pendulum-v1", 3, 1), ("Hopper-v5", 11, 3)])
def test_bcq_latent_size_defaults_to_twice_the_action_dimension(env_id, obs_dim, act_dim):
    if env_id.startswith("Hopper"):
        pytest.importorskip("mujoco")
    buffer = ReplayBuffer(8, obs_dim, (act_dim,))
    buffer.add(np.zeros((8, obs_dim), np.float32), np.zeros((8, act_dim), np.float32), np.zeros(8, np.float32),
               np.zeros((8, obs_dim), np.float32), np.zeros(8, bool), np.zeros(8, bool))
    agent = BCQ(env_id, buffer=buffer, seed=0, **SMALL)
    assert agent.config.latent_dim is None
    latent = 2 * act_dim  # Hopper: 3 actions -> latent 6
    assert agent.vae.latent_dim == latent
    assert agent.vae.encoder[-1].out_features == 2 * latent  # mean and log-std: 12 for Hopper
    assert agent.vae.decoder[0].in_features == obs_dim + latent
    assert agent.vae.sample_latent(5).shape == (5, latent)
    agent.update(buffer.sample(4, agent.rng))  # the networks fit together at that size
    # An explicit latent size is kept.
    assert BCQ(env_id, buffer=buffer, seed=0, latent_dim=5, **SMALL).vae.latent_dim == 5


# --------------------------------------------------------------------------- item 9
def test_discrete_bcq_target_starts_as_exact_copy_and_moves_by_tau(tmp_path):
    write_dataset(tmp_path / "d.h5", "CartPole-v1")
    agent = DiscreteBCQ(dataset=str(tmp_path / "d.h5"), seed=0, tau=0.1, hidden_sizes=(8,), batch_size=4,
                        eval_freq=0, iteration_steps=5)
    pairs = list(zip(agent.net_target.parameters(), agent.net.parameters(), strict=True))
    for target, online in pairs:
        assert torch.equal(target, online)  # an exact copy ...
        assert target.data_ptr() != online.data_ptr()  # ... in tensors of its own
        assert not target.requires_grad
    old_target = [t.detach().clone() for t, _ in pairs]
    old_online = [s.detach().clone() for _, s in pairs]
    agent.update(agent.load_data().sample(4, agent.rng))
    moved = False
    for old_t, old_s, (target, online) in zip(old_target, old_online, pairs, strict=True):
        torch.testing.assert_close(target, 0.9 * old_t + 0.1 * online)  # (1 - tau) old + tau online
        moved |= not torch.equal(online, old_s)
    assert moved  # the online net did change, so the check above is not vacuous


# --------------------------------------------------------------------------- item 11
def test_evaluation_has_its_own_env_seeded_with_seed_plus_10000():
    made = []
    agent = PPO(lambda: CountdownEnv(made), seed=3, n_envs=2, n_steps=4, batch_size=4, hidden_sizes=(4,))
    training = [env for env in made if env.resets]
    assert [env.resets for env in training] == [[3], [4]]  # training: seed + env index
    state = [(env.steps, list(env.resets), env.np_random.bit_generator.state) for env in training]
    obs = agent._obs.copy()

    assert EVAL_SEED_OFFSET == 10_000
    first = agent.evaluate(episodes=2)
    evaluation = [env for env in made if env not in training and env.resets]
    assert len(evaluation) == 1
    assert evaluation[0].resets == [10_003, None, None]  # seeded once, then its own RNG
    # Returns by hand: 5 uniform draws per episode from the generator of seed 10_003.
    draws = np.random.default_rng(10_003).uniform(size=10)
    assert first["returns"] == pytest.approx([draws[:5].sum(), draws[5:].sum()])
    assert first["lengths"] == [5, 5] and first["deterministic"] is True

    second = agent.evaluate(episodes=2)
    assert second["returns"] == first["returns"]  # a fresh env with the same seed each time
    assert len([env for env in made if env not in training and env.resets]) == 2
    # The training environments were not touched: no step, no reset, same RNG state.
    assert [(env.steps, env.resets, env.np_random.bit_generator.state) for env in training] == state
    np.testing.assert_array_equal(agent._obs, obs)
