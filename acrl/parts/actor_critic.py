"""One actor-critic for the on-policy algorithms (PPO, A3C, an IMPALA learner): pi(a | s) and V(s) from one
encoder and one core, carrying the policy's state from step to step.

    obs -> encoder -> core -> policy head (Categorical, or Gaussian with a state-independent log-std)
                           -> value (one linear layer on the core's outputs, or a separate MLP on obs)

The encoder comes from the observation space (`acrl.parts.encoders.make_encoder`: an MLP for vectors, a CNN
for frames, in the `channels` layout). The core is either `FeedForwardCore`, the identity with an empty state
`()`, or `acrl.parts.recurrent.LSTMCore`, whose state is (h, c), each (1, N, lstm_hidden_size): both have
`initial_state`, `step` and `sequence`, so nothing above the core asks which it is. A state is a tuple of
tensors (layers, N, hidden); `episode_start` (N,) bool resets it (to zeros) before the step it marks
(docs/correctness.md item 12). The interface (DESIGN.md):

- `initial_state(n, device)`: the state of n fresh episodes (`()` feed-forward);
- `act(obs, state, episode_start)` -> `Action(actions, log_probs, state)`: one step of N environments, for
  PPO's rollouts, A3C's workers, `Agent.predict` and an IMPALA actor (whose unroll keeps the behaviour
  policy's log-probabilities and the state at its first step);
- `evaluate(obs, actions, state, episode_starts)` -> (log pi(a|s), entropy, V(s)), each (T, N), with
  gradients: T steps of N sequences rerun from their first state with the resets inside them (truncated
  backpropagation through time), one batched pass for a feed-forward core: PPO's minibatches, A3C's loss,
  V-trace's targets (Espeholt et al. 2018);
- `value(obs, state)` -> V (N,): one more step without a reset, the bootstrap at a rollout's last
  observation or a truncated episode's final one, with the state its last step left (item 1).

The value shares the trunk (encoder and core) with the policy for frames (Mnih et al. 2016, Sec. 8; CleanRL's
ppo_atari), with an LSTM (the critic has no state of its own; CleanRL's ppo_atari_lstm) and where asked
(`shared_trunk`, A3C's paper nets on vectors); otherwise, for vectors, the critic is a separate MLP on the
observations (`ObservationCritic`: PPO's and CleanRL's default). Initialisation: orthogonal, gain sqrt(2)
for hidden layers, 0.01 for the policy's output, 1 for the value's (Engstrom et al. 2020, Sec. 3).

Parameters come in two parts, the actor's (encoder, core, policy head: with a shared trunk the trunk is
here) and the critic's, so that PPO's optimizer can give the critic's a weight decay of its own:
`actor.encoder.*`, `actor.core.*`, `actor.head.log_std`, `actor.head.linear.*`, then `critic.*`.

Acting runs an MLP encoder as plain functions (`acrl.parts.nets.layer_chain`; at batch 1 a module call
costs more than the arithmetic), a CNN as a module. Callers act under `torch.no_grad()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import gymnasium as gym
import torch
from torch import nn

from acrl.core.config import RunConfig, layer_widths
from acrl.core.errors import InputError
from acrl.parts.encoders import make_encoder
from acrl.parts.heads import CategoricalHead, GaussianHead, head_on
from acrl.parts.nets import ACTIVATIONS, LayerChain, Linear, ValueNet, forward_chain, layer_chain
from acrl.parts.observations import is_image
from acrl.parts.recurrent import LSTMCore

State = tuple[torch.Tensor, ...]
"""A policy's state for N environments: tensors (layers, N, hidden); () for a feed-forward policy."""


class Action(NamedTuple):
    """What `ActorCritic.act` returns for N environments.

    Attributes:
        actions: raw policy actions, (N,) int64 (Discrete) or (N, act_dim) float32 (Box, before any clipping).
        log_probs: (N,) float32 log pi(a|s) of those actions, or None when not asked for.
        state: the state after the step (before any reset that the next step's episode_start makes).
    """

    actions: torch.Tensor
    log_probs: torch.Tensor | None
    state: State


