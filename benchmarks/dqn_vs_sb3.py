"""acrl DQN against Stable-Baselines3 DQN on CartPole-v1, side by side in one run, with the same settings.

For each seed (alternating acrl, SB3): training environment steps per second of `learn` with
evaluation off (acrl: eval_freq 0 and no run directory; SB3: no callbacks), then the final
policy's deterministic evaluation (--eval-episodes episodes on an environment seeded seed + 10_000,
`acrl.core.evaluation.evaluate` for both). The table gives each seed and the medians.

Same settings: acrl's CartPole-v1 preset (rl-baselines3-zoo hyperparams/dqn.yml) for both:
learning rate, batch, buffer, learning_starts (acrl start_steps), gamma, train_freq and gradient
steps (acrl utd_ratio * train_freq), epsilon 1 -> the preset's end over 16% of --steps (the zoo's
exploration_fraction; acrl's epsilon_decay_steps), max grad norm, 256-256 ReLU; SB3's target copy
every 10 environment steps (the zoo's; acrl: every 128 updates, once per burst, the same
schedule); the same target, the max of Q' (acrl's double_q=false: its presets keep Double DQN, whose
extra forward pass per update SB3 does not make). One torch thread for both, on the CPU.

    python benchmarks/dqn_vs_sb3.py                          # 3 seeds x 50k steps (about 10 min idle)
    python benchmarks/dqn_vs_sb3.py --seeds 0 --steps 2000   # a smoke run

Prints a markdown table and writes --out (default benchmarks/results/tmp/dqn_vs_sb3.json; the
committed result needs `--out benchmarks/results/dqn_vs_sb3.json`): `provenance()`, the arguments
and the results per seed.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from meta import ROOT, scratch_path

from acrl import DQN, DQNConfig
from acrl.algos.base import EVAL_SEED_OFFSET
from acrl.core.config import preset_values, update_config
from acrl.core.evaluation import evaluate
from acrl.core.files import write_json_atomic
from acrl.core.provenance import load_average, provenance

ENV_ID = "CartPole-v1"
EXPLORATION_FRACTION = 0.16
"""rl-baselines3-zoo's exploration_fraction for CartPole-v1: epsilon reaches its end after 16% of the steps."""
SB3_TARGET_UPDATE_STEPS = 10
"""rl-baselines3-zoo's target_update_interval for CartPole-v1, in environment steps."""


def preset(steps: int) -> DQNConfig:
    """acrl's CartPole-v1 preset with `steps` steps and the schedule scaled to them, and SB3's max-Q' target."""
    values, _ = preset_values("dqn", ENV_ID, None)
    values.update(total_steps=steps, epsilon_decay_steps=round(EXPLORATION_FRACTION * steps), double_q=False)
    return update_config(DQNConfig(), values, origin="dqn preset for CartPole-v1")


class SB3Predictor:
    """An SB3 model behind acrl's `predict(obs, deterministic) -> action`."""

    def __init__(self, model: Any):
        self.model = model

    def predict(self, obs: np.ndarray, deterministic: bool = True) -> int:
        return int(self.model.predict(obs, deterministic=deterministic)[0])


