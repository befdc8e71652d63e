"""Asynchronous advantage actor-critic, A3C (Mnih et al. 2016, arXiv:1602.01783, Algorithm S3).

A global actor-critic and a shared optimizer live in shared memory. Each of `workers` processes
owns a local copy of the model and its own environment (seeded with seed + rank), and repeats:

    sync the local model from the global one
    roll out up to n_steps (t_max) steps, or to the end of the episode
    R = 0 if the episode terminated, else V(last observation)     (truncation: bootstrap too)
    for t = T-1 .. 0:  R = r_t + gamma * R,  A_t = R - V(s_t)
    loss = -mean(log pi(a_t|s_t) A_t) + vf_coef * mean((R_t - V(s_t))^2) - ent_coef * mean(H[pi(.|s_t)])
    zero the local gradients, backpropagate, clip their norm, hand them to the global
    parameters and step the shared optimizer (no lock: "Hogwild", Sec. 4)

until the global step counter reaches the budget. A worker claims its rollout's steps
from the counter under a lock before the rollout (and gives back those an episode's end left
unused), so the budget is exact without a lock per step.

With n_envs > 1 (not in the paper; 1 is the default) a worker steps n_envs environments in
lockstep: a rollout is up to n_steps steps of each, and stops at the step where any of their
episodes ends, so each environment's segment still lies inside one episode and bootstraps as
above; the loss averages over all n_envs * T steps, and there is still one gradient push per
rollout. The per-update cost (sync, backward pass, optimizer step) is then shared by n_envs
times as many steps.

The per-step and per-update paths are kept lean (`benchmarks/a3c_scaling.py`): the global
parameters and each worker's local copy and gradients are each one flat tensor
(`flatten_parameters`), so a sync is one copy, the gradient hand-over is one clip and one
assignment, and the shared optimizer steps one tensor; acting samples without
`torch.distributions` objects and without autograd.

The parent process trains through the run loop (`acrl.core.loop`) like every agent:
its iteration waits for the next `log_freq` steps and gathers the workers' statistics, and the
loop evaluates a frozen copy of the global model (`snapshot`), logs, keeps the best checkpoint
and writes the learning curve. The workers run inside `training()`, which joins them with a
timeout; Ctrl-C or SIGTERM, a worker that raises and a worker killed by the OS all stop the
run with a final checkpoint and no orphaned process (docs/correctness.md item 7).

Only the workers take locks (the step counter's and the normalizer statistics'): the parent
never waits on one, so a worker killed while holding a lock cannot hang it, and after a
failure the parent terminates any worker left waiting.
"""

from __future__ import annotations

import contextlib
import copy
import multiprocessing.connection
import os
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.multiprocessing as mp
from torch import nn
from torch.distributions import Categorical, Distribution, Normal

from acrl.algos.base import Agent
from acrl.core.config import RunConfig, in_unit_interval, positive
from acrl.core.envs import ActionAdapter, EnvSpec, LeanSyncVectorEnv, make_vec_env
from acrl.core.errors import InputError, TrainingError
from acrl.parts.nets import (
    ACTIVATIONS,
    CategoricalActor,
    GaussianActor,
    ValueNet,
    forward_chain,
    gumbel_max,
    layer_chain,
    mlp,
)
from acrl.parts.normalization import IdentityNormalizer, ObservationNormalizer
from acrl.parts.optim import (
    SharedAdam,
    SharedRMSprop,
    anneal_learning_rate,
    flatten_parameters,
)
from acrl.parts.returns import segment_advantages
from acrl.parts.stats import EpisodeStats

EPISODE_WINDOW = 100
"""Episodes per worker kept in shared memory for `rollout/ep_return_mean`."""
UPDATE_STATS = ("policy_loss", "value_loss", "entropy", "grad_norm")
"""Per-update statistics each worker accumulates in shared memory (then the update count)."""
JOIN_TIMEOUT_S = 5.0
"""How long the parent waits for workers to stop by themselves before terminating them."""


