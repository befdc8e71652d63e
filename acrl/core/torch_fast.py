"""The private torch APIs acrl uses, in one place, each with a fallback to the public API.

Four fast paths, all on by default and all turned off together by the environment variable
`ACRL_PRIVATE_APIS=0` (read at import) or `set_private_apis(False)`:

- `linear`: large float32 CPU products through oneDNN (`torch.ops.mkldnn._linear_pointwise`)
  instead of the BLAS (MKL) that `torch.nn.functional.linear` calls. On an AMD EPYC of acrl's
  2-core machine (its model not recorded) MKL runs float32 products at about 100 GFLOP/s per thread
  and oneDNN at about 220, with the same IEEE float32 arithmetic (`benchmarks/update_roofline.py`).
  The gain depends on the CPU: on an EPYC of AMD family 25 both run at about 90-100 GFLOP/s, so
  there only the largest products take oneDNN (`ONEDNN_MIN_MACS_BY_CPU`); a weight gradient summed
  over a long batch goes to torch.mm instead (`LONG_REDUCTION_ROWS`). Fallback: `torch.nn.functional.linear`.
- `tanh`: large float32 CPU tensors as 2 sigmoid(2x) - 1: this build of torch vectorises
  sigmoid on the CPU but not tanh. Fallback: `torch.tanh`.
- `lstm`: T steps of an `nn.LSTMCell` in one call of `torch.lstm`, the undocumented op behind
  `nn.LSTM.forward`, which on the CPU runs forward and backward as oneDNN's fused LSTM: 2.5x faster
  than T calls of the cell for PPO's 32 x 8 sequences of 256 cells, forward and backward, one thread.
  Fallback: the cell step by step. No second derivatives on the fused path.
- `add_summary`: a ready-made TensorBoard `Summary` (acrl's GIF videos) written through the
  `SummaryWriter`'s undocumented `file_writer`. Fallback: the same event written by
  tensorboard's own `EventFileWriter` into a second event file of the run directory (TensorBoard
  reads every event file of a directory).

The `linear` and `tanh` paths give torch's values to float32 round-off, the textbook gradients, and second
derivatives (`create_graph=True`: each backward is built from the same differentiable
functions). They step aside, to the public op, whenever they could not be traced: under
`torch.compile` (`torch.compiler.is_compiling()`) and under the `torch.func` transforms
(`grad`, `vmap`, `jacrev`, ...), which custom autograd Functions without `setup_context` and
vmap rules do not support. Telling whether such a transform is active takes one more private
call (`torch._C._are_functorch_transforms_active`); a torch without it gets the public ops only.

Tested with torch 2.13 (pyproject.toml pins that range).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F


def cpu_generation(cpuinfo: Path = Path("/proc/cpuinfo")) -> tuple[str, int] | None:
    """(vendor_id, cpu family) of the machine's first CPU as Linux's /proc/cpuinfo gives them, e.g.
    ("AuthenticAMD", 25) for Zen 3 and Zen 4 alike; None where it cannot be read (another OS)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return None
    vendor = re.search(r"^vendor_id\s*:\s*(\S+)", text, re.MULTILINE)
    family = re.search(r"^cpu family\s*:\s*(\d+)", text, re.MULTILINE)
    return (vendor.group(1), int(family.group(1))) if vendor and family else None


ONEDNN_MIN_MACS_BY_CPU = {("AuthenticAMD", 25): 1 << 25}
"""The CPUs measured to need a larger `ONEDNN_MIN_MACS`. AMD family 25 (Zen 3 and Zen 4; measured on an EPYC of
that family whose model was not recorded): oneDNN's products beat MKL's only from about 32M
multiply-adds. All products through oneDNN against none (one thread, 2026-12-04): BCQ's update, with
its 100 x 750 x 750 (56M), 1.18x faster; TD3's 100 x 400 x 300 (12M), SAC's 256 x 256 x 256 (17M) and
DQN's 64 x 256 x 256 (4M) 1.12-1.19x slower. This threshold against 2M, alternating in one process:
DQN's CartPole update 1.40x faster, TD3's 1.07x, SAC's 1.08x, BCQ's 0.96x."""

