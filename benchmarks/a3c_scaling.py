"""Training throughput of acrl A3C against its worker count and against SB3 A2C with one environment.

For every t_max in --n-steps and every repeat, in one process and interleaved (so that all
configurations see the same machine; SB3 first in even repeats, last in odd ones), it trains on
CartPole-v1 from scratch with evaluation off:
- Stable-Baselines3 A2C with one environment and the same n_steps (its defaults otherwise: 64-64
  tanh actor and critic, RMSProp), one torch thread: the steady rate between its first and last
  rollout ends (as A3C's below: set-up and the first rollout excluded), and steps / seconds of the
  whole `model.learn` call;
- acrl A3C (the env's `default` preset, that n_steps) with each worker count in --workers and
  each number of environments per worker in --n-envs (1 is the paper's A3C):
  - steady steps/s: the global step rate between the first and the last metrics rows
    (worker start-up and the end-of-run plot and checkpoint excluded);
  - overall steps/s: steps / seconds of the whole `learn` call, start-up included;
  - steps per worker CPU-second: global steps / CPU time (user + system) of the worker processes
    (getrusage(RUSAGE_CHILDREN)). It does not depend on how many cores other programs leave free,
    so on a shared machine it tells whether the workers slow each other down (lock or memory
    contention) or only lack cores.
Every run trains from scratch, so its rate includes the early, short CartPole episodes (a rollout
stops at an episode's end, which means more updates per step). The table gives medians over the
repeats: A3C's steady rate over SB3's steady rate, and the speed-up over 1 worker (with as many
envs per worker). Run it on an otherwise idle machine: the JSON records `provenance()` (commit,
CPU, load average before and after, versions).

    python benchmarks/a3c_scaling.py --out benchmarks/results/a3c_scaling.json   # the committed result
    python benchmarks/a3c_scaling.py --steps-per-worker 2000 --repeats 1         # a check in seconds

    python benchmarks/a3c_scaling.py --workers 1 2 4 8 --no-sb3 # on a bigger machine

Prints a markdown table and writes --out (default benchmarks/results/tmp/a3c_scaling.json).
"""

from __future__ import annotations

import argparse
import csv
import resource
import shutil
import statistics
import time
from pathlib import Path

import torch
from meta import RESULTS, scratch_path

from acrl.core.files import write_json_atomic
from acrl.core.provenance import load_average, provenance

ENV = "CartPole-v1"


def a3c_method(workers: int, n_envs: int) -> str:
    """The table's name for acrl A3C with these workers and environments per worker."""
    return f"acrl A3C, {workers} worker{'s' if workers > 1 else ''}" + (f" x {n_envs} envs" if n_envs > 1 else "")


def run_a3c(workers: int, n_envs: int, n_steps: int, steps_per_worker: int, seed: int) -> dict:
    from acrl import A3C, A3CConfig
    from acrl.core.config import preset_values, update_config

    values, _ = preset_values("a3c", ENV, None)
    total = steps_per_worker * workers
    config = update_config(
        A3CConfig(),
        {
            **values,
            "workers": workers,
            "n_envs": n_envs,
            "n_steps": n_steps,
            "seed": seed,
            "total_steps": total,
            "eval_freq": 0,
            "log_freq": max(total // 50, 100),
        },
        "benchmark",
    )
    run_dir = RESULTS / "tmp" / f"scaling-{workers}"
    shutil.rmtree(run_dir, ignore_errors=True)
    agent = A3C(ENV, config=config)
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
        float(last["time/elapsed_s"]) - float(first["time/elapsed_s"]), 1e-9
    )
    return {
        "method": a3c_method(workers, n_envs),
        "workers": workers,
        "n_envs": n_envs,
        "n_steps": n_steps,
        "seed": seed,
        "steps": agent.num_steps,
        "wall_s": wall,
        "steady_steps_per_s": steady,
        "overall_steps_per_s": agent.num_steps / wall,
        "steps_per_worker_cpu_s": agent.num_steps / max(worker_cpu, 1e-9),
    }


