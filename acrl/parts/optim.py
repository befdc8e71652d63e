"""Optimizers with shared state for A3C, target-network updates and gradient-norm clipping.

What is here:

- `SharedAdam` and `SharedRMSprop`: torch's Adam and RMSprop whose whole state (moments *and*
  the step count) is created in the constructor and placed in shared memory, so that every A3C
  worker process updates the same statistics (Mnih et al. 2016); both on one base that creates,
  shares and reloads the state.
- `polyak_update` and `hard_update`: soft and exact in-place updates of target networks
  (Lillicrap et al. 2016; Fujimoto et al. 2019).
- `clip_grad_norm`: global gradient-norm clipping with fewer small ops than torch's (Pascanu et al. 2013).
- `anneal_learning_rate`: linear learning-rate decay to 0 (PPO and A3C).

Why the shared optimizers exist. torch's optimizers create their state lazily, at the first
`step()`. In A3C the workers step the optimizer, so each worker would create its own private
state in its own process: the parent's optimizer stays empty, every worker runs Adam with its
own moments and its own bias correction, and a checkpoint saves nothing. Creating the state
before the workers start and moving it to shared memory fixes all of that (docs/correctness.md item 7).

How the step count stays shared. torch keeps `state["step"]` as a 0-dim float32 CPU tensor and
increments it in place on the two code paths these classes choose: SharedRMSprop's single-tensor
path (`foreach=False`, `step_t += 1`) and SharedAdam's fused path (`fused=True`, one
`torch._foreach_add_` over the step tensors, then one kernel for the whole update, 2x faster than
the single-tensor path for A3C's 1.2M-parameter Atari network), so the shared tensor is the one
that counts. `tests/unit/test_optim.py` checks this across processes for both "fork" and "spawn";
a torch version that replaced the tensor instead would fail those tests.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import nn

from acrl.core.errors import InputError

__all__ = [
    "SharedAdam",
    "SharedRMSprop",
    "anneal_learning_rate",
    "clip_grad_norm",
    "flatten_parameters",
    "hard_update",
    "polyak_update",
]


def _check_number(
    name: str, value: Any, low: float, high: float = math.inf, *, low_open: bool = False, high_open: bool = True
) -> None:
    """Raise InputError unless `value` is a real number in the given interval."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise InputError(f"{name} must be a number, got {value!r}")
    above_low = value > low if low_open else value >= low
    below_high = value < high if high_open else value <= high
    if not (above_low and below_high):
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        raise InputError(f"{name} must be in {left}{low}, {high}{right}, got {value!r}")


# --------------------------------------------------------------------------------------------
# Shared-memory optimizers (A3C)
# --------------------------------------------------------------------------------------------


def _share_state(optimizer: torch.optim.Optimizer) -> None:
    """Move every state tensor of `optimizer` to shared memory, in place (no-op if already)."""
    for state in optimizer.state.values():
        for value in state.values():
            if torch.is_tensor(value):
                value.share_memory_()


def _load_state_in_place(
    optimizer: torch.optim.Optimizer, load_fn: Callable[[dict[str, Any]], None], state_dict: dict[str, Any]
) -> None:
    """Load `state_dict` with torch's `load_state_dict` (`load_fn`), then put the loaded values
    into the optimizer's existing shared tensors.

    torch's loader may reuse the caller's tensors as the new state (so two optimizers loaded
    from one dict would silently share state) and never puts them in shared memory. Copying
    into the tensors that were already shared avoids both, and keeps their identity, so a
    worker process that already holds this optimizer sees the loaded values too. The loader
    also takes every group option from `state_dict`; the options that choose torch's code path
    are set back to this optimizer's own, whose in-place step increment the sharing needs.
    """
    before = {param: dict(state) for param, state in optimizer.state.items()}
    paths = ("foreach", "fused", "capturable", "differentiable")
    own = [{option: group[option] for option in paths if option in group} for group in optimizer.param_groups]
    load_fn(state_dict)
    for group, options in zip(optimizer.param_groups, own, strict=True):
        group.update(options)
    for param, state in optimizer.state.items():
        for key, value in state.items():
            if not torch.is_tensor(value):
                continue
            old = before.get(param, {}).get(key)
            if old is not None and old.shape == value.shape:
                old.copy_(value)
                state[key] = old
            else:
                state[key] = value.detach().clone()


