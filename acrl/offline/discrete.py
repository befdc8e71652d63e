"""The discrete offline experiment: discrete BCQ, offline DQN and BC on the buffers of a behavioral DQN.

Fujimoto, Conti, Ghavamzadeh, Pineau 2019 ("2019b"), "Benchmarking Batch Deep Reinforcement Learning
Algorithms" (arXiv:1910.01708), Sec. 5: off-policy agents trained on the data of one partially trained
behavioral DQN, discrete BCQ (Sec. 4) against offline DQN among others; their Atari runs, here on any
environment with a Discrete action space, MinAtar's games first (Young and Tian 2019, the cheap pixel
benchmark; `MinAtar/Breakout-v1`). Per seed, two buffers:

- final: every transition of a behavioral DQN (the env's DQN preset: MinAtar's is the MinAtar paper's
  DQN, epsilon-greedy from 1 to 0.1) trained online for `steps_behavioral` steps, its random start
  steps included: its whole replay (`acrl collect --kind final --algo dqn`, whose buffer is sized to
  keep every transition), as the continuous experiment's final buffer (`acrl.offline.experiments`).
- imperfect: `dataset_size` transitions of the behavioral DQN's best checkpoint acting epsilon-greedily
  with epsilon 0.2, the authors' `rand_action_p` (discrete_BCQ/main.py). The authors also play a
  fifth of the episodes (`low_noise_p` 0.2) near noise-free (epsilon 0.001 on Atari); acrl leaves
  those episodes out, so every episode of this buffer is as noisy.

On each buffer three agents learn for `updates` gradient updates, never acting but to be evaluated:
discrete BCQ (the env's discrete_bcq preset; MinAtar's takes the behavioral DQN's learning settings,
as the authors give DQN and BCQ one parameter set), DQN offline (the DQN preset, gamma aligned with
BCQ's: the paper's "same data, same settings" baseline) and BC (a softmax policy trained by
cross-entropy on the logged actions, `acrl.algos.bc`). The paper reports discrete BCQ at or above the
behavioral policy on the imperfect data, and offline DQN below it.

The outputs are those of `acrl experiment extrapolation`, from the same functions: discrete.json and
discrete.md, the table per learner and buffer (final evaluation, mean ± std over seeds and IQM with
95% bootstrap CI; the behavioral policy; the data's episodes; the value estimates, Q(s0, a0) of DQN
and discrete BCQ at the evaluation episodes' first steps against the true discounted return,
`OffPolicyAgent.evaluate`), and discrete.png in Figure 2's layout. The jobs run on the local process
pool or a Ray cluster (`acrl.sweep.executor`), each once what it reads is written: the behavioral runs
with their final buffers (s{seed}/final/final.h5, the DQN in s{seed}/final/final-behavioral/), the
imperfect datasets (s{seed}/data-imperfect/imperfect.h5), the offline runs (s{seed}/BUFFER/AGENT).
Frames stay uint8 or bool throughout: in the replay, the HDF5 datasets and the offline agents' frame
buffers. Every config and the environment's spaces are checked on the driver, without building a
network, before any job.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym

from acrl.core.config import RunConfig, preset_values, update_config
from acrl.core.envs import check_spaces, env_factory
from acrl.core.errors import InputError
from acrl.core.files import write_json_atomic, write_text_atomic
from acrl.core.provenance import load_average, source
from acrl.core.version import __version__
from acrl.offline.experiments import (
    JOBS,
    collect_job,
    experiment_meta,
    offline_jobs,
    offline_result,
    plot_extrapolation,
    record_settings,
    results_markdown,
    results_table,
)
from acrl.sweep.executor import run_jobs, wall_clock_s
from acrl.sweep.jobs import ClusterOptions, Job

BUFFERS = ("final", "imperfect")
"""The discrete experiment's buffers: the behavioral DQN's whole replay, and its policy at epsilon 0.2."""

LEARNERS = {"discrete_bcq": "discrete BCQ", "dqn": "DQN (offline)", "bc": "BC"}
"""The agents that learn from each buffer, with their labels in the table and the figure."""

IMPERFECT_EPSILON = 0.2
"""Epsilon of the imperfect buffer's epsilon-greedy behavioral policy (Fujimoto et al. 2019b, Sec. 5)."""

