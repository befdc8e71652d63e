"""bfloat16 against float32 in learning (issue #48, item 3): PPO and A3C on MinAtar/Breakout-v1, each with its
MinAtar preset at --steps environment steps, `precision=fp32` and `precision=bf16`, 3 seeds each; the final
evaluation's IQM with its 95% bootstrap CI per precision (`acrl sweep`'s statistic), and whether the CIs overlap.

Each algorithm is one `acrl sweep` (`--set "precision=[fp32, bf16]"`) into --runs/ALGO: PPO one CPU per run (two
runs side by side on 2 cores), A3C two (its 2 workers). A sweep directory that holds finished runs is read and an
unfinished one resumed, as `acrl sweep` does with its --out. The learning is what is compared, not the speed:
`benchmarks/precision.py` times the updates.

    python benchmarks/precision_parity.py --runs ~/runs/bf16-parity --out benchmarks/results/precision_parity.json

Writes --out (default benchmarks/results/tmp/precision_parity.json) with `provenance()` (command, commit, date, CPU,
load average before and after, versions), the sweeps' commands and their results.json tables.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

from meta import scratch_path

from acrl.core.files import write_json_atomic
from acrl.core.provenance import load_average, provenance

ENV = "MinAtar/Breakout-v1"
SWEEPS = {"ppo": (1, []), "a3c": (2, ["workers=2"])}
"""Each algorithm's CPUs per run and --set values besides the precision grid."""


def sweep_command(algo: str, steps: int, out: Path) -> list[str]:
    """The `acrl sweep` arguments of `algo`'s fp32 and bf16 runs, 3 seeds, into `out`."""
    cpus, values = SWEEPS[algo]
    return [
        *("sweep", algo, "--env", ENV, "--seeds", "0", "1", "2", "--total-steps", str(steps)),
        *("--cpus-per-run", str(cpus), "--set", *values, "precision=[fp32, bf16]"),
        *("--out", str(out), "--no-progress"),
    ]


def overlap(a: list[float], b: list[float]) -> bool:
    """Whether the intervals [a0, a1] and [b0, b1] share a point."""
    return a[0] <= b[1] and b[0] <= a[1]


def main(argv: list[str] | None = None) -> int:
    """Run (or read) the two sweeps and write the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, required=True, help="the sweeps' parent directory (outside the checkout)")
    parser.add_argument("--steps", type=int, default=1_000_000, help="environment steps per run")
    parser.add_argument("--algos", nargs="+", default=list(SWEEPS), choices=list(SWEEPS))
    parser.add_argument("--out", type=Path, default=scratch_path("precision_parity"))
    args = parser.parse_args(argv)
    load_before = load_average()
    result = {"meta": provenance(load_before), "env_id": ENV, "steps": args.steps, "algos": {}}
    for algo in args.algos:
        command = sweep_command(algo, args.steps, args.runs / algo)
        subprocess.run([sys.executable, "-m", "acrl", *command], check=True)
        table = json.loads((args.runs / algo / "results.json").read_text())["table"]
        rows = {row["config"]: row for row in table}
        fp32, bf16 = (next(row for name, row in rows.items() if f"precision={p}" in name) for p in ("fp32", "bf16"))
        result["algos"][algo] = {
            "command": shlex.join(["acrl", *command[:-3], "--out", f"RUNS/{algo}"]),
            "table": table,
            "iqm": {"fp32": fp32["iqm"], "bf16": bf16["iqm"]},
            "iqm_ci": {"fp32": fp32["iqm_ci"], "bf16": bf16["iqm_ci"]},
            "cis_overlap": overlap(fp32["iqm_ci"], bf16["iqm_ci"]),
        }
    result["meta"]["load_average_after"] = load_average()
    write_json_atomic(args.out, result)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
