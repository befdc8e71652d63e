"""Evaluation runs in its own environment, seeded with seed + 10000 and apart from training's
(docs/correctness.md item 11). Expected returns are worked out by hand from the seed."""

import numpy as np
import pytest

from acrl import PPO
from acrl.algos.base import EVAL_SEED_OFFSET
from tests.conftest import CountdownEnv


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
