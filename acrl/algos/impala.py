"""IMPALA: importance-weighted actor-learner with V-trace (Espeholt et al. 2018, arXiv:1802.01561).

Actors only act: each is a Ray actor stepping its own vector env with its own copy of the policy, and sends
unrolls of `unroll_length` steps with the behaviour policy's log-probabilities and the policy's state at the
unroll's first step (`acrl.parts.actors`). The learner (this process, on `device`, a GPU where there is one)
takes batches of `batch_size` unrolls as they arrive, so each was acted by a policy a few updates older than
the learner's, and corrects for that lag with V-trace (Eq. 1, `acrl.parts.returns.vtrace`):

    rerun the batch's T + 1 observations from the unrolls' first states -> log pi(a_t|x_t), H[pi], V(x_t)
    v_s, A_s = vtrace(log mu, log pi, r, V, ...)                     (rho-bar, c-bar; A_s with v_{s+1}, Sec. 4.2)
    loss = sum_{s, n} [-A_s log pi(a_s|x_s) + vf_coef 1/2 (v_s - V(x_s))^2 - ent_coef H[pi(.|x_s)]]
    clip the gradient's global norm, one RMSProp (or Adam) step, publish the weights (one ray.put)

The loss sums over the batch's steps, as the paper's code (deepmind/scalable_agent: `.5 * reduce_sum` of the
squared baseline advantages, times the baseline cost 0.5), with RMSProp's epsilon inside the square root, as
TensorFlow's (`acrl.parts.optim.SharedRMSprop(eps_inside=True)`; its shared memory is unused here). The
bootstrap V(x_T) after an unroll is the learner's, from the same rerun over T + 1 observations (with an LSTM,
from the state the unroll's last step left). A truncated episode bootstraps from V(final observation),
which the actor computes with its own weights as it steps (the learner does not rerun an LSTM to that
observation); a terminated one does not (docs/correctness.md items 1 and 15).

Environment steps are counted by the learner as it takes unrolls, T * n_envs each, so a run ends within an
unroll of its budget and an unroll lost with a dead actor is never counted; an iteration takes
ceil(max_steps / (T * n_envs)) unrolls when that is fewer than batch_size (before an evaluation, at the end).
An actor process that dies is replaced and the run goes on; when its node was lost and the cluster has no CPU
for a replacement, the run goes on with the actors left (`acrl.parts.actors.ActorPool`). The actors stop when
the run loop leaves `IMPALA.training`, and a Ray instance the run started is shut down then. A checkpoint
resumes with another actor count (`config.actors`, `acrl resume --actors N`), which the run says.

The policy and the value are one `acrl.parts.actor_critic.ActorCritic` (PPO's and A3C's): an MLP for vectors
(with a separate critic unless `shared_trunk`), a CNN with a shared trunk for frames, an LSTM with
`lstm_hidden_size`. IMPALA has no observation normalisation: the actors' observations are the environment's
(vectors as float32, frames scaled inside the network).
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from acrl.algos.base import ActorCriticAgent
from acrl.core.config import in_unit_interval, positive
from acrl.core.errors import InputError
from acrl.parts.actor_critic import ActorCritic, ActorCriticConfig
from acrl.parts.actors import ActorPool, Unroll
from acrl.parts.observations import make_normalizer
from acrl.parts.optim import SharedRMSprop
from acrl.parts.ray_session import connect, require
from acrl.parts.returns import VTrace, vtrace
from acrl.parts.stats import EpisodeStats
from acrl.parts.workers import picklable_env


@dataclass
class IMPALAConfig(ActorCriticConfig):
    """IMPALA hyperparameters; defaults are the paper's Atari settings (Espeholt et al. 2018, Table G.1; the
    DMLab ones of Table D.1 share them but for the unroll length), with acrl's 64-64 tanh networks for vectors
    (the model's settings are `ActorCriticConfig`'s).

    Attributes:
        actors: Ray actors, one CPU each (the paper's Atari runs had 48).
        n_envs: environments each actor steps together (env i of actor r seeded with seed + r * n_envs + i).
        unroll_length: T, steps of each environment per unroll (20).
        batch_size: unrolls per learner update (32).
        address: the Ray cluster to run the actors on, "auto" or HOST:PORT (None: start Ray on this machine
            for the run and shut it down after).
        optimizer: "rmsprop" (the paper's) or "adam" (Kingma & Ba 2015; the A3C references' for Pong, acrl A3C's
            `reference` preset).
        learning_rate: the optimizer's step size (0.0006); rmsprop_alpha: RMSProp's decay (0.99); rmsprop_eps: its
            epsilon, inside the square root (0.1); adam_eps: Adam's epsilon (1e-8; betas are torch's 0.9, 0.999).
        max_grad_norm: the global gradient norm is clipped to this (40).
        gamma: discount (0.99); vtrace_lambda: lambda of V-trace's traces (1).
        rho_bar, c_bar, pg_rho_bar: V-trace's clipping thresholds of rho, c and the policy gradient's rho (1).
        ent_coef: the entropy bonus's weight (0.01); vf_coef: the baseline cost (0.5).
    """

    actors: int = 2
    unroll_length: int = 20
    batch_size: int = 32
    address: str | None = None
    optimizer: str = "rmsprop"
    learning_rate: float = 0.0006
    rmsprop_alpha: float = 0.99
    rmsprop_eps: float = 0.1
    adam_eps: float = 1e-8
    max_grad_norm: float = 40.0
    gamma: float = 0.99
    vtrace_lambda: float = 1.0
    rho_bar: float = 1.0
    c_bar: float = 1.0
    pg_rho_bar: float = 1.0
    ent_coef: float = 0.01
    vf_coef: float = 0.5

    def validate(self) -> None:
        """Raise `InputError` for values IMPALA cannot run with (see the attribute list)."""
        super().validate()
        positive(self, "actors", "unroll_length", "batch_size", "learning_rate", "max_grad_norm", "rho_bar", "c_bar")
        positive(self, "pg_rho_bar")
        in_unit_interval(self, "gamma", "vtrace_lambda")
        if self.optimizer not in ("rmsprop", "adam"):
            raise InputError(f"optimizer must be 'rmsprop' or 'adam', got {self.optimizer!r}.")
        if not 0 <= self.rmsprop_alpha < 1 or self.rmsprop_eps < 0 or self.adam_eps < 0:
            raise InputError("rmsprop_alpha must lie in [0, 1), and rmsprop_eps and adam_eps must be >= 0.")
        if self.ent_coef < 0 or self.vf_coef < 0:
            raise InputError("ent_coef and vf_coef must be >= 0.")


def batch_unrolls(unrolls: list[Unroll], device: torch.device) -> dict[str, Any]:
    """The unrolls side by side on `device`, B = sum of their N environments: observations (T + 1, B, ...),
    actions (T + 1, B, ...) (the last row repeats row T - 1: V(x_T) is all the learner needs there),
    episode_starts (T + 1, B) bool, the other `Unroll` arrays (T, B), and states, each tensor (layers, B, hidden)."""

    def joined(key: str) -> torch.Tensor:
        return torch.from_numpy(np.concatenate([getattr(u, key) for u in unrolls], axis=1)).to(device)

    batch = {
        key: joined(key)
        for key in (
            "observations",
            "actions",
            "behaviour_log_probs",
            "rewards",
            "terminated",
            "truncated",
            "truncation_values",
            "episode_starts",
        )
    }
    batch["actions"] = torch.cat([batch["actions"], batch["actions"][-1:]])
    batch["states"] = tuple(
        torch.from_numpy(np.concatenate([u.initial_state[i] for u in unrolls], axis=1)).to(device)
        for i in range(len(unrolls[0].initial_state))
    )
    return batch


def rerun(model: ActorCritic, batch: dict[str, Any]) -> tuple[torch.Tensor, ...]:
    """The learner's forward pass over a batch (`batch_unrolls`' dict), each unroll from its first state.

    Returns:
        log pi(a_t|x_t), H[pi(.|x_t)] and V(x_t), each (T, B) float32 with gradients to `model`, and the value
        each step bootstraps from, (T, B) and detached: V(x_{t+1}) from the same pass, or where step t was
        truncated the actor's V(final observation) (docs/correctness.md items 1 and 15).
    """
    log_probs, entropy, values = model.evaluate(
        batch["observations"], batch["actions"], batch["states"], batch["episode_starts"]
    )
    next_values = torch.where(batch["truncated"], batch["truncation_values"], values.detach()[1:])
    return log_probs[:-1], entropy[:-1], values[:-1], next_values


def batch_vtrace(
    batch: dict[str, Any],
    log_probs: torch.Tensor,
    values: torch.Tensor,
    next_values: torch.Tensor,
    config: IMPALAConfig,
) -> VTrace:
    """`vtrace` of a batch with the target policy's log-probabilities `log_probs` and the values of `rerun`
    (all (T, B); detached here), with config's gamma, vtrace_lambda, rho_bar, c_bar and pg_rho_bar."""
    return vtrace(
        batch["behaviour_log_probs"],
        log_probs.detach(),
        batch["rewards"],
        values.detach(),
        next_values,
        batch["terminated"],
        batch["truncated"],
        config.gamma,
        config.vtrace_lambda,
        config.rho_bar,
        config.c_bar,
        config.pg_rho_bar,
    )