def run_acrl(seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """Train acrl DQN for --steps steps (evaluation off), then evaluate it; steps/s and returns."""
    cfg = preset(args.steps)
    agent = DQN(ENV_ID, config=cfg, seed=seed, eval_freq=0, torch_threads=1, device="cpu")
    started = time.perf_counter()
    agent.learn(progress=False)
    seconds = time.perf_counter() - started
    result = evaluate(agent, ENV_ID, args.eval_episodes, True, seed=seed + EVAL_SEED_OFFSET)
    return run_record(agent.num_steps, seconds, agent.updates, result)


def run_record(steps: int, seconds: float, updates: int, result: dict[str, Any]) -> dict[str, Any]:
    """One library's run as the JSON keeps it: steps, training seconds, steps/s, gradient updates and the
    evaluation's mean return and returns."""
    return {
        "steps": steps,
        "seconds": seconds,
        "steps_per_s": steps / seconds,
        "updates": updates,
        "return_mean": result["return_mean"],
        "returns": result["returns"],
    }


def run_sb3(seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """Train SB3 DQN with the same settings for --steps steps (no callbacks), then evaluate it."""
    from stable_baselines3 import DQN as SB3DQN

    cfg = preset(args.steps)
    model = SB3DQN(
        "MlpPolicy",
        gym.make(ENV_ID),
        learning_rate=cfg.learning_rate,
        buffer_size=cfg.buffer_size,
        learning_starts=cfg.start_steps,
        batch_size=cfg.batch_size,
        tau=cfg.tau,
        gamma=cfg.gamma,
        train_freq=cfg.train_freq,
        gradient_steps=round(cfg.utd_ratio * cfg.train_freq),
        target_update_interval=SB3_TARGET_UPDATE_STEPS,
        exploration_fraction=cfg.epsilon_decay_steps / cfg.total_steps,
        exploration_initial_eps=cfg.epsilon_start,
        exploration_final_eps=cfg.epsilon_end,
        max_grad_norm=cfg.max_grad_norm,
        policy_kwargs={"net_arch": list(cfg.hidden_sizes)},
        seed=seed,
        device="cpu",
        verbose=0,
    )
    started = time.perf_counter()
    model.learn(total_timesteps=args.steps)
    seconds = time.perf_counter() - started
    result = evaluate(SB3Predictor(model), ENV_ID, args.eval_episodes, True, seed=seed + EVAL_SEED_OFFSET)
    return run_record(model.num_timesteps, seconds, model._n_updates, result)


def summary(per_seed: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Medians over the seeds of each library's steps/s and mean return, and the steps/s ratio."""
    medians = {
        lib: {key: statistics.median(r[lib][key] for r in per_seed.values()) for key in ("steps_per_s", "return_mean")}
        for lib in ("acrl", "sb3")
    }
    return {**medians, "speed_ratio": medians["acrl"]["steps_per_s"] / medians["sb3"]["steps_per_s"]}


def print_table(results: dict[str, Any]) -> None:
    print("| seed | acrl steps/s | SB3 steps/s | ratio | acrl return | SB3 return |")
    print("|---:|---:|---:|---:|---:|---:|")
    for seed, r in results["seeds"].items():
        a, s = r["acrl"], r["sb3"]
        ratio = a["steps_per_s"] / s["steps_per_s"]
        print(
            f"| {seed} | {a['steps_per_s']:,.0f} | {s['steps_per_s']:,.0f} | {ratio:.2f}x | "
            f"{a['return_mean']:,.1f} | {s['return_mean']:,.1f} |"
        )
    m = results["median"]
    print(
        f"| median | {m['acrl']['steps_per_s']:,.0f} | {m['sb3']['steps_per_s']:,.0f} | {m['speed_ratio']:.2f}x | "
        f"{m['acrl']['return_mean']:,.1f} | {m['sb3']['return_mean']:,.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=50_000, help="training steps per run (the preset's 50k)")
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--out", type=Path, default=scratch_path("dqn_vs_sb3"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    load_before = load_average()
    per_seed: dict[str, dict[str, Any]] = {}
    for seed in args.seeds:
        print(f"seed {seed}: acrl", flush=True)
        acrl_result = run_acrl(seed, args)
        print(f"seed {seed}: sb3", flush=True)
        per_seed[str(seed)] = {"acrl": acrl_result, "sb3": run_sb3(seed, args)}
    results = {"seeds": per_seed, "median": summary(per_seed)}
    write_json_atomic(
        args.out,
        {
            "meta": provenance(load_before, ["stable-baselines3"]),
            "args": {k: str(v) for k, v in vars(args).items()},
            "results": results,
        },
        default=float,
    )
    print_table(results)
    print(f"\nwrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")


if __name__ == "__main__":
    main()
