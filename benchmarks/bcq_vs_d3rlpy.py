"""acrl's BCQ against d3rlpy's on the same data: the evaluation return after the same number of
updates (Hopper-v5 final / imperfect / imitation datasets). Speed: benchmarks/update_roofline.py.

d3rlpy (Seno & Imai 2022, "d3rlpy: An Offline Deep Reinforcement Learning Library", JMLR) pins
gymnasium==1.0.0 and acrl needs >= 1.1, so d3rlpy runs in a venv of its own,
benchmarks/.venv-d3rlpy (gitignored; created on first use with `python -m venv` and
`pip install torch==2.13.0 d3rlpy mujoco==<acrl's> imageio`), in a subprocess that reads the
dataset's arrays from an .npz file. Hopper-v5 behaves identically under both gymnasium versions.

Both libraries run the paper's settings (Fujimoto et al. 2019, Supp. D): actor and twin critics
400-300, VAE 750-750 with latent 2 x action dim and KL weight 0.5, Adam 1e-3, batch 100,
gamma 0.99, tau 0.005, lambda 0.75, phi 0.05, 10 sampled actions in the target and when acting.
d3rlpy's own defaults differ (256-256 encoders, n_action_samples=100); `--d3rlpy-defaults`
runs d3rlpy as shipped instead, for reference. Both use `--threads` torch threads (default 1).
Each run's training time (acrl's `BCQ.learn` without evaluation, d3rlpy's `fit` with a no-op
logger) and updates/s are recorded beside its return.

    # the full comparison on the paper's datasets, made first with `acrl collect` into DIR
    # (final.h5, imperfect.h5, imitation.h5), 3 seeds (days of CPU at the paper's sizes):
    python benchmarks/bcq_vs_d3rlpy.py --datasets DIR --updates 300000 --seeds 0 1 2
    # or collect them here (a behavioral DDPG of --behavioral-steps, then --dataset-steps each):
    python benchmarks/bcq_vs_d3rlpy.py --collect --behavioral-steps 1000000 --dataset-steps 1000000 ...
    # or d3rlpy only, on the datasets of an `acrl experiment extrapolation` run, against its BCQ
    # results (same updates, same evaluation seeds), two runs at a time; the same command again
    # resumes an interrupted comparison (the results file is rewritten after every run):
    python benchmarks/bcq_vs_d3rlpy.py --experiment runs/hopper-extrapolation --seeds 0 1 2 --jobs 2 \
        --out benchmarks/results/bcq_vs_d3rlpy_hopper

With --datasets, acrl and d3rlpy take turns going first (acrl on even seeds). Results: --out.json
and --out.md (default benchmarks/results/tmp/bcq_vs_d3rlpy.*), with `provenance()` (command,
commit, date, CPU, load average before and after, versions); scratch files in benchmarks/results/tmp/.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import meta

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv-d3rlpy"
SCRATCH = ROOT / "results" / "tmp" / "bcq_vs_d3rlpy"
RESULTS = ROOT / "results"
KINDS = ("final", "imperfect", "imitation")
PAPER = {
    "batch_size": 100,
    "gamma": 0.99,
    "tau": 0.005,
    "lmbda": 0.75,
    "phi": 0.05,
    "n_action_samples": 10,
    "n_select_samples": 10,
    "learning_rate": 1e-3,
    "vae_learning_rate": 1e-3,
    "kl_weight": 0.5,
    "actor_hidden_sizes": (400, 300),
    "critic_hidden_sizes": (400, 300),
    "vae_hidden_sizes": (750, 750),
}
"""The paper's BCQ settings (Fujimoto et al. 2019, Supp. D), given to both libraries."""


# ------------------------------------------------------------------------------------ d3rlpy side
# Runs under benchmarks/.venv-d3rlpy/bin/python: imports only d3rlpy, torch, numpy, gymnasium.


