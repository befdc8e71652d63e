"""Running a list of jobs (`run_jobs`) on the executor `ClusterOptions.address` chooses, and its record.

- `acrl.sweep.local.LocalPool` (no address, the default): each job a process of its own on this
  machine, one per `cpus_per_job` CPUs of it. Needs nothing beyond acrl itself, so `pip install
  acrl` runs `acrl sweep` and the paper's experiments (`acrl experiment`), and Ray is never
  imported: `acrl.sweep.cluster` is imported only when an address asks for it.
- `acrl.sweep.cluster.Cluster` (`--address auto|HOST:PORT`, the `ray` extra): each job a Ray task
  on any node of a Ray cluster. (`acrl tune` uses `Cluster` directly, on a local Ray instance.)

Both keep the contracts of `acrl.sweep.jobs` (job.json, `Job.after`, retries, stops). `run_jobs`
also shows a progress bar over the jobs' steps and records each call that ran jobs in
root/sessions.json (`acrl.core.provenance.Session`), from which `wall_clock_s` sums how long an
experiment took.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acrl.core.errors import TrainingError
from acrl.core.provenance import Session
from acrl.sweep.jobs import ClusterOptions, Executor, Job, is_done, signals_interrupt
from acrl.sweep.local import LocalPool


def executor(root: str | Path, options: ClusterOptions) -> Executor:
    """The executor `options` ask for: a `LocalPool` without an address, else a Ray `Cluster`
    (`acrl.sweep.cluster`, imported only then)."""
    if options.address is None:
        return LocalPool(root, options)
    from acrl.sweep.cluster import Cluster

    return Cluster(root, options)


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
            time in root/sessions.json (`acrl.core.provenance.wall_clock_s`).
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
        session = Session(root, label)
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
