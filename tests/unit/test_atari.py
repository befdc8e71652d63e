"""Atari (acrl.tasks.atari): ALE's vector env for training against Gymnasium's wrappers for evaluation,
episodic life and clipped rewards in training only, PPO from ALE frames, videos, the missing extra, presets."""

import gymnasium as gym
import numpy as np
import pytest

from acrl import PPO
from acrl.cli import main
from acrl.core.config import preset_values
from acrl.core.envs import ENV_FAMILIES, EnvFamily, env_factory, make_vec_env
from acrl.core.errors import InputError
from acrl.tasks.atari import AtariSettings, AtariVecEnv, make_atari_env
from tests.algos.test_video import decode

pytest.importorskip("ale_py")
EXACT = AtariSettings(noop_max=0, repeat_action_probability=0.0)  # no random number drawn in either path


def test_both_paths_give_the_same_frames_rewards_and_game_end_without_noops_and_sticky_actions():
    vec = AtariVecEnv("ALE/Breakout-v5", 1, EXACT)
    single = make_atari_env("ALE/Breakout-v5", settings=EXACT)
    first, _ = vec.reset(seed=3)
    obs, _ = single.reset(seed=3)
    assert first.shape == (1, 4, 84, 84) and first.dtype == np.uint8 and np.array_equal(first[0], obs)
    assert not obs[:3].any()  # zero padding after a reset, as ALE's vector env
    rng = np.random.default_rng(0)
    for _ in range(2000):
        action = int(rng.integers(single.action_space.n))
        vobs, vreward, vterm, vtrunc, info = vec.step(np.array([action]))
        obs, reward, terminated, truncated, _ = single.step(action)
        if info and info["_episode"][0]:  # the game ended: its last frame is final_obs
            assert terminated and np.array_equal(info["final_obs"][0], obs)
            break
        assert np.array_equal(vobs[0], obs) and vreward[0] == np.sign(reward)
        assert vterm[0] == (terminated or bool(info))  # terminated: a lost life too
    else:
        pytest.fail("no game over in 2000 random steps")


def test_training_loses_lives_clips_rewards_and_reports_whole_games_with_the_raw_score():
    """Breakout: 5 lives; a life lost terminates the learner's episode, the game goes on."""
    vec = AtariVecEnv("ALE/Breakout-v5", 2, EXACT)
    reference = gym.make_vec(  # ALE's vector env with nothing of training's: raw rewards, no lives
        "ALE/Breakout-v5",
        2,
        vectorization_mode="vector_entry_point",
        autoreset_mode="SameStep",
        noop_max=0,
        repeat_action_probability=0.0,
        reward_clipping=False,
        use_fire_reset=False,
    )
    vec.reset(seed=1)
    _, ref_info = reference.reset(seed=1)
    rng = np.random.default_rng(0)
    lives_lost, raw, games = np.zeros(2, int), np.zeros(2), []
    lives = ref_info["lives"].copy()
    for _ in range(3000):
        actions = rng.integers(4, size=2)
        _, rewards, terminated, _, info = vec.step(actions)
        _, ref_rewards, ref_terminated, _, ref_info = reference.step(actions)
        assert set(np.unique(rewards)) <= {-1.0, 0.0, 1.0}
        assert np.array_equal(rewards, np.sign(ref_rewards))
        raw += ref_rewards
        lost = (ref_info["lives"] < lives) & ~ref_terminated
        lives = ref_info["lives"].copy()
        assert np.array_equal(terminated, ref_terminated | lost)
        lives_lost += lost
        if info:
            assert np.array_equal(info["_final_obs"], terminated) and np.array_equal(info["_episode"], ref_terminated)
            for i in np.flatnonzero(ref_terminated):
                games.append((info["episode"]["r"][i], raw[i]))
                raw[i] = 0.0
        if len(games) >= 2:
            break
    assert lives_lost.sum() >= 4 and len(games) >= 2
    assert any(score > 0 for score, _ in games)
    for score, expected in games:
        assert score == expected
    # The single env plays the whole game through its lost lives and returns the raw score.
    single = make_atari_env("ALE/Breakout-v5", settings=EXACT)
    single.reset(seed=0)
    lives_seen = set()
    for _ in range(3000):
        _, reward, terminated, truncated, info = single.step(int(rng.integers(4)))
        lives_seen.add(info["lives"])
        assert reward >= 0 and not truncated
        if terminated:
            break
    assert terminated and lives_seen >= {4, 3, 2, 1}


