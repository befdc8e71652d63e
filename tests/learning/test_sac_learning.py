"""SAC learns Pendulum-v1 (a random policy scores about -1200; solved is about -150).

The preset (rl-baselines3-zoo's: 20k steps, Adam 1e-3, 256-256, batch 256) takes about three
minutes on one core (~120 steps/s; measured: best checkpoint -132 on the 10 episodes below), so
it is slow; the CI test uses 64-64 networks, batch 64 and 5k steps (about 11 s; -133 there).
Each test evaluates the best checkpoint, as `acrl evaluate` does, on 10 fresh episodes.
"""

import pytest

import acrl
from acrl import SAC
from acrl.core.config import preset_values


def best_return(agent, run_dir):
    agent.learn(run_dir=run_dir, progress=False)
    best = acrl.load(run_dir / "checkpoints" / "best.pt")
    return acrl.evaluate(best, "Pendulum-v1", episodes=10, seed=123)


def test_small_nets_reach_minus_300_within_5k_steps(tmp_path):
    agent = SAC("Pendulum-v1", seed=0, total_steps=5_000, start_steps=100, learning_rate=1e-3, hidden_sizes=(64, 64),
                batch_size=64, eval_freq=1_000, eval_episodes=5)
    result = best_return(agent, tmp_path / "run")
    assert result["return_mean"] >= -300, result


@pytest.mark.slow
def test_preset_reaches_minus_200_within_20k_steps(tmp_path):
    values, name = preset_values("sac", "Pendulum-v1", None)
    assert name == "default" and values["total_steps"] == 20_000, "acrl/presets/sac.yaml was not found"
    result = best_return(SAC("Pendulum-v1", **{**values, "seed": 0}), tmp_path / "run")
    assert result["return_mean"] >= -200, result
