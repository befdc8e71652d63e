"""A NaN or infinite observation or reward from the environment stops every algorithm with a
`TrainingError` that names the quantity, the environment index and the step, before it reaches
the normaliser or the policy (`acrl.core.envs.CheckFinite`).

`NonFiniteEnv` is a tiny env (3-D Box observations, Discrete or Box actions, 10-step episodes)
whose observation component 1, or reward, becomes NaN or inf at a given step of its lifetime.
It lives at module level so that it can be registered with an entry point and used through the
CLI, and so that A3C's forked workers can build it.
"""

import multiprocessing

import gymnasium as gym
import numpy as np
import pytest

from acrl import A3C, DDPG, PPO
from acrl.cli import main as cli_main
from acrl.core.envs import CheckFinite, make_vec_env
from acrl.core.errors import TrainingError

EPISODE = 10


class NonFiniteEnv(gym.Env):
    """3-D observations and a reward of 1 per step; 10-step episodes (terminated).

    Args:
        what: "observation" (component 1 goes bad) or "reward".
        value: the bad value (nan, inf or -inf).
        at_step: the step, counted over the env's lifetime (1-based), that returns it; 0: the
            first reset's observation.
        discrete: Discrete(2) actions, else a Box(-1, 1, (1,)).
        only_seed: go bad only in the env first reset with this seed (a vector env seeds
            sub-environment i with seed + i), None: in every env.
    """

    metadata = {"render_modes": []}
    observation_space = gym.spaces.Box(-10.0, 10.0, (3,), dtype=np.float32)

    def __init__(self, what="observation", value=float("nan"), at_step=25, discrete=True, only_seed=None):
        self.what, self.value, self.at_step, self.only_seed = what, value, at_step, only_seed
        self.action_space = gym.spaces.Discrete(2) if discrete else gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.steps, self.t, self.first_seed, self.resets = 0, 0, None, 0

    def _bad(self, step: int) -> bool:
        return step == self.at_step and (self.only_seed is None or self.first_seed == self.only_seed)

    def _obs(self, bad: bool) -> np.ndarray:
        obs = np.full(3, 0.1 * self.t, dtype=np.float32)
        if bad and self.what == "observation":
            obs[1] = self.value
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if self.resets == 0:
            self.first_seed = seed
        self.resets += 1
        self.t = 0
        return self._obs(self.resets == 1 and self._bad(0)), {}

    def step(self, action):
        self.steps += 1
        self.t += 1
        bad = self._bad(self.steps)
        reward = self.value if bad and self.what == "reward" else 1.0
        return self._obs(bad), reward, self.t >= EPISODE, False, {}


def discrete_nan_obs_env():
    """Factory: Discrete actions; observation component 1 is NaN at lifetime step 25."""
    return NonFiniteEnv("observation", float("nan"), 25, discrete=True)


def box_inf_reward_env():
    """Factory: Box actions; the reward is +inf at lifetime step 25."""
    return NonFiniteEnv("reward", float("inf"), 25, discrete=False)


if "acrl_test/NaNObservation-v0" not in gym.registry:
    gym.register(
        id="acrl_test/NaNObservation-v0",
        entry_point=f"{__name__}:NonFiniteEnv",
        kwargs={"what": "observation", "value": float("nan"), "at_step": 25, "discrete": True},
    )

PPO_TINY = {"n_steps": 16, "batch_size": 16, "n_epochs": 1, "hidden_sizes": (4,), "eval_freq": 0}
# lifetime step 25 is step 5 of the third 10-step episode
AT_STEP_25 = r"at step 5 of its episode \(its 25th step overall\)"


# ------------------------------------------------------------------------------------ the wrapper
@pytest.mark.parametrize(
    "value, kind", [(float("nan"), "NaN"), (float("inf"), "infinite"), (float("-inf"), "infinite")]
)
def test_wrapper_names_env_quantity_component_and_step(value, kind):
    env = CheckFinite(NonFiniteEnv("observation", value, 25), index=3)
    env.reset(seed=0)
    for _ in range(24):
        _, _, terminated, _, _ = env.step(0)
        if terminated:
            env.reset()
    with pytest.raises(TrainingError) as info:
        env.step(0)
    message = str(info.value)
    article = "an" if kind == "infinite" else "a"
    assert f"environment 3 (NonFiniteEnv) returned {article} {kind} observation (components [1]" in message
    assert AT_STEP_25.replace("\\", "") in message
    assert "before it reaches the normaliser or the policy" in message