class _SharedOptimizer(torch.optim.Optimizer):
    """What `SharedAdam` and `SharedRMSprop` share: their whole state, step count included, created
    eagerly (`_init_state`) and kept in shared memory, across `load_state_dict` too.

    A subclass defines `_state_keys(group)`, the per-parameter state tensors (besides "step") its
    update creates for a parameter group, and calls `_share_initial_state()` at the end of its
    constructor.
    """

    def _share_initial_state(self) -> None:
        self._init_state()
        self.share_memory()

    def _init_state(self) -> None:
        """Create the state torch would create lazily at the first step (missing keys only): "step",
        a 0-dim float32 CPU tensor, and zeros like the parameter for each of `_state_keys`."""
        for group in self.param_groups:
            keys = self._state_keys(group)
            for p in group["params"]:
                state = self.state[p]
                if "step" not in state:
                    state["step"] = torch.zeros((), dtype=torch.float32)
                for key in keys:
                    if key not in state:
                        state[key] = torch.zeros_like(p, memory_format=torch.preserve_format)

    def share_memory(self) -> _SharedOptimizer:
        """Move all state tensors to shared memory in place; the constructor already calls it.

        Returns self. Tensors on a GPU are left where they are (CUDA tensors are shared between
        processes by torch without this call).
        """
        _share_state(self)
        return self

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a checkpoint made by `state_dict()` (of this class or of its torch optimizer).

        The loaded values are copied into this optimizer's existing shared tensors, so the
        state stays in shared memory and does not alias the tensors of `state_dict`.
        Hyperparameters (`lr`, `betas`, ...) are taken from `state_dict` as torch does.

        Raises:
            ValueError: the parameter groups do not match (from torch).
        """
        _load_state_in_place(self, super().load_state_dict, state_dict)
        self._share_initial_state()


class SharedAdam(_SharedOptimizer, torch.optim.Adam):
    """Adam whose state, step count included, lives in shared memory (for A3C workers).

    The constructor creates, for every parameter `p` (any shape, float32 as acrl uses):
    `state["step"]`, a 0-dim float32 CPU tensor holding the number of updates taken (exact up to
    2**24; past that the bias correction is 1 to float precision anyway); `state["exp_avg"]`
    and `state["exp_avg_sq"]`, the first and second moment estimates m and v, same shape and
    dtype as `p`; and `state["max_exp_avg_sq"]` when `amsgrad=True`. It then calls
    `share_memory()`, so **the state is shared as soon as the optimizer exists**: create it in
    the parent, after `model.share_memory()`, and pass it to `torch.multiprocessing.Process`
    args (works with the "fork" and "spawn" start methods).

    The update is torch's fused Adam (one kernel over all parameters; Kingma & Ba 2015, "Adam: A Method
    for Stochastic Optimization", Algorithm 1, with bias correction):
    t <- t + 1;  g <- grad + weight_decay * p;
    m <- beta1 m + (1 - beta1) g;  v <- beta2 v + (1 - beta2) g^2;
    p <- p - lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps).

    A3C applies these updates from several processes without a lock (Mnih et al. 2016,
    "Asynchronous Methods for Deep Reinforcement Learning", lock-free in the style of Hogwild!,
    Recht et al. 2011), so concurrent updates may interleave and an increment of the shared
    step may occasionally be lost; that is the algorithm as published. Hold a
    `multiprocessing.Lock` around `step()` to serialize the updates. Hyperparameters in
    `param_groups` (e.g. `lr`) are per process, not shared: a worker that anneals its learning
    rate sets its own copy.

    Args:
        params: the parameters (usually `shared_model.parameters()`) or parameter groups.
        lr: learning rate, > 0.
        betas: (beta1, beta2), each in [0, 1).
        eps: term added to the denominator, >= 0.
        weight_decay: L2 penalty added to the gradient (torch's coupled form), >= 0.
        amsgrad: use the AMSGrad maximum of v (Reddi et al. 2018).

    Raises:
        InputError: a hyperparameter is out of range.
        ValueError: `params` is empty (from torch).
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
    ) -> None:
        _check_number("lr", lr, 0.0, low_open=True)
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise InputError(f"betas must be a pair (beta1, beta2), got {betas!r}")
        _check_number("betas[0]", betas[0], 0.0, 1.0)
        _check_number("betas[1]", betas[1], 0.0, 1.0)
        _check_number("eps", eps, 0.0)
        _check_number("weight_decay", weight_decay, 0.0)
        super().__init__(
            params,
            lr=float(lr),
            betas=(float(betas[0]), float(betas[1])),
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            foreach=False,
            fused=True,
            capturable=False,
        )
        self._share_initial_state()

    def _state_keys(self, group: dict[str, Any]) -> list[str]:
        return ["exp_avg", "exp_avg_sq", *(["max_exp_avg_sq"] if group["amsgrad"] else [])]


