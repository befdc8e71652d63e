"""docs/benchmarks.md, the off-policy sections: the update against the roofline and d3rlpy (update_roofline.json)
and SAC on Hopper-v5 (sac_hopper.json)."""

from __future__ import annotations

import statistics

from sections.formats import conditions, kilo, met, n, pct, table, x


def update_roofline(results: dict[str, dict]) -> str:
    d = results["update_roofline"]
    one, two = d["threads"]["1"], d["threads"]["2"]
    names = {"bcq": "BCQ", "td3": "TD3", "sac": "SAC", "cql": "CQL"}
    rows1 = [
        [
            names[a],
            f"{s['gflop']:.2f}",
            n(s["acrl"], 1),
            pct(s["of_roofline_mm"]),
            pct(s["of_roofline_best"]),
            n(s["d3rlpy"], 1),
            x(s["acrl"] / s["d3rlpy"]),
        ]
        for a, s in one.items()
    ]
    rows2 = [
        [names[a], n(s["acrl"], 1), x(d["scaling"][a]["2"]), n(s["d3rlpy"], 1), x(s["acrl"] / s["d3rlpy"])]
        for a, s in two.items()
    ]
    bcq_products = one["bcq"]["rooflines"]
    mm = statistics.median(p["mm_gflops"] for p in bcq_products)
    best = statistics.median(p["best_gflops"] for p in bcq_products)
    ratios = [t[a]["acrl"] / t[a]["d3rlpy"] for t in (one, two) for a in ("bcq", "td3", "sac")]
    cql = one.get("cql")
    cql_sizes = cql_text = ""
    if cql:
        size = d["sizes"]["cql"]
        batch, samples = size["batch_size"], 3 * size["n_action_samples"]
        widths = "-".join(map(str, size["hidden_sizes"]))
        cql_sizes = f"; CQL (the D4RL table's settings): {widths}, batch {batch}, {samples} sampled actions per state"
        reach = (
            " So the 2× goal is out of reach in float32 on this CPU, whatever acrl's code (bfloat16 is not measured"
            " for CQL)."
            if cql["roofline_best"] < 2 * cql["d3rlpy"]
            else ""
        )
        cql_text = f"""

CQL's update (issue #50's goal: at least 2× d3rlpy's updates/s) is another kind: {cql["gflop"]:.1f} GFLOP, most
of it the twin critics' products over the {batch * samples:,} sampled state-action pairs of a batch ({batch} states
× {samples} actions: a third uniform, a third from pi(.|s), a third from pi(.|s')), forward and backward. Both
libraries compute those same products, so the update is bound by them: the best-kernel roofline
({n(cql["roofline_best"], 1)} updates/s) is {x(cql["roofline_best"] / cql["d3rlpy"])} d3rlpy's rate; acrl runs at
{pct(cql["of_roofline_best"])} of it and d3rlpy at about {pct(cql["d3rlpy"] / cql["roofline_best"])} (acrl /
d3rlpy {x(cql["acrl"] / cql["d3rlpy"])}).{reach} acrl's CQL samples the policy's actions for a state from one
forward pass (`SquashedGaussianHead.sample_n`), and a weight gradient over at least `LONG_REDUCTION_ROWS` rows goes
through torch.mm (`acrl.core.torch_fast`)."""
    return f"""## The off-policy update against the roofline and d3rlpy

BCQ, TD3 and SAC at their papers' sizes on Hopper-v5 shapes (BCQ: VAE 750-750, 400-300 actor and
critics, batch 100, 10 sampled actions per next state; TD3: 400-300, batch 100; SAC: 256-256,
batch 256{cql_sizes}), `Agent.learn` from a random 100k-transition buffer, against d3rlpy
{d["d3rlpy_version"]} (its own venv, as it pins gymnasium 1.0.0) on the same arrays with the same sizes;
median of {d["repeats"]} runs. The roofline: every matrix product of one update is recorded with its shape,
each shape timed alone on the same thread count right after each run; its FLOPs over that time is
the fastest the update's products can go. "torch.mm" is the BLAS that PyTorch calls (MKL); "best
kernel" is the faster of MKL and oneDNN per shape. The file's tables are in
`benchmarks/results/update_roofline.md`.
{conditions(d)}

{
        table(
            [
                "one thread",
                "GFLOP/update",
                "acrl updates/s",
                "% of torch.mm roofline",
                "% of best-kernel roofline",
                "d3rlpy updates/s",
                "acrl / d3rlpy",
            ],
            "lrrrrrr",
            rows1,
        )
    }

{
        table(
            ["two threads", "acrl updates/s", "× one thread (paired runs)", "d3rlpy updates/s", "acrl / d3rlpy"],
            "lrrrr",
            rows2,
        )
    }

In this run BCQ's products ran at {mm:.0f} GFLOP/s a thread through torch.mm and {best:.0f} through the best
kernel per shape. What made the update faster (2026-12-01, on an AMD EPYC whose model was not recorded, where MKL ran
float32 products at about 100 GFLOP/s a thread and oneDNN, which ships inside the same torch, at about 220 with
the same IEEE float32 arithmetic): `acrl.parts.nets.Linear` (an `nn.Linear`, same parameters and checkpoints)
sends every layer of at least 2M multiply-adds, forward and both gradients, through oneDNN
(`torch.ops.mkldnn._linear_pointwise`); smaller layers (oneDNN costs ~12 µs a call) and every non-CPU device
stay on `torch.nn.functional.linear`; on AMD's family 25 (Zen 3 and 4), where the two libraries run at about the
same rate, only products of at least 32M multiply-adds take oneDNN (`acrl.core.torch_fast.ONEDNN_MIN_MACS_BY_CPU`).
BCQ went from 27 (no result file) to 45.6 updates/s on one thread on that EPYC; a fixed-seed update gives torch's
own losses to float round-off (`tests/unit/test_bcq.py::test_onednn_products_leave_the_update_unchanged`) and the
hand-computed target tests pass unchanged. DDPG, TD3 and SAC also moved from `foreach` to fused Adam (TD3 +30%).

Targets: BCQ ≥ 75% of the roofline on one thread, {met(one["bcq"]["of_roofline_mm"] >= 0.75)} against
torch.mm's ({pct(one["bcq"]["of_roofline_mm"])}; {pct(one["bcq"]["of_roofline_best"])} of the best kernel's);
TD3 and SAC ≥ 60%, {met(min(one["td3"]["of_roofline_mm"], one["sac"]["of_roofline_mm"]) >= 0.6)}
({pct(one["td3"]["of_roofline_mm"])}, {pct(one["sac"]["of_roofline_mm"])}); BCQ, TD3 and SAC ahead of d3rlpy on
every one, {met(min(ratios) > 1)} ({min(ratios):.1f}–{max(ratios):.1f}×). BCQ on two threads ≥ 1.8× one thread:
{met(d["scaling"]["bcq"]["2"] >= 1.8)}, {x(d["scaling"]["bcq"]["2"])} here (1.54× and 1.89× in two runs on that
EPYC on 2026-12-01, no result file; two-thread timings on a 2-vCPU machine drift most). On that EPYC the
products scaled (oneDNN 1.85× on two threads, timed by hand), but about 7 ms of each 21 ms update was
per-operation cost (the autograd engine, the dispatcher, three Adam steps, elementwise ops on batch-100 tensors)
that eager PyTorch runs on one thread. Where TD3's time went there (one update, 3.3 ms, measured by phase by
hand): its 60 products are small (batch 100), so about 40% of the update is that per-operation cost; by phase,
target 0.7 ms, critic forward and backward 1.3 ms, its Adam 0.23, actor every second update 0.8, replay sampling
0.18 (cache misses on 100 random rows).{cql_text} The GPU half of this comparison (`benchmarks/gpu_checks.py`)
waits for a GPU."""


