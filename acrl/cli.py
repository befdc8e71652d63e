"""`acrl` command line: a thin layer that parses into configs and calls the library.

Each command is a dataclass below (`Train`, `Resume`, ..., collected in `Command`), parsed by tyro;
its fields and their docstrings are the options and their help (`acrl COMMAND --help`), and
`synopsis()` renders all commands with their options from those dataclasses, the block that the
README's "Command line" section shows (tests/algos/test_cli.py checks that they agree). ALGO is
one of `acrl.algos.ALGORITHMS`; `acrl --version` prints the version.

Errors: bad input, tyro's own argument errors included, is one line `acrl: error: MESSAGE` on
stderr (no traceback, no box); warnings print once each, as one line `acrl: warning: MESSAGE`.
Exit codes: 0 success, 2 bad input, 1 failure during the run, 130 interrupted.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import itertools
import json
import os
import signal
import sys
import time
import types
import typing
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import tyro
import tyro._errors  # tyro's parse-error hook (private: pinned in pyproject.toml), for one-line errors

from acrl.algos import ALGORITHMS
from acrl.core.errors import InputError, TrainingError
from acrl.core.logging import format_return
from acrl.core.version import __version__


def values(metavar: str) -> object:
    """tyro's settings of a list option: the metavar "METAVAR ...", and no "(default: )" (an empty list)."""
    return tyro.conf.arg(metavar=f"{metavar} ...", help_behavior_hint="")


@dataclass
class Train:
    """Train an agent and write a run directory (config, metrics, checkpoints, curve, eval.json)."""

    algo: Annotated[
        str, tyro.conf.Positional, tyro.conf.arg(metavar="ALGO", help=f"Algorithm: {', '.join(ALGORITHMS)}.")
    ]
    """Algorithm (the help text lists the registered ones, `acrl.algos.ALGORITHMS`)."""
    env: Annotated[str | None, tyro.conf.arg(metavar="ENV_ID")] = None
    """Gymnasium environment id, e.g. CartPole-v1, Ant-v5, acrl/AntDirectional-v5 (offline algorithms:
    default the dataset's env_id)."""
    seed: int | None = None
    """Master seed (default: the preset's or 0)."""
    total_steps: int | None = None
    """Training budget in environment steps (gradient updates for offline algorithms)."""
    n_envs: int | None = None
    """Environments stepped together (Gymnasium vector API); for A3C, environments per worker (1 unless
    the preset says otherwise)."""
    workers: int | None = None
    """A3C worker processes (default: the number of cores)."""
    dataset: Annotated[str | None, tyro.conf.arg(metavar="FILE")] = None
    """Offline dataset (HDF5, D4RL keys, e.g. from `acrl collect`): required by the offline algorithms (bcq,
    discrete_bcq, bc, vae_bc); the other replay algorithms (ddpg, td3, sac, dqn) then learn from it instead of
    collecting."""
    run_dir: Annotated[str | None, tyro.conf.arg(metavar="DIR")] = None
    """Run directory (default: runs/ALGO-ENV-sSEED-TIME)."""
    preset: Annotated[str | None, tyro.conf.arg(metavar="NAME")] = None
    """Named preset from acrl/presets/ALGO.yaml (default: 'default' for this env if it exists)."""
    set: Annotated[list[str], values("KEY=VALUE")] = field(default_factory=list)
    """Hyperparameter overrides as key=value (YAML values), e.g. --set clip_range=0.1 n_epochs=5."""
    device: str | None = None
    """auto (CUDA when available, else the CPU; the default), cpu, cuda or cuda:N; config.yaml records the one used."""
    video_freq: int | None = None
    """Record a clip of one evaluation episode, cut at config video_length steps (200 unless set), at every Nth
    evaluation into RUN_DIR/videos and TensorBoard (none unless set)."""
    progress: bool = True
    """Show the progress bar."""


@dataclass
class Resume:
    """Continue a run from its latest checkpoint (optimizer, normaliser, RNG, counters)."""

    run_dir: Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="RUN_DIR")]
    """Run directory written by `acrl train` (holds checkpoints/latest.pt)."""
    total_steps: int | None = None
    """New budget (default: the run's own)."""
    device: str | None = None
    """auto, cpu, cuda or cuda:N (default: the device the run used)."""
    progress: bool = True
    """Show the progress bar."""


@dataclass
class Evaluate:
    """Evaluate a run's best (or latest) checkpoint and print one JSON object on stdout."""

    run_dir: Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="RUN_DIR")]
    """Run directory written by `acrl train`."""
    checkpoint: Literal["best", "latest"] = "best"
    """Which checkpoint is evaluated: best (best.pt; latest.pt while there is no best yet) or latest (latest.pt)."""
    episodes: int = 10
    """Evaluation episodes."""
    stochastic: bool = False
    """Sample actions instead of taking the mean/mode."""
    seed: int | None = None
    """Seed of the evaluation env (default: the run's seed + 10000, as during training)."""
    device: str | None = None
    """auto, cpu, cuda or cuda:N (default: the device the run used); --device cpu reads any checkpoint."""


