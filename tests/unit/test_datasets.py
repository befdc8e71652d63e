"""Tests for acrl.parts.datasets: HDF5 round trip, schema errors, Minari import, collection."""

import sys

import gymnasium as gym
import h5py
import numpy as np
import pytest

from acrl import __version__
from acrl.core.errors import InputError
from acrl.parts.datasets import (
    D4RL_KEYS,
    OfflineDataset,
    collect_transitions,
    load_dataset,
    load_minari,
    save_dataset,
)
from tests.conftest import Frames

PENDULUM_OBS = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
PENDULUM_ACT = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)


def make_dataset(n=10, obs_dim=3, act_dim=1):
    """A small Pendulum-shaped dataset with a terminal at row 2 and a timeout at row 4."""
    rng = np.random.default_rng(0)
    terminals = np.zeros(n, dtype=bool)
    timeouts = np.zeros(n, dtype=bool)
    terminals[2] = True
    timeouts[4] = True
    return OfflineDataset(
        observations=rng.normal(size=(n, obs_dim)).astype(np.float32),
        actions=rng.uniform(-2, 2, size=(n, act_dim)).astype(np.float32),
        rewards=rng.normal(size=n).astype(np.float32),
        next_observations=rng.normal(size=(n, obs_dim)).astype(np.float32),
        terminals=terminals,
        timeouts=timeouts,
        attrs={
            "env_id": "Pendulum-v1",
            "kind": "imperfect",
            "behavioral_policy": "ddpg",
            "seed": 3,
            "acrl_version": __version__,
        },
    )


def write_raw(path, arrays, attrs=None):
    """Write arrays to HDF5 as-is, bypassing save_dataset's checks."""
    with h5py.File(path, "w") as f:
        for key, value in arrays.items():
            f.create_dataset(key, data=value)
        for key, value in (attrs or {}).items():
            f.attrs[key] = value


def raw_arrays(dataset):
    return {key: getattr(dataset, key).copy() for key in D4RL_KEYS}


# --- HDF5 round trip ----------------------------------------------------------------------


def test_round_trip_keeps_arrays_attrs_terminals_and_timeouts(tmp_path):
    ds = make_dataset()
    path = tmp_path / "pendulum.hdf5"
    save_dataset(path, ds)
    back = load_dataset(path, PENDULUM_OBS, PENDULUM_ACT)
    for key in D4RL_KEYS:
        assert np.array_equal(getattr(back, key), getattr(ds, key)), key
        assert getattr(back, key).dtype == getattr(ds, key).dtype, key
    assert back.attrs == ds.attrs
    assert len(back) == 10
    assert np.flatnonzero(back.terminals).tolist() == [2]
    assert np.flatnonzero(back.timeouts).tolist() == [4]
    with h5py.File(path, "r") as f:  # D4RL layout on disk
        assert f["terminals"].dtype == bool and f["timeouts"].dtype == bool
        assert f["observations"].dtype == np.float32 and f["actions"].dtype == np.float32


def test_round_trip_discrete_actions_are_int64(tmp_path):
    ds = make_dataset(obs_dim=4)
    ds.actions = np.array([0, 1] * 5, dtype=np.int64)
    save_dataset(tmp_path / "d.hdf5", ds)
    cartpole = gym.make("CartPole-v1")
    back = load_dataset(tmp_path / "d.hdf5", cartpole.observation_space, cartpole.action_space)
    assert back.actions.dtype == np.int64
    assert np.array_equal(back.actions, ds.actions)


def test_frames_keep_their_dtype_on_disk_and_back_and_float_frames_are_refused(tmp_path):
    """MinAtar-like bool frames (10, 10, 4) round-trip as bool, LZF-compressed; float32 frames are refused
    (a float copy of a frame is what acrl never keeps), and so are frames for another environment."""
    rng = np.random.default_rng(0)
    frames = rng.random((6, 10, 10, 4)) < 0.1
    ds = make_dataset(n=5)
    ds.observations, ds.next_observations = frames[:5], frames[1:]
    ds.actions = np.array([0, 1, 2, 1, 0])
    save_dataset(tmp_path / "f.h5", ds)
    space = gym.spaces.Box(0, 1, (10, 10, 4), bool)
    back = load_dataset(tmp_path / "f.h5", space, gym.spaces.Discrete(3))
    assert back.observations.dtype == back.next_observations.dtype == np.bool_
    assert np.array_equal(back.observations, frames[:5]) and np.array_equal(back.next_observations, frames[1:])
    with h5py.File(tmp_path / "f.h5", "r") as f:
        assert f["observations"].compression == "lzf" and f["rewards"].compression is None
    with pytest.raises(
        InputError, match=r"are \(10, 10, 4\) bool but the environment's observation space is \(10, 10, 3\)"
    ):
        load_dataset(tmp_path / "f.h5", gym.spaces.Box(0, 1, (10, 10, 3), bool))
    with pytest.raises(InputError, match="are frames .* but the environment's observations are vectors"):
        load_dataset(tmp_path / "f.h5", PENDULUM_OBS)
    ds.observations = frames[:5].astype(np.float32)
    with pytest.raises(InputError, match=r"'observations' are image frames \(10, 10, 4\) and must be uint8 or bool"):
        ds.validate()


