"""Process machinery for Hogwild workers: processes that train one model in shared memory without locks
(Recht et al. 2011), as A3C's do (Mnih et al. 2016, Sec. 4). It knows nothing of what the workers train.

- `make_worker_envs` (each worker's environments, seeded by rank), `sync_parameters` and
  `apply_gradients` (a worker's copy of the shared parameters, and the hand-over of its
  gradients to the shared optimizer). Parameters, a worker's copy and its gradients are each one
  flat tensor (`acrl.parts.optim.flatten_parameters`), so a sync is one copy, the hand-over one
  clip and one assignment, and the shared optimizer steps one tensor (`benchmarks/a3c_scaling.py`).
- `StepBudget`: the global step counter of a run, shared by the workers. A worker claims a
  rollout's steps under a lock before the rollout (`claim`), gives back those it did not take
  (`release`, when an episode ended first) and counts the steps it took in its own slot
  (`count_taken`), so the budget is exact without a lock per step and the parent reads the
  steps actually taken (`steps_taken`) without any lock.
- `WorkerStats`: per-update statistics (running sums) and finished episodes (ring buffers),
  one row per worker in shared memory; the parent reads what is new since its last read.
- `WorkerPool`: starts `workers` processes, waits for the budget's steps, turns a worker that
  raised (its traceback comes through a pipe), was killed by the OS or exited with an error into a
  `TrainingError`, and on `stop` asks the workers to stop after their current rollout, joins them
  with a timeout and terminates, then kills, any left (docs/correctness.md item 7).

Only the workers take locks (the budget's, and whatever the training code shares): the parent
never waits on one, so a worker killed while holding a lock cannot hang it, and after a failure
the parent terminates any worker left waiting. A worker ignores Ctrl-C (the parent, through the
run loop, decides when to stop) and returns when its parent has gone (`StepBudget.claim` grants
nothing then), so no orphan keeps training.

    budget = StepBudget(ctx, workers, start=num_steps, total=total_steps, parent_pid=os.getpid())
    pool = WorkerPool(ctx, budget, "acrl-a3c-worker")
    pool.start(run_worker, workers, args)         # run_worker(rank, budget, *args) in each process
    pool.wait_for(num_steps + log_freq)           # raises TrainingError if a worker failed
    pool.stop()                                   # however the run ends
"""

from __future__ import annotations

import multiprocessing.connection
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from acrl.core.envs import EnvSpec, LeanSyncVectorEnv, env_family, make_vec_env
from acrl.core.errors import TrainingError

JOIN_TIMEOUT_S = 5.0
"""How long `WorkerPool.stop` waits for workers to stop by themselves before terminating them."""
POLL_S = 0.01
"""How often `WorkerPool.wait_for` looks at the counter: workers take a few hundred steps in 10 ms."""