class SharedRMSprop(_SharedOptimizer, torch.optim.RMSprop):
    """RMSprop whose statistics, step count included, live in shared memory ("Shared RMSProp").

    Mnih et al. 2016, "Asynchronous Methods for Deep Reinforcement Learning", Sec. 4
    (Optimization) and the supplementary "Optimization Details": the moving average of squared
    gradients g is shared by all actor-learners, which the paper found more robust than
    per-thread statistics. The paper used alpha = 0.99 and eps = 0.1.

    The constructor creates, for every parameter `p`: `state["step"]` (0-dim float32 CPU tensor,
    updates taken), `state["square_avg"]` (g, same shape and dtype as `p`), plus
    `state["momentum_buffer"]` when `momentum > 0` and `state["grad_avg"]` when `centered`; then
    calls `share_memory()`. Pass the optimizer in `torch.multiprocessing.Process` args.

    The update is torch's single-tensor RMSprop: g <- alpha g + (1 - alpha) d^2 with
    d = grad + weight_decay * p, then p <- p - lr * d / (sqrt(g) + eps). With `eps_inside` it is
    the paper's (Supplementary Eq. S3, and TensorFlow's RMSPropOptimizer that the authors used):
    p <- p - lr * d / sqrt(g + eps). The two differ most where eps is large: with the paper's
    eps = 0.1, sqrt(g + 0.1) >= 0.32 bounds the step by about 3 lr |d|, where torch's form
    divides by sqrt(g) + 0.1. The same remarks on lock-free updates and per-process `lr` as for
    `SharedAdam` apply.

    Args:
        params: the parameters or parameter groups.
        lr: learning rate, > 0.
        alpha: decay of the squared-gradient average, in [0, 1).
        eps: term added to the denominator, >= 0.
        weight_decay: L2 penalty added to the gradient, >= 0.
        momentum: momentum factor, >= 0.
        centered: divide by an estimate of the gradient's variance instead of its second moment.
        eps_inside: eps inside the square root (the paper's form; without momentum, centering or
            weight decay, which the paper does not use).

    Raises:
        InputError: a hyperparameter is out of range, or `eps_inside` with momentum, centered or
            weight_decay.
        ValueError: `params` is empty (from torch).
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum: float = 0.0,
        centered: bool = False,
        eps_inside: bool = False,
    ) -> None:
        _check_number("lr", lr, 0.0, low_open=True)
        _check_number("alpha", alpha, 0.0, 1.0)
        _check_number("eps", eps, 0.0)
        _check_number("weight_decay", weight_decay, 0.0)
        _check_number("momentum", momentum, 0.0)
        if eps_inside and (momentum or centered or weight_decay):
            raise InputError(
                "SharedRMSprop's eps_inside is the paper's plain RMSProp (Mnih et al. 2016, Eq. S3): "
                "use it with momentum=0, centered=False and weight_decay=0."
            )
        self.eps_inside = eps_inside
        super().__init__(
            params,
            lr=float(lr),
            alpha=alpha,
            eps=eps,
            weight_decay=weight_decay,
            momentum=momentum,
            centered=centered,
            foreach=False,
            capturable=False,
        )
        self._share_initial_state()

    def __getstate__(self) -> dict[str, Any]:
        """torch's pickled state plus `eps_inside`, so that a worker started by "spawn" steps as the parent's."""
        return {**super().__getstate__(), "eps_inside": self.eps_inside}

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """One update of every parameter with a gradient: torch's RMSprop, or with `eps_inside`
        g <- alpha g + (1 - alpha) d^2, p <- p - lr d / sqrt(g + eps) (Eq. S3). Returns the closure's loss."""
        if not self.eps_inside:
            return super().step(closure)
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                state["step"] += 1
                square_avg = state["square_avg"]
                square_avg.mul_(group["alpha"]).addcmul_(p.grad, p.grad, value=1 - group["alpha"])
                p.addcdiv_(p.grad, (square_avg + group["eps"]).sqrt_(), value=-group["lr"])
        return loss

    def _state_keys(self, group: dict[str, Any]) -> list[str]:
        return [
            "square_avg",
            *(["momentum_buffer"] if group["momentum"] > 0 else []),
            *(["grad_avg"] if group["centered"] else []),
        ]


