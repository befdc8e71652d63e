"""Hyperparameter search (`acrl tune`): Optuna's TPE sampler and pruner, trials as Ray tasks.

The anchor is rl-baselines3-zoo's Optuna setup (`python train.py --optimize`): each trial is a
training run with sampled hyperparameters and one seed; its evaluations during training are
reported as intermediate values so the pruner can stop bad trials early (median: below the median
of earlier trials at the same step; ASHA: Optuna's asynchronous successive halving); the
objective is the trial's final evaluation (its last `eval/return_mean`), maximised.

Search space, per key (`--space KEY=SPEC`, or a file's `space:` mapping of KEY: SPEC):

    learning_rate=loguniform:1e-5:1e-2   # log-uniform float in [low, high]
    clip_range=uniform:0.1:0.3           # uniform float
    n_epochs=int:3:30                    # integer in [low, high]
    batch_size=categorical:32,64,128     # one of the values (read as YAML)

Each trial is an ordinary run directory `TUNE_DIR/trial-NNN` trained by the sweep's machinery
(`acrl.sweep.cluster`: any core or node, files shipped home, retries from checkpoints), so a
trial can be evaluated, resumed and plotted like any run. The study lives in
`TUNE_DIR/study.journal` (Optuna's journal storage, written by an actor on the driver's node):
rerunning the same command continues it, resuming trials that were running. One driver at a time:
it holds an OS lock on `TUNE_DIR/tune.lock` (released when it ends, a crash included), and a second
`acrl tune` on the same directory stops with an error. At the end: trials.md / trials.json
(every trial: state, value (a pruned one's: its last evaluation), parameters), study.png
(objective per trial with the best so far, and every trial's evaluations with pruned ones
dashed) and preset.yaml, the best configuration as a preset entry whose `source` names the study.
"""

from __future__ import annotations

import fcntl
import hashlib
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from acrl.core.errors import InputError
from acrl.core.files import write_json_atomic, write_text_atomic
from acrl.core.loop import Callback
from acrl.parts.ray_session import require
from acrl.sweep.cluster import Cluster
from acrl.sweep.jobs import ClusterOptions, Job, signals_interrupt

DISTRIBUTIONS = ("loguniform", "uniform", "int", "categorical")
"""The search space's distributions (a Dimension's kind), Optuna's float (log or not), int and categorical."""
PRUNERS = ("median", "asha", "none")


@dataclass(frozen=True)
class Dimension:
    """One key's search range: kind in `DISTRIBUTIONS`; low and high for the numeric kinds, choices for categorical."""

    kind: str
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] = ()

    @classmethod
    def parse(cls, key: str, spec: str) -> Dimension:
        """Read `kind:low:high` or `categorical:a,b,c`.

        Raises:
            InputError: an unknown kind, missing or non-numeric bounds, low >= high, a
                non-positive loguniform bound, non-integer int bounds, or no choices.
        """
        kind, _, rest = str(spec).partition(":")
        example = f"{key}=loguniform:1e-5:1e-2, {key}=uniform:0.1:0.3, {key}=int:3:30 or {key}=categorical:32,64"
        if kind not in DISTRIBUTIONS:
            raise InputError(
                f"search space {key}={spec!r}: unknown kind {kind!r}; choose {', '.join(DISTRIBUTIONS)}, "
                f"e.g. {example}."
            )
        if kind == "categorical":
            choices = tuple(yaml.safe_load(v) for v in rest.split(",") if v.strip())
            if not choices:
                raise InputError(
                    f"search space {key}={spec!r}: categorical needs values, e.g. {key}=categorical:32,64."
                )
            return cls(kind, choices=choices)
        bounds = rest.split(":")
        try:
            low, high = (float(b) for b in bounds)
        except ValueError:
            raise InputError(
                f"search space {key}={spec!r}: {kind} needs two numbers LOW:HIGH, e.g. {example}."
            ) from None
        if not low < high:
            raise InputError(f"search space {key}={spec!r}: low must be below high.")
        if kind == "loguniform" and low <= 0:
            raise InputError(f"search space {key}={spec!r}: loguniform bounds must be > 0.")
        if kind == "int" and not (low.is_integer() and high.is_integer()):
            raise InputError(f"search space {key}={spec!r}: int bounds must be integers.")
        return cls(kind, low, high)

    def corners(self) -> list[Any]:
        """The values at the edges of the range (every choice of a categorical), for validation."""
        if self.kind == "categorical":
            return list(self.choices)
        return [int(self.low), int(self.high)] if self.kind == "int" else [self.low, self.high]

    def suggest(self, trial: Any, key: str) -> Any:
        """Optuna's suggestion for `key` on `trial`."""
        if self.kind == "categorical":
            return trial.suggest_categorical(key, list(self.choices))
        if self.kind == "int":
            return trial.suggest_int(key, int(self.low), int(self.high))
        return trial.suggest_float(key, self.low, self.high, log=self.kind == "loguniform")


