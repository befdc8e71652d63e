"""A3C with an LSTM (lstm_hidden_size): each worker's state across steps and rollouts, its resets, the
bootstrap's pre-reset state, the loss's rerun of a rollout, predict, checkpoints, evaluation and the
bad inputs (docs/correctness.md item 12)."""

from __future__ import annotations

import math
import os

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

import acrl
import acrl.algos.a3c as a3c
from acrl import A3C, InputError
from acrl.core.envs import ActionAdapter
from acrl.core.evaluation import EpisodeActor
from acrl.offline.collect import collect_dataset
from acrl.parts.actor_critic import ActorCritic
from acrl.parts.normalization import IdentityNormalizer
from acrl.parts.workers import StepBudget, WorkerStats, make_worker_envs
from tests.conftest import CueEnv, RampEnv, hand_lstm, recurrent_returns_by_hand, script_ramp_lstm

RECURRENT = {"lstm_hidden_size": 8, "hidden_sizes": (16,), "eval_freq": 0, "eval_episodes": 2}


def ramp_states() -> dict[str, tuple[float, float]]:
    """The scripted one-cell LSTM's (h, c) by hand (`hand_lstm`) after the observations 0.1, 0.2, 0.3 of a
    RampEnv episode from a zero state ("s1", "s2", "s3"), and one step on to its final observation 0.4
    ("s4": the truncation's bootstrap state)."""
    states, h, c = {}, 0.0, 0.0
    for i, obs in enumerate((0.1, 0.2, 0.3, 0.4), start=1):
        h, c = hand_lstm(math.tanh(obs), h, c)
        states[f"s{i}"] = (h, c)
    return states


def run_scripted_worker(monkeypatch, lengths: list[int], n_steps: int, total: int):
    """`run_worker` in this process on RampEnvs of the given episode lengths (one per env), the scripted
    one-cell LSTM (`script_ramp_lstm`) and no gradient step (the weights stay scripted); returns the
    rollouts it collected and the bootstrap values it computed, in order."""
    agent = A3C(RampEnv, seed=0, workers=1, n_envs=len(lengths), n_steps=n_steps, lstm_hidden_size=1,
                hidden_sizes=(1,), normalize_obs=False, eval_freq=0)  # fmt: skip
    script_ramp_lstm(agent.model.actor, agent.model.critic)
    rollouts, bootstraps = [], []
    collect, bootstrap = a3c.collect_rollout, a3c.bootstrap_value
    monkeypatch.setattr(a3c, "collect_rollout", lambda *args: rollouts.append(collect(*args)) or rollouts[-1])
    monkeypatch.setattr(a3c, "bootstrap_value", lambda *args: bootstraps.append(bootstrap(*args)) or bootstraps[-1])
    monkeypatch.setattr(a3c, "apply_gradients", lambda *args: 0.0)
    shared = a3c.SharedState(agent.model, agent.parameters, agent.optimizer, agent.obs_normalizer,
                             mp.get_context().Lock(), WorkerStats(1, a3c.UPDATE_STATS))  # fmt: skip
    budget = StepBudget(mp.get_context(), 1, 0, total, parent_pid=os.getppid())
    made = iter(lengths)
    threads = torch.get_num_threads()
    try:
        a3c.run_worker(0, budget, agent.config, lambda: RampEnv(next(made)), shared)
    finally:
        torch.set_num_threads(threads)
    return rollouts, bootstraps


def state_of(rollout_state, env: int = 0) -> tuple[float, float]:
    return rollout_state[0][0, env, 0].item(), rollout_state[1][0, env, 0].item()


def test_the_state_carries_across_rollouts_resets_at_each_episode_start_and_bootstraps_before_the_reset(
    monkeypatch,
):
    """t_max 2 on episodes of 3 steps (truncated, terminated, truncated): each episode is a rollout cut
    after 2 steps, then one of 1 step that ends it. By hand (`ramp_states`): the cut bootstraps V(0.3)
    with s2 (h of s3), the truncation V(0.4) with s3, the state before the reset (h of s4), the
    termination 0; the next rollout of an episode starts from the previous one's last state, and every
    episode, after a truncation or a termination, starts from zeros (its first rollout ends at s2)."""
    s = ramp_states()
    rollouts, bootstraps = run_scripted_worker(monkeypatch, [3], n_steps=2, total=9)
    assert [len(r) for r in rollouts] == [2, 1] * 3
    assert s["s4"][0] != pytest.approx(hand_lstm(math.tanh(0.4), 0.0, 0.0)[0], abs=1e-3)  # a reset state differs
    for episode in range(3):
        cut, end = rollouts[2 * episode], rollouts[2 * episode + 1]
        assert cut.episode_starts.tolist() == [[True], [False]] and end.episode_starts.tolist() == [[False]]
        assert state_of(cut.initial_state) == pytest.approx((0.0, 0.0) if episode == 0 else s["s3"], abs=1e-6)
        assert state_of(cut.final_state) == pytest.approx(s["s2"], abs=1e-6)  # from zeros: reset
        assert bootstraps[2 * episode].tolist() == pytest.approx([s["s3"][0]], abs=1e-6)
        assert end.initial_state is cut.final_state  # carried over, not recomputed
        assert not end.initial_state[0].requires_grad and end.initial_state[0].grad_fn is None  # detached
        assert state_of(end.final_state) == pytest.approx(s["s3"], abs=1e-6)
        terminated = episode == 1
        assert end.terminated.tolist() == [terminated] and end.truncated.tolist() == [not terminated]
        assert end.last_obs.tolist() == [[pytest.approx(0.4)]]
        assert bootstraps[2 * episode + 1].tolist() == pytest.approx([0.0 if terminated else s["s4"][0]], abs=1e-6)