# --------------------------------------------------------------------------------------------
# One flat parameter tensor (A3C)
# --------------------------------------------------------------------------------------------


def flatten_parameters(module: nn.Module, gradients: bool = False) -> torch.Tensor:
    """Gather the parameters of `module` into one contiguous tensor; each becomes a view of it.

    After the call, `module`'s parameters (the same objects, shapes, values and state-dict keys)
    are views into the returned tensor (P,), P = the total number of elements, laid out in
    `module.parameters()` order. One in-place operation on it (an optimizer step, a `copy_`)
    then updates every parameter: A3C's shared optimizer steps one tensor instead of one per
    layer, and a worker syncs its local copy with one copy (`acrl.algos.a3c`). Put it in shared
    memory with `module.share_memory()` or `share_memory_()` afterwards (both move the one
    storage, and every view follows).

    With `gradients=True` each parameter's `.grad` is also a view, into the returned tensor's
    `.grad` (zeros (P,)): backward accumulates into that one buffer. Zero it in place
    (`flat.grad.zero_()`); `zero_grad(set_to_none=True)` would drop the views.

    Raises:
        ValueError: the module has no parameters, or they differ in dtype or device.
    """
    params = list(module.parameters())
    if not params or len({(p.dtype, p.device) for p in params}) != 1:
        raise ValueError(
            f"flatten_parameters needs parameters of one dtype and device, got "
            f"{sorted({f'{p.dtype} on {p.device}' for p in params}) or 'none'}."
        )
    flat = torch.cat([p.detach().reshape(-1) for p in params])
    if gradients:
        flat.grad = torch.zeros_like(flat)
    offset = 0
    for p in params:
        n = p.numel()
        p.data = flat[offset : offset + n].view_as(p)
        if gradients:
            p.grad = flat.grad[offset : offset + n].view_as(p)
        offset += n
    return flat


# --------------------------------------------------------------------------------------------
# Target networks
# --------------------------------------------------------------------------------------------