def parse_space(options: list[str]) -> dict[str, Dimension]:
    """`KEY=SPEC` strings as Dimensions (a later KEY replaces an earlier one).

    Raises:
        InputError: an option without `=`, a malformed SPEC (`Dimension.parse`), an empty space.
    """
    space = {}
    for option in options:
        key, sep, spec = option.partition("=")
        if not sep or not key:
            raise InputError(f"--space expects KEY=SPEC (e.g. learning_rate=loguniform:1e-5:1e-2), got {option!r}.")
        space[key.strip()] = Dimension.parse(key.strip(), spec.strip())
    if not space:
        raise InputError("the search space is empty: give --space KEY=SPEC (e.g. learning_rate=loguniform:1e-5:1e-2).")
    return space


def read_space(file: str | Path | None, options: list[str]) -> tuple[dict[str, Dimension], dict[str, Any]]:
    """The search space and the fixed values of `acrl tune`: a file's `space:` (KEY: SPEC) and
    `set:` (KEY: value), with the `--space KEY=SPEC` options added (a key in both: the option's).

    Returns:
        ({key: Dimension}, {key: fixed value}).
    Raises:
        InputError: an unreadable file, one that is not a mapping of `space:` and `set:`, or a bad
            space (`parse_space`).
    """
    space, fixed = {}, {}
    if file:
        try:
            data = yaml.safe_load(Path(file).read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise InputError(f"cannot read {file}: {exc}") from None
        if not isinstance(data, dict) or set(data) - {"space", "set"}:
            raise InputError(f"{file} must be a YAML mapping with `space:` (KEY: SPEC) and optionally `set:`.")
        space, fixed = dict(data.get("space") or {}), dict(data.get("set") or {})
    return parse_space([f"{key}={spec}" for key, spec in space.items()] + list(options)), fixed


class Study:
    """A Ray actor on the driver's node that owns the Optuna study (journal file on the driver's disk).

    Args:
        path: the journal file.
        seed: the TPE sampler's seed.
        pruner: one of `PRUNERS`.
        startup_trials: trials sampled at random (and never pruned against) before TPE and pruning start.
        space: {key: Dimension}.
    """

    def __init__(self, path: str, seed: int, pruner: str, startup_trials: int, space: dict[str, Dimension]):
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(path))
        pruners = {
            "median": optuna.pruners.MedianPruner(n_startup_trials=startup_trials),
            "asha": optuna.pruners.SuccessiveHalvingPruner(),
            "none": optuna.pruners.NopPruner(),
        }
        # A continued study seeds its sampler past the trials it has, so it does not draw them again.
        existing = len(optuna.load_study(study_name="acrl", storage=storage).trials) if storage.get_all_studies() else 0
        self.study = optuna.create_study(
            study_name="acrl",
            storage=storage,
            direction="maximize",
            load_if_exists=True,
            sampler=optuna.samplers.TPESampler(
                n_startup_trials=startup_trials, seed=seed + existing, multivariate=True
            ),
            pruner=pruners[pruner],
        )
        self.storage, self.space = storage, space
        self.study_id = storage.get_study_id_from_name("acrl")

    def running(self) -> list[tuple[int, dict[str, Any]]]:
        """(number, params) of trials left RUNNING by an interrupted driver, to resume."""
        import optuna

        return [
            (frozen.number, frozen.params)
            for frozen in self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
        ]

    def ask(self) -> tuple[int, dict[str, Any]]:
        """A new trial: (its number, {key: sampled value})."""
        trial = self.study.ask()
        return trial.number, {key: dim.suggest(trial, key) for key, dim in self.space.items()}

    def report(self, number: int, step: int, value: float) -> bool:
        """Record the trial's evaluation at `step`; returns whether the pruner stops the trial.

        A trial's evaluations arrive in step order, except after a retry from its checkpoint,
        which evaluates some steps again, with values of their own: those replace the earlier
        attempt's (Optuna's `Trial.report` would keep the first value of a step), and values at
        later steps, which this attempt has not reached, are the earlier attempt's, so the pruner
        does not see them and `trials` leaves them out. The study then holds what the trial's
        metrics.csv holds, whose rows after the checkpoint the retry rewrote too.
        """
        import copy

        trial_id = self.storage.get_trial_id_from_study_id_trial_number(self.study_id, number)
        self.storage.set_trial_intermediate_value(trial_id, step, value)
        self.storage.set_trial_user_attr(trial_id, "last_step", step)
        frozen = copy.copy(self.storage.get_trial(trial_id))  # a copy: the journal's own stays as it is
        frozen.intermediate_values = {s: v for s, v in frozen.intermediate_values.items() if s <= step}
        return self.study.pruner.prune(self.study, frozen)

    def tell(self, number: int, value: float | None, pruned: bool) -> None:
        """End trial `number`: pruned, complete with `value`, or failed (value None, not pruned)."""
        import optuna

        state = (
            optuna.trial.TrialState.PRUNED
            if pruned
            else optuna.trial.TrialState.COMPLETE
            if value is not None
            else optuna.trial.TrialState.FAIL
        )
        self.study.tell(number, value if state == optuna.trial.TrialState.COMPLETE else None, state=state)

    def counts(self) -> dict[str, int]:
        """Trials by state name (COMPLETE, PRUNED, FAIL, RUNNING)."""
        out: dict[str, int] = {}
        for frozen in self.study.get_trials(deepcopy=False):
            out[frozen.state.name] = out.get(frozen.state.name, 0) + 1
        return out

    def trials(self) -> list[dict[str, Any]]:
        """Every trial as JSON: number, state, value, params, intermediate {step: value} up to its last report.

        A pruned trial's value is its evaluation at its last report, the last of its current attempt.
        Optuna's `tell` gives it the one at its highest step instead, which after a retry is the dead
        attempt's (`report`), a value the trial as it ran to its end never reached.
        """
        return [
            {
                "number": t.number,
                "state": t.state.name,
                "value": t.intermediate_values[t.user_attrs["last_step"]] if t.state.name == "PRUNED" else t.value,
                "params": t.params,
                "intermediate": {
                    int(k): v for k, v in t.intermediate_values.items() if k <= t.user_attrs.get("last_step", k)
                },
            }
            for t in self.study.get_trials(deepcopy=False)
        ]


