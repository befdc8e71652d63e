"""The off-policy update at the hardware's limit: BCQ, TD3 and SAC gradient updates per second at
the papers' sizes on Hopper-v5 shapes, against the matrix-multiplication roofline and against
d3rlpy on the same arrays, all measured side by side in one run.

What is measured, per torch thread count (--threads, default 1 and 2):

- acrl: `Agent.learn` from a random Hopper-v5-shaped replay buffer (observation 11, action 3,
  100,000 transitions), no evaluation, after a warm-up; median updates/s of --repeats runs, the
  thread counts taking turns (the scaling is the median of the paired ratios).
- The roofline: every matrix product of one update is recorded (a `TorchDispatchMode` over
  `aten.mm`, `aten.addmm` and oneDNN's `mkldnn._linear_pointwise`), which gives its FLOPs
  (2 M K N) from the layer shapes; each distinct shape is then timed alone, warm, on the same
  thread count, right after each acrl run. Two rooflines: `torch.mm` at those shapes (the BLAS
  torch calls, MKL here) and the faster of `torch.mm` and oneDNN per shape (the best product
  this torch can run here). "% of roofline" = the products' time at that rate / the update's
  time, the median over the runs of each run's own ratio (the machine's speed drifts by 20%
  over minutes here, and the pairing cancels most of it).
- d3rlpy (its own venv, as in bcq_vs_d3rlpy.py): BCQ, TD3 and SAC with the same sizes and batch
  on the same arrays (an .npz), `fit` with a no-op logger, median updates/s of --repeats runs.

Sizes: BCQ (Fujimoto et al. 2019, Supp. D): VAE 750-750, actor and critics 400-300, batch 100,
10 sampled actions per next state; TD3 (Fujimoto et al. 2018, Appendix C): 400-300, batch 100,
policy delay 2; SAC (Haarnoja et al. 2018, Table 1): 256-256, batch 256; CQL (Kumar et al. 2020, Appendix F,
the D4RL table's settings): 256-256-256, batch 256, 10 sampled actions per state from each of the uniform
proposal, pi(.|s) and pi(.|s'), the fixed penalty weight 5 (cql_alpha) and the deterministic backup (d3rlpy:
alpha_learning_rate 0, soft_q_backup False).

acrl and d3rlpy take turns going first: acrl for the first, third, ... algorithm, d3rlpy for the others.

    ./run bench update_roofline --repeats 5 --out benchmarks/results/update_roofline   # about 15 minutes on 2 cores
    ./run bench update_roofline --algos bcq --threads 1 --repeats 1 --no-d3rlpy        # a check

Writes --out.json and --out.md (default benchmarks/results/tmp/update_roofline.*), with `provenance()`:
commit, date, CPU, load average before and after, versions. Run it on an idle machine (`uptime`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
SCRATCH = RESULTS / "tmp" / "update_roofline"
OBS_DIM, ACT_DIM, N_TRANSITIONS = 11, 3, 100_000  # Hopper-v5's shapes
SIZES = {
    "bcq": {
        "batch_size": 100,
        "actor_hidden_sizes": [400, 300],
        "critic_hidden_sizes": [400, 300],
        "vae_hidden_sizes": [750, 750],
        "n_action_samples": 10,
        "learning_rate": 1e-3,
    },
    "td3": {"batch_size": 100, "hidden_sizes": [400, 300], "learning_rate": 1e-3, "policy_delay": 2},
    "sac": {"batch_size": 256, "hidden_sizes": [256, 256], "learning_rate": 3e-4},
    "cql": {
        "batch_size": 256,
        "hidden_sizes": [256, 256, 256],
        "learning_rate": 3e-4,
        "actor_learning_rate": 1e-4,
        "n_action_samples": 10,
        "cql_alpha": 5.0,
    },
}
UPDATES = {"bcq": 200, "td3": 1000, "sac": 600, "cql": 40}
"""Timed updates per repeat: a few seconds each at acrl's speed."""


# ------------------------------------------------------------------------------------ d3rlpy side
# Runs under benchmarks/.venv-d3rlpy/bin/python: imports only d3rlpy, torch and numpy.


