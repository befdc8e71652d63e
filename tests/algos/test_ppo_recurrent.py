"""PPO with an LSTM (lstm_hidden_size): the state's resets, the truncation bootstrap, the sequence
minibatches, predict's state, evaluation, checkpoints and the bad inputs (docs/correctness.md item 12)."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

import acrl
from acrl import PPO, InputError
from acrl.algos import get_algorithm
from acrl.core.config import update_config
from acrl.core.envs import env_factory
from acrl.core.evaluation import EpisodeActor
from acrl.offline.collect import collect_dataset
from tests.conftest import (
    CueEnv,
    RampEnv,
    assert_resumes_repeat,
    hand_lstm,
    recurrent_returns_by_hand,
    run_cli,
    script_ramp_lstm,
)

RECURRENT = {"lstm_hidden_size": 8, "n_steps": 32, "batch_size": 32, "seq_len": 8, "n_epochs": 2, "eval_episodes": 2}


def test_truncation_bootstraps_with_the_pre_reset_state_and_every_episode_starts_fresh():
    agent = PPO(
        RampEnv, seed=0, n_envs=1, n_steps=9, batch_size=9, lstm_hidden_size=1, hidden_sizes=(1,),
        normalize_obs=False, eval_freq=0,
    )  # fmt: skip
    script_ramp_lstm(agent.model.actor, agent.model.critic)
    agent.collect()
    buf = agent.buffer
    # Hand-computed: the states of one episode from a zero state, observations 0.1, 0.2, 0.3.
    h, c, values = 0.0, 0.0, []
    for obs in (0.1, 0.2, 0.3):
        h, c = hand_lstm(math.tanh(obs), h, c)
        values.append(h)
    bootstrap = hand_lstm(math.tanh(0.4), h, c)[0]  # V(final observation 0.4) with the state before the reset
    assert bootstrap != pytest.approx(hand_lstm(math.tanh(0.4), 0.0, 0.0)[0], abs=1e-3)  # a reset state differs
    # Three episodes: truncated, terminated, truncated; each starts from a zero state.
    np.testing.assert_allclose(buf.values[:, 0], values * 3, atol=1e-6)
    assert buf.truncated[:, 0].tolist() == [False, False, True, False, False, False, False, False, True]
    assert buf.episode_starts[:, 0].tolist() == [True, False, False] * 3
    np.testing.assert_allclose(buf.next_values[[2, 8], 0], [bootstrap, bootstrap], atol=1e-6)
    np.testing.assert_allclose(
        buf.next_values[[0, 1, 3, 4], 0], [values[1], values[2], values[1], values[2]], atol=1e-6
    )
    # The rollout's last step was truncated: it bootstraps too, and the next rollout starts an episode.
    assert buf.next_values[-1, 0] == pytest.approx(bootstrap, abs=1e-6)
    assert agent._episode_start.tolist() == [True]


def test_sequence_minibatches_recompute_the_rollout_states_in_the_first_epoch():
    agent = PPO("CartPole-v1", seed=0, n_envs=2, eval_freq=0, **{**RECURRENT, "n_steps": 64})
    agent.collect()
    assert agent.buffer.episode_starts[1:].any()  # episodes start inside the sequences
    starts_inside = 0
    with torch.no_grad():
        for batch in agent.buffer.minibatches(32, np.random.default_rng(0), 1):
            log_probs, _, values = agent.model.evaluate(
                batch["observations"], batch["actions"], batch["states"], batch["episode_starts"]
            )
            torch.testing.assert_close(log_probs, batch["log_probs"], atol=1e-6, rtol=0)  # as acted
            torch.testing.assert_close(values, batch["values"], atol=1e-6, rtol=0)  # as the whole rollout's rerun
            starts_inside += int(batch["episode_starts"][1:].sum())
    assert starts_inside > 0


def test_sequence_layout_chunk_states_and_time_major_rows():
    agent = PPO("CartPole-v1", seed=1, n_envs=2, eval_freq=0, **RECURRENT)
    agent.collect()
    buf = agent.buffer  # 32 steps x 2 envs, sequences of 8: 8 sequences, 4 per minibatch of 32
    hidden, cell = buf.states  # (sequence start, layers, envs, cells)
    assert hidden.shape == cell.shape == (4, 1, 2, 8)
    assert np.all(hidden[0] == 0) and buf.episode_starts[0].all()  # a fresh run
    order = np.random.default_rng(3).permutation(8)
    batch = next(buf.minibatches(32, np.random.default_rng(3), 1))
    k, n = divmod(int(order[1]), 2)  # the minibatch's second sequence: chunk k of env n
    torch.testing.assert_close(batch["states"][0][0, 1], torch.from_numpy(hidden[k, 0, n]))
    torch.testing.assert_close(batch["states"][1][0, 1], torch.from_numpy(cell[k, 0, n]))
    torch.testing.assert_close(batch["observations"][:, 1], torch.from_numpy(buf.observations[8 * k : 8 * k + 8, n]))
    # Every field is (time, sequence): [3, 1] is step 3 of the minibatch's second sequence.
    torch.testing.assert_close(batch["log_probs"][3, 1], torch.tensor(buf.log_probs[8 * k + 3, n]))
    assert batch["episode_starts"].shape == (8, 4) and batch["actions"].shape == (8, 4)


def test_the_lstm_agent_solves_the_cue_task_and_the_feed_forward_one_cannot():
    settings = dict(n_envs=4, n_steps=32, batch_size=64, n_epochs=4, learning_rate=3e-3, hidden_sizes=(16,))
    settings.update(normalize_obs=False, gamma=0.9, eval_freq=0)
    memory = PPO(CueEnv, seed=0, lstm_hidden_size=16, seq_len=16, **settings).learn(8_000, progress=False)
    assert memory.evaluate(40)["return_mean"] >= 2.9
    feed_forward = PPO(CueEnv, seed=0, **settings).learn(8_000, progress=False)
    assert feed_forward.evaluate(40)["return_mean"] <= 2.5  # a guess: 1.5 expected


def test_predict_with_and_without_a_state():
    agent = PPO("CartPole-v1", seed=0, eval_freq=0, **RECURRENT)
    first, second = np.array([0.1, 0.2, -0.1, 0.3]), np.array([0.0, -0.5, 0.2, 0.1])
    action, state = agent.predict(first)
    assert action in (0, 1) and [tuple(s.shape) for s in state] == [(1, 1, 8), (1, 1, 8)]
    _, carried = agent.predict(second, state)
    _, fresh = agent.predict(second)  # no state: a fresh episode, not the state of the call before
    _, restarted = agent.predict(second, carried, episode_start=True)
    assert not torch.equal(carried[0], fresh[0])
    assert torch.equal(restarted[0], agent.predict(second, None, True)[1][0])
    # The state is the LSTM's: one step from zeros, as the actor computes it.
    actor = agent.model.actor
    with torch.no_grad():
        features = actor.encoder(torch.tensor(first, dtype=torch.float32)[None])
        memory, _ = actor.core.step(features, agent.initial_state(1), torch.tensor([True]))
    torch.testing.assert_close(state[0][0], memory)
    # A batch of 3 with a per-observation episode_start; a state of the wrong size is an InputError.
    actions, batch_state = agent.predict(np.stack([first, second, first]), episode_start=[True, False, True])
    assert actions.shape == (3,) and batch_state[0].shape == (1, 3, 8)
    torch.testing.assert_close(batch_state[0][:, [0]], state[0])
    with pytest.raises(InputError, match="state must be the tuple of 2 tensors"):
        agent.predict(second, batch_state)
    with pytest.raises(InputError, match="state must be the tuple"):
        agent.predict(second, False)  # deterministic given positionally


def test_a_feed_forward_predict_takes_no_state():
    agent = PPO("CartPole-v1", seed=0, n_steps=32, batch_size=32, eval_freq=0)
    assert agent.predict(np.zeros(4)) in (0, 1)
    with pytest.raises(InputError, match="feed-forward policy: predict takes no state"):
        agent.predict(np.zeros(4), False)


def test_evaluation_starts_each_episode_from_a_fresh_state():
    agent = PPO("CartPole-v1", seed=0, eval_freq=0, **RECURRENT)
    assert agent.evaluate(3)["returns"] == recurrent_returns_by_hand(agent, "CartPole-v1", 3)


def test_resume_of_a_recurrent_run_restores_everything_and_repeats(tmp_path):
    cfg = dict(seed=2, eval_freq=0, checkpoint_freq=64, n_envs=2, **RECURRENT)
    agent = PPO("CartPole-v1", **cfg).learn(64, run_dir=tmp_path / "run", progress=False)
    loaded = acrl.load(tmp_path / "run/checkpoints/latest.pt")
    assert loaded.stateful and loaded.num_steps == 64 and loaded.config.lstm_hidden_size == 8
    for a, b in zip(agent.model.state_dict().values(), loaded.model.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    opt_a, opt_b = agent.optimizer.state_dict()["state"], loaded.optimizer.state_dict()["state"]
    assert all(torch.equal(opt_a[k]["exp_avg_sq"], opt_b[k]["exp_avg_sq"]) for k in opt_a)
    obs = np.array([0.1, 0.2, -0.1, 0.3])
    _, state = agent.predict(obs)
    assert torch.equal(agent.predict(obs, state)[1][0], loaded.predict(obs, loaded.predict(obs)[1])[1][0])
    assert loaded._episode_start.all() and not loaded._state[0].any()  # fresh episodes after a load
    assert_resumes_repeat(tmp_path / "run/checkpoints/latest.pt", loaded, 128)


def test_collect_and_record_carry_the_state(tmp_path):
    agent = PPO("CartPole-v1", seed=0, eval_freq=0, **RECURRENT)
    agent.learn(32, run_dir=tmp_path / "run", progress=False)
    data = collect_dataset("imitation", tmp_path / "imitation.h5", 40, policy=tmp_path / "run", seed=3)
    policy = acrl.load(tmp_path / "run/checkpoints/latest.pt")
    actor = EpisodeActor(policy)
    starts = np.concatenate([[True], (data.terminals | data.timeouts)[:-1]])
    actions = []
    for obs, start in zip(data.observations, starts):
        if start:
            actor.reset()
        actions.append(actor(obs))
    assert np.array_equal(data.actions[:, 0] if data.actions.ndim == 2 else data.actions, np.array(actions))
    video = agent.record_video(tmp_path / "one.mp4", max_steps=5)
    assert video["lengths"] == [5] and video["frames"] == 6


@pytest.mark.parametrize("algo", ["ddpg", "td3", "sac", "bcq", "bc", "discrete_bcq"])
def test_lstm_hidden_size_for_an_algorithm_without_a_recurrent_version(algo):
    config = get_algorithm(algo).config_class()
    with pytest.raises(
        InputError, match=r"lstm_hidden_size sets a recurrent \(LSTM\) policy.*settings include lstm_hidden_size"
    ):
        update_config(config, {"lstm_hidden_size": 64}, "--set")


@pytest.mark.parametrize(
    "values, message",
    [
        ({"lstm_hidden_size": -1}, "lstm_hidden_size must be >= 0"),
        ({"seq_len": 8}, "seq_len applies to a policy with an LSTM only"),
        ({"lstm_hidden_size": 8, "n_steps": 32, "batch_size": 32, "seq_len": 5}, "seq_len must divide n_steps = 32"),
        ({"lstm_hidden_size": 8, "n_steps": 64, "batch_size": 32}, r"got 64 \(n_steps, its default\)"),
    ],
)
def test_bad_recurrent_settings_are_input_errors(values, message):
    with pytest.raises(InputError, match=message):
        PPO("CartPole-v1", **values)


def test_cli_lstm_for_ddpg_is_exit_2():
    out = run_cli("train", "ddpg", "--env", "Pendulum-v1", "--set", "lstm_hidden_size=64", "--no-progress")
    assert out.returncode == 2 and "whose settings include lstm_hidden_size" in out.stderr, out.stderr


@pytest.mark.parametrize(
    "env_id, obs_shape, action_space",
    [
        ("popgym-PositionOnlyCartPoleEasy-v0", (2,), gym.spaces.Discrete(2)),
        ("popgym-RepeatPreviousEasy-v0", (4,), gym.spaces.Discrete(4)),
        ("popgym-PositionOnlyPendulumEasy-v0", (2,), gym.spaces.Box(-2.0, 2.0, (1,), np.float32)),
    ],
)
def test_popgym_ids_build_with_vector_observations(env_id, obs_shape, action_space):
    env = env_factory(env_id)[0]()
    obs, _ = env.reset(seed=0)
    assert env.observation_space.shape == obs_shape and obs.shape == obs_shape and obs.dtype == np.float32
    assert env.action_space == action_space
    if env_id == "popgym-RepeatPreviousEasy-v0":  # a card, one-hot
        assert sorted(obs.tolist()) == [0.0, 0.0, 0.0, 1.0]
    agent = PPO.from_preset(env_id, seed=0, n_steps=8, n_envs=2, batch_size=8, seq_len=8, eval_freq=0)
    assert agent.stateful and agent.config.lstm_hidden_size == 256
    agent.collect()


def test_a_recurrent_popgym_checkpoint_loads_in_a_fresh_process(tmp_path):
    PPO("popgym-RepeatPreviousEasy-v0", seed=0, eval_freq=0, **RECURRENT).save(tmp_path / "agent.pt")
    script = f"import acrl; a = acrl.load({str(tmp_path / 'agent.pt')!r}); print(a.evaluate(1)['lengths'])"
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_an_lstm_after_the_cnn_on_frames_recomputes_its_rollout_and_updates():
    """In float32 (bf16, the default for frames on a CPU with it, rounds acting's products and the rerun's apart)."""
    agent = PPO(
        "MinAtar/Breakout-v1", seed=0, normalize_obs=False, n_envs=2, eval_freq=0, precision="fp32", **RECURRENT
    )
    assert agent.config.encoder == "minatar" and agent.buffer.observations.dtype == np.bool_
    agent.collect()
    with torch.no_grad():
        batch = next(agent.buffer.minibatches(32, np.random.default_rng(0), 1))
        log_probs, _, values = agent.model.evaluate(
            batch["observations"], batch["actions"], batch["states"], batch["episode_starts"]
        )
        torch.testing.assert_close(log_probs, batch["log_probs"], atol=1e-6, rtol=0)
        torch.testing.assert_close(values, batch["values"], atol=1e-6, rtol=0)
    assert np.isfinite(agent.update()["train/value_loss"])
