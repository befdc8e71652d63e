"""Networks: MLPs with orthogonal init, stochastic actors, a value net, deterministic actors, twin Q.

All modules take float32 observations of shape (B, obs_dim) and work in the policy's action
units: [-1, 1] per bounded dimension for continuous actions (`acrl.core.envs.ActionAdapter` maps
them to the environment's Box), action indices for Discrete spaces.

Every fully connected layer is a `Linear`: `nn.Linear` with the same parameters and state-dict
keys, whose large float32 CPU matrix products go through oneDNN instead of the BLAS (MKL) that
`torch.mm` calls. On the AMD EPYC (Zen 5) of acrl's 2-core machine MKL runs float32 products at
about 100 GFLOP/s per thread and oneDNN at about 220, with the same IEEE float32 arithmetic
(`benchmarks/update_roofline.py`); below `ONEDNN_MIN_MACS` oneDNN's fixed ~12 us per call loses,
so small products (PPO's and A3C's 64-wide nets, batch-1 acting) stay on `torch.nn.functional.linear`.
Likewise every tanh is a `Tanh`: this build of torch vectorises sigmoid on the CPU but not tanh,
so large float32 batches go through the sigmoid.

Acting (once per environment step) runs a policy's layers as plain functions (`layer_chain`,
`forward_chain`) and samples without `torch.distributions` objects: at batch 1 their Python
overhead costs more than the arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn
from torch.distributions import Categorical, Normal

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)

ONEDNN_MIN_MACS = 1 << 21
"""A layer whose product has fewer multiply-adds (rows x in x out; its two gradient products have
as many) uses torch's own linear: about where oneDNN's fixed per-call cost is repaid, e.g.
100 x 17 x 750 (`benchmarks/update_roofline.py`)."""

_ONEDNN = torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def _onednn_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """x @ weight.T (+ bias) by oneDNN, no autograd: x (M, K), weight (N, K), any strides -> (M, N)."""
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


class _OneDNNLinear(torch.autograd.Function):
    """y = x W^T + b and its gradients, each product by oneDNN: dL/dx = g W, dL/dW = g^T x,
    dL/db = g summed over rows (only those autograd asks for)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        return _onednn_linear(x, weight, bias)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, weight = ctx.saved_tensors
        need_x, need_weight, need_bias = ctx.needs_input_grad
        return (_onednn_linear(grad, weight.t()) if need_x else None,
                _onednn_linear(grad.t(), x.t()) if need_weight else None,
                grad.sum(0) if need_bias else None)


