"""acrl's TD3+BC, IQL, CQL and BC against d3rlpy 2.8's on the same D4RL-style datasets (issue #50 item 4):
D4RL's normalised score after the same number of updates with the same hyperparameters, and updates/s on
one thread, each pair run side by side.

The datasets are acrl's (`acrl collect --kind medium ...`, or the data-KIND/KIND.h5 of an `acrl experiment
d4rl` run), read by d3rlpy from the same arrays (`bcq_vs_d3rlpy.to_npz`, `d3rlpy_dataset`). d3rlpy pins
another gymnasium, so it runs in its own venv, benchmarks/.venv-d3rlpy, in a subprocess
(`bcq_vs_d3rlpy.ensure_venv`, `run_d3rlpy`: the one place that sets it up and runs it). acrl trains in this
process. Both take `--threads` torch threads (default 1) and alternate who goes first (acrl on even seeds).
Each run's training time excludes evaluation; its evaluation is `--eval-episodes` deterministic episodes on
an environment seeded at seed + 10,000. The normalised score is `acrl.offline.d4rl.normalized_score`: D4RL's
references on its tasks, else the dataset's random return and `--expert-return`.

The settings are acrl's config for the environment (`acrl.algos.make_config`: the env's preset, the
papers' D4RL settings), and d3rlpy's config is built from them (`d3rlpy_settings`). Where
d3rlpy 2.8's defaults differ, the script sets its fields to acrl's:

- TD3PlusBCConfig: actor/critic_learning_rate 3e-4, batch_size 256, gamma 0.99, tau 0.005,
  target_smoothing_sigma 0.2 (acrl's policy_noise), target_smoothing_clip 0.5 (noise_clip), alpha 2.5,
  update_actor_interval 2 (policy_delay) and 256-256 encoders are d3rlpy's defaults too; d3rlpy has no
  observation scaler by default, acrl always normalises states by the dataset's mean and std (the paper's),
  so the script sets observation_scaler=StandardObservationScaler().
- IQLConfig: learning rates 3e-4, batch 256, expectile 0.7, weight_temp 3.0 (acrl's beta), max_weight 100
  and 256-256 encoders are d3rlpy's defaults; d3rlpy has no step-size schedule and no reward scaling by
  default, acrl decays the policy's step size to 0 on a cosine over the run (actor_lr_decay_steps) and
  scales rewards so the dataset's returns span return_range 1000 (the authors' locomotion settings), so the
  script gives the actor AdamFactory(lr_scheduler_factory=CosineAnnealingLRFactory(T_max=updates)) and sets
  reward_scaler=ReturnBasedRewardScaler(multiplier=1000).
- CQLConfig: d3rlpy tunes the penalty's weight by default (alpha_learning_rate 1e-4, alpha_threshold 10),
  acrl's default is the fixed weight 5.0 (the authors' min_q_weight), so the script sets
  conservative_weight 5.0, initial_alpha 1.0 and alpha_learning_rate 0 (a `target_action_gap` in acrl's
  config maps to alpha_threshold with alpha_learning_rate = acrl's learning_rate); d3rlpy's encoders are
  256-256, acrl's (the paper's) 256-256-256, set on both; actor 1e-4, critic 3e-4, temperature 1e-4 (acrl
  tunes it at actor_learning_rate), n_action_samples 10 and the deterministic backup (soft_q_backup False)
  agree.
- BCConfig: learning_rate 1e-3, batch 100 and the deterministic policy agree; d3rlpy's encoder is 256-256,
  acrl's 400-300 (the BCQ paper's BC), set on both.
- All: MinMaxActionScaler to the environment's bounds (both act in [-1, 1] scaled to them).

What stays different: d3rlpy drops the last transition of each episode cut by a timeout (it has no next row)
where acrl keeps it with its stored next observation; IQL's policy mean is squashed by tanh in acrl (the
authors') and not in d3rlpy; the networks' initialisations are each library's own.

    # datasets first (a SAC trained here per kind; hours on Hopper), or those of an `acrl experiment d4rl` run
    acrl experiment d4rl --env Hopper-v5 --kinds medium medium-replay --learners bc --updates 1000 --out runs/d4rl
    # the comparison, on an idle machine (each pair in turn; the same command again resumes it)
    python benchmarks/offline_vs_d3rlpy.py --datasets runs/d4rl/data-medium/medium.h5 \\
        runs/d4rl/data-medium-replay/medium-replay.h5 --updates 100000 --seeds 0 1 2 \\
        --out benchmarks/results/offline_vs_d3rlpy.json
    # a smoke test of both sides (tiny budget, one seed, one episode)
    python benchmarks/offline_vs_d3rlpy.py --datasets FILE.h5 --quick

Results: --out (default benchmarks/results/tmp/offline_vs_d3rlpy.json), rewritten after every pair, with
`provenance()` (command, commit, date, CPU, load average before and after, versions);
benchmarks/sections/offline.py renders it in docs/benchmarks.md beside CORL's published D4RL scores.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bcq_vs_d3rlpy import SCRATCH, action_scaler, d3rlpy_dataset, d3rlpy_fit, ensure_venv, run_d3rlpy, to_npz
from meta import scratch_path

ALGOS = ("td3_bc", "iql", "cql", "bc")
"""The algorithms compared, acrl's registry names."""

