"""Which torch device a run uses: `device="auto" | "cpu" | "cuda" | "cuda:N"` in every config.

`auto` picks CUDA (device 0) when `torch.cuda.is_available()`, else the CPU. A run's
config.yaml records the device it resolved to ("cpu" or "cuda:0"), never "auto", so the file
says what was used. Checkpoints are device-free: `acrl.core.checkpoint.load_checkpoint` maps
every tensor to the CPU and the agent moves them to its own device, so a checkpoint written on
a GPU loads on a CPU-only machine and the reverse.
"""

from __future__ import annotations

import os

import torch

from acrl.core.errors import InputError

DEVICE_CHOICES = "auto, cpu, cuda or cuda:N"


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
