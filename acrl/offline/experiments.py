"""The BCQ paper's experiments: extrapolation error across buffers, and the concurrent setting.

Fujimoto, Meger, Precup 2019, "Off-Policy Deep Reinforcement Learning without Exploration"
(ICML), Sec. 3 (extrapolation error: an off-policy agent trained on another agent's data fails)
and Sec. 5 (Figure 2: BCQ against offline DDPG on four buffers of the same behavioral DDPG):

- concurrent: the behavioral DDPG trains online (Gaussian exploration); from its growing replay
  buffer an off-policy DDPG, BCQ, behavioral cloning (BC), VAE-BC and a DQN on independently
  discretised actions learn at the same time, in rounds of 1,000 environment steps and then 1,000
  updates each (one update per step on average), never acting themselves (`run_concurrent`,
  `acrl experiment concurrent`).
- final: all transitions of a behavioral DDPG trained with N(0, 0.5) exploration ("for high
  exploration"), a run of its own.
- imitation: the trained behavioral policy acting without noise.
- imperfect: the trained policy with N(0, 0.3) action noise and a uniformly random action with
  probability 0.3.

`run_extrapolation` (`acrl experiment extrapolation`) runs the final buffer's behavioral DDPG and
the concurrent experiment (whose behavioral run's best checkpoint is the policy for imitation and
imperfect), collects those two datasets with `acrl.offline.collect`, and trains
the paper's agents on each for the same number of updates: BCQ, offline DDPG, BC, VAE-BC (BCQ's
VAE alone, `acrl.algos.vae_bc`) and DQN with each action dimension discretised independently into
10 sub-actions (`acrl.algos.dqn`, action_bins; the paper's Supp. D). It writes the tables (markdown
and JSON): per agent and buffer the final evaluation's mean ± std over seeds with its IQM and
95% bootstrap CI (rliable, as `acrl sweep`), and the value estimates, the critic's Q at the
evaluation episodes' first steps against their true discounted return (the extrapolation error
as a number; `OffPolicyAgent.evaluate`); and one figure in the layout of the paper's Figure 2:
a column per buffer, evaluation return against updates (concurrent: against the behavioral
agent's time steps) for every learner with the behavioral policy dashed, and below it the
estimated value of the learners with a value function, BCQ, DDPG and DQN (solid), against the true
value (dashed).

Every agent runs in its own acrl run directory (config.yaml, metrics.csv, checkpoints, eval.json,
learning_curve.png), so `acrl evaluate` and `acrl plot` work on each of them. Both experiments run
as jobs (`acrl.sweep.executor`: a local process pool by default, a Ray cluster with an address),
in parallel where they can: the concurrent runs of every seed, then the datasets
(s{seed}/data-BUFFER/BUFFER.h5), then the offline runs (s{seed}/BUFFER/AGENT); the final buffer
is s{seed}/concurrent/final.h5. Every config is validated on the driver, without building a
network, before the first job starts. Every run checkpoints at each evaluation, so a rerun of an
interrupted experiment goes on from there. An extrapolation experiment can also run by seeds in separate
directories (separate sessions or machines): `merge_extrapolation` combines their summaries.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import yaml  # noqa: E402

from acrl.core.checkpoint import load_checkpoint, set_rng_state  # noqa: E402
from acrl.core.config import RunConfig, preset_values, update_config  # noqa: E402
from acrl.core.envs import check_spaces, env_factory  # noqa: E402
from acrl.core.errors import InputError  # noqa: E402
from acrl.core.files import write_json_atomic, write_text_atomic  # noqa: E402
from acrl.core.loop import Callback, Run, train  # noqa: E402
from acrl.core.plotting import align_curves, read_curve, save_figure  # noqa: E402
from acrl.core.provenance import load_average, provenance, source  # noqa: E402
from acrl.core.version import __version__  # noqa: E402
from acrl.offline.collect import behavioral_run_dir, buffer_dataset, collect_dataset  # noqa: E402
from acrl.parts.datasets import OfflineDataset, save_dataset  # noqa: E402
from acrl.sweep.executor import run_jobs, sessions, wall_clock_s  # noqa: E402
from acrl.sweep.grid import train_run  # noqa: E402
from acrl.sweep.jobs import ClusterOptions, Job  # noqa: E402

BUFFERS = ("final", "concurrent", "imitation", "imperfect")
"""The buffers of the paper's Figure 2, in its order."""

OVERRIDES = (
    "behavioral_overrides",
    "bcq_overrides",
    "ddpg_overrides",
    "bc_overrides",
    "vae_bc_overrides",
    "dqn_overrides",
)
"""The keyword arguments that carry each agent's config fields."""

LEARNERS = {"bcq": "BCQ", "ddpg": "DDPG (off-policy)", "bc": "BC", "vae_bc": "VAE-BC", "dqn": "DQN (discretised)"}
"""The agents that learn from each buffer, with their labels in tables and figures: the paper's Figure 2."""

DQN_ACTION_BINS = 10
"""Sub-actions per action dimension of the experiments' DQN, the paper's (Fujimoto et al. 2019, Supp. D);
`--dqn-set action_bins=N` changes it."""

VALUE_KEYS = ("q_initial_mean", "discounted_return_mean", "q_data_mean", "q_policy_mean")
"""The value estimates of `OffPolicyAgent.evaluate` that the experiments keep as curves."""

ITERATION_STEPS = 1_000
"""Behavioral steps per round of the concurrent run (and its learners' updates): one metrics row each."""

JOBS = "experiment jobs"
"""The experiments' `run_jobs` label: their progress bar's name and their time's key in sessions.json."""


# --------------------------------------------------------------------------------------------
# Configuration helpers
# --------------------------------------------------------------------------------------------


def _config(algo: str, env_id: str, overrides: dict[str, Any], origin: str, fixed: dict[str, Any]) -> RunConfig:
    """algorithm defaults < the env's `default` preset < user overrides < `fixed` (the experiment's own)."""
    from acrl.algos import make_config

    return make_config(algo, env_id, None, overrides, origin, **fixed)[1]


def experiment_defaults(env_id: str) -> dict[str, int]:
    """Default budgets for `env_id`: steps_behavioral (the DDPG preset's total_steps), updates and
    eval_freq (the BCQ preset's), falling back to the configs' defaults without a preset."""
    from acrl.algos.bcq import BCQConfig
    from acrl.algos.ddpg import DDPGConfig

    ddpg = update_config(DDPGConfig(), preset_values("ddpg", env_id, None)[0], "ddpg preset")
    bcq = update_config(BCQConfig(), preset_values("bcq", env_id, None)[0], "bcq preset")
    return {"steps_behavioral": ddpg.total_steps, "updates": bcq.total_steps, "eval_freq": bcq.eval_freq}


def experiment_meta(
    out_dir: Path, label: str, load_before: list[float], origin: dict[str, Any], libraries: Sequence[str]
) -> dict[str, Any]:
    """An experiment summary's `meta`: `acrl.core.provenance.provenance` of the command that wrote it, with
    the commit and load average taken when its `run_jobs` call started (`origin`, `load_before`), and
    "sessions": every call that ran its jobs (label `label` in out_dir/sessions.json: start, end and
    commit each), so a run resumed over several sessions says which code ran when."""
    return {**provenance(load_before, libraries, origin), "sessions": sessions(out_dir, label)}


def _check_out(out_dir: Path) -> None:
    if out_dir.exists() and any(out_dir.iterdir()):
        raise InputError(f"{out_dir} already holds files; choose another --out (experiments never overwrite).")