CORL = {
    "hopper-medium-v2": {"bc": 53.5, "td3_bc": 60.4, "cql": 59.1, "iql": 67.5},
    "hopper-medium-replay-v2": {"bc": 29.8, "td3_bc": 64.4, "cql": 95.1, "iql": 97.4},
    "locomotion average": {"bc": 50.4, "td3_bc": 76.5, "cql": 78.3, "iql": 81.6},
}
"""CORL's published D4RL normalised scores (Tarasov et al. 2023, "CORL: Research-oriented Deep Offline
Reinforcement Learning Library", the last checkpoint's, over D4RL's own datasets): the range ours sit in."""


# ------------------------------------------------------------------------------------ d3rlpy side
# Runs under benchmarks/.venv-d3rlpy/bin/python: imports only d3rlpy, torch, numpy, gymnasium.


def d3rlpy_worker(spec: dict) -> dict:
    """Train d3rlpy's spec["algo"] with spec["settings"] (`d3rlpy_settings`) on spec["npz"] for spec["updates"]
    updates, then evaluate (`bcq_vs_d3rlpy.d3rlpy_fit`); returns its result dict."""
    import d3rlpy
    import torch
    from d3rlpy.models import VectorEncoderFactory
    from d3rlpy.optimizers import AdamFactory, CosineAnnealingLRFactory
    from d3rlpy.preprocessing import ReturnBasedRewardScaler, StandardObservationScaler

    torch.set_num_threads(spec["threads"])
    d3rlpy.seed(spec["seed"])
    dataset = d3rlpy_dataset(spec["npz"])
    fields = dict(spec["settings"])
    for key in [key for key in fields if key.endswith("_encoder_factory") or key == "encoder_factory"]:
        fields[key] = VectorEncoderFactory(fields[key])
    if "observation_scaler" in fields:
        fields["observation_scaler"] = StandardObservationScaler()
    if "reward_scaler" in fields:
        fields["reward_scaler"] = ReturnBasedRewardScaler(multiplier=fields["reward_scaler"])
    if "actor_cosine_steps" in fields:
        schedule = CosineAnnealingLRFactory(T_max=fields.pop("actor_cosine_steps"))
        fields["actor_optim_factory"] = AdamFactory(lr_scheduler_factory=schedule)
    configs = {
        "td3_bc": d3rlpy.algos.TD3PlusBCConfig,
        "iql": d3rlpy.algos.IQLConfig,
        "cql": d3rlpy.algos.CQLConfig,
        "bc": d3rlpy.algos.BCConfig,
    }
    algo = configs[spec["algo"]](action_scaler=action_scaler(spec["env_id"]), **fields).create(device="cpu:0")
    algo.build_with_dataset(dataset)
    return d3rlpy_fit(algo, dataset, spec)


# ------------------------------------------------------------------------------------ acrl side


