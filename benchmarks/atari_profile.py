"""Where PPO's Atari time goes (issue #48 item 4, "profile first"): acrl PPO with its `ALE/*-v5` preset, one
torch thread, one warm-up rollout and update, then --rollouts rollouts (`collect`) and updates (`update`) under
`torch.profiler` (CPU activities), in fp32 and, on a CPU with bfloat16 instructions, bf16; each precision in a
fresh process (`atari_speed.in_fresh_process`), the agent as `atari_speed.acrl_ppo` builds it.

For each precision and phase: the phase's wall-clock seconds with the profiler on (it adds its own overhead, so
compare shares, not these seconds with atari_speed's), the operators' total self CPU seconds, and the --top
operators by self CPU time, each with its seconds, share of the phase's wall clock and call count. The
remainder, wall clock less the operators' self time, is the Python and the environment outside torch (the ALE
vector env steps in its own threads and shows as that remainder in `collect`).

    python benchmarks/atari_profile.py --out benchmarks/results/atari_profile.json

Writes --out (default benchmarks/results/tmp/atari_profile.json) with `provenance()` (command, commit, date, CPU,
load average before and after, versions); benchmarks/sections/pixels.py renders it below the Atari speed.
Run it on an idle machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import torch
from atari_speed import in_fresh_process, ppo_preset
from meta import scratch_path

from acrl.core.devices import cpu_bf16_features
from acrl.core.files import write_json_atomic
from acrl.core.provenance import load_average, provenance


def phase_profile(run: Any, repeats: int, top: int) -> dict[str, Any]:
    """`run()` `repeats` times under torch.profiler: wall seconds, the operators' self CPU seconds in all, and the
    `top` operators by self CPU time (name, seconds, share of the wall clock, calls)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        for _ in range(repeats):
            run()
        wall = time.perf_counter() - start
    ops = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in ops) / 1e6
    return {
        "wall_s": wall,
        "ops_self_s": total,
        "outside_ops_share": max(0.0, 1 - total / wall),
        "top": [
            {"op": e.key, "self_s": (seconds := e.self_cpu_time_total / 1e6), "share": seconds / wall, "calls": e.count}
            for e in ops[:top]
        ],
    }


def profile_ppo(env_id: str, rollouts: int, precision: str, top: int) -> dict[str, Any]:
    """acrl PPO on one thread in `precision`: a warm-up rollout and update, then `phase_profile` of `collect` and of
    `update`, `rollouts` times each (a collect before each profiled update, outside the profile)."""
    import acrl

    torch.set_num_threads(1)
    values = ppo_preset(env_id)
    steps_per_rollout = values["n_envs"] * values["n_steps"]
    values.update(seed=0, total_steps=(2 * rollouts + 1) * steps_per_rollout, eval_freq=0, precision=precision)
    agent = acrl.PPO(env_id, **values)
    agent.collect()
    agent.update()
    collect = phase_profile(agent.collect, rollouts, top)
    agent.collect()  # a fresh rollout for the updates (the profiled ones above are already learned from once)
    update = phase_profile(agent.update, rollouts, top)
    return {"precision": precision, "steps_per_rollout": steps_per_rollout, "collect": collect, "update": update}


def main(argv: list[str] | None = None) -> int:
    """Profile PPO in fp32 and (where the CPU has it) bf16 and write --out."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="ALE/Pong-v5")
    parser.add_argument("--rollouts", type=int, default=3, help="profiled collects and updates (after a warm-up)")
    parser.add_argument("--top", type=int, default=12, help="operators listed per phase")
    parser.add_argument("--out", type=Path, default=scratch_path("atari_profile"))
    args = parser.parse_args(argv)
    load_before = load_average()
    precisions = ["fp32", "bf16"] if cpu_bf16_features() else ["fp32"]
    profiles = {}
    for precision in precisions:
        profiles[precision] = p = in_fresh_process(profile_ppo, args.env, args.rollouts, precision, args.top)
        print(
            f"{precision}: collect {p['collect']['wall_s']:.1f} s, update {p['update']['wall_s']:.1f} s; top update op "
            f"{p['update']['top'][0]['op']} {p['update']['top'][0]['share']:.0%}",
            flush=True,
        )
    summary = {
        "benchmark": "atari_profile",
        "meta": provenance(load_before, ["ale-py"]),
        "env": args.env,
        "settings": {"rollouts": args.rollouts, "top": args.top, "threads": 1},
        "profiles": profiles,
    }
    write_json_atomic(args.out, summary, default=float)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
