"""Proximal Policy Optimization with the clipped surrogate (Schulman et al. 2017, arXiv:1707.06347).

One iteration = collect `n_steps` steps in each of `n_envs` environments with the current
policy, compute GAE(lambda) advantages, then `n_epochs` passes of shuffled minibatches over
the rollout, each minimising

    L = -E[min(r A, clip(r, 1 - eps, 1 + eps) A)] + vf_coef * L_V - ent_coef * H[pi]   (Eq. 9)

with r = pi(a|s) / pi_old(a|s) and A normalised per minibatch. The implementation details
follow Engstrom et al. 2020 and Huang et al. 2022 ("The 37 Implementation Details of PPO"):
orthogonal init, Adam eps 1e-5, gradient-norm clipping, optional value clipping, optional
linear learning-rate annealing, approximate KL with optional early stop, running observation
normalisation and optional reward scaling.

The policy and the value are one `acrl.parts.actor_critic.ActorCritic` (encoder -> core -> policy head and
value), built from the observation space: vectors get an MLP actor and a separate MLP critic; image frames
(uint8 or bool) a CNN shared by the policy and the value, as in Mnih et al. 2016 and CleanRL's ppo_atari
(frames stay uint8/bool in the rollout buffer and are scaled inside the network). With `lstm_hidden_size`
> 0 the core is an LSTM shared by both, as CleanRL's ppo_atari_lstm (Huang et al. 2022) and the A3C
paper's LSTM agent (Mnih et al. 2016, Sec. 8).

One rollout loop serves every policy. The policy's state for each environment (empty without an LSTM) is
carried from step to step and reset at each episode's first step, terminated or truncated; a truncated
episode bootstraps from V(final observation) computed with the state its last step left, before the
reset. The buffer keeps the episode starts and the state at the first step of each sequence of `seq_len`
steps (1 without an LSTM: each step is a sequence), which are the minibatches' units: each minibatch
reruns its sequences from their stored states, resetting at the episode starts inside them, so the first
epoch recomputes the rollout's own states and every later one the current network's (docs/correctness.md
item 12). V(s_t) for the rollout comes from one such pass over the whole rollout after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from acrl.algos.base import ActorCriticAgent
from acrl.core.config import in_unit_interval, positive
from acrl.core.envs import make_vec_env
from acrl.core.errors import InputError
from acrl.parts.actor_critic import ActorCritic, ActorCriticConfig, State
from acrl.parts.normalization import ObservationNormalizer, RewardScaler
from acrl.parts.observations import make_normalizer
from acrl.parts.optim import anneal_learning_rate, clip_grad_norm, flatten_parameters
from acrl.parts.returns import gae
from acrl.parts.rollouts import RolloutBuffer
from acrl.parts.stats import EpisodeStats


@dataclass
class PPOConfig(ActorCriticConfig):
    """PPO hyperparameters; defaults are the paper's MuJoCo settings (Schulman et al. 2017, Table 3). The model's
    settings are `ActorCriticConfig`'s: by default a 64-64 tanh actor and critic, separate, for vectors.

    Attributes:
        n_steps: steps per environment per rollout (the horizon T).
        batch_size: minibatch size; must divide n_steps * n_envs and be >= 2.
        n_epochs: passes over each rollout (K).
        learning_rate: Adam step size; anneal_lr: decay it linearly to 0 over total_steps.
        gamma: discount; gae_lambda: GAE's lambda.
        clip_range: epsilon of the clipped surrogate (> 0).
        clip_range_vf: clip the value update to +-this around the old value (None: off).
        ent_coef: entropy bonus weight; vf_coef: value loss weight.
        max_grad_norm: clip the global gradient norm to this.
        target_kl: stop the epochs of an iteration once approx KL > 1.5 * target_kl (None: off).
        normalize_advantage: normalise advantages per minibatch.
        normalize_obs: running observation normalisation (None: from the observation space, on for
            vectors and off for image frames, which the network scales; true is refused for frames; a
            run's config.yaml records the value used); obs_clip: bound after normalising.
        normalize_reward: scale rewards by the running std of the discounted return.
        critic_weight_decay: L2 weight decay on the critic's parameters (Adam's weight_decay).
        seq_len: the steps of a training sequence with an LSTM (lstm_hidden_size > 0; None: n_steps, each
            environment's whole rollout, as CleanRL's ppo_atari_lstm); it must divide n_steps and
            batch_size (a minibatch is batch_size / seq_len sequences).
    """

    n_steps: int = 2048
    batch_size: int = 64
    n_epochs: int = 10
    learning_rate: float = 3e-4
    anneal_lr: bool = False
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    clip_range_vf: float | None = None
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_kl: float | None = None
    normalize_advantage: bool = True
    normalize_obs: bool | None = None
    obs_clip: float = 10.0
    normalize_reward: bool = False
    critic_weight_decay: float = 0.0
    seq_len: int | None = None

    def validate(self) -> None:
        """Raise `InputError` for values PPO cannot run with (see the attribute list)."""
        super().validate()
        positive(
            self,
            "n_steps",
            "n_epochs",
            "learning_rate",
            "clip_range",
            "clip_range_vf",
            "max_grad_norm",
            "target_kl",
            "obs_clip",
        )
        in_unit_interval(self, "gamma", "gae_lambda")
        rollout = self.n_steps * self.n_envs
        if self.batch_size < 2 or rollout % self.batch_size:
            divisors = [d for d in range(2, rollout + 1) if rollout % d == 0][:8]
            raise InputError(
                f"batch_size must be >= 2 and divide the rollout size n_steps * n_envs = "
                f"{self.n_steps} * {self.n_envs} = {rollout}; got {self.batch_size}. "
                f"Divisors of {rollout} that work: {', '.join(map(str, divisors))}."
            )
        if self.ent_coef < 0 or self.vf_coef < 0 or self.critic_weight_decay < 0:
            raise InputError("ent_coef, vf_coef and critic_weight_decay must be >= 0.")
        if self.seq_len is not None and not self.lstm_hidden_size:
            raise InputError("seq_len applies to a policy with an LSTM only: set lstm_hidden_size > 0 or drop seq_len.")
        length = self.sequence_length
        if length < 1 or self.n_steps % length or self.batch_size % length:
            raise InputError(
                f"seq_len must divide n_steps = {self.n_steps} and batch_size = {self.batch_size} (a minibatch "
                f"is whole sequences); got {length}{' (n_steps, its default)' if self.seq_len is None else ''}. "
                "Set seq_len to a common divisor, or batch_size to a multiple of it."
            )

    @property
    def sequence_length(self) -> int:
        """The steps of a training sequence: seq_len (None: n_steps) with an LSTM; 1 without, as a step
        needs no state from the steps before it."""
        if not self.lstm_hidden_size:
            return 1
        return self.n_steps if self.seq_len is None else self.seq_len


def approx_kl(log_ratio: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 estimate of KL(pi_old || pi): mean of (r - 1) - log r over samples of pi_old,
    r = pi(a|s) / pi_old(a|s); log_ratio (B,) float32 -> 0-d (unbiased and >= 0 for each sample;
    Schulman 2020, "Approximating KL Divergence")."""
    return (log_ratio.exp() - 1 - log_ratio).mean()


