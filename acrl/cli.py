"""`acrl` command line: a thin layer that parses into configs and calls the library.

Each command is a dataclass (`Train`, `Resume`, ... below; the experiments, one subcommand each, in
`acrl.cli_experiment`; sweep and tune in `acrl.cli_sweep`), collected in `Command` and parsed by tyro;
its fields and their docstrings are the options and their help (`acrl COMMAND --help`), and
`synopsis()` renders every command line with its options from those dataclasses, the block that the
README's "Command line" section shows (tests/algos/test_cli.py checks that they agree). ALGO is one
of `acrl.algos.ALGORITHMS`; `acrl --version` prints the version.

Errors: bad input, tyro's own argument errors included, is one line `acrl: error: MESSAGE` on
stderr (no traceback, no box; `acrl.cli_parse.parse`); warnings print once each, as one line
`acrl: warning: MESSAGE`.
Exit codes: 0 success, 2 bad input, 1 failure during the run, 130 interrupted.
"""

from __future__ import annotations

import json
import signal
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import tyro

from acrl.algos import ALGORITHMS
from acrl.cli_experiment import Experiment, ExperimentCommand, experiment
from acrl.cli_parse import parse, subcommands, values
from acrl.cli_parse import synopsis as render_synopsis
from acrl.cli_sweep import Sweep, Tune, sweep, tune
from acrl.core.errors import InputError, TrainingError
from acrl.core.files import rounded
from acrl.core.logging import format_return
from acrl.core.version import __version__
from acrl.offline.collect import DATASET_KINDS, FINAL_ALGOS, FORMATS
from acrl.offline.d4rl import D4RL_KINDS