def test_collect_keeps_frames_uint8_and_the_final_frame_at_the_time_limit():
    seen = []
    ds = collect_transitions(Frames(), lambda obs: seen.append(obs.dtype) or 1, 25, seed=0)
    assert set(seen) == {np.dtype(np.uint8)}  # the policy gets the frame as the env gave it
    assert ds.observations.shape == (25, 12, 12, 3) and ds.observations.dtype == np.uint8
    assert np.flatnonzero(ds.timeouts).tolist() == [9, 19] and not ds.terminals.any()
    inside = ~ds.timeouts[:-1]
    assert np.array_equal(ds.next_observations[:-1][inside], ds.observations[1:][inside])
    assert not np.array_equal(ds.next_observations[9], ds.observations[10])  # the reset frame is not s'


def test_atomic_write_leaves_only_the_file(tmp_path):
    path = tmp_path / "sub" / "data.hdf5"
    save_dataset(path, make_dataset())
    save_dataset(path, make_dataset(n=5))  # overwrite in place
    assert [p.name for p in path.parent.iterdir()] == ["data.hdf5"]
    assert len(load_dataset(path)) == 5


def test_failed_save_writes_nothing(tmp_path):
    bad = make_dataset()
    bad.rewards[3] = np.nan
    with pytest.raises(InputError, match="'rewards' row 3"):
        save_dataset(tmp_path / "bad.hdf5", bad)
    assert list(tmp_path.iterdir()) == []


def test_loads_d4rl_style_file_without_attrs(tmp_path):
    arrays = raw_arrays(make_dataset())
    arrays["terminals"] = arrays["terminals"].astype(np.float32)  # 0/1 floats
    arrays["rewards"] = arrays["rewards"].astype(np.float64)[:, None]  # (N, 1) float64
    arrays["infos/qpos"] = np.zeros((10, 2))  # extra D4RL group is ignored
    write_raw(tmp_path / "d4rl.hdf5", arrays)
    back = load_dataset(tmp_path / "d4rl.hdf5", PENDULUM_OBS, PENDULUM_ACT)
    assert back.attrs == {}
    assert back.terminals.dtype == bool and np.flatnonzero(back.terminals).tolist() == [2]
    assert back.rewards.shape == (10,) and back.rewards.dtype == np.float32


# --- schema faults ------------------------------------------------------------------------


def test_missing_key(tmp_path):
    arrays = raw_arrays(make_dataset())
    del arrays["rewards"]
    write_raw(tmp_path / "x.hdf5", arrays)
    with pytest.raises(InputError, match="'rewards' is missing"):
        load_dataset(tmp_path / "x.hdf5")


def test_missing_next_observations_says_it_is_required(tmp_path):
    arrays = raw_arrays(make_dataset())
    del arrays["next_observations"]
    write_raw(tmp_path / "x.hdf5", arrays)
    with pytest.raises(InputError, match="'next_observations' is missing.*not supported"):
        load_dataset(tmp_path / "x.hdf5")


def test_mismatched_lengths_name_key_and_both_lengths(tmp_path):
    arrays = raw_arrays(make_dataset())
    arrays["timeouts"] = arrays["timeouts"][:9]
    write_raw(tmp_path / "x.hdf5", arrays)
    with pytest.raises(InputError, match="'timeouts' has 9 rows but 'observations' has 10"):
        load_dataset(tmp_path / "x.hdf5")