def acrl_config(algo: str, h5: Path, seed: int, updates: int, threads: int) -> tuple[type, object]:
    """acrl's agent class and validated config of `algo` on `h5` (its env's preset), training `updates` updates on
    `threads` threads without evaluating or checkpointing during the run."""
    from acrl.algos import make_config
    from acrl.parts.datasets import dataset_attrs

    env_id = dataset_attrs(h5)["env_id"]
    flags = {"dataset": str(h5), "seed": seed, "total_steps": updates, "eval_freq": 0, "torch_threads": threads}
    return make_config(algo, env_id, None, None, "--set", checkpoint_freq=10**9, **flags)


def d3rlpy_settings(algo: str, config) -> dict:
    """d3rlpy 2.8's config fields for acrl's `config` of `algo` (see the module docstring): plain values, the
    encoders as their hidden sizes, the scalers and the actor's schedule as markers the worker builds."""
    c = config
    hidden = list(c.hidden_sizes)
    if algo == "td3_bc":
        return {
            "actor_learning_rate": c.learning_rate,
            "critic_learning_rate": c.learning_rate,
            "batch_size": c.batch_size,
            "gamma": c.gamma,
            "tau": c.tau,
            "target_smoothing_sigma": c.policy_noise,
            "target_smoothing_clip": c.noise_clip,
            "alpha": c.alpha,
            "update_actor_interval": c.policy_delay,
            "actor_encoder_factory": hidden,
            "critic_encoder_factory": hidden,
            "observation_scaler": "standard",
        }
    if algo == "iql":
        settings = {
            "actor_learning_rate": c.learning_rate,
            "critic_learning_rate": c.learning_rate,
            "batch_size": c.batch_size,
            "gamma": c.gamma,
            "tau": c.tau,
            "expectile": c.expectile,
            "weight_temp": c.beta,
            "max_weight": c.max_weight,
            "actor_encoder_factory": hidden,
            "critic_encoder_factory": hidden,
            "value_encoder_factory": hidden,
            "actor_cosine_steps": c.actor_lr_decay_steps or c.total_steps,
        }
        return settings | ({} if c.return_range is None else {"reward_scaler": c.return_range})
    if algo == "cql":
        lagrangian = c.target_action_gap is not None
        return {
            "actor_learning_rate": c.actor_learning_rate,
            "critic_learning_rate": c.learning_rate,
            "temp_learning_rate": 0.0 if c.ent_coef is not None else c.actor_learning_rate,
            "initial_temperature": c.ent_coef if c.ent_coef is not None else c.init_ent_coef,
            "alpha_learning_rate": c.learning_rate if lagrangian else 0.0,
            "initial_alpha": 1.0,
            **({"alpha_threshold": c.target_action_gap} if lagrangian else {}),
            "conservative_weight": c.cql_alpha,
            "n_action_samples": c.n_action_samples,
            "soft_q_backup": False,
            "batch_size": c.batch_size,
            "gamma": c.gamma,
            "tau": c.tau,
            "actor_encoder_factory": hidden,
            "critic_encoder_factory": hidden,
        }
    return {
        "learning_rate": c.learning_rate,
        "batch_size": c.batch_size,
        "policy_type": "deterministic",
        "encoder_factory": hidden,
    }


def run_acrl(cls: type, config, eval_episodes: int) -> dict:
    """Train acrl's agent of `config` for its total_steps (timed), then evaluate; its result dict."""
    import torch

    import acrl

    agent = cls(config.env_id, config=config)
    agent.load_data()
    torch.set_num_threads(config.torch_threads)
    started = time.perf_counter()
    agent.learn(config.total_steps, progress=False)
    elapsed = time.perf_counter() - started
    result = {
        "library": "acrl",
        "version": acrl.__version__,
        "updates": config.total_steps,
        "train_seconds": elapsed,
        "updates_per_s": config.total_steps / elapsed,
    }
    if eval_episodes:
        evaluation = agent.evaluate(eval_episodes)
        result.update(return_mean=evaluation["return_mean"], returns=evaluation["returns"])
    return result


def score(result: dict, env_id: str, attrs: dict, expert_return: float | None) -> float | None:
    """D4RL's normalised score of a run's return (`normalized_score`), None without references."""
    from acrl.core.errors import InputError
    from acrl.offline.d4rl import normalized_score

    if "return_mean" not in result:
        return None
    try:
        return normalized_score(result["return_mean"], env_id, attrs.get("random_return"), expert_return)
    except InputError:
        return None


