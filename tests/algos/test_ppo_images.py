"""PPO on image observations: frames stay uint8/bool in the rollout, one shared CNN trunk, checkpoints, bad input."""

import gymnasium as gym
import numpy as np
import pytest
import torch
import yaml

import acrl
from acrl import PPO
from acrl.cli import main
from acrl.core.envs import env_factory, make_vec_env
from acrl.core.errors import InputError
from tests.conftest import Frames, assert_resumes_repeat

TINY = {"n_envs": 2, "n_steps": 16, "batch_size": 16, "n_epochs": 2, "eval_freq": 0}  # normalize_obs: from the space


@pytest.mark.parametrize("env, dtype", [("MinAtar/Breakout-v1", np.bool_), (Frames, np.uint8)])
def test_frames_stay_in_their_dtype_in_the_rollout_buffer(env, dtype):
    agent = PPO(env, seed=0, **TINY)
    agent.collect()
    obs = agent.buffer.observations
    shape = agent.observation_space.shape
    assert obs.dtype == dtype and obs.shape == (16, 2, *shape)
    assert obs.nbytes == 16 * 2 * int(np.prod(shape))  # one byte a pixel: no float32 copy
    first, _ = make_vec_env(env, 2).reset(seed=0)
    assert np.array_equal(obs[0], first)  # the frames as the environments gave them, unscaled
    assert agent.config.encoder == "minatar"
    # One trunk: the critic is the value head alone (gain-1 linear layer on the 128 features).
    critic = agent.model.critic
    assert [tuple(p.shape) for p in critic.parameters()] == [(1, 128), (1,)]
    # CleanRL's head gains: orthogonal rows of norm 1 for the value, 0.01 for the policy's logits.
    assert torch.isclose(critic.weight.norm(), torch.tensor(1.0))
    torch.testing.assert_close(agent.model.actor.head.linear.weight.norm(dim=1), torch.full((agent.act_dim,), 0.01))


def test_the_value_is_the_value_head_on_the_policy_trunk():
    agent = PPO("MinAtar/Breakout-v1", seed=0, **TINY)
    obs = torch.from_numpy(np.stack([agent.observation_space.sample() for _ in range(3)]))
    features = agent.model.actor.encoder(obs)
    expected = features @ agent.model.critic.weight[0] + agent.model.critic.bias[0]
    torch.testing.assert_close(agent.model.value(obs, ()), expected)


def test_continuous_actions_from_frames_get_a_gaussian_head_on_the_cnn():
    class BoxActions(Frames):
        action_space = gym.spaces.Box(-2.0, 2.0, (2,), np.float32)

        def step(self, action):
            obs, _, terminated, truncated, info = super().step(1)
            return obs, -float(np.square(action).sum()), terminated, truncated, info

    agent = PPO(BoxActions, seed=0, **TINY)
    metrics = agent.iteration(32)
    assert type(agent.model.actor.head).__name__ == "GaussianHead" and agent.config.encoder == "minatar"
    assert agent.buffer.actions.shape == (16, 2, 2) and metrics["train/std"] > 0
    assert agent.predict(np.zeros((12, 12, 3), np.uint8)).shape == (2,)


def test_config_yaml_records_the_encoder_and_the_normalisation_used(tmp_path):
    """PPO's defaults on a custom image environment train (normalize_obs follows the observations: off for
    frames, on for vectors), and config.yaml says what was used."""
    PPO(Frames, seed=0, **TINY).learn(32, run_dir=tmp_path / "img", progress=False)
    PPO("CartPole-v1", seed=0, **TINY).learn(32, run_dir=tmp_path / "vec", progress=False)
    for name, encoder, normalized in (("img", "minatar", False), ("vec", "mlp", True)):
        config = yaml.safe_load((tmp_path / name / "config.yaml").read_text())["config"]
        assert (config["encoder"], config["normalize_obs"]) == (encoder, normalized)


