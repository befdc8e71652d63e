"""acrl A3C (2 worker processes) against Stable-Baselines3 A2C (8 envs, one process) on CartPole-v1.

For each seed, both train until an evaluation (10 deterministic episodes on a separate env,
every --eval-freq environment steps) first reaches --target; the benchmark reports the
environment steps and the wall seconds to the end of that evaluation (every evaluation's time
included for both, start-up included: A3C's clock starts when `learn` is called, before the
workers start, and stops in a run-loop callback after the deciding evaluation; A2C's starts when
`model.learn` is called and stops in its callback after the same evaluation), with the median
over seeds. The two alternate which runs first: acrl on even seeds, SB3 on odd ones.

acrl A3C uses its CartPole-v1 `default` preset. SB3 A2C uses rl-baselines3-zoo's CartPole-v1
settings (8 envs, ent_coef 0, SB3 defaults otherwise), one torch thread.

    python benchmarks/a3c_vs_a2c.py --seeds 10 --out benchmarks/results/a3c_vs_a2c.json   # the committed result
    python benchmarks/a3c_vs_a2c.py --seeds 2 --max-steps 2000                         # a check in seconds

Prints a markdown table and writes --out (default benchmarks/results/tmp/a3c_vs_a2c.json) with
`provenance()`: commit, date, CPU, load average before and after, versions.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from pathlib import Path

import torch
from meta import RESULTS, scratch_path

from acrl.core.files import write_json_atomic
from acrl.core.provenance import load_average, provenance


def run_acrl(seed: int, args: argparse.Namespace) -> dict:
    from acrl import A3C, A3CConfig
    from acrl.core.config import preset_values, update_config
    from acrl.core.loop import Callback

    class FirstReach(Callback):
        """Record (step, seconds since `started`) at the first evaluation whose mean reaches the target."""

        result: tuple[int, float] | None = None

        def on_evaluation(self, step, result):
            if self.result is None and result["return_mean"] >= args.target:
                self.result = (step, time.perf_counter() - started)

    values, _ = preset_values("a3c", "CartPole-v1", None)
    config = update_config(
        A3CConfig(),
        {
            **values,
            "workers": args.workers,
            "seed": seed,
            "total_steps": args.max_steps,
            "eval_freq": args.eval_freq,
            "eval_episodes": args.eval_episodes,
            "target_return": args.target,
        },
        "benchmark",
    )
    run_dir = RESULTS / "tmp" / f"a3c-s{seed}"
    shutil.rmtree(run_dir, ignore_errors=True)
    agent, callback = A3C("CartPole-v1", config=config), FirstReach()
    started = time.perf_counter()
    agent.learn(run_dir=run_dir, progress=False, callbacks=[callback])
    total_wall = time.perf_counter() - started
    steps, wall = callback.result or (None, None)
    return {
        "seed": seed,
        "reached": callback.result is not None,
        "steps": steps,
        "wall_s": wall,
        "total_steps": agent.num_steps,
        "total_wall_s": total_wall,
    }


def run_sb3(seed: int, args: argparse.Namespace) -> dict:
    import gymnasium as gym
    from stable_baselines3 import A2C
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor

    class FirstReach(BaseCallback):
        """Evaluate every eval_freq steps; stop at the first mean return >= target."""

        def __init__(self):
            super().__init__()
            self.eval_env = Monitor(gym.make("CartPole-v1"))
            self.eval_env.reset(seed=seed + 10_000)
            self.next_eval, self.result = args.eval_freq, None

        def _on_step(self) -> bool:
            if self.num_timesteps < self.next_eval:
                return True
            self.next_eval += args.eval_freq
            mean, _ = evaluate_policy(self.model, self.eval_env, n_eval_episodes=args.eval_episodes, deterministic=True)
            if mean >= args.target:
                self.result = (self.num_timesteps, time.perf_counter() - started)
                return False
            return True

    env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)
    model = A2C("MlpPolicy", env, ent_coef=0.0, seed=seed, device="cpu", verbose=0)
    callback = FirstReach()
    started = time.perf_counter()
    model.learn(total_timesteps=args.max_steps, callback=callback)
    total_wall = time.perf_counter() - started
    steps, wall = callback.result or (None, None)
    return {
        "seed": seed,
        "reached": callback.result is not None,
        "steps": steps,
        "wall_s": wall,
        "total_steps": int(model.num_timesteps),
        "total_wall_s": total_wall,
    }


def format_wall(wall: float | None) -> str:
    return "-" if wall is None else f"{wall:.1f}"


def median(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r["reached"]]
    return statistics.median(values) if len(values) == len(runs) and values else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5, help="number of seeds (0, 1, ...)")
    parser.add_argument("--workers", type=int, default=2, help="A3C worker processes")
    parser.add_argument("--target", type=float, default=475.0)
    parser.add_argument("--max-steps", type=int, default=200_000)
    parser.add_argument("--eval-freq", type=int, default=2_500)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument(
        "--out",
        type=Path,
        default=scratch_path("a3c_vs_a2c"),
        help="result file (default: the scratch folder benchmarks/results/tmp/)",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    load_before = load_average()

    results = {"acrl A3C": [], "SB3 A2C": []}
    runners = {"acrl A3C": run_acrl, "SB3 A2C": run_sb3}
    for seed in range(args.seeds):
        for name in list(runners) if seed % 2 == 0 else list(reversed(runners)):  # alternate who runs first
            results[name].append(runners[name](seed, args))
        print(f"seed {seed}: " + "; ".join(f"{k}: {v[-1]}" for k, v in results.items()), flush=True)

    lines = [
        f"CartPole-v1, first evaluation >= {args.target:g} (median of {args.seeds} seeds, eval every "
        f"{args.eval_freq} steps, {args.eval_episodes} episodes)",
        "",
        "| method | reached | median steps | median wall s | steps per seed | wall s per seed |",
        "|---|---|---|---|---|---|",
    ]
    label = {"acrl A3C": f"acrl A3C ({args.workers} workers)", "SB3 A2C": "SB3 A2C (8 envs, 1 process)"}
    for name, runs in results.items():
        med_steps, med_wall = median(runs, "steps"), median(runs, "wall_s")
        lines.append(
            f"| {label[name]} | {sum(r['reached'] for r in runs)}/{len(runs)} | "
            f"{'-' if med_steps is None else f'{med_steps:,.0f}'} | "
            f"{'-' if med_wall is None else f'{med_wall:.1f}'} | "
            f"{', '.join(str(r['steps']) for r in runs)} | "
            f"{', '.join(format_wall(r['wall_s']) for r in runs)} |"
        )
    print("\n".join(lines))
    write_json_atomic(
        args.out,
        {
            "benchmark": "a3c_vs_a2c",
            "meta": provenance(load_before, ["stable-baselines3"]),
            "env": "CartPole-v1",
            "settings": {k: str(v) for k, v in vars(args).items()},
            "runs": results,
            "median": {
                name: {"steps": median(runs, "steps"), "wall_s": median(runs, "wall_s")}
                for name, runs in results.items()
            },
        },
    )
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
