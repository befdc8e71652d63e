"""PPO learns from pixels: MinAtar Breakout-v1 with the preset, 100k steps (about 20 s on 2 cores), beats random play.

Random play scores 0.43, 0.45 and 0.34 per episode (100 episodes each, seeds 0-2, `env.action_space.sample()`).
PPO's preset after 100k steps, 30 deterministic evaluation episodes: 3.57 (seed 0), 3.4 (seed 1), 3.3 (seed 2),
15-25 s of training each. The threshold, 1.5, is over three times the best random mean and under half the worst
learned one.
"""

from acrl import PPO


def test_ppo_minatar_breakout_beats_random_play_within_100k_steps():
    agent = PPO.from_preset("MinAtar/Breakout-v1", seed=0, total_steps=100_000, eval_freq=0).learn(progress=False)
    result = agent.evaluate(30)
    assert result["return_mean"] >= 1.5, result
