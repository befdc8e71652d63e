"""Which torch device a run uses: `device="auto" | "cpu" | "cuda" | "cuda:N"` in every config.

`auto` picks CUDA (device 0) when `torch.cuda.is_available()`, else the CPU. A run's
config.yaml records the device it resolved to ("cpu" or "cuda:0"), never "auto", so the file
says what was used. Checkpoints are device-free: `acrl.core.checkpoint.load_checkpoint` maps
every tensor to the CPU and the agent moves them to its own device, so a checkpoint written on
a GPU loads on a CPU-only machine and the reverse.

Precision: `precision="auto" | "fp32" | "bf16"` in every config. "bf16" runs the networks' forward passes under
`torch.autocast(device_type, dtype=torch.bfloat16)` (`precision_context`, the one place that decides it;
the algorithms enter it around acting and around their updates' forward passes and losses, never around
`backward` or an optimizer step, whose gradients follow the dtypes autocast chose). Parameters, gradients,
optimizer state, returns, advantages, targets, losses and checkpoints stay float32: every network returns
float32 whatever it computed inside (`acrl.parts.nets`), docs/correctness.md item 16. "bf16" is refused
where the hardware has no bfloat16 arithmetic (`check_precision`: a CPU without AVX512-BF16, AMX-BF16 or
Arm's BF16, where autocast would emulate it slower than float32; a GPU older than Ampere). "auto", the default,
is `auto_precision`'s choice, which the agent records in its config (config.yaml says which one ran).
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

import torch

from acrl.core.errors import InputError
from acrl.core.provenance import cpu_model

DEVICE_CHOICES = "auto, cpu, cuda or cuda:N"

FP32_HINT = "--set precision=fp32 for a new run; --precision fp32 for acrl resume, evaluate or record"
"""How a user asks for float32 instead, in `check_precision`'s refusals."""

PRECISIONS = ("fp32", "bf16")
"""The precisions a run computes in: float32 throughout, or bfloat16 autocast of the networks' forward passes. A
config's `precision` is one of them or "auto" (`auto_precision`)."""

BF16_CPU_FEATURES = ("avx512_bf16", "amx_bf16", "bf16")
"""CPU features with bfloat16 arithmetic in hardware, as `torch.cpu.get_capabilities` and Linux's /proc/cpuinfo
name them: x86's AVX512-BF16 (Cooper Lake, Zen 4 and later) and AMX-BF16 (Sapphire Rapids and later), Arm's
BF16 (Armv8.6: Neoverse V1, Graviton 3)."""


def auto_device() -> str:
    """ "cuda:0" when CUDA is available, else "cpu": what `device="auto"` resolves to."""
    return "cuda:0" if torch.cuda.is_available() else "cpu"


def resolve_device(spec: str) -> torch.device:
    """The torch device for a config's `device` string, checked against this machine.

    Args:
        spec: "auto", "cpu", "cuda" (device 0) or "cuda:N".
    Returns:
        torch.device("cpu") or torch.device("cuda", N).
    Raises:
        InputError: an unknown string; CUDA asked for on a machine without it (saying what
            "auto" picks instead); "cuda:N" with N not below the number of GPUs here.
    """
    if spec == "auto":
        return torch.device(auto_device())
    try:
        device = torch.device(spec)
    except (RuntimeError, TypeError):
        raise InputError(f"unknown device {spec!r}; choose {DEVICE_CHOICES}.") from None
    if device.type == "cpu":
        return torch.device("cpu")
    if device.type != "cuda":
        raise InputError(f"device {spec!r} is not supported; choose {DEVICE_CHOICES}.")
    if not torch.cuda.is_available():
        raise InputError(
            f"device {spec!r} asked for, but CUDA is not available on this machine (torch "
            f"{torch.__version__}); --device auto would use {auto_device()}. Pass --device cpu."
        )
    count = torch.cuda.device_count()
    index = device.index or 0
    if index >= count:
        raise InputError(
            f"device {spec!r} asked for, but this machine has {count} GPU{'s' * (count != 1)} "
            f"(cuda:0 to cuda:{count - 1})."
        )
    return torch.device("cuda", index)