def impala_loss(model: ActorCritic, batch: dict[str, Any], config: IMPALAConfig) -> tuple[torch.Tensor, dict]:
    """The V-trace actor-critic loss of one batch (Sec. 4.2; the module docstring's), summed over its T B steps.

    Args:
        batch: `batch_unrolls`' dict.
        config: gamma, vtrace_lambda, rho_bar, c_bar, pg_rho_bar, ent_coef, vf_coef.
    Returns:
        (the scalar loss with gradients to `model`, {"policy_loss", "value_loss", "entropy", "rho"}: the
        policy-gradient term, (v_s - V(x_s))^2 and the entropy as means over the T B steps, and the mean
        importance weight pi / mu before clipping).
    """
    log_probs, entropy, values, next_values = rerun(model, batch)
    targets = batch_vtrace(batch, log_probs, values, next_values, config)
    policy_terms = -targets.pg_advantages * log_probs
    squared_errors = (targets.vs - values).square()
    loss = policy_terms.sum() + config.vf_coef * 0.5 * squared_errors.sum() - config.ent_coef * entropy.sum()
    with torch.no_grad():
        rho = (log_probs - batch["behaviour_log_probs"]).exp().mean()
        means = torch.stack([policy_terms.mean(), squared_errors.mean(), entropy.mean(), rho]).tolist()
    return loss, dict(zip(("policy_loss", "value_loss", "entropy", "rho"), means))


