"""The job contract: what a `Job` is, how its process runs it, and the interface of the executors.

`acrl.sweep.executor.run_jobs` runs jobs on an `Executor`: `acrl.sweep.local.LocalPool` (processes
on this machine, no Ray) or `acrl.sweep.cluster.Cluster` (Ray tasks). The contracts both keep, which
`run_jobs`, the sweep, `acrl tune` and the experiments rely on:

- A `Job` is a module-level function and its keyword arguments; it writes everything under
  `root/name` (one acrl run directory, or several) and returns a small JSON-ready result. The
  driver writes that result to `root/name/job.json` with where each attempt ran, the mark of a
  finished job (`is_done`): a rerun skips it. A job that reads what others write names them
  (`Job.after`): `run_jobs` submits it once they are done, so one call runs a whole experiment,
  each core taking the next job that can start rather than waiting for a stage to end.
- An error raised by the job itself (bad input, a NaN) is reported for that job and not
  retried (it would happen again); the other jobs complete first. A job whose process dies
  (killed by the OS, a lost node) is started again, at most `retries` times, from what the
  driver holds, so it resumes from its latest checkpoint.
- Ctrl-C or SIGTERM to the driver (`signals_interrupt`, then `Executor.stop`), also when it runs
  in the background of a script where SIGINT starts ignored: each running job finishes its
  iteration, writes latest.pt and returns; a second signal, or `stop_timeout` seconds, kills
  them. The jobs' processes never see the terminal's Ctrl-C themselves (a pool's jobs run in
  process groups of their own, Ray's processes start with SIGINT blocked), so each gets exactly
  one stop. Nothing keeps running after the driver leaves.

Nothing here imports Ray: the local path (`run_jobs` without an address) never does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acrl.core.errors import InputError
from acrl.core.files import write_json_atomic
from acrl.core.loop import Callback


@dataclass(frozen=True)
class Job:
    """One unit of work: `fn(root, root / name, callbacks, **kwargs)` in a process of an `Executor`.

    Attributes:
        name: the job's directory under the sweep root (e.g. "CartPole-v1-learning_rate=0.001-s0").
        fn: a module-level function (pickled by reference) that writes under its job directory,
            passes `callbacks` to every run it trains, and returns a JSON-ready dict.
        kwargs: its other arguments; paths inside the sweep are relative to the root.
        inputs: files it reads, absolute or relative to the root (shipped to another machine).
        steps: its budget in steps (or updates), for the progress bar, which counts the steps
            of its runs' metrics.csv as they grow; 0 if unknown (then the bar counts jobs).
        after: names of jobs listed before it in the same `run_jobs` call that must finish first
            (those that write its inputs); it starts once they are done, and is not run if one fails.
    """

    name: str
    fn: Callable[..., dict[str, Any]]
    kwargs: dict[str, Any] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()
    steps: int = 0
    after: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClusterOptions:
    """Where and how jobs run.

    Attributes:
        address: None for this machine (`run_jobs`: a `LocalPool`, one job per `cpus_per_job`
            of `os.cpu_count()` CPUs; `Cluster` alone, as `acrl tune` uses it: a local Ray
            instance), "auto" for the Ray cluster `ray start` runs on this machine, or
            "HOST:PORT" of a Ray cluster's head (both `Cluster`, the `ray` extra).
        cpus_per_job: CPUs reserved for each job (also each run's torch threads).
        gpus_per_job: GPUs reserved for each job (> 0: the run's device is "cuda").
        retries: times a job whose process or node died is started again.
        stop_timeout: seconds Ctrl-C waits for running jobs to checkpoint before killing them.
    """

    address: str | None = None
    cpus_per_job: float = 1.0
    gpus_per_job: float = 0.0
    retries: int = 3
    stop_timeout: float = 120.0

    def validate(self) -> None:
        """Raise `InputError` for a resource request no cluster can meet or a negative count."""
        if self.cpus_per_job <= 0 or self.gpus_per_job < 0:
            raise InputError(
                f"--cpus-per-run must be > 0 and --gpus-per-run >= 0, got {self.cpus_per_job} and {self.gpus_per_job}."
            )
        if self.retries < 0:
            raise InputError(f"--retries must be >= 0, got {self.retries}.")
        if self.address is None and self.cpus_per_job > os.cpu_count():  # said before anything starts
            raise InputError(
                f"each run asks for {self.cpus_per_job:g} CPU, but this machine, where the runs "
                f"execute, has {os.cpu_count()}; lower --cpus-per-run or join a Ray cluster with "
                "--address."
            )

    def run_settings(self, config: Any, given: dict[str, Any]) -> dict[str, Any]:
        """Config fields each run takes from its reservation, where `config` has them and `given`
        (the user's values) does not set them: torch_threads (and A3C's workers) = the CPUs per
        job, device = "cuda" with GPUs per job, else "cpu"."""
        threads = max(1, int(self.cpus_per_job))
        settings = {"torch_threads": threads, "workers": threads, "device": "cuda" if self.gpus_per_job > 0 else "cpu"}
        return {k: v for k, v in settings.items() if hasattr(config, k) and k not in given}


def is_done(root: Path, name: str) -> bool:
    """Whether the driver has recorded `name` as finished (root/name/job.json)."""
    return (root / name / "job.json").is_file()


def run_job_here(job: Job, work_root: Path, callbacks: Sequence[Callback] = ()) -> dict[str, Any]:
    """The body of a job's process or task, on whichever machine it landed.

    Args:
        job: what to run; its kwargs' "callbacks", if any, come first in the run's callbacks.
        work_root: the sweep root as this machine writes it.
        callbacks: more callbacks for the job's runs (a `acrl.sweep.cluster.Shipper` on another
            machine than the driver's).
    Returns:
        {"status": "done" | "interrupted", "result": the job's dict or None}. "interrupted": a stop
        (SIGTERM or a cancel) reached the run, which has written latest.pt.
    """
    kwargs = dict(job.kwargs)
    callbacks = [*kwargs.pop("callbacks", ()), *callbacks]
    try:
        return {"status": "done", "result": job.fn(work_root, work_root / job.name, callbacks, **kwargs)}
    except KeyboardInterrupt:
        return {"status": "interrupted", "result": None}


class Executor(ABC):
    """Where `run_jobs` runs jobs: a context manager with `submit`, `results` and `stop`.

    `LocalPool` and `Cluster` keep the same contracts (the module docstring lists them).

    Args:
        root: the sweep directory on the driver.
        options: `ClusterOptions`.
    Raises:
        InputError: as `ClusterOptions.validate`.
    """

    def __init__(self, root: str | Path, options: ClusterOptions):
        options.validate()
        self.root, self.options = Path(root).resolve(), options
        self.attempts: dict[str, list[str]] = {}
        """Per job: where each attempt ran (a Ray node id, "local"), or "lost: WHY"."""

    def __enter__(self) -> Executor:
        return self

    @abstractmethod
    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        """Stop the jobs still running (`stop`) and release what entering took."""

    @abstractmethod
    def submit(self, job: Job) -> None:
        """Start `job` (or start it again), with what the driver holds of its directory."""

    @abstractmethod
    def results(self) -> Iterator[tuple[Job, dict[str, Any] | BaseException]]:
        """Yield (job, outcome) as jobs end, until none is left: outcome is the job's result dict
        (also written to job.json), or the exception of a job that failed for good. Starts jobs
        whose process died again (at most `retries` times), and jobs signalled other than by
        `stop`. Jobs interrupted by `stop` are not yielded."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the running jobs so that each checkpoints; wait up to `stop_timeout`, then kill.

        A KeyboardInterrupt while waiting (a second Ctrl-C) kills them at once.
        """

    def _finished(self, job: Job, result: dict[str, Any]) -> None:
        write_json_atomic(self.root / job.name / "job.json", {"result": result, "attempts": self.attempts[job.name]})


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """While active, SIGINT and SIGTERM raise KeyboardInterrupt in the driver (main thread only).

    Installed explicitly, whatever the process started with: a process started in the
    background of a non-interactive shell has SIGINT ignored, and Ray's init installs a SIGTERM
    handler of its own that dumps a C++ stack and exits 134. The previous handlers come back
    on leaving (SIG_DFL for one Python did not install).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = {s: signal.signal(s, interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)