def run_sb3(n_steps: int, steps: int, seed: int) -> dict:
    from stable_baselines3 import A2C
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    class RolloutClock(BaseCallback):
        """(seconds, environment steps) at the end of every rollout: the steady rate, as A3C's metrics rows."""

        def __init__(self) -> None:
            super().__init__()
            self.marks: list[tuple[float, int]] = []

        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            self.marks.append((time.perf_counter(), self.model.num_timesteps))

    model = A2C("MlpPolicy", make_vec_env(ENV, n_envs=1, seed=seed), n_steps=n_steps, seed=seed, device="cpu")
    clock = RolloutClock()
    started = time.perf_counter()
    model.learn(total_timesteps=steps, callback=clock)
    wall = time.perf_counter() - started
    (t0, s0), (t1, s1) = clock.marks[0], clock.marks[-1]
    return {
        "method": "SB3 A2C, 1 env",
        "workers": 0,
        "n_envs": 1,
        "n_steps": n_steps,
        "seed": seed,
        "steps": int(model.num_timesteps),
        "wall_s": wall,
        "steady_steps_per_s": (s1 - s0) / max(t1 - t0, 1e-9),
        "overall_steps_per_s": model.num_timesteps / wall,
        "steps_per_worker_cpu_s": None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--n-envs", type=int, nargs="+", default=[1, 4], help="environments per worker")
    parser.add_argument(
        "--n-steps", type=int, nargs="+", default=[20, 5], help="t_max values (the CartPole preset's is 20)"
    )
    parser.add_argument("--steps-per-worker", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-sb3", action="store_true", help="leave out the SB3 A2C peer")
    parser.add_argument(
        "--out",
        type=Path,
        default=scratch_path("a3c_scaling"),
        help="result file (default: the scratch folder benchmarks/results/tmp/)",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    load_before = load_average()

    run_a3c(1, 1, args.n_steps[0], 2_000, seed=100)  # warm-up: the first run in a process pays one-time costs
    if not args.no_sb3:
        run_sb3(args.n_steps[0], 1_000, seed=100)
    runs = []
    for repeat in range(args.repeats):
        for n_steps in args.n_steps:
            sb3_first = repeat % 2 == 0  # alternate which library runs first in a repeat
            if not args.no_sb3 and sb3_first:
                runs.append(run_sb3(n_steps, args.steps_per_worker, seed=repeat))
                print(runs[-1], flush=True)
            for n_envs in args.n_envs:
                for workers in args.workers:
                    runs.append(run_a3c(workers, n_envs, n_steps, args.steps_per_worker, seed=repeat))
                    print(runs[-1], flush=True)
            if not args.no_sb3 and not sb3_first:
                runs.append(run_sb3(n_steps, args.steps_per_worker, seed=repeat))
                print(runs[-1], flush=True)

    meta = provenance(load_before, ["stable-baselines3"])
    lines = [
        f"{ENV}, {args.steps_per_worker:,} steps per worker or env, median of {args.repeats} repeats, "
        f"{meta['cores']} CPUs, load average {load_before[0]:.2f} before and "
        f"{meta['load_average_after'][0]:.2f} after",
        "",
        "| n_steps | method | steady steps/s | vs SB3 A2C | vs 1 worker | overall steps/s | steps per worker CPU-s |",
        "|---|---|---|---|---|---|---|",
    ]
    summary = []
    for n_steps in args.n_steps:
        groups: dict[str, list[dict]] = {}
        for r in runs:
            if r["n_steps"] == n_steps:
                groups.setdefault(r["method"], []).append(r)
        medians = {
            method: {
                key: statistics.median(r[key] for r in group) if group[0][key] is not None else None
                for key in ("steady_steps_per_s", "overall_steps_per_s", "steps_per_worker_cpu_s")
            }
            for method, group in groups.items()
        }
        sb3 = medians.get("SB3 A2C, 1 env", {}).get("steady_steps_per_s")
        for method, m in medians.items():
            is_a3c = method.startswith("acrl")
            one = (
                medians.get(a3c_method(1, groups[method][0]["n_envs"]), {}).get("steady_steps_per_s")
                if is_a3c
                else None
            )
            vs_sb3 = m["steady_steps_per_s"] / sb3 if sb3 and is_a3c else None
            vs_one = m["steady_steps_per_s"] / one if one else None
            summary.append({"n_steps": n_steps, "method": method, **m, "vs_sb3": vs_sb3, "vs_1_worker": vs_one})
            cpu = "-" if m["steps_per_worker_cpu_s"] is None else f"{m['steps_per_worker_cpu_s']:,.0f}"
            lines.append(
                f"| {n_steps} | {method} | {m['steady_steps_per_s']:,.0f} | "
                f"{'-' if vs_sb3 is None else f'{vs_sb3:.2f}x'} | "
                f"{'-' if vs_one is None else f'{vs_one:.2f}x'} | {m['overall_steps_per_s']:,.0f} | {cpu} |"
            )
    print("\n".join(lines))
    write_json_atomic(
        args.out,
        {
            "benchmark": "a3c_scaling",
            "meta": meta,
            "env": ENV,
            "sb3_rate": "steady",
            "settings": {k: str(v) for k, v in vars(args).items()},
            "summary": summary,
            "runs": runs,
        },
    )
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