@dataclass
class Record:
    """Play a run's policy (normaliser frozen) and write an MP4 (H.264, the environment's frame rate),
    each frame captioned with the episode, its return so far and the task's metrics."""

    run_dir: Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="RUN_DIR")]
    """Run directory written by `acrl train`."""
    episodes: int = 1
    """Episodes, one after another in one file."""
    out: Annotated[str | None, tyro.conf.arg(metavar="FILE.mp4")] = None
    """MP4 file to write (default: RUN_DIR/videos/CHECKPOINT-seedSEED[-stochastic][-maxN]-returnR.mp4, R the
    mean return); the run's README.md lists the latest video in RUN_DIR/videos."""
    checkpoint: Literal["best", "latest"] = "best"
    """Which checkpoint plays: best (best.pt; latest.pt while there is no best yet) or latest (latest.pt)."""
    seed: int | None = None
    """Seed of the environment (default: the run's seed + 10000, the episodes that evaluation scores)."""
    stochastic: bool = False
    """Sample actions instead of taking the mean/mode."""
    max_steps: int | None = None
    """Cut each episode after this many steps (default: play it to its end; software rendering draws MuJoCo
    at about 8 frames/s on one CPU core)."""
    device: str | None = None
    """auto, cpu, cuda or cuda:N (default: the device the run used)."""


@dataclass
class Plot:
    """Draw learning curves; several seeds of one config become a mean with a band. Given a sweep
    directory, rewrite its table and figure (results.md, results.json, curves.png)."""

    run_dirs: Annotated[list[str], tyro.conf.Positional, tyro.conf.arg(metavar="RUN_DIR [RUN_DIR ...]")]
    """Run directories written by `acrl train` (each with its metrics.csv), or one `acrl sweep` directory."""
    out: Annotated[str, tyro.conf.arg(metavar="FILE.png")] = "learning_curves.png"
    """PNG file to write, relative to the current directory (its folder must exist); `acrl plot` prints its path."""


@dataclass
class Collect:
    """Collect an offline dataset (HDF5, D4RL keys) of the BCQ paper: final, imitation or imperfect."""

    kind: Literal["final", "imitation", "imperfect"]
    """final (all transitions of a behavioral DDPG, TD3 or DQN training run), imitation (a trained policy without
    noise), imperfect (the policy with N(0, 0.3) noise and random actions with probability 0.3; Discrete actions:
    random with probability 0.2)."""
    out: Annotated[str, tyro.conf.arg(metavar="FILE.h5")]
    """HDF5 file to write (final also writes the behavioral run to FILE's stem + '-behavioral/')."""
    steps: int
    """Transitions to collect."""
    env: Annotated[str | None, tyro.conf.arg(metavar="ENV_ID")] = None
    """Environment id (required for final; default: the policy's)."""
    policy: Annotated[str | None, tyro.conf.arg(metavar="RUN_DIR")] = None
    """Run directory of a trained agent (its checkpoints/best.pt), for imitation and imperfect."""
    seed: int = 0
    """Seed of the behavioral agent (final) or of the environment, noise and random actions (the others)."""
    noise: Annotated[float | None, tyro.conf.arg(metavar="STD")] = None
    """Gaussian action noise std as a fraction of max_action (default: imperfect 0.3, Discrete actions none;
    final: the preset's 0.1)."""
    random_prob: Annotated[float | None, tyro.conf.arg(metavar="P")] = None
    """Probability of a uniformly random action (default: imperfect 0.3, on a Discrete action space 0.2; else 0)."""
    algo: Literal["ddpg", "td3", "dqn"] = "ddpg"
    """Behavioral agent of final: DDPG (the paper's), TD3, or DQN for a Discrete action space."""
    preset: Annotated[str | None, tyro.conf.arg(metavar="NAME")] = None
    """Preset of the behavioral agent (final)."""
    set: Annotated[list[str], values("KEY=VALUE")] = field(default_factory=list)
    """Hyperparameters of the behavioral agent (final) as key=value, e.g. --set start_steps=1000."""
    progress: bool = True
    """Show the progress bar."""


EXTRAPOLATION_LEARNERS = ("bcq", "ddpg", "bc", "vae_bc", "dqn")
"""The extrapolation experiment's learners, acrl.offline.experiments.LEARNERS' keys (not imported here: the CLI
starts without torch); `--learners`' choices repeat them for tyro, and a test checks all three agree."""


