"""A run's model card: run_dir/README.md, what the run is and how to repeat it, from its own files.

It names the algorithm, environment, seed, budget and preset, an Atari game's sticky-action
probability (`RunConfig.sticky_actions`), a precision other than fp32 (`RunConfig.precision`), the
evaluations, the learning curve, the videos and the command that repeats the run.

Written by the run loop when a run finishes, and again by `acrl evaluate` (its table gains
the evaluation's row) and `acrl record` (its video section lists the new file). Apart from
the agent's algorithm and config, everything on it comes from the run directory: eval.json,
evaluate.json (the last `acrl evaluate`), learning_curve.png and videos/*.mp4, so it can be
rewritten at any time.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

from acrl.core.config import RunConfig, preset_values, update_config
from acrl.core.errors import InputError
from acrl.core.files import write_text_atomic
from acrl.core.version import __version__

SKIPPED = {"env_id", "seed", "total_steps", "preset", "device", "dataset"}
"""Config fields that the command gives as flags of their own, or (device) that do not change the result."""


def acrl_commit() -> str:
    """The git commit of the acrl source in use ("abc1234", "+dirty" with uncommitted changes), or "unknown"."""
    source = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(
            ["git", "-C", str(source), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if head.returncode:
            return "unknown (acrl is not installed from a git checkout)"
        dirty = subprocess.run(
            ["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown (git is not available)"
    return head.stdout.strip() + ("+dirty" if dirty else "")


def reproduce_command(algo: str, config: RunConfig) -> str:
    """The `acrl train` command line that builds exactly `config`.

    The flags give env, seed, budget, preset and dataset; every other field that differs
    from what those flags alone give (the algorithm's defaults and the preset, as
    `acrl.algos.make_config` applies them) becomes a `--set key=value`, and so does every field
    whose default is computed on the machine that runs it (a `default_factory`: A3C's `workers`,
    the core count, and `start_method`), so that the command means the same anywhere.

    Raises:
        InputError: the config's preset no longer exists for its environment.
    """
    preset = config.preset or None
    values, _ = preset_values(algo, config.env_id, preset)
    base = update_config(type(config)(), values, f"preset {preset!r}").to_dict()
    words = [
        "acrl",
        "train",
        algo,
        "--env",
        config.env_id,
        "--seed",
        str(config.seed),
        "--total-steps",
        str(config.total_steps),
    ]
    if preset and preset != "default":
        words += ["--preset", preset]
    if getattr(config, "dataset", None):
        words += ["--dataset", config.dataset]
    machine_dependent = {f.name for f in dataclasses.fields(config) if f.default_factory is not dataclasses.MISSING}
    changed = [
        f"{key}={yaml.safe_dump(value, default_flow_style=True).strip().removesuffix('...').strip()}"
        for key, value in config.to_dict().items()
        if key not in SKIPPED and (value != base[key] or key in machine_dependent)
    ]
    if changed:
        words += ["--set", *changed]
    return shlex.join(words)


def _row(label: str, result: dict[str, Any]) -> str:
    returns = result.get("returns", [])
    extra = "".join(
        f"; {key} {value:.3g}"
        for key, value in result.items()
        if key.endswith("_mean") and key != "return_mean" and isinstance(value, float)
    )
    low, high = (f"{min(returns):.1f}", f"{max(returns):.1f}") if returns else ("-", "-")
    return (
        f"| {label} | {len(returns)} | {result['return_mean']:.1f} | {result['return_std']:.1f} | {low} | {high} | "
        f"{'deterministic' if result.get('deterministic', True) else 'stochastic'}{extra} |"
    )


def model_card(run_dir: Path, algo: str, config: RunConfig, step_unit: str = "step") -> str:
    """The model card of `algo` with `config` in `run_dir` as Markdown (see the module docstring).

    `step_unit` is what the budget counts: "step" (environment steps) or "update" (offline).
    """
    unit = "gradient updates" if step_unit == "update" else "environment steps"
    best = json.loads((run_dir / "eval.json").read_text()) if (run_dir / "eval.json").is_file() else None
    last = (best or {}).get("last")  # the run's last evaluation, where it ended (older eval.json files: none)
    stopped = f" (stopped early at {last['step']:,})" if last and last["step"] < config.total_steps else ""
    lines = [
        f"# {algo.upper()} on {config.env_id}, seed {config.seed}",
        "",
        f"Written by acrl {__version__} (commit {acrl_commit()}) on {time.strftime('%Y-%m-%d %H:%M')}; "
        f"budget {config.total_steps:,} {unit}{stopped}{', preset ' + config.preset if config.preset else ''}.",
        "",
    ]
    if config.sticky_actions is not None:
        lines += [
            f"Sticky actions: {config.sticky_actions:g} (the probability that the emulator repeats the previous "
            "action at each frame; Machado et al. 2018), in training and evaluation alike.",
            "",
        ]
    if config.precision != "fp32":
        lines += [
            f"Precision: {config.precision} (the networks' forward passes under bfloat16 autocast on {config.device}; "
            "parameters, optimizer state, losses and checkpoints in float32).",
            "",
        ]
    lines += ["## Evaluation", ""]
    rows = []
    if best:
        at = f" at step {best['step']:,}" if "step" in best else ""
        rows.append(_row(f"best checkpoint, during training{at} (eval.json)", best))
    if last:
        rows.append(_row(f"last evaluation during training, step {last['step']:,} (eval.json)", last))
    if (run_dir / "evaluate.json").is_file():
        last = json.loads((run_dir / "evaluate.json").read_text())
        rows.append(
            _row(f"`acrl evaluate` of {last['checkpoint']}, seed {last['seed']}, {last['date']}", last["result"])
        )
    if rows:
        lines += [
            "| policy | episodes | mean return | std | min | max | actions |",
            "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
            *rows,
            "",
        ]
    else:
        lines += ["The run has not finished: no evaluation yet (`acrl resume` continues it).", ""]
    if (run_dir / "learning_curve.png").is_file():
        lines += ["## Learning curve", "", "![learning curve](learning_curve.png)", ""]
    videos = sorted((run_dir / "videos").glob("*.mp4"), key=lambda p: p.stat().st_mtime)
    lines += ["## Video", ""]
    if videos:
        lines += [
            f"Latest: [{videos[-1].relative_to(run_dir)}]({videos[-1].relative_to(run_dir)})"
            f"{f' (of {len(videos)} in videos/)' if len(videos) > 1 else ''}.",
            "",
        ]
    else:
        lines += [
            "None recorded: `acrl record RUN_DIR` writes one, `acrl train ... --video-freq N` records "
            "clips while training.",
            "",
        ]
    lines += [
        "## Reproduce",
        "",
        "```",
        reproduce_command(algo, config),
        "```",
        "",
        "The full configuration is in config.yaml; metrics.csv and the TensorBoard events hold every logged value.",
        "",
    ]
    return "\n".join(lines)


def write_model_card(run_dir: str | Path, agent: Any) -> Path:
    """Write the model card of `agent` (its algo and step_unit) to run_dir/README.md atomically.

    The config is the run's: run_dir/config.yaml when it is there (a resume rewrites it with the
    new budget, while best.pt, which `acrl evaluate` loads, keeps the config it was saved with),
    else the agent's.

    Raises:
        InputError: config.yaml is not a config of this algorithm.
    """
    run_dir = Path(run_dir)
    config, saved = agent.config, run_dir / "config.yaml"
    if saved.is_file():
        try:
            values = yaml.safe_load(saved.read_text())["config"]
        except (yaml.YAMLError, KeyError, TypeError) as exc:
            raise InputError(f"{saved} is not a run's config.yaml ({exc}).") from None
        config = update_config(type(agent.config)(), values, str(saved))
    path = run_dir / "README.md"
    write_text_atomic(path, model_card(run_dir, agent.algo, config, agent.step_unit))
    return path
