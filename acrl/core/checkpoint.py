"""One checkpoint format for every algorithm, written atomically and read without running code.

A checkpoint is a `torch.save`d dict of tensors and plain data only, so it loads with
`torch.load(weights_only=True)`: opening a checkpoint someone sent you never executes code
from it. Layout:

    format: "acrl-checkpoint", format_version: 1, acrl_version: str,
    algo: "ppo" | "a3c" | ..., config: dict (the algorithm's config as plain data),
    state: dict (module and optimizer state dicts, normaliser statistics, counters),
    rng: dict (python, numpy and torch generator states)
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from acrl.core.errors import InputError
from acrl.core.files import atomic_path
from acrl.core.version import __version__

FORMAT = "acrl-checkpoint"
FORMAT_VERSION = 1


def rng_state(generator: np.random.Generator) -> dict[str, Any]:
    """Python, global numpy, torch and the agent's own numpy generator states, as plain data."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy_global": [kind, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, cached],
        "torch": torch.get_rng_state(),
        "generator": generator.bit_generator.state,
    }


def set_rng_state(state: dict[str, Any], generator: np.random.Generator) -> None:
    """Restore what `rng_state` captured (the agent's generator in place)."""
    random.setstate(_tuples(state["python"]))
    kind, keys, pos, has_gauss, cached = state["numpy_global"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    generator.bit_generator.state = state["generator"]


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, (list, tuple)) else value


def save_checkpoint(path: str | Path, algo: str, config: dict[str, Any], state: dict[str, Any],
                    rng: dict[str, Any]) -> None:
    """Write a checkpoint atomically (`acrl.core.files.atomic_path`), creating its directory.

    A crash mid-write leaves the previous checkpoint intact.
    """
    payload = {"format": FORMAT, "format_version": FORMAT_VERSION, "acrl_version": __version__,
               "algo": algo, "config": config, "state": state, "rng": rng}
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read and check a checkpoint with `torch.load(weights_only=True)`.

    Returns:
        the payload dict described in the module docstring.
    Raises:
        InputError: a missing file, a truncated or corrupt file, a file that is not an acrl
            checkpoint, or one from a newer format version.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no checkpoint at {path}. A run directory has checkpoints/latest.pt and "
                         "checkpoints/best.pt once training has written one.")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds for truncated/corrupt zip files
        # Only the exception's type: torch's message for a non-weights file advises loading it
        # with weights_only=False, which is exactly what a checkpoint from elsewhere must not get.
        raise InputError(f"{path} is not a readable checkpoint: truncated, corrupt or not a torch "
                         f"file ({type(exc).__name__}). Use another checkpoint of the run or retrain.") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise InputError(f"{path} is a torch file but not an acrl checkpoint (no 'format: {FORMAT}').")
    if payload.get("format_version", 0) > FORMAT_VERSION:
        raise InputError(f"{path} has checkpoint format {payload['format_version']}; this acrl "
                         f"({__version__}) reads format {FORMAT_VERSION}. Upgrade acrl.")
    missing = {"algo", "config", "state", "rng"} - payload.keys()
    if missing:
        raise InputError(f"{path} is an incomplete acrl checkpoint: missing {sorted(missing)}.")
    return payload