def d3rlpy_dataset(npz: str):  # -> d3rlpy.dataset.MDPDataset; d3rlpy venv only
    """The d3rlpy MDPDataset of an .npz written by `to_npz` (continuous actions).

    d3rlpy rebuilds episodes from consecutive rows: next observation = the next row's observation, so
    the last transition of an episode cut by a timeout is dropped (it has no next row); the last,
    unfinished episode is ended where the data ends."""
    import d3rlpy
    import numpy as np

    arrays = np.load(npz)
    terminals, timeouts = arrays["terminals"].astype(bool), arrays["timeouts"].astype(bool).copy()
    if not (terminals[-1] or timeouts[-1]):
        timeouts[-1] = True
    return d3rlpy.dataset.MDPDataset(
        arrays["observations"],
        arrays["actions"],
        arrays["rewards"],
        terminals,
        timeouts,
        action_space=d3rlpy.ActionSpace.CONTINUOUS,
    )


def d3rlpy_fit(algo, dataset, spec: dict) -> dict:  # d3rlpy venv only
    """`algo.fit` for spec["updates"] updates with a no-op logger (timed), then spec["eval_episodes"]
    deterministic episodes on spec["env_id"] seeded at spec["eval_seed"]: the result dict of a d3rlpy run
    (library, version, updates, train_seconds, updates_per_s; return_mean and returns when evaluated)."""
    import d3rlpy
    import gymnasium as gym
    import numpy as np
    from d3rlpy.logging import NoopAdapterFactory

    started = time.perf_counter()
    algo.fit(
        dataset,
        n_steps=spec["updates"],
        n_steps_per_epoch=spec["updates"],
        show_progress=False,
        logger_adapter=NoopAdapterFactory(),
        save_interval=10**9,
    )
    elapsed = time.perf_counter() - started
    result = {
        "library": "d3rlpy",
        "version": d3rlpy.__version__,
        "updates": spec["updates"],
        "train_seconds": elapsed,
        "updates_per_s": spec["updates"] / elapsed,
    }
    if spec["eval_episodes"]:
        env, returns = gym.make(spec["env_id"]), []
        obs, _ = env.reset(seed=spec["eval_seed"])
        for _ in range(spec["eval_episodes"]):
            total, done = 0.0, False
            while not done:
                action = algo.predict(np.asarray(obs, dtype=np.float32)[None])[0]
                obs, reward, terminated, truncated, _ = env.step(action)
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
            obs, _ = env.reset()
        result.update(return_mean=float(np.mean(returns)), returns=returns)
    return result


def action_scaler(env_id: str):  # d3rlpy venv only
    """d3rlpy's MinMaxActionScaler to `env_id`'s Box bounds: its policies act in [-1, 1], as acrl's do."""
    import gymnasium as gym
    import numpy as np
    from d3rlpy.preprocessing import MinMaxActionScaler

    space = gym.make(env_id).action_space
    return MinMaxActionScaler(minimum=space.low.astype(np.float32), maximum=space.high.astype(np.float32))


def d3rlpy_worker(spec: dict) -> dict:
    """Train d3rlpy's BCQ for spec["updates"] updates on spec["npz"], then evaluate; returns a result dict."""
    import d3rlpy
    import torch
    from d3rlpy.models import VectorEncoderFactory

    torch.set_num_threads(spec["threads"])
    d3rlpy.seed(spec["seed"])
    dataset = d3rlpy_dataset(spec["npz"])
    scaler = action_scaler(spec["env_id"])
    if spec["d3rlpy_defaults"]:
        config = d3rlpy.algos.BCQConfig(action_scaler=scaler)
    else:
        p = spec["paper"]
        config = d3rlpy.algos.BCQConfig(
            actor_encoder_factory=VectorEncoderFactory(list(p["actor_hidden_sizes"])),
            critic_encoder_factory=VectorEncoderFactory(list(p["critic_hidden_sizes"])),
            imitator_encoder_factory=VectorEncoderFactory(list(p["vae_hidden_sizes"])),
            actor_learning_rate=p["learning_rate"],
            critic_learning_rate=p["learning_rate"],
            imitator_learning_rate=p["vae_learning_rate"],
            batch_size=p["batch_size"],
            gamma=p["gamma"],
            tau=p["tau"],
            lam=p["lmbda"],
            action_flexibility=p["phi"],
            n_action_samples=p["n_action_samples"],
            beta=p["kl_weight"],
            action_scaler=scaler,
        )
    algo = config.create(device="cpu:0")
    algo.build_with_dataset(dataset)
    return d3rlpy_fit(algo, dataset, spec)


