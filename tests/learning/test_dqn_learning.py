"""DQN learns CartPole-v1 (a random policy scores about 22, the maximum is 500).

The CartPole preset (rl-baselines3-zoo's settings) evaluated every 1,000 steps on 5 episodes, the
run stopping at the first evaluation of 120 or more (`target_return`). On the 2-core AMD EPYC
(2026-12-04) the evaluations of seeds 0, 1, 2 over their first 10,000 steps peaked at 199, 147 and
500 (at 6,000, 6,000 and 8,000 steps), first reaching 120 at 3,000, 3,000 and 3,000 steps; on the
Xeon of 2026-12-02, with evaluations every 2,500 steps, they reached 150 by 5,000. The preset's
learning rate of 2.3e-3 with bursts of 128 updates makes the evaluations swing (between 19 and 500
over 20,000 steps here), and where they swing differs between machines (float round-off), so the
test asks for the best evaluation and a margin of 5x random play, not for a solved task (that is
benchmarks/dqn_vs_sb3.py's, at the zoo's 50,000 steps).
"""

import pytest

from acrl import DQN


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_preset_reaches_120_within_10k_steps(tmp_path, seed):
    agent = DQN.from_preset(
        "CartPole-v1", seed=seed, total_steps=10_000, eval_freq=1_000, eval_episodes=5, target_return=120
    )
    agent.learn(run_dir=tmp_path / "run", progress=False)
    assert agent.best_eval["return_mean"] >= 120, agent.best_eval