def record_settings(out_dir: Path, settings: dict[str, Any], announce: str) -> Callable[[], None]:
    """Check that `out_dir` is new or holds the same experiment (whose finished jobs a rerun skips);
    return the function that writes out_dir/experiment.yaml once the jobs' executor is up, and
    prints `announce` on stderr.

    Settings whose value is empty (an agent's overrides when none are given) are left out of the
    comparison, so an experiment written before an agent was added resumes: its finished jobs are
    read, and the new agents' jobs run.

    Raises:
        InputError: `out_dir` holds files of something else.
    """
    path = out_dir / "experiment.yaml"
    text = yaml.safe_dump(settings, sort_keys=False)

    def given(recorded: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in recorded.items() if value != {}}

    if path.exists() and given(yaml.safe_load(path.read_text())) != given(yaml.safe_load(text)):
        raise InputError(
            f"{out_dir} holds another experiment (its experiment.yaml differs); rerun its own command "
            "to resume it, or choose another --out."
        )
    if not path.exists():
        _check_out(out_dir)

    def write() -> None:
        print(announce, file=sys.stderr)
        write_text_atomic(path, text)

    return write


def episode_returns(data: OfflineDataset) -> np.ndarray:
    """Undiscounted returns (float64) of the complete episodes in a dataset, in order.

    An episode ends at a row with `terminals` or `timeouts`; rows after the last end (an episode
    cut by the end of collection) are left out.
    """
    ends = np.flatnonzero(data.terminals | data.timeouts)
    if not len(ends):
        return np.zeros(0)
    sums = np.cumsum(data.rewards.astype(np.float64))[ends]
    return np.diff(np.concatenate([[0.0], sums]))


# --------------------------------------------------------------------------------------------
# Concurrent
# --------------------------------------------------------------------------------------------


def concurrent_configs(
    env_id: str,
    steps: int | None,
    seed: int,
    eval_freq: int | None,
    eval_episodes: int,
    final_dataset: Path,
    behavioral_overrides: dict[str, Any] | None = None,
    bcq_overrides: dict[str, Any] | None = None,
    ddpg_overrides: dict[str, Any] | None = None,
    bc_overrides: dict[str, Any] | None = None,
    vae_bc_overrides: dict[str, Any] | None = None,
    dqn_overrides: dict[str, Any] | None = None,
) -> dict[str, RunConfig]:
    """The validated configs of `run_concurrent`'s six agents (its arguments): {"behavioral": DDPG,
    and for the learners on its buffer "bcq": BCQ, "ddpg": DDPG, "bc": BC, "vae_bc": VAE-BC, "dqn":
    DQN}. No network is built. DQN gets `dqn_values` (the paper's 10 sub-actions per dimension and BCQ's
    gamma, beneath the overrides) and, as BCQ, the final dataset's path to record (it learns offline).
    All six write latest.pt at every evaluation (checkpoint_freq = eval_freq), the behavioral agent's with
    the replay buffer the learners share, so that an interrupted run resumes (`run_concurrent`).

    Raises:
        InputError: an unknown environment, a bad override, a non-positive budget.
    """
    defaults = experiment_defaults(env_id)
    steps = defaults["steps_behavioral"] if steps is None else int(steps)
    eval_freq = defaults["eval_freq"] if eval_freq is None else int(eval_freq)
    if steps < 1 or eval_freq < 1 or eval_episodes < 1:
        raise InputError(f"steps, eval_freq and eval_episodes must be >= 1, got {steps}, {eval_freq}, {eval_episodes}.")
    common = {
        "eval_freq": eval_freq,
        "eval_episodes": eval_episodes,
        "iteration_steps": ITERATION_STEPS,
        "checkpoint_freq": eval_freq,
    }
    behavioral_cfg = _config(
        "ddpg",
        env_id,
        behavioral_overrides or {},
        "--behavioral-set",
        {"seed": seed, "total_steps": steps, "save_replay_buffer": True, **common},
    )
    behavioral_cfg = update_config(
        behavioral_cfg, {"buffer_size": max(steps, behavioral_cfg.start_steps, behavioral_cfg.batch_size)}, "experiment"
    )
    bcq_cfg = _config(
        "bcq",
        env_id,
        bcq_overrides or {},
        "--bcq-set",
        {"seed": seed + 2, "total_steps": steps, "dataset": str(final_dataset), **common},
    )
    ddpg_values = {"gamma": bcq_cfg.gamma, **(ddpg_overrides or {})}
    ddpg_cfg = _config("ddpg", env_id, ddpg_values, "--ddpg-set", {"seed": seed + 1, "total_steps": steps, **common})
    bc_cfg = _config("bc", env_id, bc_overrides or {}, "--bc-set", {"seed": seed + 3, "total_steps": steps, **common})
    vae_bc_cfg = _config(
        "vae_bc", env_id, vae_bc_overrides or {}, "--vae-bc-set", {"seed": seed + 4, "total_steps": steps, **common}
    )
    dqn_cfg = _config(
        "dqn",
        env_id,
        dqn_values(bcq_cfg.gamma, dqn_overrides),
        "--dqn-set",
        {"seed": seed + 5, "total_steps": steps, "dataset": str(final_dataset), **common},
    )
    return {
        "behavioral": behavioral_cfg,
        "ddpg": ddpg_cfg,
        "bcq": bcq_cfg,
        "bc": bc_cfg,
        "vae_bc": vae_bc_cfg,
        "dqn": dqn_cfg,
    }


def check_learners(learners: Sequence[str]) -> None:
    """Refuse a learner subset that is empty, names one twice or one not in `LEARNERS`.

    Raises:
        InputError: saying which, and the learners there are.
    """
    unknown = [name for name in learners if name not in LEARNERS]
    if unknown or not learners or len(set(learners)) < len(learners):
        raise InputError(f"learners must be one or more of {', '.join(LEARNERS)}, each once; got {list(learners)}.")


def dqn_values(gamma: float, overrides: dict[str, Any] | None) -> dict[str, Any]:
    """The experiments' DQN fields beneath the user's `overrides`: action_bins DQN_ACTION_BINS (the paper's
    independently discretised actions) and BCQ's `gamma`, the same discount as every learner's."""
    return {"action_bins": DQN_ACTION_BINS, "gamma": gamma, **(overrides or {})}


def check_experiment(env_id: str, behavioral: RunConfig) -> None:
    """The checks the experiments make on the driver before any job, without building a network:
    the environment's spaces as DDPG, BCQ, BC, VAE-BC and the discretised DQN need them (a flat Box
    observation, a bounded 1-D Box action), and the warning of a `behavioral` budget that never leaves its random start
    steps (`warn_if_all_random`).

    Raises:
        InputError: an unknown environment, a Discrete action space (naming `acrl experiment discrete`),
            an unbounded one.
    """
    from acrl.algos.ddpg import DDPG
    from acrl.algos.off_policy import warn_if_all_random

    probe = env_factory(env_id)[0]()
    try:
        if isinstance(probe.action_space, gym.spaces.Discrete):
            raise InputError(
                "the continuous experiments' agents (BCQ, DDPG, BC, VAE-BC, DQN on discretised actions) act in a "
                f"bounded Box; this environment has {probe.action_space}. For a Discrete action space run "
                "`acrl experiment discrete`."
            )
        check_spaces(probe, "DDPG", DDPG.action_kinds, DDPG.action_space_hint)
        if not probe.action_space.is_bounded():
            raise InputError(
                f"the experiments' agents (DDPG, BCQ, BC, VAE-BC; DQN's bins) act within finite action "
                f"bounds; this environment has {probe.action_space}. Wrap it with "
                "gymnasium.wrappers.ClipAction or RescaleAction."
            )
    finally:
        probe.close()
    warn_if_all_random(behavioral.total_steps, behavioral.start_steps)