def test_cnn_checkpoint_round_trips_and_resumes_exactly(tmp_path):
    cfg = dict(seed=3, checkpoint_freq=32, **TINY)
    agent = PPO("MinAtar/Breakout-v1", **cfg).learn(64, run_dir=tmp_path / "run", progress=False)
    loaded = acrl.load(tmp_path / "run/checkpoints/latest.pt")
    assert loaded.num_steps == 64 and loaded.config.encoder == "minatar"
    for a, b in zip(agent.model.state_dict().values(), loaded.model.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    opt_a, opt_b = agent.optimizer.state_dict()["state"], loaded.optimizer.state_dict()["state"]
    assert all(torch.equal(opt_a[k]["exp_avg_sq"], opt_b[k]["exp_avg_sq"]) for k in opt_a)
    obs = np.stack([agent.observation_space.sample() for _ in range(4)])
    assert np.array_equal(agent.predict(obs), loaded.predict(obs))
    assert_resumes_repeat(tmp_path / "run/checkpoints/latest.pt", loaded, 128)


def test_observation_normalisation_on_frames_is_an_input_error():
    with pytest.raises(InputError, match="normalize_obs does not apply to image observations"):
        PPO("MinAtar/Breakout-v1", seed=0, **{**TINY, "normalize_obs": True})


def test_a_dict_observation_space_says_it_is_not_supported_and_what_to_wrap_it_with():
    class DictObs(Frames):
        observation_space = gym.spaces.Dict({"frame": Frames.observation_space})

    with pytest.raises(InputError, match="not supported. Wrap it with gymnasium.wrappers.FlattenObservation"):
        PPO(DictObs, seed=0, **TINY)


def test_bad_frames_and_unknown_encoders_are_input_errors_before_any_work():
    class FloatFrames(Frames):
        observation_space = gym.spaces.Box(0.0, 255.0, (84, 84, 3), np.float64)

    with pytest.raises(InputError, match="no encoder takes .* dtype float64.*uint8 or bool"):
        PPO(FloatFrames, seed=0, **TINY)
    with pytest.raises(InputError, match="encoder must be one of auto, mlp, nature, a3c, minatar, got 'resnet'"):
        PPO("MinAtar/Breakout-v1", seed=0, encoder="resnet", **TINY)


def test_minatar_ids_are_registered_and_without_the_package_the_cli_names_the_extra(tmp_path, monkeypatch, capsys):
    for game in ("Breakout", "Asterix", "Freeway", "Seaquest", "SpaceInvaders"):
        assert f"MinAtar/{game}-v1" in gym.registry
    env = gym.make("MinAtar/Breakout-v1")
    assert env.observation_space.shape == (10, 10, 4) and env.observation_space.dtype == np.bool_
    for key in [k for k in gym.registry if k.startswith("MinAtar/")]:  # as without the package
        monkeypatch.delitem(gym.registry, key)
    with pytest.raises(InputError, match=r"No MinAtar/ environment is registered: install acrl's minatar extra"):
        env_factory("MinAtar/Breakout-v1")
    assert main(["train", "ppo", "--env", "MinAtar/Breakout-v1", "--run-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("acrl: error: ") and err.count("\n") == 1 and "pip install 'acrl[minatar]'" in err, err
    assert not (tmp_path / "run").exists()


def test_a_minatar_game_renders_uint8_frames_that_acrl_record_films(tmp_path):
    """MinAtar draws float colours in [0, 1], a pixel per cell; acrl's wrapper gives uint8, 32 x 32 pixels a cell."""
    env = gym.make("MinAtar/Breakout-v1", render_mode="rgb_array")
    env.reset(seed=0)
    frame, raw = env.render(), env.unwrapped.render()
    assert frame.dtype == np.uint8 and frame.shape == (320, 320, 3) and raw.shape == (10, 10, 3)
    for row, col in [(0, 0), (9, 4), (5, 7)]:  # every pixel of a cell is round(255 * the cell's colour)
        block = frame[32 * row : 32 * (row + 1), 32 * col : 32 * (col + 1)].reshape(-1, 3)
        assert (block == np.round(255 * raw[row, col]).astype(np.uint8)).all()
    clip = PPO("MinAtar/Breakout-v1", **TINY).record_video(tmp_path / "breakout.mp4", seed=0)
    assert clip["size"] == [320, 320] and clip["frames"] > 1 and (tmp_path / "breakout.mp4").stat().st_size > 0