def pair(python: Path, h5: Path, algo: str, seed: int, args: argparse.Namespace) -> dict:
    """acrl's and d3rlpy's `algo` on `h5` for args.updates updates at `seed`, in turn (acrl first on even seeds)."""
    from acrl.parts.datasets import dataset_attrs

    cls, config = acrl_config(algo, h5, seed, args.updates, args.threads)
    attrs = dataset_attrs(h5)
    npz = SCRATCH / f"{h5.stem}.npz"
    if not npz.exists():
        to_npz(h5, npz)
    settings = d3rlpy_settings(algo, config)
    d3_spec = {
        "algo": algo,
        "env_id": config.env_id,
        "npz": str(npz),
        "seed": seed,
        "updates": args.updates,
        "threads": args.threads,
        "eval_episodes": args.eval_episodes,
        "eval_seed": seed + 10_000,
        "settings": settings,
    }
    row = {"dataset": str(h5), "kind": attrs.get("kind", h5.stem), "algo": algo, "seed": seed}
    for lib in ("acrl", "d3rlpy") if seed % 2 == 0 else ("d3rlpy", "acrl"):
        if lib == "acrl":
            row["acrl"] = run_acrl(cls, config, args.eval_episodes)
        else:
            row["d3rlpy"] = run_d3rlpy(python, d3_spec, __file__)
    for lib in ("acrl", "d3rlpy"):
        row[lib]["score"] = score(row[lib], config.env_id, attrs, args.expert_return)
    row["d3rlpy_settings"] = settings
    return row


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring); returns the exit code (1 when d3rlpy cannot be set up)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", type=Path, help="acrl D4RL-style datasets (HDF5)")
    parser.add_argument("--algos", nargs="+", default=list(ALGOS), choices=ALGOS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--updates", type=int, default=100_000, help="updates per run (CORL: 1M)")
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--expert-return", type=float, help="the score's expert return on a task not D4RL's")
    parser.add_argument("--quick", action="store_true", help="smoke test: 200 updates, seed 0, 1 episode")
    parser.add_argument("--out", type=Path, default=scratch_path("offline_vs_d3rlpy"))
    parser.add_argument("--d3rlpy-worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.d3rlpy_worker:
        print(json.dumps(d3rlpy_worker(json.loads(args.d3rlpy_worker))))
        return 0
    if not args.datasets:
        parser.error("--datasets FILE.h5 ... is required")
    if args.quick:
        args.updates, args.seeds, args.eval_episodes = 200, [0], 1

    from acrl.core.files import write_json_atomic
    from acrl.core.provenance import load_average, provenance

    load_before = load_average()
    try:
        python = ensure_venv()
    except RuntimeError as exc:
        print(f"offline_vs_d3rlpy: cannot set up d3rlpy: {exc}", file=sys.stderr)
        return 1
    SCRATCH.mkdir(parents=True, exist_ok=True)
    same = {"updates": args.updates, "threads": args.threads, "eval_episodes": args.eval_episodes}
    rows = []
    if args.out.is_file():  # the same comparison, interrupted: keep its finished pairs
        old = json.loads(args.out.read_text())
        rows = old["rows"] if all(old.get(key) == value for key, value in same.items()) else []
    done = {(row["dataset"], row["algo"], row["seed"]) for row in rows}
    for h5 in args.datasets:
        for algo in args.algos:
            for seed in args.seeds:
                if (str(h5), algo, seed) in done:
                    continue
                rows.append(pair(python, h5, algo, seed, args))
                a, d = rows[-1]["acrl"], rows[-1]["d3rlpy"]
                print(
                    f"{h5.name} {algo} seed {seed}: score acrl {a['score']}, d3rlpy {d['score']}; updates/s "
                    f"acrl {a['updates_per_s']:.1f}, d3rlpy {d['updates_per_s']:.1f}",
                    file=sys.stderr,
                )
                summary = {**same, "meta": provenance(load_before, ["mujoco", "h5py"]), "rows": rows, "corl": CORL}
                write_json_atomic(args.out, summary)
    print(f"results: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
