"""A sweep on a 2-node Ray cluster on this machine (tests/conftest.py's `two_nodes`, one CPU per node)
that loses a node in the middle: the sweep still completes every run at its budget, once."""

from __future__ import annotations

import json
import threading
import time

import pytest

from acrl.sweep.grid import run_sweep
from acrl.sweep.jobs import ClusterOptions, is_done
from acrl.sweep.spec import SweepSpec
from tests.conftest import PPO_TINY as TINY
from tests.conftest import steps_of

pytest.importorskip("ray")


def test_a_sweep_that_loses_a_node_completes_every_run_at_its_budget(tmp_path, two_nodes):
    cluster, worker = two_nodes
    budget = 3072
    spec = SweepSpec("ppo", ["CartPole-v1"], [0, 1, 2, 3], {**TINY, "checkpoint_freq": 256}, total_steps=budget)
    runs = [tmp_path / f"CartPole-v1-s{seed}" for seed in range(4)]
    removed = []

    def remove_worker_once_both_nodes_have_checkpointed():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            busy = [r for r in runs if (r / "checkpoints" / "latest.pt").exists() and not is_done(tmp_path, r.name)]
            if len(busy) >= 2:
                cluster.remove_node(worker)
                removed.append([r.name for r in busy])
                return
            time.sleep(0.05)

    thread = threading.Thread(target=remove_worker_once_both_nodes_have_checkpointed, daemon=True)
    thread.start()
    summary = run_sweep(spec, tmp_path, ClusterOptions(address=cluster.address, retries=2), progress=False)
    thread.join(timeout=10)

    assert removed, "the worker node was never removed"
    assert summary["finished"] == 4
    attempts = {r.name: json.loads((r / "job.json").read_text())["attempts"] for r in runs}
    # Two runs were running, one per node, when the worker went: the one on it was lost and retried.
    assert sum(a[0].startswith("lost") for a in attempts.values()) == 1, attempts
    assert {a[-1] for a in attempts.values()} == {cluster.head_node.node_id}, attempts
    for run in runs:  # ... and every run reached its budget exactly once, rows without gap or repeat
        assert steps_of(run) == list(range(128, budget + 1, 128))