OVERRIDES = ("behavioral_overrides", "bcq_overrides", "dqn_overrides", "bc_overrides")
"""The keyword arguments that carry each agent's config fields (behavioral DQN, discrete BCQ, offline DQN, BC)."""


def discrete_defaults(env_id: str) -> dict[str, int]:
    """Default budgets for `env_id`: steps_behavioral (the DQN preset's total_steps), updates and eval_freq
    (the discrete_bcq preset's), falling back to the configs' defaults without a preset."""
    from acrl.algos.discrete_bcq import DiscreteBCQConfig
    from acrl.algos.dqn import DQNConfig

    dqn = update_config(DQNConfig(), preset_values("dqn", env_id, None)[0], "dqn preset")
    bcq = update_config(DiscreteBCQConfig(), preset_values("discrete_bcq", env_id, None)[0], "discrete_bcq preset")
    return {"steps_behavioral": dqn.total_steps, "updates": bcq.total_steps, "eval_freq": bcq.eval_freq}


def discrete_configs(
    env_id: str,
    seed: int,
    steps_behavioral: int,
    updates: int,
    common: dict[str, Any],
    behavioral_overrides: dict[str, Any],
    bcq_overrides: dict[str, Any],
    dqn_overrides: dict[str, Any],
    bc_overrides: dict[str, Any],
) -> dict[str, RunConfig]:
    """The validated configs of one seed's agents, without building a network: "behavioral" (DQN, online,
    `steps_behavioral` steps) and, learning `updates` updates from a dataset, "discrete_bcq", "dqn" (gamma
    that of discrete BCQ unless `dqn_overrides` sets it) and "bc"; `common` (eval_freq, eval_episodes) in each.

    Raises:
        InputError: an unknown environment or key, a bad value (each named with the flag it came from).
    """
    from acrl.algos import make_config

    online = {"seed": seed, "total_steps": steps_behavioral, **common}
    data = {"seed": seed, "total_steps": updates, "dataset": "final.h5", **common}
    bcq = make_config("discrete_bcq", env_id, None, bcq_overrides, "--bcq-set", **data)[1]
    return {
        "behavioral": make_config("dqn", env_id, None, behavioral_overrides, "--behavioral-set", **online)[1],
        "discrete_bcq": bcq,
        "dqn": make_config("dqn", env_id, None, {"gamma": bcq.gamma, **dqn_overrides}, "--dqn-set", **data)[1],
        "bc": make_config("bc", env_id, None, bc_overrides, "--bc-set", **data)[1],
    }


def check_discrete(env_id: str) -> None:
    """The environment's spaces as the discrete experiment's agents need them: a Discrete action space, and
    vector or image observations.

    Raises:
        InputError: an unknown environment; a Box (or other) action space, naming `acrl experiment
            extrapolation` for continuous actions; an observation space that is not a Box.
    """
    probe = env_factory(env_id)[0]()
    try:
        check_spaces(
            probe,
            "the discrete experiment (DQN, discrete BCQ, BC)",
            (gym.spaces.Discrete,),
            "For continuous actions run `acrl experiment extrapolation` (BCQ, DDPG, BC, VAE-BC and a discretised DQN).",
            images=True,
        )
    finally:
        probe.close()


