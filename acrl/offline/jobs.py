"""The offline experiments' jobs: what runs, in which order, and the lockstep runner of the concurrent buffer.

`experiment_jobs` turns an `acrl.offline.spec.ExperimentSpec` into the jobs of `acrl.sweep.executor`
(a local process pool, or a Ray cluster), each started once what it reads is written:

- s{seed}/concurrent (`concurrent_job`): the behavioral DDPG training online with the learners learning
  from its growing buffer in lockstep (`run_concurrent`), for a spec with the concurrent buffer; with
  `datasets_only`, s{seed}/behavioral: the same behavioral agent alone (`acrl.sweep.grid.train_run`).
- s{seed}/final (`collect_job`): the final buffer, every transition of a behavioral agent of its own.
- s{seed}/data-KIND (`collect_job`): imitation and imperfect, collected by the best checkpoint of the
  spec's `policy` buffer's behavioral run.
- data-KIND (`d4rl_job`): a D4RL experiment's dataset of each kind, one for all seeds
  (`acrl.offline.d4rl.collect_d4rl`); medium-replay is written by data-medium when the experiment has both
  (one SAC makes them); or, given an earlier experiment's (`copy_datasets_job`), a copy of them.
- s{seed}/KIND/NAME (`train_run`): each learner on each dataset, the costliest learners' runs first.

Every run writes latest.pt at every evaluation, so an interrupted job resumes from there; a collection
restarts from scratch (`collect_job` deletes what an interrupted attempt left).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from acrl.core.checkpoint import load_checkpoint, set_rng_state
from acrl.core.config import RunConfig
from acrl.core.errors import InputError
from acrl.core.loop import Callback, Run, train
from acrl.core.plotting import read_curve
from acrl.offline.collect import behavioral_run_dir, buffer_dataset, collect_dataset
from acrl.offline.d4rl import MEDIUM_KINDS, collect_d4rl
from acrl.offline.spec import DATASET_SEED, EXPERIMENTS, ExperimentSpec
from acrl.parts.datasets import OfflineDataset, dataset_attrs, load_dataset, save_dataset
from acrl.sweep.grid import train_run
from acrl.sweep.jobs import Job

VALUE_KEYS = ("q_initial_mean", "discounted_return_mean", "q_data_mean", "q_policy_mean")
"""The value estimates of `OffPolicyAgent.evaluate` that the experiments keep as curves."""

COLLECTED = ("final", "imitation", "imperfect")
"""The buffers that are datasets (HDF5 files); the concurrent one is a run."""


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


def mean_episode_return(data: OfflineDataset) -> float | None:
    """The mean of `episode_returns` (None without a complete episode)."""
    returns = episode_returns(data)
    return float(returns.mean()) if len(returns) else None


def run_curve(run_dir: Path, key: str = "eval/return_mean") -> list[list[float]]:
    """[[step, value of `key`], ...] of a finished run directory (empty when it never logged `key`)."""
    steps, values = read_curve(run_dir, key)
    return [[int(s), float(v)] for s, v in zip(steps, values, strict=True)]


def value_curves(run_dir: Path) -> dict[str, list[list[float]]]:
    """{key: [[step, value], ...]} of the `VALUE_KEYS` evaluations in a finished run directory."""
    return {key: run_curve(run_dir, f"eval/{key}") for key in VALUE_KEYS}


def training_rate(run_dir: Path) -> float:
    """A finished run's training steps per second (offline: updates/s), its evaluations left out: its steps over
    the seconds of its iterations, each metrics.csv row's steps over its `time/fps` (`acrl.core.loop`: an
    iteration's steps over its own seconds)."""
    steps, fps = read_curve(run_dir, "time/fps")
    spans = np.diff(np.concatenate([[0.0], steps]))
    return float(spans.sum() / (spans / fps).sum())


def offline_result(out_dir: Path, name: str, trained: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """One finished offline run (job `name`, "s{seed}/KIND/NAME") as the results hold it: curve
    [[update, return], ...], final (the last evaluation's return), best, values (`VALUE_KEYS` curves),
    updates_per_s (`training_rate`), run_dir."""
    run_dir = out_dir / name
    curve = run_curve(run_dir)
    return {
        "curve": curve,
        "final": curve[-1][1],
        "best": trained[name]["best"],
        "values": value_curves(run_dir),
        "updates_per_s": training_rate(run_dir),
        "run_dir": str(run_dir),
    }


def _delete(path: Path) -> None:
    """Delete the file or directory tree at `path`, if any: what an interrupted attempt of a job
    that restarts from scratch left there."""
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


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
    checkpoint relative to the root) or, for final, from a behavioral agent that trains with
    `options` (env_id, algo, noise_std, overrides). Returns the mean return of the dataset's complete
    episodes ("data_episode_return") and, for final, the behavioral agent's last evaluation ("return")."""
    _delete(job_dir)
    job_dir.mkdir(parents=True)
    out = job_dir / f"{kind}.h5"
    data = collect_dataset(kind, out, steps, policy=None if policy is None else root / policy, seed=seed, **options)
    result = {"data_episode_return": mean_episode_return(data)}
    if kind == "final":
        result["return"] = run_curve(behavioral_run_dir(out))[-1][1]
    return result


