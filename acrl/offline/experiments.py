"""Running an offline experiment: `run_experiment` takes an `acrl.offline.spec.ExperimentSpec` from the
command (or a caller) to its summary, tables and figure.

On the driver, before any job and without building a network: the environment's spaces
(`ExperimentSpec.check_env`), the settings and their defaults per environment (`resolve`), every
agent's config (`check_configs`), and the output directory: new, empty, or holding this same experiment
(its experiment.yaml), whose finished jobs a rerun skips and whose interrupted ones resume from their
last evaluation. Then the jobs (`acrl.offline.jobs.experiment_jobs`) run on `acrl.sweep.executor`: a
process pool on this machine by default, a Ray cluster with an address, in parallel where they can.
Their results are assembled per buffer, agent and seed, and written as NAME.json (the summary: meta,
env_id, seeds, the settings, overrides, wall_clock_s, acrl_version, results[buffer][agent] and the
table), NAME.md and NAME.png (`acrl.offline.report`). Every agent runs in its own acrl run directory
(config.yaml, metrics.csv, checkpoints, eval.json, learning_curve.png) under s{seed}/BUFFER/AGENT, so
`acrl evaluate` and `acrl plot` work on each of them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from acrl.core.errors import InputError
from acrl.core.files import write_json_atomic, write_text_atomic
from acrl.core.provenance import load_average, provenance, sessions, source, wall_clock_s
from acrl.core.version import __version__
from acrl.offline.jobs import dataset_job, dataset_result, experiment_jobs, offline_result, policy_source
from acrl.offline.report import results_table, write_summary
from acrl.offline.spec import ExperimentSpec
from acrl.sweep.executor import run_jobs
from acrl.sweep.jobs import ClusterOptions

JOBS = "experiment jobs"
"""The experiments' `run_jobs` label: their progress bar's name and their time's key in sessions.json."""


def experiment_meta(
    out_dir: Path, label: str, load_before: list[float], origin: dict[str, Any], libraries: Sequence[str]
) -> dict[str, Any]:
    """An experiment summary's `meta`: `acrl.core.provenance.provenance` of the command that wrote it, with
    the commit and load average taken when its `run_jobs` call started (`origin`, `load_before`), and
    "sessions": every call that ran its jobs (label `label` in out_dir/sessions.json: start, end and
    commit each), so a run resumed over several sessions says which code ran when."""
    return {**provenance(load_before, libraries, origin), "sessions": sessions(out_dir, label)}


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
    if not path.exists() and out_dir.exists() and any(out_dir.iterdir()):
        raise InputError(f"{out_dir} already holds files; choose another --out (experiments never overwrite).")

    def write() -> None:
        print(announce, file=sys.stderr)
        write_text_atomic(path, text)

    return write


