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
- `concurrent`: BCQ learning alongside the behavioral DDPG from its growing buffer. That is an
  experiment, not a fixed dataset: `acrl experiment concurrent`. The transitions it learns from
  are those a `final` collection with the same settings stores.

Every dataset is an HDF5 file with the D4RL keys (`acrl.parts.datasets.save_dataset`), terminals
(termination) and timeouts (time-limit truncation) kept apart, and the attributes env_id, kind,
behavioral_policy, seed, noise_std, random_prob, acrl_version (and algo, the behavioral agent's).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from acrl.algos import load
from acrl.algos.base import Agent
from acrl.algos.ddpg import DDPG
from acrl.core.envs import CheckFinite, env_factory
from acrl.core.errors import InputError
from acrl.core.evaluation import EpisodeActor
from acrl.core.version import __version__
from acrl.parts.datasets import OfflineDataset, collect_transitions, save_dataset

DATASET_KINDS = ("final", "imitation", "imperfect", "concurrent")
"""The BCQ paper's buffer kinds (Fujimoto et al. 2019, Sec. 5)."""

DEFAULT_NOISE = {"imitation": 0.0, "imperfect": 0.3}
"""Gaussian action noise std per kind, as a fraction of the half-range (high - low) / 2 (final: the agent's
expl_noise)."""

DEFAULT_RANDOM_PROB = {"final": 0.0, "imitation": 0.0, "imperfect": 0.3}
"""Probability of a uniformly random action per kind."""


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
) -> OfflineDataset:
    """Collect one of the BCQ paper's datasets and write it to `out` (HDF5, D4RL keys).

    Args:
        kind: "final", "imitation" or "imperfect" (see the module docstring); "concurrent"
            raises InputError pointing to `acrl experiment concurrent`.
        out: the HDF5 file to write; it must not exist yet (nor, for final, its run directory).
        steps: transitions to collect (for final: the behavioral agent's training steps).
        env_id: the environment (required for final; default: the policy's own for
            imitation/imperfect, which must match it when given).
        policy: run directory (or checkpoint file) of a trained acrl agent, for
            imitation/imperfect; any algorithm whose `predict` acts in the environment.
        seed: seeds the behavioral agent (final) or the environment and noise (the others).
        noise_std: Gaussian noise std as a fraction of the half-range (default per kind: final
            the behavioral agent's expl_noise, 0.1 in the presets; imitation 0; imperfect 0.3).
        random_prob: probability of a uniformly random action (imperfect 0.3, imitation 0;
            final takes none beyond its start_steps).
        algo: behavioral agent of final: "ddpg" (the paper's) or "td3".
        preset: preset of the behavioral agent (default: the env's `default` preset if any).
        overrides: further hyperparameters of the behavioral agent (final only), e.g.
            {"start_steps": 1000}.
        progress: show the behavioral agent's progress bar.
    Returns:
        the dataset written: observations (N, obs_dim), actions (N, act_dim) in environment
        units, rewards, terminals, timeouts (N,), next_observations (N, obs_dim) (the true final
        observation at episode ends), attrs env_id, kind, behavioral_policy (the run directory),
        seed, noise_std, random_prob, algo, acrl_version.
    Raises:
        InputError: an unknown kind; a missing or superfluous --policy / --env; steps < 1;
            negative noise or random_prob outside [0, 1]; `out` or the behavioral run directory
            already exists; a Discrete action space for final (and Gaussian noise for a
            Discrete one); a policy trained on another environment.
    """
    if kind not in DATASET_KINDS:
        raise InputError(f"unknown dataset kind {kind!r}; choose one of {', '.join(DATASET_KINDS)}.")
    if kind == "concurrent":
        raise InputError(
            "the concurrent buffer is not a fixed dataset: BCQ learns alongside the behavioral "
            "DDPG from its growing buffer. Run `acrl experiment concurrent --env ENV_ID`; the "
            "transitions it learns from are those `acrl collect --kind final` stores."
        )
    if isinstance(steps, bool) or int(steps) != steps or steps < 1:
        raise InputError(f"--steps must be a positive integer, got {steps}.")
    if noise_std is None and kind != "final":
        noise_std = DEFAULT_NOISE[kind]
    random_prob = DEFAULT_RANDOM_PROB[kind] if random_prob is None else float(random_prob)
    if (noise_std is not None and noise_std < 0) or not 0.0 <= random_prob <= 1.0:
        raise InputError(f"--noise must be >= 0 and --random-prob in [0, 1], got {noise_std} and {random_prob}.")
    out = Path(out)
    if out.exists():
        raise InputError(f"{out} already exists; remove it or choose another --out.")
    if kind == "final":
        if policy is not None:
            raise InputError("--kind final trains its own behavioral DDPG; --policy is for imitation and imperfect.")
        if env_id is None:
            raise InputError("--kind final needs --env ENV_ID (for example --env Hopper-v5).")
        if random_prob:
            raise InputError("--kind final explores with Gaussian noise only; --random-prob is for imperfect.")
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
        if isinstance(agent.action_space, gym.spaces.Discrete) and noise_std > 0:
            raise InputError(
                f"--kind {kind} adds Gaussian noise, which needs a Box action space; for the "
                "Discrete actions of this environment pass --noise 0 (random actions only)."
            )
        env = CheckFinite(env_factory(agent.env)[0]())  # no NaN goes into a dataset
        env.action_space.seed(seed)
        actor = EpisodeActor(agent, deterministic=True)  # a recurrent policy's state, fresh each episode
        dataset = collect_transitions(
            env,
            actor,
            int(steps),
            seed,
            noise_std,
            random_prob,
            kind=kind,
            behavioral_policy=str(policy),
            episode_start=actor.reset,
        )
        env.close()
        dataset.attrs["algo"] = agent.algo
    save_dataset(out, dataset)
    return dataset


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
    """Train a behavioral DDPG/TD3 for `steps` steps in `behavioral_run_dir(out)`; its replay buffer
    (sized to keep every transition) becomes the dataset."""
    from acrl.algos import get_algorithm
    from acrl.core.config import preset_values, update_config

    if algo not in ("ddpg", "td3"):
        raise InputError(f"the behavioral agent of --kind final is ddpg or td3, got {algo!r}.")
    run_dir = behavioral_run_dir(out)
    if run_dir.exists():
        raise InputError(
            f"{run_dir} already exists (the behavioral run of an earlier collection); remove it "
            "or choose another --out."
        )
    cls = get_algorithm(algo)
    values, preset_name = preset_values(algo, env_id, preset)
    config = update_config(cls.config_class(), values, f"preset {preset_name!r}")
    config = update_config(config, overrides, "--set")
    values = {"env_id": env_id, "seed": seed, "total_steps": steps, "preset": preset_name, "dataset": None}
    if noise_std is not None:
        values["expl_noise"] = noise_std
    config = update_config(config, values, "collect")
    # Keep every transition: a buffer at least as large as the run (it never wraps).
    config = update_config(config, {"buffer_size": max(steps, config.start_steps, config.batch_size)}, "collect")
    agent = cls(env_id, config=config)
    agent.learn(run_dir=run_dir, progress=progress, label=f"behavioral {algo}")
    return buffer_dataset(agent, "final", str(run_dir), seed)


def buffer_dataset(agent: DDPG, kind: str, behavioral_policy: str, seed: int) -> OfflineDataset:
    """The filled part of an online DDPG's (or TD3's) replay buffer as an OfflineDataset.

    Actions go back to environment units; attrs as `collect_dataset` documents them, with the
    agent's expl_noise as noise_std.
    """
    data = {key: value.numpy() for key, value in agent.buffer.state_dict().items() if key not in ("position", "size")}
    actions = agent.action_adapter.to_env(data["actions"]).astype(np.float32)
    attrs = {
        "env_id": agent.config.env_id,
        "kind": kind,
        "behavioral_policy": behavioral_policy,
        "seed": int(seed),
        "noise_std": float(agent.config.expl_noise),
        "random_prob": 0.0,
        "algo": agent.algo,
        "acrl_version": __version__,
    }
    return OfflineDataset(
        data["observations"],
        actions,
        data["rewards"],
        data["next_observations"],
        data["terminated"],
        data["truncated"],
        attrs,
    )