def available_memory(device: torch.device) -> int:
    """Bytes that can still be allocated on `device` without swapping: for the CPU, Linux's
    MemAvailable (/proc/meminfo; elsewhere the free physical pages), for CUDA the free memory that
    `torch.cuda.mem_get_info` reports."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024  # kB
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def cpu_bf16_features(cpuinfo: Path = Path("/proc/cpuinfo")) -> tuple[str, ...]:
    """The `BF16_CPU_FEATURES` this CPU has, () for none: from `torch.cpu.get_capabilities()` (where this
    torch has it; any OS), and where that says none or is missing, from Linux's /proc/cpuinfo flags (x86 `flags`, Arm
    `Features`); () where neither can be read."""
    get_capabilities = getattr(torch.cpu, "get_capabilities", None)
    if get_capabilities is not None:
        capabilities = get_capabilities()
        found = tuple(name for name in BF16_CPU_FEATURES if capabilities.get(name))
        if found:
            return found
    try:
        text = cpuinfo.read_text()
    except OSError:
        return ()
    flags = set(" ".join(re.findall(r"^(?:flags|Features)\s*:(.*)$", text, re.MULTILINE)).split())
    return tuple(name for name in BF16_CPU_FEATURES if name in flags)


def auto_precision(device: torch.device, bf16_pays: bool) -> str:
    """What a config's `precision="auto"` runs: "bf16" where the agent says bfloat16 pays (`bf16_pays`:
    `acrl.algos.base.Agent.bf16_on_frames` with image observations) and `device` is a CPU with bfloat16
    instructions (`cpu_bf16_features`); "fp32" elsewhere: a CPU without them is never slowed by emulated
    bfloat16, and on a GPU bf16 is not measured yet (ask for it with precision="bf16")."""
    return "bf16" if bf16_pays and device.type == "cpu" and cpu_bf16_features() else "fp32"


def check_precision(device: torch.device, precision: str) -> None:
    """Refuse a precision that `device` cannot run natively (before any work: `acrl.algos.base.Agent` calls it
    once its device is known).

    Args:
        device: the resolved device (`resolve_device`); precision: one of `PRECISIONS` (the config checked it).
    Raises:
        InputError: "bf16" on a CPU without bfloat16 instructions (`cpu_bf16_features` finds none), where
            autocast would emulate them slower than float32, or on a CUDA GPU of compute capability below 8.0
            (before Ampere); the message names the hardware and says to use fp32.
    """
    if precision != "bf16":
        return
    if device.type == "cuda":
        if torch.version.hip or torch.cuda.get_device_capability(device)[0] >= 8:
            return
        major, minor = torch.cuda.get_device_capability(device)
        raise InputError(
            f"precision bf16 asked for, but {device} ({torch.cuda.get_device_name(device)}, compute capability "
            f"{major}.{minor}) has no bfloat16 arithmetic (compute capability 8.0, Ampere, or later has); "
            f"use precision fp32 ({FP32_HINT})."
        )
    if not cpu_bf16_features():
        raise InputError(
            f"precision bf16 asked for, but this CPU ({cpu_model()}) has no bfloat16 instructions "
            f"({', '.join(BF16_CPU_FEATURES)}), so bfloat16 would be emulated, slower than float32; "
            f"use precision fp32 ({FP32_HINT})."
        )


def precision_context(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """The context the networks' forward passes run in: for "bf16", `torch.autocast(device.type,
    dtype=torch.bfloat16)` (matrix products and convolutions in bfloat16, reductions and the rest as
    autocast lists them); for "fp32", nothing at all (`contextlib.nullcontext`: the float32 path is the one
    without autocast). A fresh context each call (an autocast object is not reentrant).

    Enter it around forward passes and the losses computed from them, never around `backward` or an
    optimizer step (torch's advice: the backward pass follows the dtypes the forward pass used).
    """
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()
