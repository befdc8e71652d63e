"""Where the jobs of a sweep or an experiment run: one interface, a local process pool or Ray.

`run_jobs` takes a list of `Job`s and runs them on an `Executor`, chosen by `ClusterOptions.address`:

- `LocalPool` (no address, the default): each job a process of its own on this machine, one
  per `cpus_per_job` CPUs of it. Needs nothing beyond acrl itself, so `pip install acrl` runs
  `acrl sweep` and the paper's experiments (`acrl experiment`).
- `Cluster` (`--address auto|HOST:PORT`, the `ray` extra): each job a Ray task on any node of
  a Ray cluster. Ray Core rather than Ray Tune: an acrl run already owns its checkpoints,
  resume, metrics and evaluation (`acrl.core.loop`), so a job needs from Ray only what a plain
  task gives, a process with its CPU and GPU share on some node, plus a way home for the files.
  (`acrl tune` uses `Cluster` directly, on a local Ray instance without an address.)

The contracts both keep, which `run_jobs`, the sweep and the experiments rely on:

- A `Job` is a module-level function and its keyword arguments; it writes everything under
  `root/name` (one acrl run directory, or several) and returns a small JSON-ready result. The
  driver writes that result to `root/name/job.json`, the mark of a finished job: a rerun skips
  it. A job that reads what others write names them (`Job.after`): `run_jobs` submits it once
  they are done, so one call runs a whole experiment, each core taking the next job that can
  start rather than waiting for a stage to end.
- An error raised by the job itself (bad input, a NaN) is reported for that job and not
  retried (it would happen again); the other jobs complete first. A job whose process dies
  (killed by the OS, a lost node) is started again, at most `retries` times, from what the
  driver holds, so it resumes from its latest checkpoint.
- Ctrl-C or SIGTERM to the driver (`Executor.stop`), also when it runs in the background of a
  script where SIGINT starts ignored: each running job finishes its iteration, writes
  latest.pt and returns; a second signal, or `stop_timeout` seconds, kills them. The jobs'
  processes never see the terminal's Ctrl-C themselves (a pool's jobs run in process groups
  of their own, Ray's processes start with SIGINT blocked), so each gets exactly one stop.
  Nothing keeps running after the driver leaves.

On Ray, jobs on the driver's machine (same IP address) write straight into the sweep directory.
On another machine a job writes the same paths on its own disk, and after every checkpoint
(`Callback.on_checkpoint`) and at its end it ships the files that changed to a `Sink` actor
pinned to the driver's node (started once the cluster has a second machine), which writes them
into the driver's sweep directory atomically. Its inputs (datasets, an unfinished run's
checkpoint) travel the other way through Ray's object store. So the driver always holds every
job's latest checkpoint, whatever the filesystem.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from acrl.core.errors import InputError, TrainingError
from acrl.core.files import write_bytes_atomic, write_json_atomic
from acrl.core.loop import Callback
from acrl.core.provenance import source

EXTRA_HINT = "install acrl's ray extra: pip install -e '.[ray]' (./run setup does)"
CONNECT_TIMEOUT_S = 10.0
"""How long `--address HOST:PORT` may take to answer before the sweep gives up (exit 2)."""


def require(module: str, purpose: str) -> Any:
    """Import an optional dependency of the ray extra (ray, optuna) or raise `InputError`.

    Raises:
        InputError: the module is not installed; the message names the extra to install.
    """
    from importlib import import_module

    try:
        return import_module(module)
    except ImportError:
        raise InputError(f"{purpose} needs {module}, which is not installed: {EXTRA_HINT}.") from None


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


def read_files(root: Path, paths: list[Path]) -> dict[str, bytes]:
    """{path relative to root (or absolute, outside it): bytes} of the files under `paths`."""
    files = {}
    for path in paths:
        for file in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if file.is_file() and not file.name.endswith(".tmp"):
                key = os.path.relpath(file, root) if file.is_relative_to(root) else str(file)
                files[key] = file.read_bytes()
    return files


def write_files(root: Path, files: dict[str, bytes]) -> None:
    """Write each file under `root` (absolute keys as they are) atomically: temp file, then rename."""
    for key, data in files.items():
        write_bytes_atomic(root / key, data)


class Shipper(Callback):
    """Sends the files of a job directory that changed since the last call to `sink`.

    Called after every latest.pt (`on_checkpoint`) and once more when the job ends, so the
    driver's copy is never older than the job's last checkpoint.

    Args:
        sink: receives {path relative to the work root: bytes}.
        work_root: the root this machine writes under.
        job_dir: the job's directory under it.
    """

    def __init__(self, sink: Callable[[dict[str, bytes]], None], work_root: Path, job_dir: Path):
        self.sink, self.work_root, self.job_dir = sink, work_root, job_dir
        self.sent: dict[str, tuple[int, int]] = {}

    def on_checkpoint(self, step: int, path: Path) -> None:
        self.ship()

    def ship(self) -> None:
        changed = {}
        for file in sorted(self.job_dir.rglob("*")):
            if not file.is_file() or file.name.endswith(".tmp"):
                continue
            key, stat = os.path.relpath(file, self.work_root), file.stat()
            if self.sent.get(key) != (stat.st_mtime_ns, stat.st_size):
                changed[key] = file.read_bytes()
                self.sent[key] = (stat.st_mtime_ns, stat.st_size)
        if changed:
            self.sink(changed)


def run_job_here(
    job: Job,
    work_root: Path,
    files: dict[str, bytes] | None = None,
    sink: Callable[[dict[str, bytes]], None] | None = None,
) -> dict[str, Any]:
    """The body of a job's task, on whichever machine it landed.

    Args:
        job: what to run.
        work_root: the sweep root as this machine writes it.
        files: on another machine than the driver's, the job's inputs and its directory as the
            driver holds it ({key: bytes}, keys as `read_files` makes them), written first.
        sink: on another machine, where changed files are shipped (`Shipper`); None on the
            driver's machine, which writes into the sweep directory itself.
    Returns:
        {"status": "done" | "interrupted", "result": the job's dict or None}.
    """
    job_dir = work_root / job.name
    callbacks = list(job.kwargs.get("callbacks", ()))
    shipper = None
    if sink is not None:
        write_files(work_root, files or {})
        shipper = Shipper(sink, work_root, job_dir)
        shipper.ship()  # what it was given is what the driver has: record it as sent
        callbacks.append(shipper)
    kwargs = {k: v for k, v in job.kwargs.items() if k != "callbacks"}
    try:
        outcome = {"status": "done", "result": job.fn(work_root, job_dir, callbacks, **kwargs)}
    except KeyboardInterrupt:  # a cancel (Ctrl-C on the driver): the run has written latest.pt
        outcome = {"status": "interrupted", "result": None}
    if shipper is not None:
        shipper.ship()
    return outcome


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
    "from acrl.sweep.executor import pool_job_main; pool_job_main()"
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


class Cluster(Executor):
    """Jobs as Ray tasks: Ray connected or started, with the sweep's sink actor; a context manager.

    Args:
        root: the sweep directory on the driver.
        options: `ClusterOptions` (no address: a local Ray instance, as `acrl tune` uses it).
    Raises (on entering):
        InputError: Ray not installed (naming the `ray` extra), an address that does not answer
            within `CONNECT_TIMEOUT_S`, or a job's resources larger than any node of the cluster has.
    """

    def __init__(self, root: str | Path, options: ClusterOptions):
        super().__init__(root, options)
        self.started_ray = False
        self.running: dict[Any, tuple[Job, int]] = {}
        self.input_refs: dict[str, Any] = {}

    def __enter__(self) -> Cluster:
        ray = require("ray", f"--address {self.options.address}" if self.options.address else "acrl tune")
        try:
            if not ray.is_initialized():
                self._connect(ray)
            self._check_resources(ray)
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            self.driver_node = ray.get_runtime_context().get_node_id()
            self.driver_ip = ray.util.get_node_ip_address()
            self.pinned = NodeAffinitySchedulingStrategy(node_id=self.driver_node, soft=False)
            self.sink = None  # started with the first job that may land on another machine
            self.task = ray.remote(
                num_cpus=self.options.cpus_per_job, num_gpus=self.options.gpus_per_job, max_retries=0
            )(_task)
        except BaseException:
            self._shutdown(ray)
            raise
        return self

    def _connect(self, ray: Any) -> None:
        address = self.options.address
        quiet = {"include_dashboard": False, "logging_level": logging.ERROR, "log_to_driver": False}
        if address is None:
            # Ray's own processes (GCS, raylet, and the workers they start) inherit SIGINT blocked, so a
            # Ctrl-C in the terminal reaches only this driver, which then stops the runs in order (`stop`)
            # and shuts Ray down. A Ctrl-C during start-up waits until init returns, then stops it all.
            self.started_ray = True  # from here on, leaving shuts down whatever init started
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                ray.init(address="local", num_cpus=os.cpu_count(), **quiet)  # never a cluster RAY_ADDRESS names
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
            return
        from acrl.core.version import __version__

        address = self._reachable(address)
        check_versions(address, cluster_metadata(address))
        try:
            ray.init(address=address, **{k: v for k, v in quiet.items() if k != "include_dashboard"})
        except ConnectionError as exc:
            raise InputError(
                f"could not join the Ray cluster at --address {address}: {exc} Start one with "
                "`ray start --head`, or drop --address to run on this machine."
            ) from None
        try:
            found = ray.get(ray.remote(num_cpus=0, max_retries=0)(_acrl_version).remote(), timeout=60)
        except Exception as exc:  # the worker could not import acrl, or never started
            ray.shutdown()
            why = " ".join(str(exc).split())[:300]
            raise InputError(
                f"the Ray cluster at {address} cannot run acrl's jobs ({type(exc).__name__}: {why}); "
                f"install acrl {__version__} on every node."
            ) from None
        if found != __version__:
            ray.shutdown()
            raise InputError(
                f"the Ray cluster at {address} runs acrl {found}, this driver acrl {__version__}; install "
                "the same acrl on every node."
            )

    def _reachable(self, address: str) -> str:
        """HOST:PORT of `address` ("auto": the cluster Ray finds on this machine), once its port answers.

        Raises:
            InputError: a malformed address, no cluster for "auto", a port that does not answer
                within `CONNECT_TIMEOUT_S`.
        """
        if address == "auto":
            from ray._private.services import canonicalize_bootstrap_address

            found = canonicalize_bootstrap_address("auto")  # RAY_ADDRESS, else the cluster `ray start` started here
            if found is None:
                raise InputError(
                    "--address auto: no Ray cluster runs on this machine; start one with `ray start "
                    "--head`, or drop --address to run on this machine's process pool."
                )
            address = found
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise InputError(
                f"--address must be auto or HOST:PORT (the head's GCS port, 6379 by default), got {address!r}."
            )
        try:
            socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
        except OSError as exc:
            raise InputError(
                f"no Ray cluster answers at {address} within {CONNECT_TIMEOUT_S:.0f} s ({exc}); "
                "start one with `ray start --head` there, or drop --address to run on this "
                "machine."
            ) from None
        return address

    def _check_resources(self, ray: Any) -> None:
        cpus, gpus = self.options.cpus_per_job, self.options.gpus_per_job
        nodes = [n["Resources"] for n in ray.nodes() if n["Alive"]]
        if not any(r.get("CPU", 0) >= cpus and r.get("GPU", 0) >= gpus for r in nodes):
            largest = max(((r.get("CPU", 0), r.get("GPU", 0)) for r in nodes), default=(0, 0))
            raise InputError(
                f"each run asks for {cpus:g} CPU and {gpus:g} GPU, but the largest node of the cluster "
                f"has {largest[0]:g} CPU and {largest[1]:g} GPU; lower --cpus-per-run / "
                "--gpus-per-run."
            )

    def submit(self, job: Job) -> None:
        import ray

        files, current = {}, None
        if not self._one_machine():  # bundles for a task that may land on another machine
            if self.sink is None:
                self.sink = ray.remote(num_cpus=0, scheduling_strategy=self.pinned)(Sink).remote(str(self.root))
            for path in job.inputs:
                if path not in self.input_refs:
                    self.input_refs[path] = ray.put(read_files(self.root, [self._abs(path)]))
                files[path] = self.input_refs[path]
            job_dir = self.root / job.name
            current = ray.put(read_files(self.root, [job_dir])) if job_dir.exists() else None
        ref = self.task.remote(job, str(self.root), self.driver_ip, self.sink, files, current)
        self.running[ref] = (job, len(self.attempts.setdefault(job.name, [])))

    def _one_machine(self) -> bool:
        """Whether every live node is the driver's machine (nothing needs shipping)."""
        import ray

        return all(n["NodeManagerAddress"] == self.driver_ip for n in ray.nodes() if n["Alive"])

    def _abs(self, path: str) -> Path:
        return Path(path) if Path(path).is_absolute() else self.root / path

    def results(self) -> Iterator[tuple[Job, dict[str, Any] | BaseException]]:
        import ray
        from ray import exceptions as rex

        lost = (
            rex.WorkerCrashedError,
            rex.NodeDiedError,
            rex.ObjectLostError,
            rex.OwnerDiedError,
            rex.LocalRayletDiedError,
            rex.RaySystemError,
        )
        while self.running:
            ready, _ = ray.wait(list(self.running), num_returns=1, timeout=1.0)
            for ref in ready:
                job, attempt = self.running.pop(ref)
                try:
                    outcome = ray.get(ref)
                except (rex.TaskCancelledError, KeyboardInterrupt):
                    continue
                except lost as exc:
                    self.attempts[job.name].append(f"lost: {type(exc).__name__}")
                    if attempt < self.options.retries:
                        print(
                            f"acrl: warning: {job.name}: its worker or node died ({type(exc).__name__}); "
                            f"retrying from its latest checkpoint ({attempt + 1} of {self.options.retries})",
                            file=sys.stderr,
                        )
                        self.submit(job)
                    else:
                        yield (
                            job,
                            TrainingError(
                                f"{job.name}: its worker or node died {attempt + 1} times; giving up (last: {exc})"
                            ),
                        )
                    continue
                except rex.RayTaskError as exc:
                    if isinstance(exc.as_instanceof_cause(), SubmittedForOneMachine):
                        self.submit(job)  # now with its files and a sink: not an attempt of the job's own
                        continue
                    yield job, exc.as_instanceof_cause()
                    continue
                self.attempts[job.name].append(outcome["node"])
                if outcome["status"] == "done":
                    self._finished(job, outcome["result"])
                    yield job, outcome["result"]
                else:  # its worker was signalled, not by `stop`: it checkpointed, so it continues from there
                    self.submit(job)

    def stop(self) -> None:
        """Cancel each running task with Ray's non-forcing cancel, which raises acrl's own signal path
        in the task (the iteration finishes, latest.pt is written and shipped, the task returns);
        wait up to `stop_timeout`, then force-kill. A second Ctrl-C while waiting kills at once."""
        import ray

        refs = list(self.running)
        for ref in refs:
            ray.cancel(ref, force=False)
        pending = refs
        try:
            pending = ray.wait(refs, num_returns=len(refs), timeout=self.options.stop_timeout)[1]
        except KeyboardInterrupt:
            pass
        for ref in pending:  # only those still running: cancelling a finished task confuses Ray's bookkeeping
            ray.cancel(ref, force=True)
        self.running.clear()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        import ray

        if self.running:
            self.stop()
        self._shutdown(ray)

    def _shutdown(self, ray: Any) -> None:
        if self.started_ray:
            ray.shutdown()
            self.started_ray = False


GCS_PROBE = (
    "import json, sys, ray._raylet; from ray._common.usage.usage_lib import get_cluster_metadata; "
    "print(json.dumps(get_cluster_metadata(ray._raylet.GcsClient(address=sys.argv[1]))))"
)
"""Prints the cluster metadata (Ray and Python versions) a Ray head at argv[1] holds."""


def cluster_metadata(address: str) -> dict[str, Any]:
    """The metadata of the Ray cluster whose head's GCS is at `address` ({"ray_version",
    "python_version", ...}), asked in a subprocess that may take `CONNECT_TIMEOUT_S` seconds
    (Ray's own client waits 40 s and prints its C++ warnings before it gives up on a port that
    is not a GCS).

    Raises:
        InputError: no answer as a Ray head within `CONNECT_TIMEOUT_S`.
    """
    import json

    try:
        probe = subprocess.run(
            [sys.executable, "-c", GCS_PROBE, address], capture_output=True, text=True, timeout=CONNECT_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        probe = None
    if probe is None or probe.returncode != 0:
        raise InputError(
            f"{address} answers, but not as the head of a Ray cluster within {CONNECT_TIMEOUT_S:.0f} s "
            "(the GCS port `ray start --head` prints, 6379 by default); check --address, or drop it to "
            "run on this machine."
        )
    return json.loads(probe.stdout.strip().splitlines()[-1])


def check_versions(address: str, metadata: dict[str, Any]) -> None:
    """Raise `InputError` unless the cluster at `address` runs this driver's Ray and Python
    (`cluster_metadata`), which Ray requires of every process that joins it; say what was found."""
    import platform

    import ray

    found = (metadata.get("ray_version"), metadata.get("python_version"))
    here = (ray.__version__, platform.python_version())
    if found != here:
        raise InputError(
            f"the Ray cluster at {address} runs Ray {found[0]} on Python {found[1]}, this driver Ray "
            f"{here[0]} on Python {here[1]}; join a cluster started from acrl's environment (`ray start "
            "--head` there), or drop --address to run on this machine."
        )


def _acrl_version() -> str:
    """acrl's version where this runs (a Ray task: the cluster's workers)."""
    from acrl.core.version import __version__ as version

    return version


class SubmittedForOneMachine(RuntimeError):
    """A job submitted while every node was the driver's machine landed on another one (it joined since)."""


class Sink:
    """A Ray actor on the driver's node: writes shipped files into the driver's sweep directory."""

    def __init__(self, root: str):
        self.root = Path(root)

    def write(self, files: dict[str, bytes]) -> None:
        write_files(self.root, files)


def _task(job: Job, root: str, driver_ip: str, sink: Any, inputs: dict[str, Any], current: Any) -> dict[str, Any]:
    """A job's Ray task (`run_job_here`): `inputs` and `current` are object refs of {key: bytes}
    bundles, read only on another machine than the driver's. Adds the node it ran on."""
    import ray

    node = ray.get_runtime_context().get_node_id()
    if ray.util.get_node_ip_address() == driver_ip:
        return {**run_job_here(job, Path(root)), "node": node}
    if sink is None:
        raise SubmittedForOneMachine(
            f"{job.name} landed on {ray.util.get_node_ip_address()}, a machine that joined "
            "after it was submitted; it is submitted again with its files"
        )
    files: dict[str, bytes] = {}
    for ref in [*inputs.values(), *([current] if current is not None else [])]:
        files.update(ray.get(ref))
    outcome = run_job_here(job, Path(root), files, lambda changed: ray.get(sink.write.remote(changed)))
    return {**outcome, "node": node}


def executor(root: str | Path, options: ClusterOptions) -> Executor:
    """The executor `options` ask for: a `LocalPool` without an address, else a Ray `Cluster`."""
    return LocalPool(root, options) if options.address is None else Cluster(root, options)


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


def _summary(result: dict[str, Any]) -> str:
    """The numbers of a job's result as "key value, ..." (the line a finished job prints)."""
    return ", ".join(f"{k} {v:g}" for k, v in result.items() if isinstance(v, int | float) and not isinstance(v, bool))


class _StepCounter:
    """Sets a progress bar in steps every `PERIOD_S` seconds, from a thread: the steps of the
    ended jobs plus, per running job, the last step of its metrics.csv files (the largest of
    them: a job's runs advance in lockstep), at most its budget; and after it, how many jobs are done
    (its rate and time left mix jobs whose steps cost very differently, as an experiment's do)."""

    PERIOD_S = 2.0

    def __init__(self, bar: Any, root: Path, size: dict[str, int], ended: set[str]):
        self.bar, self.root, self.size, self.ended = bar, root, size, ended
        self.lock, self.stopped = threading.Lock(), threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopped.wait(self.PERIOD_S):
            self.show()

    def show(self) -> None:
        """Set the bar now."""
        with self.lock:
            self.bar.n = sum(
                steps if name in self.ended else min(steps, _last_step(self.root / name))
                for name, steps in list(self.size.items())
            )
            self.bar.set_postfix_str(f"{len(self.ended)} of {len(self.size)} jobs done", refresh=False)
            self.bar.refresh()

    def close(self) -> None:
        self.stopped.set()
        self.thread.join()


def _last_step(job_dir: Path) -> int:
    """The largest last step of the metrics.csv files under `job_dir` (0 without one)."""
    last = 0
    for path in job_dir.rglob("metrics.csv"):
        try:
            with path.open("rb") as f:
                f.seek(max(0, path.stat().st_size - 4096))
                lines = f.read().split(b"\n")[:-1]  # whole lines only: the text after the last newline may be partial
        except OSError:
            continue
        rows = [line for line in lines if line[:1].isdigit()]  # not the header
        if rows:
            last = max(last, int(rows[-1].split(b",", 1)[0]))
    return last


SESSIONS = "sessions.json"
"""`run_jobs`' record in its root: {label: [{"started": ISO time, "ended": ISO time, "commit": the code's
commit or None (`acrl.core.provenance.source`)}, ...]}, one entry per call that ran jobs, its end moved on as
each job ends (a call that was killed ends at its last finished job). Entries written before the commit was
recorded lack it."""


def sessions(root: str | Path, label: str) -> list[dict[str, str | None]]:
    """The `run_jobs` calls named `label` that ran jobs in `root`, in order (`SESSIONS`' entries; [] where
    none is recorded). Raises InputError for a record that is not JSON."""
    return _read_sessions(Path(root) / SESSIONS).get(label, [])


def wall_clock_s(root: str | Path, label: str) -> float | None:
    """Seconds that the `run_jobs` calls named `label` ran jobs in `root`, summed over their sessions
    (`SESSIONS`: a run resumed by the same command counts each session's time); None where none is
    recorded (a directory written before the record)."""
    ran = sessions(root, label)
    if not ran:
        return None
    spans = (datetime.fromisoformat(s["ended"]) - datetime.fromisoformat(s["started"]) for s in ran)
    return round(sum(span.total_seconds() for span in spans), 1)


class _Session:
    """This `run_jobs` call's entry in root/SESSIONS, started now; `mark` moves its end to now."""

    def __init__(self, root: Path, label: str):
        self.path, self.label = root / SESSIONS, label
        self.record = _read_sessions(self.path)
        now = _now()
        self.record.setdefault(label, []).append({"started": now, "ended": now, "commit": source()["commit"]})
        self.mark()

    def mark(self) -> None:
        self.record[self.label][-1]["ended"] = _now()
        write_json_atomic(self.path, self.record)


def _read_sessions(path: Path) -> dict[str, list[dict[str, str | None]]]:
    """The record in `path` ({} without one). Raises InputError for a file that is not JSON."""
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path} is not valid JSON ({exc}); it only records how long the jobs ran: delete it to go on."
        ) from None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def run_jobs(
    jobs: list[Job],
    root: str | Path,
    options: ClusterOptions,
    progress: bool = True,
    on_start: Callable[[], None] | None = None,
    label: str = "runs",
) -> dict[str, Any]:
    """Run `jobs` on `executor(root, options)` until each is done; skip those already done (job.json).

    A job with `after` is submitted once those jobs are done (in the list's order among the jobs that
    can start, so list the long ones first); one whose `after` failed is reported as failed, not run.

    Args:
        jobs: jobs with distinct names, each job's `after` naming jobs before it in the list.
        root: the sweep directory on the driver.
        options: where and how they run.
        progress: a progress bar named `label`, over the steps of the jobs' runs where every job
            has its `steps` (else over jobs); the short line per finished job prints either way.
        on_start: called once the executor is up and checked, before the first job starts (a sweep
            writes its sweep.yaml there, so a cluster that cannot be reached leaves nothing).
        label: what the jobs are, for the progress bar (e.g. "offline runs"), and the key of this call's
            time in root/SESSIONS (`wall_clock_s`).
    Returns:
        {job name: its result}, for every job.
    Raises:
        InputError: as `LocalPool` and `Cluster` (before any job starts).
        TrainingError: after every other job has finished, naming the jobs that failed.
        KeyboardInterrupt: Ctrl-C or SIGTERM, once the running jobs have checkpointed (`Executor.stop`).
        ValueError: a job's `after` names a job that is not before it in the list.
    """
    from tqdm import tqdm

    listed: set[str] = set()
    for job in jobs:
        if not listed.issuperset(job.after):
            raise ValueError(f"{job.name} waits for {sorted(set(job.after) - listed)}, which are not listed before it.")
        listed.add(job.name)
    root = Path(root).resolve()
    results = {
        job.name: json.loads((root / job.name / "job.json").read_text())["result"]
        for job in jobs
        if is_done(root, job.name)
    }
    todo = [job for job in jobs if job.name not in results]
    if results:
        print(
            f"{len(results)} of {len(jobs)} {label} finished before; running the other {len(todo)} (the interrupted "
            "ones continue from their checkpoints)",
            file=sys.stderr,
        )
    if not todo:
        if on_start is not None:
            on_start()
        return results
    failures = {}
    in_steps = all(job.steps > 0 for job in jobs)
    size = {job.name: job.steps if in_steps else 1 for job in jobs}
    with (
        executor(root, options) as pool,
        signals_interrupt(),
        tqdm(
            total=sum(size.values()),
            initial=sum(size[name] for name in results),
            desc=label,
            unit="step" if in_steps else "run",
            disable=not progress,
            dynamic_ncols=True,
        ) as bar,
    ):
        if on_start is not None:
            on_start()
        session = _Session(root, label)
        ended: set[str] = set(results)
        waiting = todo

        def submit_ready() -> None:
            """Submit the waiting jobs whose `after` are done; report those whose `after` failed."""
            nonlocal waiting
            still = []
            for job in waiting:  # in the list's order: a job comes after those it waits for
                failed = [name for name in job.after if name in failures]
                if failed:
                    failures[job.name] = TrainingError(f"not run: it needs {', '.join(failed)}, which failed")
                    ended.add(job.name)
                elif all(name in results for name in job.after):
                    pool.submit(job)
                else:
                    still.append(job)
            waiting = still

        submit_ready()
        follow = _StepCounter(bar, root, size, ended) if progress and in_steps else None
        try:
            for job, outcome in pool.results():
                ended.add(job.name)
                if follow is None:
                    bar.update(size[job.name])
                else:
                    follow.show()
                if isinstance(outcome, BaseException):
                    failures[job.name] = outcome
                    tqdm.write(f"acrl: {job.name} failed: {outcome}", file=sys.stderr)
                else:
                    results[job.name] = outcome
                    tqdm.write(f"done {job.name}: {_summary(outcome)}", file=sys.stderr)
                session.mark()
                submit_ready()
        except KeyboardInterrupt:
            print(
                "\nacrl: stopping: each running run writes checkpoints/latest.pt (Ctrl-C again kills them now); "
                "rerun the same command to resume.",
                file=sys.stderr,
                flush=True,
            )
            pool.stop()
            raise
        finally:
            session.mark()  # after a stop: once the running jobs have checkpointed
            if follow is not None:
                follow.close()
    if failures:
        lines = "; ".join(f"{name}: {exc}" for name, exc in failures.items())
        raise TrainingError(
            f"{len(failures)} of {len(jobs)} {label} failed ({lines}). The others are complete; "
            "rerun the same command to retry the failed ones."
        )
    return results