COLLECT_KINDS = tuple(kind for kind in DATASET_KINDS if kind != "concurrent") + D4RL_KINDS
"""The kinds `acrl collect` writes (the concurrent buffer is an experiment: `acrl experiment concurrent`)."""


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
    the preset says otherwise); for IMPALA and APPO, per actor."""
    workers: int | None = None
    """A3C worker processes (default: the number of cores)."""
    actors: int | None = None
    """IMPALA's and APPO's actors on Ray, one CPU each (default: the preset's, else 2)."""
    address: Annotated[str | None, tyro.conf.arg(metavar="auto|HOST:PORT")] = None
    """IMPALA's and APPO's Ray cluster (the ray extra): auto (the one `ray start` runs here) or HOST:PORT (default:
    start Ray on this machine for the run)."""
    dataset: Annotated[str | None, tyro.conf.arg(metavar="PATH")] = None
    """Offline dataset (an HDF5 file with D4RL's keys, e.g. from `acrl collect`, or a Minari dataset directory):
    required by the offline algorithms (bcq, discrete_bcq, bc, discrete_bc, vae_bc, td3_bc, iql, cql,
    discrete_cql); the other replay algorithms (ddpg, td3, sac, dqn) then learn from it instead of collecting."""
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
    actors: int | None = None
    """IMPALA's or APPO's actors from here on (default: the run's own)."""
    device: str | None = None
    """auto, cpu, cuda or cuda:N (default: the device the run used)."""
    precision: Literal["fp32", "bf16"] | None = None
    """fp32 or bf16 (default: the precision the run used; fp32 reads a bf16 run on hardware without it)."""
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
    precision: Literal["fp32", "bf16"] | None = None
    """fp32 or bf16 (default: the precision the run used; fp32 reads a bf16 run on hardware without it)."""


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
    precision: Literal["fp32", "bf16"] | None = None
    """fp32 or bf16 (default: the precision the run used; fp32 reads a bf16 run on hardware without it)."""


@dataclass
class Plot:
    """Draw learning curves (training episodes and evaluations) or any logged metric; several seeds of one
    config become a mean with a band. Given a sweep directory, rewrite its table and figure (results.md,
    results.json, curves.png)."""

    run_dirs: Annotated[
        list[str], tyro.conf.Positional, tyro.conf.arg(metavar="RUN_DIR [RUN_DIR ...]", help_behavior_hint="")
    ]
    """Run directories written by `acrl train` (each with its metrics.csv), or one `acrl sweep` directory."""
    metric: Annotated[list[str], values("KEY")] = field(default_factory=list)
    """Metrics to draw, a panel each: any column of metrics.csv (e.g. train/entropy, time/fps), or episode/return
    and episode/length (episodes.csv) (default: the learning curve, training returns and evaluations)."""
    x: Literal["steps", "episodes", "time"] = "steps"
    """The x axis: steps (environment steps; gradient updates for runs on a dataset), episodes (training episodes
    finished: each episode's return against its number, the score plot) or time (wall-clock, from time/elapsed_s)."""
    out: Annotated[str, tyro.conf.arg(metavar="FILE.png")] = "learning_curves.png"
    """PNG file to write, relative to the current directory (its folder must exist); `acrl plot` prints its path."""


@dataclass
class Collect:
    """Collect an offline dataset (HDF5 with D4RL's keys, or a Minari directory): the BCQ paper's kinds (final,
    imitation, imperfect) or D4RL's (random, medium, medium-replay, expert, medium-expert)."""

    kind: Annotated[Literal[COLLECT_KINDS], tyro.conf.arg(metavar="KIND")]
    """final (all transitions of a behavioral DDPG, TD3 or DQN training run), imitation (a trained policy without
    noise), imperfect (the policy with N(0, 0.3) noise and random actions with probability 0.3; Discrete actions:
    random with probability 0.2); D4RL's: random (uniformly random actions), medium (a SAC stopped at a third of
    the expert's return), medium-replay (that SAC's replay buffer), expert (a trained policy), medium-expert
    (half medium, half expert)."""
    out: Annotated[str, tyro.conf.arg(metavar="FILE")]
    """HDF5 file, or with --format minari a Minari dataset directory, to write (final also writes the behavioral
    run to FILE's stem + '-behavioral/', D4RL's kinds their SACs to FILE's stem + '-sac-medium/' or '-sac-expert/')."""
    steps: int | None = None
    """Transitions to collect (final: the behavioral agent's training steps; medium-expert: half from each policy;
    medium-replay takes none: its size is where its SAC stops)."""
    env: Annotated[str | None, tyro.conf.arg(metavar="ENV_ID")] = None
    """Environment id (required for final and for D4RL's kinds without --policy; default: the policy's)."""
    policy: Annotated[str | None, tyro.conf.arg(metavar="RUN_DIR")] = None
    """Run directory of a trained agent (its checkpoints/best.pt): the policy of imitation and imperfect, the expert
    of expert and medium-expert (default for those: a SAC trained here)."""
    seed: int = 0
    """Seed of the agents trained here and of the environment, noise and random actions."""
    noise: Annotated[float | None, tyro.conf.arg(metavar="STD")] = None
    """BCQ kinds: Gaussian action noise std as a fraction of max_action (default: imperfect 0.3, Discrete actions
    none; final: the preset's 0.1)."""
    random_prob: Annotated[float | None, tyro.conf.arg(metavar="P")] = None
    """BCQ kinds: probability of a uniformly random action (default: imperfect 0.3, on a Discrete action space
    0.2; else 0)."""
    algo: Literal[FINAL_ALGOS] | None = None
    """Behavioral agent of final: DDPG (the paper's; the default), TD3, or DQN for a Discrete action space."""
    target_return: Annotated[float | None, tyro.conf.arg(metavar="R")] = None
    """Evaluation return at which the medium SAC stops (medium, medium-replay, medium-expert; default: a third of the
    way from the random return to the expert's)."""
    expert_return: Annotated[float | None, tyro.conf.arg(metavar="R")] = None
    """Expert return that sets the medium target instead (default: D4RL's for Hopper, HalfCheetah, Walker2d and Ant,
    else for medium-expert its expert's, measured)."""
    train_steps: int | None = None
    """Environment steps of each SAC trained for D4RL's kinds (default: the SAC preset's total_steps)."""
    replay_out: Annotated[str | None, tyro.conf.arg(metavar="FILE")] = None
    """--kind medium: also write its SAC's replay buffer, the medium-replay dataset, to FILE (one SAC for both)."""
    format: Literal[FORMATS] = "hdf5"
    """hdf5 (a file with D4RL's keys) or minari (a Minari dataset directory; vector observations)."""
    preset: Annotated[str | None, tyro.conf.arg(metavar="NAME")] = None
    """Preset of the agents trained here (final's behavioral agent, D4RL's SACs)."""
    set: Annotated[list[str], values("KEY=VALUE")] = field(default_factory=list)
    """Hyperparameters of the agents trained here as key=value, e.g. --set start_steps=1000."""
    progress: bool = True
    """Show the progress bar."""


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
        actors=args.actors,
        address=args.address,
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
    """`path` as a Path; raises InputError when no such directory exists (for a .pt file: how to make one of it)."""
    if Path(path).is_file():
        lone = (
            f" For a lone checkpoint: mkdir -p RUN/checkpoints && cp {path} RUN/checkpoints/latest.pt, then give RUN "
            "(to evaluate or record it: with --checkpoint latest)."
            if path.endswith(".pt")
            else ""
        )
        raise InputError(f"{path} is a file: give a run directory (acrl train's).{lone}")
    if not Path(path).is_dir():
        raise InputError(f"no run directory {path}: check the path (acrl train prints it when it starts).")
    return Path(path)


def resume(args: Resume) -> None:
    """Go on training RUN_DIR from checkpoints/latest.pt up to its budget or --total-steps; print its best
    evaluation (`report`).

    Raises:
        InputError: no such run directory, a missing or corrupt checkpoint, a budget the run has reached, or
            --actors for a run without actors or below 1.
    """
    from acrl.algos import load
    from acrl.core.checkpoint import restore_run_files
    from acrl.core.loop import ConsoleReport

    run_dir = existing_run_dir(args.run_dir)
    restored = restore_run_files(run_dir)  # a directory laid anew around a latest.pt copied from another machine
    if restored:
        print(f"restored {', '.join(restored)} from checkpoints/latest.pt", file=sys.stderr)
    agent = load(run_dir / "checkpoints" / "latest.pt", device=args.device, precision=args.precision)
    if args.actors is not None:
        if not hasattr(agent.config, "actors"):
            raise InputError(f"--actors does not apply to {agent.algo}: it has no actors setting.")
        agent.config.actors = args.actors
        agent.config.validate()
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
    print(json.dumps(rounded(summary)))
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
    agent = load(path, device=args.device, precision=args.precision)
    seed = args.seed if args.seed is not None else agent.config.seed + EVAL_SEED_OFFSET
    result = run_evaluation(agent, agent.env, args.episodes, deterministic=not args.stochastic, seed=seed)
    dataset = getattr(agent.config, "dataset", None)
    if dataset is not None:  # D4RL's normalised score, where its references are known
        from acrl.offline.d4rl import dataset_score

        result |= dataset_score(result["return_mean"], agent.config.env_id, dataset)
    write_json_atomic(
        run_dir / "evaluate.json",
        {"checkpoint": path.name, "seed": seed, "date": time.strftime("%Y-%m-%d %H:%M"), "result": result},
    )
    write_model_card(run_dir, agent)
    print(json.dumps(rounded({**result, "checkpoint": f"checkpoints/{path.name}", "step": agent.num_steps})))
    print(f"evaluated {path}, saved at step {agent.num_steps:,}", file=sys.stderr)


def record(args: Record) -> None:
    """Write the video; print a JSON summary (path, returns, lengths, frames, fps, size) on stdout."""
    from acrl.algos import load
    from acrl.algos.base import EVAL_SEED_OFFSET
    from acrl.core.files import write_bytes_atomic
    from acrl.core.model_card import write_model_card
    from acrl.core.video import check_mujoco_gl

    run_dir = existing_run_dir(args.run_dir)
    if args.out is not None and not args.out.lower().endswith(".mp4"):
        raise InputError(f"--out must name an .mp4 file, got {args.out!r}.")
    check_seed(args.seed)
    check_mujoco_gl()  # before `load` makes the env: a MuJoCo task imports mujoco, which fails on a bad MUJOCO_GL
    path = run_checkpoint(run_dir, args.checkpoint)
    agent = load(path, device=args.device, precision=args.precision)
    seed = args.seed if args.seed is not None else agent.config.seed + EVAL_SEED_OFFSET
    name = f"{path.stem}-seed{seed}{'-stochastic' if args.stochastic else ''}"
    name += f"-max{args.max_steps}" if args.max_steps else ""
    signal.signal(signal.SIGTERM, _interrupt)  # like Ctrl-C: the partial video is removed, exit 130
    with tempfile.TemporaryDirectory() as scratch:  # the default name holds the return: recorded here first
        out = Path(args.out) if args.out else Path(scratch, f"{name}.mp4")
        result = agent.record_video(
            out, args.episodes, deterministic=not args.stochastic, seed=seed, max_steps=args.max_steps
        )
        if args.out is None:
            named = run_dir / "videos" / f"{name}-return{sum(result['returns']) / len(result['returns']):.1f}.mp4"
            write_bytes_atomic(named, out.read_bytes())
            result["path"] = str(named)
    write_model_card(run_dir, agent)
    print(json.dumps(rounded(result)))


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def plot(args: Plot) -> None:
    """Plot the learning curves or metrics of run directories (or print and plot a sweep's table and figure).

    Raises:
        InputError: no run directory given, or one that does not exist or holds no metrics.csv; a metric no
            run has logged (the message lists those they have); see `acrl.core.plotting.runs_figure`.
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
    print(f"figure: {plot_runs(args.run_dirs, args.out, args.metric, args.x)}", file=sys.stderr)


def collect(args: Collect) -> None:
    """Write the dataset and print a JSON summary (file, transitions, episode ends, attrs).

    Raises:
        InputError: a flag of the BCQ paper's kinds with one of D4RL's or the other way round, and what
            `collect_dataset` and `collect_d4rl` refuse.
    """
    from acrl.core.config import parse_set_options
    from acrl.offline.collect import collect_dataset
    from acrl.offline.d4rl import collect_d4rl

    d4rl = args.kind in D4RL_KINDS
    if d4rl:
        foreign = {"--noise": args.noise, "--random-prob": args.random_prob, "--algo": args.algo}
        owners = "the BCQ paper's kinds (final, imitation, imperfect)"
    else:
        foreign = {"--target-return": args.target_return, "--expert-return": args.expert_return}
        foreign |= {"--train-steps": args.train_steps, "--replay-out": args.replay_out}
        owners = f"D4RL's kinds ({', '.join(D4RL_KINDS)})"
    given = [flag for flag, value in foreign.items() if value is not None]
    if given:
        raise InputError(f"{', '.join(given)}: for {owners}, not --kind {args.kind}.")
    common = {"env_id": args.env, "policy": args.policy, "seed": args.seed, "preset": args.preset}
    common |= {"overrides": parse_set_options(args.set), "progress": args.progress, "format": args.format}
    if d4rl:
        data = collect_d4rl(
            args.kind,
            args.out,
            args.steps,
            target_return=args.target_return,
            expert_return=args.expert_return,
            train_steps=args.train_steps,
            replay_out=args.replay_out,
            **common,
        )
    else:
        data = collect_dataset(
            args.kind,
            args.out,
            args.steps,
            noise_std=args.noise,
            random_prob=args.random_prob,
            algo=args.algo or "ddpg",
            **common,
        )
    print(
        json.dumps(
            rounded(
                {
                    "out": args.out,
                    "transitions": len(data),
                    "terminals": int(data.terminals.sum()),
                    "timeouts": int(data.timeouts.sum()),
                    **data.attrs,
                }
            )
        )
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

COMMANDS = subcommands(Command)
"""Command name -> its dataclass, in `Command`'s order."""

COMMAND_LINES = {
    line: cls
    for name, top in COMMANDS.items()
    for line, cls in (
        {f"{name} {sub}": c for sub, c in subcommands(ExperimentCommand).items()} if top is Experiment else {name: top}
    ).items()
}
"""Each command line's name and dataclass: `COMMANDS` with `acrl experiment NAME` one each."""

DESCRIPTION = (
    "Deep reinforcement learning on Gymnasium: train, resume, evaluate, record, plot; offline datasets "
    "and the BCQ paper's experiments; sweeps (on this machine or Ray) and searches. `acrl COMMAND --help` "
    "describes a command; `acrl --version` prints the version."
)


def synopsis(width: int = 110) -> str:
    """The command lines and their options, one paragraph each (`acrl.cli_parse.synopsis` of `COMMAND_LINES`):
    the README's CLI block."""
    return render_synopsis(COMMAND_LINES, width)


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
        args = parse(
            Command,
            argv,
            {**COMMANDS, **COMMAND_LINES},
            prog="acrl",
            description=DESCRIPTION,
            config=(tyro.conf.DisallowNone,),
        )
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


if __name__ == "__main__":
    sys.exit(main())