def test_wrapper_checks_the_reset_observation_and_the_reward_and_names_the_env_id():
    env = CheckFinite(NonFiniteEnv("observation", float("nan"), 0), index=0)
    with pytest.raises(TrainingError, match=r"NaN observation \(components \[1\]: nan\) from reset"):
        env.reset(seed=0)
    gym.register(
        id="acrl_test/InfReward-v0",
        entry_point=f"{__name__}:NonFiniteEnv",
        kwargs={"what": "reward", "value": float("-inf"), "at_step": 2},
    )
    try:
        env = CheckFinite(gym.make("acrl_test/InfReward-v0"), index=1)
        env.reset(seed=0)
        env.step(0)
        with pytest.raises(
            TrainingError,
            match=r"environment 1 \(acrl_test/InfReward-v0\) returned an infinite "
            r"reward \(-inf\) at step 2 of its episode \(its 2nd step",
        ):
            env.step(0)
    finally:
        del gym.registry["acrl_test/InfReward-v0"]


def test_wrapper_passes_finite_values_through_unchanged():
    inner = NonFiniteEnv(at_step=10**9)
    env = CheckFinite(inner, index=0)
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs, np.zeros(3, np.float32))
    obs, reward, terminated, truncated, _ = env.step(1)
    np.testing.assert_allclose(obs, np.full(3, 0.1, np.float32))
    assert (reward, terminated, truncated) == (1.0, False, False)
    assert env.episode_steps == 1 and env.total_steps == 1


def test_vec_env_error_names_the_sub_environment_index_and_propagates_as_is():
    # make_vec_env seeds sub-environment i with seed + i: only the second one (seed 8) goes bad
    vec = make_vec_env(lambda: NonFiniteEnv("observation", float("nan"), 25, only_seed=8), 3)
    vec.reset(seed=7)
    with pytest.raises(
        TrainingError, match=r"^environment 1 \(NonFiniteEnv\) returned a NaN observation .*" + AT_STEP_25
    ):
        for _ in range(25):
            vec.step(np.zeros(3, dtype=np.int64))


# ------------------------------------------------------------------------------------ every algorithm
def test_ppo_discrete_nan_observation_raises_training_error():
    agent = PPO(
        lambda: NonFiniteEnv("observation", float("nan"), 25, discrete=True, only_seed=1),
        n_envs=2,
        seed=0,
        total_steps=64,
        **PPO_TINY,
    )
    with pytest.raises(
        TrainingError, match=r"environment 1 \(.*\) returned a NaN observation \(components \[1\]" + r".*" + AT_STEP_25
    ):
        agent.learn(progress=False)


def test_ppo_box_inf_reward_raises_training_error():
    with pytest.raises(TrainingError, match=r"environment 0 .* infinite reward \(inf\) " + AT_STEP_25):
        PPO(box_inf_reward_env, seed=0, total_steps=64, **PPO_TINY).learn(progress=False)


def test_ddpg_nan_observation_raises_training_error():
    agent = DDPG(
        lambda: NonFiniteEnv("observation", float("nan"), 25, discrete=False),
        seed=0,
        total_steps=64,
        start_steps=5,
        batch_size=4,
        buffer_size=100,
        hidden_sizes=(4,),
        iteration_steps=8,
        eval_freq=0,
    )
    with pytest.raises(TrainingError, match=r"environment 0 .* NaN observation .*" + AT_STEP_25):
        agent.learn(progress=False)


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs the 'fork' start method")
def test_a3c_worker_nan_observation_reaches_the_parent_as_training_error():
    agent = A3C(
        discrete_nan_obs_env,
        workers=1,
        n_steps=5,
        total_steps=200,
        hidden_sizes=(4,),
        eval_freq=0,
        seed=0,
        start_method="fork",
    )
    with pytest.raises(TrainingError) as info:
        agent.learn(progress=False)
    message = str(info.value)
    assert "worker 0 raised an exception" in message
    assert "TrainingError: environment 0 (NonFiniteEnv) returned a NaN observation (components [1]" in message
    assert AT_STEP_25.replace("\\", "") in message


def test_cli_exits_1_without_a_traceback(tmp_path, capsys):
    code = cli_main(
        [
            "train",
            "ppo",
            "--env",
            "acrl_test/NaNObservation-v0",
            "--total-steps",
            "64",
            "--run-dir",
            str(tmp_path / "run"),
            "--no-progress",
            "--set",
            "n_steps=16",
            "batch_size=16",
            "n_epochs=1",
            "hidden_sizes=[4]",
            "eval_freq=0",
        ]
    )
    stderr = capsys.readouterr().err
    assert code == 1, stderr
    assert "Traceback" not in stderr
    assert "training failed: environment 0 (acrl_test/NaNObservation-v0) returned a NaN observation" in stderr
    assert "its 25th step overall" in stderr
