"""Networks: MLP encoders and MLPs with orthogonal init, a value net, deterministic actors, twin Q.

All modules take float32 observations of shape (B, obs_dim) and work in the policy's action
units: [-1, 1] per bounded dimension for continuous actions (`acrl.core.envs.ActionAdapter` maps
them to the environment's Box). The stochastic policies' heads are in `acrl.parts.heads`.

Every fully connected layer is a `Linear`: `nn.Linear` with the same parameters and state-dict
keys, whose large float32 CPU products go through oneDNN (`acrl.core.torch_fast.linear`); likewise
every tanh is a `Tanh`, whose large float32 batches go through the sigmoid
(`acrl.core.torch_fast.tanh`). Both fall back to the public ops when `ACRL_PRIVATE_APIS=0`, under
`torch.compile` and under `torch.func` transforms.

Acting (once per environment step) runs a policy's layers as plain functions (`layer_chain`,
`forward_chain`): at batch 1 the module calls' Python overhead costs more than the arithmetic.

Every network returns float32, also under bfloat16 autocast (a config's `precision="bf16"`,
`acrl.core.devices.precision_context`), where its products run in bfloat16: each casts its outputs with
`.float()` where they leave it (here, in `acrl.parts.heads`, `acrl.parts.actor_critic`, `acrl.parts.vae`
and the algorithms' own networks), so that losses, targets, returns, advantages and distributions are
computed in float32 (docs/correctness.md item 16). On float32 outputs `.float()` returns the tensor itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from acrl.core import torch_fast


class Linear(nn.Linear):
    """`nn.Linear` (same parameters, initialisation and state-dict keys) whose large float32 CPU
    products, forward and backward, run through oneDNN: `acrl.core.torch_fast.linear`.

    input (B, in_features) float32 -> (B, out_features); other ranks, dtypes and devices are
    `torch.nn.functional.linear`. Gradients reach every parameter that requires one (a frozen
    weight with a trainable bias too), second derivatives included.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (..., in_features) -> x W^T + b (..., out_features), through `acrl.core.torch_fast.linear`."""
        return torch_fast.linear(x, self.weight, self.bias)


class Tanh(nn.Tanh):
    """`nn.Tanh` whose large float32 CPU inputs go through the sigmoid (`acrl.core.torch_fast.tanh`),
    same values to float32 round-off (|difference| <= 2.4e-7, absolute) and the textbook
    gradient. Any shape."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """tanh(x), elementwise, any shape (`acrl.core.torch_fast.tanh`)."""
        return torch_fast.tanh(x)


ACTIVATIONS = {"tanh": Tanh, "relu": nn.ReLU}
_ACTIVATION_FUNCTIONS = {nn.Tanh: torch.tanh, Tanh: torch.tanh, nn.ReLU: torch.relu}

LayerChain = list[tuple[torch.Tensor, torch.Tensor | None, Callable[[torch.Tensor], torch.Tensor] | None]]
"""(weight, bias, activation function after the layer or None) of each Linear layer of some nets, in order."""


def layer_chain(*nets: nn.Module) -> LayerChain:
    """The `LayerChain` of `nets` applied one after the other, for `forward_chain`.

    It holds the parameter tensors themselves, so it sees every in-place change (optimizer
    steps, `load_state_dict`, `flatten_parameters`, `Module.to`, which keeps the parameter
    objects), but not a parameter replaced by another object (`load_state_dict(assign=True)`):
    a module that keeps a chain rebuilds it after every load (as `acrl.parts.heads` does).

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


def mlp_encoder(in_dim: int, hidden_sizes: tuple[int, ...], activation: str = "tanh") -> nn.Sequential:
    """The hidden layers of an MLP, each followed by its activation: obs (B, in_dim) float32 ->
    features (B, hidden_sizes[-1]) (B, in_dim with no hidden layers, an empty Sequential).

    Orthogonal weights with gain sqrt(2) and zero biases: the initialisation of Engstrom et al.
    2020, "Implementation Matters in Deep Policy Gradients", Sec. 3.
    Raises:
        KeyError: an activation other than "tanh" or "relu".
    """
    layers: list[nn.Module] = []
    sizes = (in_dim, *hidden_sizes)
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [output_layer(a, b, math.sqrt(2)), ACTIVATIONS[activation]()]
    return nn.Sequential(*layers)


