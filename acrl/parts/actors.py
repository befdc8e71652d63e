"""IMPALA's (and APPO's) actors on Ray (Espeholt et al. 2018, Sec. 3 and Fig. 1): processes that only act, each
with its own copy of the policy and its own vector env, and send unrolls of experience to one learner.

- `Unroll`: T steps of an actor's N environments, with the behaviour policy's log-probabilities and the
  policy's state at the first step, which the learner needs for V-trace and to rerun an LSTM.
- `UnrollActor`: what runs in an actor's process (a Ray actor, one CPU): `unroll()` acts `unroll_length`
  steps from where its environments are and returns the `Unroll`; before each unroll it loads the newest
  weights the learner published (`set_weights`, which runs in a concurrency group of its own, so it lands
  while an unroll runs and the actor never waits for the learner).
- `ActorPool`: the learner's side. It starts the actors, keeps `IN_FLIGHT` unroll calls queued at each
  (an actor goes from one unroll straight into the next), hands over unrolls as they arrive (`take`, with
  `ray.wait`), publishes weights through the object store (`publish`: one `ray.put`, a reference to each
  actor), and replaces an actor whose process died (killed, or its node lost) with a new one, seeded apart,
  while the cluster has a CPU for it; when it has not (a node lost), the pool shrinks to the actors that
  live, saying so, and a pool left without an actor ends the run (`TrainingError`), as does a wait of
  `UNROLL_TIMEOUT_S` without any unroll. The unrolls that were in flight at a dead actor, or stored on a lost
  node, are dropped, never counted. An actor that raised (an environment's NaN) ends the run with its error.
  `stop` kills every actor.

The learner counts environment steps as it takes unrolls (`Unroll.steps`), so steps are counted once, by one
process, whatever the actors do. Ray is imported inside the functions that use it.
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from acrl.core.devices import precision_context
from acrl.core.envs import ActionAdapter, EnvSpec
from acrl.core.errors import TrainingError
from acrl.parts.actor_critic import ActorCritic
from acrl.parts.observations import make_normalizer
from acrl.parts.workers import make_worker_envs

CPU = torch.device("cpu")
"""Where actors act."""

IN_FLIGHT = 2
"""Unroll calls queued at each actor: one running, one waiting, so that no actor idles while the learner works."""
RESPAWNS_PER_ACTOR = 3
"""How many times, per actor, a dead actor process is replaced before the run gives up."""
UNROLL_TIMEOUT_S = 600.0
"""How long the learner waits for the actors to start, or for the next unroll, before it gives up (an actor
that cannot be placed, or every actor stalled)."""


@dataclass
class Unroll:
    """T steps of an actor's N environments (numpy, time first), as the behaviour policy mu acted them.

    Attributes:
        observations: (T + 1, N, *obs_shape) as the policy saw them (float32 vectors, frames in their own
            dtype): the T steps' and the one after the last step, to bootstrap from.
        actions: (T, N) int64 or (T, N, act_dim) float32 raw policy actions (before any clipping).
        behaviour_log_probs: (T, N) float32 log mu(a_t|x_t).
        rewards: (T, N) float32; terminated, truncated: (T, N) bool.
        truncation_values: (T, N) float32, V(final observation) by the behaviour policy where a step was
            truncated (with the state its last step left), 0 elsewhere.
        episode_starts: (T + 1, N) bool: the step begins an episode (the state is reset before it).
        initial_state: the policy's state before step 0's reset, one array (layers, N, hidden) per tensor
            of the state (() for a feed-forward policy).
        episode_returns, episode_lengths: (E,) float64 / int64 of the episodes that ended in the unroll.
        weights_version: the version of the weights that acted (`ActorPool.publish` counts them).
    """

    observations: np.ndarray
    actions: np.ndarray
    behaviour_log_probs: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    truncation_values: np.ndarray
    episode_starts: np.ndarray
    initial_state: tuple[np.ndarray, ...]
    episode_returns: np.ndarray
    episode_lengths: np.ndarray
    weights_version: int

    @property
    def steps(self) -> int:
        """T N, the environment steps the unroll holds."""
        return self.rewards.size


class UnrollActor:
    """One actor (run as a Ray actor by `ActorPool`): its N environments and its copy of the policy on the CPU.

    Args:
        rank: the actor's index; its envs are seeded with seed + rank * n_envs + i (`make_worker_envs`),
            torch with seed + rank.
        env: what `make_worker_envs` accepts (`acrl.parts.workers.picklable_env`).
        model: the `ActorCritic` to act with (a CPU copy; its weights are replaced by `set_weights`').
        n_envs, unroll_length: N and T.
        seed: the seed of this actor's incarnation.
        weights: [version, [reference to a state dict]]: the newest weights when the actor was started.
    Raises:
        InputError, TrainingError: the environment cannot be built or reset (`make_worker_envs`).
    """

    def __init__(
        self,
        rank: int,
        env: EnvSpec,
        model: ActorCritic,
        n_envs: int,
        unroll_length: int,
        seed: int,
        weights: tuple[int, list[Any]],
        precision: str = "fp32",
    ):
        torch.set_num_threads(1)
        self.precision = precision
        torch.manual_seed(seed + rank)
        self.envs, self.obs = make_worker_envs(env, seed, rank, n_envs)
        self.adapter = ActionAdapter(self.envs.single_action_space)
        self.normalizer = make_normalizer(self.envs.single_observation_space, False)  # float32 vectors, raw frames
        self.model, self.unroll_length = model, unroll_length
        self.state = model.initial_state(n_envs)
        self.episode_start = np.ones(n_envs, dtype=bool)
        self.version, self.newest = -1, weights

    def set_weights(self, version: int, weights: list[Any]) -> None:
        """Keep the reference to the learner's newest weights (a state dict in the object store, in a list so
        that Ray hands over the reference, not the object); the next unroll loads them."""
        self.newest = (version, weights)

    def ready(self) -> str:
        """The id (hex) of the Ray node this actor runs on, once it is built (its environments made and reset)."""
        import ray

        return ray.get_runtime_context().get_node_id()

    @torch.no_grad()
    def unroll(self) -> Unroll:
        """Load the newest weights if they changed, then act T steps in the N environments (see `Unroll`).

        The policy's state is carried from step to step and across unrolls, and reset before each episode's
        first step; a truncated episode's V(final observation) is computed with the state its last step left,
        before the reset (docs/correctness.md items 1 and 12).
        """
        import ray

        version, (reference,) = self.newest
        if version != self.version:
            self.model.load_state_dict(ray.get(reference))
            self.version = version
        steps, n, model = self.unroll_length, len(self.episode_start), self.model
        first = self.normalizer(self.obs)
        observations = np.zeros((steps + 1, *first.shape), dtype=first.numpy().dtype)
        starts = np.zeros((steps + 1, n), dtype=bool)
        actions, log_probs = [], np.zeros((steps, n), dtype=np.float32)
        rewards = np.zeros((steps, n), dtype=np.float32)
        terminated, truncated = np.zeros((steps, n), dtype=bool), np.zeros((steps, n), dtype=bool)
        truncation_values = np.zeros((steps, n), dtype=np.float32)
        returns, lengths = [], []
        initial_state = tuple(s.numpy().copy() for s in self.state)
        state, obs = self.state, first
        for t in range(steps):
            observations[t], starts[t] = obs.numpy(), self.episode_start
            with precision_context(CPU, self.precision):  # acting in the run's precision (networks return float32)
                raw, log_prob, state = model.act(obs, state, torch.from_numpy(self.episode_start))
            actions.append(raw.numpy())
            log_probs[t] = log_prob.numpy()
            self.obs, rewards[t], terminated[t], truncated[t], info = self.envs.step(self.adapter.to_env(raw.numpy()))
            if truncated[t].any():
                ended = np.flatnonzero(truncated[t])
                final = self.normalizer(np.stack([info["final_obs"][i] for i in ended]))
                index = torch.from_numpy(ended)
                with precision_context(CPU, self.precision):
                    truncation_values[t, ended] = model.value(final, tuple(s[:, index] for s in state)).numpy()
            if "_episode" in info:
                finished = info["_episode"]
                returns += info["episode"]["r"][finished].tolist()
                lengths += info["episode"]["l"][finished].tolist()
            self.episode_start = terminated[t] | truncated[t]
            obs = self.normalizer(self.obs)
        observations[steps], starts[steps] = obs.numpy(), self.episode_start
        self.state = state
        return Unroll(
            observations=observations,
            actions=np.stack(actions),
            behaviour_log_probs=log_probs,
            rewards=rewards,
            terminated=terminated,
            truncated=truncated,
            truncation_values=truncation_values,
            episode_starts=starts,
            initial_state=initial_state,
            episode_returns=np.asarray(returns, dtype=np.float64),
            episode_lengths=np.asarray(lengths, dtype=np.int64),
            weights_version=self.version,
        )


class ActorPool:
    """The learner's actors: started, fed with weights, read as their unrolls arrive, replaced when they die,
    dropped when the cluster has no CPU left for a replacement.

    Args:
        actors: how many (each a Ray actor with one CPU).
        env: what the actors build their environments from (`acrl.parts.workers.picklable_env`).
        model: the learner's `ActorCritic`; the actors get a CPU copy.
        n_envs, unroll_length: each actor's N environments and T steps per unroll.
        seed: the actors' seed (the run's seed, plus the step a resumed run starts from).
        precision: the run's precision ("fp32" or "bf16"), the actors' forward passes' (`precision_context`).
    """

    def __init__(
        self,
        actors: int,
        env: EnvSpec,
        model: ActorCritic,
        n_envs: int,
        unroll_length: int,
        seed: int,
        precision: str = "fp32",
    ):
        import ray

        self.actor_class = ray.remote(num_cpus=1, max_restarts=0, concurrency_groups={"weights": 1})(UnrollActor)
        self.env, self.n_envs, self.unroll_length, self.seed, self.precision = (
            env,
            n_envs,
            unroll_length,
            seed,
            precision,
        )
        self.model = ray.put(copy.deepcopy(model).cpu())
        self.actors: list[Any] = [None] * actors  # None: never started, or dropped
        self.incarnations = [0] * actors
        self.pending: dict[Any, tuple[int, int]] = {}  # unroll call -> (rank, incarnation)
        self.respawns = 0
        self.weights: tuple[int, list[Any]] = (0, [None])

    def start(self, state_dict: dict[str, torch.Tensor]) -> None:
        """Publish the first weights, start every actor and wait until each is built.

        Raises:
            TrainingError: an actor could not be built (its error, e.g. the environment's, in the message), or
                not every actor started within `UNROLL_TIMEOUT_S` (the cluster has no CPU free for it).
        """
        import ray

        self.publish(state_dict)
        for rank in range(len(self.actors)):
            self._spawn(rank)
        calls = {actor.ready.remote(): rank for rank, actor in enumerate(self.actors)}
        ready, waiting = ray.wait(list(calls), num_returns=len(calls), timeout=UNROLL_TIMEOUT_S)
        for call in ready:
            try:
                ray.get(call)
            except ray.exceptions.RayError as exc:
                why = " ".join(str(exc).split())[:500]
                raise TrainingError(f"Ray actor {calls[call]} could not start: {why}") from None
        if waiting:
            raise TrainingError(
                f"{len(waiting)} of the {len(calls)} Ray actors did not start within {UNROLL_TIMEOUT_S:.0f} s: "
                f"the Ray cluster has {self._cpus()} CPUs, too few of them free; free some, or use fewer --actors."
            )

    def _spawn(self, rank: int) -> None:
        """Start actor `rank` (a new incarnation, seeded apart from the earlier ones) and queue its unrolls."""
        seed = self.seed + self.respawns * len(self.actors) * self.n_envs
        actor = self.actor_class.remote(
            rank, self.env, self.model, self.n_envs, self.unroll_length, seed, self.weights, self.precision
        )
        self.actors[rank] = actor
        for _ in range(IN_FLIGHT):
            self._queue(rank)

    def _queue(self, rank: int) -> None:
        """Queue one more unroll call at actor `rank`."""
        self.pending[self.actors[rank].unroll.remote()] = (rank, self.incarnations[rank])

    def publish(self, state_dict: dict[str, torch.Tensor]) -> None:
        """Put the learner's weights (a state dict, copied to the CPU) in the object store once and tell every
        actor where they are; each loads them before its next unroll."""
        import ray

        version = self.weights[0] + 1
        self.weights = (version, [ray.put({k: v.detach().cpu() for k, v in state_dict.items()})])
        for actor in self.actors:
            if actor is not None:
                actor.set_weights.options(concurrency_group="weights").remote(*self.weights)

    @property
    def version(self) -> int:
        """The version of the newest weights published (1 for the first)."""
        return self.weights[0]

    @property
    def size(self) -> int:
        """The actors the pool holds now (fewer than it started with once it has dropped some)."""
        return sum(actor is not None for actor in self.actors)

    def take(self, count: int) -> list[Unroll]:
        """The next `count` unrolls in the order they arrive; each actor's next call is queued as its unroll is
        taken. An actor whose process died is replaced, or dropped when the cluster has no CPU for it
        (`_replace`); its unrolls in flight are lost, as is an unroll stored on a node that was lost.

        Raises:
            TrainingError: an actor raised (its error in the message), actors died more than
                `RESPAWNS_PER_ACTOR` times per actor, no actor is left, or no unroll came for `UNROLL_TIMEOUT_S`.
        """
        import ray

        unrolls: list[Unroll] = []
        while len(unrolls) < count:
            done, _ = ray.wait(list(self.pending), num_returns=1, timeout=UNROLL_TIMEOUT_S)
            if not done:
                raise TrainingError(
                    f"no Ray actor sent an unroll within {UNROLL_TIMEOUT_S:.0f} s ({self.size} actors, the Ray "
                    f"cluster has {self._cpus()} CPUs): they stalled, or cannot be placed."
                )
            rank, incarnation = self.pending.pop(done[0])
            current = incarnation == self.incarnations[rank]  # else its replacement has its own calls queued
            try:
                unroll = ray.get(done[0])
            except ray.exceptions.RayActorError as exc:
                if current:  # the first of its lost calls: replace it once
                    self._replace(rank, exc)
                continue
            except ray.exceptions.ObjectLostError:  # on a node lost since: dropped; the next call tells its fate
                if current:
                    self._queue(rank)
                continue
            except ray.exceptions.RayTaskError as exc:
                raise TrainingError(f"Ray actor {rank} failed: {exc}") from None
            if current:
                self._queue(rank)
            unrolls.append(unroll)
        return unrolls

    def _replace(self, rank: int, exc: Exception) -> None:
        """Start a new actor in the place of `rank`, whose process died with `exc`, if the cluster has a CPU for
        it beside the living actors; else drop it (the pool shrinks). Either way, say so on stderr.

        Raises:
            TrainingError: no actor is left, or actors died more than `RESPAWNS_PER_ACTOR` times per actor.
        """
        import ray

        ray.kill(self.actors[rank])  # one that was only unreachable must not act on
        self.actors[rank], self.incarnations[rank] = None, self.incarnations[rank] + 1
        died, cpus = f"Ray actor {rank} died ({type(exc).__name__})", self._cpus()
        if self.size >= cpus:
            if self.size == 0:
                raise TrainingError(
                    f"{died} and no actor is left: the Ray cluster has no CPU for one (a node lost?); "
                    "resume the run (acrl resume) once it has."
                )
            print(
                f"acrl: warning: {died} and the Ray cluster has {cpus} CPUs left; going on with {self.size} actors",
                file=sys.stderr,
            )
            return
        self.respawns += 1
        if self.respawns > RESPAWNS_PER_ACTOR * len(self.actors):
            raise TrainingError(f"Ray actors died {self.respawns} times; giving up (last: {exc})")
        print(f"acrl: warning: {died}; starting a new one", file=sys.stderr)
        self._spawn(rank)

    @staticmethod
    def _cpus() -> int:
        """The CPUs of the Ray cluster's living nodes."""
        import ray

        return int(ray.cluster_resources().get("CPU", 0))

    def stop(self) -> None:
        """Kill every actor (their unrolls in flight are dropped)."""
        import ray

        for actor in self.actors:
            if actor is not None:
                ray.kill(actor)
        self.actors = [None] * len(self.actors)
        self.pending.clear()