def _interrupted_concurrent(out_dir: Path, configs: dict[str, RunConfig]) -> dict[str, dict[str, Any]] | None:
    """The checkpoints ({agent: `load_checkpoint` payload}, in `configs`' order) of a concurrent run in
    `out_dir` that the agents of these `configs` (as built: device and encoder resolved) continue: each
    agent's checkpoints/latest.pt, all at one step before the end and written with these settings; None
    where `out_dir` holds no such run (nothing, or a run killed before its first checkpoint or while
    writing them, whose agents' steps differ)."""
    paths = {name: out_dir / name / "checkpoints" / "latest.pt" for name in configs}
    if not all(path.is_file() for path in paths.values()):
        return None
    checkpoints = {name: load_checkpoint(path) for name, path in paths.items()}
    steps = {checkpoint["state"]["counters"]["num_steps"] for checkpoint in checkpoints.values()}
    same = all(checkpoints[name]["config"] == config.to_dict() for name, config in configs.items())
    if len(steps) != 1 or not same or steps.pop() >= configs["behavioral"].total_steps:
        return None
    return checkpoints


def run_concurrent(
    env_id: str,
    out_dir: str | Path,
    steps: int | None = None,
    seed: int = 0,
    eval_freq: int | None = None,
    eval_episodes: int = 10,
    final_dataset: str | Path | None = None,
    behavioral_overrides: dict[str, Any] | None = None,
    bcq_overrides: dict[str, Any] | None = None,
    ddpg_overrides: dict[str, Any] | None = None,
    bc_overrides: dict[str, Any] | None = None,
    vae_bc_overrides: dict[str, Any] | None = None,
    dqn_overrides: dict[str, Any] | None = None,
    progress: bool = True,
    callbacks: Sequence[Callback] = (),
    start_over: bool = False,
    learners: Sequence[str] = tuple(LEARNERS),
) -> dict[str, Any]:
    """The concurrent experiment (Fujimoto et al. 2019, Sec. 3 and Figure 2 "concurrent").

    A behavioral DDPG (the env's DDPG preset; its replay buffer keeps every transition) trains
    online for `steps` environment steps. An off-policy DDPG (same preset, gamma aligned with
    BCQ's), BCQ, BC, VAE-BC and DQN on independently discretised actions (each the env's preset;
    DQN with `dqn_values`) learn from the behavioral agent's buffer as it grows, never acting: one
    update each per behavioral step. The six train through the run loop in lockstep
    (`acrl.core.loop.train`): each round the behavioral agent takes one iteration of
    `iteration_steps` steps (1,000), then each learner takes as many updates from the buffer as it
    now is, so the learners' update count is the behavioral step count and all six are evaluated at
    the same steps, every `eval_freq` (deterministic,
    `eval_episodes` episodes, env seeded apart). At the end the buffer is written as the `final`
    dataset.

    All six write checkpoints/latest.pt at every evaluation, together after the round (`train`), the
    behavioral agent's with its replay buffer. An out_dir that holds such a run stopped part-way (six
    latest.pt of one step before the end, with these settings: a signal, the OS or the end of a
    session) is resumed from there: the learners get the restored buffer, the behavioral agent starts
    fresh episodes seeded from (seed, step) as any resumed run.

    Args:
        env_id: a registered environment with a bounded Box action space.
        out_dir: directory for the run directories behavioral/, ddpg/, bcq/, bc/, vae_bc/, dqn/
            (new, empty, or holding a run to resume) and, by default, final.h5.
        steps: behavioral environment steps (default: the DDPG preset's total_steps).
        seed: the behavioral agent's seed; the DDPG learner gets seed + 1, BCQ seed + 2, BC seed + 3,
            VAE-BC seed + 4, DQN seed + 5.
        eval_freq: environment steps between evaluations (default: the BCQ preset's eval_freq).
        eval_episodes: episodes per evaluation.
        final_dataset: where to write the final buffer (default out_dir/final.h5).
        behavioral_overrides, bcq_overrides, ddpg_overrides, bc_overrides, vae_bc_overrides,
            dqn_overrides: config fields per agent.
        progress: progress bar of the behavioral run.
        callbacks: `acrl.core.loop.Callback`s of each of the six runs (a sweep's file shipping).
        start_over: when out_dir holds files that are not a run to resume (one killed while its
            checkpoints were written, or before the first), delete them and start from step 0 (an
            experiment's job) instead of raising.
        learners: the learners that train beside the behavioral agent (keys of `LEARNERS`; default all).
            Each samples its batches from its own generator, and DDPG, BC and DQN update without drawing
            random numbers, so their runs and the behavioral agent's are the same whichever learners train
            beside them; BCQ's and VAE-BC's VAEs draw from torch's global generator, which they share.
    Returns:
        JSON-ready dict: env_id, seed, steps, eval_freq, curves {behavioral and each of `learners`:
        [[step, return_mean], ...]}, values {name: {VALUE_KEYS entry: [[step, value], ...]}}, final {name:
        last evaluation}, best {name: best evaluation}, run_dirs {name: path}, final_dataset
        (path), data_episode_return (mean over the buffer's complete episodes).
    Raises:
        InputError: an unknown environment, a Discrete or unbounded action space, a bad override,
            a non-positive budget, an unknown or no learner, or an out_dir that holds files but not a run
            to resume (unless `start_over`).
    """
    from acrl.algos.bc import BC
    from acrl.algos.bcq import BCQ
    from acrl.algos.ddpg import DDPG
    from acrl.algos.dqn import DQN
    from acrl.algos.vae_bc import VAEBC

    out_dir = Path(out_dir)
    check_learners(learners)
    final_dataset = Path(final_dataset or out_dir / "final.h5").resolve()
    configs = concurrent_configs(
        env_id,
        steps,
        seed,
        eval_freq,
        eval_episodes,
        final_dataset,
        behavioral_overrides,
        bcq_overrides,
        ddpg_overrides,
        bc_overrides,
        vae_bc_overrides,
        dqn_overrides,
    )
    behavioral = DDPG(env_id, config=configs["behavioral"])
    classes = {"ddpg": DDPG, "bcq": BCQ, "bc": BC, "vae_bc": VAEBC, "dqn": DQN}
    agents = {
        "behavioral": behavioral,
        **{
            name: classes[name](env_id, config=configs[name], buffer=behavioral.buffer)
            for name in configs
            if name in learners
        },
    }
    checkpoints = _interrupted_concurrent(out_dir, {name: agent.config for name, agent in agents.items()})
    if checkpoints is None and start_over:
        _delete(out_dir)
    elif checkpoints is None and out_dir.exists() and any(out_dir.iterdir()):
        raise InputError(
            f"{out_dir} holds files but not a concurrent run to resume with these settings (its agents' "
            "checkpoints/latest.pt at one step); choose another out_dir."
        )
    for name, checkpoint in (checkpoints or {}).items():  # the behavioral agent's first: it restores the buffer
        agents[name].load_state_dict(checkpoint["state"])
        set_rng_state(checkpoint["rng"], agents[name].rng)
    steps, eval_freq = behavioral.config.total_steps, behavioral.config.eval_freq
    torch.set_num_threads(behavioral.config.torch_threads)  # as Agent.learn does; oversubscribed threads crawl
    behavioral.before_learning()
    runs = [
        Run(agent, out_dir / name, progress, callbacks, label=f"concurrent {name}") for name, agent in agents.items()
    ]
    train(runs)  # lockstep: each round, the behavioral agent's steps, then as many updates of each learner
    data = buffer_dataset(behavioral, "final", str(out_dir / "behavioral"), seed)
    save_dataset(final_dataset, data)
    returns = episode_returns(data)
    curves = {name: _curve(out_dir / name) for name in agents}
    return {
        "env_id": env_id,
        "seed": seed,
        "steps": steps,
        "eval_freq": eval_freq,
        "curves": curves,
        "values": {name: _value_curves(out_dir / name) for name in agents},
        "final": {name: curve[-1][1] for name, curve in curves.items()},
        "best": {name: agent.best_eval["return_mean"] for name, agent in agents.items()},
        "run_dirs": {name: str(out_dir / name) for name in agents},
        "final_dataset": str(final_dataset),
        "data_episode_return": float(returns.mean()) if len(returns) else None,
    }