def output_layer(in_dim: int, out_dim: int, gain: float) -> Linear:
    """A `Linear` (in_dim -> out_dim) with orthogonal weights of gain `gain` and zero biases: 0.01
    for policy heads, 1 for values, sqrt(2) for hidden layers (Engstrom et al. 2020, Sec. 3)."""
    layer = Linear(in_dim, out_dim)
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


def mlp(
    in_dim: int, hidden_sizes: tuple[int, ...], out_dim: int, activation: str = "tanh", output_gain: float = 1.0
) -> nn.Sequential:
    """Fully connected net in_dim -> hidden_sizes -> out_dim with orthogonal initialisation:
    `mlp_encoder`'s layers, then an `output_layer` of gain `output_gain`.

    Raises:
        KeyError: an activation other than "tanh" or "relu".
    """
    return nn.Sequential(
        *mlp_encoder(in_dim, hidden_sizes, activation), output_layer((in_dim, *hidden_sizes)[-1], out_dim, output_gain)
    )


class ValueNet(nn.Module):
    """State-value function V(s): obs (B, obs_dim) float32 -> (B,) float32."""

    def __init__(self, obs_dim: int, hidden_sizes: tuple[int, ...], activation: str = "tanh"):
        super().__init__()
        self.net = mlp(obs_dim, hidden_sizes, 1, activation, output_gain=1.0)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """obs (B, obs_dim) float32 -> V(s) (B,) float32."""
        return self.net(obs).squeeze(-1).float()


class DeterministicActor(nn.Module):
    """mu(s) = tanh(net(s)) in [-1, 1]^act_dim: the DDPG/TD3 actor (Lillicrap et al. 2016, Sec. 7).

    obs (B, obs_dim) float32 -> actions (B, act_dim) float32 in policy units.
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes: tuple[int, ...] = (400, 300)):
        super().__init__()
        self.net = mlp(obs_dim, hidden_sizes, act_dim, "relu", output_gain=1.0)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """obs (B, obs_dim) float32 -> mu(s) (B, act_dim) float32 in [-1, 1]."""
        return torch.tanh(self.net(obs).float())


class QNet(nn.Module):
    """One critic Q(s, a): the DDPG critic (Lillicrap et al. 2016, Sec. 7), ReLU MLP on [s, a].

    forward / q1: obs (B, obs_dim), actions (B, act_dim) float32 -> (B,) float32. `q1` is an
    alias so that code written for `TwinQ` (actor loss on Q1) works with either critic.
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes: tuple[int, ...] = (400, 300)):
        super().__init__()
        self.q_net = mlp(obs_dim + act_dim, hidden_sizes, 1, "relu")

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """obs (B, obs_dim), actions (B, act_dim) float32 -> Q(s, a) (B,) float32."""
        return self.q_net(torch.cat([obs, actions], dim=-1)).squeeze(-1).float()

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
        """obs (B, obs_dim), actions (B, act_dim) float32 -> (Q1(s, a), Q2(s, a)), each (B,) float32."""
        x = torch.cat([obs, actions], dim=-1)
        return self.q1_net(x).squeeze(-1).float(), self.q2_net(x).squeeze(-1).float()

    def q1(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Q1 only, (B,): the critic the actor's loss uses."""
        return self.q1_net(torch.cat([obs, actions], dim=-1)).squeeze(-1).float()


def inplace_relu(*modules: nn.Module) -> None:
    """Switch every `nn.ReLU` inside `modules` to in-place: the same values and gradients (a ReLU
    after a Linear may overwrite the Linear's output, which its backward does not need), one
    allocation less per layer; ~10% of a BCQ update on CPU."""
    for module in modules:
        for layer in module.modules():
            if isinstance(layer, nn.ReLU):
                layer.inplace = True
