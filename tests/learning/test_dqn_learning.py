"""DQN learns CartPole-v1 (a random policy scores about 22, the maximum is 500).

The CartPole preset (rl-baselines3-zoo's settings) evaluated every 2,500 steps on 5 episodes, the
run stopping at the first evaluation of 150 or more (`target_return`): seeds 0, 1, 2 reached it at
5,000, 2,500 and 2,500 steps (149, 207, 181 at 2,500), about 10 s of CPU each on an idle core.
The budget of 10,000 steps leaves room for others.
"""

import pytest

from acrl import DQN


@pytest.mark.parametrize("seed", [0])
def test_preset_reaches_150_within_10k_steps(tmp_path, seed):
    agent = DQN.from_preset(
        "CartPole-v1", seed=seed, total_steps=10_000, eval_freq=2_500, eval_episodes=5, target_return=150
    )
    agent.learn(run_dir=tmp_path / "run", progress=False)
    assert agent.best_eval["return_mean"] >= 150, agent.best_eval
