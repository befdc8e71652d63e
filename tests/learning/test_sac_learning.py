"""SAC learns: a point mass it must brake (in CI, about 10 s), Pendulum-v1 and Hopper-v5 (slow).

The CI check is a task small enough to learn in 3k steps yet one that only the whole algorithm
learns: the action accelerates the mass and the reward (-x^2) follows from the position, which
the action changes one step later, so the critic must bootstrap (with gamma = 0 SAC scores
about -8), the actor must follow the critic's gradient, and the tuned temperature must let it
settle. Eight seeds (0-7) scored -1.04 to -1.52 at 3k steps; doing nothing scores -10
(-30 E[x0^2], x0 ~ U(-1, 1)); the threshold is -3.

The Pendulum preset (rl-baselines3-zoo's: 20k steps, Adam 1e-3, 256-256, batch 256) took 525 s
of CI; Hopper-v5 at 300k steps takes about 45 minutes on one core. Each slow test evaluates the
best checkpoint, as `acrl evaluate` does, on 10 fresh episodes.
"""

import gymnasium as gym
import numpy as np
import pytest

import acrl
from acrl import SAC
from acrl.core.config import preset_values


class Brake(gym.Env):
    """A point mass on [-1, 1]: observation (x, v), x0 ~ U(-1, 1), v0 = 0; the action a in [-1, 1]
    sets v' = clip(v + 0.2 a, -1, 1) after the position moves, x' = clip(x + 0.2 v, -1, 1); reward -x'^2.
    Episodes are cut at 30 steps (truncation)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.v = float(self.np_random.uniform(-1, 1)), 0.0
        return np.array([self.x, self.v], np.float32), {}

    def step(self, action):
        self.x = float(np.clip(self.x + 0.2 * self.v, -1, 1))
        self.v = float(np.clip(self.v + 0.2 * float(np.clip(action[0], -1, 1)), -1, 1))
        return np.array([self.x, self.v], np.float32), -(self.x**2), False, False, {}


def make_brake():
    return gym.wrappers.TimeLimit(Brake(), max_episode_steps=30)


def test_sac_learns_to_brake_a_point_mass_within_3k_steps():
    agent = SAC(
        make_brake,
        seed=0,
        total_steps=3_000,
        hidden_sizes=(64, 64),
        batch_size=64,
        start_steps=200,
        learning_rate=1e-3,
        eval_freq=3_000,
        eval_episodes=1,
        torch_threads=1,
    )
    agent.learn(progress=False)
    result = acrl.evaluate(agent, make_brake, episodes=50, seed=123)
    assert result["return_mean"] >= -3, result


def best_return(env_id, run_dir):
    values, name = preset_values("sac", env_id, None)
    assert name == "default", "acrl/presets/sac.yaml was not found"
    SAC(env_id, **{**values, "seed": 0}).learn(run_dir=run_dir, progress=False)
    best = acrl.load(run_dir / "checkpoints" / "best.pt")
    return acrl.evaluate(best, env_id, episodes=10, seed=123)


@pytest.mark.slow
def test_preset_reaches_minus_200_within_20k_steps(tmp_path):
    assert preset_values("sac", "Pendulum-v1", None)[0]["total_steps"] == 20_000
    result = best_return("Pendulum-v1", tmp_path / "run")
    assert result["return_mean"] >= -200, result


@pytest.mark.slow
def test_hopper_reaches_2500_within_300k_steps(tmp_path):
    assert preset_values("sac", "Hopper-v5", None)[0]["total_steps"] == 300_000
    result = best_return("Hopper-v5", tmp_path / "run")
    assert result["return_mean"] >= 2_500, result