def test_nan_in_rewards_names_row_3(tmp_path):
    arrays = raw_arrays(make_dataset())
    arrays["rewards"][3] = np.nan
    arrays["rewards"][7] = np.nan
    write_raw(tmp_path / "x.hdf5", arrays)
    with pytest.raises(InputError, match=r"'rewards' row 3 holds a non-finite value \(nan\)"):
        load_dataset(tmp_path / "x.hdf5")


def test_inf_in_observations_names_row(tmp_path):
    arrays = raw_arrays(make_dataset())
    arrays["next_observations"][5, 1] = np.inf
    write_raw(tmp_path / "x.hdf5", arrays)
    with pytest.raises(InputError, match="'next_observations' row 5"):
        load_dataset(tmp_path / "x.hdf5")


def test_action_outside_bounds_names_row_and_value(tmp_path):
    arrays = raw_arrays(make_dataset())
    arrays["actions"][6, 0] = 2.5
    write_raw(tmp_path / "x.hdf5", arrays)
    load_dataset(tmp_path / "x.hdf5")  # no action space given: no bounds check
    with pytest.raises(InputError, match=r"'actions' row 6, dimension 0 is 2.5.*\[-2.0, 2.0\]"):
        load_dataset(tmp_path / "x.hdf5", action_space=PENDULUM_ACT)


def test_action_within_tolerance_is_accepted(tmp_path):
    arrays = raw_arrays(make_dataset())
    arrays["actions"][6, 0] = np.float32(2.0 + 5e-7)
    write_raw(tmp_path / "x.hdf5", arrays)
    load_dataset(tmp_path / "x.hdf5", action_space=PENDULUM_ACT)


def test_pendulum_file_against_cartpole_spaces(tmp_path):
    save_dataset(tmp_path / "pendulum.hdf5", make_dataset())
    cartpole = gym.make("CartPole-v1")
    wrong_size = r"'observations' have 3 values.*shape \(4,\).*Pendulum-v1"
    with pytest.raises(InputError, match=wrong_size):
        load_dataset(tmp_path / "pendulum.hdf5", observation_space=cartpole.observation_space)
    with pytest.raises(InputError, match="'actions' row 0 is .*not an integer"):
        load_dataset(tmp_path / "pendulum.hdf5", action_space=cartpole.action_space)


def test_discrete_action_out_of_range_names_row(tmp_path):
    arrays = raw_arrays(make_dataset(obs_dim=4))
    arrays["actions"] = np.array([0, 1, 1, 0, 2, 0, 1, 0, 1, 0], dtype=np.int64)
    write_raw(tmp_path / "x.hdf5", arrays)
    with pytest.raises(InputError, match=r"'actions' row 4 is 2, outside .* \[0, 1\]"):
        load_dataset(tmp_path / "x.hdf5", action_space=gym.spaces.Discrete(2))


def test_discrete_action_non_integer_names_row(tmp_path):
    arrays = raw_arrays(make_dataset(obs_dim=4))
    arrays["actions"] = np.array([0, 1, 0.5, 0, 1, 0, 1, 0, 1, 0], dtype=np.float32)
    write_raw(tmp_path / "x.hdf5", arrays)
    with pytest.raises(InputError, match="'actions' row 2 is 0.5, not an integer"):
        load_dataset(tmp_path / "x.hdf5", action_space=gym.spaces.Discrete(2))
    arrays["actions"][2] = 1.0  # integer-valued floats are fine and become int64
    write_raw(tmp_path / "x.hdf5", arrays)
    back = load_dataset(tmp_path / "x.hdf5", action_space=gym.spaces.Discrete(2))
    assert back.actions.dtype == np.int64 and back.actions[2] == 1


def test_terminals_that_are_not_flags_name_row(tmp_path):
    arrays = raw_arrays(make_dataset())
    arrays["terminals"] = arrays["terminals"].astype(np.float32)
    arrays["terminals"][8] = 0.5
    write_raw(tmp_path / "x.hdf5", arrays)
    with pytest.raises(InputError, match="'terminals' row 8 is 0.5"):
        load_dataset(tmp_path / "x.hdf5")


def test_missing_file_suggests_acrl_collect(tmp_path):
    with pytest.raises(InputError, match="does not exist.*acrl collect"):
        load_dataset(tmp_path / "nope.hdf5")


def test_garbage_bytes_are_not_hdf5(tmp_path):
    (tmp_path / "x.hdf5").write_bytes(b"this is not an hdf5 file\x00\x01" * 20)
    with pytest.raises(InputError, match="not a readable HDF5 file"):
        load_dataset(tmp_path / "x.hdf5")