class PPO(ActorCriticAgent):
    """PPO agent: `PPO(env="CartPole-v1", seed=0, **hyperparameters).learn(total_steps)`.

    `model` is the `acrl.parts.actor_critic.ActorCritic`: a Categorical policy for Discrete actions, a
    Gaussian with a state-independent log-std for Box actions (raw samples stored; clipping and
    rescaling only on the copy sent to the env). Observation normalisation statistics are saved in
    every checkpoint and frozen in `predict` and evaluation. critic_weight_decay applies to the
    critic's parameters: with a shared trunk (frames, an LSTM) the value head's only.

    With an LSTM (lstm_hidden_size > 0), `predict(obs, state, episode_start)` returns `(action, state)`
    (`Agent.predict`). The training envs' policy state (`_state`, `_episode_start`) is not checkpointed:
    a loaded agent starts fresh episodes, from a fresh state, as the envs restart.

    Raises:
        InputError: see `Agent` and `PPOConfig.validate`; an observation space no encoder takes
            (`acrl.parts.encoders.make_encoder`); normalize_obs true with image observations.
    """

    algo = "ppo"
    config_class = PPOConfig
    image_observations = True
    bf16_on_frames = True  # Pong: 1.7-2.1x the steps/s, MinAtar: learning parity (docs/benchmarks.md, bfloat16)
    config: PPOConfig

    def _build(self) -> None:
        cfg = self.config
        space = self.observation_space
        self.model = ActorCritic.from_config(space, self.action_space, cfg)
        self.nets = {"model": self.model}
        # The actor's parameters and gradients are one flat tensor and the critic's another
        # (`flatten_parameters`, on the agent's device): zeroing the gradients, clipping their norm
        # and Adam's step each take one or two tensor operations instead of one per layer. One fused
        # Adam for both; the critic gets a group of its own only when it has weight decay.
        parts = (self.model.actor, self.model.critic)
        self.params = [flatten_parameters(part.to(self.device), gradients=True) for part in parts]
        groups: list[dict[str, Any]] = [{"params": self.params}]
        if cfg.critic_weight_decay:
            groups = [{"params": self.params[:1]}, {"params": self.params[1:], "weight_decay": cfg.critic_weight_decay}]
        self.optimizer = torch.optim.Adam(groups, lr=cfg.learning_rate, eps=1e-5, fused=True)
        self.optimizers = {"optimizer": self.optimizer}
        self.obs_normalizer = make_normalizer(space, cfg.normalize_obs, cfg.obs_clip)
        cfg.normalize_obs = isinstance(self.obs_normalizer, ObservationNormalizer)  # the value used, for config.yaml
        self.reward_scaler = RewardScaler(cfg.n_envs, cfg.gamma) if cfg.normalize_reward else None
        self.envs = make_vec_env(self.env, cfg.n_envs)
        self._obs, _ = self.envs.reset(seed=cfg.seed)
        self.envs.action_space.seed(cfg.seed)
        self._start_episodes()
        seen = self.obs_normalizer(self._obs)  # the observations as the policy sees them: their dtype is stored
        self.buffer = RolloutBuffer(
            cfg.n_steps,
            cfg.n_envs,
            space.shape,
            seen.numpy().dtype,
            () if self.discrete else (self.act_dim,),
            self._state,
            cfg.sequence_length,
        )
        self.episode_stats = EpisodeStats()

    def _start_episodes(self) -> None:
        """Every environment's next step begins an episode, from a fresh state."""
        self._state: State = self.model.initial_state(self.config.n_envs, self.device)
        self._episode_start = np.ones(self.config.n_envs, dtype=bool)

    def _step_envs(
        self, t: int, obs: torch.Tensor, raw: np.ndarray, log_probs: torch.Tensor
    ) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        """Store step t's observation, raw action and log-probability, step the envs with the action
        in their units, store the (scaled) rewards and the episode ends: (terminated, truncated, info)."""
        buf = self.buffer
        buf.observations[t] = obs.numpy()
        buf.actions[t] = raw
        buf.log_probs[t] = log_probs.cpu().numpy()
        self._obs, rewards, terminated, truncated, info = self.envs.step(self.action_adapter.to_env(raw))
        if self.reward_scaler is not None:
            rewards = self.reward_scaler(rewards, terminated | truncated)
        buf.rewards[t] = rewards
        buf.terminated[t] = terminated
        buf.truncated[t] = truncated
        self.episode_stats.add_from_info(info)
        return terminated, truncated, info

    @torch.no_grad()
    def collect(self) -> None:
        """Fill the rollout buffer with n_steps steps of each env and compute GAE advantages.

        Each env's policy state (`self._state`, empty without an LSTM) is carried from step to step
        and reset before the first step of each episode (`self._episode_start`), terminated or
        truncated. Truncated steps bootstrap from V(final observation) (`info["final_obs"]`) one step
        on from the state the last step left, terminated ones from nothing (docs/correctness.md
        items 1, 2 and 12).
        """
        cfg, buf, model, device = self.config, self.buffer, self.model, self.device
        truncation_values = np.zeros_like(buf.next_values)
        first_state, first_starts = self._state, self._episode_start
        state, starts = first_state, torch.from_numpy(first_starts).to(device)
        with self.autocast():  # acting and the values in the run's precision (networks return float32)
            for t in range(cfg.n_steps):
                obs = self.obs_normalizer(self._obs, update=True)
                buf.add_state(t, state)
                actions, log_probs, state = model.act(obs.to(device), state, starts)
                terminated, truncated, info = self._step_envs(t, obs, actions.cpu().numpy(), log_probs)
                if truncated.any():
                    ended = np.flatnonzero(truncated)
                    final = self.obs_normalizer(np.stack([info["final_obs"][i] for i in ended])).to(device)
                    index = torch.from_numpy(ended).to(device)
                    final_state = tuple(s[:, index] for s in state)
                    truncation_values[t, truncated] = model.value(final, final_state).cpu().numpy()
                starts = torch.from_numpy(terminated | truncated).to(device)
            buf.episode_starts[0] = first_starts
            buf.episode_starts[1:] = buf.terminated[:-1] | buf.truncated[:-1]
            self._state, self._episode_start = state, buf.terminated[-1] | buf.truncated[-1]
            # V(s_t) for the whole rollout in one pass from its first state (the critic does not change
            # while collecting; these are the observations exactly as the policy saw them).
            values = model.sequence_values(
                torch.from_numpy(buf.observations).to(device),
                first_state,
                torch.from_numpy(buf.episode_starts).to(device),
            )
            buf.values[:] = values.cpu().numpy()
            # V after the last step (envs whose episode ended there do not bootstrap from it)
            last_values = model.value(self.obs_normalizer(self._obs).to(device), state).cpu().numpy()
        buf.next_values[:-1] = buf.values[1:]
        buf.next_values[-1] = last_values
        buf.next_values[buf.truncated] = truncation_values[buf.truncated]
        buf.advantages, buf.returns = gae(
            buf.rewards, buf.values, buf.next_values, buf.terminated, buf.truncated, cfg.gamma, cfg.gae_lambda
        )
        self.num_steps += cfg.n_steps * cfg.n_envs

    def update(self) -> dict[str, float]:
        """n_epochs of minibatch gradient steps on the clipped surrogate; returns train/ metrics."""
        cfg = self.config
        if cfg.anneal_lr:
            anneal_learning_rate(
                self.optimizer, cfg.learning_rate, self.num_steps - cfg.n_steps * cfg.n_envs, self.total_steps
            )
        # Per minibatch, the losses and log-ratios are kept as tensors, and the statistics are
        # computed from them once at the end.
        losses: list[torch.Tensor] = []
        log_ratios: list[torch.Tensor] = []
        batches = self.buffer.minibatches(cfg.batch_size, self.rng, cfg.n_epochs, self.device, cfg.normalize_advantage)
        for batch in batches:  # each (L, M): M sequences of L steps, from their stored states
            with self.autocast():  # the forward pass in the run's precision; the losses below in float32
                log_probs, entropy, values = self.model.evaluate(
                    batch["observations"], batch["actions"], batch["states"], batch["episode_starts"]
                )
            log_ratio = log_probs - batch["log_probs"]
            if cfg.target_kl is not None and approx_kl(log_ratio.detach()).item() > 1.5 * cfg.target_kl:
                break
            ratio, advantages = log_ratio.exp(), batch["advantages"]
            policy_loss = -torch.min(
                ratio * advantages, ratio.clamp(1 - cfg.clip_range, 1 + cfg.clip_range) * advantages
            ).mean()
            if cfg.clip_range_vf is None:
                value_loss = (values - batch["returns"]).square().mean()
            else:
                clipped = batch["values"] + (values - batch["values"]).clamp(-cfg.clip_range_vf, cfg.clip_range_vf)
                value_loss = torch.max(
                    (values - batch["returns"]).square(), (clipped - batch["returns"]).square()
                ).mean()
            entropy_mean = entropy.mean()
            loss = policy_loss + cfg.vf_coef * value_loss
            if cfg.ent_coef:  # with weight 0 the bonus adds nothing: leave it out of the backward pass
                loss = loss - cfg.ent_coef * entropy_mean
            for param in self.params:  # the flat gradients (zero_grad(set_to_none=True) would drop the views)
                param.grad.zero_()
            loss.backward()
            clip_grad_norm(self.params, cfg.max_grad_norm)
            self.optimizer.step()
            with torch.no_grad():
                losses.append(torch.stack([policy_loss, value_loss, entropy_mean]))
            log_ratios.append(log_ratio.detach().flatten())
        metrics: dict[str, float] = {}
        if losses:
            # Minibatches have batch_size samples each (validate), so the means over all the
            # samples are the means of the minibatch means.
            means = torch.stack(losses).double().mean(0).tolist()
            metrics = {f"train/{name}": value for name, value in zip(("policy_loss", "value_loss", "entropy"), means)}
            log_ratio = torch.cat(log_ratios)
            metrics["train/approx_kl"] = approx_kl(log_ratio).item()
            metrics["train/clip_fraction"] = ((log_ratio.exp() - 1).abs() > cfg.clip_range).float().mean().item()
        returns, values = self.buffer.returns.ravel(), self.buffer.values.ravel()
        metrics["train/explained_variance"] = float(1 - np.var(returns - values) / max(np.var(returns), 1e-8))
        metrics["train/learning_rate"] = self.optimizer.param_groups[0]["lr"]
        if not self.discrete:
            with torch.no_grad():
                metrics["train/std"] = float(self.model.actor.head.bounded_log_std().exp().mean())
        return metrics

    def iteration(self, max_steps: int) -> dict[str, float]:
        """`collect` then `update`: one whole rollout of n_steps * n_envs steps, whatever `max_steps`."""
        self.collect()
        return self.update() | self.episode_stats.metrics()

    def _extra_state(self) -> dict[str, Any]:
        state: dict[str, Any] = self.episode_stats.state_dict()
        if self.reward_scaler is not None:
            state["reward_scaler"] = self.reward_scaler.state_dict()
        return state

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self.episode_stats.load_state_dict(state)
        if self.reward_scaler is not None:
            self.reward_scaler.load_state_dict(state["reward_scaler"])
        # The environments' internal state is not in the checkpoint: a loaded agent starts
        # fresh episodes, seeded from the run's seed and step so that a resume repeats exactly,
        # from a fresh policy state.
        self._obs, _ = self.envs.reset(seed=self.config.seed + self.num_steps)
        self._start_episodes()
