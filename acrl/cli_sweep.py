"""`acrl sweep` and `acrl tune`: many runs at once, on this machine or a Ray cluster (`acrl.sweep`).

Each command is a dataclass whose fields are its options (`acrl.cli` parses them), with its handler.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import tyro

from acrl.cli_parse import values
from acrl.core.files import rounded


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
    print(json.dumps(rounded(summary["best"])))
    print(yaml.safe_dump(summary["preset"], sort_keys=False), end="")
    out = Path(summary["out"])
    print(
        f"study: {out / 'trials.md'} ({out / 'trials.json'}); figure: {out / 'study.png'}; preset entry: "
        f"{out / 'preset.yaml'} (add it to acrl/presets/{args.algo}.yaml and train with --preset tuned)",
        file=sys.stderr,
    )
