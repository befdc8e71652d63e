"""Throughput of acrl A3C against the number of worker processes (environment steps per second).

Each configuration trains on --env for --steps-per-worker x workers global steps with
evaluation off, and reports:
- steady steps/s: the global step rate between the first and the last metrics rows (worker
  start-up excluded), the number that should scale with the workers;
- wall s: the whole `learn` call, start-up included;
- steps per worker CPU-second: global steps divided by the CPU time (user + system) the worker
  processes used, from getrusage(RUSAGE_CHILDREN). It does not depend on how many cores other
  programs leave free, so on a shared machine it tells whether the workers slow each other down
  (lock or memory contention) or only lack cores.
Speed-up is the steady rate relative to 1 worker. On a machine with C cores, expect close to
linear scaling up to C workers (the parent process also needs a little CPU for logging).

    python benchmarks/a3c_scaling.py                      # 1 and 2 workers
    python benchmarks/a3c_scaling.py --workers 1 2 4 8 16 # on a bigger machine

Prints a markdown table and writes benchmarks/results/a3c_scaling.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import resource
import shutil
import time
from pathlib import Path

import torch

RESULTS = Path(__file__).parent / "results"


def measure(workers: int, args: argparse.Namespace) -> dict:
    from acrl import A3C, A3CConfig
    from acrl.core.config import preset_values, update_config

    values, _ = preset_values("a3c", args.env, None)
    total = args.steps_per_worker * workers
    config = update_config(A3CConfig(), {**values, "workers": workers, "seed": 0, "total_steps": total,
                                         "eval_freq": 0, "log_freq": max(total // 50, 100),
                                         "start_method": args.start_method},
                           "benchmark")
    run_dir = RESULTS / "tmp" / f"scaling-{workers}"
    shutil.rmtree(run_dir, ignore_errors=True)
    agent = A3C(args.env, config=config)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    agent.learn(run_dir=run_dir, progress=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    worker_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with (run_dir / "metrics.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r.get("time/elapsed_s")]
    first, last = rows[0], rows[-1]
    steady = (float(last["step"]) - float(first["step"])) / max(
        float(last["time/elapsed_s"]) - float(first["time/elapsed_s"]), 1e-9)
    return {"workers": workers, "steps": agent.num_steps, "wall_s": wall, "steady_steps_per_s": steady,
            "overall_steps_per_s": agent.num_steps / wall, "worker_cpu_s": worker_cpu,
            "steps_per_worker_cpu_s": agent.num_steps / max(worker_cpu, 1e-9)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--steps-per-worker", type=int, default=20_000)
    parser.add_argument("--start-method", default="fork")
    parser.add_argument("--out", type=Path, default=RESULTS / "a3c_scaling.json")
    args = parser.parse_args()
    torch.set_num_threads(1)

    results = []
    for workers in args.workers:
        results.append(measure(workers, args))
        print(f"{results[-1]}", flush=True)
    base = next((r["steady_steps_per_s"] for r in results if r["workers"] == 1), None)
    cpus = len(os.sched_getaffinity(0))
    lines = [f"A3C throughput on {args.env} ({args.steps_per_worker:,} steps per worker, {cpus} CPUs, "
             f"start method {args.start_method}, load average {os.getloadavg()[0]:.1f} at the end)", "",
             "| workers | steps | wall s | steady steps/s | speed-up vs 1 | steps per worker CPU-s |",
             "|---|---|---|---|---|---|"]
    for r in results:
        speedup = "-" if base is None else f"{r['steady_steps_per_s'] / base:.2f}x"
        r["speedup"] = None if base is None else r["steady_steps_per_s"] / base
        lines.append(f"| {r['workers']} | {r['steps']:,} | {r['wall_s']:.1f} | {r['steady_steps_per_s']:,.0f} | "
                     f"{speedup} | {r['steps_per_worker_cpu_s']:,.0f} |")
    print("\n".join(lines))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "benchmark": "a3c_scaling", "settings": {k: str(v) for k, v in vars(args).items()},
        "machine": {"cpus": cpus, "platform": platform.platform(), "torch": torch.__version__,
                    "load_average_at_end": os.getloadavg()},
        "results": results}, indent=2) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
