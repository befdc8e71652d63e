"""A grid of PPO CartPole runs: `acrl sweep` on every core against the same runs one after another.

Both sides train the same runs (the CartPole preset, seeds 0..N-1, --steps each) in the same
invocation, on an otherwise idle machine:

- one after another: `Agent.learn` of each run in this process, as a shell loop of `acrl train`
  would (without its repeated interpreter start, which favours this side);
- sweep: `acrl.sweep.grid.run_sweep` with its defaults (a local Ray instance, one run per core),
  everything included: starting Ray, the worker processes, their imports, shutting Ray down.

Speed-up = sequential wall-clock / sweep wall-clock. Ray's overhead per run, start to first
step, is measured on the sweep's first wave of runs: from the sweep's start to the moment each
run's config.yaml is written (the agent is built, the first iteration begins), less the same
interval for an in-process run (building the agent).

    python benchmarks/sweep_speedup.py                  # 4 runs of 50k steps
    python benchmarks/sweep_speedup.py --runs 8 --steps 100000

Prints a table and writes benchmarks/results/sweep_speedup.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def sequential(root: Path, seeds: list[int], steps: int) -> tuple[float, float]:
    """(wall-clock s of all runs, mean s from the call to config.yaml) in this process."""
    import torch

    from acrl.algos import make_config

    torch.set_num_threads(1)
    started, to_first = time.perf_counter(), []
    for seed in seeds:
        begin = time.time()
        cls, config = make_config("ppo", "CartPole-v1", None, {}, seed=seed, total_steps=steps, device="cpu")
        run_dir = root / f"s{seed}"
        cls(config.env_id, config=config).learn(run_dir=run_dir, progress=False)
        to_first.append((run_dir / "config.yaml").stat().st_mtime - begin)
    return time.perf_counter() - started, sum(to_first) / len(to_first)


def sweep(root: Path, seeds: list[int], steps: int) -> tuple[float, list[float]]:
    """(wall-clock s of the sweep, s from its start to each run's config.yaml, in order)."""
    from acrl.sweep.grid import SweepSpec, run_sweep

    begin = time.time()
    started = time.perf_counter()
    run_sweep(SweepSpec("ppo", ["CartPole-v1"], seeds, {}, total_steps=steps), root, progress=False)
    wall = time.perf_counter() - started
    return wall, sorted((root / f"CartPole-v1-s{seed}" / "config.yaml").stat().st_mtime - begin for seed in seeds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=50_000)
    args = parser.parse_args()
    seeds = list(range(args.runs))
    cores, load = os.cpu_count(), os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        seq_wall, seq_first = sequential(Path(tmp) / "sequential", seeds, args.steps)
        sweep_wall, sweep_first = sweep(Path(tmp) / "sweep", seeds, args.steps)
    first_wave = sweep_first[:cores]
    result = {
        "date": time.strftime("%Y-%m-%d"), "machine": f"{platform.processor() or platform.machine()}, {cores} cores",
        "load_average_before": load, "runs": args.runs, "steps_per_run": args.steps,
        "sequential_wall_s": round(seq_wall, 2), "sweep_wall_s": round(sweep_wall, 2),
        "speedup": round(seq_wall / sweep_wall, 2),
        "in_process_start_to_first_step_s": round(seq_first, 2),
        "sweep_start_to_first_step_s": [round(t, 2) for t in sweep_first],
        "ray_overhead_per_run_s": round(sum(first_wave) / len(first_wave) - seq_first, 2),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "sweep_speedup.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"| {args.runs} PPO CartPole runs x {args.steps} steps, {cores} cores | wall-clock s |")
    print("| --- | ---: |")
    print(f"| one after another | {seq_wall:.1f} |")
    print(f"| acrl sweep (Ray, one run per core) | {sweep_wall:.1f} |")
    print(f"| speed-up | {seq_wall / sweep_wall:.2f}x |")
    print(f"| Ray overhead per run, start to first step | {result['ray_overhead_per_run_s']:.2f} |")


if __name__ == "__main__":
    main()
