"""Asynchronous advantage actor-critic, A3C (Mnih et al. 2016, arXiv:1602.01783, Algorithm S3).

A global actor-critic and a shared optimizer live in shared memory. Each of `workers` processes
owns a local copy of the model and its own environment (seeded with seed + rank), and repeats:

    sync the local model from the global one
    roll out up to n_steps (t_max) steps, or to the end of the episode
    R = 0 if the episode terminated, else V(last observation)     (truncation: bootstrap too)
    for t = T-1 .. 0:  R = r_t + gamma * R,  A_t = R - V(s_t)
    loss = sum_t [-log pi(a_t|s_t) A_t + vf_coef (R_t - V(s_t))^2 - ent_coef H[pi(.|s_t)]] / t_max
    zero the local gradients, backpropagate, clip their norm, hand them to the global
    parameters and step the shared optimizer (no lock: "Hogwild", Sec. 4)

until the global step counter reaches the budget. A worker claims its rollout's steps
from the counter under a lock before the rollout, gives back those an episode's end left
unused and counts those it took, so the budget is exact without a lock per step
(`acrl.parts.workers.StepBudget`).

With n_envs > 1 (not in the paper; 1 is the default) a worker steps n_envs environments in
lockstep: a rollout is up to n_steps steps of each, and stops at the step where any of their
episodes ends, so each environment's segment still lies inside one episode and bootstraps as
above; the loss sums over the n_envs * T steps and divides by n_envs * t_max, and there is
still one gradient push per rollout. The per-update cost (sync, backward pass, optimizer step)
is then shared by n_envs times as many steps.

The per-step and per-update paths are kept lean (`benchmarks/a3c_scaling.py`): the global
parameters and each worker's local copy and gradients are each one flat tensor
(`flatten_parameters`), so a sync is one copy, the gradient hand-over is one clip and one
assignment, and the shared optimizer steps one tensor; acting samples without
`torch.distributions` objects and without autograd.

The parent process trains through the run loop (`acrl.core.loop`) like every agent: its
iteration waits for the workers' next `log_freq` steps and gathers their statistics, and the
loop evaluates a frozen copy of the global model (`snapshot`), logs, keeps the best checkpoint
and writes the learning curve. The processes themselves (start, supervision, tracebacks, the
stop on Ctrl-C or SIGTERM, on a worker that raised or was killed by the OS, joins with a
timeout, no orphans; docs/correctness.md item 7) are `acrl.parts.workers.WorkerPool`'s, held
by `training()`.
"""

from __future__ import annotations

import contextlib
import copy
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.multiprocessing as mp
from torch import nn
from torch.distributions import Distribution

from acrl.algos.base import Agent
from acrl.core.config import RunConfig, in_unit_interval, layer_widths, positive
from acrl.core.envs import ActionAdapter, LeanSyncVectorEnv
from acrl.core.errors import InputError, TrainingError
from acrl.parts.heads import policy_head
from acrl.parts.nets import ACTIVATIONS, ValueNet, output_layer
from acrl.parts.normalization import IdentityNormalizer, ObservationNormalizer
from acrl.parts.optim import (
    SharedAdam,
    SharedRMSprop,
    anneal_learning_rate,
    flatten_parameters,
)
from acrl.parts.returns import segment_advantages
from acrl.parts.stats import EpisodeStats
from acrl.parts.workers import (
    StepBudget,
    WorkerPool,
    WorkerStats,
    apply_gradients,
    default_start_method,
    default_workers,
    make_worker_envs,
    picklable_env,
    sync_parameters,
)

EPISODE_WINDOW = 100
"""Episodes per worker kept in shared memory for `rollout/ep_return_mean`."""
UPDATE_STATS = ("policy_loss", "value_loss", "entropy", "grad_norm")
"""Per-update statistics each worker reports (`WorkerStats`)."""


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
        layer_widths(self, "hidden_sizes", "critic_hidden_sizes")
        methods = mp.get_all_start_methods()
        if self.start_method not in methods:
            raise InputError(f"start_method must be one of {', '.join(methods)} here, got {self.start_method!r}.")


