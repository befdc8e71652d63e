"""Policy heads: Categorical, diagonal Gaussian, tanh-squashed Gaussian; one set for PPO, A3C and SAC;
and DQN's Q-network over Discrete actions, `DiscreteQ`.

A policy is encoder -> head. The encoder maps observations (B, obs_dim) float32 to features
(B, features_dim) float32 (an MLP trunk, `acrl.parts.nets.mlp_encoder`; for image frames a CNN,
`acrl.parts.encoders`); the head's output
layer (orthogonal init, gain 0.01) maps features to the distribution's parameters, and the
head samples, scores and measures the entropy of actions in policy units: action indices for
Discrete spaces, [-1, 1] per bounded Box dimension (`acrl.core.envs.ActionAdapter` maps them to
the environment's Box).

Each head owns its encoder (an empty `nn.Sequential` for a head on features), registered between the
head's own parameter (a state-independent log-std) and its output layer: a head's parameters come
as log-std, encoder, output layer. The feature-level methods (`forward`, `distribution`,
`log_prob_entropy`) take the encoder's output, so a trunk shared with a value layer runs once.

Acting (once per environment step, `sample`) runs an MLP encoder and the output layer as plain functions
(`acrl.parts.nets.layer_chain`) and samples without `torch.distributions` objects: at batch 1
their Python overhead costs more than the arithmetic. Another encoder (a CNN,
`acrl.parts.encoders.CNNEncoder`, whose convolutions dwarf that overhead) is called as a module.
The chain is rebuilt whenever the head or a module holding it loads a state dict
(`load_state_dict(..., assign=True)` replaces the parameter tensors).

PPO's and A3C's actor-critic (`acrl.parts.actor_critic.ActorCritic`) puts a head on the output of its
encoder and core, as features (the head's own encoder is then empty); BC and SAC give a head their encoder.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import Categorical, Normal

from acrl.parts.encoders import make_encoder
from acrl.parts.nets import LayerChain, forward_chain, layer_chain, output_layer

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def gumbel_max(logits: torch.Tensor) -> torch.Tensor:
    """One sample per row of softmax(logits): logits (B, n) float -> (B,) int64.

    argmax(logits + G) with G = -log(E), E ~ Exponential(1) i.i.d., is Gumbel(0, 1) noise: the
    Gumbel-max trick (Gumbel 1954; Maddison et al. 2014) draws exactly from the softmax, in
    three small ops, about three times faster than `torch.multinomial` at batch 1.
    """
    return (logits - torch.empty_like(logits).exponential_().log_()).argmax(-1)


def bounded_log_std(log_std: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """log_std clamped to [low, high] in value, with the gradient of the identity everywhere.

    A hard clamp has zero gradient outside its bounds: a log-std parameter that Adam's momentum
    carries below the floor (-5.001) gets no gradient again and the policy's std can never grow
    back. Here the value is clamp(log_std) exactly (in range: log_std itself, bit for bit, with
    the same gradient 1), and outside the range the gradient at the bound passes straight
    through (the straight-through estimator, Bengio et al. 2013), so the parameter returns as
    soon as the loss asks for a larger (or smaller) std. Chosen over SAC's tanh rescaling
    (Haarnoja et al. 2018's code), which would change every in-range value and so the learning
    results behind acrl's presets, and over clamping the parameter after each optimizer step,
    which every optimizer step (A3C's Hogwild workers included) would have to remember.

    Args:
        log_std: any shape, float.
        low, high: the bounds, low < high.
    Returns:
        The same shape and dtype as log_std.
    """
    detached = log_std.detach()
    return detached.clamp(low, high) + (log_std - detached)


class _Head(nn.Module):
    """What the heads share: the encoder, the output layer, the acting chain and its upkeep."""

    def __init__(self, encoder: nn.Module, features_dim: int, out_dim: int, log_std: nn.Parameter | None = None):
        super().__init__()
        if log_std is not None:
            self.log_std = log_std  # registered first: the parameter order of flat layouts and checkpoints
        self.encoder = encoder
        self.linear = output_layer(features_dim, out_dim, 0.01)
        self._chain = self._layer_chain()
        self.register_load_state_dict_post_hook(self._rebuild_chain)

    @staticmethod
    def _rebuild_chain(module: nn.Module, incompatible_keys: Any) -> None:
        module._chain = module._layer_chain()

    def _layer_chain(self) -> LayerChain | None:
        """The acting chain of an MLP encoder (an `nn.Sequential`) and the output layer; None for another encoder."""
        return layer_chain(self.encoder, self.linear) if isinstance(self.encoder, nn.Sequential) else None

    def _act(self, obs: torch.Tensor) -> torch.Tensor:
        """The output layer at obs (B, ...), (B, out_dim) float32: through the layer chain, or as module calls
        without one."""
        out = forward_chain(self._chain, obs) if self._chain is not None else self.linear(self.encoder(obs))
        return out.float()  # float32 under bf16 autocast too (acrl.parts.nets)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """The output layer: features (B, features_dim) -> (B, out_dim) float32 (also under bf16 autocast)."""
        return self.linear(features).float()


class CategoricalHead(_Head):
    """Softmax policy over `n_actions` discrete actions (Williams 1992; Mnih et al. 2016).

    `forward(features)` gives the logits (B, n_actions), unrestricted; `distribution` wraps them
    in `torch.distributions.Categorical`; `log_prob_entropy` and `sample` compute the same
    quantities straight from `log_softmax` (on small batches the distribution object costs
    about as much as the network itself).

    Args:
        encoder: obs (B, ...) -> features (B, features_dim): Linear/Tanh/ReLU Sequentials (acting runs
            them as a `layer_chain`) or any module (a CNN, called as a module).
        features_dim: the encoder's output width; n_actions: the number of actions.
    """

    def __init__(self, encoder: nn.Module, features_dim: int, n_actions: int):
        super().__init__(encoder, features_dim, n_actions)

    def distribution(self, features: torch.Tensor) -> Categorical:
        """features (B, features_dim) -> Categorical over (B,) int64 actions."""
        return Categorical(logits=self(features), validate_args=False)

    def log_prob_entropy(self, features: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probability (B,) and entropy (B,) in nats of actions (B,) int64 at features (B, features_dim)."""
        log_p = torch.log_softmax(self(features), dim=-1)
        log_prob = log_p.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
        return log_prob, -(log_p.exp() * log_p).sum(-1)

    def sample(
        self, obs: torch.Tensor, deterministic: bool = False, with_log_prob: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """For acting: actions (B,) int64 at obs (B, obs_dim) (argmax when deterministic, else
        `gumbel_max`, an exact draw from the softmax) and their log-probabilities (B,), or None
        without `with_log_prob`. Runs an MLP encoder and the head as one `layer_chain`."""
        logits = self._act(obs)
        actions = logits.argmax(-1) if deterministic else gumbel_max(logits)
        if not with_log_prob:
            return actions, None
        return actions, torch.log_softmax(logits, dim=-1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)


class GaussianHead(_Head):
    """Diagonal Gaussian policy with a state-independent log-std (Schulman et al. 2017, Sec. 6.1).

    mean = output layer(features); std = exp(`bounded_log_std`(log_std, log_std_min,
    log_std_max)) is positive by construction and has a floor, so sampling, log-probabilities
    and entropy stay finite at any parameter value (docs/correctness.md item 4), and the bound
    keeps a gradient on both sides. Actions are raw samples in policy units; clipping to the Box
    happens only on the copy sent to the environment.

    Args:
        encoder, features_dim: as `CategoricalHead`; act_dim: action dimensions.
        log_std_init: the log-std's initial value; log_std_min, log_std_max: its bounds.
    """

    def __init__(
        self,
        encoder: nn.Module,
        features_dim: int,
        act_dim: int,
        log_std_init: float = 0.0,
        log_std_min: float = -5.0,
        log_std_max: float = 2.0,
    ):
        super().__init__(encoder, features_dim, act_dim, nn.Parameter(torch.full((act_dim,), float(log_std_init))))
        self.log_std_min, self.log_std_max = log_std_min, log_std_max

    def bounded_log_std(self) -> torch.Tensor:
        """log_std (act_dim,) within [log_std_min, log_std_max], differentiable (`bounded_log_std`)."""
        return bounded_log_std(self.log_std, self.log_std_min, self.log_std_max)

    def distribution(self, features: torch.Tensor) -> Normal:
        """features (B, features_dim) -> Normal with batch shape (B, act_dim)."""
        mean = self(features)
        return Normal(mean, self.bounded_log_std().exp().expand_as(mean), validate_args=False)

    def log_prob_entropy(self, features: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-density (B,) and entropy (B,) in nats of raw actions (B, act_dim), summed over dims."""
        mean, log_std = self(features), self.bounded_log_std()
        entropy = (0.5 + _LOG_SQRT_2PI + log_std).sum().expand(len(mean))
        # Normal.log_prob summed over dims, written out: fewer small tensor operations per call.
        z = (actions - mean) / log_std.exp()
        return -0.5 * z.square().sum(-1) - (log_std.sum() + _LOG_SQRT_2PI * mean.shape[-1]), entropy

    @torch.no_grad()
    def sample(
        self, obs: torch.Tensor, deterministic: bool = False, with_log_prob: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """For acting: raw actions (B, act_dim) at obs (B, obs_dim) (the mean when deterministic)
        and their log-densities (B,), or None without `with_log_prob`.

        actions = mean + std * z with z ~ N(0, I), so log N(actions; mean, std) =
        -|z|^2 / 2 - sum(log std) - act_dim log sqrt(2 pi) comes from z directly. Without
        gradients (a sample, as `Normal.sample`; the losses use `log_prob_entropy`). The mean
        comes from the encoder and head as one `layer_chain`.
        """
        mean = self._act(obs)
        log_std = self.log_std.clamp(self.log_std_min, self.log_std_max)
        if deterministic:
            actions, z = mean, None
        else:
            z = torch.randn_like(mean)
            actions = torch.addcmul(mean, log_std.exp(), z)
        if not with_log_prob:
            return actions, None
        normalizer = log_std.sum() + _LOG_SQRT_2PI * mean.shape[-1]
        if z is None:
            return actions, (-normalizer).expand(len(mean))
        return actions, -0.5 * z.square().sum(-1) - normalizer


def squashed_log_prob(u: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """log pi(tanh(u)|s) = sum_i [log N(u_i; mean_i, std_i) - log(1 - tanh(u_i)^2)]
    (Haarnoja et al. 2018, arXiv:1812.05905, Appendix C).

    log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)) exactly, finite for any u (the naive form
    is log 0 = -inf once tanh(u) rounds to 1, |u| > ~9 in float32).
    Args:
        u: (B, act_dim) float32 pre-squash samples; mean, log_std: (B, act_dim) float32.
    Returns:
        (B,) float32 log-densities of the actions tanh(u) in [-1, 1]^act_dim.
    """
    gaussian = -0.5 * ((u - mean) / log_std.exp()).square() - log_std - _LOG_SQRT_2PI
    log_det = 2.0 * (math.log(2.0) - u - F.softplus(-2.0 * u))
    return (gaussian - log_det).sum(-1)


class SquashedGaussianHead(_Head):
    """pi(a|s) = tanh(N(mu(s), diag(sigma(s)^2))) with state-dependent mean and log-std
    (Haarnoja et al. 2018, arXiv:1812.05905, Sec. 4.2): SAC's actor.

    The output layer holds both: act_dim means, then act_dim log-stds, the latter clamped to
    [log_std_min, log_std_max] (a hard clamp, as the authors' code and SB3: the floor -20 is only
    numerical, the entropy target keeps sigma far above it). Output gain 0.01, so the untrained
    policy is about tanh(N(0, 1)) in every state. Sampling is reparameterised and keeps its
    gradients (Eq. 8), so it runs through the modules, not a layer chain.

    Args:
        encoder, features_dim: as `CategoricalHead`; act_dim: action dimensions.
        log_std_min, log_std_max: the clamp of the log-std.
    """

    def __init__(
        self, encoder: nn.Module, features_dim: int, act_dim: int, log_std_min: float = -20.0, log_std_max: float = 2.0
    ):
        super().__init__(encoder, features_dim, 2 * act_dim)
        self.log_std_min, self.log_std_max = log_std_min, log_std_max

    def mean_log_std(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """features (B, features_dim) -> (mean (B, act_dim), clamped log_std (B, act_dim)) of u."""
        mean, log_std = self(features).chunk(2, dim=-1)
        return mean, log_std.clamp(self.log_std_min, self.log_std_max)

    def sample(self, obs: torch.Tensor, deterministic: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """Actions (B, act_dim) in [-1, 1] and log pi (B,) for obs (B, obs_dim), all float32.

        A reparameterised sample tanh(mean + std * eps), eps ~ N(0, I) (Eq. 8: gradients reach the
        actor through the action), or tanh(mean) when deterministic (the density at u = mean).
        """
        mean, log_std = self.mean_log_std(self.encoder(obs))
        u = mean if deterministic else mean + log_std.exp() * torch.randn_like(mean)
        return torch.tanh(u), squashed_log_prob(u, mean, log_std)

    def sample_n(self, obs: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """n reparameterised samples per state: actions (B, n, act_dim) in [-1, 1] and log pi (B, n), float32,
        for obs (B, obs_dim). The same draws as `sample` on obs repeated n times row by row
        (`repeat_interleave`) from the same generator state, for one forward pass on B rows instead of B n."""
        mean, log_std = (t.unsqueeze(1) for t in self.mean_log_std(self.encoder(obs)))
        u = mean + log_std.exp() * torch.randn(len(obs), n, mean.shape[-1], dtype=mean.dtype, device=mean.device)
        return torch.tanh(u), squashed_log_prob(u, mean, log_std)


def head_on(
    encoder: nn.Module,
    features_dim: int,
    discrete: bool,
    act_dim: int,
    log_std_init: float = 0.0,
    log_std_min: float = -5.0,
) -> CategoricalHead | GaussianHead:
    """A `CategoricalHead` over act_dim actions (discrete) or a `GaussianHead` of act_dim dimensions
    (log-std from `log_std_init`, floor `log_std_min`, ceiling 2) on `encoder`, whose features are
    (B, features_dim): an MLP or a CNN (`acrl.parts.encoders.make_encoder`), or an empty `nn.Sequential`
    for a head on features (`acrl.parts.actor_critic.ActorCritic`'s)."""
    if discrete:
        return CategoricalHead(encoder, features_dim, act_dim)
    return GaussianHead(encoder, features_dim, act_dim, log_std_init, log_std_min)


class DiscreteQ(nn.Module):
    """Q(s, .) over a Discrete action space: an encoder for observations of `space`, then one linear
    output per action (gain 1, zero biases): the Q-network of Mnih et al. 2015 (Methods, "Model
    architecture": the Nature CNN on frames) and of DQN on vectors (an MLP, ReLU).

    forward: obs (B, obs_dim) float32 or frames (B, *obs_shape) uint8 / bool -> (B, n_actions) float32.

    Args:
        space: the observation space; encoder: "auto" or a name of `acrl.parts.encoders.ENCODERS`;
        n_actions: the Discrete space's size; hidden_sizes: the MLP's hidden layers (vectors only);
        channels: the frames' layout, "first", "last" or "auto" (a config's `channels`).
    Attributes:
        encoder_name: the encoder used ("mlp", "nature", "a3c" or "minatar").
    Raises:
        InputError: an observation space no encoder takes, or an encoder that does not take it (`make_encoder`).
    """

    def __init__(
        self, space: gym.spaces.Box, encoder: str, n_actions: int, hidden_sizes: tuple[int, ...], channels: str = "auto"
    ):
        super().__init__()
        self.encoder, features_dim, self.encoder_name = make_encoder(space, encoder, hidden_sizes, "relu", channels)
        self.head = output_layer(features_dim, n_actions, 1.0)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """obs (B, obs_dim) float32 or frames (B, *obs_shape) uint8 / bool -> Q(s, ·) (B, n_actions) float32."""
        return self.head(self.encoder(obs)).float()