def sac_hopper(results: dict[str, dict]) -> str:
    d = results["sac_hopper"]
    rows = [
        [
            str(r["seed"]),
            f"{n(r['best_eval'])} ({kilo(r['best_step'])})",
            n(r["final_eval"]),
            f"{n(r['best_checkpoint_fresh_10_episodes'])} ± {n(r['fresh_std'])}",
        ]
        for r in d["runs"]
    ]
    rows.append(
        [
            "**mean**",
            n(statistics.mean(r["best_eval"] for r in d["runs"])),
            f"**{n(d['mean_final_eval'])}**",
            f"**{n(d['mean_best_checkpoint_fresh'])}**",
        ]
    )
    ok = all(r["final_eval"] >= 2500 for r in d["runs"])
    every = " on every seed, by the last evaluation too"
    return f"""## SAC on Hopper-v5

The preset in `acrl/presets/sac.yaml` (the paper's settings, {kilo(d["total_steps"])} steps), three seeds side
by side on the 2 cores, about 85 minutes each; curves in `benchmarks/results/sac_hopper.png`
(`acrl plot runs/sac-hopper/s*` redraws them). Evaluation: {d["evaluation"]}.
{conditions(d)}

{
        table(
            [
                "seed",
                "best evaluation during training (step)",
                f"last evaluation ({kilo(d['total_steps'])})",
                "best.pt on 10 fresh episodes (seed 123)",
            ],
            "lrrr",
            rows,
        )
    }

Target (≥ 2,500 at {kilo(d["total_steps"])} steps) {met(ok)}{every if ok else ""};
rl-baselines3-zoo reports SAC at about 2,600 on Hopper-v3 after 1M steps."""
