"""IMPALA on a 2-node Ray cluster on this machine (tests/conftest.py's `two_nodes`: a head and a second raylet,
one CPU each, which this process joins): the actors run on both nodes, and a run that loses the second node
mid-run goes on with the head's actor, its budget met exactly. The tests share the module's cluster; the
node-loss test, which stops the second raylet for good, comes last."""

from __future__ import annotations

import pytest

from acrl.algos.impala import IMPALA
from acrl.core.loop import Callback
from tests.conftest import steps_of

ray = pytest.importorskip("ray")

TINY = {"actors": 2, "n_envs": 2, "unroll_length": 10, "batch_size": 4, "eval_freq": 0}
"""Each unroll 10 steps x 2 envs = 20 steps, each update 4 unrolls = 80 steps."""


class ActorNodes(Callback):
    """Records, after each update in `at`, the Ray node of each living actor (`UnrollActor.ready`); after
    update `remove_at`, stops `node` of `cluster` (its raylet and the processes it started)."""

    def __init__(self, agent: IMPALA, at: tuple[int, ...], remove_at: int | None = None, cluster=None, node=None):
        self.agent, self.at, self.nodes = agent, at, {}
        self.remove_at, self.cluster, self.node = remove_at, cluster, node

    def on_iteration(self, step, metrics):
        if self.agent.updates in self.at:
            living = [actor for actor in self.agent._pool.actors if actor is not None]
            self.nodes[self.agent.updates] = ray.get([actor.ready.remote() for actor in living], timeout=60)
        if self.agent.updates == self.remove_at:
            self.cluster.remove_node(self.node)


def test_actors_run_on_both_nodes_and_the_run_meets_its_budget_exactly(two_nodes, tmp_path):
    cluster, worker = two_nodes
    agent = IMPALA("CartPole-v1", seed=0, **TINY)
    nodes = ActorNodes(agent, at=(1,))
    agent.learn(800, run_dir=tmp_path / "run", progress=False, callbacks=[nodes])
    assert sorted(nodes.nodes[1]) == sorted([cluster.head_node.node_id, worker.node_id])
    assert agent.num_steps == 800 and steps_of(tmp_path / "run") == list(range(80, 801, 80))


def test_a_run_that_loses_the_second_node_finishes_on_the_heads_actor_counting_steps_exactly(
    two_nodes, tmp_path, capfd
):
    cluster, worker = two_nodes
    agent = IMPALA("CartPole-v1", seed=1, **TINY)
    nodes = ActorNodes(agent, at=(2, 19), remove_at=3, cluster=cluster, node=worker)
    agent.learn(1600, run_dir=tmp_path / "run", progress=False, callbacks=[nodes])
    assert sorted(nodes.nodes[2]) == sorted([cluster.head_node.node_id, worker.node_id])
    assert nodes.nodes[19] == [cluster.head_node.node_id]  # the pool shrank to the head's one CPU
    # the unrolls lost with the node were never counted: 20 updates of 80 steps
    assert agent.num_steps == 1600 and steps_of(tmp_path / "run") == list(range(80, 1601, 80))
    err = capfd.readouterr().err
    assert "died (ActorDiedError) and the Ray cluster has 1 CPUs left; going on with 1 actors" in err
