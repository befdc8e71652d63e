"""The BCQ paper's offline datasets: collection by a behavioral DDPG or a trained policy.

Fujimoto, Meger, Precup 2019, "Off-Policy Deep Reinforcement Learning without Exploration",
Sec. 5 (and the authors' code, github.com/sfujim/BCQ) define the buffers:

- `final`: every transition a behavioral DDPG sees while it trains online for `steps` steps,
  uniformly random actions for its first `start_steps` included. The paper adds N(0, 0.5)
  exploration noise, the authors' code N(0, 0.3) ("set to 0.1 if DDPG trains poorly"); acrl's
  default is the preset's `expl_noise`, N(0, 0.1) (the standard DDPG/TD3 exploration noise);
  `noise_std` or the ddpg presets `bcq_code` (0.3) and `bcq_paper_final` (0.5) change it. The
  DDPG's run directory (FILE's stem + "-behavioral/", next to FILE) keeps its checkpoints, so
  its best policy can then serve for `imitation` and `imperfect`.
- `imitation`: a trained policy acting without noise.
- `imperfect`: the trained policy with N(0, 0.3 * half-range) noise (the half-range (high - low) / 2
  is max_action for a symmetric Box) and, with probability 0.3, a uniformly random action instead.
  For a Discrete action space (no Gaussian noise): epsilon-greedy, a uniformly random action with
  probability 0.2, discrete BCQ's imperfect buffer (Fujimoto, Conti, Ghavamzadeh, Pineau 2019,
  "Benchmarking Batch Deep Reinforcement Learning Algorithms", Sec. 5; `rand_action_p` of the
  authors' discrete_BCQ/main.py). The authors also play 20% of the episodes near noise-free
  (`low_noise_p`, epsilon 0.001 on Atari); acrl leaves those out: every episode takes epsilon 0.2.

The behavioral agent of `final` may also be a DQN (`algo="dqn"`, Discrete actions, vectors or
image frames), whose epsilon-greedy replay becomes the dataset: the discrete experiment's final
buffer (`acrl experiment discrete`, `acrl.offline.spec.DISCRETE`).
- `concurrent`: BCQ learning alongside the behavioral DDPG from its growing buffer. That is an
  experiment, not a fixed dataset: `acrl experiment concurrent`. The transitions it learns from
  are those a `final` collection with the same settings stores.

Every dataset is an HDF5 file with the D4RL keys (`acrl.parts.datasets.save_dataset`) or, with
`format="minari"`, a Minari dataset directory (`acrl.parts.minari_format.save_minari`; vector
observations), terminals (termination) and timeouts (time-limit truncation) kept apart, image frames
in their own dtype (uint8 or bool, never floats), and the attributes env_id, kind,
behavioral_policy, seed, noise_std, random_prob (a DQN's final: epsilon_start, epsilon_end,
epsilon_decay_steps instead), acrl_version (and algo, the behavioral agent's). D4RL's kinds (random,
medium, medium-replay, expert, medium-expert) are `acrl.offline.d4rl`'s, built on the helpers here
(`train_behavioral`, `buffer_dataset`, `load_policy`, `write_dataset`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from acrl.algos import load
from acrl.algos.base import Agent
from acrl.algos.off_policy import OffPolicyAgent
from acrl.core.envs import CheckFinite, env_factory
from acrl.core.errors import InputError, TrainingError
from acrl.core.evaluation import EpisodeActor
from acrl.core.version import __version__
from acrl.parts.buffers import replay_capacity
from acrl.parts.datasets import OfflineDataset, collect_transitions, save_dataset
from acrl.parts.minari_format import save_minari

DATASET_KINDS = ("final", "imitation", "imperfect", "concurrent")
"""The BCQ paper's buffer kinds (Fujimoto et al. 2019, Sec. 5)."""

DEFAULT_NOISE = {"imitation": 0.0, "imperfect": 0.3}
"""Gaussian action noise std per kind, as a fraction of the half-range (high - low) / 2 (final: the agent's
expl_noise)."""

