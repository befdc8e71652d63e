"""PPO and A3C on Atari frames against Stable-Baselines3, the raw env and the machine's convolution rate, in one run.

Parts (choose with --parts; all by default), on --env (default ALE/Pong-v5), one torch thread unless said:

- ppo: acrl PPO with its `ALE/*-v5` preset in float32 (`precision=fp32`; 8 envs x 128 steps, 4 epochs,
  4 minibatches, the Nature CNN; `acrl.core.envs.make_vec_env`'s AtariVectorEnv: episodic life, clipped
  rewards, 84x84 gray, stack 4, frameskip 4, 30 no-ops, sticky actions 0.25), `collect` then `update` for one warm-up
  rollout and then --rollouts timed ones: training steps/s = steps / (collect + update seconds).
  It runs in a fresh process, whose peak RSS (`resource.getrusage` ru_maxrss of the process and of
  its children) is part "memory": goal <= 2 GB.
- sb3: SB3 PPO with the same hyperparameters and 8 envs, `make_atari_env` (DummyVecEnv, the
  default, as SB3's Atari example uses) on `gym.make(env, frameskip=1, repeat_action_probability=
  0.25)` with `AtariWrapper` (30 no-ops, frameskip 4 with max-pooling, episodic life, clipped
  rewards, 84x84 gray) and `VecFrameStack(4)`: the same preprocessing (SB3's wrapper also presses
  FIRE on reset, as ale_py's vector env with use_fire_reset). Its `CnnPolicy` features extractor,
  `NatureCNN`, is the Nature CNN (32 8x8/4, 64 4x4/2, 64 3x3/1, 512 units; frames / 255), with
  the heads on the features (net_arch []), as acrl's. Timed the same way: a callback stamps the
  end of the warm-up rollout, and the rate is the steps after it over the time after it, in a
  fresh process. Ratio ppo / sb3: goal >= 2.5 (issue #48).
- ppo_bf16: part ppo with `precision=bf16` (the networks' forward passes under bfloat16 autocast, the
  rollout's and the update's), on a CPU with bfloat16 instructions (`acrl.core.devices.cpu_bf16_features`;
  skipped, said, elsewhere): its steps/s against part ppo's and SB3's.
- raw: ale_py's AtariVectorEnv, 8 envs with the same settings, random actions: steps/s, and the
  ppo part's fraction of it.
- roofline: the update's FLOPs per second against the machine's best rate, measured in the same
  run on the same thread count. FLOPs counted by hand from the layer sizes, per 4x84x84 sample,
  multiply-adds (MACs): conv1 32 x 20 x 20 x (4 x 8 x 8) = 3,276,800; conv2 64 x 9 x 9 x (32 x 4 x 4)
  = 2,654,208; conv3 64 x 7 x 7 x (64 x 3 x 3) = 1,806,336; fc 3,136 x 512 = 1,605,632; the heads
  512 x (actions + 1). A forward pass is 2 FLOPs per MAC; the backward pass twice the forward's
  (input and weight gradients) except conv1, which needs no input gradient: an update sample costs
  6 MACs - 2 conv1 MACs FLOPs, n_epochs x n_envs x n_steps samples per rollout. The best rate: the
  fastest, in GFLOP/s, of each of the CNN's convolutions (forward, the minibatch's batch) and
  torch.mm at the fc's shape and at 1024 x 1024 x 1024, in float32 and, where part ppo_bf16 runs, in
  bfloat16 too; the update's fraction is the faster precision's update against the best of them all
  (goal >= 70%). Also the rollout's forward passes.
- a3c: acrl A3C with --a3c-workers (default 2) workers of one env, t_max 5, against SB3 A2C with as
  many envs (DummyVecEnv) and n_steps 5, the same CNN (A3C's preset encoder; SB3's NatureCNN for
  the Nature one), over --a3c-steps steps each, steps / `learn` seconds (start-up included for
  both): ratio, goal >= 3 (issue #48).
- threads: parts ppo and sb3 again, each on --threads torch threads (default: the cores; acrl's
  `torch_threads`, SB3 `torch.set_num_threads`): a PPO update has the machine to itself between
  rollouts, and both libraries use its cores there. Steps/s of each and their ratio.

    python benchmarks/atari_speed.py --out benchmarks/results/atari_speed.json   # about 5 minutes
    python benchmarks/atari_speed.py --parts raw roofline --raw-steps 800        # a check

Writes --out (default benchmarks/results/tmp/atari_speed.json) with `provenance()`; a later run of
other parts keeps the earlier parts' entries.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import torch
from meta import scratch_path

from acrl.core.devices import cpu_bf16_features
from acrl.core.files import write_json_atomic
from acrl.core.provenance import cpu_model, load_average, provenance

PARTS = ("ppo", "ppo_bf16", "sb3", "raw", "roofline", "a3c", "threads")
# Nature CNN per 4x84x84 sample, multiply-adds (see the module docstring)
CONV_LAYERS = (  # (in channels, out channels, kernel, stride, input side)
    (4, 32, 8, 4, 84),
    (32, 64, 4, 2, 20),
    (64, 64, 3, 1, 9),
)
CONV1_MACS, CONV2_MACS, CONV3_MACS, FC_MACS = 32 * 20 * 20 * 256, 64 * 9 * 9 * 512, 64 * 7 * 7 * 576, 3136 * 512


def nature_macs(actions: int) -> int:
    """Multiply-adds of one Nature CNN forward pass with a policy (actions) and a value head (1)."""
    return CONV1_MACS + CONV2_MACS + CONV3_MACS + FC_MACS + 512 * (actions + 1)


def update_flops_per_sample(actions: int) -> int:
    """FLOPs of one sample's forward and backward pass: 2 x MACs forward, 4 x MACs backward less conv1's
    input gradient."""
    return 6 * nature_macs(actions) - 2 * CONV1_MACS


def ppo_preset(env_id: str) -> dict[str, Any]:
    """acrl's PPO preset for `env_id`.

    Raises:
        SystemExit: acrl has none (the Atari preset comes with the Atari work).
    """
    from acrl.core.config import preset_values

    values, _ = preset_values("ppo", env_id, None)
    if "n_steps" not in values:
        raise SystemExit(f"atari_speed: acrl has no PPO preset for {env_id} (needs acrl's Atari support)")
    return dict(values)


def peak_rss() -> dict[str, float]:
    """Peak resident set size in MB (ru_maxrss is in KiB on Linux) of this process and of its waited-for children."""
    return {
        "self_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "children_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }


# ---------------------------------------------------------------- each part in its own process
def acrl_ppo(env_id: str, rollouts: int, threads: int = 1, precision: str = "fp32") -> dict[str, Any]:
    """acrl PPO on `threads` torch threads in `precision`: one warm-up rollout, then `rollouts` timed collect +
    update; the update phase timed apart."""
    import acrl

    torch.set_num_threads(threads)
    values = ppo_preset(env_id)
    steps_per_rollout = values["n_envs"] * values["n_steps"]
    values.update(
        seed=0, total_steps=(rollouts + 1) * steps_per_rollout, eval_freq=0, torch_threads=threads, precision=precision
    )
    agent = acrl.PPO(env_id, **values)
    agent.collect()
    agent.update()
    collect_s = update_s = 0.0
    for _ in range(rollouts):
        t = time.perf_counter()
        agent.collect()
        collect_s += time.perf_counter() - t
        t = time.perf_counter()
        agent.update()
        update_s += time.perf_counter() - t
    steps = rollouts * steps_per_rollout
    return {
        "steps": steps,
        "collect_s": collect_s,
        "update_s": update_s,
        "steps_per_s": steps / (collect_s + update_s),
        "n_envs": values["n_envs"],
        "n_steps": values["n_steps"],
        "n_epochs": values["n_epochs"],
        "batch_size": values["batch_size"],
        "actions": int(agent.act_dim),
        "precision": precision,
        "peak_rss": peak_rss(),
    }


def sb3_atari_env(env_id: str, n_envs: int) -> Any:
    """SB3's Atari preprocessing on `env_id` (see the module docstring), `n_envs` DummyVecEnv envs, 4 frames stacked."""
    import ale_py
    import gymnasium as gym
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.vec_env import VecFrameStack

    gym.register_envs(ale_py)
    venv = make_atari_env(env_id, n_envs=n_envs, seed=0, env_kwargs={"frameskip": 1, "repeat_action_probability": 0.25})
    return VecFrameStack(venv, n_stack=4)