# ------------------------------------------------------------------------------------ acrl side


def ensure_venv() -> Path:
    """benchmarks/.venv-d3rlpy/bin/python (`meta.ensure_venv`: d3rlpy, acrl's torch and mujoco, imageio)."""
    import mujoco

    packages = ["torch==2.13.0", "d3rlpy", f"mujoco=={mujoco.__version__}", "imageio"]
    return meta.ensure_venv(VENV, "d3rlpy, mujoco, imageio", packages)


def run_d3rlpy(python: Path, spec: dict, script: str = __file__) -> dict:
    """`d3rlpy_worker(spec)` of `script` (a benchmark with a --d3rlpy-worker option; default this one)
    in the d3rlpy venv's python (`meta.run_worker`); its result dict (RuntimeError if it fails)."""
    return meta.run_worker(python, script, "--d3rlpy-worker", spec)


def to_npz(h5: Path, npz: Path) -> None:
    """The D4RL arrays of an acrl dataset as an .npz for d3rlpy (actions in env units, as stored)."""
    import numpy as np

    from acrl.parts.datasets import load_dataset

    data = load_dataset(h5)
    np.savez(
        npz,
        observations=data.observations,
        actions=data.actions,
        rewards=data.rewards,
        terminals=data.terminals,
        timeouts=data.timeouts,
    )


def run_acrl(h5: Path, env_id: str, seed: int, updates: int, threads: int, eval_episodes: int) -> dict:
    """Train acrl's BCQ (paper settings) for `updates` updates on `h5`, then evaluate."""
    import torch

    import acrl
    from acrl import BCQ

    agent = BCQ(
        env_id,
        dataset=str(h5),
        seed=seed,
        eval_freq=0,
        total_steps=updates,
        torch_threads=threads,
        checkpoint_freq=10**9,
        **PAPER,
    )
    agent.load_data()
    torch.set_num_threads(threads)
    started = time.perf_counter()
    agent.learn(updates, progress=False)
    elapsed = time.perf_counter() - started
    result = {
        "library": "acrl",
        "version": acrl.__version__,
        "updates": updates,
        "train_seconds": elapsed,
        "updates_per_s": updates / elapsed,
    }
    if eval_episodes:
        evaluation = agent.evaluate(eval_episodes)
        result.update(return_mean=evaluation["return_mean"], returns=evaluation["returns"])
    return result


def collect(env_id: str, out: Path, behavioral_steps: int, dataset_steps: int, seed: int) -> Path:
    """The paper's datasets with acrl: final (a behavioral DDPG), then imperfect and imitation from its best policy."""
    from acrl.offline.collect import behavioral_run_dir, collect_dataset

    out.mkdir(parents=True, exist_ok=True)
    collect_dataset("final", out / "final.h5", behavioral_steps, env_id=env_id, seed=seed, progress=True)
    for kind in ("imperfect", "imitation"):
        collect_dataset(kind, out / f"{kind}.h5", dataset_steps, policy=behavioral_run_dir(out / "final.h5"), seed=seed)
    return out


EXPERIMENT_DATASETS = {
    "final": "s{seed}/final/final.h5",
    "imitation": "s{seed}/data-imitation/imitation.h5",
    "imperfect": "s{seed}/data-imperfect/imperfect.h5",
}
"""Where `acrl experiment extrapolation` writes each seed's datasets (acrl.offline.experiments)."""