def run_experiment(
    spec: ExperimentSpec,
    env_id: str,
    out_dir: str | Path,
    seeds: Sequence[int] = (0,),
    overrides: Mapping[str, Mapping[str, Any] | None] | None = None,
    learners: Sequence[str] | None = None,
    datasets_only: bool = False,
    progress: bool = True,
    options: ClusterOptions | None = None,
    buffers: Sequence[str] | None = None,
    datasets_from: str | Path | None = None,
    **settings: Any,
) -> dict[str, Any]:
    """Run the experiment `spec` on `env_id` into `out_dir` (see the module docstring); write its summary.

    Args:
        spec: the experiment (`acrl.offline.spec.EXTRAPOLATION`, `CONCURRENT`, `DISCRETE`).
        env_id: a registered environment with the spec's action space (a bounded Box, or Discrete).
        out_dir: the directory for everything (s{seed}/... run directories and datasets): new, empty, or
            holding this same experiment, whose finished jobs a rerun skips.
        seeds: one full experiment per seed.
        overrides: config fields per agent, by `spec.options` name: behavioral_overrides (the behavioral
            agents), then OPTION_overrides per learner (e.g. bcq_overrides).
        learners: the learners that train (default all): e.g. those a table of an experiment run before they
            existed lacks, on the same datasets, whose summary `acrl.offline.report.merge_experiment` then joins
            to it. A subset's concurrent runs are the full experiment's, except BCQ's and VAE-BC's, which share
            torch's generator (`acrl.offline.jobs.run_concurrent`), and except where either was interrupted: a
            resumed behavioral DDPG starts fresh episodes, so its datasets differ from those of a run in one go,
            and the merge refuses to join the two.
        datasets_only: write the datasets and nothing else: a concurrent run's behavioral agent trains alone
            (s{seed}/behavioral) rather than with its learners, which never act nor touch its random streams,
            so it is the same run and its datasets are the full experiment's, in an hour less on Hopper-sized
            tasks. Writes datasets.json.
        progress: a progress bar over the jobs' steps.
        options: where the jobs run (`acrl.sweep.executor`; default: a process pool on this machine, one job
            per core).
        buffers: a D4RL experiment's dataset kinds (`ExperimentSpec.with_buffers`; default the spec's).
        datasets_from: a D4RL experiment's datasets copied from the output directory of an earlier one on
            `env_id` rather than built (`acrl.offline.jobs.given_datasets`): a table over several sessions or
            machines runs its seeds in parts on one set of datasets, which the merge of the parts checks.
            Recorded in experiment.yaml and the summary.
        **settings: the spec's settings (`spec.settings`; None or missing: the defaults for `env_id`,
            `ExperimentSpec.resolve`): steps_behavioral (behavioral environment steps), updates (gradient
            updates of each offline run), dataset_size (transitions of imitation and imperfect), final_noise
            (the final buffer's behavioral DDPG's N(0, final_noise) exploration, a fraction of max_action),
            eval_freq (updates, or steps, between evaluations), eval_episodes (deterministic episodes each);
            a D4RL experiment's target_return and expert_return (`acrl.offline.spec.check_d4rl_returns`).
    Returns:
        The summary written to NAME.json: meta (`experiment_meta`: command, commit, sessions, ...), env_id,
        seeds, the settings, the spec's constants, overrides, wall_clock_s (summed over the sessions that ran
        its jobs, `acrl.core.provenance.wall_clock_s`), acrl_version, results[buffer][agent] (per seed; the
        learners: return curve, final and best evaluations, value-estimate curves, training updates/s, run
        directory; the behavioral entries: its return, noise-free, and the data's episode return) and the table
        (`acrl.offline.report.results_table`). A D4RL experiment's summary adds its buffers ("kinds"),
        "datasets_from" where given, the references of its normalised scores ("reference", `d4rl_scores`),
        and the scores in its results.
        With `datasets_only`, the summary written to datasets.json: meta, settings and datasets[buffer] per
        seed (path, the behavioral policy's return, the data's episode return).
    Raises:
        InputError: no seeds; an unknown, a repeated or no learner; learners or datasets_from with
            datasets_only; datasets that `given_datasets` refuses; buffers for
            an experiment whose buffers are fixed, or kinds that are not D4RL's; another
            action space, an unknown environment; a setting the spec does not take, a budget below 1; a bad
            override; an out_dir that holds something else; an address (`options`) without Ray installed,
            or that does not answer. All before any job.
        TrainingError: jobs that failed, and those that needed them (after the others finish).
    """
    from acrl.algos.off_policy import warn_if_all_random

    out_dir = Path(out_dir).resolve()
    if not seeds:
        raise InputError("--seeds needs at least one seed.")
    if buffers is not None:
        spec = spec.with_buffers(buffers)
    chosen = spec.check_learners(spec.names if learners is None else learners)
    if datasets_only and len(chosen) < len(spec.learners):
        raise InputError("--learners chooses who trains on the datasets; --datasets-only trains none of them.")
    if datasets_only and datasets_from is not None:
        raise InputError("--datasets-from gives the datasets; --datasets-only would only copy them.")
    datasets_from = None if datasets_from is None else Path(datasets_from).resolve()
    spec.check_env(env_id)
    settings = spec.resolve(env_id, settings)
    overrides = spec.overrides(overrides)
    behavioral, gamma = spec.check_configs(env_id, settings, overrides, seeds[0])
    warn_if_all_random(behavioral.total_steps, behavioral.start_steps)
    recorded = {
        "experiment": spec.name,
        **({"kinds": list(spec.buffers)} if spec.d4rl else {}),
        **({"datasets_only": True} if datasets_only else {}),
        **({"learners": chosen} if len(chosen) < len(spec.learners) else {}),
        **({"datasets_from": str(datasets_from)} if datasets_from is not None else {}),
        "env_id": env_id,
        "seeds": list(seeds),
        **settings,
        **overrides,
    }
    on_start = record_settings(out_dir, recorded, f"experiment {spec.name} on {env_id} -> {out_dir}")
    jobs = experiment_jobs(
        spec, env_id, out_dir, seeds, settings, overrides, chosen, gamma, datasets_only, datasets_from
    )
    load_before, origin = load_average(), source()
    done = run_jobs(jobs, out_dir, options or ClusterOptions(), progress, on_start=on_start, label=JOBS)
    head = {
        "meta": experiment_meta(out_dir, JOBS, load_before, origin, spec.libraries),
        "env_id": env_id,
        **({"kinds": list(spec.buffers)} if spec.d4rl else {}),
        **({"datasets_from": str(datasets_from)} if datasets_from is not None else {}),
        "seeds": list(seeds),
        **settings,
        **spec.constants,
        "overrides": overrides,
        "wall_clock_s": wall_clock_s(out_dir, JOBS),
        "acrl_version": __version__,
    }
    if datasets_only:
        summary = {**head, "datasets": collected(spec, out_dir, seeds, done)}
        write_json_atomic(out_dir / "datasets.json", summary)
        return summary
    results = gather(spec, out_dir, seeds, chosen, done)
    if spec.d4rl:
        head["reference"] = d4rl_scores(spec, env_id, settings["expert_return"], results, done)
    summary = {**head, "results": results, "table": results_table(spec, results)}
    write_summary(spec, summary, out_dir)
    return summary