def default_workers() -> int:
    """The number of CPU cores this process may run on (the default of `A3CConfig.workers`)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_start_method() -> str:
    """"fork" on Linux (fast start, nothing pickled), else "spawn"."""
    return "fork" if sys.platform.startswith("linux") else "spawn"


@dataclass
class A3CConfig(RunConfig):
    """A3C hyperparameters. Defaults: Mnih et al. 2016 (t_max 5, shared RMSProp, entropy 0.01)
    with the optimizer settings of OpenAI Baselines / Stable-Baselines3 A2C (lr 7e-4, alpha 0.99,
    eps 1e-5, gradient norm 0.5) and their 64-64 tanh networks.

    Attributes:
        workers: worker processes, each with its own environments (default: the number of cores).
        n_envs: environments each worker steps in lockstep (1, the default, is the paper's A3C);
            env i of worker r is seeded with seed + r * n_envs + i. The budget is claimed in
            whole rows of n_envs steps, so a run may end up to n_envs - 1 steps past total_steps.
        n_steps: t_max, steps per rollout (of each environment); a rollout also stops at the
            end of an episode (of any of the worker's environments).
        gamma: discount.
        gae_lambda: lambda of the advantages and value targets, GAE(lambda) over each rollout
            (Schulman et al. 2016); 1 (the default): the paper's n-step returns R_t and
            advantages R_t - V(s_t).
        learning_rate: step size of the shared optimizer; anneal_lr: decay it linearly to 0.
        optimizer: "rmsprop" (shared RMSProp, as in the paper) or "adam" (shared Adam).
        rmsprop_alpha: decay of RMSProp's squared-gradient average.
        optimizer_eps: the optimizer's epsilon (torch's form, outside the square root).
        ent_coef: entropy bonus weight (beta); vf_coef: value loss weight.
        max_grad_norm: clip each worker's gradient norm to this before the hand-over (None: no
            clipping, as in the design documents' code).
        reward_scale: rewards are multiplied by this before computing returns (logged episode
            returns stay unscaled); keeps value targets near 1 for large rewards (Pendulum).
        hidden_sizes: hidden layers of the actor, or of the shared trunk when shared_trunk.
        critic_hidden_sizes: hidden layers of the critic (None: hidden_sizes); unused with a
            shared trunk.
        activation: "tanh" or "relu".
        shared_trunk: one network with a policy head and a value head (as in the paper's
            Atari nets) instead of separate actor and critic networks.
        log_std_init: initial log-std of the Gaussian policy; log_std_min: its floor.
        normalize_obs: running observation normalization, statistics shared by all workers;
            obs_clip: bound after normalizing.
        start_method: "fork" (default on Linux) or "spawn" (also "forkserver" where available).
        log_freq: write a metrics row every this many global steps.
    """

    workers: int = field(default_factory=default_workers)
    n_steps: int = 5
    gamma: float = 0.99
    gae_lambda: float = 1.0
    learning_rate: float = 7e-4
    anneal_lr: bool = False
    optimizer: str = "rmsprop"
    rmsprop_alpha: float = 0.99
    optimizer_eps: float = 1e-5
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float | None = 0.5
    reward_scale: float = 1.0
    hidden_sizes: tuple[int, ...] = (64, 64)
    critic_hidden_sizes: tuple[int, ...] | None = None
    activation: str = "tanh"
    shared_trunk: bool = False
    log_std_init: float = 0.0
    log_std_min: float = -5.0
    normalize_obs: bool = False
    obs_clip: float = 10.0
    start_method: str = field(default_factory=default_start_method)
    log_freq: int = 1000

    def validate(self) -> None:
        """Raise `InputError` for values A3C cannot run with (see the attribute list)."""
        super().validate()
        positive(self, "workers", "n_steps", "learning_rate", "max_grad_norm", "reward_scale", "obs_clip",
                 "log_freq")
        in_unit_interval(self, "gamma", "gae_lambda")
        if self.optimizer not in ("rmsprop", "adam"):
            raise InputError(f"optimizer must be 'rmsprop' or 'adam', got {self.optimizer!r}.")
        if not 0 <= self.rmsprop_alpha < 1 or self.optimizer_eps < 0:
            raise InputError("rmsprop_alpha must lie in [0, 1) and optimizer_eps must be >= 0.")
        if self.ent_coef < 0 or self.vf_coef < 0:
            raise InputError("ent_coef and vf_coef must be >= 0.")
        if self.activation not in ACTIVATIONS:
            raise InputError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {self.activation!r}.")
        for name in ("hidden_sizes", "critic_hidden_sizes"):
            sizes = getattr(self, name)
            if sizes is not None and (not sizes or any(h <= 0 for h in sizes)):
                raise InputError(f"{name} must be a non-empty list of positive widths, got {sizes}.")
        methods = mp.get_all_start_methods()
        if self.start_method not in methods:
            raise InputError(f"start_method must be one of {', '.join(methods)} here, got {self.start_method!r}.")


# ------------------------------------------------------------------------------------ model
class ActorCritic(nn.Module):
    """pi(a|s) and V(s) for A3C: separate actor and critic nets, or one trunk with two heads.

    Discrete actions: a Categorical over logits. Box actions: a diagonal Gaussian with a
    state-independent log-std, std = exp(clamp(log_std, log_std_min, 2)) > 0 (docs/correctness.md item 4),
    in the policy's units ([-1, 1] per bounded dimension; `ActionAdapter` maps to the Box).
    Mnih et al. 2016, Sec. 5.2 and 9 (Supplementary), use one trunk with a softmax and a linear
    value output; their continuous policy had a state-dependent softplus variance.

    Args:
        obs_dim: observation size; act_dim: number of discrete actions or action dimensions.
        discrete: Categorical (True) or Gaussian (False) policy.
        hidden_sizes / critic_hidden_sizes / activation / shared_trunk / log_std_init /
            log_std_min: see `A3CConfig`.
    """

    def __init__(self, obs_dim: int, act_dim: int, discrete: bool, hidden_sizes: tuple[int, ...] = (64, 64),
                 critic_hidden_sizes: tuple[int, ...] | None = None, activation: str = "tanh",
                 shared_trunk: bool = False, log_std_init: float = 0.0, log_std_min: float = -5.0):
        super().__init__()
        self.discrete, self.shared_trunk = discrete, shared_trunk
        self.log_std_min, self.log_std_max = log_std_min, 2.0
        if shared_trunk:
            width = hidden_sizes[-1]
            self.trunk = nn.Sequential(mlp(obs_dim, hidden_sizes[:-1], width, activation, output_gain=2**0.5),
                                       ACTIVATIONS[activation]())
            self.policy_head = mlp(width, (), act_dim, output_gain=0.01)
            self.value_head = mlp(width, (), 1, output_gain=1.0)
            if not discrete:
                self.log_std = nn.Parameter(torch.full((act_dim,), float(log_std_init)))
        else:
            self.actor: nn.Module = (CategoricalActor(obs_dim, act_dim, hidden_sizes, activation) if discrete else
                                     GaussianActor(obs_dim, act_dim, hidden_sizes, activation, log_std_init,
                                                   log_std_min))
            self.critic = ValueNet(obs_dim, critic_hidden_sizes or hidden_sizes, activation)
        self.policy_chain = layer_chain(self.trunk, self.policy_head) if shared_trunk else self.actor.chain

    def distribution(self, obs: torch.Tensor) -> Distribution:
        """The policy at obs (B, obs_dim): Categorical or Normal with batch shape (B, act_dim)."""
        if not self.shared_trunk:
            return self.actor.distribution(obs)
        return self._head_distribution(self.trunk(obs))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """V(s): obs (B, obs_dim) float32 -> (B,) float32."""
        if not self.shared_trunk:
            return self.critic(obs)
        return self.value_head(self.trunk(obs)).squeeze(-1)

    def _head_distribution(self, features: torch.Tensor) -> Distribution:
        out = self.policy_head(features)
        if self.discrete:
            return Categorical(logits=out, validate_args=False)
        std = self.log_std.clamp(self.log_std_min, self.log_std_max).exp().expand_as(out)
        return Normal(out, std, validate_args=False)

    def sample(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        """Raw actions for obs (B, obs_dim): (B,) int64 (mode if deterministic) or (B, act_dim) (mean).

        Samples from `distribution(obs)` without building a `torch.distributions` object and
        without module calls (the policy's `layer_chain`): this runs once per environment step
        in every worker, where those cost more than the network's arithmetic. Discrete actions
        are drawn by `gumbel_max`; no log-probability is computed (the loss recomputes it).
        """
        out = forward_chain(self.policy_chain, obs)
        if self.discrete:
            return out.argmax(-1) if deterministic else gumbel_max(out)
        if deterministic:
            return out
        log_std = self.log_std if self.shared_trunk else self.actor.log_std
        return out + log_std.clamp(self.log_std_min, self.log_std_max).exp() * torch.randn_like(out)

    def evaluate_actions(self, obs: torch.Tensor,
                         actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """log pi(a|s) (B,), entropy of pi(.|s) (B,) (both summed over action dims) and V(s) (B,).

        obs (B, obs_dim) float32; actions (B,) int64 or (B, act_dim) float32 raw samples.
        One pass through the shared trunk when there is one; differentiable.
        """
        if not self.shared_trunk:
            log_probs, entropy = self.actor.log_prob_entropy(obs, actions)
            return log_probs, entropy, self.critic(obs)
        features = self.trunk(obs)
        dist = self._head_distribution(features)
        if self.discrete:
            log_probs, entropy = dist.log_prob(actions.long()), dist.entropy()
        else:
            log_probs, entropy = dist.log_prob(actions).sum(-1), dist.entropy().sum(-1)
        return log_probs, entropy, self.value_head(features).squeeze(-1)


# ------------------------------------------------------------------------------------ one worker's pieces
@dataclass
class Rollout:
    """One worker's segment of T <= n_steps steps of each of its N environments, inside one episode each.

    Attributes:
        observations: (T, N, obs_dim) float32, as the policy saw them (normalized if enabled).
        raw_observations: (T * N, obs_dim) float64 numpy, for the normalizer's statistics.
        actions: (T, N) int64 or (T, N, act_dim) float32 raw policy actions (before clipping).
        rewards: (T, N) float32.
        terminated / truncated: (N,) bool: how each environment's segment ended; both False
            where it stopped mid-episode.
        last_obs: (N, obs_dim): the observation after the last step (the episode's final one
            where it ended): what a truncated or unfinished segment bootstraps from.
        next_obs: (N, obs_dim): where the next rollout starts (a new episode's first
            observation where one ended).
        episode_returns / episode_lengths: (E,) float64 / int64, the undiscounted returns and
            lengths of the E episodes that ended at the last step.
    """

    observations: torch.Tensor
    raw_observations: np.ndarray
    actions: torch.Tensor
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    last_obs: np.ndarray
    next_obs: np.ndarray
    episode_returns: np.ndarray
    episode_lengths: np.ndarray

    def __len__(self) -> int:
        """T, the steps per environment (the rollout holds T * N transitions)."""
        return len(self.rewards)


def make_worker_envs(env: EnvSpec | gym.envs.registration.EnvSpec, seed: int, rank: int,
                     n_envs: int = 1) -> tuple[LeanSyncVectorEnv, np.ndarray]:
    """Build worker `rank`'s n_envs environments; env i is seeded with seed + rank * n_envs + i
    (docs/correctness.md items 7 and 10).

    Args:
        env: an id, env, factory, or a Gymnasium `EnvSpec` (what the parent sends, so that a
            custom env registered by an importable module also works under "spawn").
    Returns:
        (envs, first observations (n_envs, obs_dim)): `make_vec_env`'s `LeanSyncVectorEnv`
        (same-step autoreset; a NaN/inf observation or reward raises TrainingError naming env
        rank * n_envs + i), reset with those seeds, each action space seeded with its env's seed.
    """
    first = rank * n_envs
    envs = make_vec_env(env, n_envs, first_index=first)
    obs, _ = envs.reset(seed=seed + first)
    for i, sub in enumerate(envs.envs):
        sub.action_space.seed(seed + first + i)
    return envs, obs


def collect_rollout(envs: LeanSyncVectorEnv, model: ActorCritic, obs: np.ndarray, n_steps: int,
                    adapter: ActionAdapter, normalizer: ObservationNormalizer | IdentityNormalizer) -> Rollout:
    """Act with `model` from `obs` for n_steps steps (>= 1), or fewer when an episode ends.

    Args:
        envs: the worker's N environments (`make_worker_envs`), currently at observations
            `obs` (N, obs_dim).
        model: the worker's local model (sampled without gradients).
        n_steps: t_max, or the part of the global budget the worker claimed if smaller.
        adapter: maps raw actions to the env's units; the raw sample is what is stored.
        normalizer: normalizes observations (statistics not updated here; the identity without normalize_obs).
    Returns:
        the `Rollout`, 1 to n_steps steps long: it stops after the first step in which any
        environment's episode ended (terminated or truncated).
    """
    observations, raw, actions, rewards = [], [], [], []
    with torch.no_grad():
        for _ in range(n_steps):
            x = normalizer(obs)
            action = model.sample(x)
            observations.append(x)
            raw.append(obs)
            actions.append(action)
            obs, reward, terminated, truncated, info = envs.step(adapter.to_env(action.numpy()))
            rewards.append(reward)
            if info:  # LeanSyncVectorEnv's info is empty unless an episode ended in this step
                break
    last_obs, returns, lengths = obs, np.zeros(0), np.zeros(0, dtype=np.int64)
    if info:
        ended = info["_final_obs"]
        last_obs = obs.copy()
        last_obs[ended] = np.stack(info["final_obs"][ended])
        returns, lengths = info["episode"]["r"][ended], info["episode"]["l"][ended]
    return Rollout(
        observations=torch.stack(observations),
        raw_observations=np.asarray(raw, dtype=np.float64).reshape(-1, obs.shape[-1]),
        actions=torch.stack(actions),
        rewards=np.asarray(rewards, dtype=np.float32),
        terminated=terminated, truncated=truncated, last_obs=last_obs, next_obs=obs,
        episode_returns=returns, episode_lengths=lengths)


def bootstrap_value(rollout: Rollout, model: ActorCritic,
                    normalizer: ObservationNormalizer | IdentityNormalizer) -> np.ndarray:
    """The value after each environment's last step, (N,) float32: 0 where its episode
    terminated, else V(last obs).

    A time-limit truncation and a rollout stopped mid-episode both had a future that the
    rollout did not see, so both bootstrap (Pardo et al. 2018; docs/correctness.md item 1).
    """
    if rollout.terminated.all():
        return np.zeros(len(rollout.terminated), dtype=np.float32)
    with torch.no_grad():
        values = model.value(normalizer(rollout.last_obs)).numpy()
    return np.where(rollout.terminated, np.float32(0.0), values)


def a3c_loss(model: ActorCritic, rollout: Rollout, rewards: np.ndarray, bootstrap: np.ndarray, config: A3CConfig,
             ) -> tuple[torch.Tensor, dict[str, float]]:
    """The actor-critic loss of Algorithm S3 on one rollout (means over its T * N steps).

    loss = -mean(log pi(a_t|s_t) * A_t) + vf_coef * mean((R_t - V(s_t))^2) - ent_coef * mean(H_t),
    with A_t and the targets R_t from `segment_advantages` on V(s_t) held constant: with
    gae_lambda = 1, R_t are the n-step returns and A_t = R_t - V(s_t) (Mnih et al. 2016,
    Sec. 4, Eq. for the A3C gradient, and the entropy regularization of Williams & Peng 1991).

    Args:
        rewards: (T, N) float32, the rollout's rewards as learned from (scaled by reward_scale).
        bootstrap: (N,) float32, the value after each environment's last step (`bootstrap_value`).
        config: gamma, gae_lambda, ent_coef and vf_coef.
    Returns:
        (scalar loss with gradients to `model`, {"policy_loss", "value_loss", "entropy"}).
    """
    log_probs, entropy, values = model.evaluate_actions(rollout.observations.flatten(0, 1),
                                                        rollout.actions.flatten(0, 1))
    advantages, targets = segment_advantages(rewards, values.detach().numpy().reshape(rewards.shape), bootstrap,
                                             config.gamma, config.gae_lambda)
    policy_loss = -(log_probs * torch.from_numpy(advantages).flatten()).mean()
    value_loss = (torch.from_numpy(targets).flatten() - values).square().mean()
    entropy_mean = entropy.mean()
    loss = policy_loss + config.vf_coef * value_loss - config.ent_coef * entropy_mean
    return loss, {"policy_loss": policy_loss.item(), "value_loss": value_loss.item(), "entropy": entropy_mean.item()}


def sync_parameters(local: torch.Tensor, global_parameters: torch.Tensor) -> None:
    """Copy the global parameters into the worker's local model (Algorithm S3: "synchronize
    thread-specific parameters theta' = theta"): one in-place copy between the two flat
    parameter tensors (P,) of `flatten_parameters`."""
    local.copy_(global_parameters)


def apply_gradients(local: torch.Tensor, optimizer: torch.optim.Optimizer, loss: torch.Tensor,
                    max_grad_norm: float | None) -> float:
    """Backpropagate `loss` into the worker's flat gradient and step the shared optimizer with it.

    The local gradient buffer is zeroed before the backward pass, so the global parameters
    receive exactly this update's gradient, never a sum with earlier ones (the bug of handing
    a gradient over once by aliasing, then accumulating). The hand-over is an assignment: the
    global flat tensor's `.grad` (private to this process) is the local buffer during the
    step and None after it.

    Args:
        local: the worker's flat parameter tensor (P,) from `flatten_parameters(model,
            gradients=True)`; `loss` depends on it through the model's parameter views.
        optimizer: the shared optimizer over the global flat parameter tensor (P,).
        max_grad_norm: the gradient's L2 norm is clipped to this first, by torch's rule
            g * min(1, max_norm / (norm + 1e-6)) (None: not clipped; Pascanu et al. 2013).
    Returns:
        the gradient norm before clipping.
    """
    gradient = local.grad
    gradient.zero_()
    loss.backward()
    norm = torch.linalg.vector_norm(gradient)
    if max_grad_norm is not None:
        gradient.mul_((max_grad_norm / (norm + 1e-6)).clamp(max=1.0))
    (global_parameters,) = optimizer.param_groups[0]["params"]
    global_parameters.grad = gradient
    optimizer.step()
    global_parameters.grad = None
    return float(norm)


# ------------------------------------------------------------------------------------ the worker process
@dataclass
class SharedState:
    """What the parent and the workers share. Everything is in shared memory.

    Attributes:
        model / parameters / optimizer: the global model, its parameters as one flat tensor
            (P,) float32 (the model's parameters are views of it), and the shared optimizer
            over that tensor.
        normalizer: the observation normalizer (statistics shared with `normalize_obs`, else
            the identity), and `normalizer_lock` for its updates.
        steps: global step counter (ctypes int64): steps taken or claimed by a running
            rollout; `step_lock` guards its changes.
        stop: set to 1 by the parent to make the workers stop after their current rollout.
        episode_returns / episode_lengths: (workers, EPISODE_WINDOW) float64 ring buffers;
            episode_counts: (workers,) int64 episodes finished per worker.
        update_stats: (workers, len(UPDATE_STATS) + 1) float64 running sums of the update
            statistics, then the number of updates.
    Each worker writes only its own row, so the parent reads them without locks.
    """

    model: ActorCritic
    parameters: torch.Tensor
    optimizer: torch.optim.Optimizer
    normalizer: ObservationNormalizer | IdentityNormalizer
    normalizer_lock: Any
    steps: Any
    step_lock: Any
    stop: Any
    episode_returns: torch.Tensor
    episode_lengths: torch.Tensor
    episode_counts: torch.Tensor
    update_stats: torch.Tensor


def claim_steps(shared: SharedState, total_steps: int, n_steps: int, n_envs: int = 1) -> int:
    """Claim up to n_steps rows of n_envs steps of the global budget under the lock.

    Returns the rows granted, min(n_steps, ceil(steps left / n_envs)), and adds rows * n_envs
    to the counter (so the last claim may pass the budget by up to n_envs - 1 steps); 0 when
    the budget is spent or the parent said stop.
    """
    if shared.stop.value:
        return 0
    with shared.step_lock:
        granted = min(n_steps, -(-(total_steps - shared.steps.value) // n_envs))
        if granted <= 0:
            return 0
        shared.steps.value += granted * n_envs
        return granted


def return_steps(shared: SharedState, steps: int) -> None:
    """Give back `steps` claimed steps that a rollout did not take (an episode ended first)."""
    if steps:
        with shared.step_lock:
            shared.steps.value -= steps


def worker_main(rank: int, config: A3CConfig, env: Any, start_step: int, total_steps: int, shared: SharedState,
                error_pipe: Any, parent_pid: int) -> None:
    """Entry point of worker process `rank`: run `run_worker`; on an exception send the
    traceback to the parent through `error_pipe` and exit with code 1.

    Ctrl-C is ignored here (the parent coordinates the stop); SIGTERM keeps its default.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        run_worker(rank, config, env, start_step, total_steps, shared, parent_pid)
    except Exception:
        error_pipe.send(traceback.format_exc()[-30_000:])  # stays below the pipe's buffer
        error_pipe.close()
        sys.exit(1)


def run_worker(rank: int, config: A3CConfig, env: Any, start_step: int, total_steps: int, shared: SharedState,
               parent_pid: int) -> None:
    """The worker loop of Algorithm S3 until the global budget is spent or the parent says stop.

    Args:
        rank: worker index in [0, workers); with seed = config.seed + start_step, its envs
            are seeded as `make_worker_envs` says and torch/numpy with seed + rank.
        env: what `make_worker_envs` accepts.
        start_step: the global step at which this learn() started (0 for a new run, so a
            resumed run sees new episodes).
        total_steps: the global step budget.
        shared: the `SharedState` built by the parent.
        parent_pid: the worker returns if its parent has gone (no orphan keeps training).
    Raises:
        TrainingError: a non-finite loss.
    """
    torch.set_num_threads(1)
    seed = config.seed + start_step
    torch.manual_seed(seed + rank)
    np.random.seed((seed + rank) % 2**32)
    envs, obs = make_worker_envs(env, seed, rank, config.n_envs)
    adapter = ActionAdapter(envs.single_action_space)
    local = copy.deepcopy(shared.model)  # private memory: deepcopy does not keep the sharing
    local_parameters = flatten_parameters(local, gradients=True)
    normalizer = shared.normalizer
    while os.getppid() == parent_pid:
        granted = claim_steps(shared, total_steps, config.n_steps, config.n_envs)
        if granted == 0:
            break
        sync_parameters(local_parameters, shared.parameters)
        rollout = collect_rollout(envs, local, obs, granted, adapter, normalizer)
        return_steps(shared, (granted - len(rollout)) * config.n_envs)
        if shared.stop.value:
            break
        if config.normalize_obs:
            with shared.normalizer_lock:
                normalizer.stats.update(rollout.raw_observations)
        loss, stats = a3c_loss(local, rollout, rollout.rewards * config.reward_scale,
                               bootstrap_value(rollout, local, normalizer), config)
        if not torch.isfinite(loss):
            raise TrainingError(f"worker {rank}, global step {shared.steps.value}: the loss is {loss.item()} "
                                f"({stats}).")
        if config.anneal_lr:
            anneal_learning_rate(shared.optimizer, config.learning_rate, shared.steps.value, total_steps)
        stats["grad_norm"] = apply_gradients(local_parameters, shared.optimizer, loss, config.max_grad_norm)
        row = shared.update_stats[rank]
        row[:-1] += torch.tensor([stats[k] for k in UPDATE_STATS], dtype=torch.float64)
        row[-1] += 1
        for episode_return, episode_length in zip(rollout.episode_returns.tolist(),
                                                  rollout.episode_lengths.tolist()):
            slot = int(shared.episode_counts[rank]) % EPISODE_WINDOW
            shared.episode_returns[rank, slot] = episode_return
            shared.episode_lengths[rank, slot] = episode_length
            shared.episode_counts[rank] += 1
        obs = rollout.next_obs
    envs.close()


# ------------------------------------------------------------------------------------ the agent (parent)
class A3C(Agent):
    """A3C agent: `A3C(env="CartPole-v1", workers=2, seed=0).learn(total_steps)`.

    Training runs in `workers` processes (start method `config.start_method`) while the run
    loop holds `training()`; the parent's `iteration` waits for the next `log_freq` global
    steps and reports the workers' statistics. `predict`, `evaluate`, `save`, `load` and
    `state_dict` are the `Agent` ones: a checkpoint holds the global model, the shared
    optimizer's state (step counts included), the observation statistics and the counters, and
    `acrl resume` continues from it.

    Raises:
        InputError: see `Agent` and `A3CConfig.validate`; all before any worker starts.
        TrainingError (from `learn`): a worker raised (its traceback is in the message), was
            killed, or the parameters became non-finite.
    """

    algo = "a3c"
    config_class = A3CConfig
    config: A3CConfig
    cpu_only_reason = "its global model and optimizer live in shared CPU memory for the Hogwild workers"
    checkpoint_on_failure = True  # the global model is whole at any moment (Hogwild)

    def _build(self) -> None:
        cfg = self.config
        self.model = ActorCritic(self.obs_dim, self.act_dim, self.discrete, cfg.hidden_sizes, cfg.critic_hidden_sizes,
                                 cfg.activation, cfg.shared_trunk, cfg.log_std_init, cfg.log_std_min)
        self.parameters = flatten_parameters(self.model)
        self.model.share_memory()
        if cfg.optimizer == "adam":
            self.optimizer: torch.optim.Optimizer = SharedAdam([self.parameters], lr=cfg.learning_rate,
                                                               eps=cfg.optimizer_eps)
        else:
            self.optimizer = SharedRMSprop([self.parameters], lr=cfg.learning_rate, alpha=cfg.rmsprop_alpha,
                                           eps=cfg.optimizer_eps)
        self.nets = {"model": self.model}
        self.optimizers = {"optimizer": self.optimizer}
        if cfg.normalize_obs:
            self.obs_normalizer = ObservationNormalizer(self.obs_dim, cfg.obs_clip)
            self.obs_normalizer.stats.share_memory()
        self.episode_stats = EpisodeStats(EPISODE_WINDOW)
        self.updates = 0
        self._workers: list[Any] = []
        self._error_pipes: list[Any] = []

    def _policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        return self.model.sample(obs, deterministic)

    def snapshot(self) -> A3C:
        """A frozen copy of the agent (global model and normaliser deep-copied) for evaluation and
        best.pt: the workers keep updating the shared model meanwhile, and without the copy the
        weights scored and the weights saved would differ."""
        frozen = copy.copy(self)
        frozen.model = copy.deepcopy(self.model)
        frozen.obs_normalizer = copy.deepcopy(self.obs_normalizer)
        frozen.nets = {"model": frozen.model}
        return frozen

    def _extra_state(self) -> dict[str, Any]:
        return {**self.episode_stats.state_dict(), "updates": self.updates}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self.episode_stats.load_state_dict(state)
        self.updates = int(state["updates"])

    # -------------------------------------------------------------------------------- training
    @contextlib.contextmanager
    def training(self) -> Iterator[None]:
        """Start the workers (when there is budget left), and stop and join them on leaving, however
        the block ends; `num_steps` is then the global step counter's final value."""
        ctx = mp.get_context(self.config.start_method)
        self._shared = shared = self._shared_state(ctx)
        self._started = time.perf_counter()
        self._last_report = (self._started, self.num_steps)
        self._episodes_seen = [0] * self.config.workers
        self._stats_seen = torch.zeros_like(shared.update_stats)
        self._workers, self._error_pipes = [], []
        try:
            if self.num_steps < self.total_steps:
                for rank in range(self.config.workers):
                    reader, writer = ctx.Pipe(duplex=False)
                    process = ctx.Process(target=worker_main, name=f"acrl-a3c-worker-{rank}", daemon=True,
                                          args=(rank, self.config, self._env_for_workers(), self.num_steps,
                                                self.total_steps, shared, writer, os.getpid()))
                    process.start()
                    writer.close()
                    self._workers.append(process)
                    self._error_pipes.append(reader)
            yield
        finally:
            self._stop_workers()
            self.num_steps = int(shared.steps.value)
            for pipe in self._error_pipes:
                pipe.close()

    def iteration(self, max_steps: int) -> dict[str, float]:
        """Wait until the workers have taken min(log_freq, max_steps) more global steps (or, at the
        budget, have all exited), then report their statistics since the last call.

        Metrics: train/policy_loss, value_loss, entropy, grad_norm (means over the updates in
        between), rollout/ episode statistics, time/elapsed_s (wall seconds since the workers
        started) and time/fps: global steps per wall second since the previous call returned,
        evaluations included, because the workers keep stepping while the parent evaluates (the
        run loop's own rate, steps over the iteration's seconds, would count those steps in a
        wait of a few milliseconds).

        Raises:
            TrainingError: a worker raised (its traceback is in the message) or was killed.
        """
        shared, workers = self._shared, self._workers
        start = self.num_steps
        while True:
            self._check_workers()
            finished = all(w.exitcode == 0 for w in workers)
            self.num_steps = int(shared.steps.value)
            if finished or (self.num_steps - start >= min(self.config.log_freq, max_steps)
                            and self.num_steps < self.total_steps):
                break
            # 10 ms: the workers take a few hundred steps in it, so rows stay close to log_freq apart
            multiprocessing.connection.wait([w.sentinel for w in workers if w.exitcode is None], timeout=0.01)
        metrics: dict[str, float] = {}
        stats = shared.update_stats.clone()
        delta, self._stats_seen = stats - self._stats_seen, stats
        updates = delta[:, -1].sum().item()
        self.updates += int(updates)
        if updates:
            for i, key in enumerate(UPDATE_STATS):
                metrics[f"train/{key}"] = delta[:, i].sum().item() / updates
        self._read_episodes()
        metrics |= self.episode_stats.metrics()
        now = time.perf_counter()
        then, steps_then = self._last_report
        self._last_report = (now, self.num_steps)
        metrics["time/elapsed_s"] = now - self._started
        metrics["time/fps"] = (self.num_steps - steps_then) / max(now - then, 1e-9)
        return metrics

    def _env_for_workers(self) -> Any:
        """A picklable description of the env: a Gymnasium EnvSpec for ids and specced envs."""
        if isinstance(self.env, str):
            return gym.spec(self.env)
        if isinstance(self.env, gym.Env) and self.env.spec is not None:
            return self.env.spec
        return self.env

    def _shared_state(self, ctx: Any) -> SharedState:
        workers = self.config.workers
        steps = ctx.RawValue("q", self.num_steps)
        return SharedState(
            model=self.model, parameters=self.parameters, optimizer=self.optimizer, normalizer=self.obs_normalizer,
            normalizer_lock=ctx.Lock(), steps=steps, step_lock=ctx.Lock(), stop=ctx.RawValue("b", 0),
            episode_returns=torch.zeros((workers, EPISODE_WINDOW), dtype=torch.float64).share_memory_(),
            episode_lengths=torch.zeros((workers, EPISODE_WINDOW), dtype=torch.float64).share_memory_(),
            episode_counts=torch.zeros(workers, dtype=torch.int64).share_memory_(),
            update_stats=torch.zeros((workers, len(UPDATE_STATS) + 1), dtype=torch.float64).share_memory_())

    def _read_episodes(self) -> None:
        """Move episodes finished since the last call from the shared ring buffers to `episode_stats`."""
        shared, seen = self._shared, self._episodes_seen
        for rank, count in enumerate(shared.episode_counts.tolist()):
            slots = [i % EPISODE_WINDOW for i in range(max(seen[rank], count - EPISODE_WINDOW), count)]
            self.episode_stats.add(shared.episode_returns[rank, slots].tolist(),
                                   shared.episode_lengths[rank, slots].tolist())
            seen[rank] = count

    def _check_workers(self) -> None:
        for rank, worker in enumerate(self._workers):
            code = worker.exitcode
            if code is None or code == 0:
                continue
            report = _receive_traceback(self._error_pipes[rank])
            if report is not None:
                what = f"worker {rank} raised an exception:\n{report}"
            elif code < 0:
                what = f"worker {rank} (pid {worker.pid}) was killed by {signal.Signals(-code).name}."
            else:
                what = f"worker {rank} (pid {worker.pid}) exited with code {code}."
            raise TrainingError(f"global step {int(self._shared.steps.value)}: {what}\nThe run stopped (a run "
                                "directory keeps its final state in checkpoints/latest.pt).")

    def _stop_workers(self) -> None:
        """Ask the workers to stop, join them with a timeout, then terminate and kill stragglers."""
        self._shared.stop.value = 1
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        try:
            for worker in self._workers:
                worker.join(timeout=max(deadline - time.monotonic(), 0.0))
        finally:
            for escalate in ("terminate", "kill"):
                stragglers = [w for w in self._workers if w.is_alive()]
                for worker in stragglers:
                    getattr(worker, escalate)()
                for worker in stragglers:
                    worker.join(timeout=2.0)


def _receive_traceback(pipe: Any) -> str | None:
    """The traceback a failed worker sent, or None (a killed worker's pipe is just closed)."""
    try:
        return pipe.recv() if pipe.poll() else None
    except (EOFError, OSError):
        return None
