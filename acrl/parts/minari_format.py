"""Minari datasets both ways: read one stored on this machine, write an `OfflineDataset` as one.

Minari (Farama Foundation, https://minari.farama.org, the successor of D4RL) stores episodes: each
episode's T+1 observations and its T actions, rewards, terminations and truncations, in a dataset
directory's `data/` (main_data.hdf5 and metadata.json). acrl's datasets are flat tables of
transitions with D4RL's keys (`acrl.parts.datasets.OfflineDataset`). The two map onto each other
exactly: an episode's observations are its rows' observations followed by its last row's
next_observation; terminations are terminals and truncations timeouts (docs/correctness.md item 1).

A dataset acrl writes keeps its attributes (kind, the policies' returns, how it was made) under
the metadata key "acrl", and its random and expert returns, when it has both, as Minari's
`ref_min_score` and `ref_max_score` (`minari.get_normalized_score` reads those), so reading it back
gives the dataset that was written, attributes included. A `--dataset PATH` that is a directory is
read as one (`acrl.parts.datasets.load_dataset`), so a Minari download trains as an HDF5 file does.

This module works on the arrays; `acrl.parts.datasets` builds on it (`load_minari`, the schema's checks).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from acrl.core.errors import InputError
from acrl.core.files import atomic_path
from acrl.core.version import __version__

KEYS = ("observations", "actions", "rewards", "next_observations", "terminals", "timeouts")
"""The transition arrays, D4RL's keys (`acrl.parts.datasets.D4RL_KEYS`)."""

METADATA_FILE = "metadata.json"
"""The file in a Minari dataset's data/ directory that holds its spaces, env spec and metadata."""


def minari_data_dir(path: str | os.PathLike) -> Path | None:
    """The `data/` directory of the Minari dataset at `path` (the dataset directory that holds
    data/metadata.json, or data/ itself), or None when `path` is not one."""
    path = Path(path)
    for data in (path / "data", path):
        if (data / METADATA_FILE).is_file():
            return data
    return None


def minari_attrs(path: str | os.PathLike) -> dict[str, Any]:
    """The attributes of the Minari dataset at `path`, read from its metadata.json alone (no episode is
    read, minari is not imported): env_id (of its env spec), kind, behavioral_policy, and those
    acrl wrote (`save_minari`).

    Raises:
        InputError: `path` is not a Minari dataset directory, or its metadata.json is not JSON.
    """
    data = minari_data_dir(path)
    if data is None:
        raise InputError(_not_a_dataset(path))
    try:
        metadata = json.loads((data / METADATA_FILE).read_text())
    except (OSError, ValueError) as err:
        raise InputError(f"{data / METADATA_FILE}: not readable JSON ({err}); the Minari dataset is damaged") from None
    return _attrs(metadata)


def _attrs(metadata: dict[str, Any]) -> dict[str, Any]:
    """acrl attributes from a Minari metadata dict (see `minari_attrs`)."""
    env_spec = metadata.get("env_spec")
    attrs = {
        "env_id": json.loads(env_spec).get("id") if isinstance(env_spec, str) else None,
        "kind": "minari",
        "behavioral_policy": metadata.get("algorithm_name"),
        "minari_id": metadata.get("dataset_id"),
        "random_return": metadata.get("ref_min_score"),
        "expert_return": metadata.get("ref_max_score"),
    }
    attrs |= metadata.get("acrl", {})
    return {key: value for key, value in attrs.items() if value is not None}


def _not_a_dataset(path: str | os.PathLike) -> str:
    return (
        f"'{path}' is not a Minari dataset directory (one holding data/{METADATA_FILE} and data/main_data.hdf5) "
        "nor an acrl HDF5 file; pass the path of one (`acrl collect --format minari` writes Minari datasets)"
    )