class FeedForwardCore(nn.Module):
    """The core of a policy without memory: features pass through, and its state is empty.

    Args:
        size: the encoder's features_dim, which is also the core's output_dim.
    """

    def __init__(self, size: int):
        super().__init__()
        self.output_dim = size

    def initial_state(self, n: int, device: torch.device | str = "cpu") -> State:
        """The state of n fresh episodes: ()."""
        return ()

    def step(self, features: torch.Tensor, state: State, episode_start: torch.Tensor) -> tuple[torch.Tensor, State]:
        """features (N, size) -> (the same features, the empty state)."""
        return features, state

    def sequence(
        self, features: torch.Tensor, state: State, episode_starts: torch.Tensor
    ) -> tuple[torch.Tensor, State]:
        """features (T, N, size) -> (the same features, the empty state)."""
        return features, state


class Actor(nn.Module):
    """The policy's side of an `ActorCritic`: encoder -> core -> policy head (whose own encoder is empty).

    Args:
        encoder: obs (B, ...) -> features (B, features_dim); core: a `FeedForwardCore` or an `LSTMCore` on
            those features; head: a `CategoricalHead` or `GaussianHead` on the core's outputs.
    """

    def __init__(self, encoder: nn.Module, core: FeedForwardCore | LSTMCore, head: CategoricalHead | GaussianHead):
        super().__init__()
        self.encoder, self.core, self.head = encoder, core, head


