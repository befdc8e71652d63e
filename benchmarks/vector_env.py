"""acrl's vector env against Gymnasium's, the same sub-environments and random actions, no learning.

For each environment in --envs, --n-envs sub-environments (each wrapped in acrl's `CheckFinite`, as
training wraps them) are stepped --steps times with uniform random actions through:
- Gymnasium: `SyncVectorEnv` with `AutoresetMode.SAME_STEP` inside the vector
  `RecordEpisodeStatistics` (what `acrl.core.envs.make_vec_env` built before);
- acrl: `LeanSyncVectorEnv` (`make_vec_env` today), the same steps without the info merging.
Runs alternate between the two; the table gives the median microseconds per sub-environment step
over --repeats runs, the difference, and Gymnasium's time over acrl's.

    python benchmarks/vector_env.py --out benchmarks/results/vector_env.json   # the committed result
    python benchmarks/vector_env.py --steps 50 --repeats 1                     # a check in seconds

Prints a markdown table and writes --out (default benchmarks/results/tmp/vector_env.json) with
`provenance()`: commit, date, CPU, load average before and after, versions.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import gymnasium as gym
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers.vector import RecordEpisodeStatistics
from meta import scratch_path

from acrl.core.envs import CheckFinite, make_vec_env
from acrl.core.files import write_json_atomic
from acrl.core.provenance import load_average, provenance


def gymnasium_vector_env(env_id: str, n_envs: int) -> gym.vector.VectorEnv:
    fns = [lambda i=i: CheckFinite(gym.make(env_id), i) for i in range(n_envs)]
    return RecordEpisodeStatistics(SyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP))


def us_per_env_step(envs: gym.vector.VectorEnv, steps: int) -> float:
    envs.reset(seed=0)
    envs.action_space.seed(0)
    actions = [envs.action_space.sample() for _ in range(steps)]
    started = time.perf_counter()
    for action in actions:
        envs.step(action)
    seconds = time.perf_counter() - started
    envs.close()
    return seconds / (steps * envs.num_envs) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=["CartPole-v1", "Ant-v5"])
    parser.add_argument("--n-envs", type=int, default=8)
    parser.add_argument("--steps", type=int, default=1_000, help="vector steps per run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--out",
        type=Path,
        default=scratch_path("vector_env"),
        help="result file (default: the scratch folder benchmarks/results/tmp/)",
    )
    args = parser.parse_args()
    load_before = load_average()
    makers = {"gymnasium": gymnasium_vector_env, "acrl": make_vec_env}
    results: dict[str, dict[str, list[float]]] = {}
    for env_id in args.envs:
        for repeat in range(args.repeats):
            for name in ("gymnasium", "acrl") if repeat % 2 == 0 else ("acrl", "gymnasium"):
                value = us_per_env_step(makers[name](env_id, args.n_envs), args.steps)
                results.setdefault(env_id, {}).setdefault(name, []).append(value)
                print(f"  {env_id} {name}: {value:.1f} us per env step", flush=True)
    lines = [
        f"{args.n_envs} sub-environments, {args.steps:,} vector steps per run, median of {args.repeats} runs, "
        f"load average {load_before[0]:.2f} before",
        "",
        "| environment | Gymnasium SyncVectorEnv + RecordEpisodeStatistics, us/step | acrl LeanSyncVectorEnv, "
        "us/step | saved, us/step | Gymnasium / acrl |",
        "|---|---:|---:|---:|---:|",
    ]
    summary = {}
    for env_id, by_name in results.items():
        theirs, ours = (statistics.median(by_name[k]) for k in ("gymnasium", "acrl"))
        summary[env_id] = {"gymnasium_us": theirs, "acrl_us": ours, "ratio": theirs / ours}
        lines.append(f"| {env_id} | {theirs:.1f} | {ours:.1f} | {theirs - ours:.1f} | {theirs / ours:.2f} |")
    print("\n".join(lines))
    write_json_atomic(
        args.out,
        {
            "benchmark": "vector_env",
            "meta": provenance(load_before, ["mujoco"]),
            "settings": {k: str(v) for k, v in vars(args).items()},
            "summary": summary,
            "runs": results,
        },
    )
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
