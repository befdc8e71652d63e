"""The Hogwild process machinery (`acrl.parts.workers`) with tiny workers that train nothing: the budget,
waiting for steps, a worker that raises, one killed by the OS, one that will not stop, statistics."""

import multiprocessing
import os
import signal
import time

import pytest

from acrl.core.errors import TrainingError
from acrl.parts import workers as workers_module
from acrl.parts.workers import StepBudget, WorkerPool, WorkerStats

CTX = multiprocessing.get_context("fork")


def counting_worker(rank, budget, fail_rank=None, how=None):
    """Take the budget one step at a time; worker `fail_rank` fails after its first step ("raise" or "sigkill")."""
    while budget.claim(1):
        budget.count_taken(rank, 1)
        if rank == fail_rank:
            if how == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            raise RuntimeError(f"deliberate failure in worker {rank}")
        time.sleep(0.001)


def stubborn_worker(rank, budget):
    """Ignores the budget and SIGTERM: only SIGKILL ends it."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        time.sleep(0.01)


def pool_of(workers, total, start=0):
    budget = StepBudget(CTX, workers, start, total, parent_pid=os.getpid())
    return budget, WorkerPool(CTX, budget, "acrl-test-worker")


def test_wait_for_returns_at_the_step_and_at_the_budget_once_every_worker_has_exited():
    """2 workers, budget 200 from step 100 (a resumed run): 40 more steps are waited for; at the
    budget the wait lasts until both workers exit, when the steps taken are exactly the budget."""
    budget, pool = pool_of(2, 300, start=100)
    try:
        pool.start(counting_worker, 2, ())
        pool.wait_for(140)
        assert 140 <= budget.steps_taken() < 300
        pool.wait_for(300)
        assert [p.exitcode for p in pool.processes] == [0, 0]
        assert budget.steps_taken() == budget.claimed.value == 300
        assert budget.taken.sum().item() == 200 and (budget.taken > 0).all()
    finally:
        pool.stop()
    pool.wait_for(10**9)  # stopped: returns at once
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize(
    "how, message",
    [
        (
            "raise",
            r"worker 1 raised an exception:\n.*Traceback.*"
            "RuntimeError: deliberate failure in worker 1",
        ),
        ("sigkill", r"worker 1 \(pid \d+\) was killed by SIGKILL"),
    ],
)
def test_a_failed_worker_raises_training_error_in_the_parent(how, message):
    budget, pool = pool_of(2, 10**9)
    try:
        pool.start(counting_worker, 2, (1, how))
        with pytest.raises(TrainingError, match=r"(?s)global step \d+: " + message):
            pool.wait_for(10**9)
    finally:
        pool.stop()
    assert multiprocessing.active_children() == []
    assert budget.stopped.value == 1


def test_stop_terminates_then_kills_a_worker_that_does_not_stop(monkeypatch):
    monkeypatch.setattr(workers_module, "JOIN_TIMEOUT_S", 0.2)
    _, pool = pool_of(1, 10)
    pool.start(stubborn_worker, 1, ())
    time.sleep(0.2)  # it has installed its SIGTERM handler
    started = time.monotonic()
    pool.stop()
    assert time.monotonic() - started < 10
    assert pool.processes[0].exitcode == -signal.SIGKILL
    assert multiprocessing.active_children() == []


def test_claims_stop_when_the_parent_has_gone():
    """A worker whose parent is not the one the budget names (the parent died) is granted nothing."""
    budget = StepBudget(CTX, 1, 0, 10, parent_pid=os.getppid() + 1)
    assert budget.claim(5) == 0 and budget.claimed.value == 0


def test_worker_stats_reports_what_is_new_since_the_last_read():
    """Worker 0: updates with loss 1 and 3, worker 1: loss 5 -> mean (1 + 3 + 5) / 3 = 3 over 3 updates;
    then worker 1: loss 2 -> 2 over 1. Episodes: a window of 2 keeps a worker's last 2 unread ones."""
    stats = WorkerStats(2, ("loss",), window=2)
    for rank, loss in ((0, 1.0), (0, 3.0), (1, 5.0)):
        stats.add_update(rank, {"loss": loss})
    assert stats.read_updates() == (3, {"loss": 3.0})
    assert stats.read_updates() == (0, {})
    stats.add_update(1, {"loss": 2.0})
    assert stats.read_updates() == (1, {"loss": 2.0})
    stats.add_episodes(0, [10.0, 11.0, 12.0], [1, 2, 3])
    stats.add_episodes(1, [20.0], [4])
    assert stats.read_episodes() == ([11.0, 12.0, 20.0], [2.0, 3.0, 4.0])
    assert stats.read_episodes() == ([], [])