def test_each_env_of_a_worker_has_its_own_state(monkeypatch):
    """Two envs, episodes of 3 and 2 steps, t_max 5. Rollout 1 stops after 2 steps (env 1 truncated): env 0
    bootstraps V(0.3) mid-episode and env 1 V(0.3) at its truncation, both from s2. Rollout 2: env 0
    continues from s2, env 1 starts afresh (reset from s2); env 0's truncation bootstraps with s3 (h of
    s4), env 1, mid-episode after one step from zeros, V(0.2) from s1 (h of s2)."""
    s = ramp_states()
    (first, second), bootstraps = run_scripted_worker(monkeypatch, [3, 2], n_steps=5, total=6)
    assert len(first) == 2 and first.truncated.tolist() == [False, True]
    assert first.episode_starts.tolist() == [[True, True], [False, False]]
    assert bootstraps[0].tolist() == pytest.approx([s["s3"][0]] * 2, abs=1e-6)
    assert len(second) == 1 and second.truncated.tolist() == [True, False]
    assert second.episode_starts.tolist() == [[False, True]]
    assert [state_of(second.initial_state, i) for i in (0, 1)] == [pytest.approx(s["s2"], abs=1e-6)] * 2
    assert [state_of(second.final_state, i) for i in (0, 1)] == [
        pytest.approx(s["s3"], abs=1e-6),
        pytest.approx(s["s1"], abs=1e-6),
    ]
    assert bootstraps[1].tolist() == pytest.approx([s["s4"][0], s["s2"][0]], abs=1e-6)


def test_the_loss_reruns_each_rollout_as_it_was_acted_and_backpropagates_through_its_lstm_steps():
    """Rollouts of CartPole (t_max 5, 2 envs) chained as a worker chains them: the LSTM outputs recorded
    while acting give log pi and V that `evaluate`'s rerun from the rollout's first state equals
    to 1e-6, for rollouts that continue an episode from a non-zero state and rollouts that start one."""
    torch.manual_seed(0)
    model = ActorCritic(gym.spaces.Box(-np.inf, np.inf, (4,)), gym.spaces.Discrete(2), (16,), lstm_hidden_size=8)
    acted, step = [], model.actor.core.step

    def recording_step(*args):  # the acting step's LSTM outputs
        out = step(*args)
        acted.append(out[0])
        return out

    model._step = recording_step  # what `act` calls for the core's step
    envs, obs = make_worker_envs("CartPole-v1", 0, 0, 2)
    adapter, normalizer = ActionAdapter(envs.single_action_space), IdentityNormalizer()
    state, starts, kinds = model.initial_state(2), torch.ones(2, dtype=torch.bool), set()
    for _ in range(12):
        acted.clear()
        rollout = a3c.collect_rollout(envs, model, obs, 5, adapter, normalizer, state, starts)
        with torch.no_grad():
            memory_at_acting = torch.cat(acted)  # (T * N, 8), time-major
            log_probs, _ = model.actor.head.log_prob_entropy(memory_at_acting, rollout.actions.flatten())
            values = model.critic(None, memory_at_acting)
            rerun = model.evaluate(rollout.observations, rollout.actions, rollout.initial_state,
                                   rollout.episode_starts)  # fmt: skip
        torch.testing.assert_close(rerun[0].flatten(), log_probs, atol=1e-6, rtol=0)
        torch.testing.assert_close(rerun[2].flatten(), values, atol=1e-6, rtol=0)
        nonzero = rollout.initial_state[0].abs().sum(-1)[0] > 0
        kinds |= {("start" if s else "continue") for s in rollout.episode_starts[0][nonzero].tolist()}
        obs, state = rollout.next_obs, rollout.final_state
        starts = torch.from_numpy(rollout.terminated | rollout.truncated)
    assert kinds == {"start", "continue"}
    loss, _ = a3c.a3c_loss(model, rollout, rollout.rewards, np.zeros(2, np.float32), a3c.A3CConfig(n_steps=5))
    loss.backward()
    assert model.actor.core.cell.weight_hh.grad.abs().sum() > 0  # through the recurrence
    assert rollout.initial_state[0].grad is None  # the gradient stops at the rollout's start
    envs.close()


