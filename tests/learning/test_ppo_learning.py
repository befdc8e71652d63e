"""PPO reaches a return within a step budget (the CartPole test runs in CI; Pendulum and PPO-LSTM on POPGym's
PositionOnlyCartPole are slow)."""

import pytest

from acrl import PPO, evaluate
from acrl.core.config import preset_values


def preset(env_id):
    return preset_values("ppo", env_id, None)[0]


def test_ppo_cartpole_reaches_475_within_50k_steps():
    hyper = {**preset("CartPole-v1"), "seed": 0, "eval_freq": 0}
    agent = PPO("CartPole-v1", **hyper).learn(total_steps=50_000, progress=False)
    result = evaluate(agent, "CartPole-v1", episodes=10, seed=123)
    assert result["return_mean"] >= 475, result


@pytest.mark.slow
def test_ppo_pendulum_reaches_minus_250_within_150k_steps():
    hyper = {**preset("Pendulum-v1"), "seed": 0, "eval_freq": 0}
    agent = PPO("Pendulum-v1", **hyper).learn(total_steps=150_000, progress=False)
    result = evaluate(agent, "Pendulum-v1", episodes=10, seed=123)
    assert result["return_mean"] >= -250, result


@pytest.mark.slow
def test_ppo_lstm_position_only_cartpole_reaches_0_7_within_100k_steps():
    # POPGym's CartPole without velocities: only a policy with memory balances it (1.0 is the maximum).
    env_id = "popgym-PositionOnlyCartPoleEasy-v0"
    agent = PPO(env_id, **{**preset(env_id), "seed": 0, "eval_freq": 0}).learn(total_steps=100_000, progress=False)
    assert agent.stateful
    result = evaluate(agent, env_id, episodes=10, seed=123)
    assert result["return_mean"] >= 0.7, result