class IMPALA(ActorCriticAgent):
    """IMPALA agent: `IMPALA(env="CartPole-v1", actors=2, seed=0).learn(total_steps)` (the `ray` extra).

    The actors run while the run loop holds `training()`; `predict`, `evaluate`, `save` and `load` are the
    `Agent` ones and need no Ray. A checkpoint holds the learner's model, optimizer and counters, and resumes
    with `acrl resume` (its actors start fresh episodes; `config.actors` may change in between, and the run
    says so); with an LSTM, `predict` takes and returns the state.

    Raises:
        InputError: see `Agent` and `IMPALAConfig.validate`, all before any actor starts; from `learn`, before
            anything is written: Ray not installed (naming the extra), an `address` that does not answer or
            runs another Ray, Python or acrl, more actors than the cluster has CPUs.
        TrainingError (from `learn`): an actor raised or could not start, actors kept dying, no actor is left
            (nodes lost), no unroll came for `acrl.parts.actors.UNROLL_TIMEOUT_S`, or a NaN.
    """

    algo = "impala"
    config_class = IMPALAConfig
    config: IMPALAConfig
    image_observations = True

    def _build(self) -> None:
        cfg = self.config
        self.model = ActorCritic.from_config(self.observation_space, self.action_space, cfg).to(self.device)
        self.optimizer: torch.optim.Optimizer
        if cfg.optimizer == "adam":
            self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.learning_rate, eps=cfg.adam_eps)
        else:
            self.optimizer = SharedRMSprop(
                self.model.parameters(),
                lr=cfg.learning_rate,
                alpha=cfg.rmsprop_alpha,
                eps=cfg.rmsprop_eps,
                eps_inside=True,
            )
        self.nets = {"model": self.model}
        self.optimizers = {"optimizer": self.optimizer}
        self.obs_normalizer = make_normalizer(self.observation_space, False)  # float32 vectors, raw frames
        self.episode_stats = EpisodeStats()
        self.updates = 0
        self.checkpoint_actors: int | None = None  # the actor count of the run a loaded checkpoint came from
        self._started_ray = False
        self._pool: ActorPool | None = None

    def _extra_state(self) -> dict[str, Any]:
        return {**self.episode_stats.state_dict(), "updates": self.updates, "actors": self.config.actors}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self.episode_stats.load_state_dict(state)
        self.updates = int(state["updates"])
        self.checkpoint_actors = int(state["actors"])

    # -------------------------------------------------------------------------------- training
    def before_learning(self) -> None:
        """Connect to Ray (start it here without an `address`) and check that the cluster has a CPU for each
        actor, before anything is written.

        Raises:
            InputError: see the class docstring.
        """
        ray = require("ray", "IMPALA's actors")
        if not ray.is_initialized():
            self._started_ray = connect(ray, self.config.address)
        cpus = ray.cluster_resources().get("CPU", 0)
        if self.config.actors > cpus:
            self._shutdown_ray()
            raise InputError(
                f"actors={self.config.actors} asks for one CPU each, but the Ray cluster has {cpus:g} CPUs; use "
                f"{int(cpus)} actors or fewer (--actors), or a larger cluster (--address)."
            )

    def _shutdown_ray(self) -> None:
        """Shut down the Ray instance this agent started (none when it joined one)."""
        if self._started_ray:
            import ray

            ray.shutdown()
            self._started_ray = False

    @contextlib.contextmanager
    def training(self) -> Iterator[None]:
        """Start the actors (when there is budget left; saying so when a loaded checkpoint's run had another
        count), and kill them on leaving, however the block ends; shut down the Ray instance `before_learning`
        started."""
        cfg = self.config
        try:
            if self.num_steps < self.total_steps:
                self.before_learning()  # connected already by `learn`: only the check again
                if self.checkpoint_actors not in (None, cfg.actors):
                    print(
                        f"acrl: resuming with {cfg.actors} actors (the checkpoint's run had {self.checkpoint_actors})",
                        file=sys.stderr,
                    )
                self._pool = ActorPool(
                    cfg.actors,
                    picklable_env(self.env),
                    self.model,
                    cfg.n_envs,
                    cfg.unroll_length,
                    cfg.seed + self.num_steps,
                    cfg.precision,
                )
                self._pool.start(self.model.state_dict())
            yield
        finally:
            if self._pool is not None:
                self._pool.stop()
                self._pool = None
            self._shutdown_ray()

    def loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict]:
        """The learner's loss of a batch and its metrics (`impala_loss`)."""
        return impala_loss(self.model, batch, self.config)

    def iteration(self, max_steps: int) -> dict[str, float]:
        """One learner update on the next min(batch_size, ceil(max_steps / (T n_envs))) unrolls to arrive (none
        for max_steps 0), then the new weights published; `num_steps` grows by the steps they hold.

        Metrics: train/ policy_loss, value_loss, entropy (per-step means), rho (mean pi / mu), grad_norm (before
        clipping), policy_lag (updates between the weights that acted and the learner's), wait_s (seconds the
        learner waited for the unrolls: the rest of the iteration is its own work), learning_rate; the rollout/
        episode statistics of the episodes that ended in the unrolls taken.
        """
        cfg = self.config
        count = min(cfg.batch_size, math.ceil(max_steps / (cfg.unroll_length * cfg.n_envs)))
        if count == 0:
            return {}
        waiting = time.perf_counter()
        unrolls = self._pool.take(count)
        wait_s = time.perf_counter() - waiting
        for unroll in unrolls:
            self.num_steps += unroll.steps
            self.episode_stats.add(unroll.episode_returns.tolist(), unroll.episode_lengths.tolist())
        with self.autocast():  # the forward passes in the run's precision; backward and step outside
            loss, metrics = self.loss(batch_unrolls(unrolls, self.device))
        self.optimizer.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.max_grad_norm)
        self.optimizer.step()
        self.updates += 1
        lag = np.mean([self._pool.version - u.weights_version for u in unrolls])
        self._pool.publish(self.model.state_dict())
        return {
            **{f"train/{key}": value for key, value in metrics.items()},
            "train/grad_norm": float(grad_norm),
            "train/policy_lag": float(lag),
            "train/wait_s": wait_s,
            "train/learning_rate": cfg.learning_rate,
            **self.episode_stats.metrics(),
        }
