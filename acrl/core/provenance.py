"""Where a result came from: the block `meta` that every experiment summary and benchmark result holds.

`provenance()` records the command that produced the result, the commit of the acrl checkout it ran
from (and whether acrl/ had uncommitted changes), the date, the CPU, the load average before and after,
and the versions of the libraries involved; benchmarks/report.py prints it above each table. A run
that outlives one session (an experiment resumed by the same command) takes its `source()` when it
starts, so the commit it records is the code its jobs ran, whatever was committed while they ran.
`Session` records each session of work in a directory's sessions.json (a training run's, under the label
"train": its steps, commit, CPU and load; `acrl.sweep.executor.run_jobs`' calls, under theirs), from which
`wall_clock_s` sums the time a result took across the sessions that resumed it.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from acrl.core.errors import InputError
from acrl.core.files import write_json_atomic

CHECKOUT = Path(__file__).resolve().parents[2]
"""The directory that holds the acrl package: its git checkout when installed editable (`./run setup`)."""

LIBRARIES = ("acrl", "torch", "numpy", "gymnasium")
"""The distributions whose versions every record holds."""


def load_average() -> list[float]:
    """The 1-, 5- and 15-minute load averages (`os.getloadavg`): runnable processes, not a percentage."""
    return list(os.getloadavg())


def _git(*args: str) -> str:
    if not (CHECKOUT / ".git").exists():  # an installed copy: no commit, not the commit of a repository around it
        return ""
    try:
        return subprocess.run(["git", *args], cwd=CHECKOUT, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def source() -> dict[str, Any]:
    """The code that runs now: {"commit": the checkout's HEAD (40 hex digits), or None outside a git
    checkout (a wheel install) or without git, "dirty": acrl/ differs from that commit (bool)}."""
    return {
        "commit": _git("rev-parse", "HEAD") or None,
        "dirty": bool(_git("status", "--porcelain", "--", "acrl")),
    }


def command_line() -> str:
    """How this process was started, as one would type it again: `acrl ARGS` for the console script,
    `python -m acrl ARGS`, else `python SCRIPT ARGS` with SCRIPT relative to `CHECKOUT` when inside it
    (`python benchmarks/NAME.py ARGS`)."""
    script, args = (sys.argv or [""])[0], sys.argv[1:]
    if Path(script).name == "acrl":
        return shlex.join(["acrl", *args])
    if Path(script).resolve() == CHECKOUT / "acrl" / "__main__.py":
        return shlex.join(["python", "-m", "acrl", *args])
    path = Path(script).resolve() if script else None
    shown = os.path.relpath(path, CHECKOUT) if path and path.is_relative_to(CHECKOUT) else script or "-"
    return shlex.join(["python", shown, *args])


CPU_EXTENSIONS = {"avx512f": "AVX-512", "avx512_bf16": "AVX512-BF16", "amx_bf16": "AMX-BF16"}
"""x86 flags of /proc/cpuinfo that change how fast torch computes, as `cpu_model` names them; without AVX-512 it
names AVX2 where the CPU has it."""


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU as a result records it: the first processor's model name, then, where Linux gives them, its vendor,
    family and model numbers and its vector extensions (`CPU_EXTENSIONS`, else AVX2), e.g. "AMD EPYC (AuthenticAMD
    family 25 model 1; AVX2)": a virtual machine's model name alone ("AMD EPYC") does not tell Zen 3 from Zen 4.
    Without /proc/cpuinfo, what `platform` knows."""
    try:
        text = cpuinfo.read_text().split("\n\n")[0]
    except OSError:
        text = ""
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    name = fields.get("model name")
    if name is None:
        return platform.processor() or platform.machine()
    details = []
    if all(key in fields for key in ("vendor_id", "cpu family", "model")):
        details.append(f"{fields['vendor_id']} family {fields['cpu family']} model {fields['model']}")
    flags = fields.get("flags", "").split()
    extensions = [label for flag, label in CPU_EXTENSIONS.items() if flag in flags]
    if not extensions and "avx2" in flags:
        extensions = ["AVX2"]
    if extensions:
        details.append(", ".join(extensions))
    return f"{name} ({'; '.join(details)})" if details else name