class Linear(nn.Linear):
    """`nn.Linear` (same parameters, initialisation and state-dict keys) whose large float32 CPU
    products, forward and backward, run through oneDNN (see the module docstring).

    input (B, in_features) float32 -> (B, out_features). oneDNN is used for 2-D float32 CPU
    inputs with B * in_features * out_features >= `ONEDNN_MIN_MACS`; everything else (other
    ranks, dtypes, devices, small layers) is `torch.nn.functional.linear`. Results agree with
    torch's to float32 round-off (the sums run in another order); each path is deterministic
    for a given thread count.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight, bias = self.weight, self.bias
        # cheapest test first: small layers (acting, PPO's and A3C's nets) leave at once
        if not (x.dim() == 2 and x.shape[0] * weight.numel() >= ONEDNN_MIN_MACS and _ONEDNN
                and x.device.type == "cpu" and x.dtype == weight.dtype == torch.float32):
            return torch.nn.functional.linear(x, weight, bias)
        if torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad):
            return _OneDNNLinear.apply(x, weight, bias)
        return _onednn_linear(x, weight, bias)


SIGMOID_TANH_MIN_ELEMENTS = 8192
"""`Tanh` computes float32 CPU inputs with at least this many elements through the sigmoid:
torch's own CPU tanh is not vectorised in this build (38 us on 256 x 64 against 4.6 us for
sigmoid, one thread), so from about here the three ops of 2 sigmoid(2x) - 1 are faster
(13 us); below it, one call of torch.tanh is."""


class _SigmoidTanh(torch.autograd.Function):
    """y = tanh(x) = 2 sigmoid(2x) - 1, and dL/dx = dL/dy (1 - y^2) (torch's tanh_backward)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        y = torch.sigmoid(x * 2.0).mul_(2.0).sub_(1.0)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return torch.ops.aten.tanh_backward(grad, y)


class Tanh(nn.Tanh):
    """`nn.Tanh` whose large float32 CPU inputs go through the sigmoid, same values to float32
    round-off (|difference| <= 2.4e-7, absolute) and the textbook gradient; see
    `SIGMOID_TANH_MIN_ELEMENTS`. Any shape; everything else is `torch.tanh`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.numel() < SIGMOID_TANH_MIN_ELEMENTS or x.device.type != "cpu" or x.dtype != torch.float32:
            return torch.tanh(x)
        return _SigmoidTanh.apply(x)


ACTIVATIONS = {"tanh": Tanh, "relu": nn.ReLU}
_ACTIVATION_FUNCTIONS = {nn.Tanh: torch.tanh, Tanh: torch.tanh, nn.ReLU: torch.relu}

LayerChain = list[tuple[torch.Tensor, torch.Tensor | None, Callable[[torch.Tensor], torch.Tensor] | None]]
"""(weight, bias, activation function after the layer or None) of each Linear layer of some nets, in order."""


def layer_chain(*nets: nn.Module) -> LayerChain:
    """The `LayerChain` of `nets` applied one after the other, for `forward_chain`.

    It holds the parameter tensors themselves, so it sees every in-place change (optimizer
    steps, `load_state_dict`, `flatten_parameters`, `Module.to`, which keeps the parameter
    objects), but not a parameter replaced by another object (`load_state_dict(assign=True)`).

    Args:
        nets: Sequentials (nested ones too) of Linear, Tanh and ReLU modules, as `mlp` builds them.
    Raises:
        TypeError: a layer of another kind, or an activation that does not follow a Linear.
    """
    chain: list[list] = []
    for net in nets:
        for layer in net.modules():
            if isinstance(layer, nn.Linear):
                chain.append([layer.weight, layer.bias, None])
            elif type(layer) in _ACTIVATION_FUNCTIONS and chain and chain[-1][2] is None:
                chain[-1][2] = _ACTIVATION_FUNCTIONS[type(layer)]
            elif type(layer) is not nn.Sequential:
                raise TypeError(f"layer_chain handles Linear, Tanh and ReLU layers in Sequentials, got {layer}.")
    return [(weight, bias, activation) for weight, bias, activation in chain]


def forward_chain(chain: LayerChain, x: torch.Tensor) -> torch.Tensor:
    """What calling the chain's nets on x (B, in_features) float32 computes, (B, out_features),
    with one functional op per layer.

    For acting, once per environment step: `nn.Module.__call__` costs about 1.5 us per module
    at batch 1, so a 4-64-64-2 MLP takes about 9 us this way against 18 us as a module call
    (one torch thread).
    """
    for weight, bias, activation in chain:
        x = torch.nn.functional.linear(x, weight, bias)
        if activation is not None:
            x = activation(x)
    return x


def mlp(in_dim: int, hidden_sizes: tuple[int, ...], out_dim: int, activation: str = "tanh",
        output_gain: float = 1.0) -> nn.Sequential:
    """Fully connected net in_dim -> hidden_sizes -> out_dim with orthogonal initialisation.

    Hidden layers get orthogonal weights with gain sqrt(2) and zero biases, the output layer
    gain `output_gain` (0.01 for policy heads, 1 for values): the initialisation of
    Engstrom et al. 2020, "Implementation Matters in Deep Policy Gradients", Sec. 3.
    Raises:
        KeyError: an activation other than "tanh" or "relu".
    """
    layers: list[nn.Module] = []
    sizes = (in_dim, *hidden_sizes)
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [_init(Linear(a, b), math.sqrt(2)), ACTIVATIONS[activation]()]
    layers.append(_init(Linear(sizes[-1], out_dim), output_gain))
    return nn.Sequential(*layers)


def _init(layer: nn.Linear, gain: float) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


class CategoricalActor(nn.Module):
    """Softmax policy over `n_actions` discrete actions (Williams 1992; Mnih et al. 2016).

    The logits are unrestricted; `distribution` wraps them in `torch.distributions.Categorical`.
    `sample` and `log_prob_entropy`, called once per environment step and once per minibatch,
    compute the same quantities straight from `log_softmax`: on small batches the distribution
    object costs about as much as the network itself. `sample` runs the net through its
    `layer_chain` (acting needs no module hooks).
    """

    def __init__(self, obs_dim: int, n_actions: int, hidden_sizes: tuple[int, ...], activation: str = "tanh"):
        super().__init__()
        self.logits = mlp(obs_dim, hidden_sizes, n_actions, activation, output_gain=0.01)
        self.chain = layer_chain(self.logits)

    def distribution(self, obs: torch.Tensor) -> Categorical:
        """obs (B, obs_dim) float32 -> Categorical over (B,) int64 actions."""
        return Categorical(logits=self.logits(obs), validate_args=False)

    def log_prob_entropy(self, obs: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probability (B,) and entropy (B,) of actions (B,) int64 under the policy at obs."""
        log_p = torch.log_softmax(self.logits(obs), dim=-1)
        log_prob = log_p.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
        return log_prob, -(log_p.exp() * log_p).sum(-1)

    def sample(self, obs: torch.Tensor, deterministic: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """Actions (B,) int64 (argmax when deterministic) and their log-probabilities (B,).

        A sample is `gumbel_max(logits)`, an exact draw from softmax(logits).
        """
        logits = forward_chain(self.chain, obs)
        actions = logits.argmax(-1) if deterministic else gumbel_max(logits)
        return actions, torch.log_softmax(logits, dim=-1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)


def gumbel_max(logits: torch.Tensor) -> torch.Tensor:
    """One sample per row of softmax(logits): logits (B, n) float -> (B,) int64.

    argmax(logits + G) with G = -log(E), E ~ Exponential(1) i.i.d., is Gumbel(0, 1) noise: the
    Gumbel-max trick (Gumbel 1954; Maddison et al. 2014) draws exactly from the softmax, in
    three small ops, about three times faster than `torch.multinomial` at batch 1.
    """
    return (logits - torch.empty_like(logits).exponential_().log_()).argmax(-1)


class GaussianActor(nn.Module):
    """Diagonal Gaussian policy with a state-independent log-std (Schulman et al. 2017, Sec. 6.1).

    std = exp(clamp(log_std, log_std_min, log_std_max)) is positive by construction and has a
    floor, so sampling, log-probabilities and entropy stay finite at any parameter value
    (docs/correctness.md item 4). Actions are raw samples in policy units; clipping to the
    Box happens only on the copy sent to the environment.
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes: tuple[int, ...], activation: str = "tanh",
                 log_std_init: float = 0.0, log_std_min: float = -5.0, log_std_max: float = 2.0):
        super().__init__()
        self.mean = mlp(obs_dim, hidden_sizes, act_dim, activation, output_gain=0.01)
        self.chain = layer_chain(self.mean)
        self.log_std = nn.Parameter(torch.full((act_dim,), float(log_std_init)))
        self.log_std_min, self.log_std_max = log_std_min, log_std_max

    def distribution(self, obs: torch.Tensor) -> Normal:
        """obs (B, obs_dim) float32 -> Normal with batch shape (B, act_dim)."""
        mean, log_std = self._mean_log_std(obs)
        return Normal(mean, log_std.exp().expand_as(mean), validate_args=False)

    def log_prob_entropy(self, obs: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-density (B,) and entropy (B,) in nats of raw actions (B, act_dim), summed over dims."""
        mean, log_std = self._mean_log_std(obs)
        entropy = (0.5 + _LOG_SQRT_2PI + log_std).sum().expand(len(mean))
        return self._log_prob(mean, log_std, actions), entropy

    @torch.no_grad()
    def sample(self, obs: torch.Tensor, deterministic: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """Raw actions (B, act_dim) (the mean when deterministic) and their log-densities (B,), for acting.

        actions = mean + std * z with z ~ N(0, I), so log N(actions; mean, std) =
        -|z|^2 / 2 - sum(log std) - act_dim log sqrt(2 pi) comes from z directly. Without
        gradients (a sample, as `Normal.sample`; the losses use `log_prob_entropy`). The mean
        comes from the net's `layer_chain` (acting needs no module hooks).
        """
        mean, log_std = forward_chain(self.chain, obs), self.log_std.clamp(self.log_std_min, self.log_std_max)
        normalizer = log_std.sum() + _LOG_SQRT_2PI * mean.shape[-1]
        if deterministic:
            return mean, (-normalizer).expand(len(mean))
        z = torch.randn_like(mean)
        return torch.addcmul(mean, log_std.exp(), z), -0.5 * z.square().sum(-1) - normalizer

    def _mean_log_std(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.mean(obs), self.log_std.clamp(self.log_std_min, self.log_std_max)

    @staticmethod
    def _log_prob(mean: torch.Tensor, log_std: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        # Normal.log_prob summed over dims, written out: fewer small tensor operations per call.
        z = (actions - mean) / log_std.exp()
        return -0.5 * z.square().sum(-1) - (log_std.sum() + _LOG_SQRT_2PI * mean.shape[-1])


class ValueNet(nn.Module):
    """State-value function V(s): obs (B, obs_dim) float32 -> (B,) float32."""

    def __init__(self, obs_dim: int, hidden_sizes: tuple[int, ...], activation: str = "tanh"):
        super().__init__()
        self.net = mlp(obs_dim, hidden_sizes, 1, activation, output_gain=1.0)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs).squeeze(-1)


class DeterministicActor(nn.Module):
    """mu(s) = tanh(net(s)) in [-1, 1]^act_dim: the DDPG/TD3 actor (Lillicrap et al. 2016, Sec. 7).

    obs (B, obs_dim) float32 -> actions (B, act_dim) float32 in policy units.
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes: tuple[int, ...] = (400, 300)):
        super().__init__()
        self.net = mlp(obs_dim, hidden_sizes, act_dim, "relu", output_gain=1.0)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.net(obs))


class QNet(nn.Module):
    """One critic Q(s, a): the DDPG critic (Lillicrap et al. 2016, Sec. 7), ReLU MLP on [s, a].

    forward / q1: obs (B, obs_dim), actions (B, act_dim) float32 -> (B,) float32. `q1` is an
    alias so that code written for `TwinQ` (actor loss on Q1) works with either critic.
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes: tuple[int, ...] = (400, 300)):
        super().__init__()
        self.q_net = mlp(obs_dim + act_dim, hidden_sizes, 1, "relu")

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return self.q_net(torch.cat([obs, actions], dim=-1)).squeeze(-1)

    q1 = forward


class TwinQ(nn.Module):
    """Two independent critics Q1, Q2(s, a) (Fujimoto et al. 2018, TD3, Sec. 4.1).

    forward: obs (B, obs_dim), actions (B, act_dim) float32 -> (q1 (B,), q2 (B,)).
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes: tuple[int, ...] = (400, 300)):
        super().__init__()
        self.q1_net = mlp(obs_dim + act_dim, hidden_sizes, 1, "relu")
        self.q2_net = mlp(obs_dim + act_dim, hidden_sizes, 1, "relu")

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.cat([obs, actions], dim=-1)
        return self.q1_net(x).squeeze(-1), self.q2_net(x).squeeze(-1)

    def q1(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Q1 only, (B,): the critic the actor's loss uses."""
        return self.q1_net(torch.cat([obs, actions], dim=-1)).squeeze(-1)


def inplace_relu(*modules: nn.Module) -> None:
    """Switch every `nn.ReLU` inside `modules` to in-place: the same values and gradients (a ReLU
    after a Linear may overwrite the Linear's output, which its backward does not need), one
    allocation less per layer; ~10% of a BCQ update on CPU."""
    for module in modules:
        for layer in module.modules():
            if isinstance(layer, nn.ReLU):
                layer.inplace = True