DEFAULT_RANDOM_PROB = {"final": 0.0, "imitation": 0.0, "imperfect": 0.3}
"""Probability of a uniformly random action per kind."""

DISCRETE_RANDOM_PROB = {"imitation": 0.0, "imperfect": 0.2}
"""Probability of a uniformly random action per kind for a Discrete action space, which takes no Gaussian
noise: imperfect is epsilon-greedy with discrete BCQ's epsilon 0.2 (Fujimoto et al. 2019b, Sec. 5)."""

FINAL_ALGOS = ("ddpg", "td3", "dqn")
"""The behavioral agents of `final`: the BCQ paper's DDPG, TD3, and DQN for Discrete actions."""

FORMATS = ("hdf5", "minari")
"""How a collection is written (`write_dataset`): an HDF5 file with D4RL's keys, or a Minari dataset directory."""


def behavioral_run_dir(out: str | Path) -> Path:
    """Run directory of the behavioral agent of a `final` collection: FILE's stem + "-behavioral"."""
    out = Path(out)
    return out.with_name(out.stem + "-behavioral")


def load_policy(policy: str | Path) -> Agent:
    """Load a trained acrl agent from a run directory (checkpoints/best.pt, else latest.pt) or a .pt file.

    Raises:
        InputError: no checkpoint there, or a corrupt one (see `acrl.core.checkpoint.load_checkpoint`).
    """
    path = Path(policy)
    if path.is_dir():
        checkpoints = path / "checkpoints"
        path = checkpoints / "best.pt" if (checkpoints / "best.pt").exists() else checkpoints / "latest.pt"
    return load(path)