@dataclass
class Experiment:
    """Run a BCQ paper experiment (Fujimoto et al. 2019, Figure 2; discrete: Fujimoto et al. 2019b); prints its
    table, writes JSON and a figure."""

    name: tyro.conf.Positional[Literal["extrapolation", "concurrent", "discrete"]]
    """extrapolation (final, concurrent, imitation and imperfect buffers: behavioral policy, BCQ, off-policy
    DDPG, BC, VAE-BC and DQN on discretised actions), concurrent (the same learners learning from a behavioral
    DDPG's growing buffer) or discrete (a behavioral DQN's final and imperfect buffers: discrete BCQ, offline DQN
    and BC)."""
    env: Annotated[str, tyro.conf.arg(metavar="ENV_ID")]
    """Environment id: with a bounded Box action space, e.g. Pendulum-v1, Hopper-v5; discrete: with a Discrete one,
    e.g. MinAtar/Breakout-v1."""
    steps_behavioral: int | None = None
    """Environment steps of the behavioral DDPG (discrete: DQN) (default: its preset's total_steps)."""
    updates: int | None = None
    """Gradient updates of each offline agent, extrapolation and discrete (default: the BCQ preset's total_steps)."""
    seeds: Annotated[list[int], tyro.conf.arg(metavar="N ...")] = field(default_factory=lambda: [0])
    """One full experiment per seed; the table and figure show mean and std."""
    dataset_size: int | None = None
    """Transitions of the imitation and imperfect datasets (default: --steps-behavioral)."""
    final_noise: Annotated[float, tyro.conf.arg(metavar="STD")] = 0.5
    """Exploration noise std (fraction of max_action) of the final buffer's behavioral DDPG (paper: 0.5);
    extrapolation only (the behavioral DQN explores by its epsilon schedule, --behavioral-set)."""
    eval_freq: int | None = None
    """Updates (concurrent: steps; discrete: also the behavioral DQN's steps) between evaluations (default: the BCQ
    preset's eval_freq; discrete: the discrete BCQ preset's)."""
    eval_episodes: int = 10
    """Episodes per evaluation (deterministic; the paper uses 10)."""
    out: Annotated[str | None, tyro.conf.arg(metavar="DIR")] = None
    """Output directory (default: runs/experiment-NAME-ENV-TIME); the same command with the same --out resumes it."""
    behavioral_set: Annotated[list[str], values("KEY=VALUE")] = field(default_factory=list)
    """Behavioral DDPG (discrete: DQN) hyperparameters as key=value."""
    bcq_set: Annotated[list[str], values("KEY=VALUE")] = field(default_factory=list)
    """BCQ (discrete: discrete BCQ) hyperparameters as key=value, e.g. --bcq-set vae_hidden_sizes=[64,64]."""
    ddpg_set: Annotated[list[str], values("KEY=VALUE")] = field(default_factory=list)
    """Hyperparameters of the DDPG that learns from the data (offline / concurrent) as key=value."""
    bc_set: Annotated[list[str], values("KEY=VALUE")] = field(default_factory=list)
    """Behavioral cloning hyperparameters as key=value, e.g. --bc-set hidden_sizes=[64,64]."""
    vae_bc_set: Annotated[list[str], values("KEY=VALUE")] = field(default_factory=list)
    """VAE-BC hyperparameters as key=value, e.g. --vae-bc-set hidden_sizes=[64,64]."""
    dqn_set: Annotated[list[str], values("KEY=VALUE")] = field(default_factory=list)
    """Hyperparameters of the DQN that learns from the data as key=value: discrete, on the Discrete actions;
    extrapolation and concurrent, on independently discretised ones (default 10 sub-actions per dimension, the BCQ
    paper's; e.g. --dqn-set action_bins=5)."""
    address: Annotated[str | None, tyro.conf.arg(metavar="auto|HOST:PORT")] = None
    """Ray cluster for the runs (the ray extra): auto (the one `ray start` runs here) or HOST:PORT (default: a
    process pool on this machine, one run per core)."""
    datasets_only: bool = False
    """extrapolation only: write the final, imitation and imperfect datasets of each seed and stop (each behavioral
    DDPG trains alone, the same run as beside its concurrent learners: the full experiment's data, an hour sooner on
    Hopper); datasets.json lists them."""
    learners: Annotated[list[Literal["bcq", "ddpg", "bc", "vae_bc", "dqn"]], tyro.conf.arg(metavar="ALGO ...")] = field(
        default_factory=lambda: list(EXTRAPOLATION_LEARNERS)
    )
    """extrapolation only: the learners that train (default all), e.g. --learners vae_bc dqn for the columns a table
    made before they existed lacks, on its datasets redone (the same runs as --datasets-only); --merge joins the two."""
    merge: Annotated[list[str], values("JSON")] = field(default_factory=list)
    """extrapolation only: instead of running, combine the extrapolation.json of runs of one experiment over
    disjoint seeds (e.g. --seeds 0 1 in one session, --seeds 2 in another) or of other --learners on the same seeds
    into --out; takes no other settings."""
    progress: bool = True
    """Show the progress bars."""


@dataclass(kw_only=True)
class OnRay:
    """Where the runs of a sweep or a search execute (`acrl.sweep.jobs.ClusterOptions`)."""

    address: Annotated[str | None, tyro.conf.arg(metavar="auto|HOST:PORT")] = None
    """Ray cluster (the ray extra): auto (the one `ray start` runs here) or HOST:PORT (default: this machine, one run
    per core)."""
    cpus_per_run: Annotated[float, tyro.conf.arg(metavar="C")] = 1.0
    """CPUs reserved per run (also its torch threads)."""
    gpus_per_run: Annotated[float, tyro.conf.arg(metavar="G")] = 0.0
    """GPUs reserved per run (> 0: runs train on CUDA)."""
    retries: int = 3
    """Times a run whose worker or node died is restarted from its latest checkpoint."""

    def options(self):
        """These settings as `ClusterOptions`."""
        from acrl.sweep.jobs import ClusterOptions

        return ClusterOptions(
            address=self.address, cpus_per_job=self.cpus_per_run, gpus_per_job=self.gpus_per_run, retries=self.retries
        )


@dataclass
class Sweep(OnRay):
    """Run a grid of ordinary runs (processes on this machine, or a Ray cluster) and write its table and figure."""

    algo: Annotated[str | None, tyro.conf.Positional, tyro.conf.arg(metavar="[ALGO]")] = None
    """Algorithm (or the sweep file's `algo`)."""
    file: Annotated[str | None, tyro.conf.arg(metavar="SWEEP.yaml")] = None
    """Sweep file (YAML: algo, env, seeds, total_steps, preset, dataset, set; see the README); flags win."""
    env: Annotated[list[str], values("ENV")] = field(default_factory=list)
    """Environment ids, an axis of the grid."""
    seeds: Annotated[list[int], values("N")] = field(default_factory=list)
    """Seeds (default: the file's, else 0)."""
    total_steps: int | None = None
    """Each run's budget."""
    preset: Annotated[str | None, tyro.conf.arg(metavar="NAME")] = None
    """Preset name of acrl/presets/ALGO.yaml."""
    dataset: Annotated[list[str], values("FILE")] = field(default_factory=list)
    """Offline datasets, an axis of the grid."""
    set: Annotated[list[str], values("KEY=VALUE|KEY=[V1,V2]")] = field(default_factory=list)
    """key=value (the same in every run) or key=[v1, v2] (an axis); a list-valued field's axis is a list of
    lists, e.g. hidden_sizes=[[64,64],[256,256]]."""
    out: Annotated[str | None, tyro.conf.arg(metavar="DIR")] = None
    """Sweep directory (default: runs/sweep-ALGO-ENVS-HASH, env ids joined by +; rerunning the command resumes it)."""
    progress: bool = True
    """Show the progress bar over runs."""