def test_truncated_file_is_an_input_error(tmp_path):
    save_dataset(tmp_path / "full.hdf5", make_dataset(n=200))
    data = (tmp_path / "full.hdf5").read_bytes()
    (tmp_path / "cut.hdf5").write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="HDF5"):
        load_dataset(tmp_path / "cut.hdf5")


# --- collect_transitions ------------------------------------------------------------------


def sine_policy(obs):
    """A deterministic Pendulum policy in env units, inside [-2, 2]."""
    return np.array([1.5 * np.sin(3.0 * obs[0] + obs[2])], dtype=np.float32)


def test_collect_pendulum_timeouts_and_final_observations():
    ds = collect_transitions(gym.make("Pendulum-v1"), sine_policy, steps=250, seed=0)
    assert len(ds) == 250
    assert ds.observations.shape == (250, 3) and ds.observations.dtype == np.float32
    assert ds.actions.shape == (250, 1) and ds.actions.dtype == np.float32
    assert not ds.terminals.any()
    assert np.flatnonzero(ds.timeouts).tolist() == [199]
    # at the time limit, next_observations is the true final observation, not the reset one
    assert not np.array_equal(ds.next_observations[199], ds.observations[200])
    inside = np.arange(249) != 199
    assert np.array_equal(ds.next_observations[:-1][inside], ds.observations[1:][inside])
    # no noise, no random actions: exactly the policy's actions
    expected = np.stack([sine_policy(o) for o in ds.observations])
    assert np.array_equal(ds.actions, expected)
    assert ds.attrs["env_id"] == "Pendulum-v1" and ds.attrs["seed"] == 0
    ds.validate(PENDULUM_OBS, PENDULUM_ACT)


def test_collect_is_reproducible_with_a_seed():
    a = collect_transitions(gym.make("Pendulum-v1"), sine_policy, 50, seed=4, noise_std=0.3, random_prob=0.3)
    b = collect_transitions(gym.make("Pendulum-v1"), sine_policy, 50, seed=4, noise_std=0.3, random_prob=0.3)
    for key in D4RL_KEYS:
        assert np.array_equal(getattr(a, key), getattr(b, key)), key


def test_random_prob_one_spreads_actions_over_the_box():
    ds = collect_transitions(gym.make("Pendulum-v1"), lambda o: np.zeros(1), 250, seed=1, random_prob=1.0)
    assert ds.actions.std() > 0.5  # uniform on [-2, 2] has std 1.15
    assert ds.actions.min() >= -2.0 and ds.actions.max() <= 2.0


def test_noise_std_is_a_fraction_of_high_and_actions_are_clipped():
    ds = collect_transitions(gym.make("Pendulum-v1"), lambda o: np.zeros(1), 250, seed=2, noise_std=0.3)
    assert 0.5 < ds.actions.std() < 0.7  # 0.3 * high = 0.6
    near_edge = collect_transitions(gym.make("Pendulum-v1"), lambda o: np.full(1, 1.9), 100, seed=2, noise_std=0.3)
    assert near_edge.actions.max() == 2.0 and near_edge.actions.min() >= -2.0


def test_collect_cartpole_marks_terminations_not_timeouts(tmp_path):
    env = gym.make("CartPole-v1")
    ds = collect_transitions(env, lambda o: 0, 100, seed=0, random_prob=1.0)
    assert ds.actions.dtype == np.int64 and set(ds.actions.tolist()) == {0, 1}
    assert ds.terminals.sum() >= 2  # random CartPole episodes fall over within 100 steps
    assert not ds.timeouts.any()
    end = np.flatnonzero(ds.terminals)[0]
    assert not np.array_equal(ds.next_observations[end], ds.observations[end + 1])
    save_dataset(tmp_path / "c.hdf5", ds)
    back = load_dataset(tmp_path / "c.hdf5", env.observation_space, env.action_space)
    assert np.array_equal(back.terminals, ds.terminals)


def test_collect_rejects_bad_arguments():
    with pytest.raises(InputError, match="noise_std applies to Box"):
        collect_transitions(gym.make("CartPole-v1"), lambda o: 0, 10, seed=0, noise_std=0.1)
    with pytest.raises(InputError, match="random_prob must be in"):
        collect_transitions(gym.make("Pendulum-v1"), sine_policy, 10, seed=0, random_prob=1.5)
    with pytest.raises(InputError, match="shape"):
        collect_transitions(gym.make("Pendulum-v1"), lambda o: np.zeros(2), 10, seed=0)


