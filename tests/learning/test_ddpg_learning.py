"""DDPG and TD3 learn Pendulum-v1 (a random policy scores about -1200; solved is about -150).

The CI test uses 64-64 networks and 5k steps (about 30 s of CPU); the presets' 400-300
networks with 20k steps and 10k random steps first take several minutes on CPU and are slow.
Each test evaluates the best checkpoint, as `acrl evaluate` does, on 10 fresh episodes.
"""

import pytest

import acrl
from acrl import DDPG, TD3
from acrl.core.config import preset_values


def best_return(agent, run_dir):
    agent.learn(run_dir=run_dir, progress=False)
    best = acrl.load(run_dir / "checkpoints" / "best.pt")
    return acrl.evaluate(best, "Pendulum-v1", episodes=10, seed=123)


def test_ddpg_small_nets_reach_minus_300_within_5k_steps(tmp_path):
    agent = DDPG(
        "Pendulum-v1",
        seed=0,
        total_steps=5_000,
        start_steps=1_000,
        gamma=0.98,
        hidden_sizes=(64, 64),
        eval_freq=1_000,
        eval_episodes=5,
    )
    result = best_return(agent, tmp_path / "run")
    assert result["return_mean"] >= -300, result


@pytest.mark.slow
@pytest.mark.parametrize("cls", [DDPG, TD3])
def test_preset_reaches_minus_300_within_20k_steps(tmp_path, cls):
    hyper = {**preset_values(cls.algo, "Pendulum-v1", None)[0], "seed": 0, "eval_episodes": 5}
    result = best_return(cls("Pendulum-v1", **hyper), tmp_path / "run")
    assert result["return_mean"] >= -300, result