# --------------------------------------------------------------------------------------------
# Extrapolation (Figure 2)
# --------------------------------------------------------------------------------------------


def _delete(path: Path) -> None:
    """Delete the file or directory tree at `path`, if any: what an interrupted attempt of a job
    that restarts from scratch left there."""
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def concurrent_job(root: Path, job_dir: Path, callbacks: list[Callback], **kwargs: Any) -> dict[str, Any]:
    """An experiment's job: `run_concurrent` into `job_dir` (resuming an interrupted attempt, else from
    scratch), the final buffer as job_dir/final.h5."""
    return run_concurrent(
        out_dir=job_dir,
        final_dataset=job_dir / "final.h5",
        callbacks=callbacks,
        progress=False,
        start_over=True,
        **kwargs,
    )


def collect_job(
    root: Path,
    job_dir: Path,
    callbacks: list[Callback],
    kind: str,
    steps: int,
    seed: int,
    policy: str | None = None,
    **options: Any,
) -> dict[str, Any]:
    """An experiment's job: `collect_dataset` of `kind` into job_dir/KIND.h5, from `policy` (a
    checkpoint relative to the root) or, for final, from a behavioral DDPG that trains with
    `options` (env_id, noise_std, overrides). Returns the mean return of the dataset's complete
    episodes and, for final, the behavioral agent's last evaluation ("return")."""
    _delete(job_dir)
    job_dir.mkdir(parents=True)
    out = job_dir / f"{kind}.h5"
    data = collect_dataset(kind, out, steps, policy=None if policy is None else root / policy, seed=seed, **options)
    returns = episode_returns(data)
    result = {"data_episode_return": float(returns.mean()) if len(returns) else None}
    if kind == "final":
        result["return"] = _curve(behavioral_run_dir(out))[-1][1]
    return result


def _curve(run_dir: Path, key: str = "eval/return_mean") -> list[list[float]]:
    """[[step, value of `key`], ...] of a finished run directory (empty when it never logged `key`)."""
    steps, values = read_curve(run_dir, key)
    return [[int(s), float(v)] for s, v in zip(steps, values, strict=True)]


def _value_curves(run_dir: Path) -> dict[str, list[list[float]]]:
    """{key: [[step, value], ...]} of the VALUE_KEYS evaluations in a finished run directory."""
    return {key: _curve(run_dir, f"eval/{key}") for key in VALUE_KEYS}


def offline_jobs(
    env_id: str,
    out_dir: Path,
    seeds: Sequence[int],
    datasets: dict[str, str],
    offline: dict[str, dict[str, Any]],
    updates: int,
    common: dict[str, Any],
) -> list[Job]:
    """The offline runs of an experiment as jobs (`acrl.sweep.grid.train_run`): each agent of `offline`
    (algorithm -> its config fields, over its env preset) learning `updates` gradient updates from each
    dataset of `datasets` (buffer kind -> the name of the job that writes it, JOB/KIND.h5 as
    `collect_job` does, "{seed}" in it), for each seed, into s{seed}/KIND/ALGO, each run after that
    job; `common` (eval_freq, eval_episodes) for every run. Each run writes latest.pt at every evaluation
    (checkpoint_freq = eval_freq unless its fields say otherwise), so one killed by the OS or the end of a
    session resumes from its last evaluation rather than its start. In `offline`'s order, so that the long
    runs come first and the short ones then fill the gaps."""
    jobs = []
    for algo, values in offline.items():
        for seed in seeds:
            for kind, writer in datasets.items():
                dataset = f"{writer.format(seed=seed)}/{kind}.h5"
                flags = {"seed": seed, "total_steps": updates, "dataset": str(out_dir / dataset)}
                jobs.append(
                    Job(
                        f"s{seed}/{kind}/{algo}",
                        train_run,
                        {
                            "algo": algo,
                            "env_id": env_id,
                            "preset": None,
                            "overrides": {"checkpoint_freq": common["eval_freq"], **values, **common},
                            "flags": flags,
                        },
                        inputs=(dataset,),
                        steps=updates,
                        after=(writer.format(seed=seed),),
                    )
                )
    return jobs