def default_workers() -> int:
    """The number of CPU cores this process may run on (a default worker count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_start_method() -> str:
    """ "fork" on Linux (fast start, nothing pickled), else "spawn"."""
    return "fork" if sys.platform.startswith("linux") else "spawn"


# ------------------------------------------------------------------------------------ in a worker
def picklable_env(env: EnvSpec) -> EnvSpec | gym.envs.registration.EnvSpec:
    """What a worker can build `env` from under any start method: the Gymnasium EnvSpec of an id
    or of an env made from one (a custom env registered by an importable module then works
    under "spawn" too), else `env` itself (a factory must then be picklable by reference; so is an
    env of an `ENV_FAMILIES` namespace, whose spec would build the family's env instead)."""
    if isinstance(env, str):
        return gym.spec(env)
    if isinstance(env, gym.Env) and env.spec is not None and env_family(env.spec.id) is None:
        return env.spec
    return env


def make_worker_envs(
    env: EnvSpec | gym.envs.registration.EnvSpec, seed: int, rank: int, n_envs: int = 1
) -> tuple[gym.vector.VectorEnv, np.ndarray]:
    """Build worker `rank`'s n_envs environments; env i is seeded with seed + rank * n_envs + i
    (docs/correctness.md items 7 and 10).

    Args:
        env: an id, env, factory, or a Gymnasium `EnvSpec` (what the parent sends, so that a
            custom env registered by an importable module also works under "spawn").
    Returns:
        (envs, first observations (n_envs, *obs_shape)): `make_vec_env`'s `LeanSyncVectorEnv`
        (same-step autoreset; a NaN/inf observation or reward raises TrainingError naming env
        rank * n_envs + i), or a family's vector env stepping in one thread (ALE's), reset with those
        seeds, each action space seeded with its env's seed (a family's vector env: its batched one
        with seed + rank * n_envs).
    """
    first = rank * n_envs
    envs = make_vec_env(env, n_envs, first_index=first, num_threads=1)
    obs, _ = envs.reset(seed=seed + first)
    if isinstance(envs, LeanSyncVectorEnv):
        for i, sub in enumerate(envs.envs):
            sub.action_space.seed(seed + first + i)
    else:
        envs.action_space.seed(seed + first)
    return envs, obs


def sync_parameters(local: torch.Tensor, global_parameters: torch.Tensor) -> None:
    """Copy the global parameters into the worker's local model (A3C's Algorithm S3: "synchronize
    thread-specific parameters theta' = theta"): one in-place copy between the two flat
    parameter tensors (P,) of `acrl.parts.optim.flatten_parameters`."""
    local.copy_(global_parameters)


def apply_gradients(
    local: torch.Tensor, optimizer: torch.optim.Optimizer, loss: torch.Tensor, max_grad_norm: float | None
) -> float:
    """Backpropagate `loss` into the worker's flat gradient and step the shared optimizer with it.

    The local gradient buffer is zeroed before the backward pass, so the global parameters
    receive exactly this update's gradient, never a sum with earlier ones (the bug of handing
    a gradient over once by aliasing, then accumulating). The hand-over is an assignment: the
    global flat tensor's `.grad` (private to this process) is the local buffer during the
    step and None after it.

    Args:
        local: the worker's flat parameter tensor (P,) from `acrl.parts.optim.flatten_parameters(
            model, gradients=True)`; `loss` depends on it through the model's parameter views.
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


# ------------------------------------------------------------------------------------ shared between processes
class StepBudget:
    """A run's global step budget, shared by its workers: claimed a rollout at a time, counted when taken.

    Args:
        ctx: the multiprocessing context the workers are started with.
        workers: the number of workers.
        start: the global step the run starts from (0, or a resumed run's step).
        total: the budget, in global steps.
        parent_pid: the process whose workers these are: once a worker's parent is another
            one (it died), `claim` grants nothing.
    Attributes:
        claimed: ctypes int64, global steps taken or claimed by a running rollout; `lock`
            guards its changes.
        taken: (workers,) int64 tensor in shared memory, steps each worker has taken since
            `start` (each worker writes only its own slot).
        stopped: ctypes int8, 1 once `stop` was called: claims grant nothing.
    """

    def __init__(self, ctx: Any, workers: int, start: int, total: int, parent_pid: int):
        self.start, self.total, self.parent_pid = start, total, parent_pid
        self.claimed = ctx.RawValue("q", start)
        self.lock = ctx.Lock()
        self.taken = torch.zeros(workers, dtype=torch.int64).share_memory_()
        self.stopped = ctx.RawValue("b", 0)

    def claim(self, rows: int, row_size: int = 1) -> int:
        """Claim up to `rows` rows of `row_size` steps (a rollout of t_max steps of n_envs
        environments) under the lock.

        Returns the rows granted, min(rows, ceil(steps left / row_size)), and adds rows granted *
        row_size to `claimed` (so the last claim may pass the budget by up to row_size - 1
        steps); 0 when the budget is spent, after `stop`, or when the parent has gone.
        """
        if self.stopped.value or os.getppid() != self.parent_pid:
            return 0
        with self.lock:
            granted = min(rows, -(-(self.total - self.claimed.value) // row_size))
            if granted <= 0:
                return 0
            self.claimed.value += granted * row_size
            return granted

    def release(self, steps: int) -> None:
        """Give back `steps` claimed steps that a rollout did not take (an episode ended first)."""
        if steps:
            with self.lock:
                self.claimed.value -= steps

    def count_taken(self, rank: int, steps: int) -> None:
        """Count `steps` environment steps that worker `rank` took (no lock: its own slot)."""
        self.taken[rank] += steps

    def steps_taken(self) -> int:
        """Global steps taken so far: `start` plus every worker's count (a read, without the lock)."""
        return self.start + int(self.taken.sum())

    def stop(self) -> None:
        """Grant no more claims: each worker stops after its current rollout."""
        self.stopped.value = 1


class WorkerStats:
    """Statistics that workers report to the parent through shared memory, without locks.

    Args:
        workers: the number of workers.
        keys: names of the per-update statistics (e.g. "policy_loss").
        window: finished episodes kept per worker for the parent's next read.
    Attributes:
        sums: (workers, len(keys) + 1) float64, running sums of each statistic, then the update count.
        episode_returns / episode_lengths: (workers, window) float64 ring buffers;
            episode_counts: (workers,) int64, episodes finished per worker.
    Each worker writes only its own row, so the parent reads them without locks. What the
    parent has read so far is kept in numpy arrays and lists (pickled by value under "spawn").
    """

    def __init__(self, workers: int, keys: Sequence[str], window: int = 100):
        self.keys, self.window = tuple(keys), window
        self.sums = torch.zeros((workers, len(self.keys) + 1), dtype=torch.float64).share_memory_()
        self.episode_returns = torch.zeros((workers, window), dtype=torch.float64).share_memory_()
        self.episode_lengths = torch.zeros((workers, window), dtype=torch.float64).share_memory_()
        self.episode_counts = torch.zeros(workers, dtype=torch.int64).share_memory_()
        self._sums_read = np.zeros((workers, len(self.keys) + 1))
        self._episodes_read = [0] * workers

    # ------------------------------------------------------------------------ in a worker
    def add_update(self, rank: int, values: dict[str, float]) -> None:
        """Add one update's statistics (a value for each of `keys`) to worker `rank`'s sums."""
        row = self.sums[rank]
        row[:-1] += torch.tensor([values[k] for k in self.keys], dtype=torch.float64)
        row[-1] += 1

    def add_episodes(self, rank: int, returns: Sequence[float], lengths: Sequence[float]) -> None:
        """Record the returns and lengths of episodes worker `rank` finished."""
        for episode_return, episode_length in zip(returns, lengths):
            slot = int(self.episode_counts[rank]) % self.window
            self.episode_returns[rank, slot] = episode_return
            self.episode_lengths[rank, slot] = episode_length
            self.episode_counts[rank] += 1

    # ------------------------------------------------------------------------ in the parent
    def read_updates(self) -> tuple[int, dict[str, float]]:
        """(updates since the last read, each statistic's mean over them; {} when there were none)."""
        sums = self.sums.numpy().copy()
        delta, self._sums_read = (sums - self._sums_read).sum(0), sums
        updates = int(delta[-1])
        if not updates:
            return 0, {}
        return updates, {key: float(delta[i] / updates) for i, key in enumerate(self.keys)}

    def read_episodes(self) -> tuple[list[float], list[float]]:
        """(returns, lengths) of the episodes finished since the last read, at most `window` per worker."""
        returns: list[float] = []
        lengths: list[float] = []
        for rank, count in enumerate(self.episode_counts.tolist()):
            slots = [i % self.window for i in range(max(self._episodes_read[rank], count - self.window), count)]
            returns += self.episode_returns[rank, slots].tolist()
            lengths += self.episode_lengths[rank, slots].tolist()
            self._episodes_read[rank] = count
        return returns, lengths


class WorkerPool:
    """Worker processes on a `StepBudget`, supervised by the parent (see the module docstring).

    Args:
        ctx: the multiprocessing context (its start method: "fork", "spawn" or "forkserver").
        budget: the budget the workers claim their steps from.
        name: the processes' name prefix (worker `rank` is "{name}-{rank}").
    """

    def __init__(self, ctx: Any, budget: StepBudget, name: str):
        self.ctx, self.budget, self.name = ctx, budget, name
        self.processes: list[Any] = []
        self.pipes: list[Any] = []
        self.stopped = False

    def start(self, target: Callable[..., None], workers: int, args: tuple[Any, ...]) -> None:
        """Start `workers` processes, worker `rank` running target(rank, budget, *args).

        `target` and `args` must be picklable under "spawn" (a module-level function). An
        exception in `target` sends its traceback to the parent and exits with code 1.
        """
        for rank in range(workers):
            reader, writer = self.ctx.Pipe(duplex=False)
            process = self.ctx.Process(
                target=_worker_main,
                name=f"{self.name}-{rank}",
                daemon=True,
                args=(target, rank, self.budget, args, writer),
            )
            process.start()
            writer.close()
            self.processes.append(process)
            self.pipes.append(reader)

    def wait_for(self, step: int) -> None:
        """Block until `step` global steps have been taken (at the budget: until every worker has
        exited, so that their last updates are in), or at once when the pool is stopped or has
        no worker running.

        Raises:
            TrainingError: a worker raised (its traceback is in the message), was killed, or
                exited with an error code.
        """
        while not self.stopped:
            running = [p.sentinel for p in self.processes if p.exitcode is None]
            self._check()  # after `running`: a worker that fails in between is waited on, then seen
            taken = self.budget.steps_taken()
            if not running or (taken >= step and taken < self.budget.total):
                return
            multiprocessing.connection.wait(running, timeout=POLL_S)

    def stop(self) -> None:
        """Stop the budget, join the workers with a timeout (`JOIN_TIMEOUT_S`), then terminate and
        kill those left; close the pipes. Safe to call more than once."""
        self.budget.stop()
        self.stopped = True
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        try:
            for process in self.processes:
                process.join(timeout=max(deadline - time.monotonic(), 0.0))
        finally:
            for escalate in ("terminate", "kill"):
                stragglers = [p for p in self.processes if p.is_alive()]
                for process in stragglers:
                    getattr(process, escalate)()
                for process in stragglers:
                    process.join(timeout=2.0)
            for pipe in self.pipes:
                pipe.close()
            self.pipes = []

    def _check(self) -> None:
        for rank, process in enumerate(self.processes):
            code = process.exitcode
            if code is None or code == 0:
                continue
            report = _receive_traceback(self.pipes[rank])
            if report is not None:
                what = f"worker {rank} raised an exception:\n{report}"
            elif code < 0:
                what = f"worker {rank} (pid {process.pid}) was killed by {signal.Signals(-code).name}."
            else:
                what = f"worker {rank} (pid {process.pid}) exited with code {code}."
            raise TrainingError(
                f"global step {self.budget.steps_taken()}: {what}\nThe run stopped (a run "
                "directory keeps its final state in checkpoints/latest.pt)."
            )


def _worker_main(
    target: Callable[..., None], rank: int, budget: StepBudget, args: tuple[Any, ...], error_pipe: Any
) -> None:
    """Entry point of worker process `rank`: run target(rank, budget, *args); on an exception send
    the traceback to the parent through `error_pipe` and exit with code 1.

    Ctrl-C is ignored here (the parent coordinates the stop); SIGTERM keeps its default.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        target(rank, budget, *args)
    except Exception:
        error_pipe.send(traceback.format_exc()[-30_000:])  # stays below the pipe's buffer
        error_pipe.close()
        sys.exit(1)


def _receive_traceback(pipe: Any) -> str | None:
    """The traceback a failed worker sent, or None (a killed worker's pipe is just closed)."""
    try:
        return pipe.recv() if pipe.poll() else None
    except (EOFError, OSError):
        return None