ONEDNN_MIN_MACS = ONEDNN_MIN_MACS_BY_CPU.get(cpu_generation(), 1 << 21)
"""A product with fewer multiply-adds (rows x in x out; its two gradient products have as many)
uses torch's own linear. 2M (the default): about where oneDNN's fixed ~12 us per call is repaid,
e.g. 100 x 17 x 750, on the EPYC whose `benchmarks/update_roofline.py` gave 220 GFLOP/s; larger on the CPUs of
`ONEDNN_MIN_MACS_BY_CPU`."""

LONG_REDUCTION_ROWS = 1024
"""A layer's weight gradient over at least this many rows (a batch of B: the product sums over them) is computed
by torch.mm, not oneDNN, which reads both operands transposed. On an AMD EPYC of family 25, model 1 (Zen 3: AVX2,
no AVX-512; one thread, idle, 2026-12-07), grad^T x at 7,680 rows, 256 -> 256 (CQL's critics on their sampled
actions): oneDNN 59 GFLOP/s, torch.mm 82; at 2,560 rows 59 and 81; CQL's whole update 4.55 against 4.13
updates/s (median of 3, alternating). Shorter batches keep `linear`'s choice (BCQ's 100 rows: 66 and 70, and
oneDNN's gain on other CPUs was measured there)."""

SIGMOID_TANH_MIN_ELEMENTS = 8192
"""`tanh` computes float32 CPU inputs with at least this many elements through the sigmoid:
torch's own CPU tanh is not vectorised in this build (38 us on 256 x 64 against 4.6 us for
sigmoid, one thread), so from about here the three ops of 2 sigmoid(2x) - 1 are faster
(13 us); below it, one call of torch.tanh is."""

ONEDNN_AVAILABLE = torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")
"""This torch has oneDNN's linear op (it does not say whether the fast paths are on)."""

_transforms_active = getattr(torch._C, "_are_functorch_transforms_active", None)
_enabled = os.environ.get("ACRL_PRIVATE_APIS", "1") != "0" and _transforms_active is not None


def set_private_apis(enabled: bool) -> None:
    """Turn the four private-API paths on or off for this process (the default comes from
    `ACRL_PRIVATE_APIS`; "0" is off). On a torch without `torch._C._are_functorch_transforms_active`
    they stay off. Worker processes started with "fork" inherit the setting, "spawn" ones read
    the environment variable again."""
    global _enabled
    _enabled = bool(enabled) and _transforms_active is not None


def private_apis_enabled() -> bool:
    """Whether `linear`, `tanh`, `lstm` and `add_summary` may take their private paths."""
    return _enabled


def _traceable_only() -> bool:
    """Under torch.compile or a torch.func transform: only public ops will do."""
    return torch.compiler.is_compiling() or _transforms_active()


def _onednn_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """x @ weight.T (+ bias) by oneDNN, no autograd: x (M, K), weight (N, K), any strides -> (M, N)."""
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


