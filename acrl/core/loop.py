"""The one run loop: every algorithm, `acrl experiment` and a sweep train through it.

    with Run(agent, run_dir) as run:       # config.yaml, metrics.csv, TensorBoard, progress bar
        while not run.done:
            before = agent.num_steps
            metrics = agent.iteration(run.budget())   # collect and/or update; advances num_steps
            run.log_episodes()                        # the episodes it finished: episodes.csv
            run.check_iteration(before, metrics, seconds)  # NaN checks, time/, callbacks
            if run.evaluation_due(before):
                metrics.update(run.evaluate())        # best.pt, callbacks, videos
            run.logger.log(agent.num_steps, metrics)  # metrics.csv, TensorBoard, progress bar
            if run.checkpoint_due(before):
                run.save_latest()
    # leaving the block: final evaluation, latest.pt, eval.json, learning_curve.png, README.md

`train` drives one or several runs in lockstep (the concurrent experiment trains six agents
on one behavioral clock) under one signal policy:

- the first Ctrl-C or SIGTERM lets the current iteration finish, then each run writes
  checkpoints/latest.pt and `train` raises KeyboardInterrupt (exit code 130 in the CLI);
  a signal in the final iteration lets the run finish normally;
- a second signal raises KeyboardInterrupt at once;
- a callback that asks to stop, or an evaluation that reaches `config.target_return`, ends
  the run normally at that step: final evaluation, eval.json and the curve.

What the loop decides: when to evaluate (every `eval_freq` steps, iterations cut at those
points where the algorithm can, and once at the end), which weights are evaluated and kept
(`agent.snapshot()`, frozen while A3C's workers keep training), what a checkpoint holds
(best.pt: no replay buffer), when latest.pt is written (every `checkpoint_freq` steps, at the
end, at a stop), that every metric and parameter is finite after every iteration, and, with
`video_freq`, which evaluations also record a clip (every `video_freq`-th evaluation, counted
over the run and its resumes: run_dir/videos/step-N.mp4 and TensorBoard). `time/elapsed_s` is
the wall time of the run, its earlier sessions included when it was resumed; run_dir/sessions.json
(`acrl.core.provenance.Session`, label "train") records each session's steps, commit, CPU and load
averages, its end moved on at every latest.pt. After every iteration the training episodes it
finished go to episodes.csv (`Run.log_episodes`). At the end it
writes eval.json (the best checkpoint's evaluation with its step, and the last evaluation) and
the run's model card, run_dir/README.md (`acrl.core.model_card`).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn

from acrl.core.checkpoint import run_files
from acrl.core.config import RunConfig
from acrl.core.errors import InputError, TrainingError
from acrl.core.files import write_json_atomic
from acrl.core.logging import Logger, console, format_return
from acrl.core.provenance import Session, cpu_model, load_average


class Callback:
    """Hook into a run, as Stable-Baselines3's callbacks: subclass and override what you need.

    `on_iteration` and `on_evaluation` may return True to stop the run after the current
    iteration; the run then finishes normally at that step (final evaluation, latest.pt,
    eval.json). The default methods do nothing.
    """

    def on_training_start(self, step: int, run_dir: Path | None) -> None:
        """Once, after the run's checks passed and config.yaml is written, before its first
        iteration; `step` is where it starts (a resumed run's step). Its return value is ignored."""

    def on_iteration(self, step: int, metrics: Mapping[str, float]) -> bool | None:
        """After every iteration: `step` is the agent's num_steps (environment steps, or
        gradient updates offline), `metrics` the iteration's train/, rollout/ and time/ values
        (keys as in metrics.csv; an evaluation at this step follows, see `on_evaluation`)."""
        return None

    def on_evaluation(self, step: int, result: Mapping[str, Any]) -> bool | None:
        """After every evaluation: `result` as `acrl.core.evaluation.evaluate` returns it."""
        return None

    def on_checkpoint(self, step: int, path: Path) -> None:
        """After checkpoints/latest.pt is written at `step` (periodically, at a stop, at the end;
        a sweep ships the run directory to the driver here). Its return value is ignored."""


class StopOnReturn(Callback):
    """Stop the run once an evaluation's mean return reaches `target` (config `target_return`)."""

    def __init__(self, target: float):
        self.target = target

    def on_evaluation(self, step: int, result: Mapping[str, Any]) -> bool:
        """True (stop) once the evaluation's mean return is at least `target`."""
        return result["return_mean"] >= self.target


class ConsoleReport(Callback):
    """Lines on stderr for a terminal (the CLI's): `start` once training starts (after the run's
    checks, so that a refused run prints only its error) and, with `evaluations`, one line per
    evaluation for a run without a progress bar (`--no-progress`), as Stable-Baselines3's
    EvalCallback (verbose=1) and CleanRL's logs print them:

        step 12,288: eval return 162.0 +/- 30.5 (10 episodes)   (returns below 10 in magnitude: 3 decimals)
    """

    def __init__(self, start: str | None = None, evaluations: bool = True):
        self.start, self.evaluations = start, evaluations

    def on_training_start(self, step: int, run_dir: Path | None) -> None:
        """Print the `start` line, if any."""
        if self.start:
            console(self.start)  # the bar is showing already: above it, not onto it

    def on_evaluation(self, step: int, result: Mapping[str, Any]) -> None:
        """Print the evaluation's line (with `evaluations`): the step, mean and std of the return, episodes."""
        if self.evaluations:
            console(
                f"step {step:,}: eval return {format_return(result['return_mean'])} +/- "
                f"{format_return(result['return_std'])} ({len(result['returns'])} episodes)"
            )


class Trainable(Protocol):
    """What the loop needs from an agent (`acrl.algos.base.Agent` provides all of it)."""

    algo: str
    """The algorithm's name in `acrl.algos.ALGORITHMS` (the model card's title)."""
    config: RunConfig
    num_steps: int
    total_steps: int
    best_eval: dict[str, Any] | None
    env: Any
    """The agent's environment (an id, EnvSpec, env or factory), which a `video_freq` run must be able to render."""
    nets: dict[str, nn.Module]
    step_unit: str
    """"step" (environment steps) or "update" (gradient updates, offline)."""
    episode_stats: Any
    """The training episodes' `acrl.parts.stats.EpisodeStats` (its `take_finished`), or None for an
    agent that plays none (offline)."""
    checkpoint_on_failure: bool
    """Whether latest.pt may be written after an exception (A3C: its global model is whole at
    any moment); otherwise the last periodic checkpoint is kept."""

    def iteration(self, max_steps: int) -> dict[str, float]:
        """One unit of training of at most `max_steps` steps where the algorithm can cut it;
        its metrics (a `time/fps` among them replaces the loop's, steps over the iteration's seconds)."""

    def training(self) -> AbstractContextManager[None]:
        """Held while the loop runs iterations (A3C: its worker processes run inside it).

        Leaving it may take num_steps past the last iteration's (A3C's workers finish their
        rollouts as they stop); the loop then calls `iteration(0)` once more, which takes no
        step and reports those, so that the last row is at the step latest.pt holds."""

    def snapshot(self) -> Trainable:
        """The agent frozen for evaluation and best.pt (itself, unless training runs elsewhere)."""

    def evaluate(self) -> dict[str, Any]:
        """Deterministic evaluation on its own environment (`acrl.core.evaluation.evaluate`)."""

    def record_video(self, path: Path, max_steps: int | None = None, keep_frames: bool = False) -> dict[str, Any]:
        """An MP4 of one evaluation episode (`acrl.core.video.record_video`), for `video_freq`."""

    def save(self, path: str | Path, replay_buffer: bool = True, run_files: dict[str, str] | None = None) -> None:
        """Write a checkpoint; `replay_buffer=False` leaves a replay buffer out; `run_files` are carried in it."""

    def write_config(self, run_dir: Path) -> None:
        """Write run_dir/config.yaml."""


class Run:
    """One agent's run, as a context manager: see the module docstring.

    Args:
        agent: what `Trainable` describes.
        run_dir: the run directory, or None to log nowhere (no checkpoints, no final evaluation).
        progress: show a progress bar (refreshed every second while an iteration runs).
        callbacks: `Callback`s, called in order; `config.target_return` adds a `StopOnReturn`.
        label: the progress bar's description (default: none), e.g. "bcq on imperfect".
    Raises:
        InputError: a new run (the agent at step 0) in a directory that holds one (`check_run_dir`);
            `video_freq` without what recording needs.
    """

    def __init__(
        self,
        agent: Trainable,
        run_dir: str | Path | None = None,
        progress: bool = True,
        callbacks: Sequence[Callback] = (),
        label: str | None = None,
    ):
        self.agent = agent
        self.run_dir = Path(run_dir) if run_dir is not None else None
        if self.run_dir is not None:
            check_run_dir(self.run_dir, resuming=agent.num_steps > 0)
        self.progress, self.label = progress, label
        self.callbacks = list(callbacks)
        if agent.config.target_return is not None:
            self.callbacks.append(StopOnReturn(agent.config.target_return))
        if self.run_dir is not None and agent.config.video_freq:
            from acrl.core.video import check_recording

            check_recording(agent.env)  # no GL, ffmpeg or rgb_array: say so before the run starts
        self.stopped = False
        """A callback or the target return ended the run early (it still finishes normally)."""
        self.start_step = agent.num_steps
        """The step this session started from (0, or where a resumed run continued)."""
        self.last_eval: dict[str, Any] | None = None
        """The latest evaluation's result, with its "step"."""
        self.evaluations = 0
        """Evaluations of the run so far, those before a resume included (the rows of metrics.csv with one)."""
        self.logger: Logger | None = None
        self._session: contextlib.ExitStack | None = None
        self._clock = (0.0, 0.0)  # (seconds of the earlier sessions, perf_counter at this one's start)
        self._record: Session | None = None  # this session's entry in run_dir/sessions.json

    @property
    def done(self) -> bool:
        """The budget is spent or the run was stopped by a callback."""
        return self.stopped or self.agent.num_steps >= self.agent.total_steps

    def __enter__(self) -> Run:
        agent = self.agent
        if self.run_dir is not None:
            agent.write_config(self.run_dir)
        self.logger = Logger(
            self.run_dir,
            agent.total_steps,
            start_step=agent.num_steps,
            progress=self.progress,
            unit=agent.step_unit,
            label=self.label,
        )
        earlier = [row for row in self.logger.rows if "time/elapsed_s" in row]  # rows kept from before a resume
        self._clock = (earlier[-1]["time/elapsed_s"] if earlier else 0.0, time.perf_counter())
        self.evaluations = sum("eval/return_mean" in row for row in self.logger.rows)
        self._session = contextlib.ExitStack()
        try:
            self._session.enter_context(agent.training())
            if self.progress:
                self._session.enter_context(refreshing(self.logger, agent))
        except BaseException:
            self._session.close()
            self.logger.close()
            raise
        for callback in self.callbacks:
            callback.on_training_start(agent.num_steps, self.run_dir)
        if self.run_dir is not None:
            self._record = Session(
                self.run_dir,
                "train",
                start_step=agent.num_steps,
                end_step=agent.num_steps,
                cpu=cpu_model(),
                cores=len(os.sched_getaffinity(0)),
                precision=agent.config.precision,  # a run resumed elsewhere may change it (`acrl resume --precision`)
                load_average_start=load_average(),
            )
        return self

    def budget(self) -> int:
        """Most steps the next iteration may take: to the end of the budget or the next evaluation."""
        agent, freq = self.agent, self.agent.config.eval_freq
        left = agent.total_steps - agent.num_steps
        return min(left, freq - agent.num_steps % freq) if freq else left

    def log_episodes(self) -> None:
        """Write the training episodes the agent finished since the last call to episodes.csv, at its
        current step (`acrl.core.logging.Logger.log_episodes`)."""
        if self.agent.episode_stats is not None:
            self.logger.log_episodes(self.agent.num_steps, self.agent.episode_stats.take_finished())

    def _add_elapsed(self, metrics: dict[str, float]) -> None:
        """Set metrics["time/elapsed_s"] to the run's wall time: the agent's own for this session (A3C's: since its
        workers started), else the seconds since this session started, plus the earlier sessions'."""
        earlier, started = self._clock
        metrics["time/elapsed_s"] = earlier + metrics.get("time/elapsed_s", time.perf_counter() - started)

    def check_iteration(self, before: int, metrics: dict[str, float], seconds: float) -> None:
        """After an iteration that took the agent from step `before` in `seconds`: add the time/
        metrics, check that every metric and parameter is finite, tell the callbacks.

        `time/fps` is steps over `seconds` unless the agent measured its own; `time/elapsed_s`
        is the agent's own (A3C: since its workers started) or the seconds since this session
        started, plus the earlier sessions' (the last kept row's value after a resume).

        Raises:
            TrainingError: a metric or a parameter is NaN or infinite; the message names the
                step and the quantity. The last good checkpoint is kept.
        """
        agent = self.agent
        metrics.setdefault("time/fps", (agent.num_steps - before) / max(seconds, 1e-9))  # unless measured by the agent
        self._add_elapsed(metrics)
        check_finite(agent, metrics)
        for callback in self.callbacks:
            self.stopped |= bool(callback.on_iteration(agent.num_steps, metrics))

    def evaluation_due(self, before: int) -> bool:
        """Whether the iteration from step `before` crossed a multiple of eval_freq, or ended a
        run that has a directory (the final evaluation joins the last row)."""
        freq = self.agent.config.eval_freq
        crossed = bool(freq) and self.agent.num_steps // freq > before // freq
        return crossed or (self.run_dir is not None and self.done)

    def checkpoint_due(self, before: int) -> bool:
        """Whether the iteration from step `before` crossed a multiple of checkpoint_freq (with a run directory)."""
        freq = self.agent.config.checkpoint_freq
        return self.run_dir is not None and self.agent.num_steps // freq > before // freq

    def evaluate(self) -> dict[str, float]:
        """Evaluate the agent's snapshot now: best.pt on a new best, the callbacks, every
        `video_freq`-th evaluation a clip; returns the eval/ metrics of the row."""
        agent = self.agent
        policy = agent.snapshot()
        result = policy.evaluate()
        self.evaluations += 1
        self.last_eval = {**result, "step": agent.num_steps}
        if agent.best_eval is None or result["return_mean"] > agent.best_eval["return_mean"]:
            agent.best_eval = {**result, "step": agent.num_steps}
            if self.run_dir is not None:
                policy.save(self.run_dir / "checkpoints" / "best.pt", replay_buffer=False)
        for callback in self.callbacks:
            self.stopped |= bool(callback.on_evaluation(agent.num_steps, result))
        cfg = agent.config
        if self.run_dir is not None and cfg.video_freq and self.evaluations % cfg.video_freq == 0:
            clip = policy.record_video(
                self.run_dir / "videos" / f"step-{agent.num_steps:09d}.mp4",
                max_steps=cfg.video_length,
                keep_frames=True,
            )
            self.logger.add_video("eval/video", clip["video"], agent.num_steps, clip["fps"])
        # return_mean, return_std and the task's episode metrics (e.g. y_displacement_mean)
        return {f"eval/{key}": value for key, value in result.items() if type(value) is float}

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        agent = self.agent
        try:
            self._session.close()  # A3C: the workers stop here, before anything is saved
            tail = {}
            if exc_type is None and agent.num_steps != self.logger.step:  # steps taken while training() closed
                tail = agent.iteration(0)
                self._add_elapsed(tail)  # the run's, as every row's: a resume reads it from the last row
                self.log_episodes()
                if not (self.run_dir is not None and self.done):  # else it joins the final evaluation's row
                    self.logger.log(agent.num_steps, tail)
            if self.run_dir is not None:
                if exc_type is None and self.done:
                    self._finish(tail)
                elif exc_type is None or (agent.checkpoint_on_failure and parameters_finite(agent)):
                    self.save_latest()  # stopped by a signal (or a failure A3C survives): resume from here
        finally:
            self.logger.close()

    def save_latest(self) -> None:
        """Write checkpoints/latest.pt (replay buffer included where the config says; the run's history, so that
        it alone carries the run to another machine: `acrl.core.checkpoint.restore_run_files`) and tell the
        callbacks."""
        path = self.run_dir / "checkpoints" / "latest.pt"
        self._record.mark(end_step=self.agent.num_steps, load_average_end=load_average())
        self.agent.save(path, run_files=run_files(self.run_dir))
        for callback in self.callbacks:
            callback.on_checkpoint(self.agent.num_steps, path)

    def _finish(self, tail: dict[str, float]) -> None:
        agent, run_dir = self.agent, self.run_dir
        if self.last_eval is None or self.last_eval["step"] != agent.num_steps:  # stopped between evaluations
            self.logger.log(agent.num_steps, {**tail, **self.evaluate()})
        self.save_latest()
        write_json_atomic(
            run_dir / "eval.json",
            {
                **agent.best_eval,
                "checkpoint": "checkpoints/best.pt",
                "resumed_at": self.start_step or None,
                "last": self.last_eval,
            },
        )
        from acrl.core.plotting import plot_runs  # matplotlib loads only when a run finishes

        plot_runs([run_dir], run_dir / "learning_curve.png")
        from acrl.core.model_card import write_model_card

        write_model_card(run_dir, agent)


def train(runs: Sequence[Run]) -> None:
    """Drive `runs` until each is done, one iteration of each per round, under the signal policy.

    Several runs advance in lockstep: with equal budgets, eval_freq and iteration sizes their
    agents stay on the same step (the concurrent experiment relies on it). The runs whose
    checkpoint is due write latest.pt after the round, all of them together, so that lockstep runs
    killed mid-round leave checkpoints of one step (a kill while they are written, of two).

    Raises:
        TrainingError: from `Run.check_iteration` or an agent's iteration.
        KeyboardInterrupt: after a first signal, once every run has saved checkpoints/latest.pt;
            at once after a second.
    """
    with stop_after_iteration() as stop, contextlib.ExitStack() as stack:
        for run in runs:
            stack.enter_context(run)
        while not all(run.done for run in runs):
            due = []
            for run in runs:
                if run.done:
                    continue
                agent = run.agent
                before, started = agent.num_steps, time.perf_counter()
                metrics = agent.iteration(run.budget())
                run.log_episodes()
                run.check_iteration(before, metrics, time.perf_counter() - started)
                if run.evaluation_due(before):
                    metrics.update(run.evaluate())
                run.logger.log(agent.num_steps, metrics)
                if run.checkpoint_due(before):
                    due.append(run)
            for run in due:
                run.save_latest()
            if stop and not all(run.done for run in runs):
                break
    if stop and not all(run.done for run in runs):  # the runs have saved latest.pt on leaving the block
        raise KeyboardInterrupt(f"{stop[0]} at step {max(run.agent.num_steps for run in runs)}")


@contextlib.contextmanager
def refreshing(logger: Logger, agent: Trainable, interval: float = 1.0) -> Iterator[None]:
    """While the block runs, move `logger`'s progress bar to `agent.num_steps` every `interval`
    seconds from a daemon thread, so that it moves inside long iterations (an off-policy or offline
    iteration of 1,000 steps or updates); the rows stay one per iteration."""
    stop = threading.Event()

    def refresh() -> None:
        while not stop.wait(interval):
            logger.show_progress(agent.num_steps)

    thread = threading.Thread(target=refresh, name="acrl-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def check_run_dir(run_dir: Path, resuming: bool) -> None:
    """Refuse to start a new run (`resuming` False) in a directory that holds one.

    A run is there when `checkpoints/latest.pt` is: a new run would overwrite its config,
    metrics and checkpoints and mix its own into its TensorBoard events and model card. A
    directory without latest.pt (an attempt killed before its first checkpoint) is reused.

    Raises:
        InputError: naming the directory, how to continue that run, and the alternative.
    """
    if not resuming and (run_dir / "checkpoints" / "latest.pt").exists():
        raise InputError(
            f"{run_dir} already holds a run; continue it with `acrl resume {run_dir}` (from Python: "
            f"acrl.load('{run_dir / 'checkpoints' / 'latest.pt'}').learn(...)), or choose another "
            "run directory."
        )


def check_finite(agent: Trainable, metrics: Mapping[str, float]) -> None:
    """Raise `TrainingError` naming the step and the quantity if a metric or parameter is not finite.

    The parameters checked are `agent.snapshot()`'s, the weights the loop evaluates and keeps:
    an agent whose weights change outside `iteration` (A3C's workers) gives a frozen copy
    there, which nothing changes while `torch.isfinite` reads each element twice (x == x: a value
    written between the two reads would look like NaN).
    """
    for key, value in metrics.items():
        if not math.isfinite(value):
            raise TrainingError(
                f"step {agent.num_steps}: {key} is {value}; stopping. The last good checkpoint is kept."
            )
    for net_name, net in agent.snapshot().nets.items():
        for name, param in net.named_parameters():
            if not torch.isfinite(param).all():
                raise TrainingError(
                    f"step {agent.num_steps}: parameter {net_name}.{name} is not finite; "
                    "stopping. The last good checkpoint is kept."
                )


def parameters_finite(agent: Trainable) -> bool:
    """Whether every parameter of every network of `agent` is finite."""
    return all(bool(torch.isfinite(param).all()) for net in agent.nets.values() for param in net.parameters())


@contextlib.contextmanager
def stop_after_iteration() -> Iterator[list[str]]:
    """Defer Ctrl-C and SIGTERM to the end of the current training iteration.

    Yields a list that the first signal appends its name to (`train` checks it after each
    round of iterations); a second signal raises KeyboardInterrupt at once. Outside the main
    thread, where Python cannot install signal handlers, signals keep their usual behaviour.
    """
    received: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if received:
            raise KeyboardInterrupt(f"second {name}")
        received.append(name)
        print(
            f"\nacrl: {name}: stopping at the end of this iteration (checkpoints/latest.pt is written "
            "there); send it again to stop at once.",
            file=sys.stderr,
            flush=True,
        )

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for s, old in previous.items():
            signal.signal(s, old)