def sb3_ppo(env_id: str, rollouts: int, threads: int = 1) -> dict[str, Any]:
    """SB3 PPO with acrl's preset values on `threads` torch threads: the steps and seconds after the warm-up
    rollout."""
    from minatar_vs_sb3 import ppo_model

    torch.set_num_threads(threads)
    v = ppo_preset(env_id)
    steps_per_rollout = v["n_envs"] * v["n_steps"]
    model = ppo_model(sb3_atari_env(env_id, v["n_envs"]), v, 0, {})
    stamp = rollout_stamp()
    model.learn(total_timesteps=(rollouts + 1) * steps_per_rollout, callback=stamp)
    seconds = time.perf_counter() - stamp.after_warmup
    steps = model.num_timesteps - steps_per_rollout
    return {"steps": steps, "seconds": seconds, "steps_per_s": steps / seconds, "peak_rss": peak_rss()}


def rollout_stamp() -> Any:
    """An SB3 callback recording the time at the start of the second rollout (after the warm-up rollout's update)."""
    from stable_baselines3.common.callbacks import BaseCallback

    class Stamp(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.rollouts, self.after_warmup = 0, 0.0

        def _on_rollout_start(self) -> None:
            self.rollouts += 1
            if self.rollouts == 2:
                self.after_warmup = time.perf_counter()

        def _on_step(self) -> bool:
            return True

    return Stamp()


def raw_env(env_id: str, n_envs: int, steps: int) -> dict[str, Any]:
    """ale_py's AtariVectorEnv with acrl's settings stepping random actions: steps/s."""
    from ale_py.vector_env import AtariVectorEnv

    game = env_id.split("/")[-1].split("-")[0]
    game = "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(game))
    env = AtariVectorEnv(
        game=game,
        num_envs=n_envs,
        num_threads=1,
        repeat_action_probability=0.25,
        episodic_life=True,
        reward_clipping=True,
        noop_max=30,
        frameskip=4,
        stack_num=4,
    )
    env.reset(seed=0)
    env.action_space.seed(0)
    started = time.perf_counter()
    for _ in range(steps // n_envs):
        env.step(env.action_space.sample())
    seconds = time.perf_counter() - started
    env.close()
    steps = steps // n_envs * n_envs
    return {"steps": steps, "seconds": seconds, "steps_per_s": steps / seconds, "n_envs": n_envs}


def best_rate(batch: int, dtype: torch.dtype = torch.float32, repeats: int = 10) -> dict[str, float]:
    """GFLOP/s of the Nature CNN's convolutions (forward, batch `batch`) and of torch.mm at the fc's shape
    and at 1024^3, in `dtype`, each the median of `repeats` warm runs; "best" the fastest."""

    def timed(fn: Any, flops: float) -> float:
        for _ in range(3):
            fn()
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return flops / statistics.median(times) / 1e9

    rates = {}
    with torch.no_grad():
        for i, (c_in, c_out, kernel, stride, side) in enumerate(CONV_LAYERS, 1):
            x = torch.randn(batch, c_in, side, side, dtype=dtype)
            conv = torch.nn.Conv2d(c_in, c_out, kernel, stride, dtype=dtype)
            out = (side - kernel) // stride + 1
            rates[f"conv{i}"] = timed(lambda x=x, conv=conv: conv(x), 2 * batch * c_out * out * out * c_in * kernel**2)
        a, b = torch.randn(batch, 3136, dtype=dtype), torch.randn(3136, 512, dtype=dtype)
        rates["mm fc"] = timed(lambda: torch.mm(a, b), 2 * batch * 3136 * 512)
        a = b = torch.randn(1024, 1024, dtype=dtype)
        rates["mm 1024"] = timed(lambda: torch.mm(a, b), 2 * 1024**3)
    rates["best"] = max(rates.values())
    return rates


def roofline(results: dict[str, Any]) -> dict[str, Any]:
    """The PPO runs' update and rollout GFLOP/s (per precision, from their timings and the FLOPs counted by hand)
    against the best rate of `best_rate` measured now, in float32 and, where a bf16 run is in `results`, in
    bfloat16; update_of_best: the faster update's GFLOP/s over the best rate of all."""
    runs = [results[part] for part in ("ppo", "ppo_bf16") if part in results]
    batch = runs[0]["batch_size"] if runs else 256
    rates = {"fp32": best_rate(batch)}
    if "ppo_bf16" in results:
        rates["bf16"] = best_rate(batch, torch.bfloat16)
    best = max(r["best"] for r in rates.values())
    out: dict[str, Any] = {"rates_gflops": rates, "best_gflops": best, "batch": batch}
    for run in runs:
        samples = run["steps"] * run["n_epochs"]  # each step of a rollout is a sample of each epoch
        out[run["precision"]] = {
            "update_gflops": samples * update_flops_per_sample(run["actions"]) / run["update_s"] / 1e9,
            "rollout_gflops": run["steps"] * 2 * nature_macs(run["actions"]) / run["collect_s"] / 1e9,
        }
    if runs:
        out["update_flops_per_sample"] = update_flops_per_sample(runs[0]["actions"])
        out["update_of_best"] = max(out[run["precision"]]["update_gflops"] for run in runs) / best
    return out


def a3c_preset(env_id: str, workers: int, steps: int) -> dict[str, Any]:
    """acrl's A3C preset for `env_id` as this benchmark runs it: `workers` workers of one env, t_max 5, seed 0,
    `steps` steps, no evaluation.

    Raises:
        SystemExit: acrl has no A3C preset for frames of `env_id`.
    """
    from acrl.core.config import preset_values

    values, _ = preset_values("a3c", env_id, None)
    if not values:
        raise SystemExit(f"atari_speed: acrl has no A3C preset for {env_id} (needs A3C from frames)")
    return {**values, "workers": workers, "n_envs": 1, "n_steps": 5, "seed": 0, "total_steps": steps, "eval_freq": 0}


def acrl_a3c(env_id: str, workers: int, steps: int) -> dict[str, Any]:
    """acrl A3C as `a3c_preset` sets it: steps, seconds (the agent's construction and `learn`, start-up included)
    and steps/s."""
    import acrl

    started = time.perf_counter()
    agent = acrl.A3C(env_id, **a3c_preset(env_id, workers, steps)).learn(progress=False)
    a3c = {"steps": int(agent.num_steps), "seconds": time.perf_counter() - started}
    return {**a3c, "steps_per_s": a3c["steps"] / a3c["seconds"]}


def sb3_a2c(env_id: str, n_envs: int, steps: int) -> Any:
    """SB3 A2C with acrl A3C's settings (`minatar_vs_sb3.a2c_model`, n_steps 5, learning rate annealed over `steps`)
    on `n_envs` envs of `sb3_atari_env`, with A3C's preset CNN: SB3's NatureCNN for the Nature one, else acrl's as
    SB3's features extractor; one torch thread."""
    from minatar_vs_sb3 import a2c_model

    torch.set_num_threads(1)
    encoder = a3c_preset(env_id, n_envs, steps).get("encoder", "auto")
    policy_kwargs: dict[str, Any] = {}
    if encoder not in ("auto", "nature"):
        policy_kwargs = {"features_extractor_class": acrl_cnn_class(encoder), "normalize_images": False, "net_arch": []}
    return a2c_model(env_id, sb3_atari_env(env_id, n_envs), 0, policy_kwargs, steps, n_steps=5)


def a3c_vs_a2c(env_id: str, workers: int, steps: int) -> dict[str, Any]:
    """acrl A3C (`workers` workers, t_max 5) and SB3 A2C (`workers` envs, n_steps 5), steps / learn seconds each."""
    a3c = acrl_a3c(env_id, workers, steps)
    encoder = a3c_preset(env_id, workers, steps).get("encoder", "auto")
    started = time.perf_counter()
    model = sb3_a2c(env_id, workers, steps)
    model.learn(total_timesteps=steps)
    a2c = {"steps": int(model.num_timesteps), "seconds": time.perf_counter() - started}
    a2c["steps_per_s"] = a2c["steps"] / a2c["seconds"]
    return {"acrl A3C": a3c, "SB3 A2C": a2c, "ratio": a3c["steps_per_s"] / a2c["steps_per_s"], "encoder": encoder}


def acrl_cnn_class(name: str) -> type:
    """An SB3 features extractor that is acrl's CNN `name` on SB3's (B, C, H, W) uint8-valued float frames."""
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

    from acrl.parts.encoders import CNNS, CNNEncoder

    class AcrlCNN(BaseFeaturesExtractor):
        def __init__(self, observation_space: Any):
            c, h, w = observation_space.shape
            encoder = CNNEncoder(CNNS[name], c, h, w, False, 1 / 255)
            super().__init__(observation_space, encoder.features_dim)
            self.encoder = encoder

        def forward(self, observations: torch.Tensor) -> torch.Tensor:
            return self.encoder(observations)

    return AcrlCNN


def in_fresh_process(fn: Any, *args: Any) -> Any:
    """fn(*args) in a spawned process, so that its peak RSS and its imports are its own."""
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--env", default="ALE/Pong-v5")
    parser.add_argument("--rollouts", type=int, default=10, help="timed PPO rollouts (after one warm-up)")
    parser.add_argument("--raw-steps", type=int, default=20_000, help="random-action steps of the raw env")
    parser.add_argument("--a3c-workers", type=int, default=2)
    parser.add_argument("--a3c-steps", type=int, default=20_000)
    parser.add_argument(
        "--threads", type=int, default=os.cpu_count(), help="torch threads of part threads (default: the cores)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=scratch_path("atari_speed"),
        help="result file (default: the scratch folder benchmarks/results/tmp/)",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    load_before = load_average()
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    results: dict[str, Any] = dict(previous.get("results", {}))

    if "ppo" in args.parts:
        results["ppo"] = ppo = in_fresh_process(acrl_ppo, args.env, args.rollouts)
        results["memory"] = {**ppo["peak_rss"], "goal_mb": 2048}
        print(f"acrl PPO: {ppo['steps_per_s']:.0f} steps/s; peak RSS {ppo['peak_rss']['self_mb']:.0f} MB", flush=True)
    if "ppo_bf16" in args.parts:
        if cpu_bf16_features():
            results["ppo_bf16"] = ppo = in_fresh_process(acrl_ppo, args.env, args.rollouts, 1, "bf16")
            print(f"acrl PPO, bf16: {ppo['steps_per_s']:.0f} steps/s", flush=True)
        else:
            print(f"ppo_bf16: skipped, this CPU ({cpu_model()}) has no bfloat16 instructions", flush=True)
    if "sb3" in args.parts:
        results["sb3"] = sb3 = in_fresh_process(sb3_ppo, args.env, args.rollouts)
        print(f"SB3 PPO: {sb3['steps_per_s']:.0f} steps/s", flush=True)
    if "raw" in args.parts:
        results["raw"] = raw = raw_env(args.env, 8, args.raw_steps)
        print(f"raw AtariVectorEnv: {raw['steps_per_s']:.0f} steps/s", flush=True)
    if "roofline" in args.parts:
        results["roofline"] = roofline(results)
        if "update_of_best" in results["roofline"]:
            print(f"update: {results['roofline']['update_of_best']:.0%} of the best rate", flush=True)
    if "a3c" in args.parts:
        results["a3c"] = a3c = a3c_vs_a2c(args.env, args.a3c_workers, args.a3c_steps)
        print(f"A3C / A2C: {a3c['ratio']:.2f}", flush=True)
    if "threads" in args.parts:
        acrl_rate = in_fresh_process(acrl_ppo, args.env, args.rollouts, args.threads)["steps_per_s"]
        sb3_rate = in_fresh_process(sb3_ppo, args.env, args.rollouts, args.threads)["steps_per_s"]
        ratio = acrl_rate / sb3_rate
        results["threads"] = {"threads": args.threads, "acrl": acrl_rate, "sb3": sb3_rate, "ratio": ratio}
        print(f"{args.threads} threads: acrl PPO {acrl_rate:.0f}, SB3 PPO {sb3_rate:.0f} steps/s", flush=True)
    ratios = {}
    if "ppo" in results and "sb3" in results:
        ratios["acrl/sb3"] = results["ppo"]["steps_per_s"] / results["sb3"]["steps_per_s"]
    if "ppo_bf16" in results and "sb3" in results:
        ratios["acrl bf16/sb3"] = results["ppo_bf16"]["steps_per_s"] / results["sb3"]["steps_per_s"]
    if "ppo_bf16" in results and "ppo" in results:
        ratios["bf16/fp32"] = results["ppo_bf16"]["steps_per_s"] / results["ppo"]["steps_per_s"]
    if "ppo" in results and "raw" in results:
        ratios["acrl/raw"] = results["ppo"]["steps_per_s"] / results["raw"]["steps_per_s"]
    results["ratios"] = ratios
    print("; ".join(f"{k} {v:.2f}" for k, v in ratios.items()))
    summary = {
        "benchmark": "atari_speed",
        "meta": provenance(load_before, ["stable-baselines3", "ale-py"]),
        "env": args.env,
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "results": results,
    }
    write_json_atomic(args.out, summary, default=float)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