class _OneDNNLinear(torch.autograd.Function):
    """y = x W^T + b and its gradients dL/dx = g W, dL/dW = g^T x, dL/db = g summed over rows (only
    those autograd asks for). The gradient products call `linear` again, so with
    `create_graph=True` they are recorded too (second derivatives, e.g. a gradient penalty)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        return _onednn_linear(x, weight, bias)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, weight = ctx.saved_tensors
        need_x, need_weight, need_bias = ctx.needs_input_grad
        return (
            linear(grad, weight.t()) if need_x else None,
            _weight_gradient(grad, x) if need_weight else None,
            grad.sum(0) if need_bias else None,
        )


def _weight_gradient(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """dL/dW = grad^T x, (N, K) from grad (B, N) and x (B, K): the product sums over the batch. From
    `LONG_REDUCTION_ROWS` rows torch.mm (MKL) computes it, faster there than oneDNN; below, `linear` (oneDNN from
    `ONEDNN_MIN_MACS`). Both are differentiable (second derivatives)."""
    if len(x) >= LONG_REDUCTION_ROWS:
        return torch.mm(grad.t(), x)
    return linear(grad.t(), x.t())


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """`torch.nn.functional.linear(x, weight, bias)`: x (B, K), weight (N, K), bias (N,) -> (B, N).

    2-D float32 CPU inputs with B * K * N >= `ONEDNN_MIN_MACS` go through oneDNN (forward and
    both gradient products, the weight's by torch.mm from `LONG_REDUCTION_ROWS` rows) when the private paths
    are on; everything else (other ranks, dtypes,
    devices, small products, CPU autocast, compilation, torch.func transforms) is `F.linear`. Results agree
    with F.linear's to float32 round-off (the sums run in another order); each path is
    deterministic for a given thread count.
    """
    # cheapest test first: small layers (acting, PPO's and A3C's nets) leave at once
    if (
        not (
            x.dim() == 2
            and x.shape[0] * weight.numel() >= ONEDNN_MIN_MACS
            and _enabled
            and ONEDNN_AVAILABLE
            and x.device.type == "cpu"
            and x.dtype == weight.dtype == torch.float32
            and not torch.is_autocast_enabled("cpu")  # under bf16 autocast F.linear computes in bfloat16
        )
        or _traceable_only()
    ):
        return F.linear(x, weight, bias)
    if torch.is_grad_enabled() and (
        x.requires_grad or weight.requires_grad or (bias is not None and bias.requires_grad)
    ):
        return _OneDNNLinear.apply(x, weight, bias)
    return _onednn_linear(x, weight, bias)


class _SigmoidTanh(torch.autograd.Function):
    """y = tanh(x) = 2 sigmoid(2x) - 1, and dL/dx = dL/dy (1 - y^2) (torch's tanh_backward, itself
    differentiable, and y is this node's output: second derivatives are recorded too)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = torch.sigmoid(x * 2.0).mul_(2.0).sub_(1.0)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return torch.ops.aten.tanh_backward(grad, y)


def tanh(x: torch.Tensor) -> torch.Tensor:
    """`torch.tanh(x)`, any shape; float32 CPU tensors of at least `SIGMOID_TANH_MIN_ELEMENTS`
    elements as 2 sigmoid(2x) - 1 when the private paths are on (|difference| <= 2.4e-7,
    absolute), except under compilation and torch.func transforms."""
    if (
        x.numel() < SIGMOID_TANH_MIN_ELEMENTS
        or not _enabled
        or x.device.type != "cpu"
        or x.dtype != torch.float32
        or _traceable_only()
    ):
        return torch.tanh(x)
    return _SigmoidTanh.apply(x)


def lstm(
    cell: torch.nn.LSTMCell, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """T steps of `cell` (with its biases) from `state` with no reset between them: x (T, N, input_size)
    float32, state (h, c) each (1, N, hidden_size) -> (outputs h_1..h_T (T, N, hidden_size), (h_T, c_T)
    each (1, N, hidden_size)).

    The private path is one `torch.lstm` call with the cell's own parameters (so their gradients reach
    them, views of a flat tensor included): oneDNN's fused LSTM on the CPU, the same equations to float32
    round-off (|difference| about 1e-7 over 32 steps of 256 cells). The fallback, and the path under
    compilation and torch.func transforms, is the cell once per step."""
    if _enabled and not _traceable_only():
        weights = [cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh]
        # torch.lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
        out, h, c = torch.lstm(x, state, weights, True, 1, 0.0, torch.is_grad_enabled(), False, False)
        return out, (h, c)
    h, c = state[0][0], state[1][0]
    outputs = []
    for features in x:
        h, c = cell(features, (h, c))
        outputs.append(h)
    return torch.stack(outputs), (h.unsqueeze(0), c.unsqueeze(0))


def add_summary(writer: Any, summary: Any, step: int) -> None:
    """Write a TensorBoard `Summary` protobuf at `step` for `writer`, a
    `torch.utils.tensorboard.SummaryWriter`.

    Private path: `writer.file_writer.add_summary` (the writer's own event file). Fallback:
    tensorboard's `EventFileWriter` writes the same `Event` (summary, step, wall time) to a new
    event file in `writer.log_dir`, closed at once (videos are logged rarely).
    """
    file_writer = getattr(writer, "file_writer", None)
    if _enabled and file_writer is not None and hasattr(file_writer, "add_summary"):
        file_writer.add_summary(summary, step)
        return
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    events = EventFileWriter(writer.log_dir)
    events.add_event(Event(summary=summary, step=int(step), wall_time=time.time()))
    events.close()