def run_discrete(
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
    dqn_overrides: dict[str, Any] | None = None,
    bc_overrides: dict[str, Any] | None = None,
    progress: bool = True,
    options: ClusterOptions | None = None,
) -> dict[str, Any]:
    """The discrete offline experiment on one environment (see the module docstring); writes discrete.{json,md,png}.

    Args:
        env_id: a registered environment with a Discrete action space (e.g. MinAtar/Breakout-v1).
        out_dir: the directory for everything (s{seed}/... run directories and datasets): new, empty,
            or holding this same experiment, whose finished jobs a rerun skips.
        steps_behavioral: behavioral DQN environment steps (default: the DQN preset's total_steps).
        updates: gradient updates of each offline agent (default: the discrete_bcq preset's total_steps).
        seeds: one full experiment per seed.
        dataset_size: transitions of the imperfect dataset (default: steps_behavioral, the final buffer's).
        eval_freq: steps (behavioral) and updates (offline) between evaluations (default: the
            discrete_bcq preset's).
        eval_episodes: deterministic (greedy) episodes per evaluation.
        behavioral_overrides, bcq_overrides, dqn_overrides, bc_overrides: config fields of the behavioral
            DQN, discrete BCQ, the offline DQN and BC.
        progress: a progress bar over the jobs' steps.
        options: where the jobs run (`acrl.sweep.executor`; default: a process pool on this machine, one
            job per core).
    Returns:
        the JSON written to discrete.json: meta (`acrl.offline.experiments.experiment_meta`), env_id, seeds,
        budgets, imperfect_epsilon, wall_clock_s (summed over the sessions that ran its jobs,
        `acrl.sweep.executor.wall_clock_s`), acrl_version, results[kind][agent] (per seed; learners: the
        return curve, final and best evaluations, value-estimate curves, run directory; behavioral: its
        return, noise-free (final: the run's last evaluation; imperfect: its best, the checkpoint that
        collected the data), and the mean return of the data's complete episodes) and the table
        (`acrl.offline.experiments.results_table`).
    Raises:
        InputError: no seeds; a budget below 1; a Box action space or an unknown environment; a bad
            override; an out_dir that holds something else; an address (`options`) without Ray or that
            does not answer. All before any job.
        TrainingError: jobs that failed, and those that needed them (after the others finish).
    """
    out_dir = Path(out_dir).resolve()
    options = options or ClusterOptions()
    if not seeds:
        raise InputError("--seeds needs at least one seed.")
    check_discrete(env_id)
    defaults = discrete_defaults(env_id)
    steps_behavioral = defaults["steps_behavioral"] if steps_behavioral is None else int(steps_behavioral)
    updates = defaults["updates"] if updates is None else int(updates)
    eval_freq = defaults["eval_freq"] if eval_freq is None else int(eval_freq)
    dataset_size = steps_behavioral if dataset_size is None else int(dataset_size)
    if min(steps_behavioral, updates, eval_freq, dataset_size, eval_episodes) < 1:
        raise InputError("steps_behavioral, updates, eval_freq, dataset_size and eval_episodes must be >= 1.")
    common = {"eval_freq": eval_freq, "eval_episodes": eval_episodes}
    overrides = dict(zip(OVERRIDES, (behavioral_overrides, bcq_overrides, dqn_overrides, bc_overrides), strict=True))
    overrides = {key: value or {} for key, value in overrides.items()}
    configs = discrete_configs(env_id, seeds[0], steps_behavioral, updates, common, *overrides.values())
    on_start = record_settings(
        out_dir,
        {
            "experiment": "discrete",
            "env_id": env_id,
            "seeds": list(seeds),
            "steps_behavioral": steps_behavioral,
            "updates": updates,
            "dataset_size": dataset_size,
            **common,
            **overrides,
        },
        f"experiment discrete on {env_id} -> {out_dir}",
    )
    behavioral_run = "s{seed}/final/final-behavioral"
    policy = behavioral_run + "/checkpoints/best.pt"
    offline = {
        "discrete_bcq": overrides["bcq_overrides"],
        "dqn": {"gamma": configs["discrete_bcq"].gamma, **overrides["dqn_overrides"]},
        "bc": overrides["bc_overrides"],
    }
    datasets = {"final": "s{seed}/final", "imperfect": "s{seed}/data-imperfect"}  # the jobs that write them
    jobs = [
        *(
            Job(
                f"s{seed}/final",
                collect_job,
                {
                    "kind": "final",
                    "steps": steps_behavioral,
                    "seed": seed,
                    "env_id": env_id,
                    "algo": "dqn",
                    "overrides": {**overrides["behavioral_overrides"], **common},
                },
                steps=steps_behavioral,
            )
            for seed in seeds
        ),
        *(
            Job(
                f"s{seed}/data-imperfect",
                collect_job,
                {
                    "kind": "imperfect",
                    "steps": dataset_size,
                    "policy": policy.format(seed=seed),
                    "seed": seed,
                    "noise_std": 0.0,
                    "random_prob": IMPERFECT_EPSILON,
                },
                inputs=(policy.format(seed=seed),),
                steps=dataset_size,
                after=(f"s{seed}/final",),
            )
            for seed in seeds
        ),
        *offline_jobs(env_id, out_dir, seeds, datasets, offline, updates, common),
    ]
    load_before, origin = load_average(), source()
    done = run_jobs(jobs, out_dir, options, progress, on_start=on_start, label=JOBS)
    results: dict[str, dict[str, list[dict[str, Any]]]] = {
        kind: {"behavioral": [], **{algo: [] for algo in LEARNERS}} for kind in BUFFERS
    }
    for seed in seeds:
        best = json.loads((out_dir / behavioral_run.format(seed=seed) / "eval.json").read_text())["return_mean"]
        results["final"]["behavioral"].append(done[f"s{seed}/final"])
        results["imperfect"]["behavioral"].append({"return": best, **done[f"s{seed}/data-imperfect"]})
        for kind in BUFFERS:
            for algo in LEARNERS:
                results[kind][algo].append(offline_result(out_dir, f"s{seed}/{kind}/{algo}", done))
    summary = {
        "meta": experiment_meta(out_dir, JOBS, load_before, origin, ("h5py", "minatar")),
        "env_id": env_id,
        "seeds": list(seeds),
        "steps_behavioral": steps_behavioral,
        "updates": updates,
        "dataset_size": dataset_size,
        "imperfect_epsilon": IMPERFECT_EPSILON,
        "eval_freq": eval_freq,
        "eval_episodes": eval_episodes,
        "wall_clock_s": wall_clock_s(out_dir, JOBS),
        "acrl_version": __version__,
        "results": results,
        "table": results_table(results, BUFFERS, LEARNERS),
    }
    write_json_atomic(out_dir / "discrete.json", summary)
    write_text_atomic(out_dir / "discrete.md", discrete_markdown(summary))
    plot_extrapolation(summary, out_dir / "discrete.png", BUFFERS, LEARNERS)
    return summary