def d3rlpy_worker(spec: dict) -> dict:
    """d3rlpy's `spec["algo"]` at SIZES on spec["npz"]: updates/s of `fit` after a warm-up."""
    import d3rlpy
    import numpy as np
    import torch
    from d3rlpy.logging import NoopAdapterFactory
    from d3rlpy.models import VectorEncoderFactory

    torch.set_num_threads(spec["threads"])
    d3rlpy.seed(0)
    arrays = np.load(spec["npz"])
    dataset = d3rlpy.dataset.MDPDataset(
        arrays["observations"],
        arrays["actions"],
        arrays["rewards"],
        arrays["terminals"],
        arrays["timeouts"],
        action_space=d3rlpy.ActionSpace.CONTINUOUS,
    )
    s = spec["sizes"]
    if spec["algo"] == "bcq":
        config = d3rlpy.algos.BCQConfig(
            actor_encoder_factory=VectorEncoderFactory(s["actor_hidden_sizes"]),
            critic_encoder_factory=VectorEncoderFactory(s["critic_hidden_sizes"]),
            imitator_encoder_factory=VectorEncoderFactory(s["vae_hidden_sizes"]),
            actor_learning_rate=s["learning_rate"],
            critic_learning_rate=s["learning_rate"],
            imitator_learning_rate=s["learning_rate"],
            batch_size=s["batch_size"],
            lam=0.75,
            action_flexibility=0.05,
            n_action_samples=s["n_action_samples"],
            beta=0.5,
        )
    else:
        encoder = VectorEncoderFactory(s["hidden_sizes"])
        common = {
            "actor_encoder_factory": encoder,
            "critic_encoder_factory": encoder,
            "actor_learning_rate": s["learning_rate"],
            "critic_learning_rate": s["learning_rate"],
            "batch_size": s["batch_size"],
        }
        if spec["algo"] == "td3":
            config = d3rlpy.algos.TD3Config(update_actor_interval=s["policy_delay"], **common)
        elif spec["algo"] == "sac":
            config = d3rlpy.algos.SACConfig(temp_learning_rate=s["learning_rate"], **common)
        else:
            common["actor_learning_rate"] = s["actor_learning_rate"]
            config = d3rlpy.algos.CQLConfig(
                temp_learning_rate=s["actor_learning_rate"],
                alpha_learning_rate=0.0,
                conservative_weight=s["cql_alpha"],
                n_action_samples=s["n_action_samples"],
                soft_q_backup=False,
                **common,
            )
    algo = config.create(device="cpu:0")
    algo.build_with_dataset(dataset)

    def fit(n: int) -> None:
        algo.fit(
            dataset,
            n_steps=n,
            n_steps_per_epoch=n,
            show_progress=False,
            logger_adapter=NoopAdapterFactory(),
            save_interval=10**9,
        )

    fit(spec["warmup"])
    rates = []
    for _ in range(spec["repeats"]):
        started = time.perf_counter()
        fit(spec["updates"])
        rates.append(spec["updates"] / (time.perf_counter() - started))
    return {"version": d3rlpy.__version__, "updates_per_s": rates}


# ------------------------------------------------------------------------------------ acrl side


