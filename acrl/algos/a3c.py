"""Asynchronous advantage actor-critic, A3C (Mnih et al. 2016, arXiv:1602.01783, Algorithm S3).

A global actor-critic and a shared optimizer live in shared memory. Each of `workers` processes
owns a local copy of the model and its own environment (seeded with seed + rank), and repeats
until the global step counter reaches the budget:

    sync the local model from the global one
    roll out up to n_steps (t_max) steps, or to the end of the episode
    R = 0 if the episode terminated, else V(last observation)     (truncation: bootstrap too)
    for t = T-1 .. 0:  R = r_t + gamma * R,  A_t = R - V(s_t)
    loss = sum_t [-log pi(a_t|s_t) A_t + vf_coef (R_t - V(s_t))^2 - ent_coef H[pi(.|s_t)]]  (/ t_max: "mean")
    zero the local gradients, backpropagate, clip their norm, hand them to the global
    parameters and step the shared optimizer (no lock: "Hogwild", Sec. 4)

A time-limit truncation bootstraps as a rollout cut mid-episode does: both have a future the
rollout did not see (`bootstrap_value`). Algorithm S3 accumulates the rollout's gradients, a sum
(`loss_reduction="sum"`); acrl's default divides that sum by the fixed t_max ("mean"), not by the
rollout's own length T, so a rollout cut short weighs each step as a full one does, at the
learning-rate scale of the optimizer settings tuned for A2C's mean (`a3c_loss`).
With n_envs > 1 (not in the paper; 1 is the default) a worker steps n_envs environments in
lockstep: a rollout stops at the step where any of their episodes ends, so each segment lies
inside one episode and bootstraps as above, and the loss sums over the n_envs * T steps and
divides by n_envs * t_max, one gradient push per rollout.

The parent trains through the run loop (`acrl.core.loop`) like every agent (`A3C.iteration`,
`A3C.snapshot`). The processes, the exact step budget, the workers' statistics, the flat-parameter
sync and gradient hand-over, and the stop on any failure or signal (docs/correctness.md item 7)
are `acrl.parts.workers`', held by `A3C.training`.

The model is the one actor-critic of `acrl.parts.actor_critic` (PPO's): pi(a|s) and V(s) from an encoder (an
MLP for vectors; for frames, e.g. MinAtar and Atari, a CNN: the A3C paper's own is `encoder="a3c"`, Sec. 8)
and a core, with a policy head and a value. Frames stay uint8 / bool in the rollouts and are scaled by the
network's first operation; their trunk is shared by the policy and the value, as in the paper's Atari nets,
and observation normalisation does not apply to them.

With `lstm_hidden_size` > 0 (the paper's A3C LSTM, Sec. 5.1 and 8: 256 LSTM cells after the final hidden
layer) the core is an LSTM that the policy and the value share, so one state per environment serves acting
and bootstrapping, and both losses train the memory. Whatever the core, each worker carries each of its
environments' state (empty without an LSTM) from step to step and across rollouts within an episode, and
resets it at every episode's first step, terminated or truncated (docs/correctness.md item 12); syncing the
weights from the global model leaves the state alone. A rollout keeps the state at its first step, before
that step's reset (`Rollout.initial_state`), and the state after its last step (`Rollout.final_state`,
before any reset): V(last observation), at a rollout cut or a truncation, is one more step from the
latter, and the next rollout of a continuing episode starts from it. The loss reruns the rollout's
T <= t_max steps from the former (`ActorCritic.evaluate`), so the gradients flow through the rollout's
steps and stop at its start: truncated backpropagation through time over t_max steps, as in the paper.
As a rollout stops where any of its environments' episodes ends, an episode can start only at a
rollout's first step.
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

from acrl.algos.base import ActorCriticAgent
from acrl.core.config import in_unit_interval, positive
from acrl.core.devices import precision_context
from acrl.core.envs import ActionAdapter, LeanSyncVectorEnv
from acrl.core.errors import InputError, TrainingError
from acrl.parts.actor_critic import ActorCritic, ActorCriticConfig, State
from acrl.parts.normalization import IdentityNormalizer, ObservationNormalizer
from acrl.parts.observations import make_normalizer
from acrl.parts.optim import SharedAdam, SharedRMSprop, anneal_learning_rate, flatten_parameters
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
UPDATE_STATS = ("policy_loss", "value_loss", "entropy", "lr", "grad_norm")
"""Per-update statistics each worker reports (`WorkerStats`)."""


@dataclass
class A3CConfig(ActorCriticConfig):
    """A3C hyperparameters. Defaults: Mnih et al. 2016 (t_max 5, shared RMSProp, entropy 0.01) with the
    optimizer settings and 64-64 tanh networks of OpenAI Baselines / Stable-Baselines3 A2C. The model's settings
    are `ActorCriticConfig`'s (with an LSTM, any n_envs: a state per environment).

    Attributes:
        workers: worker processes (default: the number of cores); start_method: "fork" (Linux's default),
            "spawn" or "forkserver".
        n_envs: environments each worker steps in lockstep (1: the paper's A3C), env i of worker r seeded
            with seed + r * n_envs + i; claimed in whole rows, a run may end n_envs - 1 steps past the budget.
        n_steps: t_max, steps per rollout of each environment (fewer when an episode ends).
        gamma: discount; gae_lambda: GAE(lambda) over each rollout (Schulman et al. 2016); 1: the
            paper's n-step returns R_t and advantages R_t - V(s_t).
        learning_rate / anneal_lr: the shared optimizer's step size, optionally decayed linearly to 0 over
            anneal_steps global steps (None: the run's total_steps; Mnih et al. annealed over their
            experiments' whole length whatever a run's own), after which it stays 0.
        optimizer: "rmsprop" (as in the paper) or "adam", both shared; rmsprop_alpha: RMSProp's decay;
            optimizer_eps: epsilon, outside the square root (torch's form) unless rmsprop_eps_inside
            (RMSProp only: the paper's Eq. S3, lr d / sqrt(g + eps)).
        ent_coef / vf_coef: weights of the entropy bonus (beta) and the value loss (R - V)^2.
        loss_reduction: "mean" (the rollout's sum of per-step losses over t_max * n_envs) or "sum"
            (Algorithm S3's accumulated gradients, as the reference implementations).
        max_grad_norm: each worker's gradient norm is clipped to this (None: not clipped).
        reward_scale: rewards are multiplied by this for the returns (logged returns are unscaled).
        normalize_obs / obs_clip: running observation normalization shared by all workers (None: from the
            observation space, on for vectors and off for image frames; true is refused for frames; a
            run's config.yaml records the value used), its bound.
        log_freq: a metrics row every this many global steps.
    """

    workers: int = field(default_factory=default_workers)
    n_steps: int = 5
    gamma: float = 0.99
    gae_lambda: float = 1.0
    learning_rate: float = 7e-4
    anneal_lr: bool = False
    anneal_steps: int | None = None
    optimizer: str = "rmsprop"
    rmsprop_alpha: float = 0.99
    optimizer_eps: float = 1e-5
    rmsprop_eps_inside: bool = False
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    loss_reduction: str = "mean"
    max_grad_norm: float | None = 0.5
    reward_scale: float = 1.0
    normalize_obs: bool | None = None
    obs_clip: float = 10.0
    start_method: str = field(default_factory=default_start_method)
    log_freq: int = 1000

    def validate(self) -> None:
        """Raise `InputError` for values A3C cannot run with (see the attribute list)."""
        super().validate()
        positive(
            self,
            *("workers", "n_steps", "learning_rate", "anneal_steps", "max_grad_norm", "reward_scale", "obs_clip"),
            "log_freq",
        )
        in_unit_interval(self, "gamma", "gae_lambda")
        if self.optimizer not in ("rmsprop", "adam"):
            raise InputError(f"optimizer must be 'rmsprop' or 'adam', got {self.optimizer!r}.")
        if self.rmsprop_eps_inside and self.optimizer != "rmsprop":
            raise InputError("rmsprop_eps_inside applies to optimizer 'rmsprop' only; set it false with 'adam'.")
        if self.loss_reduction not in ("mean", "sum"):
            raise InputError(f"loss_reduction must be 'mean' or 'sum', got {self.loss_reduction!r}.")
        if not 0 <= self.rmsprop_alpha < 1 or self.optimizer_eps < 0:
            raise InputError("rmsprop_alpha must lie in [0, 1) and optimizer_eps must be >= 0.")
        if self.ent_coef < 0 or self.vf_coef < 0:
            raise InputError("ent_coef and vf_coef must be >= 0.")
        methods = mp.get_all_start_methods()
        if self.start_method not in methods:
            raise InputError(f"start_method must be one of {', '.join(methods)} here, got {self.start_method!r}.")


# ------------------------------------------------------------------------------------ one worker's pieces
@dataclass
class Rollout:
    """One worker's segment of T <= n_steps steps of each of its N environments, inside one episode each.

    Attributes:
        observations: as the policy saw them, (T, N, obs_dim) float32 vectors or (T, N, *obs_shape) frames
            in the space's dtype (uint8 or bool: one byte a pixel, never a float copy);
            raw_observations: (T * N, obs_dim) float64 numpy for the normalizer's statistics, None
            without an `ObservationNormalizer` (no normalize_obs, and always for frames).
        actions: (T, N) int64 or (T, N, act_dim) float32 raw policy actions; rewards: (T, N) float32.
        terminated / truncated: (N,) bool, how each segment ended (both False: mid-episode).
        last_obs: (N, *obs_shape), the observation after the last step (an ended episode's final one),
            to bootstrap from; next_obs: (N, *obs_shape), where the next rollout starts.
        episode_returns / episode_lengths: (E,) float64 / int64, of the E episodes that ended (as the
            vector env reports them in `info["episode"]`, which may be fewer than the segments that
            ended: an Atari life loss terminates a segment, only a game's end is an episode).
        initial_state / final_state: the model's state (`acrl.parts.actor_critic.State`: with an LSTM
            (h, c), each (1, N, lstm_hidden_size) float32; () without) at the first step, before its reset,
            and after the last step, before any reset (the bootstrap's, and a continuing episode's next
            rollout's). Computed without gradients.
        episode_starts: (T, N) bool, the steps that begin an episode (the first step's only: the rollout
            stops where an episode ends).
    """

    observations: torch.Tensor
    raw_observations: np.ndarray | None
    actions: torch.Tensor
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    last_obs: np.ndarray
    next_obs: np.ndarray
    episode_returns: np.ndarray
    episode_lengths: np.ndarray
    initial_state: State
    episode_starts: torch.Tensor
    final_state: State

    def __len__(self) -> int:
        """T, the steps per environment (the rollout holds T * N transitions)."""
        return len(self.rewards)


def collect_rollout(
    envs: LeanSyncVectorEnv,
    model: ActorCritic,
    obs: np.ndarray,
    n_steps: int,
    adapter: ActionAdapter,
    normalizer: ObservationNormalizer | IdentityNormalizer,
    state: State,
    episode_start: torch.Tensor,
) -> Rollout:
    """Act with `model` (no gradients) from `obs` (N, *obs_shape) in the worker's N environments
    (`make_worker_envs`) for n_steps (t_max, or the claimed part of the budget if smaller) steps, storing the
    raw samples and sending `adapter`'s env-unit actions; `normalizer` (not updated here) is applied to
    observations (`IdentityNormalizer(dtype=None)` keeps frames uint8 / bool). The model acts from `state`
    (`ActorCritic.initial_state`'s shapes), reset before the first step where `episode_start` (N,) bool, and
    carries it from step to step.

    `envs` follows Gymnasium's same-step autoreset protocol: where an environment's episode ended,
    `info["final_obs"]` (mask `info["_final_obs"]`) holds its last observation, to bootstrap from, and
    `info["episode"]` (mask `info["_episode"]`) its return and length, read from there (a vector env
    may end a segment without ending an episode, e.g. an Atari life loss).

    Returns:
        the `Rollout`, 1 to n_steps steps long: it stops after the first step in which any environment's
        segment ended (terminated or truncated).
    """
    observations, raw, actions, rewards = [], [], [], []
    keep_raw = isinstance(normalizer, ObservationNormalizer)
    initial_state, starts = state, episode_start
    continuing = torch.zeros_like(
        episode_start
    )  # episodes start only at the first step: the rollout stops where one ends
    with torch.no_grad():
        for _ in range(n_steps):
            x = normalizer(obs)
            action, _, state = model.act(x, state, starts, with_log_prob=False)
            starts = continuing
            observations.append(x)
            if keep_raw:
                raw.append(obs)
            actions.append(action)
            obs, reward, terminated, truncated, info = envs.step(adapter.to_env(action.numpy()))
            rewards.append(reward)
            if info:  # the vector env's info is empty unless a segment ended (terminated or truncated) here
                break
    last_obs, returns, lengths = obs, np.zeros(0), np.zeros(0, dtype=np.int64)
    if "_final_obs" in info:
        ended = info["_final_obs"]
        last_obs = obs.copy()
        last_obs[ended] = np.stack(info["final_obs"][ended])
    if "_episode" in info:
        finished = info["_episode"]
        returns, lengths = info["episode"]["r"][finished], info["episode"]["l"][finished]
    episode_starts = torch.zeros((len(rewards), len(episode_start)), dtype=torch.bool)
    episode_starts[0] = episode_start
    return Rollout(
        observations=torch.stack(observations),
        raw_observations=np.asarray(raw, dtype=np.float64).reshape(-1, obs.shape[-1]) if keep_raw else None,
        actions=torch.stack(actions),
        rewards=np.asarray(rewards, dtype=np.float32),
        terminated=terminated,
        truncated=truncated,
        last_obs=last_obs,
        next_obs=obs,
        episode_returns=returns,
        episode_lengths=lengths,
        initial_state=initial_state,
        episode_starts=episode_starts,
        final_state=state,
    )


def bootstrap_value(
    rollout: Rollout, model: ActorCritic, normalizer: ObservationNormalizer | IdentityNormalizer
) -> np.ndarray:
    """The value after each environment's last step, (N,) float32: 0 where its episode terminated, else
    V(last obs) (vectors or frames, see `Rollout`), one step on from the state after the last step, before
    the reset a new episode makes (`Rollout.final_state`; docs/correctness.md item 12). A time-limit
    truncation and a rollout stopped mid-episode both had a future the rollout did not see, so both
    bootstrap (Pardo et al. 2018; docs/correctness.md item 1)."""
    if rollout.terminated.all():
        return np.zeros(len(rollout.terminated), dtype=np.float32)
    with torch.no_grad():
        values = model.value(normalizer(rollout.last_obs), rollout.final_state).numpy()
    return np.where(rollout.terminated, np.float32(0.0), values)


def a3c_loss(
    model: ActorCritic,
    rollout: Rollout,
    rewards: np.ndarray,
    bootstrap: np.ndarray,
    config: A3CConfig,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The actor-critic loss of Algorithm S3 on one rollout of T <= t_max steps of N environments.

    loss = (1 / D) sum_{t, i} [-log pi(a_t|s_t) A_t + vf_coef (R_t - V(s_t))^2 - ent_coef H(pi(.|s_t))],
    with A_t and the targets R_t from `segment_advantages` on V(s_t) held constant: with
    gae_lambda = 1, the n-step returns R_t and A_t = R_t - V(s_t) (Mnih et al. 2016, Sec. 4; the
    entropy regularization of Williams & Peng 1991). Algorithm S3 accumulates the rollout's
    gradients: D = 1 with loss_reduction "sum". With "mean", D is the fixed t_max N
    (config.n_steps * config.n_envs), not T N, so a rollout cut short by an episode's end still
    weighs each transition as a full one does (a mean over T N would weigh a 1-step rollout's t_max
    times as much), at the learning-rate scale of a full rollout's mean.
    The terms come from rerunning the rollout from its first state (`ActorCritic.evaluate`): with an
    LSTM, gradients through its steps, none before them.

    Args:
        rewards: (T, N) float32, scaled by reward_scale; bootstrap: (N,) float32 (`bootstrap_value`).
        config: n_steps, n_envs, gamma, gae_lambda, ent_coef, vf_coef and loss_reduction.
    Returns:
        (scalar loss with gradients to `model`, {"policy_loss", "value_loss", "entropy"}: the three
        terms' unweighted means over the T N steps).
    """
    log_probs, entropy, values = model.evaluate(
        rollout.observations, rollout.actions, rollout.initial_state, rollout.episode_starts
    )
    advantages, targets = segment_advantages(
        rewards, values.detach().numpy(), bootstrap, config.gamma, config.gae_lambda
    )
    policy_loss = -(log_probs * torch.from_numpy(advantages)).mean()
    value_loss = (torch.from_numpy(targets) - values).square().mean()
    entropy_mean = entropy.mean()
    mean_loss = policy_loss + config.vf_coef * value_loss - config.ent_coef * entropy_mean
    divisor = 1 if config.loss_reduction == "sum" else config.n_steps * config.n_envs
    loss = mean_loss * (rewards.size / divisor)  # the sum over the T N steps, over D
    return loss, {"policy_loss": policy_loss.item(), "value_loss": value_loss.item(), "entropy": entropy_mean.item()}


# ------------------------------------------------------------------------------------ the worker process
@dataclass
class SharedState:
    """What the parent and the workers share, all in shared memory: the global model, its parameters as one
    flat tensor (P,) float32 (the model's are views of it), the shared optimizer over it, the observation
    normalizer (the identity without normalize_obs) with the lock for its updates, and the workers' stats."""

    model: ActorCritic
    parameters: torch.Tensor
    optimizer: torch.optim.Optimizer
    normalizer: ObservationNormalizer | IdentityNormalizer
    normalizer_lock: Any
    stats: WorkerStats


def run_worker(rank: int, budget: StepBudget, config: A3CConfig, env: Any, shared: SharedState) -> None:
    """The worker loop of Algorithm S3 (run by `WorkerPool` in each process), until the budget is spent or the
    parent says stop (`StepBudget.claim` grants nothing then).

    Args:
        rank: in [0, workers); with seed = config.seed + budget.start (a resumed run sees new episodes),
            its envs are seeded as `make_worker_envs` says and torch/numpy with seed + rank.
        budget: the global step budget; env: what `make_worker_envs` accepts; shared: the `SharedState`.
    The model's state (one per environment) starts fresh, carries on from rollout to rollout (the sync
    copies weights only) and is reset at each episode's first step (see the module docstring). Acting and the
    loss's forward passes run in config.precision (`acrl.core.devices.precision_context`), the backward pass
    and the shared optimizer's step outside it, on float32 gradients and parameters.
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
    cpu = torch.device("cpu")
    state = local.initial_state(config.n_envs)
    episode_start = torch.ones(config.n_envs, dtype=torch.bool)
    while granted := budget.claim(config.n_steps, config.n_envs):
        sync_parameters(local_parameters, shared.parameters)
        with precision_context(cpu, config.precision):  # acting in the run's precision
            rollout = collect_rollout(envs, local, obs, granted, adapter, normalizer, state, episode_start)
        budget.release((granted - len(rollout)) * config.n_envs)
        budget.count_taken(rank, len(rollout) * config.n_envs)
        if budget.stopped.value:
            break
        if config.normalize_obs:
            with shared.normalizer_lock:
                normalizer.stats.update(rollout.raw_observations)
        with precision_context(cpu, config.precision):  # the forward passes; backward and step outside
            bootstrap = bootstrap_value(rollout, local, normalizer)
            loss, stats = a3c_loss(local, rollout, rollout.rewards * config.reward_scale, bootstrap, config)
        if not torch.isfinite(loss):
            raise TrainingError(
                f"worker {rank}, global step {budget.steps_taken()}: the loss is {loss.item()} ({stats})."
            )
        if config.anneal_lr:
            horizon = config.anneal_steps or budget.total
            anneal_learning_rate(shared.optimizer, config.learning_rate, budget.claimed.value, horizon)
        stats["lr"] = shared.optimizer.param_groups[0]["lr"]
        stats["grad_norm"] = apply_gradients(local_parameters, shared.optimizer, loss, config.max_grad_norm)
        shared.stats.add_update(rank, stats)
        shared.stats.add_episodes(rank, rollout.episode_returns.tolist(), rollout.episode_lengths.tolist())
        obs = rollout.next_obs
        state, episode_start = rollout.final_state, torch.from_numpy(rollout.terminated | rollout.truncated)
    envs.close()


# ------------------------------------------------------------------------------------ the agent (parent)
class A3C(ActorCriticAgent):
    """A3C agent: `A3C(env="CartPole-v1", workers=2, seed=0).learn(total_steps)`.

    The workers run while the run loop holds `training()`; `predict`, `evaluate`, `save` and `load` are the
    `Agent` ones, and a checkpoint (global model, shared optimizer state, observation statistics,
    counters) resumes with `acrl resume`. Image observations (uint8 / bool frames) get a CNN with a shared
    trunk (see the module docstring).

    With lstm_hidden_size > 0 the model has an LSTM, and `predict(obs, state, episode_start)` returns
    `(action, state)` as PPO's does (`Agent.predict`); evaluation, `acrl record` and `acrl collect` start
    each episode from a fresh state. The workers' states are not checkpointed: a resumed run's workers
    start fresh episodes (their environments restart) from fresh states.

    Raises:
        InputError: see `Agent` and `A3CConfig.validate`; an observation space no encoder takes
            (`acrl.parts.encoders.make_encoder`); normalize_obs true with image observations; all before any
            worker starts.
        TrainingError (from `learn`): a worker raised (with its traceback), was killed, or the
            parameters became non-finite.
    """

    algo = "a3c"
    config_class = A3CConfig
    config: A3CConfig
    cpu_only_reason = "its global model and optimizer live in shared CPU memory for the Hogwild workers"
    checkpoint_on_failure = True  # the global model is whole at any moment (Hogwild)
    image_observations = True

    def _build(self) -> None:
        cfg = self.config
        self.model = ActorCritic.from_config(self.observation_space, self.action_space, cfg)
        self.parameters = flatten_parameters(self.model)
        self.model.share_memory()
        if cfg.optimizer == "adam":
            self.optimizer: torch.optim.Optimizer = SharedAdam(
                [self.parameters], lr=cfg.learning_rate, eps=cfg.optimizer_eps
            )
        else:
            self.optimizer = SharedRMSprop(
                [self.parameters],
                lr=cfg.learning_rate,
                alpha=cfg.rmsprop_alpha,
                eps=cfg.optimizer_eps,
                eps_inside=cfg.rmsprop_eps_inside,
            )
        self.nets = {"model": self.model}
        self.optimizers = {"optimizer": self.optimizer}
        self.obs_normalizer = make_normalizer(self.observation_space, cfg.normalize_obs, cfg.obs_clip)
        cfg.normalize_obs = isinstance(self.obs_normalizer, ObservationNormalizer)  # the value used, for config.yaml
        if cfg.normalize_obs:
            self.obs_normalizer.stats.share_memory()
        self.episode_stats = EpisodeStats(EPISODE_WINDOW)
        self.updates = 0

    def snapshot(self) -> A3C:
        """A frozen copy (global model and normaliser deep-copied) for evaluation and best.pt: the workers keep
        updating the shared model meanwhile, and the weights scored and those saved must be the same."""
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
    def shared_state(self, ctx: Any) -> SharedState:
        """What `run_worker` shares with the others (`SharedState`): this agent's global model, flat parameters,
        shared optimizer and normalizer, with a lock and fresh `WorkerStats` of multiprocessing context `ctx`."""
        return SharedState(
            model=self.model,
            parameters=self.parameters,
            optimizer=self.optimizer,
            normalizer=self.obs_normalizer,
            normalizer_lock=ctx.Lock(),
            stats=WorkerStats(self.config.workers, UPDATE_STATS, EPISODE_WINDOW),
        )

    @contextlib.contextmanager
    def training(self) -> Iterator[None]:
        """Start the workers (when there is budget left), and stop and join them on leaving, however
        the block ends; `num_steps` is then the steps they took, those taken while stopping included."""
        cfg = self.config
        ctx = mp.get_context(cfg.start_method)
        self._budget = StepBudget(ctx, cfg.workers, self.num_steps, self.total_steps, parent_pid=os.getpid())
        self._shared = self.shared_state(ctx)
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
        """Wait until the workers have taken min(log_freq, max_steps) more global steps (at the budget: until
        all have exited; after `training()` stopped them: not at all), then report their statistics since.

        Metrics: train/ means over the updates (`UPDATE_STATS`), rollout/ episode statistics, time/elapsed_s
        (since the workers started) and time/fps: steps taken per wall second since the previous call
        returned, evaluations included, as the workers keep stepping while the parent evaluates.

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
