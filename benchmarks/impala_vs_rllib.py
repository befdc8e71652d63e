"""acrl IMPALA against RLlib's IMPALA, side by side in one run: environment steps per second while training, with
the same environment, networks, actor count, unroll length and batch (issue #49, item 5); beside it acrl A3C on
the same cores, and acrl IMPALA from 1 actor to --actors with the learner's time split between waiting for
unrolls and its own work.

For each environment in --envs and each of --repeats (the libraries taking turns going first):
- acrl IMPALA (`IMPALA.from_preset`, the environment's preset: n_envs, unroll_length, batch_size and the learner's
  settings) with each actor count in --actors, evaluation off. Its rate is the steady one, between the end of its
  first iteration and of its last (Ray's start, the actors' start and the first unrolls excluded); the learner's
  waiting is the sum of its iterations' `train/wait_s` (the time in `ActorPool.take`) over the same span, the rest
  of the span being its own work (the V-trace update, the weights' publication, the run loop's bookkeeping).
- RLlib's IMPALA (ray[rllib] at acrl's Ray version, its new API stack), with as many env runners as the largest
  actor count, each of n_envs environments (`num_envs_per_env_runner`), rollout_fragment_length = unroll_length,
  train_batch_size_per_learner = batch_size x unroll_length x n_envs steps, the learner in the driver
  (`num_learners=0`, as acrl's), the same gamma, learning rate, gradient clip (global norm), baseline cost,
  entropy bonus and V-trace clipping; its steady rate the same way, between the first and the last `train()`
  call's lifetime count of sampled env steps (an RLlib IMPALA iteration lasts at least its
  min_time_s_per_iteration, 10 s: give --steps enough for several).
- acrl A3C (its preset for the environment) with as many workers, evaluation off, its steady rate the same way.

The networks match through RLlib's `DefaultModelConfig` (built by `rllib_model` from acrl's config):
- vectors (CartPole-v1): acrl's separate 64-64 tanh actor and critic are `fcnet_hiddens=[64, 64]`,
  `fcnet_activation="tanh"`, `vf_share_layers=False`, `head_fcnet_hiddens=[]` (a linear output on each encoder):
  the same layers.
- MinAtar frames: acrl's MinAtar CNN (16 3x3 filters, stride 1, no padding, ReLU, then a shared 128-unit ReLU
  layer and linear policy and value outputs) is `conv_filters=[[16, 3, 1, "valid"]]`, `conv_activation="relu"`,
  `vf_share_layers=True`, `head_fcnet_hiddens=[128]`. RLlib's default catalog cannot share the 128-unit layer:
  its policy and value heads each get one (1,024 x 128 multiply-adds more per step, for RLlib). RLlib gets
  MinAtar's (10, 10, C) frames as float32 channels-last (its CNN's layout); acrl gets them as bool.

MinAtar Breakout rather than Atari Pong: MinAtar runs the same in both libraries without any preprocessing to
match (Pong needs the Atari wrappers, frame skip, stacking and resizing done alike on both sides), its small CNN
keeps the comparison on the actor-learner machinery rather than on one large network's matrix products, which
the 2 cores share with the actors, and acrl A3C has a MinAtar preset to compare with.

Where they still differ: RLlib's new stack steps Adam (acrl: the paper's RMSProp; the same cost per parameter),
averages the loss (acrl sums it; no cost), and reserves a CPU for its driver (Ray is started with the machine's
cores + 1 logical CPUs for it, so that its runners can be placed; acrl's learner also runs in the driver, which
Ray does not count). Every torch uses --threads threads in the learner and 1 in each actor (RLlib's env runners:
OMP_NUM_THREADS=1).

RLlib's `import ray.rllib` needs packages acrl's venv lacks (dm-tree, ...), so RLlib runs in a venv of its own,
benchmarks/.venv-rllib (gitignored; created on first use with `python -m venv` and `pip install
"ray[rllib]==<acrl's ray>" torch==<acrl's torch> minatar`: the gymnasium RLlib pins, 1.2.2 for Ray 2.60,
where acrl has 1.4; CartPole-v1 and MinAtar's environments are the same in both), in a subprocess that prints its
result as JSON, as benchmarks/bcq_vs_d3rlpy.py runs d3rlpy.

    python benchmarks/impala_vs_rllib.py --out benchmarks/results/impala_vs_rllib.json   # idle machine, ~30 min
    python benchmarks/impala_vs_rllib.py --quick --no-rllib       # acrl's side in seconds (no RLlib venv needed)

Prints a markdown table and writes --out (default benchmarks/results/tmp/impala_vs_rllib.json) with
`provenance()` (command, commit, date, CPU, load average before and after, versions).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import meta
from meta import ROOT, scratch_path

VENV = ROOT / "benchmarks" / ".venv-rllib"
ENVS = ("CartPole-v1", "MinAtar/Breakout-v1")


# ------------------------------------------------------------------------------------ RLlib side
# Runs under benchmarks/.venv-rllib/bin/python: imports only ray, torch, numpy, gymnasium and minatar.


def minatar_creator(game: str) -> Any:
    """An RLlib env creator of MinAtar's `game` with its minimal action set (acrl's MinAtar/*-v1), frames as
    float32 (10, 10, C) in [0, 1]."""

    def make(_config: Any) -> Any:
        import gymnasium as gym
        import numpy as np
        from minatar.gym import BaseEnv

        env = BaseEnv(game, use_minimal_action_set=True)
        space = gym.spaces.Box(0.0, 1.0, env.observation_space.shape, np.float32)
        return gym.wrappers.TransformObservation(env, lambda obs: obs.astype(np.float32), space)

    return make


def lifetime(result: dict, key: str) -> float | None:
    """A lifetime counter of an RLlib `train()` result, at the top level or under its env runners' or learners'
    results (where the new API stack keeps it); None where it is not."""
    for where in (result, result.get("env_runners", {}), result.get("learners", {}).get("__all_modules__", {})):
        if key in where:
            return float(where[key])
    return None


def rllib_worker(spec: dict) -> dict:
    """Train RLlib's IMPALA with `spec`'s settings until spec["steps"] env steps are sampled; returns its version,
    the steady rate of sampled (and, where RLlib reports it, trained) env steps and the iterations' marks."""
    import ray
    import torch
    from ray.rllib.algorithms.impala import IMPALAConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.tune.registry import register_env

    torch.set_num_threads(spec["threads"])
    env = spec["env"]
    if spec["minatar_game"]:
        register_env(env, minatar_creator(spec["minatar_game"]))
    ray.init(
        num_cpus=spec["actors"] + 1,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"OMP_NUM_THREADS": "1"}},
    )
    s = spec["settings"]
    config = (
        IMPALAConfig()
        .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
        .environment(env)
        .framework("torch")
        .env_runners(
            num_env_runners=spec["actors"],
            num_envs_per_env_runner=s["n_envs"],
            rollout_fragment_length=s["unroll_length"],
            num_cpus_per_env_runner=1,
        )
        .learners(num_learners=0)
        .training(
            train_batch_size_per_learner=s["batch_size"] * s["unroll_length"] * s["n_envs"],
            lr=s["learning_rate"],
            gamma=s["gamma"],
            grad_clip=s["max_grad_norm"],
            grad_clip_by="global_norm",
            vf_loss_coeff=s["vf_coef"],
            entropy_coeff=s["ent_coef"],
            vtrace_clip_rho_threshold=s["rho_bar"],
            vtrace_clip_pg_rho_threshold=s["pg_rho_bar"],
        )
        .rl_module(model_config=DefaultModelConfig(**spec["model_config"]))
        .debugging(seed=spec["seed"])
    )
    algo = config.build_algo()
    marks = []
    try:
        while len(marks) < 2 or marks[-1][1] < spec["steps"]:  # two marks at least: a rate between them
            result = algo.train()
            sampled = lifetime(result, "num_env_steps_sampled_lifetime")
            if sampled is None:
                raise RuntimeError(f"no num_env_steps_sampled_lifetime in RLlib's result (keys: {sorted(result)})")
            marks.append((time.perf_counter(), sampled, lifetime(result, "num_env_steps_trained_lifetime")))
    finally:
        algo.stop()
        ray.shutdown()
    (t0, s0, k0), (t1, s1, k1) = marks[0], marks[-1]
    return {
        "library": "RLlib",
        "version": ray.__version__,
        "gymnasium": importlib.metadata.version("gymnasium"),
        "steps": s1,
        "iterations": len(marks),
        "steps_per_s": (s1 - s0) / max(t1 - t0, 1e-9),
        "trained_steps_per_s": (k1 - k0) / max(t1 - t0, 1e-9) if k0 is not None and k1 is not None else None,
    }


# ------------------------------------------------------------------------------------ acrl side


def rllib_model(config: Any) -> dict[str, Any]:
    """RLlib `DefaultModelConfig` keyword arguments for the network of acrl's IMPALA `config` (after `_build`,
    which records its encoder): see the module docstring.

    Raises:
        ValueError: an encoder or an LSTM this mapping does not cover.
    """
    from acrl.parts.encoders import CNNS

    if config.lstm_hidden_size:
        raise ValueError("impala_vs_rllib compares feed-forward networks only (lstm_hidden_size 0).")
    if config.encoder == "mlp":
        return {
            "fcnet_hiddens": list(config.hidden_sizes),
            "fcnet_activation": config.activation,
            "vf_share_layers": config.shared_trunk,
            "head_fcnet_hiddens": [],
        }
    if config.encoder == "minatar":
        cnn = CNNS["minatar"]
        return {
            "conv_filters": [[channels, kernel, stride, "valid"] for channels, kernel, stride in cnn.convs],
            "conv_activation": "relu",
            "vf_share_layers": True,
            "head_fcnet_hiddens": [cnn.features_dim],
            "head_fcnet_activation": "relu",
        }
    raise ValueError(f"impala_vs_rllib has no RLlib network for acrl's encoder {config.encoder!r}.")


def time_acrl(algo: str, env_id: str, count: int, steps: int, threads: int, seed: int) -> dict:
    """Train acrl `algo` ("impala": `count` actors; "a3c": `count` workers) with the preset of `env_id` for
    `steps` env steps, evaluation off; its steady rate and, for IMPALA, the learner's share of waiting."""
    from acrl import A3C, IMPALA, Callback

    class Clock(Callback):
        """(seconds, env steps, the learner's wait in seconds) at each iteration's end."""

        def __init__(self) -> None:
            self.marks: list[tuple[float, int, float]] = []

        def on_iteration(self, step: int, metrics: Any) -> None:
            self.marks.append((time.perf_counter(), step, float(metrics.get("train/wait_s", 0.0))))

    run = {"total_steps": steps, "eval_freq": 0, "seed": seed}
    if algo == "impala":
        agent = IMPALA.from_preset(env_id, actors=count, torch_threads=threads, **run)
    else:
        agent = A3C.from_preset(env_id, workers=count, **run)
    clock = Clock()
    agent.learn(progress=False, callbacks=[clock])
    (t0, s0, _), (t1, s1, _) = clock.marks[0], clock.marks[-1]
    span = max(t1 - t0, 1e-9)
    result = {"library": f"acrl {algo.upper()}", "count": count, "steps": s1, "steps_per_s": (s1 - s0) / span}
    if algo == "impala":
        result["wait_fraction"] = sum(wait for _, _, wait in clock.marks[1:]) / span
    return result


def ensure_venv() -> Path:
    """benchmarks/.venv-rllib/bin/python (`meta.ensure_venv`: acrl's ray with rllib, acrl's torch, minatar; the
    gymnasium RLlib pins, 1.2.2 for Ray 2.60, where acrl has 1.4)."""
    import ray
    import torch

    packages = [f"ray[rllib]=={ray.__version__}", f"torch=={torch.__version__.split('+')[0]}", "minatar"]
    return meta.ensure_venv(VENV, "ray.rllib, minatar", packages)


def run_rllib(python: Path, spec: dict) -> dict:
    """`rllib_worker(spec)` in the RLlib venv's python (`meta.run_worker`); its result (RuntimeError if it fails)."""
    return meta.run_worker(python, __file__, "--rllib-worker", spec)


def rllib_spec(env_id: str, actors: int, steps: int, threads: int, seed: int) -> dict:
    """What `rllib_worker` needs for `env_id`: acrl IMPALA's preset settings and its network as RLlib's."""
    from acrl import IMPALA
    from acrl.tasks import MINATAR_GAMES

    agent = IMPALA.from_preset(env_id, actors=actors)  # builds the model: config.encoder is resolved
    cfg = agent.config
    game = env_id.split("/")[1].split("-")[0] if env_id.startswith("MinAtar/") else None
    keys = ("n_envs", "unroll_length", "batch_size", "learning_rate", "gamma", "max_grad_norm", "vf_coef")
    keys += ("ent_coef", "rho_bar", "pg_rho_bar")
    return {
        "env": env_id,
        "minatar_game": next((g for g in MINATAR_GAMES if g.title().replace("_", "") == game), None),
        "actors": actors,
        "steps": steps,
        "threads": threads,
        "seed": seed,
        "settings": {key: getattr(cfg, key) for key in keys},
        "model_config": rllib_model(cfg),
    }


def measure(env_id: str, args: argparse.Namespace, python: Path | None) -> dict:
    """`env_id`'s runs: acrl IMPALA with each of args.actors, acrl A3C and RLlib's IMPALA (without `python`, not)
    with the most of them, args.repeats times (acrl and RLlib taking turns going first); their medians."""
    most = max(args.actors)
    spec = rllib_spec(env_id, most, args.steps, args.threads, seed=0)
    runs: dict[str, list[dict]] = {}
    for repeat in range(args.repeats):
        for side in ("acrl", "rllib") if repeat % 2 == 0 else ("rllib", "acrl"):
            if side == "rllib" and python is not None:
                runs.setdefault("rllib", []).append(run_rllib(python, {**spec, "seed": repeat}))
            elif side == "acrl":
                for count in args.actors:
                    row = time_acrl("impala", env_id, count, args.steps, args.threads, repeat)
                    runs.setdefault(f"impala-{count}", []).append(row)
                runs.setdefault("a3c", []).append(time_acrl("a3c", env_id, most, args.steps, args.threads, repeat))
        print(env_id, repeat, {key: round(rows[-1]["steps_per_s"]) for key, rows in runs.items()}, flush=True)

    def median(key: str, field: str = "steps_per_s") -> float:
        return statistics.median(row[field] for row in runs[key])

    def impala(count: int) -> dict:
        return {"steps_per_s": median(f"impala-{count}"), "wait_fraction": median(f"impala-{count}", "wait_fraction")}

    rllib = {"steps_per_s": median("rllib"), "version": runs["rllib"][0]["version"]} if "rllib" in runs else None
    return {
        "settings": {key: spec["settings"][key] for key in ("n_envs", "unroll_length", "batch_size")},
        "acrl": impala(most),
        "rllib": rllib,
        "a3c": {"steps_per_s": median("a3c"), "workers": most},
        "scaling": {str(count): impala(count) for count in args.actors},
        "rllib_model_config": spec["model_config"],
        "runs": runs,
    }


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring); returns the exit code (1 when RLlib cannot be set up)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", nargs="+", default=list(ENVS))
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2], help="acrl IMPALA's actor counts")
    parser.add_argument("--steps", type=int, default=200_000, help="env steps per run")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each, the median reported")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the learner (both libraries)")
    parser.add_argument("--no-rllib", action="store_true", help="acrl's side only (no RLlib venv)")
    parser.add_argument("--quick", action="store_true", help="a check in seconds: 4,000 steps, 1 repeat")
    parser.add_argument("--out", type=Path, default=scratch_path("impala_vs_rllib"), help="result file")
    parser.add_argument("--rllib-worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rllib_worker:
        print(json.dumps(rllib_worker(json.loads(args.rllib_worker))))
        return 0
    if args.quick:
        args.steps, args.repeats = 4_000, 1

    from acrl.core.files import write_json_atomic
    from acrl.core.provenance import load_average, provenance

    load_before = load_average()
    python = None
    if not args.no_rllib:
        try:
            python = ensure_venv()
        except RuntimeError as exc:
            print(f"impala_vs_rllib: cannot set up RLlib: {exc}", file=sys.stderr)
            return 1
    most = max(args.actors)
    envs = {env_id: measure(env_id, args, python) for env_id in args.envs}
    meta = provenance(load_before)
    rllib_version = next((e["rllib"]["version"] for e in envs.values() if e["rllib"]), None)
    result = {
        "benchmark": "impala_vs_rllib",
        "meta": meta,
        "settings": {
            "actors": most,
            "steps": args.steps,
            "repeats": args.repeats,
            "threads": args.threads,
        },
        "rllib": {"version": rllib_version, "run": python is not None},
        "envs": envs,
    }
    lines = [
        "| environment | acrl IMPALA | RLlib IMPALA | acrl / RLlib | acrl A3C | IMPALA / A3C |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for env_id, e in envs.items():
        a, r, a3c = e["acrl"]["steps_per_s"], e["rllib"], e["a3c"]["steps_per_s"]
        rllib = f"{r['steps_per_s']:,.0f} | {a / r['steps_per_s']:.2f}x" if r else "not run | -"
        lines.append(f"| {env_id} | {a:,.0f} | {rllib} | {a3c:,.0f} | {a / a3c:.2f}x |")
    print("\n".join(lines))
    write_json_atomic(args.out, result)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