def random_arrays(seed: int = 0) -> dict:
    """N_TRANSITIONS random Hopper-shaped transitions (float32; 1% terminals, the last row a timeout)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    terminals = rng.random(N_TRANSITIONS) < 0.01
    timeouts = np.zeros(N_TRANSITIONS, bool)
    timeouts[-1] = not terminals[-1]
    observations = rng.normal(size=(N_TRANSITIONS + 1, OBS_DIM)).astype(np.float32)
    return {
        "observations": observations[:-1],
        "next_observations": observations[1:],
        "actions": rng.uniform(-1, 1, (N_TRANSITIONS, ACT_DIM)).astype(np.float32),
        "rewards": rng.normal(size=N_TRANSITIONS).astype(np.float32),
        "terminals": terminals,
        "timeouts": timeouts,
    }


def acrl_agent(algo: str, arrays: dict, threads: int):
    """An acrl agent of `algo` at SIZES on `threads` torch threads learning from a replay buffer
    holding `arrays`, no evaluation."""
    import torch

    import acrl
    from acrl.parts.buffers import ReplayBuffer

    buffer = ReplayBuffer(N_TRANSITIONS, OBS_DIM, (ACT_DIM,), torch.device("cpu"))
    buffer.add(
        arrays["observations"],
        arrays["actions"],
        arrays["rewards"],
        arrays["next_observations"],
        arrays["terminals"],
        arrays["timeouts"],
    )
    cls = {"bcq": acrl.BCQ, "td3": acrl.TD3, "sac": acrl.SAC, "cql": acrl.CQL}[algo]
    return cls("Hopper-v5", buffer=buffer, seed=0, eval_freq=0, torch_threads=threads, **SIZES[algo])


def acrl_runs(agents: dict[int, object], updates: int, repeats: int) -> dict[int, dict[str, list]]:
    """Per thread count: updates/s of its agent's `learn` over `updates` more updates and, right
    after each, the roofline of its update's products, `repeats` times after a warm-up. The
    thread counts take turns, so that a change in the machine's speed falls on all of them and on
    the roofline alike: their ratios are paired."""
    import torch

    products = {}
    for threads, agent in agents.items():
        agent.learn(agent.num_steps + 20, progress=False)
        products[threads] = recorded_products(agent)
    runs: dict[int, dict[str, list]] = {threads: {"rates": [], "rooflines": []} for threads in agents}
    for _ in range(repeats):
        for threads, agent in agents.items():
            started = time.perf_counter()
            agent.learn(agent.num_steps + updates, progress=False)  # sets torch's thread count
            runs[threads]["rates"].append(updates / (time.perf_counter() - started))
            torch.set_num_threads(threads)
            runs[threads]["rooflines"].append(roofline(products[threads]))
    return runs


def recorded_products(agent) -> list[tuple[int, int, int]]:
    """(M, K, N) of every matrix product in one `agent.update`, in order (forward and backward)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    aten, onednn = torch.ops.aten, torch.ops.mkldnn._linear_pointwise.default

    class Recorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.products = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is aten.mm.default:
                (m, k), (_, n) = args[0].shape, args[1].shape
                self.products.append((m, k, n))
            elif func is aten.addmm.default:
                (m, k), (_, n) = args[1].shape, args[2].shape
                self.products.append((m, k, n))
            elif func is onednn:  # x (M, K) @ weight (N, K).T
                (m, k), (n, _) = args[0].shape, args[1].shape
                self.products.append((m, k, n))
            elif func in (aten.bmm.default, aten.baddbmm.default, aten.matmul.default):
                raise NotImplementedError(f"the roofline does not count {func}")
            return func(*args, **(kwargs or {}))

    batch = agent.buffer.sample(agent.config.batch_size, agent.rng)
    recorder = Recorder()
    with recorder:
        agent.update(batch)
    return recorder.products


def product_seconds(shape: tuple[int, int, int], repeats: int = 15) -> dict[str, float]:
    """Median seconds of one (M, K) x (K, N) float32 product, warm: torch.mm and oneDNN."""
    import torch

    m, k, n = shape
    a, b, weight = torch.randn(m, k), torch.randn(k, n), torch.randn(n, k)
    kernels = {
        "mm": lambda: torch.mm(a, b),
        "onednn": lambda: torch.ops.mkldnn._linear_pointwise(a, weight, None, "none", [], ""),
    }
    seconds = {}
    for name, kernel in kernels.items():
        for _ in range(3):
            kernel()
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            kernel()
            times.append(time.perf_counter() - started)
        seconds[name] = statistics.median(times)
    return seconds


def roofline(products: list[tuple[int, int, int]]) -> dict:
    """The products' FLOPs and their time at torch.mm's rate and at the best kernel's, per shape."""
    timed = {shape: product_seconds(shape) for shape in set(products)}
    mm = sum(timed[s]["mm"] for s in products)
    best = sum(min(timed[s].values()) for s in products)
    flops = sum(2 * m * k * n for m, k, n in products)
    return {
        "products": len(products),
        "gflop": flops / 1e9,
        "mm_seconds": mm,
        "best_seconds": best,
        "mm_gflops": flops / mm / 1e9,
        "best_gflops": flops / best / 1e9,
    }


# ------------------------------------------------------------------------------------ the run


