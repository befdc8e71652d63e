"""acrl PPO against Stable-Baselines3 PPO, side by side in one run, with the same hyperparameters.

Parts (choose with --parts; the long ones only with their flags):
- throughput: training environment steps per second of `learn` with evaluation off (acrl:
  eval_freq 0 and no run directory; SB3: no callbacks), on CartPole-v1 (8 envs, the CartPole
  preset), Ant-v5 with the Ant preset (8 envs of 256 steps per rollout) and Ant-v5 with 1 env
  of 2,048 steps per rollout (the preset otherwise), plus, for Ant, the same environments
  stepped with random actions and no learning as the ceiling ("raw env": Gymnasium's vector env,
  `gym.make_vec(..., vectorization_mode="sync")`, for 8; `gym.make` for 1). Runs alternate acrl,
  SB3, raw; the table gives the median of --repeats runs of each and the ratios.
- solve: CartPole-v1 steps and training seconds until a deterministic evaluation (--eval-episodes
  episodes on a separate env seeded seed + 10_000, every --eval-freq steps, right after an
  update) first reaches --target, per seed and the median over --seeds seeds. The seconds exclude
  evaluation time. Both libraries anneal the learning rate over --solve-budget steps.
- --ant-long / --ant-directional-long: train Ant-v5 / acrl/AntDirectional-v5 for --long-steps
  steps with --long-seeds seeds each, then report the final deterministic evaluation
  (--long-eval-episodes episodes; for AntDirectional also the y displacement per episode, m).
  acrl trains in --long-dir/<env>-s<seed> run directories (the preset's evaluations and
  checkpoints): a rerun resumes an interrupted run and reuses a finished one. Hours on a small
  machine; the results file is rewritten after every seed.

Same hyperparameters: acrl's preset for the environment; SB3 gets n_steps, batch_size, n_epochs,
gamma, gae_lambda, learning_rate (a linear schedule to 0 when the preset anneals it), clip_range
(constant), ent_coef, vf_coef, max_grad_norm, separate 64-64 tanh policy and value networks with
orthogonal init and the same initial log-std, and VecNormalize (clip 10, the preset's gamma) where
the preset normalises observations or rewards. One torch thread for both, on the CPU.

    python benchmarks/ppo_vs_sb3.py                           # throughput and solve (about 30 min)
    python benchmarks/ppo_vs_sb3.py --parts throughput --repeats 5
    python benchmarks/ppo_vs_sb3.py --parts solve --seeds 5
    python benchmarks/ppo_vs_sb3.py --parts --ant-long --ant-directional-long   # the long runs only

Prints markdown tables and writes --out (default benchmarks/results/tmp/ppo_vs_sb3.json; the
committed result needs `--out benchmarks/results/ppo_vs_sb3.json`): `provenance()` (command, commit,
date, CPU, load average before and after, versions), arguments and results per part; a later run of
other parts keeps the earlier parts' entries. A quick check: `--parts throughput --repeats 1
--cartpole-steps 2048 --ant-steps 512 --raw-steps 500`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from meta import ROOT, scratch_path

import acrl  # also registers acrl/AntDirectional-v5
from acrl import PPO, PPOConfig
from acrl.algos.base import EVAL_SEED_OFFSET
from acrl.core.config import preset_values, update_config
from acrl.core.evaluation import evaluate
from acrl.core.files import write_json_atomic
from acrl.core.provenance import load_average, provenance

# ---------------------------------------------------------------- the two learners
# The throughput cases: (label, environment, preset overrides). With one Ant environment the
# rollout keeps the preset's 2,048 steps, and so the update's cost per step.
THROUGHPUT_CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("CartPole-v1, 8 envs", "CartPole-v1", {}),
    ("Ant-v5, 8 envs", "Ant-v5", {}),
    ("Ant-v5, 1 env", "Ant-v5", {"n_envs": 1, "n_steps": 2048}),
]


def acrl_agent(env_id: str, seed: int, total_steps: int, **overrides: Any) -> PPO:
    """acrl PPO with the environment's default preset (updated by `overrides`), evaluation off."""
    values, _ = preset_values("ppo", env_id, None)
    values.update(overrides, seed=seed, total_steps=total_steps, eval_freq=0, torch_threads=1)
    return PPO(env_id, **values)