def discrete_markdown(summary: dict[str, Any]) -> str:
    """The tables of `run_discrete` as markdown (`acrl.offline.experiments.results_markdown`): returns (mean ±
    std over seeds, IQM [95% CI]) per buffer, and the value estimates of DQN and discrete BCQ."""
    lines = [
        f"### Discrete BCQ, offline DQN and BC on {summary['env_id']} (Fujimoto et al. 2019b, Sec. 5)",
        "",
        f"Seeds {summary['seeds']}; behavioral DQN {summary['steps_behavioral']} steps (final buffer: its whole "
        f"replay); imperfect: {summary['dataset_size']} transitions of its best checkpoint at epsilon "
        f"{summary['imperfect_epsilon']}; {summary['updates']} updates per offline agent; evaluation: "
        f"{summary['eval_episodes']} greedy episodes every {summary['eval_freq']}.",
        "",
        *results_markdown(summary["table"], BUFFERS, LEARNERS),
        "",
        "behavioral policy: the greedy DQN (final: the behavioral run at its end; imperfect: its best checkpoint, "
        f"which collected the data at epsilon {summary['imperfect_epsilon']}). dataset episodes: mean return of the "
        "complete episodes stored in the buffer (the behavioral policy as it acted). final: last evaluation.",
        "",
    ]
    return "\n".join(lines)


__all__ = ["BUFFERS", "LEARNERS", "IMPERFECT_EPSILON", "run_discrete", "discrete_defaults", "discrete_markdown"]