def collect_dataset(
    kind: str,
    out: str | Path,
    steps: int,
    env_id: str | None = None,
    policy: str | Path | None = None,
    seed: int = 0,
    noise_std: float | None = None,
    random_prob: float | None = None,
    algo: str = "ddpg",
    preset: str | None = None,
    overrides: dict[str, Any] | None = None,
    progress: bool = False,
    format: str = "hdf5",
) -> OfflineDataset:
    """Collect one of the BCQ paper's datasets and write it to `out` (`write_dataset`: HDF5 with D4RL's
    keys, or a Minari dataset directory).

    Args:
        kind: "final", "imitation" or "imperfect" (see the module docstring); "concurrent"
            raises InputError pointing to `acrl experiment concurrent`.
        out: the HDF5 file (or Minari directory) to write; it must not exist yet (nor, for final, its run
            directory).
        steps: transitions to collect (for final: the behavioral agent's training steps); required.
        env_id: the environment (required for final; default: the policy's own for
            imitation/imperfect, which must match it when given).
        policy: run directory (or checkpoint file) of a trained acrl agent, for
            imitation/imperfect; any algorithm whose `predict` acts in the environment.
        seed: seeds the behavioral agent (final) or the environment and noise (the others).
        noise_std: Gaussian noise std as a fraction of the half-range (default per kind: final
            the behavioral agent's expl_noise, 0.1 in the presets; imitation 0; imperfect 0.3;
            0 for a Discrete action space, which takes none).
        random_prob: probability of a uniformly random action (imperfect 0.3, imitation 0; for a
            Discrete action space imperfect 0.2, `DISCRETE_RANDOM_PROB`; final takes none beyond its
            start_steps and, for DQN, its epsilon schedule).
        algo: behavioral agent of final: "ddpg" (the paper's), "td3" or "dqn" (Discrete actions;
            it explores by its epsilon schedule, and its buffer is sized to keep every transition).
        preset: preset of the behavioral agent (default: the env's `default` preset if any).
        overrides: further hyperparameters of the behavioral agent (final only), e.g.
            {"start_steps": 1000}.
        progress: show the behavioral agent's progress bar.
        format: "hdf5" or "minari" (`FORMATS`; Minari: vector observations only).
    Returns:
        the dataset written: observations (N, obs_dim) float32 or frames (N, *obs_shape) uint8 /
        bool, actions (N, act_dim) in environment units or (N,) int64, rewards, terminals,
        timeouts (N,), next_observations as observations (the true final observation at episode
        ends), attrs env_id, kind, behavioral_policy (the run directory), seed, noise_std,
        random_prob, algo, acrl_version.
    Raises:
        InputError: an unknown kind or format; a missing or superfluous --policy / --env; no steps or steps < 1;
            negative noise or random_prob outside [0, 1]; `out` or the behavioral run directory
            already exists; an action space the final agent cannot take (DDPG and TD3 a Discrete
            one, DQN a Box) or noise for DQN; Gaussian noise for a Discrete action space; a policy
            trained on another environment; image frames for the Minari format.
        TrainingError: a final DQN whose frame buffer lost transitions (see `_collect_final`).
    """
    if kind not in DATASET_KINDS:
        raise InputError(f"unknown dataset kind {kind!r}; choose one of {', '.join(DATASET_KINDS)}.")
    if kind == "concurrent":
        raise InputError(
            "the concurrent buffer is not a fixed dataset: BCQ learns alongside the behavioral "
            "DDPG from its growing buffer. Run `acrl experiment concurrent --env ENV_ID`; the "
            "transitions it learns from are those `acrl collect --kind final` stores."
        )
    if steps is None:
        raise InputError(f"--kind {kind} needs --steps N, the transitions to collect.")
    check_steps("--steps", steps)
    if (noise_std is not None and noise_std < 0) or (random_prob is not None and not 0.0 <= random_prob <= 1.0):
        raise InputError(f"--noise must be >= 0 and --random-prob in [0, 1], got {noise_std} and {random_prob}.")
    out = check_out(out, format)
    if kind == "final":
        if policy is not None:
            raise InputError("--kind final trains its own behavioral DDPG; --policy is for imitation and imperfect.")
        if env_id is None:
            raise InputError("--kind final needs --env ENV_ID (for example --env Hopper-v5).")
        if random_prob:
            raise InputError(
                "--kind final explores as its behavioral agent does (DDPG and TD3: Gaussian noise, DQN: its "
                "epsilon schedule); --random-prob is for imperfect."
            )
        check_format(format, env_factory(env_id)[0])
        dataset = _collect_final(out, env_id, int(steps), seed, noise_std, algo, preset, overrides or {}, progress)
    else:
        if policy is None:
            raise InputError(
                f"--kind {kind} needs --policy RUN_DIR: the run directory of a trained agent "
                f"(for example the '-behavioral' run of an `acrl collect --kind final`)."
            )
        if overrides or preset is not None:
            raise InputError("--set and --preset configure the behavioral agent of --kind final only.")
        agent = load_policy(policy)
        if env_id is not None and env_id != agent.config.env_id:
            raise InputError(
                f"the policy in {policy} was trained on {agent.config.env_id}, not {env_id}; "
                "drop --env or pass a policy of that environment."
            )
        discrete = isinstance(agent.action_space, gym.spaces.Discrete)
        if discrete and noise_std:
            raise InputError(
                f"--noise adds Gaussian noise, which needs a Box action space; the Discrete actions of this "
                f"environment take random actions only (--random-prob; default {DISCRETE_RANDOM_PROB[kind]} for "
                f"{kind}): drop --noise."
            )
        if noise_std is None:
            noise_std = 0.0 if discrete else DEFAULT_NOISE[kind]
        if random_prob is None:
            random_prob = (DISCRETE_RANDOM_PROB if discrete else DEFAULT_RANDOM_PROB)[kind]
        check_format(format, env_factory(agent.env)[0])
        env = CheckFinite(env_factory(agent.env)[0]())  # no NaN goes into a dataset
        env.action_space.seed(seed)
        actor = EpisodeActor(agent, deterministic=True)  # a recurrent policy's state, fresh each episode
        dataset = collect_transitions(
            env,
            actor,
            int(steps),
            seed,
            noise_std,
            float(random_prob),
            kind=kind,
            behavioral_policy=str(policy),
            episode_start=actor.reset,
        )
        env.close()
        dataset.attrs["algo"] = agent.algo
    write_dataset(out, dataset, format)
    return dataset