def sb3_model(env_id: str, seed: int, **overrides: Any) -> tuple[Any, Any]:
    """SB3 PPO with the hyperparameters of acrl's preset for `env_id` (updated by `overrides`).

    Returns (model, VecNormalize or None).

    Raises:
        ValueError: a preset setting SB3 cannot express (critic weight decay).
    """
    from stable_baselines3 import PPO as SB3PPO
    from stable_baselines3.common.env_util import make_vec_env

    values, _ = preset_values("ppo", env_id, None)
    values.update(overrides)
    cfg = update_config(PPOConfig(), values, origin=f"ppo preset for {env_id}")
    if cfg.critic_weight_decay:
        raise ValueError("SB3 PPO has no critic-only weight decay; this preset cannot be matched.")
    venv, vecnorm = with_vec_normalize(make_vec_env(env_id, n_envs=cfg.n_envs, seed=seed), cfg)
    model = SB3PPO("MlpPolicy", venv, seed=seed, device="cpu", verbose=0, **sb3_ppo_settings(cfg))
    return model, vecnorm


def with_vec_normalize(venv: Any, cfg: PPOConfig) -> tuple[Any, Any]:
    """(venv wrapped in SB3's VecNormalize as acrl normalises: observations clipped at obs_clip, rewards
    scaled with the config's gamma and clipped at 10; the VecNormalize) where cfg normalises, else (venv, None)."""
    from stable_baselines3.common.vec_env import VecNormalize

    if not (cfg.normalize_obs or cfg.normalize_reward):
        return venv, None
    vecnorm = VecNormalize(
        venv,
        norm_obs=cfg.normalize_obs,
        norm_reward=cfg.normalize_reward,
        clip_obs=cfg.obs_clip,
        clip_reward=10.0,
        gamma=cfg.gamma,
        epsilon=1e-8,
    )
    return vecnorm, vecnorm


def sb3_ppo_settings(cfg: PPOConfig) -> dict[str, Any]:
    """SB3 PPO's (and SB3-contrib RecurrentPPO's) keyword arguments for acrl's config: the learning rate
    (a linear schedule to 0 where acrl anneals it), the PPO hyperparameters, and the policy's MLP (pi and vf
    layers, activation, orthogonal init, initial log-std)."""
    lr = cfg.learning_rate
    return {
        "learning_rate": (lambda progress_remaining: lr * progress_remaining) if cfg.anneal_lr else lr,
        "n_steps": cfg.n_steps,
        "batch_size": cfg.batch_size,
        "n_epochs": cfg.n_epochs,
        "gamma": cfg.gamma,
        "gae_lambda": cfg.gae_lambda,
        "clip_range": cfg.clip_range,
        "clip_range_vf": cfg.clip_range_vf,
        "ent_coef": cfg.ent_coef,
        "vf_coef": cfg.vf_coef,
        "max_grad_norm": cfg.max_grad_norm,
        "target_kl": cfg.target_kl,
        "normalize_advantage": cfg.normalize_advantage,
        "policy_kwargs": {
            "net_arch": {"pi": list(cfg.hidden_sizes), "vf": list(cfg.hidden_sizes)},
            "activation_fn": torch.nn.Tanh if cfg.activation == "tanh" else torch.nn.ReLU,
            "ortho_init": True,
            "log_std_init": cfg.log_std_init,
        },
    }


class SB3Predictor:
    """SB3 model (and its frozen VecNormalize) behind acrl's `predict(obs, deterministic) -> action`."""

    def __init__(self, model: Any, vecnorm: Any = None):
        self.model, self.vecnorm = model, vecnorm
        self.discrete = isinstance(model.action_space, gym.spaces.Discrete)

    def predict(self, obs: np.ndarray, deterministic: bool = True) -> np.ndarray | int:
        if self.vecnorm is not None:
            obs = self.vecnorm.normalize_obs(obs)  # statistics are not updated here
        action = self.model.predict(obs, deterministic=deterministic)[0]
        return int(action) if self.discrete else action


# ---------------------------------------------------------------- throughput
def time_acrl(env_id: str, steps: int, overrides: dict[str, Any]) -> dict[str, float]:
    agent = acrl_agent(env_id, seed=0, total_steps=steps, **overrides)
    started = time.perf_counter()
    agent.learn(progress=False)
    seconds = time.perf_counter() - started
    return {"steps": agent.num_steps, "seconds": seconds, "steps_per_s": agent.num_steps / seconds}