def offline_result(out_dir: Path, name: str, trained: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One finished offline run (`offline_jobs`' job `name`, "s{seed}/KIND/ALGO") as the experiments'
    results hold it: curve [[update, return], ...], final (the last evaluation's return), best, values
    (`VALUE_KEYS` curves), run_dir."""
    run_dir = out_dir / name
    curve = _curve(run_dir)
    return {
        "curve": curve,
        "final": curve[-1][1],
        "best": trained[name]["best"],
        "values": _value_curves(run_dir),
        "run_dir": str(run_dir),
    }


def run_extrapolation(
    env_id: str,
    out_dir: str | Path,
    steps_behavioral: int | None = None,
    updates: int | None = None,
    seeds: list[int] | tuple[int, ...] = (0,),
    dataset_size: int | None = None,
    eval_freq: int | None = None,
    eval_episodes: int = 10,
    behavioral_overrides: dict[str, Any] | None = None,
    bcq_overrides: dict[str, Any] | None = None,
    ddpg_overrides: dict[str, Any] | None = None,
    bc_overrides: dict[str, Any] | None = None,
    vae_bc_overrides: dict[str, Any] | None = None,
    dqn_overrides: dict[str, Any] | None = None,
    final_noise: float = 0.5,
    progress: bool = True,
    options: ClusterOptions | None = None,
    datasets_only: bool = False,
    learners: Sequence[str] = tuple(LEARNERS),
) -> dict[str, Any]:
    """The paper's Figure 2 experiment on one environment; writes extrapolation.{json,md,png}.

    Per seed, as in the paper's Sec. 5: the final buffer, every transition of a behavioral DDPG
    trained for `steps_behavioral` steps with N(0, final_noise) exploration ("for high
    exploration", 0.5), and beside it `run_concurrent` (a behavioral DDPG with its preset's
    N(0, 0.1), with its concurrent learners); then imitation and imperfect datasets of
    `dataset_size` transitions from the concurrent behavioral run's best checkpoint
    (`acrl.offline.collect`); then the learners (`LEARNERS`: BCQ, offline DDPG, BC, VAE-BC and the
    discretised DQN) trained for `updates` gradient updates on each of final, imitation and
    imperfect. The offline DDPG uses the DDPG preset with BCQ's gamma, the paper's "same data, same
    settings" baseline; the DQN its preset with `dqn_values` (10 sub-actions per dimension, BCQ's gamma).

    Args:
        env_id: a registered environment with a bounded Box action space.
        out_dir: the directory for everything (s{seed}/... run directories and datasets): new,
            empty, or holding this same experiment, whose finished jobs a rerun skips.
        steps_behavioral: behavioral environment steps (default: the DDPG preset's total_steps).
        updates: gradient updates of each offline agent (default: the BCQ preset's total_steps).
        seeds: one full experiment per seed.
        dataset_size: transitions of the imitation and imperfect datasets (default:
            steps_behavioral, the size of the final buffer, as in the paper).
        eval_freq: updates (concurrent: steps) between evaluations (default: the BCQ preset's).
        eval_episodes: episodes per evaluation (deterministic; the paper uses 10).
        behavioral_overrides, bcq_overrides, ddpg_overrides, bc_overrides, vae_bc_overrides,
            dqn_overrides: config fields per agent (behavioral_overrides: both behavioral DDPGs).
        final_noise: the exploration noise std of the final buffer's behavioral DDPG (fraction
            of max_action; the paper's 0.5).
        progress: a progress bar over the jobs' steps.
        options: where the jobs run (`acrl.sweep.executor`; default: a process pool on this
            machine, one job per core). A rerun of the same experiment into the same out_dir skips
            finished jobs and resumes interrupted ones from their last evaluation; into the
            directory of one run before VAE-BC and DQN were added, it trains only their offline runs
            (its concurrent runs, which do not hold them, are kept, and the table shows "-" for the
            new learners there).
        datasets_only: write the final, imitation and imperfect datasets and nothing else: each seed's
            behavioral DDPG trains alone (s{seed}/behavioral) rather than with its concurrent learners,
            which never act nor touch its random streams, so it is the same run and its datasets are
            the full experiment's, in an hour less on Hopper-sized tasks (the data of studies such
            as benchmarks/bcq_spectrum.py, redone on a fresh machine). Writes datasets.json.
        learners: the learners that train (keys of `LEARNERS`, default all): e.g. those a table of an
            experiment run before they existed lacks, on the same datasets (as `datasets_only` redoes them),
            whose summary `merge_extrapolation` then joins to it. A subset's concurrent runs are the full
            experiment's, except BCQ's and VAE-BC's, which share torch's generator (`run_concurrent`), and
            except where either was interrupted: a resumed behavioral DDPG starts fresh episodes, so its
            datasets differ from those of a run in one go, and `merge_extrapolation` refuses to join the two.
    Returns:
        datasets_only: the JSON written to datasets.json: meta, settings and, per buffer and seed, the dataset's
        path, the behavioral policy's return and the data's episode return. Otherwise the JSON written
        to extrapolation.json: meta (`experiment_meta`: command, commit, sessions, ...), settings,
        wall_clock_s (summed over the sessions that ran its jobs, `acrl.sweep.executor.wall_clock_s`),
        results[kind][agent] (per seed: the return curve, final and best evaluations, value-estimate
        curves, run directory; the behavioral entries: its return and the data's episode return) and the
        table rows.
    Raises:
        InputError: as `run_concurrent`; no seeds; learners with datasets_only; an out_dir that holds
            something else; an address (`options`) without Ray installed, or that does not answer. All
            before any job.
    """
    out_dir = Path(out_dir).resolve()
    options = options or ClusterOptions()
    if not seeds:
        raise InputError("--seeds needs at least one seed.")
    check_learners(learners)
    learners = [name for name in LEARNERS if name in learners]  # the table's order
    if datasets_only and len(learners) < len(LEARNERS):
        raise InputError("--learners chooses who trains on the datasets; --datasets-only trains none of them.")
    defaults = experiment_defaults(env_id)
    steps_behavioral = defaults["steps_behavioral"] if steps_behavioral is None else int(steps_behavioral)
    updates = defaults["updates"] if updates is None else int(updates)
    eval_freq = defaults["eval_freq"] if eval_freq is None else int(eval_freq)
    dataset_size = steps_behavioral if dataset_size is None else int(dataset_size)
    if min(steps_behavioral, updates, eval_freq, dataset_size, eval_episodes) < 1:
        raise InputError("steps_behavioral, updates, eval_freq, dataset_size and eval_episodes must be >= 1.")
    if not final_noise >= 0:
        raise InputError(f"--final-noise must be >= 0 (a std as a fraction of max_action), got {final_noise}.")
    common = {"eval_freq": eval_freq, "eval_episodes": eval_episodes}
    overrides = {
        "behavioral_overrides": behavioral_overrides or {},
        "bcq_overrides": bcq_overrides or {},
        "ddpg_overrides": ddpg_overrides or {},
        "bc_overrides": bc_overrides or {},
        "vae_bc_overrides": vae_bc_overrides or {},
        "dqn_overrides": dqn_overrides or {},
    }
    configs = concurrent_configs(
        env_id, steps_behavioral, seeds[0], eval_freq, eval_episodes, out_dir / "final.h5", **overrides
    )
    check_experiment(env_id, configs["behavioral"])
    on_start = record_settings(
        out_dir,
        {
            "experiment": "extrapolation",
            **({"datasets_only": True} if datasets_only else {}),
            **({"learners": learners} if len(learners) < len(LEARNERS) else {}),
            "env_id": env_id,
            "seeds": list(seeds),
            "steps_behavioral": steps_behavioral,
            "updates": updates,
            "dataset_size": dataset_size,
            "final_noise": final_noise,
            **common,
            **overrides,
        },
        f"experiment extrapolation on {env_id} -> {out_dir}",
    )
    ddpg_offline = {"gamma": configs["bcq"].gamma, **overrides["ddpg_overrides"]}
    # One pool of jobs over seeds, buffers and agents: the behavioral runs (final buffer, concurrent),
    # the datasets each concurrent behavioral policy collects once its run is done, and the offline
    # runs, each once its dataset is written; a free core takes the next job that can start.
    final_options = {
        "env_id": env_id,
        "noise_std": final_noise,
        "overrides": {**overrides["behavioral_overrides"], **common},
    }
    behavioral = "s{seed}/behavioral" if datasets_only else "s{seed}/concurrent"  # the job that trains it
    policy = behavioral + ("/checkpoints/best.pt" if datasets_only else "/behavioral/checkpoints/best.pt")
    offline = {  # the long runs first (BCQ's, then VAE-BC's), the short ones then fill the gaps
        "bcq": overrides["bcq_overrides"],
        "vae_bc": overrides["vae_bc_overrides"],
        "ddpg": ddpg_offline,
        "dqn": dqn_values(configs["bcq"].gamma, overrides["dqn_overrides"]),
        "bc": overrides["bc_overrides"],
    }
    offline = {algo: values for algo, values in offline.items() if algo in learners}
    datasets = {  # the jobs that write them
        "final": "s{seed}/final",
        "imitation": "s{seed}/data-imitation",
        "imperfect": "s{seed}/data-imperfect",
    }
    if datasets_only:  # each behavioral DDPG alone, with every field of the concurrent run's behavioral agent
        behavioral_jobs = [
            Job(
                behavioral.format(seed=seed),
                train_run,
                {
                    "algo": "ddpg",
                    "env_id": env_id,
                    "preset": None,
                    "overrides": {
                        key: value
                        for key, value in concurrent_configs(
                            env_id, steps_behavioral, seed, eval_freq, eval_episodes, out_dir / "final.h5", **overrides
                        )["behavioral"]
                        .to_dict()
                        .items()
                        if key != "env_id"
                    },
                    "flags": {},
                },
                steps=steps_behavioral,
            )
            for seed in seeds
        ]
    else:
        behavioral_jobs = [
            Job(
                f"s{seed}/concurrent",
                concurrent_job,
                {  # the long jobs first
                    "env_id": env_id,
                    "steps": steps_behavioral,
                    "seed": seed,
                    "eval_freq": eval_freq,
                    "eval_episodes": eval_episodes,
                    "learners": learners,
                    **overrides,
                },
                steps=steps_behavioral,
            )
            for seed in seeds
        ]
    jobs = [
        *behavioral_jobs,
        *(
            Job(
                f"s{seed}/final",
                collect_job,
                {"kind": "final", "steps": steps_behavioral, "seed": seed, **final_options},
                steps=steps_behavioral,
            )
            for seed in seeds
        ),
        *(
            Job(
                f"s{seed}/data-{kind}",
                collect_job,
                {"kind": kind, "steps": dataset_size, "policy": policy.format(seed=seed), "seed": seed},
                inputs=(policy.format(seed=seed),),
                steps=dataset_size,
                after=(behavioral.format(seed=seed),),
            )
            for seed in seeds
            for kind in ("imitation", "imperfect")
        ),
        *([] if datasets_only else offline_jobs(env_id, out_dir, seeds, datasets, offline, updates, common)),
    ]
    load_before, origin = load_average(), source()
    done = run_jobs(jobs, out_dir, options, progress, on_start=on_start, label=JOBS)
    meta = experiment_meta(out_dir, JOBS, load_before, origin, ("h5py", "mujoco"))
    if datasets_only:
        return write_datasets(
            out_dir, env_id, seeds, steps_behavioral, dataset_size, final_noise, overrides, done, meta
        )

    results: dict[str, dict[str, list[dict[str, Any]]]] = {
        kind: {"behavioral": [], **{algo: [] for algo in learners}} for kind in BUFFERS
    }
    for seed in seeds:
        c = done[f"s{seed}/concurrent"]
        results["concurrent"]["behavioral"].append(
            {
                "return": c["final"]["behavioral"],
                "curve": c["curves"]["behavioral"],
                "data_episode_return": c["data_episode_return"],
            }
        )
        for algo in (a for a in learners if a in c["curves"]):  # a run from before VAE-BC and DQN lacks them
            results["concurrent"][algo].append(
                {
                    "curve": c["curves"][algo],
                    "final": c["final"][algo],
                    "best": c["best"][algo],
                    "values": c["values"][algo],
                    "run_dir": c["run_dirs"][algo],
                }
            )
        results["final"]["behavioral"].append(done[f"s{seed}/final"])
        for kind in ("imitation", "imperfect"):
            results[kind]["behavioral"].append({"return": c["best"]["behavioral"], **done[f"s{seed}/data-{kind}"]})
        for kind in datasets:
            for algo in offline:
                results[kind][algo].append(offline_result(out_dir, f"s{seed}/{kind}/{algo}", done))
    summary = {
        "meta": meta,
        "env_id": env_id,
        "seeds": list(seeds),
        "steps_behavioral": steps_behavioral,
        "updates": updates,
        "dataset_size": dataset_size,
        "final_noise": final_noise,
        "eval_freq": eval_freq,
        "eval_episodes": eval_episodes,
        "overrides": overrides,
        "wall_clock_s": wall_clock_s(out_dir, JOBS),
        "acrl_version": __version__,
        "results": results,
        "table": results_table(results),
    }
    write_extrapolation(summary, out_dir)
    return summary


def write_datasets(
    out_dir: Path,
    env_id: str,
    seeds: Sequence[int],
    steps_behavioral: int,
    dataset_size: int,
    final_noise: float,
    overrides: dict[str, dict[str, Any]],
    done: dict[str, dict[str, Any]],
    meta: dict[str, Any],
) -> dict[str, Any]:
    """`run_extrapolation(datasets_only=True)`'s summary from its finished jobs (`done`), written to
    out_dir/datasets.json: its `meta` (`experiment_meta`), the settings and datasets[kind] per seed: path,
    the behavioral policy's return (final: its last evaluation; imitation, imperfect: the best, whose
    checkpoint collected them) and the data's episode return, the numbers extrapolation.json holds for the
    same seeds' behavioral entries."""
    datasets: dict[str, list[dict[str, Any]]] = {kind: [] for kind in ("final", "imitation", "imperfect")}
    for seed in seeds:
        best = done[f"s{seed}/behavioral"]["best"]  # final's own behavioral run reports its "return" in its job's
        for kind in datasets:
            job = f"s{seed}/final" if kind == "final" else f"s{seed}/data-{kind}"
            datasets[kind].append(
                {"seed": seed, "path": str(out_dir / job / f"{kind}.h5"), "return": best, **done[job]}
            )
    summary = {
        "meta": meta,
        "env_id": env_id,
        "seeds": list(seeds),
        "steps_behavioral": steps_behavioral,
        "dataset_size": dataset_size,
        "final_noise": final_noise,
        "overrides": overrides,
        "wall_clock_s": wall_clock_s(out_dir, JOBS),
        "acrl_version": __version__,
        "datasets": datasets,
    }
    write_json_atomic(out_dir / "datasets.json", summary)
    return summary


def write_extrapolation(summary: dict[str, Any], out_dir: Path) -> None:
    """Write a `run_extrapolation` summary as out_dir/extrapolation.json, its tables as extrapolation.md (both
    atomically) and its figure as extrapolation.png."""
    write_json_atomic(out_dir / "extrapolation.json", summary)
    write_text_atomic(out_dir / "extrapolation.md", extrapolation_markdown(summary))
    plot_extrapolation(summary, out_dir / "extrapolation.png")


MERGED_SETTINGS = (
    "env_id",
    "steps_behavioral",
    "updates",
    "dataset_size",
    "final_noise",
    "eval_freq",
    "eval_episodes",
    "overrides",
)
"""The keys of a `run_extrapolation` summary that the parts of one experiment share (`merge_extrapolation`)."""


def merge_extrapolation(parts: Sequence[dict[str, Any]], out_dir: str | Path) -> dict[str, Any]:
    """One experiment from `run_extrapolation` summaries of the same settings whose runs do not overlap:
    parts over disjoint seeds (run in separate sessions, each as long as its seeds take) and parts of other
    learners on the same seeds (`run_extrapolation`'s `learners`, e.g. those added after a table was made, on
    its datasets redone). Each learner's run of a seed comes from one part, and every learner has every
    seed. A seed's behavioral entries come from the first part that has it; any other part with that seed
    must report the same behavioral returns and data episode returns for every buffer, the mark of the same
    datasets. results[kind][agent] in the order of the seeds (an agent with no runs in a buffer for some
    seed, as a concurrent run from before it was added, has none there), the table over all of them
    (`results_table`), wall_clock_s summed, acrl_version the parts' versions (distinct, comma-separated), meta
    the merge's own `provenance` (no load average: it measures nothing) with the parts' meta as "parts";
    written to out_dir as `run_extrapolation` writes it (extrapolation.json, .md, .png). The runs'
    directories stay those of the parts.

    Raises:
        InputError: fewer than two parts; a part without a setting of `MERGED_SETTINGS` or acrl_version
            (written before summaries recorded them), with other settings than the first, with a learner's
            seed another part has too, or with a seed's behavioral returns other than another part's; a
            learner without a seed the others have; all before anything is written.
    """
    if len(parts) < 2:
        raise InputError(f"merging takes two or more extrapolation.json files, got {len(parts)}.")
    first = parts[0]
    for p, part in enumerate(parts):
        missing = [key for key in (*MERGED_SETTINGS, "acrl_version") if key not in part]
        if missing:
            raise InputError(
                f"part {p + 1} lacks {', '.join(missing)}: an extrapolation.json written before the summary "
                "recorded them cannot be merged; rerun its seeds."
            )
        differ = [key for key in MERGED_SETTINGS if part[key] != first[key]]
        if differ:
            raise InputError(
                f"part {p + 1} ran other settings than part 1 ({', '.join(differ)}: "
                + "; ".join(f"{part[key]!r} against {first[key]!r}" for key in differ)
                + "): only runs of one experiment merge."
            )
    behavioral: dict[int, tuple[int, int]] = {}  # seed -> (part, its index there)
    sources: dict[tuple[int, str], tuple[int, int]] = {}  # (seed, learner) -> (part, index)
    for p, part in enumerate(parts):
        for i, seed in enumerate(part["seeds"]):
            if seed in behavioral:
                q, j = behavioral[seed]
                for kind in BUFFERS:
                    ours, theirs = part["results"][kind]["behavioral"][i], parts[q]["results"][kind]["behavioral"][j]
                    for key in ("return", "data_episode_return"):
                        if ours[key] != theirs[key]:
                            raise InputError(
                                f"seed {seed}'s {kind} behavioral {key} is {ours[key]} in part {p + 1} and "
                                f"{theirs[key]} in part {q + 1}: learners merge only on the same datasets."
                            )
            else:
                behavioral[seed] = (p, i)
            for algo in learners_of(part["results"]["final"]):
                if (seed, algo) in sources:
                    raise InputError(
                        f"seed {seed}'s {LEARNERS[algo]} is in parts {sources[seed, algo][0] + 1} and {p + 1}: "
                        "each learner's run of a seed must come from one part."
                    )
                sources[seed, algo] = (p, i)
    seeds = sorted(behavioral)
    learners = [algo for algo in LEARNERS if any(name == algo for _, name in sources)]
    lacking = [f"{LEARNERS[algo]} seed {seed}" for algo in learners for seed in seeds if (seed, algo) not in sources]
    if lacking:
        raise InputError(f"the parts lack {', '.join(lacking)}: every learner needs every seed of the parts.")

    def runs(kind: str, agent: str) -> list[dict[str, Any]]:
        where = [behavioral[seed] if agent == "behavioral" else sources[seed, agent] for seed in seeds]
        held = [parts[p]["results"][kind][agent] for p, _ in where]
        return [entries[i] for entries, (_, i) in zip(held, where)] if all(held) else []

    results = {kind: {agent: runs(kind, agent) for agent in ("behavioral", *learners)} for kind in BUFFERS}
    times = [part["wall_clock_s"] for part in parts]
    summary = {
        "meta": {**provenance(None, ("h5py", "mujoco")), "parts": [part.get("meta") for part in parts]},
        **{key: first[key] for key in MERGED_SETTINGS},
        "acrl_version": ", ".join(dict.fromkeys(part["acrl_version"] for part in parts)),
        "seeds": seeds,
        "wall_clock_s": None if None in times else round(sum(times), 1),
        "results": results,
        "table": results_table(results),
    }
    write_extrapolation(summary, Path(out_dir))
    return summary


def _mean_std(values: list[float | None]) -> list[float] | None:
    values = [v for v in values if v is not None]
    return [float(np.mean(values)), float(np.std(values))] if values else None


def _last(curve: list[list[float]]) -> float | None:
    return curve[-1][1] if curve else None


def learners_of(results: dict[str, Any]) -> dict[str, str]:
    """The entries of `LEARNERS` that an extrapolation summary's results (or table) hold, in that order."""
    return {algo: label for algo, label in LEARNERS.items() if algo in results}


def results_table(
    results: dict[str, Any], buffers: Sequence[str] = BUFFERS, learners: dict[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """table[agent][kind] for the `buffers` and `learners` of an experiment (default: Figure 2's buffers and
    the learners of `LEARNERS` that results[buffers[0]] holds, `learners_of`): the final
    evaluation over seeds as mean ± std ("final"), its IQM with 95%
    bootstrap CI ("iqm", "iqm_ci"; `acrl.sweep.results.interval_estimates`), the best evaluation
    ("best"); for the learners with Q-values the last value estimates ("q_initial": Q(s_0, a_0),
    "true_value": the discounted return it estimates, "q_data", "q_policy"); for the behavioral
    policy "return" and the data's episode return ("data_episodes"). A learner without runs in a
    buffer (the concurrent runs of an experiment from before it was added) has None in every entry."""
    from acrl.sweep.results import interval_estimates

    learners = learners_of(results[buffers[0]]) if learners is None else learners
    table: dict[str, dict[str, Any]] = {"behavioral": {}, **{algo: {} for algo in learners}}
    estimates = interval_estimates(
        {
            f"{algo}/{kind}": np.array([x["final"] for x in results[kind][algo]])
            for kind in buffers
            for algo in learners
            if results[kind][algo]
        }
    )  # one bootstrap for every cell
    missing = {"iqm": None, "iqm_ci": None}
    for kind in buffers:
        r = results[kind]
        table["behavioral"][kind] = {
            "return": _mean_std([b["return"] for b in r["behavioral"]]),
            "data_episodes": _mean_std([b["data_episode_return"] for b in r["behavioral"]]),
        }
        for algo in learners:
            runs = r[algo]
            estimate = estimates.get(f"{algo}/{kind}", missing)
            cell = {
                "final": _mean_std([x["final"] for x in runs]),
                "iqm": estimate["iqm"],
                "iqm_ci": estimate["iqm_ci"],
                "best": _mean_std([x["best"] for x in runs]),
            }
            for name, key in (
                ("q_initial", "q_initial_mean"),
                ("true_value", "discounted_return_mean"),
                ("q_data", "q_data_mean"),
                ("q_policy", "q_policy_mean"),
            ):
                cell[name] = _mean_std([_last(x["values"][key]) for x in runs])
            table[algo][kind] = cell
    return table


def _cell(value: list[float] | None) -> str:
    if value is None:
        return "-"
    mean, std = value
    return f"{mean:.1f} ± {std:.1f}"


def _iqm(cell: dict[str, Any]) -> str:
    """The cell's IQM and CI as " (IQM [low, high])", or "" for a cell without runs."""
    if cell["iqm"] is None:
        return ""
    return f" ({cell['iqm']:.1f} [{cell['iqm_ci'][0]:.1f}, {cell['iqm_ci'][1]:.1f}])"


def results_markdown(table: dict[str, Any], buffers: Sequence[str], learners: dict[str, str]) -> list[str]:
    """The result tables of an offline experiment (`results_table`) as markdown lines, a column per buffer:
    the final evaluation return (mean ± std over seeds, IQM [95% CI]) of the behavioral policy and of each
    learner, the dataset's episodes, then the value estimates of the learners with Q-values (Q at the
    evaluation episodes' first steps against the true discounted return); "-" where a learner has no runs."""
    header = ["| | " + " | ".join(kind for kind in buffers) + " |", "| --- |" + " ---: |" * len(buffers)]
    lines = [
        "Final evaluation return, mean ± std over seeds, and IQM [95% bootstrap CI]:",
        "",
        *header,
        "| behavioral policy | " + " | ".join(_cell(table["behavioral"][k]["return"]) for k in buffers) + " |",
    ]
    for algo, label in learners.items():
        cells = [f"{_cell(c['final'])}{_iqm(c)}" for c in (table[algo][k] for k in buffers)]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += [
        "| dataset episodes | " + " | ".join(_cell(table["behavioral"][k]["data_episodes"]) for k in buffers) + " |",
        "",
        "Value estimates at the last evaluation: the critic's Q(s0, a0) at the evaluation episodes' "
        "first steps / their true discounted return (mean over seeds):",
        "",
        *header,
    ]
    for algo, label in learners.items():
        if any(table[algo][k]["q_initial"] is not None for k in buffers):
            cells = [f"{_cell(c['q_initial'])} / {_cell(c['true_value'])}" for c in (table[algo][k] for k in buffers)]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def extrapolation_markdown(summary: dict[str, Any]) -> str:
    """The tables of `run_extrapolation` as markdown: returns (mean ± std over seeds, IQM [95% CI])
    and value estimates (the critic's Q against the true discounted return)."""
    learners = learners_of(summary["table"])
    labels = list(learners.values())
    names = ", ".join(labels[:-1]) + " and " + labels[-1] if len(labels) > 1 else labels[0]
    notes = [
        "behavioral policy: the noise-free DDPG (final, concurrent: each behavioral run at its end; "
        "imitation, imperfect: the concurrent run's best checkpoint, which collected them). dataset "
        "episodes: mean return of the complete episodes stored in the buffer. final: last evaluation."
    ]
    if "dqn" in learners:
        notes.append(
            f"DQN: each action dimension discretised independently into {DQN_ACTION_BINS} sub-actions unless "
            "--dqn-set action_bins says otherwise (the paper's Supp. D)."
        )
    if any(summary["table"][algo][kind]["final"] is None for algo in learners for kind in BUFFERS):
        notes.append("-: no runs (a concurrent run from before the learner was added).")
    lines = [
        f"### {names} on {summary['env_id']} (Fujimoto et al. 2019, Figure 2)",
        "",
        f"Seeds {summary['seeds']}; behavioral DDPG {summary['steps_behavioral']} steps (final buffer: "
        f"N(0, {summary['final_noise']}) exploration); imitation/imperfect "
        f"{summary['dataset_size']} transitions; {summary['updates']} updates per offline agent (concurrent: one "
        f"per behavioral step); evaluation: {summary['eval_episodes']} deterministic episodes every "
        f"{summary['eval_freq']}.",
        "",
        *results_markdown(summary["table"], BUFFERS, learners),
        "",
        " ".join(notes),
        "",
    ]
    return "\n".join(lines)


def _band(curves: list[list[list[float]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and std over seeds of several [step, value] curves on the steps they share (`align_curves`)."""
    steps, values = align_curves([tuple(np.asarray(c, dtype=float).T) for c in curves])
    return steps, values.mean(0), values.std(0)


COLORS = {
    "bcq": "tab:red",
    "ddpg": "tab:blue",
    "bc": "tab:green",
    "vae_bc": "tab:purple",
    "dqn": "tab:orange",
    "discrete_bcq": "tab:red",
}


def plot_extrapolation(
    summary: dict[str, Any],
    out: str | Path,
    buffers: Sequence[str] = BUFFERS,
    learners: dict[str, str] | None = None,
) -> Path:
    """Figure 2's layout, a column per buffer of `buffers` (default Figure 2's). Top: the `learners`'
    (default: those of `LEARNERS` the summary holds) evaluation return (mean, band of one std over seeds)
    against updates, the behavioral policy dashed. Bottom: the value estimates of the learners with
    Q-values (of the default ones BCQ, DDPG and DQN), Q(s0, a0) solid against the true discounted return
    dashed (symlog scale: a diverging critic stays on the plot). Returns the PNG path."""
    learners = learners_of(summary["results"][buffers[0]]) if learners is None else learners
    fig, axes = plt.subplots(2, len(buffers), figsize=(4.2 * len(buffers), 6.8), sharex="col", squeeze=False)
    for column, kind in enumerate(buffers):
        r = summary["results"][kind]
        top, bottom = axes[0, column], axes[1, column]
        for algo, label in learners.items():
            curves = [x["curve"] for x in r[algo] if x["curve"]]
            if curves:
                steps, mean, std = _band(curves)
                top.plot(steps, mean, color=COLORS[algo], label=label, marker="o", ms=3)
                top.fill_between(steps, mean - std, mean + std, color=COLORS[algo], alpha=0.2)
            for key, style, suffix in (("q_initial_mean", "-", "estimate"), ("discounted_return_mean", "--", "true")):
                curves = [x["values"][key] for x in r[algo] if x["values"][key]]
                if curves:  # none for BC and VAE-BC, which have no Q-values
                    steps, mean, _ = _band(curves)
                    bottom.plot(steps, mean, style, color=COLORS[algo], label=f"{label} {suffix}")
        if kind == "concurrent":
            curves = [b["curve"] for b in r["behavioral"] if b.get("curve")]
            if curves:
                steps, mean, _ = _band(curves)
                top.plot(steps, mean, "k--", label="behavioral")
        elif r["behavioral"]:
            top.axhline(np.mean([b["return"] for b in r["behavioral"]]), color="k", ls="--", label="behavioral")
        top.set_title(f"{kind.capitalize()} buffer")
        bottom.set_yscale("symlog")
        bottom.set_xlabel("time steps" if kind == "concurrent" else "updates")
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel(f"average return ({summary['env_id']})")
    axes[1, 0].set_ylabel("value at the first state")
    axes[0, 0].legend(fontsize=8)
    axes[1, 0].legend(fontsize=7)
    return save_figure(fig, out)


def concurrent_markdown(results: list[dict[str, Any]]) -> str:
    """A table of `run_concurrent` results over seeds: final and best evaluation per agent."""
    env_id = results[0]["env_id"]
    lines = [
        f"### Concurrent learning on {env_id} (Fujimoto et al. 2019, Figure 2)",
        "",
        f"Seeds {[r['seed'] for r in results]}; {results[0]['steps']} behavioral steps, one update per step "
        "for each agent.",
        "",
        "| agent | final | best |",
        "| --- | ---: | ---: |",
    ]
    for name, label in (
        ("behavioral", "behavioral DDPG (online)"),
        ("ddpg", "DDPG (off-policy, same buffer)"),
        ("bcq", "BCQ (same buffer)"),
        ("bc", "BC (same buffer)"),
        ("vae_bc", "VAE-BC (same buffer)"),
        ("dqn", "DQN, discretised (same buffer)"),
    ):  # a run from before VAE-BC and DQN were added lacks them: "-"
        lines.append(
            f"| {label} | {_cell(_mean_std([r['final'].get(name) for r in results]))} | "
            f"{_cell(_mean_std([r['best'].get(name) for r in results]))} |"
        )
    return "\n".join(lines + [""])


def plot_concurrent(results: list[dict[str, Any]], out: str | Path) -> Path:
    """Evaluation return of the behavioral agent and every learner (those its runs hold) against behavioral
    time steps (mean and std band)."""
    fig, ax = plt.subplots(figsize=(6, 4))
    steps, mean, _ = _band([r["curves"]["behavioral"] for r in results])
    ax.plot(steps, mean, "k--", label="behavioral DDPG")
    for algo, label in LEARNERS.items():
        if any(algo not in r["curves"] for r in results):
            continue
        steps, mean, std = _band([r["curves"][algo] for r in results])
        ax.plot(steps, mean, color=COLORS[algo], label=label)
        ax.fill_between(steps, mean - std, mean + std, color=COLORS[algo], alpha=0.2)
    ax.set_xlabel("time steps")
    ax.set_ylabel(f"average return ({results[0]['env_id']})")
    ax.set_title("Concurrent")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, out)


def run_concurrent_experiment(
    env_id: str,
    out_dir: str | Path,
    steps: int | None = None,
    seeds: list[int] | tuple[int, ...] = (0,),
    options: ClusterOptions | None = None,
    progress: bool = True,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """`run_concurrent` for each seed into out_dir/s{seed}, the seeds in parallel as jobs
    (`acrl.sweep.executor`, on `options`; default: a process pool on this machine); writes
    concurrent.{json,md,png} in out_dir (concurrent.json: meta, `experiment_meta`; acrl_version; runs).

    kwargs go to `run_concurrent` (eval_freq, eval_episodes, *_overrides). A rerun into the same
    out_dir skips the seeds that finished and resumes the others from their last evaluation.
    Raises:
        InputError: as `run_concurrent`; no seeds; an out_dir that holds something else; an
            address (`options`) without Ray installed, or that does not answer. All before any job.
    """
    out_dir = Path(out_dir).resolve()
    if not seeds:
        raise InputError("--seeds needs at least one seed.")
    configs = concurrent_configs(
        env_id,
        steps,
        seeds[0],
        kwargs.get("eval_freq"),
        kwargs.get("eval_episodes", 10),
        out_dir / "final.h5",
        *(kwargs.get(k) for k in OVERRIDES),
    )
    check_experiment(env_id, configs["behavioral"])
    on_start = record_settings(
        out_dir,
        {"experiment": "concurrent", "env_id": env_id, "steps": steps, "seeds": list(seeds), **kwargs},
        f"experiment concurrent on {env_id} -> {out_dir}",
    )
    budget = configs["behavioral"].total_steps
    load_before, origin = load_average(), source()
    done = run_jobs(
        [
            Job(f"s{seed}", concurrent_job, {"env_id": env_id, "steps": steps, "seed": seed, **kwargs}, steps=budget)
            for seed in seeds
        ],
        out_dir,
        options or ClusterOptions(),
        progress,
        on_start=on_start,
        label="concurrent runs",
    )
    results = [done[f"s{seed}"] for seed in seeds]
    meta = experiment_meta(out_dir, "concurrent runs", load_before, origin, ("h5py", "mujoco"))
    write_json_atomic(out_dir / "concurrent.json", {"meta": meta, "acrl_version": __version__, "runs": results})
    write_text_atomic(out_dir / "concurrent.md", concurrent_markdown(results))
    plot_concurrent(results, out_dir / "concurrent.png")
    return results


__all__ = [
    "BUFFERS",
    "run_concurrent",
    "run_concurrent_experiment",
    "run_extrapolation",
    "episode_returns",
    "experiment_defaults",
    "extrapolation_markdown",
    "concurrent_markdown",
    "plot_extrapolation",
    "plot_concurrent",
]