def experiment_rows(
    python: Path,
    spec: dict,
    experiment: Path,
    seeds: list[int],
    kinds: list[str],
    eval_episodes: int,
    jobs: int = 1,
    rows: list[dict] | None = None,
    save: Callable[[list[dict]], None] | None = None,
) -> list[dict]:
    """d3rlpy's BCQ on each dataset of an extrapolation experiment, beside acrl's BCQ from its
    extrapolation.json: the same updates and the same evaluation seeds (seed + 10,000).

    `jobs` d3rlpy subprocesses run at a time (one per core), a whole seed's datasets first.
    (kind, seed) pairs already in `rows` (a previous, interrupted comparison's) are kept, not
    rerun, and `save(rows)` is called after each new one, so a comparison resumes where it
    stopped. Sets spec["env_id"] to the experiment's. d3rlpy runs PAPER's settings, which the
    experiment's BCQ has with the Hopper-v5 and HalfCheetah-v5 presets and no --bcq-set.
    Raises FileNotFoundError without extrapolation.json."""
    summary = json.loads((experiment / "extrapolation.json").read_text())
    spec["env_id"] = summary["env_id"]
    for seed in seeds:
        if seed not in summary["seeds"]:
            raise SystemExit(f"bcq_vs_d3rlpy: seed {seed} is not in {experiment} (seeds {summary['seeds']}).")

    def row(kind: str, seed: int) -> dict:
        acrl_run = summary["results"][kind]["bcq"][summary["seeds"].index(seed)]
        npz = SCRATCH / f"{experiment.name}-s{seed}-{kind}.npz"
        to_npz(experiment / EXPERIMENT_DATASETS[kind].format(seed=seed), npz)
        d3 = run_d3rlpy(
            python,
            {
                **spec,
                "npz": str(npz),
                "seed": seed,
                "updates": summary["updates"],
                "eval_episodes": eval_episodes,
                "eval_seed": seed + 10_000,
            },
        )
        print(f"{kind} seed {seed}: acrl {acrl_run['final']:.1f}, d3rlpy {d3['return_mean']:.1f}", file=sys.stderr)
        return {
            "kind": kind,
            "seed": seed,
            "updates": summary["updates"],
            "d3rlpy": d3,
            "acrl": {"return_mean": acrl_run["final"], "run_dir": acrl_run["run_dir"]},
        }

    rows = list(rows or [])
    done = {(r["kind"], r["seed"]) for r in rows}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(row, kind, seed) for seed in seeds for kind in kinds if (kind, seed) not in done]
        for future in as_completed(futures):
            rows.append(future.result())
            if save is not None:
                save(rows)
    return rows


def dataset_rows(python: Path, spec: dict, args: argparse.Namespace) -> list[dict]:
    """acrl's and d3rlpy's BCQ for args.updates updates on each of args.kinds in args.datasets, per seed."""
    rows = []
    for kind in args.kinds:
        h5 = args.datasets / f"{kind}.h5"
        npz = SCRATCH / f"{kind}.npz"
        to_npz(h5, npz)
        for seed in args.seeds:
            row: dict = {"kind": kind, "seed": seed}
            for lib in ("acrl", "d3rlpy") if seed % 2 == 0 else ("d3rlpy", "acrl"):  # alternate who goes first
                if lib == "acrl":
                    row["acrl"] = run_acrl(h5, args.env, seed, args.updates, args.threads, args.eval_episodes)
                else:
                    row["d3rlpy"] = run_d3rlpy(
                        python,
                        {
                            **spec,
                            "npz": str(npz),
                            "seed": seed,
                            "updates": args.updates,
                            "eval_episodes": args.eval_episodes,
                            "eval_seed": seed + 10_000,
                        },
                    )
            rows.append(row)
            print(
                f"{kind} seed {seed}: acrl {row['acrl']['return_mean']:.1f}, d3rlpy {row['d3rlpy']['return_mean']:.1f}",
                file=sys.stderr,
            )
    return rows


