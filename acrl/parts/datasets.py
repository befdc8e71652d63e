"""Offline RL datasets: one in-memory schema, HDF5 files with D4RL keys, collection; the Minari format
(`acrl.parts.minari_format`) is read here too, so a dataset path may name either.

The schema follows D4RL (Fu et al. 2020, "D4RL: Datasets for Deep Data-Driven Reinforcement
Learning", https://github.com/Farama-Foundation/D4RL): one row per transition, with
`terminals` (the MDP ended: do not bootstrap) and `timeouts` (a time limit cut the episode:
bootstrap from `next_observations`) kept apart (docs/correctness.md item 1).

The BCQ datasets (Fujimoto, Meger, Precup 2019, "Off-Policy Deep Reinforcement Learning without
Exploration", Sec. 5) are all collected with `collect_transitions`: `final` and `concurrent`
come from the DDPG agent's own run, `imitation` uses a trained policy with no noise, and
`imperfect` uses `noise_std=0.3, random_prob=0.3`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import h5py
import numpy as np

from acrl.core.envs import require_finite_bounds
from acrl.core.errors import InputError
from acrl.core.files import atomic_path
from acrl.core.version import __version__
from acrl.parts.minari_format import minari_attrs, read_minari

D4RL_KEYS = ("observations", "actions", "rewards", "next_observations", "terminals", "timeouts")

_OBS_KEYS = ("observations", "next_observations")
_FRAME_DTYPES = (np.dtype(np.uint8), np.dtype(np.bool_))
"""The dtypes of image frames, which datasets keep as they are (never a float copy)."""
_BOOL_KEYS = ("terminals", "timeouts")
_ONE_D_KEYS = ("rewards", "terminals", "timeouts")

ACTION_BOUND_TOL = 1e-6
"""Actions may exceed the Box bounds by this much times max(1, |bound|) (float32 round-off)."""


@dataclass
class OfflineDataset:
    """A flat table of N transitions with the D4RL keys.

    Arrays (row i is one transition (s_i, a_i, r_i, s'_i)):
      observations       (N, obs_dim) float32, s_i; or image frames (N, *obs_shape) (a 3-D
                         observation such as MinAtar's (10, 10, C)) in their own dtype, uint8 or
                         bool, as the environment gives them (never a float copy).
      actions            (N, act_dim) float32 in environment units for a Box action space,
                         (N,) int64 for a Discrete one.
      rewards            (N,) float32, r_i.
      next_observations  as observations, s'_i: the true observation after a_i, also at the end
                         of an episode (never the observation of the next reset).
      terminals          (N,) bool, the environment reported `terminated` (no bootstrap).
      timeouts           (N,) bool, the environment reported `truncated` (time limit; bootstrap).
    attrs: metadata, str/int/float/bool values: env_id, kind (final, concurrent, imitation,
      imperfect; D4RL's random, medium, medium-replay, expert, medium-expert; minari, ...),
      behavioral_policy, seed, acrl_version, and optionally more (D4RL's kinds: the returns they were
      made with, `acrl.offline.d4rl`).

    Source: D4RL's HDF5 layout (Fu et al. 2020); BCQ's buffers (Fujimoto et al. 2019, Sec. 5).
    """

    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_observations: np.ndarray
    terminals: np.ndarray
    timeouts: np.ndarray
    attrs: dict = field(default_factory=dict)

    def __len__(self) -> int:
        """Number of transitions N."""
        return len(self.rewards)

    def validate(
        self,
        observation_space: gym.Space | None = None,
        action_space: gym.Space | None = None,
        source: str = "dataset",
    ) -> None:
        """Check the schema, and the spaces when given; return None or raise InputError.

        Checks, in order: every D4RL key is a numpy array; all have the same number of rows;
        shapes ((N, obs_dim) observations and next_observations, or (N, *obs_shape) frames, both
        the same; (N,) rewards, terminals and timeouts); dtypes (float32 rewards and vector
        observations, uint8 or bool frames, bool terminals/timeouts); no NaN or inf (the first
        bad row is named); then, if given, the observations against `observation_space` (a
        flat Box: the size; a frame Box: shape and dtype), and the actions against a flat Box
        `action_space` (shape and bounds, with ACTION_BOUND_TOL) or a Discrete one (integer
        values in [start, start + n)). `source` prefixes the messages (a file name).

        Raises:
            InputError: naming the key and, for per-row problems, the first bad row.
        """
        where = f"{source}: "
        for key in D4RL_KEYS:
            if not isinstance(getattr(self, key), np.ndarray):
                raise InputError(f"{where}'{key}' must be a numpy array, got {type(getattr(self, key)).__name__}")
        n = len(self.observations)
        for key in D4RL_KEYS[1:]:
            if len(getattr(self, key)) != n:
                raise InputError(
                    f"{where}'{key}' has {len(getattr(self, key))} rows but 'observations' has "
                    f"{n}; every key needs exactly one row per transition"
                )
        frames = self.observations.ndim > 2
        if self.observations.ndim < 2:
            raise InputError(
                f"{where}'observations' must have shape (N, obs_dim) or, for image frames, (N, *obs_shape); "
                f"got {self.observations.shape}"
            )
        if self.next_observations.shape != self.observations.shape:
            raise InputError(
                f"{where}'next_observations' has shape {self.next_observations.shape} but "
                f"'observations' has {self.observations.shape}; they must be equal"
            )
        for key in _ONE_D_KEYS:
            if getattr(self, key).ndim != 1:
                raise InputError(f"{where}'{key}' must have shape (N,), got {getattr(self, key).shape}")
        if self.actions.ndim not in (1, 2):
            raise InputError(f"{where}'actions' must have shape (N, act_dim) or (N,), got {self.actions.shape}")
        if frames:
            for key in _OBS_KEYS:
                if getattr(self, key).dtype not in _FRAME_DTYPES:
                    raise InputError(
                        f"{where}'{key}' are image frames {getattr(self, key).shape[1:]} and must be uint8 or bool "
                        f"(as the environment gives them), got {getattr(self, key).dtype}"
                    )
            if self.next_observations.dtype != self.observations.dtype:
                raise InputError(
                    f"{where}'next_observations' are {self.next_observations.dtype} but 'observations' "
                    f"{self.observations.dtype}; they must be equal"
                )
        for key in ("rewards",) if frames else ("observations", "rewards", "next_observations"):
            if getattr(self, key).dtype != np.float32:
                raise InputError(
                    f"{where}'{key}' must be float32, got {getattr(self, key).dtype}; "
                    f"convert it with .astype(np.float32)"
                )
        for key in _BOOL_KEYS:
            if getattr(self, key).dtype != np.bool_:
                raise InputError(
                    f"{where}'{key}' must be bool, got {getattr(self, key).dtype}; convert it with .astype(bool)"
                )
        if not (np.issubdtype(self.actions.dtype, np.floating) or np.issubdtype(self.actions.dtype, np.integer)):
            raise InputError(f"{where}'actions' must be float32 (Box) or int64 (Discrete), got {self.actions.dtype}")
        for key in ("observations", "actions", "rewards", "next_observations"):
            _check_finite(getattr(self, key), key, where)
        if observation_space is not None:
            self._check_observations(observation_space, where)
        if action_space is not None:
            self._check_actions(action_space, where)

    def _check_observations(self, space: gym.Space, where: str) -> None:
        env_id = self.attrs.get("env_id", "unknown")
        if isinstance(space, gym.spaces.Box) and len(space.shape) > 1:
            if self.observations.shape[1:] != space.shape or self.observations.dtype != space.dtype:
                raise InputError(
                    f"{where}'observations' are {self.observations.shape[1:]} {self.observations.dtype} but the "
                    f"environment's observation space is {space.shape} {space.dtype}; the dataset "
                    f"(env_id={env_id}) was collected on a different environment; use a dataset of this environment"
                )
            return
        if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
            raise InputError(f"{where}only Box observation spaces (vectors or image frames) are supported, got {space}")
        if self.observations.ndim != 2:
            raise InputError(
                f"{where}'observations' are frames {self.observations.shape[1:]} but the environment's "
                f"observations are vectors {space.shape}; use a dataset of this environment"
            )
        obs_dim = self.observations.shape[1]
        if obs_dim != space.shape[0]:
            raise InputError(
                f"{where}'observations' have {obs_dim} values per row but the environment's "
                f"observation space has shape {space.shape}; the dataset (env_id={env_id}) "
                f"was collected on a different environment; use a dataset of this environment"
            )

    def _check_actions(self, space: gym.Space, where: str) -> None:
        actions = self.actions
        if isinstance(space, gym.spaces.Discrete):
            if actions.ndim != 1:
                raise InputError(
                    f"{where}'actions' must have shape (N,) for a Discrete action space, got {actions.shape}"
                )
            if np.issubdtype(actions.dtype, np.floating):
                rows = np.flatnonzero(actions != np.round(actions))
                if rows.size:
                    r = rows[0]
                    raise InputError(
                        f"{where}'actions' row {r} is {actions[r]}, not an integer; a Discrete "
                        f"action space needs integer actions in [{space.start}, "
                        f"{space.start + space.n - 1}]"
                    )
            rows = np.flatnonzero((actions < space.start) | (actions >= space.start + space.n))
            if rows.size:
                r = rows[0]
                raise InputError(
                    f"{where}'actions' row {r} is {actions[r]}, outside the Discrete action "
                    f"space's range [{space.start}, {space.start + space.n - 1}]"
                )
            return
        if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
            raise InputError(f"{where}only flat Box and Discrete action spaces are supported, got {space}")
        if actions.ndim != 2 or actions.shape[1] != space.shape[0]:
            raise InputError(
                f"{where}'actions' have shape {actions.shape} but the action space needs (N, {space.shape[0]})"
            )
        low = space.low.astype(np.float64)
        high = space.high.astype(np.float64)
        a = actions.astype(np.float64)
        bad = (a < low - ACTION_BOUND_TOL * np.maximum(1.0, np.abs(low))) | (
            a > high + ACTION_BOUND_TOL * np.maximum(1.0, np.abs(high))
        )
        rows = np.flatnonzero(bad.any(axis=1))
        if rows.size:
            r = rows[0]
            d = np.flatnonzero(bad[r])[0]
            raise InputError(
                f"{where}'actions' row {r}, dimension {d} is {actions[r, d]}, outside the action "
                f"space's bounds [{low[d]}, {high[d]}]; actions must be in environment units "
                f"within the bounds (tolerance {ACTION_BOUND_TOL})"
            )


def _check_finite(array: np.ndarray, key: str, where: str) -> None:
    """Raise InputError naming the first row of `array` that holds a NaN or inf."""
    if not np.issubdtype(array.dtype, np.floating):
        return
    finite = np.isfinite(array).reshape(len(array), -1).all(axis=1)
    rows = np.flatnonzero(~finite)
    if rows.size:
        r = rows[0]
        raise InputError(
            f"{where}'{key}' row {r} holds a non-finite value ({array[r]}); offline datasets "
            f"must be finite: clean or re-collect the data ({rows.size} of {len(array)} rows bad)"
        )


def save_dataset(path: str | os.PathLike, dataset: OfflineDataset) -> None:
    """Write `dataset` to an HDF5 file at `path` with the D4RL keys, atomically.

    Datasets: observations, next_observations float32 (vectors) or uint8 / bool (image frames,
    stored compressed with LZF: MinAtar's bool grids shrink about tenfold); rewards float32;
    actions float32 (Box) or int64 (Discrete); terminals, timeouts bool (as D4RL stores them).
    `dataset.attrs` become the file's root attributes (values str, int, float or bool; None values
    are left out). The file is written atomically (`acrl.core.files.atomic_path`), so a reader never
    sees a half-written file. Missing parent directories are created. Source: D4RL's HDF5 layout
    (Fu et al. 2020).

    Raises:
        InputError: the dataset fails `OfflineDataset.validate()` (nothing is written), or an
            attribute has a type HDF5 cannot store.
    """
    dataset.validate(source="dataset to save")
    for name, value in dataset.attrs.items():
        if value is not None and not isinstance(value, (str, bool, int, float, np.generic)):
            raise InputError(
                f"attribute '{name}' is a {type(value).__name__}; dataset attributes must be "
                f"str, int, float, bool or None"
            )
    with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
        for key in D4RL_KEYS:
            array = getattr(dataset, key)
            frames = key in _OBS_KEYS and array.ndim > 2
            f.create_dataset(key, data=array, compression="lzf" if frames else None)
        for name, value in dataset.attrs.items():
            if value is not None:
                f.attrs[name] = value


def load_dataset(
    path: str | os.PathLike,
    observation_space: gym.Space | None = None,
    action_space: gym.Space | None = None,
) -> OfflineDataset:
    """Read an HDF5 file with the D4RL keys (acrl's own or D4RL's) and check it.

    Other keys and groups in the file (D4RL's `infos/`, `metadata/`) are ignored; files without
    attributes load with empty `attrs`. Arrays are converted to the schema of `OfflineDataset`:
    float32 rewards and vector observations/next_observations (image frames, uint8 or bool with
    more than one dimension per row, stay as stored); actions int64 when the file stores integers
    or `action_space` is Discrete, else float32; terminals/timeouts bool (0/1 numbers are
    accepted); (N, 1) rewards, terminals and timeouts are flattened to (N,). Then
    `OfflineDataset.validate(observation_space, action_space)` runs.

    `next_observations` is required: deriving it from observations[1:] is wrong at every
    episode end, so old D4RL files without it are refused.

    A directory is read as a Minari dataset (`load_minari`, its spaces checked the same way), so that
    `--dataset` takes either format.

    Raises:
        InputError: the path is missing; a directory that is not a Minari dataset; a file that is not
            HDF5 or is corrupt; a key is missing; or any check of `OfflineDataset.validate` fails (key
            and first bad row named).
    """
    path = Path(path)
    if not path.exists():
        raise InputError(
            f"dataset file '{path}' does not exist; create one with `acrl collect` or pass the "
            f"path of an existing HDF5 dataset or Minari dataset directory"
        )
    if path.is_dir():
        return load_minari(path, observation_space, action_space)
    arrays: dict[str, np.ndarray] = {}
    try:
        with h5py.File(path, "r") as f:
            for key in D4RL_KEYS:
                if key not in f or not isinstance(f[key], h5py.Dataset):
                    hint = (
                        " (old D4RL files without it are not supported: next_observations "
                        "cannot be derived from observations at episode ends)"
                        if key == "next_observations"
                        else ""
                    )
                    raise InputError(
                        f"{path}: required key '{key}' is missing{hint}; the file has "
                        f"{sorted(f.keys())} and needs all of {list(D4RL_KEYS)}"
                    )
                arrays[key] = f[key][()]
            attrs = {name: _python_value(value) for name, value in f.attrs.items()}
    except OSError as err:
        raise InputError(
            f"{path}: not a readable HDF5 file (corrupt, truncated or another format): {err}; "
            f"re-create it with `acrl collect` or check the path"
        ) from err
    dataset = _to_dataset(arrays, attrs, action_space, str(path))
    dataset.validate(observation_space, action_space, source=str(path))
    if isinstance(action_space, gym.spaces.Discrete):
        dataset.actions = dataset.actions.astype(np.int64)
    return dataset


def _python_value(value: Any) -> Any:
    """HDF5 attribute value to a plain Python value (numpy scalar -> int/float/bool/str)."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _to_dataset(
    arrays: dict[str, np.ndarray], attrs: dict, action_space: gym.Space | None, source: str
) -> OfflineDataset:
    """Convert raw arrays to OfflineDataset dtypes; raise InputError for non-0/1 flags."""
    out = {}
    for key in _ONE_D_KEYS:
        a = np.asarray(arrays[key])
        out[key] = a.reshape(-1) if a.ndim == 2 and a.shape[1] == 1 else a
    for key in _BOOL_KEYS:
        a = out[key]
        if a.dtype != np.bool_:
            rows = np.flatnonzero((a != 0) & (a != 1))
            if rows.size:
                raise InputError(f"{source}: '{key}' row {rows[0]} is {a[rows[0]]}; '{key}' must be bool or 0/1")
            out[key] = a.astype(bool)
    out["rewards"] = np.asarray(out["rewards"], dtype=np.float32)
    for key in _OBS_KEYS:
        array = np.asarray(arrays[key])
        frames = array.ndim > 2 and array.dtype in _FRAME_DTYPES
        out[key] = array if frames else array.astype(np.float32)
    actions = np.asarray(arrays["actions"])
    discrete = isinstance(action_space, gym.spaces.Discrete)
    if discrete and actions.ndim == 2 and actions.shape[1] == 1:
        actions = actions.reshape(-1)
    if np.issubdtype(actions.dtype, np.integer):
        actions = actions.astype(np.int64)
    elif not discrete:
        actions = actions.astype(np.float32)
    out["actions"] = actions
    return OfflineDataset(**out, attrs=attrs)


def load_minari(
    dataset_id_or_path: str | os.PathLike,
    observation_space: gym.Space | None = None,
    action_space: gym.Space | None = None,
) -> OfflineDataset:
    """Load a Minari dataset stored on this machine as transitions (never downloads):
    `acrl.parts.minari_format.read_minari`'s arrays and attrs as an `OfflineDataset`, validated against the
    given spaces, or else against the dataset's own. Source: Minari (Farama Foundation,
    https://minari.farama.org), the successor of D4RL.

    Raises:
        InputError: see `read_minari`; or a check of `OfflineDataset.validate` fails.
    """
    arrays, attrs, obs_space, act_space = read_minari(dataset_id_or_path)
    dataset = OfflineDataset(**arrays, attrs=attrs)
    dataset.validate(observation_space or obs_space, action_space or act_space, source=str(dataset_id_or_path))
    return dataset


def collect_transitions(
    env: gym.Env,
    policy: Callable[[np.ndarray], Any],
    steps: int,
    seed: int,
    noise_std: float = 0.0,
    random_prob: float = 0.0,
    rng: np.random.Generator | None = None,
    *,
    kind: str = "custom",
    behavioral_policy: str = "unknown",
    episode_start: Callable[[], None] | None = None,
) -> OfflineDataset:
    """Roll a single Gymnasium env for `steps` transitions with a behavioral policy.

    `policy(obs)` gets the observation as a (obs_dim,) float32 array, or an image frame (a Box
    observation space of more dimensions, uint8 or bool) in its own shape and dtype, and returns an
    action in environment units: a (act_dim,) array for a Box action space, an int for a Discrete one.
    For Box actions, Gaussian noise N(0, noise_std * (high - low) / 2) per dimension is added
    (a fraction of the half-range, which is max_action for a symmetric Box as in the BCQ code);
    then, for Box or Discrete, with probability `random_prob` the action is replaced by a
    uniformly random one; Box actions are then clipped to the bounds.
    With noise_std=0 and random_prob=0 the recorded actions are the policy's (clipped to the
    bounds). The BCQ paper's "imperfect demonstrations" use noise_std=0.3, random_prob=0.3
    (Fujimoto et al. 2019, Sec. 5; the author's code draws the random action instead of, not
    after, the noisy one, which gives the same distribution); "imitation" uses 0 and 0. On a
    Discrete space random_prob is epsilon-greedy's epsilon: discrete BCQ's imperfect buffer takes
    0.2 (Fujimoto et al. 2019b, "Benchmarking Batch Deep RL Algorithms", Sec. 5).

    `episode_start()`, when given, is called before each episode's first `policy` call: a recurrent
    policy's reset (`acrl.core.evaluation.EpisodeActor.reset`).

    The env is reset with `seed` at the first reset only; later resets continue its RNG.
    Noise and random actions come from `rng`, by default np.random.default_rng(seed).
    `terminated` goes to terminals and `truncated` to timeouts; next_observations holds the
    observation returned by the step, also at an episode's end (not the reset observation).
    Returns an OfflineDataset of `steps` rows (shapes and dtypes as documented there), attrs
    env_id, kind, behavioral_policy, seed, noise_std, random_prob, acrl_version.

    Raises:
        InputError: steps < 1, noise_std < 0, random_prob outside [0, 1], noise on a Discrete
            action space, unbounded Box bounds with noise or random actions, an unsupported
            space, or a policy action of the wrong shape.
    """
    if int(steps) != steps or steps < 1:
        raise InputError(f"steps must be a positive integer, got {steps}")
    if noise_std < 0:
        raise InputError(f"noise_std must be >= 0 (a fraction of the action half-range), got {noise_std}")
    if not 0.0 <= random_prob <= 1.0:
        raise InputError(f"random_prob must be in [0, 1], got {random_prob}")
    obs_space, act_space = env.observation_space, env.action_space
    frames = isinstance(obs_space, gym.spaces.Box) and len(obs_space.shape) > 1 and obs_space.dtype in _FRAME_DTYPES
    if not isinstance(obs_space, gym.spaces.Box) or not (len(obs_space.shape) == 1 or frames):
        raise InputError(
            f"only flat Box observation spaces and uint8 / bool image frames are supported, got {obs_space}"
        )
    obs_dtype = obs_space.dtype if frames else np.dtype(np.float32)
    discrete = isinstance(act_space, gym.spaces.Discrete)
    if discrete:
        if noise_std > 0:
            raise InputError("noise_std applies to Box action spaces only; for a Discrete one use random_prob")
        act_shape: tuple[int, ...] = ()
    elif isinstance(act_space, gym.spaces.Box) and len(act_space.shape) == 1:
        act_shape = act_space.shape
        if noise_std > 0 or random_prob > 0:
            require_finite_bounds(act_space, "adding noise or random actions")
    else:
        raise InputError(f"only flat Box and Discrete action spaces are supported, got {act_space}")
    rng = np.random.default_rng(seed) if rng is None else rng
    if not discrete:
        noise_scale = noise_std * (act_space.high.astype(np.float64) - act_space.low) / 2

    n = int(steps)
    observations = np.empty((n, *obs_space.shape), dtype=obs_dtype)
    next_observations = np.empty((n, *obs_space.shape), dtype=obs_dtype)
    actions = np.empty((n,), np.int64) if discrete else np.empty((n, *act_shape), np.float32)
    rewards = np.empty(n, dtype=np.float32)
    terminals = np.zeros(n, dtype=bool)
    timeouts = np.zeros(n, dtype=bool)

    obs, _ = env.reset(seed=seed)
    starting = True
    for t in range(n):
        obs = np.asarray(obs, dtype=obs_dtype)
        if starting and episode_start is not None:
            episode_start()
        raw = policy(obs)
        if discrete:
            action = int(np.asarray(raw).item())
            if random_prob > 0 and rng.random() < random_prob:
                action = act_space.start + int(rng.integers(act_space.n))
            env_action: Any = action
        else:
            action = np.asarray(raw, dtype=np.float64)
            if action.shape != act_shape:
                raise InputError(
                    f"the policy returned an action of shape {action.shape} at step {t}; "
                    f"the action space needs {act_shape}"
                )
            if noise_std > 0:
                action = action + rng.normal(0.0, noise_scale)
            if random_prob > 0 and rng.random() < random_prob:
                action = rng.uniform(act_space.low, act_space.high)
            env_action = np.clip(action, act_space.low, act_space.high).astype(act_space.dtype)
            action = env_action
        next_obs, reward, terminated, truncated, _ = env.step(env_action)
        observations[t] = obs
        actions[t] = action
        rewards[t] = reward
        next_observations[t] = next_obs
        terminals[t] = terminated
        timeouts[t] = truncated
        starting = terminated or truncated
        if starting:
            obs, _ = env.reset()
        else:
            obs = next_obs

    attrs = {
        "env_id": env.spec.id if env.spec is not None else "unknown",
        "kind": kind,
        "behavioral_policy": behavioral_policy,
        "seed": None if seed is None else int(seed),
        "noise_std": float(noise_std),
        "random_prob": float(random_prob),
        "acrl_version": __version__,
    }
    return OfflineDataset(observations, actions, rewards, next_observations, terminals, timeouts, attrs)


def dataset_attrs(path: str | Path) -> dict[str, Any]:
    """The attributes of a dataset (kind, env_id, ...), read without its arrays: an HDF5 file's, or a
    Minari dataset directory's (`acrl.parts.minari_format.minari_attrs`).

    Raises:
        InputError: the path is missing, a file that is not HDF5, or a directory that is not a Minari dataset.
    """
    path = Path(path)
    if path.is_dir():
        return minari_attrs(path)
    if not path.is_file():
        raise InputError(
            f"dataset file '{path}' does not exist; create one with `acrl collect` "
            "or pass the path of an existing HDF5 dataset or Minari dataset directory."
        )
    try:
        with h5py.File(path, "r") as f:
            return dict(f.attrs)
    except OSError as err:
        raise InputError(
            f"{path}: not a readable HDF5 file ({err}); a dataset is an acrl HDF5 file (D4RL keys) or a Minari "
            "dataset directory."
        ) from None


def dataset_env_id(path: str | Path) -> str:
    """The environment a dataset (HDF5 file or Minari directory) was collected on: its `env_id` attribute,
    a registered id.

    Raises:
        InputError: the path is not a dataset (`dataset_attrs`), or it has no `env_id` attribute naming a
            registered environment; the message asks for the environment (`--env ENV_ID` on
            the command line, `env=` from Python).
    """
    env_id = dataset_attrs(path).get("env_id")
    if isinstance(env_id, bytes):
        env_id = env_id.decode()
    if isinstance(env_id, str) and env_id in gym.registry:
        return env_id
    which = "has no env_id attribute" if env_id is None else f"was collected on {env_id!r}, not a registered id"
    raise InputError(
        f"{path} {which}, so the environment to check it against and evaluate on is unknown; name it: "
        "--env ENV_ID on the command line, env=ENV (an id, instance or factory) from Python."
    )