def read_minari(
    dataset_id_or_path: str | os.PathLike,
) -> tuple[dict[str, np.ndarray], dict[str, Any], gym.Space, gym.Space]:
    """The transitions of a Minari dataset stored on this machine (never downloads), as arrays.

    `dataset_id_or_path` is a Minari id such as "D4RL/pen/human-v2" (looked up under
    $MINARI_DATASETS_PATH, default ~/.minari/datasets) or the path of a dataset directory (the
    one holding `data/`, or `data/` itself). Each episode's T+1 observations become T rows of
    observations (the first T) and next_observations (the last T); terminals come from
    `terminations` and timeouts from `truncations`.

    Returns:
        (arrays, attrs, observation_space, action_space): arrays by `KEYS`, N rows each: observations
        and next_observations (N, obs_dim) float32, actions (N, act_dim) float32 or (N,) int64 for a
        Discrete space, rewards (N,) float32, terminals and timeouts (N,) bool; attrs: acrl_version,
        then `minari_attrs`'s; the dataset's own spaces.
    Raises:
        InputError: minari is not installed; a path that exists but is not a Minari dataset; a dataset
            not stored locally or not readable; spaces other than flat Box observations with Box or
            Discrete actions; no episodes.
    """
    try:
        import minari
    except ImportError as err:
        raise InputError("loading Minari datasets needs the minari package: `pip install minari`") from err
    data_dir = minari_data_dir(dataset_id_or_path)
    if data_dir is None and Path(dataset_id_or_path).exists():
        raise InputError(_not_a_dataset(dataset_id_or_path))
    try:
        if data_dir is not None:
            data = minari.MinariDataset(data_dir)
        else:
            data = minari.load_dataset(str(dataset_id_or_path), download=False)
    except FileNotFoundError as err:
        raise InputError(
            f"Minari dataset '{dataset_id_or_path}' is not stored locally ({err}); acrl does "
            f"not download: run `minari download {dataset_id_or_path}` where there is network, "
            f"or set MINARI_DATASETS_PATH to the folder that holds it"
        ) from err
    except (OSError, ValueError, KeyError) as err:
        raise InputError(f"cannot read Minari dataset '{dataset_id_or_path}': {err}") from err
    obs_space = data.observation_space
    act_space = data.action_space
    if not isinstance(obs_space, gym.spaces.Box) or len(obs_space.shape) != 1:
        raise InputError(f"'{dataset_id_or_path}': only flat Box observations are supported, got {obs_space}")
    if not isinstance(act_space, (gym.spaces.Box, gym.spaces.Discrete)):
        raise InputError(f"'{dataset_id_or_path}': only Box or Discrete actions are supported, got {act_space}")
    parts: dict[str, list[np.ndarray]] = {key: [] for key in KEYS}
    for episode in data.iterate_episodes():
        obs = np.asarray(episode.observations, dtype=np.float32)
        parts["observations"].append(obs[:-1])
        parts["next_observations"].append(obs[1:])
        parts["actions"].append(np.asarray(episode.actions))
        parts["rewards"].append(np.asarray(episode.rewards, dtype=np.float32))
        parts["terminals"].append(np.asarray(episode.terminations, dtype=bool))
        parts["timeouts"].append(np.asarray(episode.truncations, dtype=bool))
    if not parts["rewards"]:
        raise InputError(f"Minari dataset '{dataset_id_or_path}' has no episodes")
    arrays = {key: np.concatenate(parts[key]) for key in KEYS}
    if isinstance(act_space, gym.spaces.Discrete):
        arrays["actions"] = arrays["actions"].astype(np.int64).reshape(-1)
    else:
        n = len(arrays["rewards"])
        arrays["actions"] = arrays["actions"].astype(np.float32).reshape(n, -1)
    attrs = {"acrl_version": __version__} | _attrs(data.storage.metadata)
    return arrays, attrs, obs_space, act_space


def episode_ends(dataset: Any) -> np.ndarray:
    """The rows that end an episode of `dataset`, as Minari cuts it: (E,) int64 indices, ascending.

    A row ends an episode where it is terminal or a timeout, where the next row does not continue it
    (its observation is not this row's next_observation: a dataset that joins two collections, or a
    replay buffer's last transition before another run's), and at the last row. An episode cut by the
    last two has neither flag, as in the flat table.
    """
    n = len(dataset)
    broken = np.zeros(n, dtype=bool)
    if n > 1:
        same = dataset.next_observations[:-1] == dataset.observations[1:]
        broken[:-1] = ~same.reshape(n - 1, -1).all(axis=1)
    broken[-1] = True
    return np.flatnonzero(dataset.terminals | dataset.timeouts | broken)