def test_predict_with_and_without_a_state():
    agent = A3C("CartPole-v1", seed=0, workers=1, **RECURRENT)
    assert agent.stateful and agent.config.shared_trunk
    first, second = np.array([0.1, 0.2, -0.1, 0.3]), np.array([0.0, -0.5, 0.2, 0.1])
    action, state = agent.predict(first)
    assert action in (0, 1) and [tuple(s.shape) for s in state] == [(1, 1, 8), (1, 1, 8)]
    with torch.no_grad():  # one LSTM step from zeros, by the model's own parts
        features = agent.model.actor.encoder(torch.tensor(first[None], dtype=torch.float32))
        memory, _ = agent.model.actor.core.step(features, agent.initial_state(1), torch.tensor([True]))
    torch.testing.assert_close(state[0][0], memory)
    _, carried = agent.predict(second, state)
    _, fresh = agent.predict(second)
    assert not torch.equal(carried[0], fresh[0])
    assert torch.equal(agent.predict(second, carried, episode_start=True)[1][0], fresh[0])
    with pytest.raises(InputError, match="state must be the tuple of 2 tensors"):
        agent.predict(second, False)  # deterministic given positionally
    feed_forward = A3C("CartPole-v1", seed=0, workers=1, eval_freq=0)
    with pytest.raises(InputError, match="feed-forward policy: predict takes no state"):
        feed_forward.predict(second, state)


def test_a_run_checkpoints_resumes_evaluates_records_and_collects_with_the_state(tmp_path):
    run = tmp_path / "run"
    agent = A3C("CartPole-v1", seed=1, workers=1, n_steps=5, checkpoint_freq=200, **RECURRENT)
    agent.learn(200, run_dir=run, progress=False)
    assert (run / "README.md").exists() and "lstm_hidden_size=8" in (run / "README.md").read_text()
    loaded = acrl.load(run / "checkpoints/latest.pt")
    assert isinstance(loaded, A3C) and loaded.stateful and loaded.num_steps == 200
    torch.testing.assert_close(loaded.parameters, agent.parameters, atol=0, rtol=0)
    p, q = agent.parameters, loaded.parameters
    assert loaded.optimizer.state[q]["step"].item() == agent.optimizer.state[p]["step"].item() > 0
    # Evaluation: a fresh state each episode, carried within it, as predict by hand.
    assert loaded.evaluate(2)["returns"] == recurrent_returns_by_hand(loaded, "CartPole-v1", 2)
    data = collect_dataset("imitation", tmp_path / "imitation.h5", 30, policy=run, seed=3)
    actor, actions = EpisodeActor(loaded), []
    for obs, start in zip(data.observations, np.concatenate([[True], (data.terminals | data.timeouts)[:-1]])):
        if start:
            actor.reset()
        actions.append(actor(obs))
    assert np.array_equal(data.actions.reshape(-1), np.array(actions))
    assert loaded.record_video(tmp_path / "one.mp4", max_steps=5)["lengths"] == [5]
    loaded.learn(total_steps=400, run_dir=run, progress=False)  # resume: fresh episodes, zero states
    assert loaded.num_steps == 400 and loaded.optimizer.state[q]["step"].item() > agent.optimizer.state[p]["step"]


def test_the_lstm_agent_solves_the_cue_task_and_the_feed_forward_one_cannot():
    """The cue of the first observation decides the reward of the 3 steps after it (`CueEnv`): with t_max 4
    every rollout is one whole episode, so the rollout's rerun backpropagates from the rewards to the cue."""
    settings = dict(workers=2, n_steps=4, optimizer="adam", learning_rate=3e-3, hidden_sizes=(16,), gamma=0.9)
    settings.update(ent_coef=0.01, eval_freq=0, seed=0)
    memory = A3C(CueEnv, lstm_hidden_size=16, **settings).learn(5_000, progress=False)
    assert memory.evaluate(40)["return_mean"] >= 2.9
    feed_forward = A3C(CueEnv, **settings).learn(5_000, progress=False)
    assert feed_forward.evaluate(40)["return_mean"] <= 2.5  # a guess: 1.5 expected


@pytest.mark.parametrize(
    "values, message",
    [
        ({"lstm_hidden_size": -1}, "lstm_hidden_size must be >= 0"),
        ({"lstm_hidden_size": 8, "seq_len": 4}, "unknown hyperparameter 'seq_len' for A3CConfig"),
    ],
)
def test_bad_recurrent_settings_are_input_errors(values, message):
    with pytest.raises(InputError, match=message):
        A3C("CartPole-v1", workers=1, **values)