def _paired_tensors(target: nn.Module, source: nn.Module, kind: str) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Return the parameters (kind="parameters") or buffers of both modules, checked to match."""
    target_tensors = list(getattr(target, kind)())
    source_tensors = list(getattr(source, kind)())
    if len(target_tensors) != len(source_tensors):
        raise InputError(
            f"target has {len(target_tensors)} {kind} but source has "
            f"{len(source_tensors)}; they must be the same architecture"
        )
    for i, (t, s) in enumerate(zip(target_tensors, source_tensors, strict=True)):
        if t.shape != s.shape:
            raise InputError(f"{kind} #{i} differ in shape: target {tuple(t.shape)}, source {tuple(s.shape)}")
    return target_tensors, source_tensors


@torch.no_grad()
def polyak_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """Soft target update, in place: theta_target <- tau * theta_source + (1 - tau) * theta_target.

    Lillicrap et al. 2016, "Continuous control with deep reinforcement learning" (DDPG),
    Sec. 3 and Algorithm 1, with tau << 1 (0.001 there); Fujimoto et al. 2019, "Off-Policy Deep
    Reinforcement Learning without Exploration" (BCQ), Algorithm 1, tau = 0.005.

    Every parameter of `target` is moved toward the parameter of `source` at the same position
    (`torch._foreach_lerp_`, one fused call). Buffers (e.g. BatchNorm running statistics) are
    copied exactly. Runs under `torch.no_grad()`: no autograd graph is built and the target
    parameters keep their tensors and `requires_grad` flags. Parameters may have any shape and
    floating dtype, matching between the two modules; tau is dimensionless.

    Args:
        target: the target network, updated in place.
        source: the online network, read only.
        tau: interpolation weight in [0, 1]; 0 leaves target unchanged, 1 copies source.

    Raises:
        InputError: tau outside [0, 1], or the modules' parameters/buffers differ in number
            or shape.
    """
    _check_number("tau", tau, 0.0, 1.0, high_open=False)
    target_params, source_params = _paired_tensors(target, source, "parameters")
    if target_params:
        torch._foreach_lerp_(target_params, source_params, float(tau))
    for t, s in zip(*_paired_tensors(target, source, "buffers"), strict=True):
        t.copy_(s)


@torch.no_grad()
def hard_update(target: nn.Module, source: nn.Module) -> None:
    """Copy every parameter and buffer of `source` into `target`, exactly and in place.

    Used to start a target network as an exact copy of its online network (docs/correctness.md item 9;
    Lillicrap et al. 2016, Algorithm 1: "Initialize target network Q' and mu' with weights
    theta_Q' <- theta_Q, theta_mu' <- theta_mu"). Runs under `torch.no_grad()`; `target`
    keeps its tensors and `requires_grad` flags. Shapes and dtypes: any, matching.

    Raises:
        InputError: the modules' parameters/buffers differ in number or shape.
    """
    for kind in ("parameters", "buffers"):
        for t, s in zip(*_paired_tensors(target, source, kind), strict=True):
            t.copy_(s)


def clip_grad_norm(params: list[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Scale gradients in place so that their global L2 norm is at most `max_norm`.

    The arithmetic of `torch.nn.utils.clip_grad_norm_` (global norm of all gradients, scaled by
    min(1, max_norm / (norm + 1e-6)); Pascanu et al. 2013) without its per-call grouping of the
    tensors by device and dtype, which costs more than the arithmetic on PPO's small networks.

    Args:
        params: float32 parameters on one device; those without a gradient are skipped.
        max_norm: the largest global norm allowed, > 0.
    Returns:
        The global norm before clipping, a 0-d float32 tensor (0 when no parameter has a gradient).
    """
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return torch.zeros(())
    norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    torch._foreach_mul_(grads, (max_norm / (norm + 1e-6)).clamp(max=1.0))
    return norm


def anneal_learning_rate(optimizer: torch.optim.Optimizer, initial: float, steps_done: int, total_steps: int) -> None:
    """Linear learning-rate decay to 0: every group's lr = initial * max(1 - steps_done / total_steps, 0).

    The annealing of PPO's Atari experiments (Schulman et al. 2017, Table 5: "alpha linearly
    annealed from 1 to 0") and of A3C (Mnih et al. 2016, Sec. 8). steps_done counts environment
    steps before the update; total_steps > 0.
    """
    fraction_left = max(1.0 - steps_done / total_steps, 0.0)
    for group in optimizer.param_groups:
        group["lr"] = initial * fraction_left