# ------------------------------------------------------------------------------------ model
class ActorCritic(nn.Module):
    """pi(a|s) and V(s) for A3C: separate actor and critic nets, or one trunk with two heads.

    The policy is `acrl.parts.heads.policy_head`'s: an MLP encoder and a Categorical head
    (Discrete actions) or a diagonal Gaussian head with a state-independent log-std (Box
    actions; std = exp of the log-std bounded to [log_std_min, 2], > 0, docs/correctness.md
    item 4), in the policy's units ([-1, 1] per bounded dimension; `ActionAdapter` maps to the
    Box). With a shared trunk the policy's encoder is the trunk and the value is one linear
    layer on its features (`value_head`); otherwise the critic is a `ValueNet` of its own.
    Mnih et al. 2016, Sec. 5.2 and 9 (Supplementary), use one trunk with a softmax and a linear
    value output; their continuous policy had a state-dependent softplus variance.

    Parameters come in the order of the flat layout of earlier checkpoints (the policy's
    log-std, its encoder, its output layer, then the value's), and state dicts with the keys of
    before the heads (`trunk.*`, `policy_head.*`, `value_head.0.*`, `log_std`) load.

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
        self.actor = policy_head(discrete, obs_dim, act_dim, hidden_sizes, activation, log_std_init, log_std_min)
        if shared_trunk:
            self.value_head = output_layer(hidden_sizes[-1], 1, 1.0)
        else:
            self.critic = ValueNet(obs_dim, critic_hidden_sizes or hidden_sizes, activation)
        self.register_load_state_dict_pre_hook(_rename_shared_trunk_keys)

    def distribution(self, obs: torch.Tensor) -> Distribution:
        """The policy at obs (B, obs_dim): Categorical or Normal with batch shape (B, act_dim)."""
        return self.actor.distribution(self.actor.encoder(obs))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """V(s): obs (B, obs_dim) float32 -> (B,) float32."""
        if not self.shared_trunk:
            return self.critic(obs)
        return self.value_head(self.actor.encoder(obs)).squeeze(-1)

    def sample(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        """Raw actions for obs (B, obs_dim): (B,) int64 (mode if deterministic) or (B, act_dim) (mean).

        The head's acting path (no `torch.distributions` object, no module calls, no autograd):
        this runs once per environment step in every worker. No log-probability is computed
        (the loss recomputes it).
        """
        return self.actor.sample(obs, deterministic, with_log_prob=False)[0]

    def evaluate_actions(self, obs: torch.Tensor,
                         actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """log pi(a|s) (B,), entropy of pi(.|s) (B,) (both summed over action dims) and V(s) (B,).

        obs (B, obs_dim) float32; actions (B,) int64 or (B, act_dim) float32 raw samples.
        One pass through the shared trunk when there is one; differentiable.
        """
        features = self.actor.encoder(obs)
        log_probs, entropy = self.actor.log_prob_entropy(features, actions)
        values = self.value_head(features).squeeze(-1) if self.shared_trunk else self.critic(obs)
        return log_probs, entropy, values


def _rename_shared_trunk_keys(module: nn.Module, state_dict: dict[str, Any], prefix: str, *args: Any) -> None:
    """State-dict pre-hook: the keys of a shared-trunk `ActorCritic` from before the heads, renamed
    in place (`trunk.0.*` -> `actor.encoder.*`, `policy_head.0.*` -> `actor.linear.*`,
    `value_head.0.*` -> `value_head.*`, `log_std` -> `actor.log_std`)."""
    renames = {"trunk.0.": "actor.encoder.", "policy_head.0.": "actor.linear.", "value_head.0.": "value_head.",
               "log_std": "actor.log_std"}
    for key in list(state_dict):
        for old, new in renames.items():
            if key.startswith(prefix + old):
                state_dict[prefix + new + key[len(prefix + old):]] = state_dict.pop(key)


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
    """The actor-critic loss of Algorithm S3 on one rollout of T <= t_max steps of N environments.

    loss = (1 / (t_max N)) sum_{t, i} [-log pi(a_t|s_t) A_t + vf_coef (R_t - V(s_t))^2 - ent_coef H(pi(.|s_t))],
    with A_t and the targets R_t from `segment_advantages` on V(s_t) held constant: with
    gae_lambda = 1, R_t are the n-step returns and A_t = R_t - V(s_t) (Mnih et al. 2016,
    Sec. 4, Eq. for the A3C gradient, and the entropy regularization of Williams & Peng 1991).

    The sum is divided by the fixed t_max N (config.n_steps * config.n_envs), not by the
    rollout's own T N: Algorithm S3 sums the gradients of a rollout's steps, so a rollout cut
    short by an episode's end must weigh each of its transitions as a full one does (a mean
    would weigh a 1-step rollout's transition t_max times as much); the constant keeps the
    learning-rate scale of a full rollout's mean, that of the tuned presets.

    Args:
        rewards: (T, N) float32, the rollout's rewards as learned from (scaled by reward_scale).
        bootstrap: (N,) float32, the value after each environment's last step (`bootstrap_value`).
        config: n_steps, gamma, gae_lambda, ent_coef and vf_coef.
    Returns:
        (scalar loss with gradients to `model`, {"policy_loss", "value_loss", "entropy"}: the
        three terms' means over the rollout's T N steps, unweighted).
    """
    log_probs, entropy, values = model.evaluate_actions(rollout.observations.flatten(0, 1),
                                                        rollout.actions.flatten(0, 1))
    advantages, targets = segment_advantages(rewards, values.detach().numpy().reshape(rewards.shape), bootstrap,
                                             config.gamma, config.gae_lambda)
    policy_loss = -(log_probs * torch.from_numpy(advantages).flatten()).mean()
    value_loss = (torch.from_numpy(targets).flatten() - values).square().mean()
    entropy_mean = entropy.mean()
    mean_loss = policy_loss + config.vf_coef * value_loss - config.ent_coef * entropy_mean
    loss = mean_loss * (len(rewards) / config.n_steps)  # the sum over the T N steps over t_max N
    return loss, {"policy_loss": policy_loss.item(), "value_loss": value_loss.item(), "entropy": entropy_mean.item()}


# ------------------------------------------------------------------------------------ the worker process
@dataclass
class SharedState:
    """The global model and what else the parent and the workers share, all in shared memory.

    Attributes:
        model / parameters / optimizer: the global model, its parameters as one flat tensor
            (P,) float32 (the model's parameters are views of it), and the shared optimizer
            over that tensor.
        normalizer: the observation normalizer (statistics shared with `normalize_obs`, else
            the identity), and `normalizer_lock` for its updates.
        stats: the workers' update statistics (`UPDATE_STATS`) and finished episodes.
    """

    model: ActorCritic
    parameters: torch.Tensor
    optimizer: torch.optim.Optimizer
    normalizer: ObservationNormalizer | IdentityNormalizer
    normalizer_lock: Any
    stats: WorkerStats


def run_worker(rank: int, budget: StepBudget, config: A3CConfig, env: Any, shared: SharedState) -> None:
    """The worker loop of Algorithm S3, until the global budget is spent or the parent says stop
    (`StepBudget.claim` grants nothing then); `WorkerPool` runs it in each worker process.

    Args:
        rank: worker index in [0, workers); with seed = config.seed + budget.start (a resumed
            run sees new episodes), its envs are seeded as `make_worker_envs` says and
            torch/numpy with seed + rank.
        budget: the global step budget (steps claimed before each rollout, the unused given
            back, the taken counted).
        env: what `make_worker_envs` accepts.
        shared: the `SharedState` built by the parent.
    Raises:
        TrainingError: a non-finite loss.
    """
    torch.set_num_threads(1)
    seed = config.seed + budget.start
    torch.manual_seed(seed + rank)
    np.random.seed((seed + rank) % 2**32)
    envs, obs = make_worker_envs(env, seed, rank, config.n_envs)
    adapter = ActionAdapter(envs.single_action_space)
    local = copy.deepcopy(shared.model)  # private memory: deepcopy does not keep the sharing
    local_parameters = flatten_parameters(local, gradients=True)
    normalizer = shared.normalizer
    while granted := budget.claim(config.n_steps, config.n_envs):
        sync_parameters(local_parameters, shared.parameters)
        rollout = collect_rollout(envs, local, obs, granted, adapter, normalizer)
        budget.release((granted - len(rollout)) * config.n_envs)
        budget.count_taken(rank, len(rollout) * config.n_envs)
        if budget.stopped.value:
            break
        if config.normalize_obs:
            with shared.normalizer_lock:
                normalizer.stats.update(rollout.raw_observations)
        loss, stats = a3c_loss(local, rollout, rollout.rewards * config.reward_scale,
                               bootstrap_value(rollout, local, normalizer), config)
        if not torch.isfinite(loss):
            raise TrainingError(f"worker {rank}, global step {budget.steps_taken()}: the loss is {loss.item()} "
                                f"({stats}).")
        if config.anneal_lr:
            anneal_learning_rate(shared.optimizer, config.learning_rate, budget.claimed.value, budget.total)
        stats["grad_norm"] = apply_gradients(local_parameters, shared.optimizer, loss, config.max_grad_norm)
        shared.stats.add_update(rank, stats)
        shared.stats.add_episodes(rank, rollout.episode_returns.tolist(), rollout.episode_lengths.tolist())
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
        the block ends; `num_steps` is then the steps they took, those taken while stopping included."""
        cfg = self.config
        ctx = mp.get_context(cfg.start_method)
        self._budget = StepBudget(ctx, cfg.workers, self.num_steps, self.total_steps, parent_pid=os.getpid())
        self._shared = SharedState(model=self.model, parameters=self.parameters, optimizer=self.optimizer,
                                   normalizer=self.obs_normalizer, normalizer_lock=ctx.Lock(),
                                   stats=WorkerStats(cfg.workers, UPDATE_STATS, EPISODE_WINDOW))
        self._pool = WorkerPool(ctx, self._budget, "acrl-a3c-worker")
        self._started = time.perf_counter()
        self._last_report = (self._started, self.num_steps)
        try:
            if self.num_steps < self.total_steps:
                self._pool.start(run_worker, cfg.workers, (cfg, picklable_env(self.env), self._shared))
            yield
        finally:
            self._pool.stop()
            self.num_steps = self._budget.steps_taken()

    def iteration(self, max_steps: int) -> dict[str, float]:
        """Wait until the workers have taken min(log_freq, max_steps) more global steps (at the
        budget: until they have all exited), then report their statistics since the last call.
        After `training()` has stopped them it returns at once, with what they did while stopping.

        Metrics: train/policy_loss, value_loss, entropy, grad_norm (means over the updates in
        between), rollout/ episode statistics, time/elapsed_s (wall seconds since the workers
        started) and time/fps: global steps taken (not claimed by a running rollout) per wall
        second since the previous call returned, evaluations included, because the workers keep
        stepping while the parent evaluates (the run loop's own rate, steps over the iteration's
        seconds, would count those steps in a wait of a few milliseconds).

        Raises:
            TrainingError: a worker raised (its traceback is in the message) or was killed.
        """
        self._pool.wait_for(self.num_steps + min(self.config.log_freq, max_steps))
        self.num_steps = self._budget.steps_taken()
        updates, means = self._shared.stats.read_updates()
        self.updates += updates
        metrics = {f"train/{key}": value for key, value in means.items()}
        self.episode_stats.add(*self._shared.stats.read_episodes())
        metrics |= self.episode_stats.metrics()
        now = time.perf_counter()
        then, steps_then = self._last_report
        self._last_report = (now, self.num_steps)
        metrics["time/elapsed_s"] = now - self._started
        metrics["time/fps"] = (self.num_steps - steps_then) / max(now - then, 1e-9)
        return metrics
