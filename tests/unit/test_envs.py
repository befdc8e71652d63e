"""Environment resolution, action rescaling and the Ant +y task."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers.vector import RecordEpisodeStatistics

from acrl.core.envs import ActionAdapter, LeanSyncVectorEnv, check_spaces, env_factory
from acrl.core.errors import InputError
from acrl.tasks import AntDirectional


def test_unknown_id_suggests_close_ids():
    with pytest.raises(InputError, match="Did you mean CartPole-v1"):
        env_factory("CartPol-v1")


def test_action_adapter_rescales_asymmetric_bounds_and_clips_only_the_env_copy():
    low, high = np.array([0.0, -2.0, -np.inf]), np.array([10.0, 2.0, np.inf])
    adapter = ActionAdapter(gym.spaces.Box(low, high, dtype=np.float32))
    raw = np.array([0.5, -3.0, 7.0], dtype=np.float32)
    env_action = adapter.to_env(raw)
    # dim 0: [-1, 1] -> [0, 10], 0.5 -> 7.5; dim 1: -3 clipped to -1 -> -2; dim 2 unbounded: passes through.
    np.testing.assert_allclose(env_action, [7.5, -2.0, 7.0])
    np.testing.assert_allclose(raw, [0.5, -3.0, 7.0])  # the stored raw sample is untouched
    np.testing.assert_allclose(adapter.to_policy(np.array([7.5, -2.0, 7.0])), [0.5, -1.0, 7.0])


def test_action_adapter_shifts_discrete_actions_by_start():
    adapter = ActionAdapter(gym.spaces.Discrete(2, start=1))
    # policy indices 0, 1 are the env's actions 1, 2, and back
    assert adapter.to_env(np.array([0, 1, 1])).tolist() == [1, 2, 2]
    assert adapter.to_policy(np.array([2, 1])).tolist() == [1, 0]
    assert adapter.to_env(np.array([0, 1])).dtype == np.int64
    assert ActionAdapter(gym.spaces.Discrete(3)).to_env(np.array([0, 2])).tolist() == [0, 2]


@pytest.mark.parametrize(
    ("low", "high", "message"),
    [
        ([0.0, -1.0], [0.0, 1.0], r"action dimensions \[0\] .* have low == high"),
        ([-1.0, 0.0], [1.0, np.inf], r"action dimensions \[1\] .* bounded on one side only"),
        ([-np.inf], [3.0], r"action dimensions \[0\] .* bounded on one side only"),
    ],
)
def test_action_adapter_refuses_constant_and_half_bounded_dimensions(low, high, message):
    with pytest.raises(InputError, match=message):
        ActionAdapter(gym.spaces.Box(np.array(low, np.float32), np.array(high, np.float32)))


def test_unsupported_spaces_are_named():
    class DictObs(gym.Env):
        observation_space = gym.spaces.Dict({"a": gym.spaces.Box(0, 1, (1,))})
        action_space = gym.spaces.Discrete(2)

    class MultiBinaryActions(gym.Env):
        observation_space = gym.spaces.Box(0, 1, (2,))
        action_space = gym.spaces.MultiBinary(3)

    with pytest.raises(InputError, match="flat Box observation space"):
        check_spaces(DictObs(), "PPO", (gym.spaces.Box, gym.spaces.Discrete))
    with pytest.raises(InputError, match="MultiBinary"):
        check_spaces(MultiBinaryActions(), "PPO", (gym.spaces.Box, gym.spaces.Discrete))


class FakeAnt(gym.Env):
    """Stands in for Ant-v5: scripted positions and reward terms in info."""

    observation_space = gym.spaces.Box(-1, 1, (1,))
    action_space = gym.spaces.Box(-1, 1, (1,))

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(1), {"x_position": 0.0, "y_position": 1.0}

    def step(self, action):
        self.t += 1
        info = {
            "x_position": 0.3 * self.t,
            "y_position": 1.0 + 0.1 * self.t,
            "reward_survive": 1.0,
            "reward_ctrl": -0.5,
            "reward_contact": -0.25,
        }
        return np.zeros(1), 123.0, False, False, info


def test_ant_directional_reward_by_hand():
    env = AntDirectional(FakeAnt())
    env.reset()
    _, reward, *_, info = env.step(np.zeros(1))
    # 20 * (1.1 - 1.0) + 1 - 0.5 - 0.25 = 2.25; the first step uses the reset's y, nothing dropped.
    assert reward == pytest.approx(2.25)
    _, reward, *_, info = env.step(np.zeros(1))
    assert reward == pytest.approx(2.25)
    assert info["y_displacement"] == pytest.approx(0.2)
    diagonal = AntDirectional(FakeAnt(), direction=(1.0, 1.0))
    diagonal.reset()
    _, reward, *_ = diagonal.step(np.zeros(1))
    assert reward == pytest.approx(20 * (0.3 + 0.1) / np.sqrt(2) + 0.25)


def test_registered_ant_directional_steps():
    env = gym.make("acrl/AntDirectional-v5")
    _, info = env.reset(seed=0)
    y0 = info["y_position"]
    _, reward, _, _, info = env.step(env.action_space.sample())
    expected = 20 * (info["y_position"] - y0) + info["reward_survive"] + info["reward_ctrl"] + info["reward_contact"]
    assert reward == pytest.approx(expected)
    assert env.spec.max_episode_steps == 1000


@pytest.mark.parametrize("env_id, max_episode_steps", [("CartPole-v1", 30), ("Pendulum-v1", 17)])
def test_lean_vector_env_steps_as_gymnasium_same_step_vector_env_with_episode_statistics(env_id, max_episode_steps):
    """Three sub-environments, the same seeds and actions: every output equals Gymnasium's
    SyncVectorEnv (same-step autoreset) + RecordEpisodeStatistics, through terminations (CartPole)
    and time-limit truncations (both), for 200 steps."""

    def factory():
        return gym.make(env_id, max_episode_steps=max_episode_steps)

    ours = LeanSyncVectorEnv([factory] * 3)
    theirs = RecordEpisodeStatistics(SyncVectorEnv([factory] * 3, autoreset_mode=AutoresetMode.SAME_STEP))
    np.testing.assert_array_equal(ours.reset(seed=5)[0], theirs.reset(seed=5)[0])
    ours.action_space.seed(0)
    ended = {"terminated": 0, "truncated": 0}
    for _ in range(200):
        actions = ours.action_space.sample()
        obs, rewards, terminated, truncated, info = ours.step(actions)
        obs_g, rewards_g, terminated_g, truncated_g, info_g = theirs.step(actions)
        np.testing.assert_array_equal(obs, obs_g)
        np.testing.assert_array_equal(rewards, rewards_g)
        np.testing.assert_array_equal(terminated, terminated_g)
        np.testing.assert_array_equal(truncated, truncated_g)
        assert ("_episode" in info) == ("_episode" in info_g)
        if "_episode" in info:
            np.testing.assert_array_equal(info["_episode"], info_g["_episode"])
            np.testing.assert_array_equal(info["_final_obs"], info_g["_final_obs"])
            for i in np.flatnonzero(info["_episode"]):
                np.testing.assert_array_equal(info["final_obs"][i], info_g["final_obs"][i])
                assert info["episode"]["r"][i] == pytest.approx(info_g["episode"]["r"][i], rel=1e-6)
                assert info["episode"]["l"][i] == info_g["episode"]["l"][i]
        ended["terminated"] += int(terminated.sum())
        ended["truncated"] += int(truncated.sum())
    assert ended["truncated"] > 0 and (ended["terminated"] > 0 or env_id == "Pendulum-v1")