def check_steps(flag: str, steps: Any) -> None:
    """Raise InputError unless `steps` is a positive integer (`flag` names it in the message)."""
    if isinstance(steps, bool) or int(steps) != steps or steps < 1:
        raise InputError(f"{flag} must be a positive integer, got {steps}.")


def check_out(out: str | Path, format: str) -> Path:
    """`out` as a Path, checked before any work: a known `format` (`FORMATS`) and nothing there yet.

    Raises:
        InputError: an unknown format, or `out` exists.
    """
    if format not in FORMATS:
        raise InputError(f"--format must be one of {', '.join(FORMATS)}, got {format!r}.")
    out = Path(out)
    if out.exists():
        raise InputError(f"{out} already exists; remove it or choose another --out.")
    return out


def check_format(format: str, make_env: Any) -> None:
    """Before any work: refuse the Minari format for an environment of image frames (`make_env()` builds one
    to look at its observation space), which Minari would JPEG-encode.

    Raises:
        InputError: "minari" with observations of more than one dimension.
    """
    if format != "minari":
        return
    env = make_env()
    shape = env.observation_space.shape
    env.close()
    if shape is None or len(shape) != 1:
        raise InputError(
            f"--format minari writes vector observations only; this environment's are {shape}: use --format hdf5."
        )


def write_dataset(out: Path, dataset: OfflineDataset, format: str) -> None:
    """Write a collection atomically: an HDF5 file with D4RL's keys (`save_dataset`) or a Minari dataset
    directory (`save_minari`, the spaces of the registered env attrs env_id names).

    Raises:
        InputError: see `save_dataset` and `save_minari`.
    """
    if format == "minari":
        save_minari(out, dataset)
    else:
        save_dataset(out, dataset)


def _collect_final(
    out: Path,
    env_id: str,
    steps: int,
    seed: int,
    noise_std: float | None,
    algo: str,
    preset: str | None,
    overrides: dict[str, Any],
    progress: bool,
) -> OfflineDataset:
    """Train a behavioral DDPG/TD3/DQN for `steps` steps in `behavioral_run_dir(out)` (`train_behavioral`);
    its replay buffer (sized to keep every transition) becomes the dataset. A frame buffer that still lost
    transitions is a TrainingError rather than a dataset with part of the run missing.

    Raises:
        InputError: an unknown algo; a run directory that exists; noise_std for DQN; an action space
            or setting the agent refuses.
        TrainingError: the frame buffer kept fewer than `steps` transitions.
    """
    if algo not in FINAL_ALGOS:
        raise InputError(f"the behavioral agent of --kind final is one of {', '.join(FINAL_ALGOS)}, got {algo!r}.")
    if algo == "dqn" and noise_std is not None:
        raise InputError(
            "a behavioral DQN explores epsilon-greedily (set epsilon_start, epsilon_end, epsilon_decay_steps with "
            "--set); --noise is the Gaussian exploration noise of DDPG and TD3."
        )
    run_dir = behavioral_run_dir(out)
    check_run_dir_free(run_dir)
    values = {} if noise_std is None else {"expl_noise": noise_std}
    agent = train_behavioral(algo, run_dir, env_id, steps, seed, preset, overrides, values, progress)
    if len(agent.buffer) < steps:
        raise TrainingError(
            f"the behavioral {algo}'s frame buffer of {agent.config.buffer_size} slots kept {len(agent.buffer)} of its "
            f"{steps} transitions (its episodes are shorter than its frame stack on average); nothing was written. "
            "Pass a larger buffer_size with --set."
        )
    return buffer_dataset(agent, "final", str(run_dir), seed)