# --- Minari -------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::UserWarning")  # minari asks for author, permalink, ...
def test_load_minari_local_dataset(tmp_path, monkeypatch):
    minari = pytest.importorskip("minari")
    from minari.data_collector import EpisodeBuffer

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    rng = np.random.default_rng(0)

    def episode(length, terminated):
        obs = rng.normal(size=(length + 1, 3)).astype(np.float32)
        return EpisodeBuffer(
            observations=list(obs),
            actions=list(rng.uniform(-2, 2, size=(length, 1)).astype(np.float32)),
            rewards=list(rng.normal(size=length)),
            terminations=[False] * (length - 1) + [terminated],
            truncations=[False] * (length - 1) + [not terminated],
        )

    episodes = [episode(4, terminated=True), episode(3, terminated=False)]
    minari.create_dataset_from_buffers("acrl/pendulum/tiny-v0", episodes, env="Pendulum-v1", algorithm_name="random")
    for source in ("acrl/pendulum/tiny-v0", tmp_path / "acrl" / "pendulum" / "tiny-v0"):
        ds = load_minari(source)
        assert len(ds) == 7
        assert np.flatnonzero(ds.terminals).tolist() == [3]
        assert np.flatnonzero(ds.timeouts).tolist() == [6]
        assert np.array_equal(ds.observations[:4], np.stack(episodes[0].observations[:4]))
        assert np.array_equal(ds.next_observations[3], episodes[0].observations[4])
        assert ds.actions.shape == (7, 1) and ds.actions.dtype == np.float32
        assert ds.attrs["env_id"] == "Pendulum-v1" and ds.attrs["behavioral_policy"] == "random"
    with pytest.raises(InputError, match="not stored locally"):
        load_minari("acrl/pendulum/absent-v0")


def test_load_minari_without_minari_says_pip_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "minari", None)
    with pytest.raises(InputError, match="pip install minari"):
        load_minari("D4RL/pen/human-v2")


# --- asymmetric bounds and datasets without env_id -------------------------------------------


class ZeroToTwo(gym.Env):
    """Box(0, 2) actions: centre 1, half-range 1 (max_action, high, would be 2)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Box(0.0, 2.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 0.0, False, False, {}


def test_noise_std_is_a_fraction_of_the_half_range_on_an_asymmetric_box():
    ds = collect_transitions(ZeroToTwo(), lambda o: np.ones(1), 50, seed=5, noise_std=0.3)
    # a = clip(1 + 0.3 * half-range * z, 0, 2), half-range (2 - 0) / 2 = 1, z the seed's standard normals
    z = np.random.default_rng(5).standard_normal((50, 1))
    np.testing.assert_allclose(ds.actions, np.clip(1.0 + 0.3 * z, 0.0, 2.0), rtol=1e-6)


def test_dataset_without_env_id_asks_for_the_environment(tmp_path, capsys):
    from acrl import BCQ
    from acrl.cli import main
    from acrl.parts.datasets import dataset_env_id

    rng = np.random.default_rng(0)
    n = 10  # Hopper's shapes: 11 observations, 3 actions in [-1, 1]
    hopper_like = OfflineDataset(
        rng.normal(size=(n, 11)).astype(np.float32),
        rng.uniform(-1, 1, (n, 3)).astype(np.float32),
        np.zeros(n, np.float32),
        rng.normal(size=(n, 11)).astype(np.float32),
        np.zeros(n, bool),
        np.zeros(n, bool),
    )
    path = tmp_path / "hopper_like.h5"
    save_dataset(path, hopper_like)
    with pytest.raises(InputError, match="has no env_id attribute.*--env ENV_ID on the command line, env="):
        dataset_env_id(path)
    with pytest.raises(InputError, match="has no env_id attribute"):
        BCQ(dataset=str(path))
    assert main(["train", "bcq", "--dataset", str(path), "--run-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "has no env_id attribute" in err and "--env ENV_ID" in err and "Pendulum" not in err
    assert not (tmp_path / "run").exists()
    custom = tmp_path / "custom.h5"
    save_dataset(custom, OfflineDataset(**{k: getattr(hopper_like, k) for k in D4RL_KEYS}, attrs={"env_id": "Mine-v0"}))
    with pytest.raises(InputError, match="collected on 'Mine-v0', not a registered id"):
        dataset_env_id(custom)