D4RL_ATTRS = ("random_return", "policy_return", "expert_return", "medium_return", "target_return", "stop_step")
"""The attributes of a D4RL dataset (`acrl.offline.d4rl.collect_d4rl`) that its job returns, where it has them."""


def d4rl_job(
    root: Path, job_dir: Path, callbacks: list[Callback], kind: str, with_replay: bool = False, **options: Any
) -> dict[str, dict[str, Any]]:
    """A D4RL experiment's job: `collect_d4rl` of `kind` into job_dir/KIND.h5 with `options` (env_id, steps,
    train_steps, target_return, expert_return, seed, overrides), from scratch (what an interrupted attempt
    left, its SACs' run directories included, is deleted); `with_replay` (kind medium): the same SAC's
    medium-replay dataset too, into job_dir/medium-replay.h5. Returns, for each dataset written (by kind), the
    mean return of its complete episodes ("data_episode_return") and the returns it records (`D4RL_ATTRS`,
    those it has); `dataset_result` reads them."""
    _delete(job_dir)
    job_dir.mkdir(parents=True)
    replay_out = job_dir / "medium-replay.h5" if with_replay else None
    data = collect_d4rl(kind, job_dir / f"{kind}.h5", replay_out=replay_out, **options)
    written = {kind: data} | ({} if replay_out is None else {"medium-replay": load_dataset(replay_out)})
    return {
        name: {"data_episode_return": mean_episode_return(dataset)}
        | {key: dataset.attrs[key] for key in D4RL_ATTRS if key in dataset.attrs}
        for name, dataset in written.items()
    }


def given_datasets(spec: ExperimentSpec, env_id: str, source: Path) -> dict[str, list[str]]:
    """The dataset jobs of D4RL experiment `spec` on `env_id` that an earlier one's output directory `source`
    has finished ({job name: the kinds it writes}, `dataset_job`): its data-KIND/job.json with a result for
    each kind, and each data-KIND/KIND.h5 a dataset of `env_id`. A table over several sessions or machines
    thus trains every part on one set of datasets (`acrl.offline.report.merge_experiment` checks it).

    Raises:
        InputError: `spec` is not a D4RL experiment; `source` lacks a finished job, a kind's result or file;
            a file that is not a dataset, or one of another environment.
    """
    if not spec.d4rl:
        raise InputError(f"datasets_from takes D4RL datasets; the {spec.name} experiment collects its own.")
    jobs: dict[str, list[str]] = {}
    for kind in spec.buffers:
        jobs.setdefault(dataset_job(spec, kind), []).append(kind)
    hint = f"give the --out of a D4RL experiment on {env_id} whose datasets are written (its data-KIND directories)"
    for job, kinds in jobs.items():
        marker = source / job / "job.json"
        try:
            result = json.loads(marker.read_text())["result"]
        except (OSError, ValueError, KeyError) as exc:
            raise InputError(f"--datasets-from {source}: no finished {job} job ({marker}: {exc}); {hint}.") from None
        for kind in kinds:
            path = source / job / f"{kind}.h5"
            if kind not in result or not path.is_file():
                raise InputError(f"--datasets-from {source}: {job} has no {kind} dataset ({path}); {hint}.")
            written_for = dataset_attrs(path).get("env_id")
            if written_for != env_id:
                raise InputError(f"--datasets-from {source}: {path} is a dataset of {written_for}, not of {env_id}.")
    return jobs