class ValueHead(Linear):
    """V(s) as one linear layer on the trunk's features (gain 1, zero bias): (obs, features (B, width)) -> (B,)."""

    def __init__(self, width: int):
        super().__init__(width, 1)
        nn.init.orthogonal_(self.weight, 1.0)
        nn.init.zeros_(self.bias)

    def forward(self, obs: torch.Tensor, features: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        """(obs, unread; features (B, width)) -> V(s) (B,) float32."""
        return super().forward(features).squeeze(-1).float()


class ObservationCritic(ValueNet):
    """V(s) as a separate MLP on the observations (`acrl.parts.nets.ValueNet`): (obs (B, obs_dim), features or
    None, unread) -> (B,)."""

    def forward(self, obs: torch.Tensor, features: torch.Tensor | None) -> torch.Tensor:  # type: ignore[override]
        """(obs (B, obs_dim) float32, features unread) -> V(s) (B,) float32."""
        return self.net(obs).squeeze(-1).float()


@dataclass
class ActorCriticConfig(RunConfig):
    """The model settings of the actor-critic algorithms (PPO, A3C, IMPALA, APPO), one `ActorCritic` built from
    them (`ActorCritic.from_config`); each algorithm's config extends this one.

    Attributes:
        hidden_sizes: the MLP's hidden layers for vector observations: the actor's, or the shared trunk's;
            critic_hidden_sizes: the separate critic's (None: hidden_sizes; unused with a shared trunk).
        activation: "tanh" or "relu" (vector observations).
        encoder: the observation encoder, "auto" (from the observation space: "mlp" for vectors, "nature" for
            frames of 36x36 or more, else "minatar") or one of "mlp", "nature", "a3c" (the A3C paper's, Sec. 8),
            "minatar" (`acrl.parts.encoders`); a run's config.yaml records the one used.
        shared_trunk: the value as a head on the policy's trunk for vectors too (the A3C paper's nets; otherwise
            a separate critic MLP); always on for frames and with an LSTM, where config.yaml records true.
        lstm_hidden_size: cells of an LSTM after the encoder, shared by the policy and the value (0: a
            feed-forward model; the A3C paper's LSTM agent has 256).
        log_std_init / log_std_min: the Gaussian policy's initial log-std and its floor (Box actions).
    """

    hidden_sizes: tuple[int, ...] = (64, 64)
    critic_hidden_sizes: tuple[int, ...] | None = None
    activation: str = "tanh"
    encoder: str = "auto"
    shared_trunk: bool = False
    lstm_hidden_size: int = 0
    log_std_init: float = 0.0
    log_std_min: float = -5.0

    def validate(self) -> None:
        """Raise `InputError` for model settings no `ActorCritic` is built from: an activation not in
        `acrl.parts.nets.ACTIVATIONS`, layers that are not a list of positive widths, a negative
        lstm_hidden_size; then the algorithm's own checks (subclasses extend this)."""
        super().validate()
        if self.activation not in ACTIVATIONS:
            raise InputError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {self.activation!r}.")
        layer_widths(self, "hidden_sizes", "critic_hidden_sizes")
        if self.lstm_hidden_size < 0:
            raise InputError(f"lstm_hidden_size must be >= 0 (0: no LSTM), got {self.lstm_hidden_size}.")


class ActorCritic(nn.Module):
    """pi(a | s, state) and V(s, state) with the interface of the module docstring.

    Observations are (N, obs_dim) float32 vectors or (N, *obs_shape) uint8 / bool frames (T, N, ... for
    `evaluate`), on the module's device; actions are raw policy actions ((N,) int64 or (N, act_dim) float32).

    Args:
        observation_space: the single observation space; action_space: Discrete (a Categorical policy) or a
            1-D Box (a Gaussian in [-1, 1] policy units, `acrl.core.envs.ActionAdapter`).
        hidden_sizes, activation: the MLP encoder's layers ("tanh" or "relu"; vectors only).
        encoder: "auto" or a name of `acrl.parts.encoders.ENCODERS`; channels: the frames' layout.
        lstm_hidden_size: cells of an LSTM core (0: the feed-forward core).
        shared_trunk: the value on the trunk's features for vectors too (always so for frames and with an LSTM).
        critic_hidden_sizes: the separate critic's layers (None: hidden_sizes).
        log_std_init, log_std_min: the Gaussian's initial log-std and its floor (its ceiling is 2).
    Attributes:
        actor: the `Actor` (encoder, core, head); critic: a `ValueHead` or an `ObservationCritic`.
        encoder_name: the encoder used ("mlp", "nature", "a3c" or "minatar"); shared_trunk: whether the value
            reads the trunk's features.
    Raises:
        InputError: an observation space no encoder takes, an encoder that does not take it, or frames whose
            channel axis `channels="auto"` cannot tell (`make_encoder`).
    """

    def __init__(
        self,
        observation_space: gym.spaces.Box,
        action_space: gym.spaces.Discrete | gym.spaces.Box,
        hidden_sizes: tuple[int, ...] = (64, 64),
        activation: str = "tanh",
        encoder: str = "auto",
        channels: str = "auto",
        lstm_hidden_size: int = 0,
        shared_trunk: bool = False,
        critic_hidden_sizes: tuple[int, ...] | None = None,
        log_std_init: float = 0.0,
        log_std_min: float = -5.0,
    ):
        super().__init__()
        trunk, features_dim, self.encoder_name = make_encoder(
            observation_space, encoder, hidden_sizes, activation, channels
        )
        discrete = isinstance(action_space, gym.spaces.Discrete)
        act_dim = int(action_space.n) if discrete else int(action_space.shape[0])
        width = lstm_hidden_size or features_dim
        # Built in this order (encoder, policy layer, LSTM, value), the random draws of the initialisation
        # come as they always have; registered as encoder, core, head, critic.
        head = head_on(nn.Sequential(), width, discrete, act_dim, log_std_init, log_std_min)
        core = LSTMCore(features_dim, lstm_hidden_size) if lstm_hidden_size else FeedForwardCore(features_dim)
        self.shared_trunk = shared_trunk or lstm_hidden_size > 0 or is_image(observation_space)
        if self.shared_trunk:
            critic: nn.Module = ValueHead(width)
        else:
            obs_dim = int(observation_space.shape[0])
            critic = ObservationCritic(obs_dim, critic_hidden_sizes or hidden_sizes, activation)
        self.actor, self.critic = Actor(trunk, core, head), critic
        # Acting's plain references: each attribute of a submodule costs an nn.Module.__getattr__, which
        # at batch 1 adds up to more than a step's arithmetic.
        self._chain, self._step, self._sample = self._encoder_chain(), core.step, head.sample
        self.register_load_state_dict_post_hook(self._rebuild_chain)

    @classmethod
    def from_config(
        cls,
        observation_space: gym.spaces.Box,
        action_space: gym.spaces.Discrete | gym.spaces.Box,
        config: ActorCriticConfig,
    ) -> ActorCritic:
        """The actor-critic a config describes (its `ActorCriticConfig` fields and `channels`), on the CPU. The
        config then records what `"auto"` and the frames resolved to, for config.yaml: the encoder used and
        whether the value shares the trunk. Raises what the constructor raises."""
        model = cls(
            observation_space,
            action_space,
            config.hidden_sizes,
            config.activation,
            config.encoder,
            config.channels,
            config.lstm_hidden_size,
            config.shared_trunk,
            config.critic_hidden_sizes,
            config.log_std_init,
            config.log_std_min,
        )
        config.encoder, config.shared_trunk = model.encoder_name, model.shared_trunk
        return model

    @staticmethod
    def _rebuild_chain(module: nn.Module, incompatible_keys: Any) -> None:
        module._chain = module._encoder_chain()

    def _encoder_chain(self) -> LayerChain | None:
        """The acting chain of an MLP encoder (an `nn.Sequential`); None for a CNN."""
        encoder = self.actor.encoder
        return layer_chain(encoder) if isinstance(encoder, nn.Sequential) else None

    def _features(self, obs: torch.Tensor, state: State, episode_start: torch.Tensor) -> tuple[torch.Tensor, State]:
        """One step of the trunk: the core's outputs (N, output_dim) and its new state, the encoder run through
        its layer chain where there is one."""
        features = forward_chain(self._chain, obs) if self._chain is not None else self.actor.encoder(obs)
        return self._step(features, state, episode_start)

    def initial_state(self, n: int, device: torch.device | str = "cpu") -> State:
        """The state of n fresh episodes on `device`: zeros, each (layers, n, hidden); () feed-forward."""
        return self.actor.core.initial_state(n, device)

    def act(
        self,
        obs: torch.Tensor,
        state: State,
        episode_start: torch.Tensor,
        deterministic: bool = False,
        with_log_prob: bool = True,
    ) -> Action:
        """One step of N environments: obs (N, ...), state (each (layers, N, hidden)), episode_start (N,) bool
        (reset there before the step) -> `Action`: actions sampled (the mode / mean if deterministic; Gumbel-max
        for a Categorical, mean + std z for a Gaussian), their log-probabilities unless `with_log_prob` is
        False (None then: A3C's workers and `predict` need none), and the state after the step."""
        features, state = self._features(obs, state, episode_start)
        actions, log_probs = self._sample(features, deterministic, with_log_prob)
        return Action(actions, log_probs, state)

    def evaluate(
        self, obs: torch.Tensor, actions: torch.Tensor, state: State, episode_starts: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """log pi(a|s) and the policy's entropy (both summed over action dimensions, nats) and V(s), each (T, N)
        float32 with gradients, over T steps of N sequences: obs (T, N, ...), raw actions (T, N) int64 or
        (T, N, act_dim) float32, state at the sequences' first step (each (layers, N, hidden); before that
        step's reset), episode_starts (T, N) bool. The encoder runs once on all T N observations, the core
        over the sequences from `state`, resetting where an episode starts; gradients stop at `state`."""
        steps, n = obs.shape[:2]
        flat_obs = obs.flatten(0, 1)
        outputs = self._sequence(flat_obs, (steps, n), state, episode_starts)
        log_probs, entropy = self.actor.head.log_prob_entropy(outputs, actions.flatten(0, 1))
        values = self.critic(flat_obs, outputs)
        return log_probs.reshape(steps, n), entropy.reshape(steps, n), values.reshape(steps, n)

    def sequence_values(self, obs: torch.Tensor, state: State, episode_starts: torch.Tensor) -> torch.Tensor:
        """V(s) (T, N) float32 over T steps of N sequences, as `evaluate` computes it but without the policy's
        terms: obs (T, N, ...), state at the sequences' first step, episode_starts (T, N) bool. PPO's V(s_t) of
        a whole rollout in one pass; the trunk runs only where the value reads it (a separate critic reads the
        observations alone)."""
        steps, n = obs.shape[:2]
        flat_obs = obs.flatten(0, 1)
        outputs = self._sequence(flat_obs, (steps, n), state, episode_starts) if self.shared_trunk else None
        return self.critic(flat_obs, outputs).reshape(steps, n)

    def _sequence(
        self, flat_obs: torch.Tensor, shape: tuple[int, int], state: State, episode_starts: torch.Tensor
    ) -> torch.Tensor:
        """The core's outputs (T N, output_dim), time-major, over T steps of N sequences: the encoder once on all
        the observations flat_obs (T N, ...), the core over the sequences from `state` with its resets."""
        features = self.actor.encoder(flat_obs).unflatten(0, shape)
        outputs, _ = self.actor.core.sequence(features, state, episode_starts)
        return outputs.flatten(0, 1)

    def value(self, obs: torch.Tensor, state: State) -> torch.Tensor:
        """V(s) (N,) float32 at obs (N, ...) one step on from `state` (each (layers, N, hidden)), without a reset:
        the step continues those episodes (the bootstrap at a rollout's last observation, or at a truncated
        episode's final observation with the state its last step left). The trunk runs only where the value
        reads it (a separate critic reads the observations alone: A3C bootstraps every few steps)."""
        if not self.shared_trunk:
            return self.critic(obs, None)
        carried = torch.zeros(len(obs), dtype=torch.bool, device=obs.device)
        features, _ = self._features(obs, state, carried)
        return self.critic(obs, features)