class ReportToStudy(Callback):
    """Reports each evaluation to the study actor; stops the run when the pruner says so."""

    def __init__(self, study: Any, number: int):
        self.study, self.number, self.pruned = study, number, False

    def on_evaluation(self, step: int, result: dict[str, Any]) -> bool:
        """Report the evaluation's mean return to the study; True (stop) when its pruner prunes the trial."""
        import ray

        self.pruned = bool(ray.get(self.study.report.remote(self.number, step, float(result["return_mean"]))))
        return self.pruned


def tune_trial(root: Path, run_dir: Path, callbacks: list[Any], study: Any, number: int, **run: Any) -> dict[str, Any]:
    """A trial's job: `acrl.sweep.grid.train_run` with its evaluations reported to the study.

    Returns:
        {"steps", "best", "final": the last evaluation's mean return, "pruned": bool}.
    """
    from acrl.core.plotting import read_curve
    from acrl.sweep.grid import train_run

    reporter = ReportToStudy(study, number)
    result = train_run(root, run_dir, [*callbacks, reporter], **run)
    _, values = read_curve(run_dir)
    return {**result, "final": float(values[-1]), "pruned": reporter.pruned}


def run_tune(
    algo: str,
    env_id: str,
    trials: int,
    space: dict[str, Dimension],
    out: str | Path | None = None,
    total_steps: int | None = None,
    seed: int = 0,
    preset: str | None = None,
    overrides: dict[str, Any] | None = None,
    pruner: str = "median",
    startup_trials: int = 5,
    parallel: int | None = None,
    options: ClusterOptions | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Search `space` with `trials` trials of `algo` on `env_id`; write the study's files.

    Args:
        algo, env_id, preset: what each trial trains (as `acrl train`).
        trials: trials to finish (complete, pruned or failed); a rerun continues toward the same number.
        space: {config key: Dimension}.
        out: the tune directory (default runs/tune-ALGO-ENV-HASH of the arguments).
        total_steps, seed, overrides: each trial's budget, seed and fixed `--set` values.
        pruner: "median", "asha" or "none".
        startup_trials: random trials before TPE; the median pruner waits for as many.
        parallel: trials at once (default: as many as the cluster's CPUs allow).
        options: `ClusterOptions`.
        progress: a line per finished trial.
    Returns:
        {"best": {"number", "value", "params"}, "trials": [...], "preset": the preset entry}.
    Raises:
        InputError: a bad space, key, value, pruner or trial count, before anything starts; another
            driver running the search in `out` (`one_driver`).
        KeyboardInterrupt: Ctrl-C, once the running trials have checkpointed.
    """
    from acrl.algos import get_algorithm, make_config
    from acrl.core.config import update_config

    require("optuna", "acrl tune")
    options = options or ClusterOptions()
    options.validate()
    overrides = dict(overrides or {})
    if trials < 1 or startup_trials < 0 or (parallel is not None and parallel < 1):
        raise InputError(
            f"--trials and --parallel must be >= 1 and --startup-trials >= 0, got --trials {trials}, "
            f"--parallel {parallel if parallel is not None else '(default)'} and --startup-trials "
            f"{startup_trials}."
        )
    if startup_trials >= trials:
        warnings.warn(
            f"--startup-trials {startup_trials} >= --trials {trials}: every trial is sampled at random "
            "and none is pruned; TPE starts after the startup trials.",
            stacklevel=2,
        )
    if pruner not in PRUNERS:
        raise InputError(f"unknown pruner {pruner!r}; choose {', '.join(PRUNERS)}.")
    fields = get_algorithm(algo).config_class()
    update_config(fields, {key: None for key in space if not hasattr(fields, key)}, "--space")  # names the key
    flags = {"seed": seed, "total_steps": total_steps, **options.run_settings(fields, {**overrides, **space})}
    corners = {key: dim.corners() for key, dim in space.items()}
    for i in range(max(map(len, corners.values()))):  # the low edges together, the high ones, each choice
        point = {key: values[min(i, len(values) - 1)] for key, values in corners.items()}
        cls, config = make_config(algo, env_id, preset, {**overrides, **point}, **flags)
    cls(config.env_id, config=config).before_learning()  # the environment and its spaces
    if not config.eval_freq:
        raise InputError(
            "tuning needs evaluations during training (the objective and the pruner read them): set eval_freq > 0."
        )
    record = {
        "kind": "tune",
        "algo": algo,
        "env_id": env_id,
        "space": {k: vars(d) for k, d in space.items()},
        "total_steps": total_steps,
        "seed": seed,
        "preset": preset,
        "set": overrides,
        "pruner": pruner,
        "startup_trials": startup_trials,
    }
    digest = hashlib.sha256(yaml.safe_dump(record, sort_keys=True).encode()).hexdigest()[:8]
    out = Path(out) if out is not None else Path("runs") / f"tune-{algo}-{env_id.replace('/', '_')}-{digest}"
    existing = out / "tune.yaml"
    if existing.exists() and yaml.safe_load(existing.read_text()) != yaml.safe_load(yaml.safe_dump(record)):
        raise InputError(
            f"{out} holds another search (its tune.yaml differs); rerun that search's own command to "
            "continue it, or choose another --out."
        )

    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    with one_driver(out), Cluster(out, options) as cluster, signals_interrupt():  # SIGTERM too, not Ray's handler
        if progress:
            print(f"search of {algo} on {env_id}: {trials} trials -> {out}", file=sys.stderr)
        write_text_atomic(existing, yaml.safe_dump(record, sort_keys=False))
        pinned = NodeAffinitySchedulingStrategy(node_id=cluster.driver_node, soft=False)
        study = ray.remote(num_cpus=0, scheduling_strategy=pinned)(Study).remote(
            str((out / "study.journal").resolve()), seed, pruner, startup_trials, space
        )
        if parallel is None:
            parallel = max(1, int(ray.cluster_resources().get("CPU", 1) // options.cpus_per_job))
        run = {"algo": algo, "env_id": env_id, "preset": preset}

        def submit(number: int, params: dict[str, Any]) -> None:
            cluster.submit(
                Job(
                    f"trial-{number:03d}",
                    tune_trial,
                    {"study": study, "number": number, **run, "overrides": {**overrides, **params}, "flags": flags},
                )
            )

        def finished() -> int:
            counts = ray.get(study.counts.remote())  # failed trials count too: a search never asks forever
            return counts.get("COMPLETE", 0) + counts.get("PRUNED", 0) + counts.get("FAIL", 0)

        for number, params in ray.get(study.running.remote()):  # interrupted last time: resume them
            submit(number, params)
        while len(cluster.running) < min(parallel, trials - finished()):
            submit(*ray.get(study.ask.remote()))
        try:
            for job, outcome in cluster.results():
                number = int(job.name.removeprefix("trial-"))
                failed = isinstance(outcome, BaseException)
                ray.get(
                    study.tell.remote(number, None if failed else outcome["final"], not failed and outcome["pruned"])
                )
                if progress:
                    state = (
                        f"failed: {outcome}"
                        if failed
                        else (
                            f"{'pruned at' if outcome['pruned'] else 'final'} "
                            f"{outcome['final']:.4g} (step {outcome['steps']})"
                        )
                    )
                    print(f"trial {number}: {state}", file=sys.stderr, flush=True)
                while len(cluster.running) < min(parallel, trials - finished()):
                    submit(*ray.get(study.ask.remote()))
        except KeyboardInterrupt:
            print(
                "\nacrl: stopping the search: each running trial writes checkpoints/latest.pt (Ctrl-C again kills "
                "them now); rerun the same command to continue it.",
                file=sys.stderr,
                flush=True,
            )
            cluster.stop()
            raise
        all_trials = ray.get(study.trials.remote())
    return write_study(out, record, all_trials)


@contextmanager
def one_driver(out: Path) -> Iterator[None]:
    """Hold an exclusive lock on OUT/tune.lock (`fcntl.flock`) while a driver runs the search in `out`.

    Two drivers on one study would both tell it the same trials (Optuna then refuses: "Cannot
    tell a FAIL trial") and mark them failed. The lock belongs to the open file, so the OS
    releases it when the driver ends, however it ends: a crashed driver leaves no stale lock.
    Creates `out` if needed.

    Raises:
        InputError: another process holds the lock.
    """
    out.mkdir(parents=True, exist_ok=True)
    with (out / "tune.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(
                f"another acrl tune is running the search in {out} (it holds {out / 'tune.lock'}); "
                "wait for it to finish, or choose another --out."
            ) from None
        yield


def write_study(out: Path, record: dict[str, Any], trials: list[dict[str, Any]]) -> dict[str, Any]:
    """trials.json, trials.md, study.png and preset.yaml of a finished search; returns trials.json's content.

    Raises:
        InputError: no trial completed (nothing to recommend).
    """
    complete = [t for t in trials if t["state"] == "COMPLETE"]
    if not complete:
        raise InputError(
            f"no trial of the search in {out} completed (all pruned or failed); widen the space, raise "
            "--trials or use --pruner none."
        )
    best = max(complete, key=lambda t: t["value"])
    date = time.strftime("%Y-%m-%d")
    source = (
        f"acrl tune {record['algo']} --env {record['env_id']}: Optuna TPE study {out / 'study.journal'} "
        f"({len(trials)} trials, {record['pruner']} pruner, seed {record['seed']}, {record['total_steps']} steps "
        f"per trial), best trial {best['number']} with final evaluation {best['value']:.4g}, {date}"
    )
    preset = {record["env_id"]: {"tuned": {**record["set"], **best["params"], "source": source}}}
    write_text_atomic(out / "preset.yaml", yaml.safe_dump(preset, sort_keys=False))
    summary = {
        "out": str(out),
        "best": {k: best[k] for k in ("number", "value", "params")},
        "preset": preset,
        "trials": trials,
        "date": date,
    }
    write_json_atomic(out / "trials.json", summary)
    keys = list(record["space"])
    lines = [
        f"Best: trial {best['number']}, final evaluation {best['value']:.4g}.",
        "",
        "| trial | state | final evaluation | " + " | ".join(keys) + " |",
        "| ---: | --- | ---: |" + " ---: |" * len(keys),
    ]
    for t in sorted(trials, key=lambda t: -(t["value"] if t["value"] is not None else float("-inf"))):
        value = f"{t['value']:.4g}" if t["value"] is not None else "-"
        lines.append(
            f"| {t['number']} | {t['state'].lower()} | {value} | "
            + " | ".join(
                f"{t['params'].get(k, '-'):.4g}"
                if isinstance(t["params"].get(k), float)
                else str(t["params"].get(k, "-"))
                for k in keys
            )
            + " |"
        )
    write_text_atomic(out / "trials.md", "\n".join(lines) + "\n")
    plot_study(trials, out / "study.png")
    return summary


def plot_study(trials: list[dict[str, Any]], out: Path) -> Path:
    """Left: each finished trial's objective and the best so far; right: every trial's evaluations
    against steps, the best trial red, the other complete ones blue, pruned ones grey and dashed,
    failed ones black and dotted, with a legend of those kinds. Written atomically."""
    import matplotlib.ticker

    from acrl.core.plotting import plt, save_figure  # matplotlib with the Agg backend

    fig, (history, curves) = plt.subplots(1, 2, figsize=(12, 4.2))
    done = sorted((t for t in trials if t["state"] == "COMPLETE"), key=lambda t: t["number"])
    history.scatter([t["number"] for t in done], [t["value"] for t in done], s=18, label="complete")
    best, running = [], float("-inf")
    for t in done:
        running = max(running, t["value"])
        best.append(running)
    history.step([t["number"] for t in done], best, where="post", color="tab:red", label="best so far")
    history.set_xlabel("trial")
    history.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    history.set_ylabel("final evaluation return")
    history.legend(fontsize=8)
    history.grid(alpha=0.3)
    top = max(done, key=lambda t: t["value"])["number"] if done else None
    styles = {
        "COMPLETE": ("complete", "tab:blue", "-"),
        "PRUNED": ("pruned", "grey", "--"),
        "FAIL": ("failed", "black", ":"),
    }
    labelled = set()
    for t in sorted(trials, key=lambda t: t["number"] == top):  # the best one drawn last, on top
        if t["intermediate"]:
            name, color, ls = (
                (f"best: trial {top}", "tab:red", "-")
                if t["number"] == top
                else styles.get(t["state"], (t["state"].lower(), "tab:orange", "-"))
            )
            steps, values = zip(*sorted(t["intermediate"].items()))
            curves.plot(
                steps,
                values,
                color=color,
                ls=ls,
                lw=2 if t["number"] == top else 1,
                marker="o",
                ms=3,
                label="_nolegend_" if name in labelled else name,
            )
            labelled.add(name)
    curves.set_xlabel("steps")
    curves.set_ylabel("evaluation return")
    curves.grid(alpha=0.3)
    if labelled:
        curves.legend(fontsize=8)
    return save_figure(fig, out)
