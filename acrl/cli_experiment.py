"""`acrl experiment extrapolation|concurrent|discrete|d4rl`: one subcommand per experiment of `acrl.offline.spec`.

Each subcommand is a dataclass whose fields are the options that experiment takes, and no other, so
that a flag of one experiment given to another is an unrecognized argument (tyro's parse). Its
`spec` says which experiment it runs and gives its agents' --OPTION-set (`agent_options`), so a learner
added to a spec has its option with no line here; `experiment` runs any of them through
`acrl.offline.experiments.run_experiment`, taking the spec's settings and each agent's --OPTION-set
from the command's fields, and prints the table.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, ClassVar, Literal

import tyro

from acrl.cli_parse import values
from acrl.core.errors import InputError
from acrl.core.files import rounded
from acrl.offline.d4rl import D4RL_KINDS
from acrl.offline.spec import CONCURRENT, D4RL, DEFAULTS, DISCRETE, EXTRAPOLATION, ExperimentSpec


@dataclass(kw_only=True)
class ExperimentRun:
    """The options of every experiment: where and how its jobs run."""

    seeds: Annotated[list[int], tyro.conf.arg(metavar="N ...")] = field(default_factory=lambda: [0])
    """One full experiment per seed; the table and figure show mean and std."""
    eval_episodes: int = DEFAULTS["eval_episodes"]
    """Episodes per evaluation (deterministic; the paper uses 10)."""
    out: Annotated[str | None, tyro.conf.arg(metavar="DIR")] = None
    """Output directory (default: runs/experiment-NAME-ENV-TIME); the same command with the same --out resumes it."""
    address: Annotated[str | None, tyro.conf.arg(metavar="auto|HOST:PORT")] = None
    """Ray cluster for the runs (the ray extra): auto (the one `ray start` runs here) or HOST:PORT (default: a
    process pool on this machine, one run per core)."""
    progress: bool = True
    """Show the progress bars."""


def agent_options(spec: ExperimentSpec) -> type:
    """The --OPTION-set options of `spec`'s agents, made from the spec so that a `Learner` added to it has its own:
    a dataclass for the experiment's command to inherit, with `behavioral_set` and then each learner's
    `{option}_set` in the tables' order, each a list of key=value strings (`acrl.core.config.parse_set_options`);
    a learner's help is its label's, then its note."""
    helps = {
        "behavioral": f"Behavioral {spec.behavioral.upper()} hyperparameters as key=value, e.g. --behavioral-set "
        "start_steps=1000."
    }
    for learner in spec.learners:
        example = f"--{learner.option.replace('_', '-')}-set batch_size=256"
        helps[learner.option] = f"{learner.label} hyperparameters as key=value, e.g. {example}. {learner.note}"
    options = [
        (f"{name}_set", Annotated[list[str], values("KEY=VALUE", help.strip())], field(default_factory=list))
        for name, help in helps.items()
    ]
    return dataclasses.make_dataclass(f"{spec.name.title()}Options", options, kw_only=True)


@dataclass(kw_only=True)
class Mergeable:
    """The option of an experiment whose table may be made in parts."""

    merge: Annotated[list[str], values("JSON")] = field(default_factory=list)
    """Instead of running, combine the NAME.json of runs of one experiment over disjoint seeds (e.g. --seeds 0 1 in
    one session, --seeds 2 in another) or of other --learners on the same seeds into --out; takes no other
    settings."""


@dataclass(kw_only=True)
class Extrapolation(ExperimentRun, Mergeable, agent_options(EXTRAPOLATION)):
    """The BCQ paper's Figure 2 (Fujimoto et al. 2019): the behavioral policy, BCQ, off-policy DDPG, BC, VAE-BC
    and DQN on discretised actions on the final, concurrent, imitation and imperfect buffers of one behavioral
    DDPG; prints its table, writes JSON and a figure."""

    spec: ClassVar[ExperimentSpec] = EXTRAPOLATION
    env: Annotated[str, tyro.conf.arg(metavar="ENV_ID")]
    """Environment id with a bounded Box action space, e.g. Pendulum-v1, Hopper-v5."""
    steps_behavioral: int | None = None
    """Environment steps of the behavioral DDPG (default: its preset's total_steps)."""
    updates: int | None = None
    """Gradient updates of each offline agent (default: the BCQ preset's total_steps)."""
    dataset_size: int | None = None
    """Transitions of the imitation and imperfect datasets (default: --steps-behavioral)."""
    final_noise: Annotated[float, tyro.conf.arg(metavar="STD")] = DEFAULTS["final_noise"]
    """Exploration noise std (fraction of max_action) of the final buffer's behavioral DDPG (paper: 0.5)."""
    eval_freq: int | None = None
    """Updates (concurrent: steps) between evaluations (default: the BCQ preset's eval_freq)."""
    datasets_only: bool = False
    """Write the final, imitation and imperfect datasets of each seed and stop (each behavioral DDPG trains alone,
    the same run as beside its concurrent learners: the full experiment's data, an hour sooner on Hopper);
    datasets.json lists them."""
    learners: Annotated[list[Literal[EXTRAPOLATION.names]], tyro.conf.arg(metavar="NAME ...")] = field(
        default_factory=lambda: list(EXTRAPOLATION.names)
    )
    """The learners that train (default all), e.g. --learners vae_bc dqn for the columns a table made before they
    existed lacks, on its datasets redone (the same runs as --datasets-only); --merge joins the two."""


@dataclass(kw_only=True)
class Concurrent(ExperimentRun, agent_options(CONCURRENT)):
    """The concurrent buffer of the BCQ paper's Figure 2 alone: its learners learn from a behavioral DDPG's growing
    buffer, one update per behavioral step, never acting; prints the table, writes JSON and a figure."""

    spec: ClassVar[ExperimentSpec] = CONCURRENT
    env: Annotated[str, tyro.conf.arg(metavar="ENV_ID")]
    """Environment id with a bounded Box action space, e.g. Pendulum-v1, Hopper-v5."""
    steps_behavioral: int | None = None
    """Environment steps of the behavioral DDPG, and updates of each learner (default: its preset's total_steps)."""
    eval_freq: int | None = None
    """Steps between evaluations (default: the BCQ preset's eval_freq)."""


@dataclass(kw_only=True)
class Discrete(ExperimentRun, agent_options(DISCRETE)):
    """Discrete BCQ, offline DQN, BC and discrete CQL on a behavioral DQN's final and imperfect buffers (Fujimoto et
    al. 2019b, Sec. 5; CQL: Kumar et al. 2020); prints the table, writes JSON and a figure."""

    spec: ClassVar[ExperimentSpec] = DISCRETE
    env: Annotated[str, tyro.conf.arg(metavar="ENV_ID")]
    """Environment id with a Discrete action space, e.g. MinAtar/Breakout-v1, CartPole-v1."""
    steps_behavioral: int | None = None
    """Environment steps of the behavioral DQN (default: its preset's total_steps)."""
    updates: int | None = None
    """Gradient updates of each offline agent (default: the discrete BCQ preset's total_steps)."""
    dataset_size: int | None = None
    """Transitions of the imperfect dataset (default: --steps-behavioral)."""
    eval_freq: int | None = None
    """Steps of the behavioral DQN and updates of the offline agents between evaluations (default: the discrete BCQ
    preset's eval_freq)."""


@dataclass(kw_only=True)
class D4rl(ExperimentRun, Mergeable, agent_options(D4RL)):
    """D4RL's table (Fu et al. 2020): TD3+BC, IQL, CQL, BCQ and BC on D4RL's datasets built here (`acrl collect
    --kind`), one per kind for every seed, in normalised score with IQM and 95% bootstrap CIs; prints the table,
    writes JSON and a figure."""

    spec: ClassVar[ExperimentSpec] = D4RL
    env: Annotated[str, tyro.conf.arg(metavar="ENV_ID")]
    """Environment id with a bounded Box action space, e.g. Hopper-v5 (D4RL's references score it); another task
    needs --expert-return."""
    kinds: Annotated[list[Literal[D4RL_KINDS]], tyro.conf.arg(metavar="KIND ...")] = field(
        default_factory=lambda: list(D4RL.buffers)
    )
    """D4RL's dataset kinds to build and train on, the table's columns (default medium medium-replay)."""
    steps_behavioral: int | None = None
    """Environment steps of each SAC trained for the datasets: the medium one's most (it stops at its target), the
    expert's all (default: the SAC preset's total_steps)."""
    target_return: Annotated[float | None, tyro.conf.arg(metavar="R")] = None
    """Evaluation return at which the medium SAC stops (default: a third of the way from the random return to the
    expert's, D4RL's medium)."""
    expert_return: Annotated[float | None, tyro.conf.arg(metavar="R")] = None
    """On a task that is not D4RL's: the return its normalised score calls 100 (and, without --target-return, the
    medium SAC stops a third of the way to it). D4RL's tasks take D4RL's references."""
    dataset_size: int | None = None
    """Transitions of the medium, expert, random and medium-expert datasets (default: --steps-behavioral)."""
    updates: int | None = None
    """Gradient updates of each learner (default: the TD3+BC preset's total_steps, CORL's 1M)."""
    eval_freq: int | None = None
    """Updates between the learners' evaluations, and steps between the SACs' (default: the TD3+BC preset's
    eval_freq)."""
    learners: Annotated[list[Literal[D4RL.names]], tyro.conf.arg(metavar="NAME ...")] = field(
        default_factory=lambda: list(D4RL.names)
    )
    """The learners that train (default all)."""
    datasets_from: Annotated[str | None, tyro.conf.arg(metavar="DIR")] = None
    """Copy the datasets from the --out of an earlier d4rl experiment on --env (its data-KIND directories) rather
    than build them: the parts of a table run in several sessions or on several machines (--seeds 0 in one, --seeds
    1 2 in another, then --merge) train on the same datasets."""


ExperimentCommand = (
    Annotated[Extrapolation, tyro.conf.subcommand("extrapolation")]
    | Annotated[Concurrent, tyro.conf.subcommand("concurrent")]
    | Annotated[Discrete, tyro.conf.subcommand("discrete")]
    | Annotated[D4rl, tyro.conf.subcommand("d4rl")]
)
"""The experiments, one subcommand each."""


@dataclass
class Experiment:
    """Run an offline experiment: the BCQ paper's (Fujimoto et al. 2019, Figure 2; discrete: Fujimoto et al. 2019b),
    extrapolation, concurrent or discrete, or D4RL's table (d4rl); prints its table, writes JSON and a figure."""

    experiment: Annotated[ExperimentCommand, tyro.conf.arg(name="")]
    """The experiment and its options."""


def experiment(args: Experiment) -> None:
    """Run the experiment (`run_experiment` of the command's spec); print its markdown table on stdout, where
    the files are on stderr. With --merge, merge parts instead (`merge`); with --datasets-only, print the
    datasets' JSON.

    Raises:
        InputError: as `run_experiment`, or a --OPTION-set that is not key=value.
    """
    from acrl.core.config import parse_set_options
    from acrl.offline.experiments import run_experiment
    from acrl.offline.report import experiment_markdown
    from acrl.sweep.jobs import ClusterOptions

    command = args.experiment
    spec = command.spec
    if getattr(command, "merge", None):
        merge(command)
        return
    stamp = time.strftime("%Y%m%d-%H%M%S")
    agents = ("behavioral", *(learner.option for learner in spec.learners))  # their --NAME-set
    out = Path(command.out or f"runs/experiment-{spec.name}-{command.env.replace('/', '_')}-{stamp}")
    summary = run_experiment(
        spec,
        command.env,
        out,
        command.seeds,
        {f"{name}_overrides": parse_set_options(getattr(command, f"{name}_set")) for name in agents},
        learners=getattr(command, "learners", None),
        datasets_only=getattr(command, "datasets_only", False),
        progress=command.progress,
        options=ClusterOptions(address=command.address),
        buffers=getattr(command, "kinds", None),
        datasets_from=getattr(command, "datasets_from", None),
        **{key: getattr(command, key) for key in spec.settings},
    )
    if "datasets" in summary:
        print(json.dumps(rounded(summary["datasets"]), indent=2))
        print(f"datasets: {out / 'datasets.json'}", file=sys.stderr)
        return
    print(experiment_markdown(spec.with_buffers(summary["kinds"]) if spec.d4rl else spec, summary))
    print(f"table: {out / f'{spec.name}.json'}; figure: {out / f'{spec.name}.png'}", file=sys.stderr)


def merge(command: Extrapolation | D4rl) -> None:
    """`acrl experiment extrapolation|d4rl --merge PART.json ... --out DIR`: print the merged table
    (`acrl.offline.report.merge_experiment`).

    Raises:
        InputError: no --out, a setting besides --env, a part that cannot be read or is of another
            environment, or what `merge_experiment` refuses.
    """
    from acrl.offline.report import experiment_markdown, merge_experiment

    spec = command.spec
    given = [
        f"--{f.name.replace('_', '-')}"
        for f in dataclasses.fields(command)
        if f.name not in ("env", "out", "merge", "progress")
        and getattr(command, f.name) != (f.default_factory() if f.default is dataclasses.MISSING else f.default)
    ]
    if given or command.out is None:
        raise InputError(
            "--merge takes the settings from the parts it combines: give only --env and --out"
            + (f" (got {', '.join(given)})." if given else " (no --out given).")
        )
    parts = []
    for path in command.merge:
        try:
            parts.append(json.loads(Path(path).read_text()))
        except (OSError, json.JSONDecodeError) as exc:
            raise InputError(f"cannot read {path} as an {spec.name}.json: {exc}") from None
        if parts[-1].get("env_id") != command.env:
            raise InputError(f"{path} is an experiment on {parts[-1].get('env_id')!r}, not on --env {command.env!r}.")
    summary = merge_experiment(spec, parts, command.out)
    out = Path(command.out)
    print(experiment_markdown(spec.with_buffers(summary["kinds"]) if spec.d4rl else spec, summary))
    print(f"table: {out / f'{spec.name}.json'}; figure: {out / f'{spec.name}.png'}", file=sys.stderr)
