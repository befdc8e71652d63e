"""The local process pool: each job a Python process of its own on this machine, no Ray.

What `run_jobs` uses without `--address` (`acrl sweep`, `acrl experiment`): one job per
`cpus_per_job` CPUs of this machine (and per `gpus_per_job` of its GPUs), so `pip install acrl`
runs sweeps and the paper's experiments. It keeps the contracts of `acrl.sweep.jobs` (job.json,
retries of a killed process from its checkpoint, one stop per job on Ctrl-C or SIGTERM). Neither
this module nor anything it imports imports Ray.
"""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from acrl.core.errors import InputError, TrainingError
from acrl.sweep.jobs import ClusterOptions, Executor, Job, run_job_here


@dataclass
class _PoolJob:
    """A job of a `LocalPool` in its process."""

    job: Job
    process: subprocess.Popen
    attempt: int
    slot: int
    message: tuple[str, Any] | None = None


POOL_JOB = (
    "import pickle, sys; sys.path[:] = pickle.load(sys.stdin.buffer); "
    "from acrl.sweep.local import pool_job_main; pool_job_main()"
)
"""A `LocalPool` job process's program: the driver's sys.path from stdin, then `pool_job_main`."""


class LocalPool(Executor):
    """Jobs as processes on this machine, as many at once as its CPUs (and GPUs) hold.

    Each job runs `run_job_here` in a fresh Python process (`pool_job_main`; the job arrives
    pickled on its stdin, its outcome leaves on its stdout) in a process group of its own, so
    the terminal's Ctrl-C reaches only the driver, which stops the jobs with one SIGTERM each;
    the run loop's signal policy then checkpoints them. A job also stops so within a second
    of its driver's death. Its other output is dropped, as a Ray task's is: the driver
    validates before any job starts and reports each job's outcome. `gpus_per_job` > 0 gives
    each job its share of this machine's GPUs (CUDA_VISIBLE_DEVICES); 0 hides them, as Ray does.

    Raises:
        InputError: as `ClusterOptions.validate`; more GPUs per job than this machine has.
    """

    def __init__(self, root: str | Path, options: ClusterOptions):
        super().__init__(root, options)
        slots = int(os.cpu_count() // options.cpus_per_job)
        if options.gpus_per_job > 0:
            import torch

            gpus = torch.cuda.device_count()
            if options.gpus_per_job > gpus:
                raise InputError(
                    f"each run asks for {options.gpus_per_job:g} GPU, but this machine has {gpus}; "
                    "lower --gpus-per-run or join a Ray cluster with --address."
                )
            slots = min(slots, int(gpus // options.gpus_per_job))
        self.slots = max(1, slots)
        self.waiting: deque[Job] = deque()
        self.running: dict[int, _PoolJob] = {}

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self.running:
            self.stop()

    def submit(self, job: Job) -> None:
        """Queue `job`; it starts in a free slot."""
        self.waiting.append(job)
        self._fill()

    def _fill(self) -> None:
        for slot in range(self.slots):
            if slot not in self.running and self.waiting:
                self._start(self.waiting.popleft(), slot)

    def _gpu_ids(self, slot: int) -> str:
        """CUDA_VISIBLE_DEVICES of the job in `slot`: its share of the GPUs ("" with none asked for)."""
        share = self.options.gpus_per_job
        if share == 0:
            return ""
        first = int(slot * share)
        return ",".join(str(i) for i in range(first, max(first + 1, math.ceil((slot + 1) * share))))

    def _start(self, job: Job, slot: int) -> None:
        process = subprocess.Popen(
            [sys.executable, "-c", POOL_JOB],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            process_group=0,
            env={**os.environ, "CUDA_VISIBLE_DEVICES": self._gpu_ids(slot)},
        )
        self.running[slot] = _PoolJob(job, process, len(self.attempts.setdefault(job.name, [])), slot)
        with process.stdin:
            pickle.dump(sys.path, process.stdin)
            pickle.dump((job, str(self.root), os.getpid()), process.stdin)

    def _ended(self, entries: list[_PoolJob], timeout: float) -> list[_PoolJob]:
        """Those of `entries` that end within `timeout` s, each with its message (None: it died)."""
        ended = []
        for stdout in wait([e.process.stdout for e in entries], timeout):
            entry = next(e for e in entries if e.process.stdout is stdout)
            data = stdout.read()  # written at its very end: EOF follows
            stdout.close()
            entry.message = pickle.loads(data) if data else None
            entry.process.wait()
            ended.append(entry)
        return ended

    def results(self) -> Iterator[tuple[Job, dict[str, Any] | BaseException]]:
        """(job, result or the exception it ended with) as jobs end, until none runs or waits; a job whose process
        died is retried from its latest checkpoint."""
        while self.running or self.waiting:
            self._fill()
            for entry in self._ended(list(self.running.values()), 1.0):
                del self.running[entry.slot]
                yield from self._outcome(entry)

    def _outcome(self, entry: _PoolJob) -> Iterator[tuple[Job, dict[str, Any] | BaseException]]:
        job = entry.job
        if entry.message is None:
            code = entry.process.returncode
            how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
            self.attempts[job.name].append(f"lost: {how}")
            if entry.attempt < self.options.retries:
                print(
                    f"acrl: warning: {job.name}: its process died ({how}); retrying from its latest checkpoint "
                    f"({entry.attempt + 1} of {self.options.retries})",
                    file=sys.stderr,
                )
                self.waiting.appendleft(job)
            else:
                yield (
                    job,
                    TrainingError(f"{job.name}: its process died {entry.attempt + 1} times; giving up (last: {how})"),
                )
            return
        self.attempts[job.name].append("local")
        kind, value = entry.message
        if kind == "failed":
            yield job, value
        elif value["status"] == "done":
            self._finished(job, value["result"])
            yield job, value["result"]
        else:  # signalled, not by `stop`: it checkpointed, so it continues from there
            self.waiting.appendleft(job)

    def stop(self) -> None:
        """Drop the waiting jobs and SIGTERM the running ones (they checkpoint); kill those still running after
        `stop_timeout` seconds."""
        self.waiting.clear()
        pending = list(self.running.values())
        for entry in pending:
            with contextlib.suppress(ProcessLookupError):
                entry.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.options.stop_timeout
        try:
            while pending and time.monotonic() < deadline:
                ended = self._ended(pending, min(1.0, max(0.0, deadline - time.monotonic())))
                pending = [e for e in pending if e not in ended]
        except KeyboardInterrupt:
            pass
        for entry in pending:
            entry.process.kill()
            entry.process.wait()
            entry.process.stdout.close()
        self.running.clear()


def pool_job_main() -> None:
    """The body of a `LocalPool` job's process (`POOL_JOB`): (job, root, driver pid) pickled on
    stdin; `run_job_here`; ("ended", its outcome) or ("failed", the exception) pickled on stdout."""
    job, root, driver = pickle.load(sys.stdin.buffer)
    result = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # what the job prints goes nowhere
    threading.Thread(target=_stop_when_orphaned, args=(driver,), daemon=True).start()
    try:
        message = ("ended", run_job_here(job, Path(root)))
    except BaseException as exc:  # sent whole where the driver can rebuild it, else as text with its traceback
        portable = isinstance(exc, (InputError, TrainingError))
        message = ("failed", exc if portable else TrainingError("".join(traceback.format_exception(exc)).strip()))
    with result:
        pickle.dump(message, result)


def _stop_when_orphaned(driver: int) -> None:
    """Send this process SIGTERM (stop at the end of the iteration, with latest.pt) once `driver` is gone."""
    while os.getppid() == driver:
        time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGTERM)
