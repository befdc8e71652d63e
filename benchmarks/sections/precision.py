"""docs/benchmarks.md, bfloat16 against float32: the updates' speed (precision.json from benchmarks/precision.py)
and learning (precision_parity.json from benchmarks/precision_parity.py)."""

from __future__ import annotations

from sections.formats import conditions, kilo, n, table, x

LABELS = {
    "ppo_atari": "PPO update, Nature CNN, 84x84x4 frames (8 x 128 rollout, 4 epochs of minibatches of 256)",
    "a3c_atari": "A3C worker, the paper's CNN + LSTM 256, t_max 20 (acting at batch 1, the loss, Adam's step)",
    "bcq": "BCQ update (VAE 750-750, actor and critics 400-300, batch 100)",
    "td3": "TD3 update (400-300, batch 100)",
    "sac": "SAC update (256-256, batch 256)",
    "td3_bc": "TD3+BC update (256-256, batch 256)",
    "iql": "IQL update (256-256, batch 256)",
    "cql": "CQL update (critics 256-256-256 over 31 actions per state, batch 256)",
}


def precision(results: dict[str, dict]) -> str:
    """fp32 against bf16 autocast, part by part, on one machine in one run; empty until the result exists."""
    d = results.get("precision")
    if d is None:
        return ""
    rows = []
    for part, r in d["parts"].items():
        if r.get("refused"):
            rows.append([LABELS.get(part, part), r["unit"], n(r["fp32"], 2 if r["fp32"] < 10 else 1), "refused", ""])
            continue
        rate = [n(r[key], 2 if r[key] < 10 else 1) for key in ("fp32", "bf16")]
        rows.append([LABELS.get(part, part), r["unit"], *rate, x(r["ratio_bf16_over_fp32"])])
    features = ", ".join(d["machine"]["cpu_bf16_features"]) or "none"
    ratios = {part: r["ratio_bf16_over_fp32"] for part, r in d["parts"].items() if not r.get("refused")}
    faster = ", ".join(f"{part} {x(v)}" for part, v in ratios.items() if v >= 1.1) or "none"
    slower = ", ".join(f"{part} {x(v)}" for part, v in ratios.items() if v < 1.0) or "none"
    return f"""## bfloat16 against float32: the updates

`./run bench precision --repeats {d["repeats"]}` (`benchmarks/precision.py`): each part built twice, `precision=fp32`
and `precision=bf16` (autocast of the networks' forward passes; parameters, optimizer state and losses float32),
timed in turn on {d["threads"]} torch thread(s), the rates the medians and the ratio the median of the paired ratios.
The CPU's bfloat16 features: {features}. {conditions(d)}

{table(["part", "unit", "fp32", "bf16", "bf16 / fp32"], "llrrr", rows)}

Faster in bf16: {faster}; slower: {slower}. bf16 pays where the products are large (batches of hundreds through
convolutions or wide layers) and costs where they are small: A3C acts at batch 1 and its loss runs over 20 steps,
where autocast's casts outweigh the faster products.{fused_adam(results)}

The default, `precision=auto`, is bf16 for PPO on image observations on a CPU with bfloat16
instructions{whole_loop(results)}, with its learning parity below, and fp32 everywhere
else (A3C, vectors, a GPU, a CPU without them); config.yaml records the one that ran. `--set precision=bf16` asks
for it elsewhere, such as the BCQ and SAC updates measured faster here.{parity(results)}"""


def fused_adam(results: dict[str, dict]) -> str:
    """A3C's worker timed again after its shared Adam moved to torch's fused kernel (precision_a3c.json, the part
    a3c_atari of benchmarks/precision.py); empty without it."""
    d = results.get("precision_a3c")
    if d is None:
        return ""
    before, after = results["precision"]["parts"]["a3c_atari"], d["parts"]["a3c_atari"]
    return (
        f" A3C's worker timed again after its shared Adam moved to torch's fused kernel: fp32 {n(after['fp32'], 1)} "
        f"updates/s against {n(before['fp32'], 1)} in the table, bf16 {n(after['bf16'], 1)} "
        f"({x(after['ratio_bf16_over_fp32'])} fp32's). {conditions(d)}"
    )


def whole_loop(results: dict[str, dict]) -> str:
    """PPO's whole training loop in bf16 against fp32 on Atari (atari_speed.json's part ppo_bf16); empty without it."""
    ratio = results.get("atari_speed", {}).get("results", {}).get("ratios", {}).get("bf16/fp32")
    return "" if ratio is None else f" (its whole training loop on Atari {x(ratio)} fp32's, the Atari speed section)"


def parity(results: dict[str, dict]) -> str:
    """The learning half: each algorithm's final-evaluation IQM per precision with its 95% CI, and whether the
    CIs overlap (the issue's parity test); empty until precision_parity.json exists."""
    d = results.get("precision_parity")
    if d is None:
        return ""
    rows = [
        [
            algo.upper(),
            *(f"{n(r['iqm'][p], 2)} [{n(r['iqm_ci'][p][0], 2)}, {n(r['iqm_ci'][p][1], 2)}]" for p in ("fp32", "bf16")),
            "yes" if r["cis_overlap"] else "**no**",
        ]
        for algo, r in d["algos"].items()
    ]
    commands = "; ".join(f"`{r['command']}`" for r in d["algos"].values())
    missing = [algo.upper() for algo in ("ppo", "a3c") if algo not in d["algos"]]
    todo = f"\n\nNot yet run: {', '.join(missing)}." if missing else ""
    note = f"\n\n{d['note']}" if "note" in d else ""
    return f"""

**Learning.** `python benchmarks/precision_parity.py` on {d["env_id"]}, {kilo(d["steps"])} environment steps per
run, 3 seeds per precision, each algorithm's MinAtar preset: the final evaluation's IQM with its 95% bootstrap CI
(`acrl sweep`'s statistic). Parity, the issue's test: the CIs overlap. Its sweeps: {commands}. {conditions(d)}

{table(["algorithm", "fp32 IQM [95% CI]", "bf16 IQM [95% CI]", "CIs overlap"], "lrrl", rows)}{note}{todo}"""
