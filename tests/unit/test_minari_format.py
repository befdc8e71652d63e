"""acrl.parts.minari_format: a dataset written as Minari reads back equal to the HDF5 one, and trains the same."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from acrl.cli import main
from acrl.core.errors import InputError
from acrl.parts.datasets import (
    D4RL_KEYS,
    OfflineDataset,
    collect_transitions,
    dataset_attrs,
    dataset_env_id,
    load_dataset,
    save_dataset,
)
from acrl.parts.minari_format import episode_ends, save_minari

minari = pytest.importorskip("minari")


def sine_policy(obs: np.ndarray) -> np.ndarray:
    return np.array([1.5 * np.sin(3.0 * obs[0] + obs[2])], dtype=np.float32)


def pendulum(steps=450, seed=0) -> OfflineDataset:
    """Pendulum transitions (timeouts at rows 199 and 399, the last episode cut at the end) with noise."""
    data = collect_transitions(gym.make("Pendulum-v1"), sine_policy, steps, seed=seed, noise_std=0.3, kind="medium")
    data.attrs |= {"random_return": -1200.5, "expert_return": -150.0, "recipe": "a sine policy with noise"}
    return data


def joined(a: OfflineDataset, b: OfflineDataset) -> OfflineDataset:
    """`a`'s rows then `b`'s, with `a`'s attributes (a medium-expert dataset's shape)."""
    return OfflineDataset(**{k: np.concatenate([getattr(a, k), getattr(b, k)]) for k in D4RL_KEYS}, attrs=a.attrs)


def assert_same(a: OfflineDataset, b: OfflineDataset) -> None:
    for key in D4RL_KEYS:
        x, y = getattr(a, key), getattr(b, key)
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), key


def test_episode_ends_at_flags_at_breaks_and_at_the_last_row():
    data = joined(pendulum(250, seed=0), pendulum(100, seed=1))
    # 199: the time limit; 249: the first collection's last row, which the second does not continue; 349: the end
    assert episode_ends(data).tolist() == [199, 249, 349]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_dataset_written_as_minari_reads_back_as_the_hdf5_one(tmp_path):
    data = joined(pendulum(), pendulum(120, seed=1))
    save_dataset(tmp_path / "d.h5", data)
    save_minari(tmp_path / "d", data)
    env = gym.make("Pendulum-v1")
    from_hdf5 = load_dataset(tmp_path / "d.h5", env.observation_space, env.action_space)
    from_minari = load_dataset(tmp_path / "d", env.observation_space, env.action_space)
    assert_same(from_minari, from_hdf5)
    assert {k: from_minari.attrs[k] for k in data.attrs} == data.attrs  # attributes too
    assert from_minari.attrs["minari_id"] == "acrl/pendulum/medium-v0"
    assert dataset_attrs(tmp_path / "d")["kind"] == "medium" and dataset_env_id(tmp_path / "d") == "Pendulum-v1"
    # Minari's own reader: 450 + 120 steps in 5 episodes (199 | 399 | 449 cut | 120-step collection),
    # and its normalised score from the stored references: (-675.25 + 1200.5) / (-150 + 1200.5) = 0.5
    stored = minari.MinariDataset(tmp_path / "d" / "data")
    assert (stored.total_steps, stored.total_episodes) == (570, 4)
    assert minari.get_normalized_score(stored, np.array([-675.25])) == pytest.approx(0.5)
    assert [p.name for p in tmp_path.iterdir()].count(".d.tmp") == 0


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_discrete_terminals_round_trip(tmp_path):
    data = collect_transitions(gym.make("CartPole-v1"), lambda o: 0, 100, seed=0, random_prob=1.0, kind="random")
    assert data.terminals.sum() >= 2
    save_minari(tmp_path / "c", data)
    back = load_dataset(tmp_path / "c", action_space=gym.spaces.Discrete(2))
    assert_same(back, data)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_bc_trains_to_the_same_parameters_from_either_format(tmp_path):
    data = pendulum()
    save_dataset(tmp_path / "d.h5", data)
    save_minari(tmp_path / "d", data)
    from acrl.algos.bc import BC

    params = []
    for path in (tmp_path / "d.h5", tmp_path / "d"):
        agent = BC(dataset=str(path), hidden_sizes=[16], batch_size=32, seed=3, eval_freq=0, iteration_steps=25)
        agent.learn(total_steps=50, progress=False)
        params.append([p.detach().clone() for p in agent.actor.parameters()])
    initial = BC(dataset=str(tmp_path / "d.h5"), hidden_sizes=[16], seed=3).actor.parameters()
    assert any(not torch.equal(p, q) for p, q in zip(params[0], initial, strict=True))  # the updates moved them
    assert all(torch.equal(p, q) for p, q in zip(*params, strict=True))


def test_a_directory_that_is_no_minari_dataset_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="not a Minari dataset directory .* nor an acrl HDF5 file"):
        load_dataset(tmp_path / "empty")
    with pytest.raises(InputError, match="not a Minari dataset directory"):
        dataset_attrs(tmp_path / "empty")
    assert main(["train", "bc", "--dataset", str(tmp_path / "empty"), "--run-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("acrl: error: ") and err.count("\n") == 1 and "not a Minari dataset directory" in err
    assert not (tmp_path / "run").exists()
    (tmp_path / "x.h5").write_text("not hdf5")
    with pytest.raises(InputError, match="acrl HDF5 file .* or a Minari dataset directory"):
        dataset_attrs(tmp_path / "x.h5")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_writing_is_atomic_and_never_over_a_dataset(tmp_path, monkeypatch):
    data = pendulum(50)
    from minari.dataset._storages.hdf5_storage import HDF5Storage

    def fail(self, episodes):
        raise OSError("disk full")

    monkeypatch.setattr(HDF5Storage, "update_episodes", fail)
    with pytest.raises(OSError, match="disk full"):
        save_minari(tmp_path / "d", data)
    assert list(tmp_path.iterdir()) == []  # neither d nor .d.tmp
    monkeypatch.undo()
    save_minari(tmp_path / "d", data)
    with pytest.raises(InputError, match="already exists"):
        save_minari(tmp_path / "d", data)
    frames = OfflineDataset(
        np.zeros((3, 4, 4, 1), np.uint8), np.zeros(3, np.int64), np.zeros(3, np.float32),
        np.zeros((3, 4, 4, 1), np.uint8), np.zeros(3, bool), np.zeros(3, bool),
    )  # fmt: skip
    with pytest.raises(InputError, match="image frames .*--format hdf5"):
        save_minari(tmp_path / "f", frames, gym.spaces.Box(0, 255, (4, 4, 1), np.uint8), gym.spaces.Discrete(2))
