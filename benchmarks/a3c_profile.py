"""Where A3C's Atari time goes, against SB3 A2C's (issue #48 item 4, "profile first"): one acrl A3C worker and SB3
A2C, each as `atari_speed.py`'s part a3c runs them (t_max 5, the preset's CNN, one torch thread), each in a fresh
process, on --env (default ALE/Pong-v5), their wall clock split into phases by timing the functions each calls:

- act forward: the acting forward passes (batch 1 for an A3C worker, a batch of the envs for A2C) and sampling;
- env step: the environment's steps (ALE's vector env in one thread; SB3's DummyVecEnv with its wrappers);
- collect: the rest of the rollout's collection (Python, stacking the rollout);
- sync: A3C's copy of the global parameters into the worker's model;
- loss forward: A3C's bootstrap value and `a3c_loss` (the rollout's forward pass);
- backward: A3C's backward pass and gradient clip; SB3's `train` less the optimizer's step (its loss's forward
  pass, backward pass and clip);
- optimizer step: the shared RMSprop's (A3C) or torch RMSprop's (SB3) step;
- other: the wall clock less the above (the budget's claims, statistics, the training loop).

Each as milliseconds per agent step over --steps steps after a warm-up. An A3C worker takes one agent step in the
sum of its phases; with W workers on W cores (no contention) A3C runs W / that steps/s, and SB3 A2C with W envs
runs on one core: the per-step figures say which phases keep acrl's ratio from the 3x goal. Then acrl A3C with W
workers (--a2c-envs) runs --learn-steps steps as atari_speed's part a3c runs it (start-up included): its steps/s
against W times one worker's says how near the workers come to that figure.

    python benchmarks/a3c_profile.py --out benchmarks/results/a3c_profile.json

Writes --out (default benchmarks/results/tmp/a3c_profile.json) with `provenance()`; benchmarks/sections/pixels.py
renders it below the Atari speed. Run it on an idle machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from atari_speed import a3c_preset, acrl_a3c, in_fresh_process, sb3_a2c
from meta import scratch_path

from acrl.core.files import write_json_atomic
from acrl.core.provenance import load_average, provenance


class PhaseTimer:
    """Wall-clock seconds per named phase: `timed(name, fn)` wraps a callable so that each call adds its duration
    to `seconds[name]` (about a microsecond a call, against milliseconds in the phases timed)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def timed(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn`, timed under `name`."""

        def call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - start

        return call


PHASES = ("sync", "act forward", "env step", "collect", "loss forward", "backward", "optimizer step")
"""The phases in the order a worker's iteration runs them (see the module docstring); SB3's have no sync and no
loss forward of their own."""


def per_step_ms(phases: dict[str, float], wall: float, steps: int) -> dict[str, Any]:
    """Phase seconds as milliseconds per agent step, in `PHASES` order, with the wall clock's remainder as "other"."""
    ms = {name: 1e3 * phases[name] / steps for name in PHASES if name in phases}
    ms["other"] = max(0.0, 1e3 * wall / steps - sum(ms.values()))
    return {"steps": steps, "wall_s": wall, "ms_per_step": ms, "steps_per_s": steps / wall}


def profile_a3c(env_id: str, steps: int, warmup: int) -> dict[str, Any]:
    """One acrl A3C worker (the atari_speed preset: one env, t_max 5, one thread), `run_worker` itself run in this
    process for `warmup` then `steps` agent steps, its phases timed by wrapping what it calls: the sync of the
    global parameters, the acting forward passes, the env's steps, the rest of the rollout's collection, the
    loss's forward passes (bootstrap and `a3c_loss`), the backward pass with the clip, the shared optimizer's
    step."""
    import multiprocessing
    import os
    from contextlib import ExitStack
    from unittest import mock

    import acrl
    from acrl.algos import a3c
    from acrl.parts.actor_critic import ActorCritic
    from acrl.parts.workers import StepBudget

    torch.set_num_threads(1)
    agent = acrl.A3C(env_id, **a3c_preset(env_id, 1, steps))
    ctx = multiprocessing.get_context("fork")
    timer = PhaseTimer()

    def worker_envs(*args: Any, **kwargs: Any) -> Any:
        envs, obs = make_worker_envs(*args, **kwargs)
        envs.step = timer.timed("env step", envs.step)
        return envs, obs

    make_worker_envs = a3c.make_worker_envs
    with ExitStack() as patches:
        for target, name, phase in (
            (a3c, "sync_parameters", "sync"),
            (a3c, "collect_rollout", "collect"),
            (ActorCritic, "act", "act forward"),
            (a3c, "bootstrap_value", "loss forward"),
            (a3c, "a3c_loss", "loss forward"),
            (a3c, "apply_gradients", "backward"),
            (agent.optimizer, "step", "optimizer step"),
        ):
            patches.enter_context(mock.patch.object(target, name, timer.timed(phase, getattr(target, name))))
        patches.enter_context(mock.patch.object(a3c, "make_worker_envs", worker_envs))
        for budget_steps in (warmup, steps):
            timer.seconds.clear()
            budget = StepBudget(ctx, 1, 0, budget_steps, parent_pid=os.getppid())
            start = time.perf_counter()
            a3c.run_worker(0, budget, agent.config, env_id, agent.shared_state(ctx))
            wall = time.perf_counter() - start
    phases = dict(timer.seconds)
    phases["collect"] -= phases["act forward"] + phases["env step"]  # collect's own Python
    phases["backward"] -= phases["optimizer step"]  # apply_gradients less the step: backward and clip
    return per_step_ms(phases, wall, budget.steps_taken())


def profile_a2c(env_id: str, n_envs: int, steps: int) -> dict[str, Any]:
    """SB3 A2C as atari_speed's part a3c runs it (`n_envs` envs, n_steps 5, one thread) for `steps` agent steps
    after a warm-up of 10 rollouts, its phases timed as `profile_a3c`'s: the acting forward passes, the vector env's
    steps, the rest of `collect_rollouts`, `train` (forward, backward, clip) and the optimizer's step."""
    model = sb3_a2c(env_id, n_envs, steps)
    model.learn(total_timesteps=10 * 5 * n_envs)
    timer = PhaseTimer()
    model.policy.forward = timer.timed("act forward", model.policy.forward)
    model.env.step = timer.timed("env step", model.env.step)
    model.collect_rollouts = timer.timed("collect", model.collect_rollouts)
    model.train = timer.timed("backward", model.train)
    model.policy.optimizer.step = timer.timed("optimizer step", model.policy.optimizer.step)
    start_steps, start = model.num_timesteps, time.perf_counter()
    model.learn(total_timesteps=steps, reset_num_timesteps=False)
    wall = time.perf_counter() - start
    phases = dict(timer.seconds)
    phases["collect"] -= phases["act forward"] + phases["env step"]
    phases["backward"] -= phases["optimizer step"]  # train's forward, backward and clip
    return per_step_ms(phases, wall, model.num_timesteps - start_steps)


def main(argv: list[str] | None = None) -> int:
    """Profile one A3C worker and SB3 A2C and write --out."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="ALE/Pong-v5")
    parser.add_argument("--steps", type=int, default=4000, help="profiled agent steps of each, after the warm-up")
    parser.add_argument(
        "--a2c-envs", type=int, default=2, help="SB3 A2C's envs and A3C's workers (atari_speed's --a3c-workers)"
    )
    parser.add_argument("--learn-steps", type=int, default=20_000, help="steps of the A3C run with all its workers")
    parser.add_argument("--out", type=Path, default=scratch_path("a3c_profile"))
    args = parser.parse_args(argv)
    load_before = load_average()
    profiles = {
        "acrl A3C worker": in_fresh_process(profile_a3c, args.env, args.steps, 500),
        "SB3 A2C": in_fresh_process(profile_a2c, args.env, args.a2c_envs, args.steps),
    }
    for name, p in profiles.items():
        phases = ", ".join(f"{phase} {ms:.2f}" for phase, ms in p["ms_per_step"].items())
        print(f"{name}: {p['steps_per_s']:.0f} steps/s; ms per step: {phases}", flush=True)
    workers = in_fresh_process(acrl_a3c, args.env, args.a2c_envs, args.learn_steps)
    print(f"acrl A3C, {args.a2c_envs} workers: {workers['steps_per_s']:.0f} steps/s", flush=True)
    summary = {
        "benchmark": "a3c_profile",
        "meta": provenance(load_before, ["stable-baselines3", "ale-py"]),
        "env": args.env,
        "settings": {
            "steps": args.steps,
            "warmup_steps": 500,
            "a2c_envs": args.a2c_envs,
            "encoder": a3c_preset(args.env, 1, args.steps).get("encoder", "auto"),
            "learn_steps": args.learn_steps,
            "threads": 1,
            "n_steps": 5,
        },
        "profiles": profiles,
        "workers": workers,
    }
    write_json_atomic(args.out, summary, default=float)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