def markdown(summary: dict) -> str:
    """The summary as one markdown table per thread count."""
    meta = summary["meta"]
    lines = [
        f"### Off-policy updates/s against the roofline and d3rlpy {summary.get('d3rlpy_version', '')}",
        "",
        f"{meta['cpu']}, {meta['cores']} cores; {meta['date']}; load average {meta['load_average_before'][0]:.2f} "
        f"before, {meta['load_average_after'][0]:.2f} after; median of {summary['repeats']} runs each; "
        f"`{meta['command']}`.",
        "",
    ]
    for threads, rows in summary["threads"].items():
        lines += [
            f"{threads} torch thread(s) (rooflines in updates/s; % of it: median of the paired runs):",
            "",
            "| algorithm | GFLOP/update | acrl updates/s | roofline (torch.mm) | % of it | "
            "roofline (best kernel) | % of it | d3rlpy updates/s | acrl / d3rlpy |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for algo, r in rows.items():
            d3 = r.get("d3rlpy")
            lines.append(
                f"| {algo.upper()} | {r['gflop']:.2f} | {r['acrl']:.1f} | {r['roofline_mm']:.1f} | "
                f"{r['of_roofline_mm']:.0%} | {r['roofline_best']:.1f} | {r['of_roofline_best']:.0%} | "
                + (f"{d3:.1f} | **{r['acrl'] / d3:.2f}x** |" if d3 else "| |")
            )
        lines.append("")
    one = next(iter(summary["threads"]))
    for threads in list(summary["threads"])[1:]:
        ratios = ", ".join(f"{algo.upper()} {scaling[threads]:.2f}x" for algo, scaling in summary["scaling"].items())
        lines += [f"acrl with {threads} threads against {one} (median of the paired runs): {ratios}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring); returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algos", nargs="+", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-d3rlpy", action="store_true", help="acrl and the roofline only")
    parser.add_argument(
        "--out",
        type=Path,
        default=SCRATCH.parent / "update_roofline",
        help="results path without suffix (default: the scratch folder benchmarks/results/tmp/)",
    )
    parser.add_argument("--d3rlpy-worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.d3rlpy_worker:
        print(json.dumps(d3rlpy_worker(json.loads(args.d3rlpy_worker))))
        return 0

    import numpy as np

    from acrl.core.files import write_json_atomic, write_text_atomic
    from acrl.core.provenance import load_average, provenance

    load_before = load_average()
    python = None
    if not args.no_d3rlpy:
        from bcq_vs_d3rlpy import ensure_venv, run_d3rlpy

        python = ensure_venv()
    SCRATCH.mkdir(parents=True, exist_ok=True)
    arrays = random_arrays()
    npz = SCRATCH / "hopper-random.npz"
    np.savez(npz, **arrays)
    summary: dict = {
        "repeats": args.repeats,
        "sizes": SIZES,
        "threads": {str(t): {} for t in args.threads},
        "scaling": {},
    }

    def d3rlpy_runs(algo: str) -> dict[int, dict]:
        """d3rlpy's `fit` on the same arrays and sizes, per thread count ({} with --no-d3rlpy)."""
        if python is None:
            return {}
        return {
            threads: run_d3rlpy(
                python,
                {
                    "algo": algo,
                    "sizes": SIZES[algo],
                    "threads": threads,
                    "npz": str(npz),
                    "warmup": 20,
                    "updates": UPDATES[algo],
                    "repeats": args.repeats,
                },
                __file__,
            )
            for threads in args.threads
        }

    for index, algo in enumerate(args.algos):
        peer = d3rlpy_runs(algo) if index % 2 else {}  # d3rlpy first for every other algorithm
        agents = {threads: acrl_agent(algo, arrays, threads) for threads in args.threads}
        runs = acrl_runs(agents, UPDATES[algo], args.repeats)
        peer = peer or d3rlpy_runs(algo)
        first = runs[args.threads[0]]["rates"]
        summary["scaling"][algo] = {
            str(t): statistics.median(a / b for a, b in zip(runs[t]["rates"], first, strict=True))
            for t in args.threads[1:]
        }
        for threads in agents:
            rates, rooflines = runs[threads]["rates"], runs[threads]["rooflines"]
            row = {
                "acrl": statistics.median(rates),
                "acrl_runs": rates,
                "gflop": rooflines[0]["gflop"],
                "roofline_mm": statistics.median(1 / r["mm_seconds"] for r in rooflines),
                "roofline_best": statistics.median(1 / r["best_seconds"] for r in rooflines),
                "of_roofline_mm": statistics.median(a * r["mm_seconds"] for a, r in zip(rates, rooflines)),
                "of_roofline_best": statistics.median(a * r["best_seconds"] for a, r in zip(rates, rooflines)),
                "rooflines": rooflines,
            }
            if threads in peer:
                result = peer[threads]
                summary["d3rlpy_version"] = result["version"]
                row.update(d3rlpy=statistics.median(result["updates_per_s"]), d3rlpy_runs=result["updates_per_s"])
            summary["threads"][str(threads)][algo] = row
            print(
                f"{threads} thread(s) {algo}: acrl {row['acrl']:.1f}/s = {row['of_roofline_mm']:.0%} of the torch.mm "
                f"roofline, {row['of_roofline_best']:.0%} of the best kernel's; d3rlpy {row.get('d3rlpy', 0):.1f}/s",
                file=sys.stderr,
            )
    summary = {"meta": provenance(load_before, ["mujoco"]), **summary}
    write_json_atomic(args.out.with_suffix(".json"), summary)
    text = markdown(summary)
    write_text_atomic(args.out.with_suffix(".md"), text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