@dataclass
class Tune(OnRay):
    """Search hyperparameters with Optuna (TPE, pruning on evaluations); trials run in parallel on Ray."""

    algo: Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="ALGO")]
    """Algorithm whose config the space samples."""
    env: Annotated[str, tyro.conf.arg(metavar="ENV_ID")]
    """Environment id of every trial."""
    trials: int
    """Trials to finish (complete, pruned or failed)."""
    space: Annotated[list[str], values("KEY=SPEC")] = field(default_factory=list)
    """KEY=SPEC with SPEC loguniform:LOW:HIGH, uniform:LOW:HIGH, int:LOW:HIGH or categorical:A,B,C."""
    file: Annotated[str | None, tyro.conf.arg(metavar="SPACE.yaml")] = None
    """YAML with `space:` (KEY: SPEC) and optionally `set:` (KEY: value); flags add to it."""
    total_steps: int | None = None
    """Each trial's budget."""
    seed: int = 0
    """Each trial's seed, and the sampler's."""
    preset: Annotated[str | None, tyro.conf.arg(metavar="NAME")] = None
    """Preset the trials start from."""
    set: Annotated[list[str], values("KEY=VALUE")] = field(default_factory=list)
    """Fixed key=value of every trial."""
    pruner: Literal["median", "asha", "none"] = "median"
    """median, asha (successive halving) or none."""
    startup_trials: int = 5
    """Random trials before TPE starts (the median pruner waits for as many)."""
    parallel: int | None = None
    """Trials at once (default: as many as the cluster's CPUs allow)."""
    out: Annotated[str | None, tyro.conf.arg(metavar="DIR")] = None
    """Tune directory (default: runs/tune-ALGO-ENV-HASH; rerunning the command continues the study)."""
    progress: bool = True
    """A line per finished trial."""


Command = (
    Annotated[Train, tyro.conf.subcommand("train")]
    | Annotated[Resume, tyro.conf.subcommand("resume")]
    | Annotated[Evaluate, tyro.conf.subcommand("evaluate")]
    | Annotated[Record, tyro.conf.subcommand("record")]
    | Annotated[Plot, tyro.conf.subcommand("plot")]
    | Annotated[Collect, tyro.conf.subcommand("collect")]
    | Annotated[Experiment, tyro.conf.subcommand("experiment")]
    | Annotated[Sweep, tyro.conf.subcommand("sweep")]
    | Annotated[Tune, tyro.conf.subcommand("tune")]
)


def build_agent(args: Train):
    """The agent `acrl train` trains (`acrl.algos.make_config`: defaults < preset < --set < flags).

    Raises:
        InputError: unknown algorithm, env, preset or key, a bad value, a MUJOCO_GL that cannot render
            (with --video-freq), a missing or unreadable --dataset file.
    """
    from acrl.algos import make_config
    from acrl.core.config import parse_set_options
    from acrl.core.video import check_mujoco_gl
    from acrl.parts.datasets import dataset_attrs

    if args.video_freq:
        check_mujoco_gl()  # before the env is made: a MuJoCo task imports mujoco, which fails on a bad MUJOCO_GL
    cls, config = make_config(
        args.algo,
        args.env,
        args.preset,
        parse_set_options(args.set),
        seed=args.seed,
        total_steps=args.total_steps,
        n_envs=args.n_envs,
        device=args.device,
        workers=args.workers,
        dataset=args.dataset,
        video_freq=args.video_freq,
    )
    if args.dataset is not None:
        dataset_attrs(args.dataset)  # a missing or unreadable file is named before the env and its action space
    return cls(args.env or config.env_id, config=config)


