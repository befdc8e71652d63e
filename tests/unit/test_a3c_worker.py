"""An A3C worker process runs with one torch thread and seeds its environment with seed + rank
(docs/correctness.md item 7), and anneals the shared learning rate over the horizon it is given."""

import os

import pytest
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


@pytest.mark.parametrize(("anneal_steps", "mean_fraction"), [(None, 0.25), (20, 0.55)])
def test_the_worker_anneals_the_learning_rate_over_anneal_steps_and_reports_it(anneal_steps, mean_fraction):
    """Budget 12, t_max 5, episodes of 5 steps: three updates, after the claims reached 5, 10 and 12 steps.
    The lr of each is lr0 (1 - claimed / horizon), floored at 0. Over the run's own budget (horizon 12):
    7/12, 1/6, 0, mean 1/4. Over anneal_steps 20 (Mnih et al. annealed over their whole experiment, not a run's
    budget): 0.75, 0.5, 0.4, mean 0.55. `train/lr` is that mean, and the optimizer holds the last one."""
    made = []
    agent = A3C(
        lambda: CountdownEnv(made),
        seed=0,
        workers=1,
        n_steps=5,
        hidden_sizes=(4,),
        learning_rate=0.01,
        anneal_lr=True,
        anneal_steps=anneal_steps,
    )
    budget = StepBudget(mp.get_context(), 1, 0, 12, parent_pid=os.getppid())
    stats = WorkerStats(1, UPDATE_STATS)
    shared = SharedState(
        agent.model, agent.parameters, agent.optimizer, agent.obs_normalizer, mp.get_context().Lock(), stats
    )
    original = torch.get_num_threads()
    try:
        run_worker(0, budget, agent.config, lambda: CountdownEnv(made), shared)
    finally:
        torch.set_num_threads(original)
    updates, means = stats.read_updates()
    assert updates == 3
    assert means["lr"] == pytest.approx(0.01 * mean_fraction)
    last = 0.0 if anneal_steps is None else 0.4
    assert agent.optimizer.param_groups[0]["lr"] == pytest.approx(0.01 * last)