def copy_datasets_job(
    root: Path, job_dir: Path, callbacks: list[Callback], source: str, kinds: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """A D4RL experiment's dataset job whose datasets are given (`given_datasets`): each KIND.h5 of `kinds`
    copied from `source` (the same job's directory in an earlier experiment) into job_dir, from scratch; returns
    that job's result for them (`d4rl_job`'s), so the summary records the same returns as the experiment that
    built them."""
    _delete(job_dir)
    job_dir.mkdir(parents=True)
    for kind in kinds:
        shutil.copyfile(Path(source) / f"{kind}.h5", job_dir / f"{kind}.h5")
    result = json.loads((Path(source) / "job.json").read_text())["result"]
    return {kind: result[kind] for kind in kinds}


def dataset_result(spec: ExperimentSpec, kind: str, seed: int, done: Mapping[str, Any]) -> dict[str, Any]:
    """What the job that wrote `spec`'s dataset of `kind` for `seed` (`dataset_job`) said about it, from the
    finished jobs' results `done` (a D4RL job's are per kind: `d4rl_job`)."""
    result = done[dataset_job(spec, kind).format(seed=seed)]
    return result[kind] if spec.d4rl else result


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
    spec: ExperimentSpec,
    env_id: str,
    out_dir: str | Path,
    settings: Mapping[str, Any],
    seed: int = 0,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    final_dataset: str | Path | None = None,
    learners: Sequence[str] | None = None,
    progress: bool = True,
    callbacks: Sequence[Callback] = (),
    start_over: bool = False,
) -> dict[str, Any]:
    """The concurrent buffer (Fujimoto et al. 2019, Sec. 3 and Figure 2 "concurrent") of `spec`'s learners.

    The behavioral agent (the env's preset of `spec.behavioral`; its replay buffer keeps every transition)
    trains online for steps_behavioral environment steps. The learners (`spec.concurrent_configs`) learn from
    its buffer as it grows, never acting: one update each per behavioral step. All train through the run
    loop in lockstep (`acrl.core.loop.train`): each round the behavioral agent takes one iteration of
    `acrl.offline.spec.ITERATION_STEPS` steps, then each learner, in the spec's order, as many updates, so
    all are evaluated at the same steps, every eval_freq (deterministic, eval_episodes episodes, env seeded
    apart). At the end the buffer is written as a final dataset.

    All write checkpoints/latest.pt at every evaluation, together after the round, the behavioral agent's
    with its replay buffer. An out_dir that holds such a run stopped part-way (every agent's latest.pt of one
    step before the end, with these settings: a signal, the OS or the end of a session) is resumed from
    there: the learners get the restored buffer, the behavioral agent starts fresh episodes seeded from
    (seed, step) as any resumed run.

    Args:
        spec: the experiment (its behavioral agent and learners).
        env_id: a registered environment with a bounded Box action space.
        out_dir: directory for the run directories behavioral/ and one per learner (new, empty, or holding
            a run to resume) and, by default, final.h5.
        settings: steps_behavioral, eval_freq, eval_episodes (missing ones: `spec.resolve`'s defaults).
        seed: the behavioral agent's seed; each learner's is seed + its `seed_offset`.
        overrides: config fields per agent, by `spec.options` name (behavioral_overrides, bcq_overrides, ...).
        final_dataset: where to write the final buffer (default out_dir/final.h5).
        progress: progress bar of the behavioral run.
        callbacks: `acrl.core.loop.Callback`s of each run (a sweep's file shipping).
        start_over: when out_dir holds files that are not a run to resume (one killed while its
            checkpoints were written, or before the first), delete them and start from step 0 (an
            experiment's job) instead of raising.
        learners: the learners that train beside the behavioral agent (default all). Each samples its
            batches from its own generator, and DDPG, BC and DQN update without drawing random numbers, so
            their runs and the behavioral agent's are the same whichever learners train beside them; BCQ's
            and VAE-BC's VAEs draw from torch's global generator, which they share.
    Returns:
        JSON-ready dict: env_id, seed, steps, eval_freq, curves {behavioral and each learner: [[step,
        return_mean], ...]}, values {name: {VALUE_KEYS entry: [[step, value], ...]}}, final {name: last
        evaluation}, best {name: best evaluation}, run_dirs {name: path}, final_dataset (path),
        data_episode_return (mean over the buffer's complete episodes).
    Raises:
        InputError: an unknown environment, a Discrete or unbounded action space, a bad override, a
            non-positive budget, an unknown or no learner, or an out_dir that holds files but not a run
            to resume (unless `start_over`).
    """
    from acrl.algos import get_algorithm

    out_dir = Path(out_dir)
    learners = spec.check_learners(spec.names if learners is None else learners)
    settings = spec.resolve(env_id, settings)
    overrides = spec.overrides(overrides)
    spec.check_env(env_id)
    final_dataset = Path(final_dataset or out_dir / "final.h5").resolve()
    configs = spec.concurrent_configs(env_id, settings, overrides, seed, str(final_dataset))
    behavioral = get_algorithm(spec.behavioral)(env_id, config=configs["behavioral"])
    agents = {"behavioral": behavioral}
    for name in learners:
        agents[name] = get_algorithm(spec.learner(name).algo)(env_id, config=configs[name], buffer=behavioral.buffer)
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
    torch.set_num_threads(behavioral.config.torch_threads)  # as Agent.learn does; oversubscribed threads crawl
    behavioral.before_learning()
    runs = [
        Run(agent, out_dir / name, progress, callbacks, label=f"concurrent {name}") for name, agent in agents.items()
    ]
    train(runs)  # lockstep: each round, the behavioral agent's steps, then as many updates of each learner
    data = buffer_dataset(behavioral, "final", str(out_dir / "behavioral"), seed)
    save_dataset(final_dataset, data)
    curves = {name: run_curve(out_dir / name) for name in agents}
    return {
        "env_id": env_id,
        "seed": seed,
        "steps": behavioral.config.total_steps,
        "eval_freq": behavioral.config.eval_freq,
        "curves": curves,
        "values": {name: value_curves(out_dir / name) for name in agents},
        "final": {name: curve[-1][1] for name, curve in curves.items()},
        "best": {name: agent.best_eval["return_mean"] for name, agent in agents.items()},
        "run_dirs": {name: str(out_dir / name) for name in agents},
        "final_dataset": str(final_dataset),
        "data_episode_return": mean_episode_return(data),
    }