def test_ppo_trains_on_pong_from_uint8_frames_and_checkpoints_round_trip(tmp_path):
    tiny = {"n_envs": 2, "n_steps": 16, "batch_size": 16, "n_epochs": 1, "normalize_obs": False}
    tiny |= {"eval_freq": 0, "eval_episodes": 1}  # the final evaluation: one whole game
    agent = PPO("ALE/Pong-v5", seed=0, **tiny)
    assert agent.config.encoder == "nature" and isinstance(agent.envs, AtariVecEnv)
    agent.collect()
    obs = agent.buffer.observations
    assert obs.dtype == np.uint8 and obs.nbytes == 2 * 16 * 4 * 84 * 84
    agent.learn(64, run_dir=tmp_path / "run", progress=False)
    assert agent.num_steps == 64
    loaded = PPO.load(tmp_path / "run" / "checkpoints" / "latest.pt")
    frame = make_atari_env("ALE/Pong-v5").reset(seed=0)[0]
    assert loaded.predict(frame) == agent.predict(frame)
    assert main(["record", str(tmp_path / "run"), "--max-steps", "12"]) == 0
    (video,) = (tmp_path / "run" / "videos").glob("*.mp4")
    assert video.name in (tmp_path / "run" / "README.md").read_text()  # the model card shows it
    meta, frames = decode(video)
    assert frames.shape == (13, 210, 160, 3) and meta["fps"] == 15  # the RGB screen, 60 / 4 frames a second
    assert np.abs(frames[-1].astype(int) - frames[0]).max() > 50  # the game moves


