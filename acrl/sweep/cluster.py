"""The Ray cluster: each job a Ray task on any node of a Ray cluster (the `ray` extra).

What `run_jobs` uses with `--address auto|HOST:PORT`, and `acrl tune` without one (a local Ray
instance). Ray Core rather than Ray Tune: an acrl run already owns its checkpoints, resume,
metrics and evaluation (`acrl.core.loop`), so a job needs from Ray only what a plain task gives,
a process with its CPU and GPU share on some node, plus a way home for the files. It keeps the
contracts of `acrl.sweep.jobs`; a job whose worker or node dies is started again from what the
driver holds.

Jobs on the driver's machine (same IP address) write straight into the sweep directory. On
another machine a job writes the same paths on its own disk, and after every checkpoint
(`Callback.on_checkpoint`) and at its end it ships the files that changed to a `Sink` actor
pinned to the driver's node (started once the cluster has a second machine), which writes them
into the driver's sweep directory atomically. Its inputs (datasets, an unfinished run's
checkpoint) travel the other way through Ray's object store. So the driver always holds every
job's latest checkpoint, whatever the filesystem.

Ray is imported inside the functions that use it: importing this module needs no Ray, and
`Cluster` says which extra to install when it is missing. Starting or joining Ray, and the checks
of an address, are `acrl.parts.ray_session`'s, which IMPALA's actors share.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from acrl.core.errors import InputError, TrainingError
from acrl.core.files import write_bytes_atomic
from acrl.core.loop import Callback
from acrl.parts.ray_session import connect, require
from acrl.sweep.jobs import ClusterOptions, Executor, Job, run_job_here


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
        """Ship the job's changed files once a checkpoint is written."""
        self.ship()

    def ship(self) -> None:
        """Send the job directory's files that changed since the last call (by mtime and size) to the sink."""
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


def run_job_elsewhere(
    job: Job, work_root: Path, files: dict[str, bytes], sink: Callable[[dict[str, bytes]], None]
) -> dict[str, Any]:
    """`run_job_here` on another machine than the driver's: `files` written first, and the job
    directory's files that change shipped to `sink` after every checkpoint and at the end (`Shipper`).

    Args:
        job: what to run.
        work_root: the sweep root as this machine writes it.
        files: the job's inputs and its directory as the driver holds it ({key: bytes}, keys as
            `read_files` makes them).
        sink: receives {path relative to the work root: bytes} of the changed files.
    Returns:
        As `run_job_here`.
    """
    write_files(work_root, files)
    shipper = Shipper(sink, work_root, work_root / job.name)
    shipper.ship()  # what it was given is what the driver has: record it as sent
    outcome = run_job_here(job, work_root, [shipper])
    shipper.ship()
    return outcome


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
                self.started_ray = connect(ray, self.options.address)  # if so, leaving shuts it down
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
        """Start `job` as a Ray task, with its input files and current directory bundled when it may land on another
        machine."""
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
        """(job, result or the exception it ended with) as the submitted jobs end, retrying a lost one."""
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


class SubmittedForOneMachine(RuntimeError):
    """A job submitted while every node was the driver's machine landed on another one (it joined since)."""


class Sink:
    """A Ray actor on the driver's node: writes shipped files into the driver's sweep directory."""

    def __init__(self, root: str):
        self.root = Path(root)

    def write(self, files: dict[str, bytes]) -> None:
        """Write {path: bytes} under the driver's sweep directory (a relative path joined to it, an absolute one as
        it is), each atomically (`write_files`)."""
        write_files(self.root, files)


def _task(job: Job, root: str, driver_ip: str, sink: Any, inputs: dict[str, Any], current: Any) -> dict[str, Any]:
    """A job's Ray task: `run_job_here` on the driver's machine, else `run_job_elsewhere` with the
    files of `inputs` and `current` (object refs of {key: bytes} bundles) and `sink`'s `write`.
    Adds the node it ran on."""
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
    outcome = run_job_elsewhere(job, Path(root), files, lambda changed: ray.get(sink.write.remote(changed)))
    return {**outcome, "node": node}