def policy_return(spec: ExperimentSpec, out_dir: Path, seed: int, datasets_only: bool = False) -> float:
    """The best evaluation of the behavioral run whose best checkpoint collected imitation and imperfect (its
    eval.json): those buffers' behavioral policy, noise-free."""
    run_dir = out_dir / policy_source(spec, datasets_only)[1].format(seed=seed)
    return json.loads((run_dir / "eval.json").read_text())["return_mean"]


def collected(
    spec: ExperimentSpec, out_dir: Path, seeds: Sequence[int], done: Mapping[str, Mapping[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """datasets[buffer] per seed of a `datasets_only` experiment: the dataset's path, the behavioral policy's
    return (final: its own run's last evaluation; imitation, imperfect: `policy_return`) and the data's
    episode return, the numbers the full experiment's summary holds for the same seeds' behavioral entries."""
    datasets: dict[str, list[dict[str, Any]]] = {kind: [] for kind in spec.buffers if kind != "concurrent"}
    for seed in seeds:
        for kind, entries in datasets.items():
            job = dataset_job(spec, kind).format(seed=seed)
            own = kind == "final" or spec.d4rl  # its job returns the behavioral policy's return
            best = {} if own else {"return": policy_return(spec, out_dir, seed, datasets_only=True)}
            path = {"seed": seed, "path": str(out_dir / job / f"{kind}.h5")}
            entries.append({**path, **best, **dataset_result(spec, kind, seed, done)})
    return datasets


def gather(
    spec: ExperimentSpec,
    out_dir: Path,
    seeds: Sequence[int],
    learners: Sequence[str],
    done: Mapping[str, Mapping[str, Any]],
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """results[buffer][agent], a list over `seeds`, from the finished jobs (`done`, by name) and their run
    directories: the behavioral policy's entries (its return and the data's episode return; concurrent: its
    curve too) and each learner's runs (`acrl.offline.jobs.offline_result`; concurrent: the run's own numbers,
    none for a learner its run did not have, as one from before the learner was added)."""
    results = {kind: {"behavioral": [], **{name: [] for name in learners}} for kind in spec.buffers}
    for seed in seeds:
        for kind, agents in results.items():
            if kind == "concurrent":
                c = done[f"s{seed}/concurrent"]
                curve, returns = c["curves"]["behavioral"], c["data_episode_return"]
                agents["behavioral"].append(
                    {"return": c["final"]["behavioral"], "curve": curve, "data_episode_return": returns}
                )
                for name in (name for name in learners if name in c["curves"]):
                    values, run_dir = c["values"][name], c["run_dirs"][name]
                    run = {"final": c["final"][name], "best": c["best"][name], "values": values, "run_dir": run_dir}
                    agents[name].append({"curve": c["curves"][name], **run})
                continue
            data = dataset_result(spec, kind, seed, done)
            if spec.d4rl:
                best = {"return": data.get("policy_return")}  # medium-expert: two policies, none given
            else:
                best = {} if kind == "final" else {"return": policy_return(spec, out_dir, seed)}
            agents["behavioral"].append({**best, **data})
            for name in learners:
                agents[name].append(offline_result(out_dir, f"s{seed}/{kind}/{name}", done))
    return results


def d4rl_scores(
    spec: ExperimentSpec,
    env_id: str,
    expert_return: float | None,
    results: dict[str, dict[str, list[dict[str, Any]]]],
    done: Mapping[str, Mapping[str, Any]],
) -> str:
    """Add D4RL's normalised score (`acrl.offline.d4rl.reference_returns`: D4RL's references on its tasks, else
    the random return each dataset measured and `expert_return`) to a D4RL experiment's results, in place: each
    learner run's "score" (its final evaluation), "best_score" and "score_curve" ([[update, score], ...]), each
    behavioral entry's "score" (its policy's return; None where it has none) and "data_episode_score"; return
    the references as a sentence (each kind's where they differ)."""
    from acrl.offline.d4rl import reference_returns

    def score(refs: Any, value: float | None) -> float | None:
        return None if value is None else refs.score(value)

    sentences = {}
    for kind, agents in results.items():
        refs = reference_returns(env_id, dataset_result(spec, kind, 0, done)["random_return"], expert_return)
        if expert_return is None:  # one of D4RL's tasks (`acrl.offline.spec.check_d4rl_returns`)
            sentences[kind] = f"{refs.source}: random {refs.random:.1f}, expert {refs.expert:.1f}"
        else:
            sentences[kind] = f"random {refs.random:.1f} measured here, expert {refs.expert:.1f} (--expert-return)"
        for entry in agents["behavioral"]:
            entry["score"] = score(refs, entry["return"])
            entry["data_episode_score"] = score(refs, entry["data_episode_return"])
        for name in (name for name in agents if name != "behavioral"):
            for run in agents[name]:
                run |= {"score": refs.score(run["final"]), "best_score": refs.score(run["best"])}
                run["score_curve"] = [[step, refs.score(value)] for step, value in run["curve"]]
    if len(set(sentences.values())) == 1:
        return next(iter(sentences.values()))
    return "; ".join(f"{kind}: {sentence}" for kind, sentence in sentences.items())


__all__ = ["JOBS", "d4rl_scores", "experiment_meta", "record_settings", "run_experiment"]
