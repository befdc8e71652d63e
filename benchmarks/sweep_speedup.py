"""A grid of PPO CartPole runs: `acrl sweep` on every core against the same runs one after another.

Every side trains the same runs (the CartPole preset, seeds 0..N-1, --steps each) in the same
invocation, on an otherwise idle machine:

- a shell loop: `acrl train` once per run, one after another, what a user types without a sweep
  tool (each run pays its interpreter start and imports);
- in-process: `Agent.learn` of each run one after another in this process (no start-up at all,
  the strictest baseline);
- sweep: `acrl.sweep.grid.run_sweep` with its defaults (a local Ray instance, one run per core),
  everything included: starting Ray, the worker processes, their imports, shutting Ray down.

Speed-up = sequential wall-clock / sweep wall-clock, against each baseline. Ray's overhead per run, start to first
step, is measured on the sweep's first wave of runs: from the sweep's start to the moment each
run's config.yaml is written (the agent is built, the first iteration begins), less the same
interval for an in-process run (building the agent). The last row compares a run's own duration
alone (in-process) and beside another (in the sweep): what two runs on two cores cost each other.

The three ways alternate their order: the sweep last in even repeats, first in odd ones.

    python benchmarks/sweep_speedup.py --out benchmarks/results/sweep_speedup.json   # 4 runs of 200k steps, 3 repeats
    python benchmarks/sweep_speedup.py --runs 2 --steps 2000 --repeats 1             # a check in seconds

Prints a table and writes --out (default benchmarks/results/tmp/sweep_speedup.json) with
`provenance()`: commit, date, CPU, load average before and after, versions.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from meta import scratch_path

from acrl.core.files import write_json_atomic
from acrl.core.provenance import load_average, provenance


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


def shell_loop(root: Path, seeds: list[int], steps: int) -> float:
    """Wall-clock s of `acrl train` run once per seed, one after another."""
    import subprocess
    import sys

    started = time.perf_counter()
    for seed in seeds:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "acrl",
                "train",
                "ppo",
                "--env",
                "CartPole-v1",
                "--seed",
                str(seed),
                "--total-steps",
                str(steps),
                "--device",
                "cpu",
                "--run-dir",
                str(root / f"s{seed}"),
                "--no-progress",
            ],
            check=True,
            capture_output=True,
        )
    return time.perf_counter() - started


def sweep(root: Path, seeds: list[int], steps: int) -> tuple[float, list[float], list[float]]:
    """(wall-clock s of the sweep, s from its start to each run's config.yaml, in order, and each
    run's own duration, config.yaml to eval.json)."""
    from acrl.sweep.grid import run_sweep
    from acrl.sweep.spec import SweepSpec

    begin = time.time()
    started = time.perf_counter()
    run_sweep(SweepSpec("ppo", ["CartPole-v1"], seeds, {}, total_steps=steps), root, progress=False)
    wall = time.perf_counter() - started
    runs = [root / f"CartPole-v1-s{seed}" for seed in seeds]
    durations = [(r / "eval.json").stat().st_mtime - (r / "config.yaml").stat().st_mtime for r in runs]
    return wall, sorted((r / "config.yaml").stat().st_mtime - begin for r in runs), durations


def measure(seeds: list[int], steps: int, cores: int, reverse: bool) -> dict[str, float]:
    """One repeat: the three ways, one after another (shell loop, in-process, sweep; `reverse`: the other way round)."""
    with tempfile.TemporaryDirectory() as tmp:
        ways = {
            "loop": lambda: shell_loop(Path(tmp) / "loop", seeds, steps),
            "sequential": lambda: sequential(Path(tmp) / "sequential", seeds, steps),
            "sweep": lambda: sweep(Path(tmp) / "sweep", seeds, steps),
        }
        done = {name: ways[name]() for name in (reversed(ways) if reverse else ways)}
    loop_wall, (seq_wall, seq_first), (sweep_wall, sweep_first, sweep_runs) = (
        done["loop"],
        done["sequential"],
        done["sweep"],
    )
    first_wave = sweep_first[:cores]
    return {
        "shell_loop_wall_s": loop_wall,
        "in_process_wall_s": seq_wall,
        "sweep_wall_s": sweep_wall,
        "speedup_over_shell_loop": loop_wall / sweep_wall,
        "speedup_over_in_process": seq_wall / sweep_wall,
        "ray_overhead_per_run_s": sum(first_wave) / len(first_wave) - seq_first,
        "run_s_alone": seq_wall / len(seeds),
        "run_s_in_sweep": sum(sweep_runs) / len(sweep_runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--out",
        type=Path,
        default=scratch_path("sweep_speedup"),
        help="result file (default: the scratch folder benchmarks/results/tmp/)",
    )
    args = parser.parse_args()
    seeds = list(range(args.runs))
    cores, load_before = len(os.sched_getaffinity(0)), load_average()
    repeats = [measure(seeds, args.steps, cores, reverse=repeat % 2 == 1) for repeat in range(args.repeats)]
    median = {key: round(statistics.median(r[key] for r in repeats), 2) for key in repeats[0]}
    result = {
        "meta": provenance(load_before, ["ray"]),
        "runs": args.runs,
        "steps_per_run": args.steps,
        "median": median,
        "repeats": [{k: round(v, 2) for k, v in r.items()} for r in repeats],
    }
    write_json_atomic(args.out, result)
    print(f"| {args.runs} PPO CartPole runs x {args.steps} steps, {cores} cores, median of {args.repeats} | |")
    print("| --- | ---: |")
    print(f"| one after another: `acrl train` in a shell loop | {median['shell_loop_wall_s']:.1f} s |")
    print(f"| one after another: `Agent.learn` in one process | {median['in_process_wall_s']:.1f} s |")
    print(f"| acrl sweep (Ray, one run per core) | {median['sweep_wall_s']:.1f} s |")
    print(
        f"| speed-up over the shell loop / the in-process loop | {median['speedup_over_shell_loop']:.2f}x / "
        f"{median['speedup_over_in_process']:.2f}x |"
    )
    print(f"| Ray overhead per run, start to first step | {median['ray_overhead_per_run_s']:.2f} s |")
    print(
        f"| one run alone / beside another in the sweep | {median['run_s_alone']:.1f} s / "
        f"{median['run_s_in_sweep']:.1f} s |"
    )


if __name__ == "__main__":
    main()