def save_minari(
    path: str | os.PathLike,
    dataset: Any,
    observation_space: gym.Space | None = None,
    action_space: gym.Space | None = None,
) -> None:
    """Write `dataset` (an `acrl.parts.datasets.OfflineDataset`) as a Minari dataset in the new directory
    `path` (its data/ holds main_data.hdf5 and metadata.json), atomically: a directory written beside it
    and renamed into place (`atomic_path`).

    Episodes are cut at `episode_ends`; each stores its rows' observations and its last
    next_observation (T+1), actions, rewards, terminations (terminals) and truncations (timeouts),
    unencoded (no JPEG). Metadata: dataset_id "acrl/ENV/KIND-v0" (ENV the env id's name in lower
    case, e.g. acrl/hopper/medium-v0: put the directory at $MINARI_DATASETS_PATH/acrl/hopper/medium-v0
    for `minari.load_dataset` to find it by id), algorithm_name (attrs behavioral_policy),
    description (attrs recipe, else the kind), the env spec of attrs env_id when it is a registered id,
    ref_min_score and ref_max_score (attrs random_return and expert_return, where it has both), and
    every attribute under "acrl". `read_minari` (`acrl.parts.datasets.load_minari`) reads it back equal,
    attributes included.

    Args:
        observation_space, action_space: the spaces to record (default: those of the registered env
            that attrs env_id names).
    Raises:
        InputError: minari is not installed; `path` exists; the dataset fails `OfflineDataset.validate`
            or holds image frames (Minari would JPEG-encode them: keep those in HDF5); no spaces given
            and attrs env_id is not a registered id.
    """
    try:
        import minari
        from minari.data_collector import EpisodeBuffer
        from minari.dataset.minari_storage import MinariStorage
    except ImportError as err:
        raise InputError("writing Minari datasets needs the minari package: `pip install minari`") from err
    path = Path(path)
    if path.exists():
        raise InputError(f"{path} already exists; remove it or choose another --out.")
    dataset.validate(source="dataset to save")
    if dataset.observations.ndim > 2:
        raise InputError(
            f"the dataset's observations are image frames {dataset.observations.shape[1:]}; acrl writes Minari "
            "datasets of vector observations only: write it as HDF5 (--format hdf5)."
        )
    env_id = dataset.attrs.get("env_id")
    env_spec = gym.spec(env_id) if isinstance(env_id, str) and env_id in gym.registry else None
    if observation_space is None or action_space is None:
        if env_spec is None:
            raise InputError(
                f"the dataset's env_id {env_id!r} is not a registered environment, so its spaces are unknown; "
                "pass observation_space and action_space."
            )
        env = gym.make(env_spec)
        observation_space, action_space = env.observation_space, env.action_space
        env.close()
    ends = episode_ends(dataset)
    starts = np.concatenate([[0], ends[:-1] + 1])
    episodes = [
        EpisodeBuffer(
            observations=np.concatenate([dataset.observations[s : e + 1], dataset.next_observations[e : e + 1]]),
            actions=dataset.actions[s : e + 1],
            rewards=dataset.rewards[s : e + 1],
            terminations=dataset.terminals[s : e + 1],
            truncations=dataset.timeouts[s : e + 1],
        )
        for s, e in zip(starts, ends, strict=True)
    ]
    attrs = {key: value for key, value in dataset.attrs.items() if value is not None}
    name = str(env_id).split("/")[-1].split("-v")[0].lower() if env_id else "unknown"
    metadata = {
        "dataset_id": f"acrl/{name}/{attrs.get('kind', 'dataset')}-v0",
        "minari_version": minari.__version__,
        "algorithm_name": str(attrs.get("behavioral_policy", "unknown")),
        "description": str(attrs.get("recipe", f"acrl dataset of kind {attrs.get('kind', 'unknown')}")),
        "acrl": attrs,
    }
    if "random_return" in attrs and "expert_return" in attrs:
        metadata |= {"ref_min_score": attrs["random_return"], "ref_max_score": attrs["expert_return"]}
    with atomic_path(path) as tmp:
        tmp.mkdir()
        data = tmp.resolve() / "data"  # minari 0.5's get_size joins a relative path to itself
        storage = MinariStorage.new(data, observation_space, action_space, env_spec, jpeg_encoding=False)
        storage.update_metadata(metadata)
        storage.update_episodes(episodes)