def concurrent_job(root: Path, job_dir: Path, callbacks: list[Callback], experiment: str, **kwargs: Any) -> dict:
    """An experiment's job: `run_concurrent` of the spec named `experiment` into `job_dir` (resuming an
    interrupted attempt, else from scratch), the final buffer as job_dir/final.h5."""
    return run_concurrent(
        EXPERIMENTS[experiment],
        out_dir=job_dir,
        final_dataset=job_dir / "final.h5",
        callbacks=callbacks,
        progress=False,
        start_over=True,
        **kwargs,
    )


def policy_source(spec: ExperimentSpec, datasets_only: bool = False) -> tuple[str, str]:
    """(the job that trains it, its run directory), "{seed}" in both, of the behavioral agent whose best
    checkpoint collects imitation and imperfect: the concurrent run's behavioral agent (with `datasets_only`,
    the same agent trained alone), or the final collection's (`spec.policy`)."""
    if spec.policy == "final":
        return "s{seed}/final", str(behavioral_run_dir("s{seed}/final/final.h5"))
    return ("s{seed}/behavioral",) * 2 if datasets_only else ("s{seed}/concurrent", "s{seed}/concurrent/behavioral")


def dataset_job(spec: ExperimentSpec, kind: str) -> str:
    """The job that writes `spec`'s dataset of buffer `kind`, as JOB/KIND.h5: "{seed}" in it, but for a D4RL
    experiment's, one for all seeds (medium-replay beside medium, when the experiment has both: one SAC makes
    them)."""
    if spec.d4rl:
        return "data-medium" if kind == "medium-replay" and "medium" in spec.buffers else f"data-{kind}"
    return "s{seed}/final" if kind == "final" else f"s{{seed}}/data-{kind}"