def markdown(summary: dict) -> str:
    """The summary as a markdown table: returns (and updates/s) per dataset and seed."""
    lines = [
        f"### BCQ: acrl vs d3rlpy {summary.get('d3rlpy_version', '')} on {summary['env_id']}",
        "",
        f"{summary['meta']['cpu']}, {summary['meta']['cores']} cores; {summary['threads']} torch thread(s); "
        f"settings: "
        f"{'d3rlpy defaults for d3rlpy' if summary['d3rlpy_defaults'] else 'the paper (both)'}.",
        "",
    ]
    if summary.get("returns"):
        lines += [
            "| dataset | seed | acrl return | d3rlpy return | acrl updates/s | d3rlpy updates/s |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for row in summary["returns"]:
            a, d = row["acrl"], row["d3rlpy"]
            acrl_speed = f"{a['updates_per_s']:.2f}" if "updates_per_s" in a else "-"
            lines.append(
                f"| {row['kind']} | {row['seed']} | {a['return_mean']:.1f} | {d['return_mean']:.1f} | "
                f"{acrl_speed} | {d['updates_per_s']:.2f} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring); returns the exit code (1 when d3rlpy cannot be set up)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="Hopper-v5")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--datasets", type=Path, help="directory with final.h5, imperfect.h5, imitation.h5")
    source.add_argument(
        "--experiment",
        type=Path,
        help="an `acrl experiment extrapolation` directory: d3rlpy on its datasets, against its BCQ",
    )
    parser.add_argument("--collect", action="store_true", help="collect the datasets first (into --datasets)")
    parser.add_argument("--behavioral-steps", type=int, default=1_000_000)
    parser.add_argument("--dataset-steps", type=int, default=1_000_000)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--updates", type=int, default=300_000, help="updates per run (paper: 300k)")
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=1, help="with --experiment: d3rlpy runs at a time")
    parser.add_argument("--d3rlpy-defaults", action="store_true", help="d3rlpy's own BCQ defaults, not the paper's")
    parser.add_argument(
        "--out",
        type=Path,
        default=RESULTS / "tmp" / "bcq_vs_d3rlpy",
        help="results path without suffix (default: the scratch folder benchmarks/results/tmp/)",
    )
    parser.add_argument("--d3rlpy-worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.d3rlpy_worker:
        print(json.dumps(d3rlpy_worker(json.loads(args.d3rlpy_worker))))
        return 0
    if args.datasets is None and args.experiment is None:
        parser.error("one of --datasets DIR or --experiment DIR is required")

    from acrl.core.provenance import load_average, provenance

    load_before = load_average()
    try:
        python = ensure_venv()
    except RuntimeError as exc:
        print(f"bcq_vs_d3rlpy: cannot set up d3rlpy: {exc}", file=sys.stderr)
        return 1
    SCRATCH.mkdir(parents=True, exist_ok=True)
    spec = {
        "env_id": args.env,
        "threads": args.threads,
        "d3rlpy_defaults": args.d3rlpy_defaults,
        "paper": {k: list(v) if isinstance(v, tuple) else v for k, v in PAPER.items()},
    }
    summary: dict = {"env_id": args.env, "threads": args.threads, "d3rlpy_defaults": args.d3rlpy_defaults}

    def write(rows: list[dict]) -> None:  # atomically, after every finished run
        from acrl.core.files import write_text_atomic

        summary["returns"] = sorted(rows, key=lambda r: (KINDS.index(r["kind"]), r["seed"]))
        summary["d3rlpy_version"] = rows[0]["d3rlpy"]["version"]
        for suffix, text in ((".json", json.dumps(summary, indent=2) + "\n"), (".md", markdown(summary))):
            write_text_atomic(args.out.with_suffix(suffix), text)

    def save(rows: list[dict]) -> None:
        """`write` with the conditions as of now (provenance: the load average after this run)."""
        summary["meta"] = provenance(load_before, ["mujoco"])
        write(rows)

    if args.experiment is not None:
        summary["experiment"] = str(args.experiment)
        previous = args.out.with_suffix(".json")
        rows = []
        if previous.is_file():  # the same comparison, interrupted: keep its finished runs
            old = json.loads(previous.read_text())
            same = all(old.get(key) == summary[key] for key in ("experiment", "threads", "d3rlpy_defaults"))
            rows = old["returns"] if same else []
        rows = experiment_rows(
            python, spec, args.experiment, args.seeds, args.kinds, args.eval_episodes, args.jobs, rows, save
        )
        summary["env_id"] = spec["env_id"]
    else:
        if args.collect:
            collect(args.env, args.datasets, args.behavioral_steps, args.dataset_steps, args.seeds[0])
        rows = dataset_rows(python, spec, args)
    save(rows)
    print(markdown(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
