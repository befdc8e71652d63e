"""Jobs on Ray: every run of a sweep, a search or an experiment is a Ray task.

Ray Core rather than Ray Tune: an acrl run already owns its checkpoints, resume, metrics and
evaluation (`acrl.core.loop`), so a sweep needs from Ray only what a plain task gives, a process
with its CPU and GPU share on some node, plus a way home for the files. Tune's trainables,
checkpoint manager and storage sync would be a second copy of each.

How a job runs (`Cluster.submit`, then `Cluster.results`):

- A `Job` is a module-level function and its keyword arguments; it writes everything under
  `root/name` (one acrl run directory, or several) and returns a small JSON-ready result. The
  driver writes that result to `root/name/job.json`, the mark of a finished job: a rerun skips it.
- On the driver's machine (same IP address) the task writes straight into the sweep directory.
  On another machine it writes the same paths on its own disk, and after every checkpoint
  (`Callback.on_checkpoint`) and at its end it ships the files that changed to a `Sink` actor
  pinned to the driver's node (started once the cluster has a second machine), which writes them
  into the driver's sweep directory atomically.
  Its inputs (datasets, an unfinished run's checkpoint) travel the other way through Ray's
  object store. So the driver always holds every job's latest checkpoint, whatever the
  filesystem.
- A task whose worker process or node dies is submitted again (at most `retries` times) with
  what the driver holds, so it resumes from its latest checkpoint, on whichever node has room.
  An error raised by the job itself (bad input, a NaN) is not retried: it would happen again.
- Ctrl-C (`Cluster.stop`): each running task is cancelled with Ray's non-forcing cancel, which
  raises acrl's own signal path in the task: the iteration finishes, latest.pt is written and
  shipped, and the task returns. A second Ctrl-C, or `stop_timeout` seconds, force-kills them.
  A local Ray instance that `Cluster` started is shut down on leaving, so nothing keeps running.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acrl.core.errors import InputError, TrainingError
from acrl.core.files import write_bytes_atomic, write_json_atomic
from acrl.core.loop import Callback

EXTRA_HINT = "install acrl's ray extra: pip install -e '.[ray]' (./run setup does)"
CONNECT_TIMEOUT_S = 10.0
"""How long `--address HOST:PORT` may take to answer before the sweep gives up (exit 2)."""


def require(module: str, purpose: str) -> Any:
    """Import an optional dependency of the ray extra (ray, optuna, rliable) or raise `InputError`.

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
    """One unit of work: `fn(root, root / name, callbacks, **kwargs)` in a Ray task.

    Attributes:
        name: the job's directory under the sweep root (e.g. "CartPole-v1-learning_rate=0.001-s0").
        fn: a module-level function (Ray pickles it by reference) that writes under its job
            directory, passes `callbacks` to every run it trains, and returns a JSON-ready dict.
        kwargs: its other arguments; paths inside the sweep are relative to the root.
        inputs: files it reads, absolute or relative to the root (shipped to another machine).
    """

    name: str
    fn: Callable[..., dict[str, Any]]
    kwargs: dict[str, Any] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClusterOptions:
    """Where and how jobs run.

    Attributes:
        address: None for a local Ray instance with one CPU per core (`os.cpu_count()`), "auto"
            for the cluster `ray start` runs on this machine, or "HOST:PORT" of a cluster's head.
        cpus_per_job: CPUs Ray reserves for each job (also each run's torch threads).
        gpus_per_job: GPUs Ray reserves for each job (> 0: the run's device is "cuda").
        retries: times a job whose process or node died is submitted again.
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
            raise InputError(f"--cpus-per-run must be > 0 and --gpus-per-run >= 0, got {self.cpus_per_job} and "
                             f"{self.gpus_per_job}.")
        if self.retries < 0:
            raise InputError(f"--retries must be >= 0, got {self.retries}.")
        if self.address is None and self.cpus_per_job > os.cpu_count():  # said before Ray starts
            raise InputError(f"each run asks for {self.cpus_per_job:g} CPU, but this machine, where the local Ray "
                             f"instance runs, has {os.cpu_count()}; lower --cpus-per-run or join a cluster with "
                             "--address.")


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


def run_job_here(job: Job, work_root: Path, files: dict[str, bytes] | None = None,
                 sink: Callable[[dict[str, bytes]], None] | None = None) -> dict[str, Any]:
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


class Cluster:
    """Ray, connected or started, with the sweep's sink actor; a context manager.

    Args:
        root: the sweep directory on the driver.
        options: `ClusterOptions`.
    Raises (on entering):
        InputError: Ray not installed, an address that does not answer within
            `CONNECT_TIMEOUT_S`, or a job's resources larger than any node of the cluster has.
    """

    def __init__(self, root: str | Path, options: ClusterOptions):
        options.validate()
        self.root, self.options = Path(root).resolve(), options
        self.started_ray = False
        self.running: dict[Any, tuple[Job, int]] = {}
        self.attempts: dict[str, list[str]] = {}
        self.input_refs: dict[str, Any] = {}

    def __enter__(self) -> Cluster:
        ray = require("ray", "acrl sweep")
        try:
            if not ray.is_initialized():
                self._connect(ray)
            self._check_resources(ray)
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            self.driver_node = ray.get_runtime_context().get_node_id()
            self.driver_ip = ray.util.get_node_ip_address()
            self.pinned = NodeAffinitySchedulingStrategy(node_id=self.driver_node, soft=False)
            self.sink = None  # started with the first job that may land on another machine
            self.task = ray.remote(num_cpus=self.options.cpus_per_job, num_gpus=self.options.gpus_per_job,
                                   max_retries=0)(_task)
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
        if address != "auto":
            host, _, port = address.rpartition(":")
            if not host or not port.isdigit():
                raise InputError(f"--address must be auto or HOST:PORT (the head's GCS port, 6379 by default), "
                                 f"got {address!r}.")
            try:
                socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
            except OSError as exc:
                raise InputError(f"no Ray cluster answers at {address} within {CONNECT_TIMEOUT_S:.0f} s ({exc}); "
                                 "start one with `ray start --head` there, or drop --address to run on this "
                                 "machine.") from None
        try:
            ray.init(address=address, **{k: v for k, v in quiet.items() if k != "include_dashboard"})
        except ConnectionError as exc:
            raise InputError(f"could not join the Ray cluster at --address {address}: {exc} Start one with "
                             "`ray start --head`, or drop --address to run on this machine.") from None

    def _check_resources(self, ray: Any) -> None:
        cpus, gpus = self.options.cpus_per_job, self.options.gpus_per_job
        nodes = [n["Resources"] for n in ray.nodes() if n["Alive"]]
        if not any(r.get("CPU", 0) >= cpus and r.get("GPU", 0) >= gpus for r in nodes):
            largest = max(((r.get("CPU", 0), r.get("GPU", 0)) for r in nodes), default=(0, 0))
            raise InputError(f"each run asks for {cpus:g} CPU and {gpus:g} GPU, but the largest node of the cluster "
                             f"has {largest[0]:g} CPU and {largest[1]:g} GPU; lower --cpus-per-run / "
                             "--gpus-per-run.")

    def submit(self, job: Job) -> None:
        """Start `job` (or start it again) with what the driver holds of its directory."""
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
        """Yield (job, outcome) as jobs end: outcome is the job's result dict (also written to
        job.json), or the exception of a job that failed for good. Retries jobs whose process
        or node died, and jobs whose worker was interrupted other than by `stop`. Jobs
        interrupted by `stop` are not yielded."""
        import ray
        from ray import exceptions as rex

        lost = (rex.WorkerCrashedError, rex.NodeDiedError, rex.ObjectLostError, rex.OwnerDiedError,
                rex.LocalRayletDiedError, rex.RaySystemError)
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
                        print(f"acrl: warning: {job.name}: its worker or node died ({type(exc).__name__}); "
                              f"retrying from its latest checkpoint ({attempt + 1} of {self.options.retries})",
                              file=sys.stderr)
                        self.submit(job)
                    else:
                        yield job, TrainingError(f"{job.name}: its worker or node died {attempt + 1} times; "
                                                 f"giving up (last: {exc})")
                    continue
                except rex.RayTaskError as exc:
                    if isinstance(exc.as_instanceof_cause(), SubmittedForOneMachine):
                        self.submit(job)  # now with its files and a sink: not an attempt of the job's own
                        continue
                    yield job, exc.as_instanceof_cause()
                    continue
                self.attempts[job.name].append(outcome["node"])
                if outcome["status"] == "done":
                    write_json_atomic(self.root / job.name / "job.json",
                                      {"result": outcome["result"], "attempts": self.attempts[job.name]})
                    yield job, outcome["result"]
                else:  # its worker was signalled, not by `stop`: it checkpointed, so it continues from there
                    self.submit(job)

    def stop(self) -> None:
        """Cancel the running jobs so that each checkpoints; wait up to `stop_timeout`, then kill.

        A KeyboardInterrupt while waiting (a second Ctrl-C) kills them at once.
        """
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
        raise SubmittedForOneMachine(f"{job.name} landed on {ray.util.get_node_ip_address()}, a machine that joined "
                                     "after it was submitted; it is submitted again with its files")
    files: dict[str, bytes] = {}
    for ref in [*inputs.values(), *([current] if current is not None else [])]:
        files.update(ray.get(ref))
    outcome = run_job_here(job, Path(root), files, lambda changed: ray.get(sink.write.remote(changed)))
    return {**outcome, "node": node}


def run_jobs(jobs: list[Job], root: str | Path, options: ClusterOptions, progress: bool = True,
             on_start: Callable[[], None] | None = None) -> dict[str, Any]:
    """Run `jobs` on Ray (`Cluster`) until each is done; skip those already done (job.json).

    Args:
        jobs: jobs with distinct names.
        root: the sweep directory on the driver.
        options: where and how they run.
        progress: a progress bar over jobs, and a line per finished job.
        on_start: called once Ray is up and checked, before the first job starts (a sweep
            writes its sweep.yaml there, so a cluster that cannot be reached leaves nothing).
    Returns:
        {job name: its result}, for every job.
    Raises:
        InputError: as `Cluster` (before any job starts).
        TrainingError: after every other job has finished, naming the jobs that failed.
        KeyboardInterrupt: Ctrl-C, once the running jobs have checkpointed (`Cluster.stop`).
    """
    import json

    from tqdm import tqdm

    root = Path(root).resolve()
    results = {job.name: json.loads((root / job.name / "job.json").read_text())["result"]
               for job in jobs if is_done(root, job.name)}
    todo = [job for job in jobs if job.name not in results]
    if results and progress:
        print(f"{len(results)} of {len(jobs)} runs finished before; running the other {len(todo)} (the interrupted "
              "ones continue from their checkpoints)", file=sys.stderr)
    if not todo:
        if on_start is not None:
            on_start()
        return results
    failures = {}
    with Cluster(root, options) as cluster, tqdm(total=len(jobs), initial=len(results), unit="run",
                                                 disable=not progress, dynamic_ncols=True) as bar:
        if on_start is not None:
            on_start()
        for job in todo:
            cluster.submit(job)
        try:
            for job, outcome in cluster.results():
                bar.update(1)
                if isinstance(outcome, BaseException):
                    failures[job.name] = outcome
                    tqdm.write(f"acrl: {job.name} failed: {outcome}", file=sys.stderr)
                else:
                    results[job.name] = outcome
                    if progress:
                        tqdm.write(f"done {job.name}: {json.dumps(outcome)}", file=sys.stderr)
        except KeyboardInterrupt:
            print("\nacrl: stopping the sweep: each running run writes checkpoints/latest.pt (Ctrl-C again kills "
                  "them now); rerun the same command to resume.", file=sys.stderr, flush=True)
            cluster.stop()
            raise
    if failures:
        lines = "; ".join(f"{name}: {exc}" for name, exc in failures.items())
        raise TrainingError(f"{len(failures)} of {len(jobs)} runs failed ({lines}). The others are complete; "
                            "rerun the same command to retry the failed ones.")
    return results
