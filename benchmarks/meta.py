"""Where benchmark results go by default, and the repository's folders the benchmarks name.

Every result records the run that produced it as `meta`: `acrl.core.provenance.provenance()` (the
command, the commit, the date, the CPU, the load average before and after, the versions), which
benchmarks/report.py prints above each table. A benchmark writes to `scratch_path(NAME)`
(benchmarks/results/tmp/, git-ignored) unless `--out` names a file, so a trial run never overwrites a
committed result.

A peer library whose packages acrl's venv lacks (d3rlpy, RLlib) runs in a venv of its own under benchmarks/
(`ensure_venv`), in a subprocess that runs the benchmark's own script with a hidden worker option and prints
its result as JSON (`run_worker`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def scratch_path(name: str) -> Path:
    """benchmarks/results/tmp/NAME.json: the default `--out` of a benchmark (git-ignored)."""
    return RESULTS / "tmp" / f"{name}.json"


def ensure_venv(venv: Path, imports: str, packages: list[str]) -> Path:
    """VENV/bin/python, creating the venv (`python -m venv`) and `pip install`ing `packages` into it first unless
    it already imports `imports` (a comma-separated module list, e.g. "d3rlpy, mujoco").

    Raises:
        RuntimeError: venv creation or pip failed (its output is in the message).
    """
    python = venv / "bin" / "python"
    check = [str(python), "-c", f"import {imports}"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    steps = [[sys.executable, "-m", "venv", str(venv)], [str(python), "-m", "pip", "install", "-q", *packages]]
    for command in steps:
        if command[0] == sys.executable and python.exists():
            continue
        print("+", " ".join(command), file=sys.stderr)
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"setting up {venv} failed ({' '.join(command)}):\n{done.stdout}\n{done.stderr}")
    return python


def run_worker(python: Path, script: str, option: str, spec: dict) -> dict:
    """`python script option JSON(spec)`: a benchmark's worker (its hidden `option`, e.g. "--rllib-worker") in a
    peer's venv, without acrl's PYTHONPATH (that venv has no acrl); the result dict it prints last as JSON.

    Raises:
        RuntimeError: the worker failed (the end of its stderr is in the message).
    """
    env = {**os.environ, "PYTHONPATH": ""}
    done = subprocess.run([str(python), script, option, json.dumps(spec)], capture_output=True, text=True, env=env)
    if done.returncode:
        raise RuntimeError(f"{Path(script).name} {option} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
