"""A3C learns from pixels: MinAtar Breakout-v1 with the preset and 2 workers, 100k steps, beats random play.

Random play scores 0.43, 0.45 and 0.34 per episode (100 episodes each, seeds 0-2, `env.action_space.sample()`;
tests/learning/test_ppo_minatar.py). The preset (the paper's t_max 5, shared RMSProp lr 7e-4, entropy 0.01; the
MinAtar CNN) after 100k steps with 2 workers, 30 deterministic evaluation episodes, on 2 cores on 2026-12-02:
6.0 (seed 0), 5.7 (seed 1), 4.57 (seed 2), about 33 s of training each. The threshold, 1.5 (PPO's), is over
three times the best random mean and under a third of the worst learned one.
"""

import time

from acrl import A3C


def test_a3c_minatar_breakout_beats_random_play_within_100k_steps_with_2_workers():
    started = time.monotonic()
    agent = A3C.from_preset("MinAtar/Breakout-v1", workers=2, seed=0, total_steps=100_000, eval_freq=0)
    agent.learn(progress=False)
    result = agent.evaluate(30)
    elapsed = time.monotonic() - started
    print(f"A3C MinAtar/Breakout-v1: {result['return_mean']} after {agent.num_steps} steps, {elapsed:.0f} s")
    assert agent.num_steps == 100_000
    assert result["return_mean"] >= 1.5, result