def check_run_dir_free(run_dir: Path) -> None:
    """Raise InputError when the run directory a collection would train its agent in exists already."""
    if run_dir.exists():
        raise InputError(
            f"{run_dir} already exists (the behavioral run of an earlier collection); remove it or choose "
            "another --out."
        )


def train_behavioral(
    algo: str,
    run_dir: Path,
    env_id: str,
    steps: int | None,
    seed: int,
    preset: str | None = None,
    overrides: dict[str, Any] | None = None,
    values: dict[str, Any] | None = None,
    progress: bool = False,
    label: str | None = None,
) -> OffPolicyAgent:
    """Train an online replay agent (DDPG, TD3, DQN or SAC) in `run_dir` through the run loop, its replay
    buffer sized to keep every transition (it never wraps), and return it.

    Its config: the algorithm's defaults < the preset (`preset`, else the env's default) < `overrides`
    (--set) < env_id, seed, total_steps `steps` (None: the preset's), no dataset, and `values` (what
    the collection sets: expl_noise, target_return) < buffer_size. A frame replay buffer (DQN on image
    frames) takes one slot per transition and frame_stack more at each episode's start: it gets
    2 x steps slots (rounded up to a multiple of n_envs), enough for episodes of frame_stack steps or
    more on average.

    Raises:
        InputError: an unknown algorithm, preset or setting; an action space the agent refuses; a run
            directory that holds a run.
    """
    from acrl.algos import get_algorithm
    from acrl.core.config import preset_values, update_config

    cls = get_algorithm(algo)
    preset_config, preset_name = preset_values(algo, env_id, preset)
    config = update_config(cls.config_class(), preset_config, f"preset {preset_name!r}")
    config = update_config(config, overrides or {}, "--set")
    fixed = {"env_id": env_id, "seed": seed, "preset": preset_name, "dataset": None, **(values or {})}
    config = update_config(config, fixed | ({} if steps is None else {"total_steps": steps}), "collect")
    probe = env_factory(env_id)[0]()
    budget = max(config.total_steps, config.start_steps, config.batch_size)
    size = replay_capacity(probe.observation_space, budget, config.n_envs)
    probe.close()
    config = update_config(config, {"buffer_size": size}, "collect")
    agent = cls(env_id, config=config)
    agent.learn(run_dir=run_dir, progress=progress, label=label or f"behavioral {algo}")
    return agent


def buffer_dataset(agent: OffPolicyAgent, kind: str, behavioral_policy: str, seed: int) -> OfflineDataset:
    """The filled part of an online DDPG's, TD3's or DQN's replay buffer as an OfflineDataset, oldest
    transition first (`ReplayBuffer.transitions`, `FrameReplayBuffer.transitions`).

    Actions go back to environment units (`ActionAdapter.from_buffer`, then `to_env`); a frame buffer's
    observations come back as the environment gave them (uint8 / bool); attrs as `collect_dataset` documents them,
    with the agent's expl_noise as noise_std (a DQN: its epsilon schedule, epsilon_start, epsilon_end,
    epsilon_decay_steps, and noise_std 0).
    """
    data = agent.buffer.transitions()
    adapter = agent.action_adapter
    actions = adapter.to_env(adapter.from_buffer(torch.from_numpy(data["actions"])).numpy())
    cfg = agent.config
    attrs = {
        "env_id": cfg.env_id,
        "kind": kind,
        "behavioral_policy": behavioral_policy,
        "seed": int(seed),
        "noise_std": float(getattr(cfg, "expl_noise", 0.0)),
        "random_prob": 0.0,
        "algo": agent.algo,
        "acrl_version": __version__,
    }
    if hasattr(cfg, "epsilon_end"):
        del attrs["random_prob"]
        attrs |= {key: getattr(cfg, key) for key in ("epsilon_start", "epsilon_end", "epsilon_decay_steps")}
    return OfflineDataset(
        data["observations"],
        actions if agent.discrete else actions.astype(np.float32),
        data["rewards"],
        data["next_observations"],
        data["terminated"],
        data["truncated"],
        attrs,
    )
