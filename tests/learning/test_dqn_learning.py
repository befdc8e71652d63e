"""DQN learns CartPole-v1 (a random policy scores about 22, the maximum is 500).

The CartPole preset (rl-baselines3-zoo's settings) evaluated every 2,500 steps on 5 episodes, the
run stopping at the first evaluation of 150 or more (`target_return`): seeds 0, 1, 2 reached it at
5,000, 2,500 and 2,500 steps (mean returns 149, 207, 181 at 2,500 and 249, 141, 93 at 5,000;
2026-12-02), about 5 s each on an idle core. The budget of 10,000 steps leaves room. Later
evaluations of those runs (to 30k steps) swung between 13 and 500 (the preset's learning rate of
2.3e-3 with bursts of 128 updates), so the test asks for the best one.
"""

import pytest

from acrl import DQN


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_preset_reaches_150_within_10k_steps(tmp_path, seed):
    agent = DQN.from_preset(
        "CartPole-v1", seed=seed, total_steps=10_000, eval_freq=2_500, eval_episodes=5, target_return=150
    )
    agent.learn(run_dir=tmp_path / "run", progress=False)
    assert agent.best_eval["return_mean"] >= 150, agent.best_eval
    assert agent.num_steps <= 5_000  # where seeds 0-2 stopped
