"""docs/benchmarks.md, bfloat16 against float32 (precision.json from benchmarks/precision.py)."""

from __future__ import annotations

from sections.formats import conditions, n, table, x

LABELS = {
    "ppo_atari": "PPO update, Nature CNN, 84x84x4 frames (8 x 128 rollout, 4 epochs of minibatches of 256)",
    "a3c_atari": "A3C worker, the paper's CNN + LSTM 256, t_max 20 (acting at batch 1, the loss, Adam's step)",
    "bcq": "BCQ update (VAE 750-750, actor and critics 400-300, batch 100)",
    "td3": "TD3 update (400-300, batch 100)",
    "sac": "SAC update (256-256, batch 256)",
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
where autocast's casts outweigh the faster products. `fp32` stays the default until learning parity is measured
(issue #48 item 3: PPO and A3C on MinAtar Breakout, 3 seeds each, not yet run); `--set precision=bf16` is there
for the large-batch updates measured faster here."""
