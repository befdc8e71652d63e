"""SAC learns Pendulum-v1 (a random policy scores about -1200; solved is about -150) and Hopper-v5.

The Pendulum preset (rl-baselines3-zoo's: 20k steps, Adam 1e-3, 256-256, batch 256) takes about
three minutes on one core (~120 steps/s) and runs in CI: the claim is checked on every change.
Hopper-v5 at 300k steps takes about 45 minutes on one core and is slow. Each test evaluates the
best checkpoint, as `acrl evaluate` does, on 10 fresh episodes.
"""

import pytest

import acrl
from acrl import SAC
from acrl.core.config import preset_values


def best_return(env_id, run_dir):
    values, name = preset_values("sac", env_id, None)
    assert name == "default", "acrl/presets/sac.yaml was not found"
    SAC(env_id, **{**values, "seed": 0}).learn(run_dir=run_dir, progress=False)
    best = acrl.load(run_dir / "checkpoints" / "best.pt")
    return acrl.evaluate(best, env_id, episodes=10, seed=123)


def test_preset_reaches_minus_200_within_20k_steps(tmp_path):
    assert preset_values("sac", "Pendulum-v1", None)[0]["total_steps"] == 20_000
    result = best_return("Pendulum-v1", tmp_path / "run")
    assert result["return_mean"] >= -200, result


@pytest.mark.slow
def test_hopper_reaches_2500_within_300k_steps(tmp_path):
    assert preset_values("sac", "Hopper-v5", None)[0]["total_steps"] == 300_000
    result = best_return("Hopper-v5", tmp_path / "run")
    assert result["return_mean"] >= 2_500, result