def test_without_ale_py_the_cli_names_the_atari_extra(tmp_path, monkeypatch, capsys):
    def missing():
        raise ModuleNotFoundError("No module named 'ale_py'")

    without = EnvFamily(install=ENV_FAMILIES["ALE"].install, register=missing)
    monkeypatch.setitem(ENV_FAMILIES, "ALE", without)
    monkeypatch.setitem(ENV_FAMILIES, "*NoFrameskip-v4", without)
    for key in [k for k in gym.registry if k.startswith("ALE/") or k.endswith("NoFrameskip-v4")]:  # as without it
        monkeypatch.delitem(gym.registry, key)
    with pytest.raises(InputError, match=r"No ALE/ environment is registered: install acrl's atari extra"):
        env_factory("ALE/Pong-v5")
    with pytest.raises(InputError, match=r"No \*NoFrameskip-v4 environment is registered: install acrl's atari"):
        env_factory("PongNoFrameskip-v4")
    assert main(["train", "ppo", "--env", "ALE/Pong-v5", "--run-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("acrl: error: ") and err.count("\n") == 1 and "pip install 'acrl[atari]'" in err, err


def test_bad_settings_and_unknown_ids_are_input_errors():
    with pytest.raises(InputError, match=r"repeat_action_probability .* in \[0, 1\]"):
        AtariSettings(repeat_action_probability=1.5)
    with pytest.raises(InputError, match="frame_skip=0"):
        AtariSettings(frame_skip=0)
    with pytest.raises(InputError, match="Did you mean ALE/Pong-v5"):
        make_vec_env("ALE/Pongg-v5", 2)
    with pytest.raises(InputError, match="one seed per environment"):
        AtariVecEnv("ALE/Pong-v5", 2).reset(seed=[1])


def test_noframeskip_v4_ids_are_the_same_game_without_sticky_actions():
    # ALE registers ALE/Pong-v5 with sticky actions 0.25, PongNoFrameskip-v4 (CleanRL's id) with none
    assert AtariSettings.of("ALE/Pong-v5") == AtariSettings()
    assert AtariSettings.of("PongNoFrameskip-v4") == AtariSettings(repeat_action_probability=0.0)
    for env_id, sticky in (("ALE/Pong-v5", 0.25), ("PongNoFrameskip-v4", 0.0)):
        env = env_factory(env_id)[0]()
        assert env.observation_space.shape == (4, 84, 84) and env.action_space.n == 6
        assert env.unwrapped.ale.getFloat("repeat_action_probability") == pytest.approx(sticky)
        env.close()
    vec = make_vec_env("PongNoFrameskip-v4", 2)
    assert isinstance(vec, AtariVecEnv) and vec.reset(seed=0)[0].shape == (2, 4, 84, 84)
    vec.close()
    assert preset_values("ppo", "PongNoFrameskip-v4", None) == preset_values("ppo", "ALE/Pong-v5", None)
    assert preset_values("a3c", "BreakoutNoFrameskip-v4", "original")[1] == "original"


def test_presets_match_glob_patterns_after_exact_ids():
    values, name = preset_values("ppo", "ALE/Breakout-v5", None)
    assert name == "default" and (values["n_envs"], values["n_steps"], values["clip_range"]) == (8, 128, 0.1)
    assert preset_values("ppo", "MinAtar/Breakout-v1", None)[0]["total_steps"] == 5_000_000  # exact, not ALE/*
    assert preset_values("ppo", "Pong-v4", None) == ({}, "")


def test_env_i_is_seeded_with_seed_plus_i_and_an_a3c_worker_builds_the_atari_env_from_its_spec():
    from acrl.parts.workers import make_worker_envs

    pair = [AtariVecEnv("ALE/Breakout-v5", 2) for _ in range(2)]
    for vec in pair:
        vec.reset(seed=5)
    one = AtariVecEnv("ALE/Breakout-v5", 1)
    one.reset(seed=6)
    actions = np.array([1, 1])
    for _ in range(40):  # noops and sticky actions drawn from seed + i: env 1 of seed 5 is env 0 of seed 6
        a, b, c = pair[0].step(actions)[0], pair[1].step(actions)[0], one.step(actions[:1])[0]
        assert np.array_equal(a, b) and np.array_equal(a[1], c[0])
    envs, obs = make_worker_envs(gym.spec("ALE/Pong-v5"), seed=0, rank=1, n_envs=2)  # what A3C's parent sends
    assert isinstance(envs, AtariVecEnv) and obs.shape == (2, 4, 84, 84)


def test_dqn_stores_each_atari_frame_once_and_samples_what_the_env_gave():
    from acrl import DQN
    from acrl.parts.buffers import FrameReplayBuffer

    agent = DQN(
        "ALE/Breakout-v5", buffer_size=1_000, start_steps=100, total_steps=1_000, epsilon_decay_steps=100, device="cpu"
    )
    assert agent.config.encoder == "nature" and agent.buffer.frame_stack == 4
    assert agent.buffer.nbytes == 1_000 * 84 * 84  # one frame per transition, not two stacks of 4
    # The training vector env, with games cut short (truncation and its reset) and lives lost
    # (terminated, the stack goes on): what it gives is what the buffer gives back.
    vec = AtariVecEnv("ALE/Breakout-v5", 2, AtariSettings(max_frames=400))
    buffer = FrameReplayBuffer(2_000, (4, 84, 84), np.uint8, n_envs=2, frame_stack=4)
    obs, _ = vec.reset(seed=0)
    rng, given = np.random.default_rng(0), {}
    for step in range(300):
        actions = rng.integers(0, vec.single_action_space.n, 2)
        nxt, rewards, terminated, truncated, info = vec.step(actions)
        real = nxt.copy()
        for i in np.flatnonzero(terminated | truncated):
            real[i] = info["final_obs"][i]
        ids = np.array([2 * step, 2 * step + 1])  # stored in place of the actions, to find the transitions again
        buffer.add(obs, ids, rewards, real, terminated, truncated)
        given |= {int(k): (obs[j], real[j], terminated[j]) for j, k in enumerate(ids)}
        obs = nxt
    assert buffer.written.max() < 330  # about one frame per step
    batch = buffer.sample(256, np.random.default_rng(1))
    for o, k, n, nd in zip(
        batch["observations"], batch["actions"], batch["next_observations"], batch["not_done"], strict=True
    ):
        want = given[int(k)]
        assert np.array_equal(o.numpy(), want[0]) and np.array_equal(n.numpy(), want[1]) and nd == 1 - want[2]


def test_sticky_actions_reach_training_a3c_workers_evaluation_and_videos_and_are_recorded(tmp_path, monkeypatch):
    """sticky_actions=0.1 on ALE/Pong-v5 (registered with 0.25): every env of the run has 0.1."""
    import acrl.core.evaluation
    from acrl.core.model_card import model_card
    from acrl.core.video import render_env
    from acrl.parts.workers import make_worker_envs, picklable_env

    tiny = {"n_envs": 2, "n_steps": 16, "batch_size": 16, "eval_episodes": 1, "normalize_obs": False}
    agent = PPO("ALE/Pong-v5", sticky_actions=0.1, **tiny)
    assert agent.config.sticky_actions == 0.1
    assert agent.envs.settings.repeat_action_probability == 0.1  # the training vector env (ALE's C++ one)
    workers, _ = make_worker_envs(picklable_env(agent.env), seed=0, rank=1)  # what A3C's parent sends a worker
    assert workers.settings.repeat_action_probability == 0.1
    built = []
    real_factory = acrl.core.evaluation.env_factory

    def factory(env):
        make, name = real_factory(env)
        return (lambda: built.append(make()) or built[-1]), name

    monkeypatch.setattr(acrl.core.evaluation, "env_factory", factory)
    monkeypatch.setattr(PPO, "predict", lambda self, obs, *args, **kwargs: 1)  # FIRE: Pong plays on, a point lost
    monkeypatch.setattr(acrl.core.evaluation.CheckFinite, "step", lambda self, action: (None, -21.0, True, False, {}))
    agent.evaluate()
    (evaluation,) = built
    assert evaluation.unwrapped.ale.getFloat("repeat_action_probability") == pytest.approx(0.1)
    assert render_env(agent.env).unwrapped.ale.getFloat("repeat_action_probability") == pytest.approx(0.1)
    agent.write_config(tmp_path)
    assert "sticky_actions: 0.1\n" in (tmp_path / "config.yaml").read_text()
    card = model_card(tmp_path, "ppo", agent.config)
    reproduce = next(line for line in card.splitlines() if line.startswith("acrl train"))
    assert "Sticky actions: 0.1 (" in card and " sticky_actions=0.1 " in reproduce
    # unset: the registration's probability, recorded as such
    assert PPO("PongNoFrameskip-v4", **tiny).config.sticky_actions == 0.0
    assert PPO("ALE/Pong-v5", **tiny).config.sticky_actions == 0.25


def test_with_sticky_actions_one_the_emulator_never_takes_the_agents_action():
    """ALE's vector env built from the run's spec: at probability 1 every frame repeats the previous
    action (NOOP after the reset), so pressing UP gives NOOP's frames; at 0 the paddle moves."""
    from acrl.core.envs import with_sticky_actions

    def frames(sticky, action):
        vec = make_vec_env(with_sticky_actions("ALE/Pong-v5", sticky)[0], 1)
        obs = [vec.reset(seed=0)[0]] + [vec.step(np.array([action]))[0] for _ in range(40)]
        vec.close()
        return np.stack(obs)

    assert np.array_equal(frames(1.0, 2), frames(1.0, 0))
    assert not np.array_equal(frames(0.0, 2), frames(0.0, 0))


def test_sticky_actions_are_refused_outside_atari_and_outside_0_1_before_anything_is_built():
    from acrl.core.envs import with_sticky_actions

    with pytest.raises(InputError, match=r"sticky_actions=0.1 .*; CartPole-v1 is not an Atari \(ALE\) game"):
        PPO("CartPole-v1", sticky_actions=0.1)
    with pytest.raises(InputError, match=r"sticky_actions is a probability in \[0, 1\] .* got 1.5"):
        PPO("ALE/Pong-v5", sticky_actions=1.5)
    with pytest.raises(InputError, match="an env instance or factory has its own"):
        with_sticky_actions(lambda: gym.make("CartPole-v1"), 0.0)
    assert with_sticky_actions("CartPole-v1", None) == ("CartPole-v1", None)