def provenance(
    load_before: list[float] | None,
    libraries: Iterable[str] = (),
    origin: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The conditions of a run, to store as `meta` in its result.

    Args:
        load_before: `load_average()` taken before the work started (the load after is read now); None for
            a result that measures nothing (a merge of parts): both loads are then None.
        libraries: distribution names beyond `LIBRARIES` whose versions matter (the peer:
            "stable-baselines3", "mujoco", ...); one not installed is recorded as None.
        origin: `source()` taken when the work started (default: now).

    Returns:
        {"command": `command_line()`, "commit": full hash or None, "dirty": acrl/ had uncommitted changes,
        "date": now, UTC ISO 8601 to the second, "cpu": `cpu_model()`, "cores": CPUs this process may use,
        "platform": platform.platform(), "python": version, "load_average_before" and "load_average_after":
        [1, 5, 15 min] or None, "versions": {distribution: version or None}}.
    """
    versions: dict[str, str | None] = {}
    for name in (*LIBRARIES, *libraries):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "command": command_line(),
        **(origin or source()),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpu": cpu_model(),
        "cores": len(os.sched_getaffinity(0)),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_average_before": None if load_before is None else list(load_before),
        "load_average_after": None if load_before is None else load_average(),
        "versions": versions,
    }


SESSIONS = "sessions.json"
"""The record of the sessions that worked in a directory: {label: [{"started": ISO time, "ended": ISO time,
"commit": the code's commit or None (`source`), ...the fields the label's writer adds}, ...]}, one entry per
session, its end moved on as the work advances (a session that was killed ends at its last mark). Entries
written before the commit was recorded lack it."""


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _read_sessions(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The record in `path` ({} without one). Raises InputError for a file that is not JSON."""
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path} is not valid JSON ({exc}); it only records how long the work ran: delete it to go on."
        ) from None


def sessions(root: str | Path, label: str) -> list[dict[str, Any]]:
    """The sessions named `label` that worked in `root`, in order (`SESSIONS`' entries; [] where none is
    recorded). Raises InputError for a record that is not JSON."""
    return _read_sessions(Path(root) / SESSIONS).get(label, [])


def session_seconds(session: dict[str, Any]) -> float:
    """Seconds one session worked: its "ended" less its "started" (a `SESSIONS` entry's ISO times)."""
    span = datetime.datetime.fromisoformat(session["ended"]) - datetime.datetime.fromisoformat(session["started"])
    return span.total_seconds()


def wall_clock_s(root: str | Path, label: str) -> float | None:
    """Seconds that the sessions named `label` worked in `root`, summed (`SESSIONS`: work resumed by the same
    command counts each session's time); None where none is recorded (a directory written before the record)."""
    ran = sessions(root, label)
    if not ran:
        return None
    return round(sum(session_seconds(s) for s in ran), 1)


class Session:
    """This session's entry in root/`SESSIONS` under `label`, started now and written at once; `mark` moves its
    end to now. `fields` are stored in the entry beside "started", "ended" and "commit"; `mark(**fields)` updates
    them. Raises InputError where the existing record is not JSON."""

    def __init__(self, root: str | Path, label: str, **fields: Any):
        self.path, self.label = Path(root) / SESSIONS, label
        self.record = _read_sessions(self.path)
        now = _now()
        self.record.setdefault(label, []).append({"started": now, "ended": now, "commit": source()["commit"], **fields})
        self.mark()

    def mark(self, **fields: Any) -> None:
        """Move this session's end to now, update `fields`, and rewrite the record (atomically)."""
        self.record[self.label][-1].update(ended=_now(), **fields)
        write_json_atomic(self.path, self.record)