def experiment_jobs(
    spec: ExperimentSpec,
    env_id: str,
    out_dir: Path,
    seeds: Sequence[int],
    settings: Mapping[str, Any],
    overrides: Mapping[str, Mapping[str, Any]],
    learners: Sequence[str],
    gamma: float,
    datasets_only: bool = False,
    datasets_from: Path | None = None,
) -> list[Job]:
    """The jobs of one experiment (see the module docstring), the long ones first.

    Args:
        spec: the experiment.
        env_id: its environment.
        out_dir: the jobs' root (absolute).
        seeds: one full experiment per seed.
        settings: `spec.resolve`'s.
        overrides: `spec.overrides`'.
        learners: the learners that train (names of `spec.learners`, in its order).
        gamma: the first learner's discount, which the `same_gamma` learners take.
        datasets_only: the behavioral runs and datasets only, no learner.
        datasets_from: a D4RL experiment's datasets copied from this earlier one's output directory rather
            than built (`given_datasets`, which checks it first; `copy_datasets_job`).
    """
    common = {"eval_freq": settings["eval_freq"], "eval_episodes": settings["eval_episodes"]}
    trainer, policy = policy_source(spec, datasets_only)
    jobs = []
    if "concurrent" in spec.buffers and datasets_only:  # the concurrent run's behavioral agent alone
        for seed in seeds:
            config = spec.concurrent_configs(env_id, settings, overrides, seed, str(out_dir / "final.h5"))
            fields = {key: value for key, value in config["behavioral"].to_dict().items() if key != "env_id"}
            kwargs = {"algo": spec.behavioral, "env_id": env_id, "preset": None, "overrides": fields, "flags": {}}
            jobs.append(Job(trainer.format(seed=seed), train_run, kwargs, steps=settings["steps_behavioral"]))
    elif "concurrent" in spec.buffers:
        concurrent = {key: settings[key] for key in ("steps_behavioral", "eval_freq", "eval_episodes")}
        for seed in seeds:
            kwargs = {"experiment": spec.name, "env_id": env_id, "settings": concurrent, "seed": seed}
            kwargs.update(overrides=overrides, learners=list(learners))
            jobs.append(Job(f"s{seed}/concurrent", concurrent_job, kwargs, steps=settings["steps_behavioral"]))
    if "final" in spec.buffers:
        behavioral = {
            "env_id": env_id,
            "algo": spec.behavioral,
            "overrides": {**overrides["behavioral_overrides"], **common},
        }
        if "final_noise" in settings:
            behavioral["noise_std"] = settings["final_noise"]
        for seed in seeds:
            kwargs = {"kind": "final", "steps": settings["steps_behavioral"], "seed": seed, **behavioral}
            jobs.append(Job(f"s{seed}/final", collect_job, kwargs, steps=settings["steps_behavioral"]))
    for seed in seeds:
        checkpoint = policy.format(seed=seed) + "/checkpoints/best.pt"
        for kind in (kind for kind in spec.buffers if kind in ("imitation", "imperfect")):
            kwargs = {"kind": kind, "steps": settings["dataset_size"], "policy": checkpoint, "seed": seed}
            jobs.append(
                Job(
                    dataset_job(spec, kind).format(seed=seed),
                    collect_job,
                    {**kwargs, **spec.collect.get(kind, {})},
                    inputs=(checkpoint,),
                    steps=settings["dataset_size"],
                    after=(trainer.format(seed=seed),),
                )
            )
    if datasets_from is not None:
        for job, kinds in given_datasets(spec, env_id, datasets_from).items():
            source = datasets_from / job
            kwargs = {"source": str(source), "kinds": kinds}
            files = tuple(str(source / name) for name in ("job.json", *(f"{kind}.h5" for kind in kinds)))
            jobs.append(Job(job, copy_datasets_job, kwargs, inputs=files, steps=1))
    elif spec.d4rl:  # each kind gets the options `collect_d4rl` takes for it, and no other
        targets = {key: settings[key] for key in ("target_return", "expert_return") if settings[key] is not None}
        if "target_return" in targets:  # then --expert-return is the score's alone (`check_d4rl_returns`)
            targets.pop("expert_return", None)
        sac_overrides = {**overrides["behavioral_overrides"], **common}
        sac = {"train_steps": settings["steps_behavioral"], "overrides": sac_overrides}
        for kind in spec.buffers:
            if dataset_job(spec, kind) != f"data-{kind}":
                continue  # written by another kind's job
            options = {"kind": kind, "env_id": env_id, "seed": DATASET_SEED}
            options["steps"] = None if kind == "medium-replay" else settings["dataset_size"]
            options |= (sac if kind != "random" else {}) | (targets if kind in MEDIUM_KINDS else {})
            if kind == "medium" and "medium-replay" in spec.buffers:
                options["with_replay"] = True
            sac_steps = {"random": 0, "medium-expert": 2}.get(kind, 1) * settings["steps_behavioral"]
            budget = sac_steps + (options["steps"] or 0)  # the job's steps, for the progress bar
            jobs.append(Job(dataset_job(spec, kind), d4rl_job, options, steps=budget))
    if datasets_only:
        return jobs
    for learner in sorted((spec.learner(name) for name in learners), key=lambda learner: -learner.cost):
        values = spec.offline_values(learner, settings, overrides, gamma)
        for seed in seeds:
            for kind in (kind for kind in spec.buffers if spec.d4rl or kind in COLLECTED):
                writer = dataset_job(spec, kind).format(seed=seed)
                dataset = f"{writer}/{kind}.h5"
                flags = {"seed": seed, "total_steps": settings["updates"], "dataset": str(out_dir / dataset)}
                kwargs = {"algo": learner.algo, "env_id": env_id, "preset": None, "overrides": values, "flags": flags}
                jobs.append(
                    Job(
                        f"s{seed}/{kind}/{learner.name}",
                        train_run,
                        kwargs,
                        inputs=(dataset,),
                        steps=settings["updates"],
                        after=(writer,),
                    )
                )
    return jobs


__all__ = [
    "collect_job",
    "concurrent_job",
    "copy_datasets_job",
    "d4rl_job",
    "dataset_result",
    "episode_returns",
    "experiment_jobs",
    "given_datasets",
    "run_concurrent",
    "training_rate",
]
