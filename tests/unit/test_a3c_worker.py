"""An A3C worker process runs with one torch thread and seeds its environment with seed + rank
(docs/correctness.md item 7)."""

import os

import torch
import torch.multiprocessing as mp

from acrl import A3C
from acrl.algos.a3c import UPDATE_STATS, SharedState, run_worker
from acrl.parts.workers import StepBudget, WorkerStats
from tests.conftest import CountdownEnv


def test_a3c_worker_runs_with_one_torch_thread():
    """`run_worker` in this process (no child process needed), with a budget of 12 global steps."""
    made = []
    original = torch.get_num_threads()
    try:
        agent = A3C(lambda: CountdownEnv(made), seed=0, workers=1, n_steps=3, hidden_sizes=(4,))
        budget = StepBudget(mp.get_context(), 1, 0, 12, parent_pid=os.getppid())
        shared = SharedState(
            agent.model,
            agent.parameters,
            agent.optimizer,
            agent.obs_normalizer,
            mp.get_context().Lock(),
            WorkerStats(1, UPDATE_STATS),
        )
        torch.set_num_threads(3)  # what the worker inherits; it must drop to one thread itself
        run_worker(0, budget, agent.config, lambda: CountdownEnv(made), shared)
        worker_env = made[-1]
        assert worker_env.steps == 12 and budget.steps_taken() == 12
        assert worker_env.threads and set(worker_env.threads) == {1}  # at every reset and step
        assert torch.get_num_threads() == 1
        assert worker_env.resets[0] == agent.config.seed + 0  # rank 0: seed + rank
    finally:
        torch.set_num_threads(original)
