"""bfloat16 against float32 (a config's `precision`, `acrl.core.devices.precision_context`): the updates of
PPO and A3C on Atari-sized frames and of BCQ, TD3, SAC, TD3+BC, IQL and CQL at the papers' sizes, each precision
on the same code, side by side in one run.

Parts (choose with --parts; all by default), on --threads torch threads (default 1):

- ppo_atari: PPO's `update` (`acrl.algos.ppo.PPO.update`: 4 epochs of minibatches of 256 over a rollout of
  8 envs x 128 steps, forward, backward and Adam's step each: 16 gradient steps) with the Nature CNN on
  (4, 84, 84) uint8 frames and 6 actions, CleanRL's ppo_atari sizes; the rollout is collected once from an
  environment of fixed random frames (`Frames`, no emulator: the update alone is timed). Unit: updates/s
  (whole `update` calls; 16 gradient steps each).
- a3c_atari: one A3C worker's loop (`acrl.algos.a3c.run_worker`, in this process, one torch thread as a
  worker has) with the A3C paper's CNN (`encoder="a3c"`) and an LSTM of 256 cells on `Frames`, t_max 20,
  Adam shared as universe-starter-agent's: acting at batch 1, the bootstrap, the loss's forward pass over
  the rollout, backward and the shared optimizer's step. Unit: updates/s (rollouts of 20 steps each) and
  environment steps/s.
- bcq, td3, sac: `Agent.learn` from a replay buffer of random Hopper-v5-shaped transitions at the sizes of
  `update_roofline.SIZES` (BCQ: VAE 750-750, actor and critics 400-300, batch 100; TD3: 400-300, batch 100;
  SAC: 256-256, batch 256). Unit: updates/s.
- td3_bc, iql, cql: the same from the same buffer with their Hopper-v5 presets (the papers' D4RL settings:
  256-256, batch 256; CQL's critics 256-256-256 over 31 actions per state, about 30 TD3+BC updates' work,
  so the one whose budget bf16 would move most on a CPU). Unit: updates/s.

Each part builds an fp32 and a bf16 agent, warms both up, then times them in turn, --repeats times: the
rates are the medians, the ratio bf16 / fp32 the median of the paired ratios (the machine's speed drifts
over minutes, and the pairing cancels most of it). bf16 needs bfloat16 hardware (`check_precision`); on a
machine without it the bf16 side is refused and the JSON says so.

    ./run bench precision --repeats 5 --out benchmarks/results/precision   # an idle machine, ~5 minutes
    ./run bench precision --quick                                          # a smoke test, seconds

Writes --out.json (default benchmarks/results/tmp/precision.json) with `provenance()` (commit, date, CPU,
load average before and after, versions), the CPU's bfloat16 features and torch's CPU capability.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from meta import scratch_path
from update_roofline import ACT_DIM, OBS_DIM, SIZES

PRECISIONS = ("fp32", "bf16")


class Frames(gym.Env):
    """Atari-sized observations without an emulator: (4, 84, 84) uint8 frames, a stack in the (C, H, W)
    layout of acrl's Atari envs, cycling through 8 fixed random ones; 6 actions; reward 0; episodes never
    end. Stepping costs next to nothing, so what is timed is the networks'."""

    observation_space = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    action_space = gym.spaces.Discrete(6)

    def __init__(self) -> None:
        self._frames = np.random.default_rng(0).integers(0, 256, (8, 4, 84, 84), dtype=np.uint8)
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._t = 0
        return self._frames[0], {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._t += 1
        return self._frames[self._t % len(self._frames)], 0.0, False, False, {}


def synchronize(device: str) -> None:
    """Wait for a CUDA device's queued work (timings end there)."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()


# ------------------------------------------------------------------------------------------------ the parts
def ppo_atari(precision: str, quick: bool, threads: int, device: str):
    """A timer for PPO's Atari update: returns a function (n) -> seconds of n `update` calls."""
    from acrl import PPO

    sizes = {"n_envs": 2, "n_steps": 128, "n_epochs": 1} if quick else {"n_envs": 8, "n_steps": 128, "n_epochs": 4}
    agent = PPO(
        Frames,
        precision=precision,
        batch_size=256,
        encoder="nature",
        channels="first",
        learning_rate=2.5e-4,
        eval_freq=0,
        torch_threads=threads,
        device=device,
        **sizes,
    )
    agent.collect()

    def timed(n: int) -> float:
        torch.set_num_threads(threads)  # as the run loop sets it (an A3C part may have run in between)
        synchronize(device)
        started = time.perf_counter()
        for _ in range(n):
            agent.update()
        synchronize(device)
        return time.perf_counter() - started

    return timed


def a3c_atari(precision: str, quick: bool, threads: int, device: str):
    """A timer for one A3C worker (CPU, one thread): returns (n) -> seconds of n rollouts of t_max 20 steps
    and their updates, through `run_worker` itself in this process."""
    import multiprocessing

    from acrl import A3C
    from acrl.algos.a3c import UPDATE_STATS, SharedState, run_worker
    from acrl.parts.workers import StepBudget, WorkerStats

    agent = A3C(
        Frames,
        precision=precision,
        workers=1,
        encoder="a3c",
        channels="first",
        lstm_hidden_size=256,
        n_steps=20,
        optimizer="adam",
        learning_rate=1e-4,
        eval_freq=0,
    )
    ctx = multiprocessing.get_context("fork")
    shared = SharedState(
        agent.model, agent.parameters, agent.optimizer, agent.obs_normalizer, ctx.Lock(), WorkerStats(1, UPDATE_STATS)
    )
    done = [0]

    def timed(n: int) -> float:
        steps = n * agent.config.n_steps
        budget = StepBudget(ctx, 1, done[0], done[0] + steps, parent_pid=os.getppid())
        started = time.perf_counter()
        run_worker(0, budget, agent.config, Frames, shared)  # builds its env and local model: ~1% of the time
        done[0] += steps
        return time.perf_counter() - started

    return timed


def off_policy(algo: str):
    """The timer factory of `algo` ("bcq", "td3" or "sac" at `update_roofline.SIZES`; "td3_bc", "iql" or "cql" at
    their Hopper-v5 presets) on a random buffer."""

    def factory(precision: str, quick: bool, threads: int, device: str):
        import acrl
        from acrl.parts.buffers import ReplayBuffer

        n = 2_000 if quick else 100_000
        rng = np.random.default_rng(0)
        observations = rng.normal(size=(n + 1, OBS_DIM)).astype(np.float32)
        buffer = ReplayBuffer(n, OBS_DIM, (ACT_DIM,), torch.device(device))
        buffer.add(
            observations[:-1],
            rng.uniform(-1, 1, (n, ACT_DIM)).astype(np.float32),
            rng.normal(size=n).astype(np.float32),
            observations[1:],
            rng.random(n) < 0.01,
            np.zeros(n, bool),
        )
        classes = {"bcq": acrl.BCQ, "td3": acrl.TD3, "sac": acrl.SAC}
        classes |= {"td3_bc": acrl.TD3BC, "iql": acrl.IQL, "cql": acrl.CQL}
        agent = classes[algo](
            "Hopper-v5",
            buffer=buffer,
            precision=precision,
            seed=0,
            eval_freq=0,
            torch_threads=threads,
            device=device,
            **SIZES.get(algo, {}),
        )

        def timed(updates: int) -> float:
            synchronize(device)
            started = time.perf_counter()
            agent.learn(agent.num_steps + updates, progress=False)
            synchronize(device)
            return time.perf_counter() - started

        return timed

    return factory


PARTS = {
    "ppo_atari": (ppo_atari, 3, "update calls per second (16 minibatch steps each; --quick: 1)"),
    "a3c_atari": (a3c_atari, 50, "updates (rollouts of 20 steps) per second"),
    "bcq": (off_policy("bcq"), 200, "updates per second"),
    "td3": (off_policy("td3"), 1000, "updates per second"),
    "sac": (off_policy("sac"), 600, "updates per second"),
    "td3_bc": (off_policy("td3_bc"), 500, "updates per second"),
    "iql": (off_policy("iql"), 400, "updates per second"),
    "cql": (off_policy("cql"), 20, "updates per second"),
}
"""name -> (timer factory, units timed per repeat: a few seconds each on one thread, what the rate counts)."""


def measure(name: str, quick: bool, repeats: int, threads: int, device: str) -> dict[str, Any]:
    """fp32 and bf16 of one part, timed in turn: the medians, every run, the paired ratio."""
    from acrl.core.errors import InputError

    factory, units, unit = PARTS[name]
    units = 1 if quick else units
    timers, refused = {}, {}
    for precision in PRECISIONS:
        try:
            timers[precision] = factory(precision, quick, threads, device)
        except InputError as error:  # bf16 on hardware without it
            refused[precision] = str(error)
    for timed in timers.values():
        timed(1)  # warm-up: allocations, oneDNN's kernel choices
    rates: dict[str, list[float]] = {precision: [] for precision in timers}
    for _ in range(repeats):
        for precision, timed in timers.items():
            rates[precision].append(units / timed(units))
    result: dict[str, Any] = {"unit": unit, "units_per_repeat": units, "refused": refused}
    for precision, runs in rates.items():
        result[precision], result[f"{precision}_runs"] = statistics.median(runs), runs
    if len(rates) == 2:
        result["ratio_bf16_over_fp32"] = statistics.median(b / a for a, b in zip(rates["fp32"], rates["bf16"]))
    if name == "a3c_atari":
        for precision in rates:
            result[f"{precision}_steps_per_s"] = result[precision] * 20
    return result


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring); returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", nargs="+", default=list(PARTS), choices=list(PARTS))
    parser.add_argument("--threads", type=int, default=1, help="torch threads (A3C's worker: always 1)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu", help="cpu or cuda (A3C stays on the CPU)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repeat: checks that it runs")
    parser.add_argument("--out", type=Path, default=scratch_path("precision").with_suffix(""))
    args = parser.parse_args(argv)

    from acrl.core.devices import cpu_bf16_features
    from acrl.core.files import write_json_atomic
    from acrl.core.provenance import load_average, provenance

    load_before = load_average()
    repeats = 1 if args.quick else args.repeats
    parts = {}
    for name in args.parts:
        parts[name] = measure(name, args.quick, repeats, args.threads, args.device)
        row = parts[name]
        rates = ", ".join(f"{p} {row[p]:.2f}" for p in PRECISIONS if p in row)
        ratio = f"; bf16 / fp32 {row['ratio_bf16_over_fp32']:.2f}x" if "ratio_bf16_over_fp32" in row else ""
        refused = f" (refused: {row['refused']})" if row["refused"] else ""
        print(f"{name}: {rates} {row['unit']}{ratio}{refused}")
    summary = {
        "meta": provenance(load_before, ["mujoco"]),
        "machine": {
            "cpu_bf16_features": list(cpu_bf16_features()),
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "device": args.device,
            "gpu": torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else None,
        },
        "threads": args.threads,
        "repeats": repeats,
        "quick": args.quick,
        "parts": parts,
    }
    write_json_atomic(args.out.with_suffix(".json"), summary)
    print(f"wrote {args.out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
