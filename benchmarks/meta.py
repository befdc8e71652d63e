"""What every benchmark result records about the run that produced it, and where results go by default.

`bench_meta()` is one block, `meta` in every result file: the command that produced it, the commit
(and whether acrl/ had uncommitted changes), the date, the CPU, the load average before and after
the measurement, and the versions of the libraries involved. benchmarks/report.py prints it above
each table. A benchmark writes to `scratch_path(NAME)` (benchmarks/results/tmp/, git-ignored)
unless `--out` names a file, so a trial run never overwrites a committed result.
"""

from __future__ import annotations

import datetime
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
LIBRARIES = ("acrl", "torch", "numpy", "gymnasium")


def scratch_path(name: str) -> Path:
    """benchmarks/results/tmp/NAME.json: the default `--out` of a benchmark (git-ignored)."""
    return RESULTS / "tmp" / f"{name}.json"


def load_average() -> list[float]:
    """The 1-, 5- and 15-minute load averages (`os.getloadavg`): runnable processes, not a percentage."""
    return list(os.getloadavg())


def _cpu() -> str:
    try:
        return next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def bench_meta(load_before: list[float], libraries: Iterable[str] = ()) -> dict[str, Any]:
    """The conditions of a benchmark run, to store as `meta` in its result.

    Args:
        load_before: `load_average()` taken before the measurement started; the load after is read now.
        libraries: distribution names beyond acrl, torch, numpy and gymnasium whose versions matter
            (the peer: "stable-baselines3", "mujoco", ...); one not installed is recorded as None.

    Returns:
        {"command": this process's command line (`python benchmarks/NAME.py ARGS`), "commit": full hash
        or None, "dirty": acrl/ has uncommitted changes, "date": UTC ISO 8601 to the second, "cpu": model
        name, "cores": CPUs this process may use, "platform": platform.platform(), "python": version,
        "load_average_before" and "load_average_after": [1, 5, 15 min], "versions": {distribution:
        version or None}}.
    """
    versions: dict[str, str | None] = {}
    for name in (*LIBRARIES, *libraries):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    script = os.path.relpath(sys.argv[0], ROOT) if sys.argv[0] else "-"
    return {
        "command": shlex.join(["python", script, *sys.argv[1:]]),
        "commit": _git("rev-parse", "HEAD") or None,
        "dirty": bool(_git("status", "--porcelain", "--", "acrl")),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpu": _cpu(),
        "cores": len(os.sched_getaffinity(0)),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_average_before": list(load_before),
        "load_average_after": load_average(),
        "versions": versions,
    }