def time_sb3(env_id: str, steps: int, overrides: dict[str, Any]) -> dict[str, float]:
    model, _ = sb3_model(env_id, seed=0, **overrides)
    started = time.perf_counter()
    model.learn(total_timesteps=steps)
    seconds = time.perf_counter() - started
    return {"steps": model.num_timesteps, "seconds": seconds, "steps_per_s": model.num_timesteps / seconds}


def time_raw(env_id: str, steps: int, overrides: dict[str, Any]) -> dict[str, float]:
    """Random actions, no learning: the preset's number of environments (or the override's)
    through Gymnasium's sync vector env, or one env through `gym.make`."""
    n_envs = overrides.get("n_envs", preset_values("ppo", env_id, None)[0].get("n_envs", 1))
    if n_envs == 1:
        env = gym.make(env_id)
        env.reset(seed=0)
        env.action_space.seed(0)
        started = time.perf_counter()
        for _ in range(steps):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                env.reset()
    else:
        env = gym.make_vec(env_id, num_envs=n_envs, vectorization_mode="sync")
        env.reset(seed=0)
        env.action_space.seed(0)
        started = time.perf_counter()
        for _ in range(steps // n_envs):
            env.step(env.action_space.sample())
        steps = steps // n_envs * n_envs
    seconds = time.perf_counter() - started
    env.close()
    return {"steps": steps, "seconds": seconds, "steps_per_s": steps / seconds}


def throughput(args: argparse.Namespace) -> dict[str, Any]:
    cases: list[tuple[str, str, dict[str, Any], str, int, Callable[..., dict[str, float]]]] = []
    for label, env_id, overrides in THROUGHPUT_CASES:
        steps = args.cartpole_steps if env_id == "CartPole-v1" else args.ant_steps
        if "acrl" in args.libs:
            cases.append((label, env_id, overrides, "acrl", steps, time_acrl))
        if "sb3" in args.libs:
            cases.append((label, env_id, overrides, "sb3", steps, time_sb3))
        if env_id == "Ant-v5":
            cases.append((label, env_id, overrides, "raw env", args.raw_steps, time_raw))
    runs: dict[str, dict[str, list[dict[str, float]]]] = {}
    for repeat in range(args.repeats):
        order = cases if repeat % 2 == 0 else cases[::-1]  # alternate who goes first
        for label, env_id, overrides, who, steps, fn in order:
            result = fn(env_id, steps, overrides)
            runs.setdefault(label, {}).setdefault(who, []).append(result)
            print(f"  [{repeat + 1}/{args.repeats}] {label} {who}: {result['steps_per_s']:.0f} steps/s", flush=True)
    summary: dict[str, Any] = {}
    for label, by_who in runs.items():
        summary[label] = {
            who: {"median_steps_per_s": statistics.median(r["steps_per_s"] for r in rows), "runs": rows}
            for who, rows in by_who.items()
        }
        # Ratios within each repeat (runs close in time see similar load), then their median.
        for name, (a, b) in {"acrl/sb3": ("acrl", "sb3"), "acrl/raw": ("acrl", "raw env")}.items():
            if a in by_who and b in by_who:
                paired = [x["steps_per_s"] / y["steps_per_s"] for x, y in zip(by_who[a], by_who[b])]
                summary[label][f"median paired {name}"] = statistics.median(paired)
    return summary


def print_throughput(summary: dict[str, Any]) -> None:
    print("\nMedians over the repeats; in brackets the median of the ratios within each repeat.\n")
    print("| environment | acrl steps/s | SB3 steps/s | acrl / SB3 | raw env steps/s | acrl / raw |")
    print("|---|---:|---:|---:|---:|---:|")

    def cell(x: float | None) -> str:
        return f"{x:,.0f}" if x else "-"

    def ratio(a: float | None, b: float | None, paired: float | None) -> str:
        return f"{a / b:.2f} ({paired:.2f})" if a and b and paired else "-"

    for label, by_who in summary.items():
        acrl_rate, sb3_rate, raw_rate = (
            by_who.get(who, {}).get("median_steps_per_s") for who in ("acrl", "sb3", "raw env")
        )
        print(
            f"| {label} | {cell(acrl_rate)} | {cell(sb3_rate)} | "
            f"{ratio(acrl_rate, sb3_rate, by_who.get('median paired acrl/sb3'))} | "
            f"{cell(raw_rate)} | {ratio(acrl_rate, raw_rate, by_who.get('median paired acrl/raw'))} |"
        )


# ---------------------------------------------------------------- steps and seconds to a target return
def solve_acrl(seed: int, args: argparse.Namespace) -> dict[str, Any]:
    env_id = "CartPole-v1"
    agent = acrl_agent(env_id, seed, args.solve_budget)
    torch.set_num_threads(1)
    history, eval_seconds, reached = [], 0.0, None
    started = time.perf_counter()
    while agent.num_steps < args.solve_budget:
        before = agent.num_steps
        agent.collect()
        agent.update()
        if agent.num_steps // args.eval_freq > before // args.eval_freq:
            t = time.perf_counter()
            result = evaluate(agent, env_id, args.eval_episodes, deterministic=True, seed=seed + EVAL_SEED_OFFSET)
            eval_seconds += time.perf_counter() - t
            history.append((agent.num_steps, result["return_mean"]))
            if result["return_mean"] >= args.target:
                reached = agent.num_steps
                break
    train_seconds = time.perf_counter() - started - eval_seconds
    return {
        "steps": reached,
        "train_seconds": train_seconds if reached else None,
        "total_train_seconds": train_seconds,
        "eval_seconds": eval_seconds,
        "history": history,
    }


def solve_sb3(seed: int, args: argparse.Namespace) -> dict[str, Any]:
    from stable_baselines3.common.callbacks import BaseCallback

    env_id = "CartPole-v1"
    model, vecnorm = sb3_model(env_id, seed)
    predictor = SB3Predictor(model, vecnorm)

    class EvaluateAndStop(BaseCallback):
        """Evaluate at the start of a rollout (right after an update) once eval_freq steps have passed."""

        def __init__(self) -> None:
            super().__init__()
            self.next_eval, self.eval_seconds, self.reached, self.history = args.eval_freq, 0.0, None, []

        def _on_rollout_start(self) -> None:
            steps = self.model.num_timesteps
            if steps < self.next_eval or self.reached is not None:
                return
            while self.next_eval <= steps:
                self.next_eval += args.eval_freq
            t = time.perf_counter()
            result = evaluate(predictor, env_id, args.eval_episodes, deterministic=True, seed=seed + EVAL_SEED_OFFSET)
            self.eval_seconds += time.perf_counter() - t
            self.history.append((steps, result["return_mean"]))
            if result["return_mean"] >= args.target:
                self.reached = steps

        def _on_step(self) -> bool:
            return self.reached is None

    callback = EvaluateAndStop()
    started = time.perf_counter()
    model.learn(total_timesteps=args.solve_budget, callback=callback)
    # A rollout that ends exactly at the budget is followed by no rollout start: evaluate it too.
    if callback.reached is None and model.num_timesteps >= callback.next_eval:
        callback.on_rollout_start()
    train_seconds = time.perf_counter() - started - callback.eval_seconds
    return {
        "steps": callback.reached,
        "train_seconds": train_seconds if callback.reached else None,
        "total_train_seconds": train_seconds,
        "eval_seconds": callback.eval_seconds,
        "history": callback.history,
    }


def solve(args: argparse.Namespace) -> dict[str, Any]:
    per_seed: dict[str, list[dict[str, Any]]] = {lib: [] for lib in args.libs}
    for seed in range(args.seeds):
        order = args.libs if seed % 2 == 0 else args.libs[::-1]
        for lib in order:
            result = (solve_acrl if lib == "acrl" else solve_sb3)(seed, args)
            per_seed[lib].append({"seed": seed, **result})
            shown = f"{result['steps']} steps, {result['train_seconds']:.1f} s" if result["steps"] else "not reached"
            print(f"  seed {seed} {lib}: {shown}", flush=True)
    summary: dict[str, Any] = {}
    for lib, rows in per_seed.items():
        # A seed that never reaches the target counts as the budget (a lower bound) for the median.
        steps = [r["steps"] if r["steps"] else args.solve_budget for r in rows]
        seconds = [r["train_seconds"] if r["steps"] else r["total_train_seconds"] for r in rows]
        summary[lib] = {
            "median_steps": statistics.median(steps),
            "median_train_seconds": statistics.median(seconds),
            "reached": sum(1 for r in rows if r["steps"]),
            "seeds": rows,
        }
    return summary


def print_solve(summary: dict[str, Any], args: argparse.Namespace) -> None:
    libs = list(summary)
    print(
        f"\nCartPole-v1: first deterministic evaluation ({args.eval_episodes} episodes every {args.eval_freq} "
        f"steps) with mean return >= {args.target}; seconds exclude evaluation.\n"
    )
    print("| seed | " + " | ".join(f"{lib} steps | {lib} s" for lib in libs) + " |")
    print("|---|" + "---:|---:|" * len(libs))
    for i in range(len(summary[libs[0]]["seeds"])):
        cells = []
        for lib in libs:
            row = summary[lib]["seeds"][i]
            cells += [f"{row['steps']:,}", f"{row['train_seconds']:.1f}"] if row["steps"] else ["not reached", "-"]
        print(f"| {i} | " + " | ".join(cells) + " |")
    cells = []
    for lib in libs:
        s = summary[lib]
        cells += [f"**{s['median_steps']:,.0f}**", f"**{s['median_train_seconds']:.1f}**"]
    print("| median | " + " | ".join(cells) + " |")


# ---------------------------------------------------------------- long runs
def acrl_long_run(env_id: str, seed: int, args: argparse.Namespace) -> PPO:
    """Train (or resume, or reuse) acrl PPO in runs/bench-long/<env>-s<seed>; returns the final agent.

    The run directory keeps the preset's evaluations (the learning curve) and a latest
    checkpoint every `checkpoint_freq` steps, so an interrupted long run resumes where it stopped.
    """
    run_dir = args.long_dir / f"{env_id.replace('/', '_')}-s{seed}"
    latest = run_dir / "checkpoints" / "latest.pt"
    if latest.exists():
        agent = acrl.load(latest)
        if agent.num_steps < args.long_steps:
            print(f"  resuming {run_dir} at step {agent.num_steps:,}", flush=True)
            agent.learn(total_steps=args.long_steps, run_dir=run_dir, progress=False)
        return agent
    values, _ = preset_values("ppo", env_id, None)
    values.update(seed=seed, total_steps=args.long_steps, torch_threads=1)
    return PPO(env_id, **values).learn(run_dir=run_dir, progress=False)


def long_run(env_id: str, args: argparse.Namespace, save: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Train each library for --long-steps per seed and evaluate the final policy; `save` gets the partial summary."""
    per_seed: dict[str, list[dict[str, Any]]] = {lib: [] for lib in args.libs}
    summary: dict[str, Any] = {}
    for seed in range(args.long_seeds):
        for lib in args.libs if seed % 2 == 0 else args.libs[::-1]:  # alternate who goes first
            started = time.perf_counter()
            if lib == "acrl":
                predictor: Any = acrl_long_run(env_id, seed, args)
            else:
                model, vecnorm = sb3_model(env_id, seed)
                model.learn(total_timesteps=args.long_steps)
                predictor = SB3Predictor(model, vecnorm)
            seconds = time.perf_counter() - started
            result = evaluate(
                predictor, env_id, args.long_eval_episodes, deterministic=True, seed=seed + EVAL_SEED_OFFSET
            )
            per_seed[lib].append({"seed": seed, "train_seconds": seconds, **result})
            extra = f", y displacement {result['y_displacement_mean']:.2f} m" if "y_displacement_mean" in result else ""
            print(
                f"  {env_id} seed {seed} {lib}: return {result['return_mean']:.1f} "
                f"+- {result['return_std']:.1f}{extra} ({seconds / 60:.0f} min)",
                flush=True,
            )
            for name, rows in per_seed.items():
                summary[name] = {
                    "mean_return": float(np.mean([r["return_mean"] for r in rows])) if rows else None,
                    "seeds": rows,
                }
                if rows and "y_displacement_mean" in rows[0]:
                    summary[name]["mean_y_displacement"] = float(np.mean([r["y_displacement_mean"] for r in rows]))
            save(summary)
    return summary


def print_long(env_id: str, summary: dict[str, Any], args: argparse.Namespace) -> None:
    directional = any("mean_y_displacement" in s for s in summary.values())
    print(
        f"\n{env_id} after {args.long_steps:,} steps: final deterministic evaluation "
        f"({args.long_eval_episodes} episodes), mean +- std over episodes.\n"
    )
    header = "| seed | " + " | ".join(f"{lib} return" + (f" | {lib} y (m)" if directional else "") for lib in summary)
    print(header + " |")
    print("|---|" + ("---:|---:|" if directional else "---:|") * len(summary))
    for i in range(args.long_seeds):
        cells = []
        for lib in summary:
            row = summary[lib]["seeds"][i]
            cells.append(f"{row['return_mean']:.1f} +- {row['return_std']:.1f}")
            if directional:
                cells.append(f"{row['y_displacement_mean']:.2f}")
        print(f"| {i} | " + " | ".join(cells) + " |")


# ---------------------------------------------------------------- bookkeeping
def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--parts", nargs="*", choices=["throughput", "solve"], default=["throughput", "solve"])
    parser.add_argument("--libs", nargs="+", choices=["acrl", "sb3"], default=["acrl", "sb3"])
    parser.add_argument("--repeats", type=int, default=3, help="throughput runs per library (median)")
    parser.add_argument("--cartpole-steps", type=int, default=20_480, help="steps per CartPole throughput run")
    parser.add_argument("--ant-steps", type=int, default=8_192, help="steps per Ant throughput run")
    parser.add_argument("--raw-steps", type=int, default=8_000, help="random-action steps per raw Ant run")
    parser.add_argument("--seeds", type=int, default=5, help="seeds for the solve part")
    parser.add_argument("--solve-budget", type=int, default=100_000, help="step budget (and LR schedule length)")
    parser.add_argument("--eval-freq", type=int, default=2_048)
    parser.add_argument("--eval-episodes", type=int, default=5)
    parser.add_argument("--target", type=float, default=475.0)
    parser.add_argument("--ant-long", action="store_true", help="Ant-v5 for --long-steps, --long-seeds seeds")
    parser.add_argument("--ant-directional-long", action="store_true", help="the same on acrl/AntDirectional-v5")
    parser.add_argument("--long-steps", type=int, default=1_000_000)
    parser.add_argument("--long-seeds", type=int, default=3)
    parser.add_argument("--long-eval-episodes", type=int, default=10)
    parser.add_argument(
        "--long-dir",
        type=Path,
        default=ROOT / "runs" / "bench-long",
        help="acrl's long runs live here (learning curves, checkpoints; resumed if present)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=scratch_path("ppo_vs_sb3"),
        help="result file (default: the scratch folder benchmarks/results/tmp/)",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)

    load_before = load_average()
    meta: dict[str, Any] = {}
    parts: dict[str, Any] = {}

    def save(name: str, result: Any) -> None:
        """Merge this part's result into --out (atomically), keeping earlier runs' other parts."""
        parts[name] = result
        previous = json.loads(args.out.read_text()) if args.out.exists() else {}
        meta["meta"] = provenance(load_before, ["stable-baselines3", "mujoco"])
        merged = {
            **meta,
            "parts": {
                **previous.get("parts", {}),
                **{
                    part: {**meta, "args": {k: str(v) for k, v in vars(args).items()}, "results": value}
                    for part, value in parts.items()
                },
            },
        }
        write_json_atomic(args.out, merged, default=float)

    if "throughput" in args.parts:
        print("throughput (evaluation off)", flush=True)
        save("throughput", throughput(args))
        print_throughput(parts["throughput"])
    if "solve" in args.parts:
        print(f"\nCartPole-v1 to {args.target}", flush=True)
        save("solve", solve(args))
        print_solve(parts["solve"], args)
    for flag, env_id in ((args.ant_long, "Ant-v5"), (args.ant_directional_long, "acrl/AntDirectional-v5")):
        if flag:
            print(f"\n{env_id}, {args.long_steps:,} steps", flush=True)
            name = f"long {env_id}"
            long_run(env_id, args, lambda summary, name=name: save(name, summary))
            print_long(env_id, parts[name], args)
    print(f"\nwrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")


if __name__ == "__main__":
    main()