def train(args: Train) -> None:
    """Train into RUN_DIR (default runs/ALGO-ENV-sSEED-TIME); print its best evaluation (`report`).

    Raises:
        InputError: a bad flag, preset, environment or dataset (`build_agent`), or a RUN_DIR that holds another run.
    """
    from acrl.core.loop import ConsoleReport

    agent = build_agent(args)
    cfg = agent.config
    run_dir = Path(
        args.run_dir or f"runs/{args.algo}-{cfg.env_id.replace('/', '_')}-s{cfg.seed}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    # announced once learn's checks (the run directory, an offline agent's dataset) have passed
    console = ConsoleReport(f"training {args.algo} on {cfg.env_id} -> {run_dir}", evaluations=not args.progress)
    agent.learn(run_dir=run_dir, progress=args.progress, callbacks=[console])
    report(run_dir)


def existing_run_dir(path: str) -> Path:
    """`path` as a Path; raises InputError when no such directory exists."""
    if not Path(path).is_dir():
        raise InputError(f"no run directory {path}: check the path (acrl train prints it when it starts).")
    return Path(path)


def resume(args: Resume) -> None:
    """Go on training RUN_DIR from checkpoints/latest.pt up to its budget or --total-steps; print its best
    evaluation (`report`).

    Raises:
        InputError: no such run directory, a missing or corrupt checkpoint, or a budget the run has reached.
    """
    from acrl.algos import load
    from acrl.core.loop import ConsoleReport

    run_dir = existing_run_dir(args.run_dir)
    agent = load(run_dir / "checkpoints" / "latest.pt", device=args.device)
    budget = args.total_steps if args.total_steps is not None else agent.total_steps
    if budget <= agent.num_steps:
        given = f"--total-steps {args.total_steps} does not go beyond it. " if args.total_steps is not None else ""
        raise InputError(
            f"the run is at step {agent.num_steps} of its budget {agent.total_steps}; nothing to "
            f"resume. {given}Pass --total-steps N with N > {agent.num_steps} to train further."
        )
    print(f"resuming {agent.algo} on {agent.config.env_id} at step {agent.num_steps}", file=sys.stderr)
    agent.learn(
        total_steps=args.total_steps,
        run_dir=run_dir,
        progress=args.progress,
        callbacks=[ConsoleReport(evaluations=not args.progress)],
    )
    report(run_dir)


def report(run_dir: Path) -> None:
    """Print eval.json on stdout (the best checkpoint's evaluation, its step and the last evaluation);
    on stderr, which evaluation that is against the last one, and where the learning curve is."""
    summary = json.loads((run_dir / "eval.json").read_text())
    print(json.dumps(summary))
    last, resumed = summary["last"], summary["resumed_at"]
    earlier = f" (from before the resume at step {resumed:,})" if resumed and summary["step"] <= resumed else ""
    print(
        f"best evaluation: return {format_return(summary['return_mean'])} at step {summary['step']:,}{earlier}, "
        f"kept in {run_dir / summary['checkpoint']}; last evaluation: return {format_return(last['return_mean'])} "
        f"at step {last['step']:,}",
        file=sys.stderr,
    )
    print(f"learning curve: {run_dir / 'learning_curve.png'}", file=sys.stderr)


def run_checkpoint(run_dir: Path, name: str = "best") -> Path:
    """run_dir/checkpoints/NAME.pt; for best, latest.pt when no best.pt exists yet (with a warning).

    Raises:
        InputError: the checkpoint is not there.
    """
    checkpoints = run_dir / "checkpoints"
    path = checkpoints / f"{name}.pt"
    if name == "best" and not path.exists() and (checkpoints / "latest.pt").exists():
        path = checkpoints / "latest.pt"
        warnings.warn(f"no best.pt yet; using {path}", stacklevel=2)
    if not path.exists():
        raise InputError(f"{run_dir} has no {path.name}: is it a run directory that `acrl train` wrote?")
    return path


def check_seed(seed: int | None) -> None:
    """Raise `InputError` for a negative --seed (Gymnasium and numpy take seeds >= 0)."""
    if seed is not None and seed < 0:
        raise InputError(f"--seed must be >= 0, got {seed}.")


def evaluate(args: Evaluate) -> None:
    """Print the evaluation as JSON; write it to RUN_DIR/evaluate.json and the model card."""
    from acrl.algos import load
    from acrl.algos.base import EVAL_SEED_OFFSET
    from acrl.core.evaluation import evaluate as run_evaluation
    from acrl.core.files import write_json_atomic
    from acrl.core.model_card import write_model_card

    if args.episodes < 1:
        raise InputError(f"--episodes must be >= 1, got {args.episodes}.")
    check_seed(args.seed)
    run_dir = existing_run_dir(args.run_dir)
    path = run_checkpoint(run_dir, args.checkpoint)
    agent = load(path, device=args.device)
    seed = args.seed if args.seed is not None else agent.config.seed + EVAL_SEED_OFFSET
    result = run_evaluation(agent, agent.env, args.episodes, deterministic=not args.stochastic, seed=seed)
    write_json_atomic(
        run_dir / "evaluate.json",
        {"checkpoint": path.name, "seed": seed, "date": time.strftime("%Y-%m-%d %H:%M"), "result": result},
    )
    write_model_card(run_dir, agent)
    print(json.dumps({**result, "checkpoint": f"checkpoints/{path.name}", "step": agent.num_steps}))
    print(f"evaluated {path}, saved at step {agent.num_steps:,}", file=sys.stderr)


def record(args: Record) -> None:
    """Write the video; print a JSON summary (path, returns, lengths, frames, fps, size) on stdout."""
    from acrl.algos import load
    from acrl.algos.base import EVAL_SEED_OFFSET
    from acrl.core.model_card import write_model_card
    from acrl.core.video import check_mujoco_gl

    run_dir = existing_run_dir(args.run_dir)
    if args.out is not None and not args.out.lower().endswith(".mp4"):
        raise InputError(f"--out must name an .mp4 file, got {args.out!r}.")
    check_seed(args.seed)
    check_mujoco_gl()  # before `load` makes the env: a MuJoCo task imports mujoco, which fails on a bad MUJOCO_GL
    path = run_checkpoint(run_dir, args.checkpoint)
    agent = load(path, device=args.device)
    seed = args.seed if args.seed is not None else agent.config.seed + EVAL_SEED_OFFSET
    name = f"{path.stem}-seed{seed}{'-stochastic' if args.stochastic else ''}"
    name += f"-max{args.max_steps}" if args.max_steps else ""
    out = Path(args.out) if args.out else run_dir / "videos" / f"{name}.mp4"
    signal.signal(signal.SIGTERM, _interrupt)  # like Ctrl-C: the partial video is removed, exit 130
    result = agent.record_video(
        out, args.episodes, deterministic=not args.stochastic, seed=seed, max_steps=args.max_steps
    )
    if args.out is None:  # the return goes into the default name
        named = out.with_name(f"{out.stem}-return{sum(result['returns']) / len(result['returns']):.1f}.mp4")
        os.replace(out, named)
        result["path"] = str(named)
    write_model_card(run_dir, agent)
    print(json.dumps(result))


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def plot(args: Plot) -> None:
    """Plot the learning curves of run directories (or print and plot a sweep's table and figure).

    Raises:
        InputError: no run directory given, or one that does not exist or holds no metrics.csv.
    """
    from acrl.core.plotting import plot_runs

    if not args.run_dirs:
        raise InputError("acrl plot needs at least one run directory, e.g. acrl plot runs/ppo-CartPole-v1-s0-*.")
    if len(args.run_dirs) == 1 and (Path(args.run_dirs[0]) / "sweep.yaml").is_file():
        from acrl.sweep.results import markdown, summarize

        sweep_dir = Path(args.run_dirs[0])
        print(markdown(summarize(sweep_dir)))
        print(f"table: {sweep_dir / 'results.md'}; figure: {sweep_dir / 'curves.png'}", file=sys.stderr)
        return
    for path in args.run_dirs:
        run_dir = existing_run_dir(path)
        if not (run_dir / "metrics.csv").is_file():
            inner = sorted(
                str(p.parent) for pattern in ("*/metrics.csv", "*/*/metrics.csv") for p in run_dir.glob(pattern)
            )
            where = (
                f" It holds run directories ({', '.join(inner[:3])}{', ...' if len(inner) > 3 else ''}): "
                "pass those instead."
                if inner
                else ""
            )
            raise InputError(
                f"{path} is not a run directory: it has no metrics.csv (`acrl train` writes one "
                f"when the run starts).{where}"
            )
    print(f"figure: {plot_runs(args.run_dirs, args.out)}", file=sys.stderr)


def collect(args: Collect) -> None:
    """Write the dataset and print a JSON summary (file, transitions, episode ends, attrs)."""
    from acrl.core.config import parse_set_options
    from acrl.offline.collect import collect_dataset

    data = collect_dataset(
        args.kind,
        args.out,
        args.steps,
        env_id=args.env,
        policy=args.policy,
        seed=args.seed,
        noise_std=args.noise,
        random_prob=args.random_prob,
        algo=args.algo,
        preset=args.preset,
        overrides=parse_set_options(args.set),
        progress=args.progress,
    )
    print(
        json.dumps(
            {
                "out": args.out,
                "transitions": len(data),
                "terminals": int(data.terminals.sum()),
                "timeouts": int(data.timeouts.sum()),
                **data.attrs,
            }
        )
    )


def experiment(args: Experiment) -> None:
    """Print the experiment's markdown table on stdout; the output directory's path on stderr."""
    from acrl.core.config import parse_set_options
    from acrl.offline.discrete import discrete_markdown, run_discrete
    from acrl.offline.experiments import (
        concurrent_markdown,
        extrapolation_markdown,
        run_concurrent_experiment,
        run_extrapolation,
    )
    from acrl.sweep.jobs import ClusterOptions

    if args.name not in ("extrapolation", "concurrent", "discrete"):
        raise InputError(f"unknown experiment {args.name!r}; choose extrapolation, concurrent or discrete.")
    if args.name == "concurrent" and (
        args.updates is not None or args.dataset_size is not None or args.final_noise != 0.5
    ):
        raise InputError(
            "--updates, --dataset-size and --final-noise are for extrapolation; the concurrent learners "
            "get one update per behavioral step (--steps-behavioral)."
        )
    if args.name == "discrete" and (args.final_noise != 0.5 or args.ddpg_set or args.vae_bc_set):
        raise InputError(
            "--final-noise, --ddpg-set and --vae-bc-set are for the continuous experiments; the discrete "
            "experiment's behavioral DQN explores by its epsilon schedule (--behavioral-set epsilon_end=...) and "
            "its offline DQN takes --dqn-set."
        )
    if args.merge:
        merge_parts(args)
        return
    if args.datasets_only and args.name != "extrapolation":
        raise InputError(
            f"--datasets-only writes the extrapolation experiment's datasets; {args.name} has no such stage."
        )
    if args.name != "extrapolation" and set(args.learners) != set(EXTRAPOLATION_LEARNERS):
        raise InputError(f"--learners picks the extrapolation experiment's learners; {args.name} runs all of its own.")
    out = Path(args.out or f"runs/experiment-{args.name}-{args.env.replace('/', '_')}-{time.strftime('%Y%m%d-%H%M%S')}")
    overrides = {
        "behavioral_overrides": parse_set_options(args.behavioral_set),
        "bcq_overrides": parse_set_options(args.bcq_set),
        "ddpg_overrides": parse_set_options(args.ddpg_set),
        "bc_overrides": parse_set_options(args.bc_set),
        "vae_bc_overrides": parse_set_options(args.vae_bc_set),
        "dqn_overrides": parse_set_options(args.dqn_set),
    }
    options = ClusterOptions(address=args.address)
    if args.name == "discrete":
        del overrides["ddpg_overrides"], overrides["vae_bc_overrides"]
        summary = run_discrete(
            args.env,
            out,
            args.steps_behavioral,
            args.updates,
            args.seeds,
            args.dataset_size,
            args.eval_freq,
            args.eval_episodes,
            progress=args.progress,
            options=options,
            **overrides,
        )
        print(discrete_markdown(summary))
        print(f"table: {out / 'discrete.json'}; figure: {out / 'discrete.png'}", file=sys.stderr)
    elif args.name == "extrapolation":
        summary = run_extrapolation(
            args.env,
            out,
            args.steps_behavioral,
            args.updates,
            args.seeds,
            args.dataset_size,
            args.eval_freq,
            args.eval_episodes,
            final_noise=args.final_noise,
            progress=args.progress,
            options=options,
            datasets_only=args.datasets_only,
            learners=args.learners,
            **overrides,
        )
        if args.datasets_only:
            print(json.dumps(summary["datasets"], indent=2))
            print(f"datasets: {out / 'datasets.json'}", file=sys.stderr)
            return
        print(extrapolation_markdown(summary))
        print(f"table: {out / 'extrapolation.json'}; figure: {out / 'extrapolation.png'}", file=sys.stderr)
    else:
        results = run_concurrent_experiment(
            args.env,
            out,
            args.steps_behavioral,
            args.seeds,
            eval_freq=args.eval_freq,
            eval_episodes=args.eval_episodes,
            options=options,
            progress=args.progress,
            **overrides,
        )
        print(concurrent_markdown(results))
        print(f"table: {out / 'concurrent.json'}; figure: {out / 'concurrent.png'}", file=sys.stderr)


def merge_parts(args: Experiment) -> None:
    """`acrl experiment extrapolation --merge PART.json ... --out DIR`: print the merged table
    (`acrl.offline.experiments.merge_extrapolation`).

    Raises:
        InputError: another experiment than extrapolation, no --out, a setting besides --env, a part that
            cannot be read or is of another environment, or what `merge_extrapolation` refuses.
    """
    from acrl.offline.experiments import extrapolation_markdown, merge_extrapolation

    if args.name != "extrapolation":
        raise InputError(f"--merge combines extrapolation experiments, not {args.name}.")
    given = [
        f"--{f.name.replace('_', '-')}"
        for f in dataclasses.fields(Experiment)
        if f.name not in ("name", "env", "out", "merge", "progress")
        and getattr(args, f.name) != (f.default_factory() if f.default is dataclasses.MISSING else f.default)
    ]
    if given or args.out is None:
        raise InputError(
            "--merge takes the settings from the parts it combines: give only --env and --out"
            + (f" (got {', '.join(given)})." if given else " (no --out given).")
        )
    parts = []
    for path in args.merge:
        try:
            parts.append(json.loads(Path(path).read_text()))
        except (OSError, json.JSONDecodeError) as exc:
            raise InputError(f"cannot read {path} as an extrapolation.json: {exc}") from None
        if parts[-1].get("env_id") != args.env:
            raise InputError(f"{path} is an experiment on {parts[-1].get('env_id')!r}, not on --env {args.env!r}.")
    summary = merge_extrapolation(parts, args.out)
    print(extrapolation_markdown(summary))
    print(
        f"table: {Path(args.out) / 'extrapolation.json'}; figure: {Path(args.out) / 'extrapolation.png'}",
        file=sys.stderr,
    )


def sweep(args: Sweep) -> None:
    """Print the sweep's Markdown table on stdout; where the files are on stderr."""
    from acrl.core.config import parse_set_options
    from acrl.sweep.grid import run_sweep
    from acrl.sweep.results import markdown
    from acrl.sweep.spec import SweepSpec

    spec = SweepSpec.from_command(
        args.file,
        args.algo,
        args.env,
        args.seeds,
        args.dataset,
        parse_set_options(args.set),
        args.total_steps,
        args.preset,
    )
    out = Path(args.out) if args.out else spec.default_dir()
    summary = run_sweep(spec, out, args.options(), progress=args.progress)
    print(markdown(summary))
    print(f"table: {out / 'results.md'} ({out / 'results.json'}); figure: {out / 'curves.png'}", file=sys.stderr)


def tune(args: Tune) -> None:
    """Print the best trial and the preset entry on stdout; where the files are on stderr."""
    import yaml

    from acrl.core.config import parse_set_options
    from acrl.sweep.tune import read_space, run_tune

    space, fixed = read_space(args.file, args.space)
    summary = run_tune(
        args.algo,
        args.env,
        args.trials,
        space,
        args.out,
        args.total_steps,
        args.seed,
        args.preset,
        {**fixed, **parse_set_options(args.set)},
        args.pruner,
        args.startup_trials,
        args.parallel,
        args.options(),
        args.progress,
    )
    print(json.dumps(summary["best"]))
    print(yaml.safe_dump(summary["preset"], sort_keys=False), end="")
    out = Path(summary["out"])
    print(
        f"study: {out / 'trials.md'} ({out / 'trials.json'}); figure: {out / 'study.png'}; preset entry: "
        f"{out / 'preset.yaml'} (add it to acrl/presets/{args.algo}.yaml and train with --preset tuned)",
        file=sys.stderr,
    )


HANDLERS = {
    Train: train,
    Resume: resume,
    Evaluate: evaluate,
    Record: record,
    Plot: plot,
    Collect: collect,
    Experiment: experiment,
    Sweep: sweep,
    Tune: tune,
}

COMMANDS = {typing.get_args(option)[1].name: typing.get_args(option)[0] for option in typing.get_args(Command)}
"""Command name -> its dataclass, in `Command`'s order."""

DESCRIPTION = (
    "Deep reinforcement learning on Gymnasium: train, resume, evaluate, record, plot; offline datasets "
    "and the BCQ paper's experiments; sweeps (on this machine or Ray) and searches. `acrl COMMAND --help` "
    "describes a command; `acrl --version` prints the version."
)


def synopsis(width: int = 110) -> str:
    """The commands and their options, one paragraph each, from `Command`'s dataclasses (the README's CLI block).

    Positional arguments come first, then the command's own options, then those it inherits
    (`OnRay`'s). A placeholder is the field's metavar where it sets one, else Literal choices as
    a|b, N for an int, X for a float and the field's name in capitals for a string; options with a
    default are in brackets, a bool that defaults to true is `--no-FLAG`. Lines wrap at `width`.
    """
    paragraphs = []
    for command, cls in COMMANDS.items():
        hints = typing.get_type_hints(cls, include_extras=True)
        positional, own, inherited = [], [], []
        for f in dataclasses.fields(cls):
            hint = hints[f.name]
            extras = typing.get_args(hint)[1:] if typing.get_origin(hint) is Annotated else ()
            base = typing.get_args(hint)[0] if extras else hint
            base = (
                next((t for t in typing.get_args(base) if t is not type(None)), base)
                if typing.get_origin(base) in (types.UnionType, typing.Union)
                else base
            )
            metavar = next((m.metavar for m in extras if getattr(m, "metavar", None)), None)
            if metavar is None:
                metavar = (
                    "|".join(typing.get_args(base))
                    if typing.get_origin(base) is Literal
                    else {int: "N", float: "X"}.get(base, f.name.upper())
                )
            optional = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            flag = f"--{f.name.replace('_', '-')}"
            words = own if f.name in vars(cls).get("__annotations__", {}) else inherited
            if any(m is typing.get_args(tyro.conf.Positional[int])[1] for m in extras):
                positional.append(metavar)
            elif base is bool:
                words.append(f"[--no-{flag[2:]}]" if f.default else f"[{flag}]")
            else:
                words.append(f"[{flag} {metavar}]" if optional else f"{flag} {metavar}")
        lines, indent = [f"acrl {command}"], " " * len(f"acrl {command} ")
        for word in positional + own + inherited:
            if len(lines[-1]) + 1 + len(word) > width:
                lines.append(indent + word)
            else:
                lines[-1] += " " + word
        paragraphs.append("\n".join(lines))
    return "\n".join([*paragraphs, "acrl --version"])


@contextmanager
def one_line_warnings() -> Iterator[None]:
    """While active, each warning prints as the line `acrl: warning: MESSAGE` on stderr, without
    Python's file:line and source line; the warning filters and `warnings.showwarning` are restored after.
    """

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        print(f"acrl: warning: {' '.join(str(message).split())}", file=file or sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `acrl` console script; returns the exit code."""
    with one_line_warnings():
        return _run(sys.argv[1:] if argv is None else list(argv))


def _run(argv: list[str]) -> int:
    if argv[:1] == ["--version"]:
        print(f"acrl {__version__}")
        return 0
    try:
        with tyro._errors.on_parse_error(functools.partial(_reject_arguments, argv)):
            args = tyro.cli(Command, args=argv, prog="acrl", description=DESCRIPTION, config=(tyro.conf.DisallowNone,))
        HANDLERS[type(args)](args)
    except InputError as exc:
        print(f"acrl: error: {exc.cli or exc}", file=sys.stderr)
        return 2
    except TrainingError as exc:
        print(f"acrl: training failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("acrl: interrupted", file=sys.stderr)
        return 130
    return 0


def _reject_arguments(argv: list[str], event: tyro._errors.ParseErrorEvent) -> None:
    """tyro's parse-error hook: raise the `InputError` that says, in one line, which argument was wrong.

    Raises:
        InputError: always (an unknown command or option, a bad value or choice, a missing argument).
    """
    command = next((word for word in argv if word in COMMANDS), None)
    see = f"`acrl {command} --help`" if command else "`acrl --help`"

    def name(arg) -> str:  # an option's flag, a positional's field name in capitals
        return arg.field.intern_name.upper() if arg.is_positional() else arg.display_name()

    def and_(words: list[str]) -> str:
        return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)

    if command is None and argv and not argv[0].startswith("-"):
        close = difflib.get_close_matches(argv[0], COMMANDS, n=1)
        raise InputError(
            f"unknown command {argv[0]!r}{f' (did you mean {close[0]}?)' if close else ''}; the "
            f"commands are {', '.join(COMMANDS)}."
        )
    if isinstance(event, tyro._errors.UnrecognizedArgs):
        raise InputError(
            f"unrecognized argument{'s' * (len(event.tokens) > 1)} {' '.join(event.tokens)}; {see} lists the options."
        )
    if isinstance(event, tyro._errors.InvalidChoice):
        raise InputError(
            f"{name(event.argument)} must be {and_(list(event.choices)).replace(' and ', ' or ')}, got {event.value!r}."
        )
    if isinstance(event, tyro._errors.InstantiationFailure) and event.argument is not None:
        arg = event.argument
        flag, single = arg.display_name(), arg.lowered.nargs == 1
        given = []
        for i, word in enumerate(argv):
            option, equals, value = word.partition("=")
            if option.replace("_", "-") == flag:
                following = (
                    argv[i + 1 : i + 2]
                    if single
                    else list(itertools.takewhile(lambda w: not w.startswith("-"), argv[i + 1 :]))
                )
                given = [value] if equals else following
        base = next(
            (t for t in typing.get_args(arg.field.type_stripped) if t is not type(None)), arg.field.type_stripped
        )
        kind = (
            {int: "an integer", float: "a number"}.get(base, arg.lowered.metavar)
            if single
            else {int: "integers", float: "numbers"}.get(base, arg.lowered.metavar)
        )
        raise InputError(f"{flag} takes {kind}, got {' '.join(map(repr, given)) or 'nothing'}.")
    if isinstance(event, tyro._errors.BadValue):
        raise InputError(
            f"{name(event.argument)} needs a value ({event.argument.lowered.metavar}); {see} describes it."
        )
    if isinstance(event, tyro._errors.MissingArgs):
        missing = [name(arg.arg) for arg in event.missing_arguments]
        raise InputError(f"acrl {command} needs {and_(missing)}; {see} describes {'them' if missing[1:] else 'it'}.")
    if isinstance(event, tyro._errors.MissingSubcommand):
        raise InputError(f"acrl needs a command: {', '.join(COMMANDS)} (`acrl --help` describes them).")
    raise InputError(f"cannot parse the arguments {' '.join(argv)}; {see} lists the options.")


if __name__ == "__main__":
    sys.exit(main())
