"""IMPALA on Ray, on this machine: steps counted exactly, metrics, checkpoint and resume, an actor killed mid-run,
and the bad input refused before anything runs. The tests that train share one local Ray instance (2 CPUs),
started once for the module when the first of them needs it; the refusals need no Ray."""

from __future__ import annotations

import copy
import logging
import sys

import pytest
import torch

import acrl
from acrl.algos.impala import IMPALA, batch_unrolls, impala_loss
from acrl.cli import main as cli_main
from acrl.core.errors import InputError
from acrl.core.loop import Callback
from acrl.parts.actors import UnrollActor
from acrl.parts.workers import picklable_env
from tests.conftest import CueEnv, Frames, parameters_of, run_cli, steps_of

TINY = {"actors": 2, "n_envs": 2, "unroll_length": 10, "batch_size": 4, "eval_episodes": 2}
"""Each unroll 10 steps x 2 envs = 20 steps, each update 4 unrolls = 80 steps."""


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_a_run_counts_every_step_once_logs_its_metrics_and_resumes_from_its_checkpoint(tmp_path, local_ray):
    run = tmp_path / "run"
    agent = IMPALA("CartPole-v1", seed=3, eval_freq=1000, checkpoint_freq=1000, **TINY)
    agent.learn(2000, run_dir=run, progress=False)

    # 80 steps per update; the update before the evaluation at 1000 takes ceil(40 / 20) = 2 unrolls, as does the
    # last one, so the budget is spent exactly.
    expected = [*range(80, 1000, 80), 1000, *range(1080, 2000, 80), 2000]
    assert agent.num_steps == 2000 and steps_of(run) == expected
    assert agent.updates == len(expected)
    text = (run / "metrics.csv").read_text()
    for key in ("train/policy_loss", "train/value_loss", "train/entropy", "train/rho", "train/policy_lag"):
        assert key in text.splitlines()[0]
    assert (run / "eval.json").is_file() and (run / "checkpoints" / "best.pt").is_file()

    loaded = acrl.load(run / "checkpoints" / "latest.pt")
    assert type(loaded) is IMPALA and loaded.num_steps == 2000 and loaded.updates == agent.updates
    assert torch.equal(parameters_of(loaded), parameters_of(agent))
    for mine, theirs in zip(loaded.model.parameters(), agent.model.parameters()):  # RMSProp's statistics
        assert torch.equal(loaded.optimizer.state[mine]["square_avg"], agent.optimizer.state[theirs]["square_avg"])
    assert loaded.predict([0.0, 0.0, 0.0, 0.0]) == agent.predict([0.0, 0.0, 0.0, 0.0])

    loaded.learn(2400, run_dir=run, progress=False)  # acrl resume's path
    assert loaded.num_steps == 2400 and steps_of(run) == [*expected, 2080, 2160, 2240, 2320, 2400]
    assert not torch.equal(parameters_of(loaded), parameters_of(agent))


@pytest.mark.parametrize(
    "env, values",
    [
        (CueEnv, {"lstm_hidden_size": 8}),  # episodes of 4 steps, terminated and truncated in turn
        (Frames, {}),  # uint8 frames, a CNN, episodes truncated after 10 steps
        ("Pendulum-v1", {}),  # a Gaussian policy
    ],
    ids=["lstm", "frames", "gaussian"],
)
def test_the_learner_reruns_an_actors_unrolls_to_the_behaviour_log_probs_on_policy(env, values):
    # Without an update in between, pi = mu: the learner's rerun of two consecutive unrolls, each from its first
    # state and with the resets inside it, gives the log-probabilities the actor acted with (rho = 1).
    agent = IMPALA(env, seed=0, **values)
    actor = UnrollActor(0, picklable_env(agent.env), copy.deepcopy(agent.model), 2, 7, seed=0, weights=(0, [None]))
    actor.version = 0  # its model holds the weights of version 0 already: nothing to fetch (no Ray here)
    unrolls = [actor.unroll(), actor.unroll()]
    if env is CueEnv:
        assert unrolls[0].truncated.any() and unrolls[1].terminated.any() and unrolls[1].truncated.any()
        assert (unrolls[1].initial_state[0] != 0).any()  # the second starts from the state the first left
    batch = batch_unrolls(unrolls, agent.device)
    assert batch["observations"].shape[:2] == (8, 4) and batch["observations"].dtype == (
        torch.uint8 if env is Frames else torch.float32
    )
    log_probs, _, _ = agent.model.evaluate(
        batch["observations"], batch["actions"], batch["states"], batch["episode_starts"]
    )
    torch.testing.assert_close(log_probs[:-1], batch["behaviour_log_probs"], atol=1e-5, rtol=1e-5)
    loss, metrics = impala_loss(agent.model, batch, agent.config)
    assert metrics["rho"] == pytest.approx(1.0, abs=1e-5)
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in agent.model.parameters() if p.grad is not None)


class KillAnActor(Callback):
    """Kills actor 0's process once, after the run's third update."""

    def __init__(self, agent: IMPALA):
        self.agent, self.killed_at = agent, None

    def on_iteration(self, step, metrics):
        if self.killed_at is None and self.agent.updates == 3:
            import ray

            ray.kill(self.agent._pool.actors[0])
            self.killed_at = step


def test_an_actor_killed_mid_run_is_replaced_and_the_run_spends_its_budget_exactly(local_ray, capfd):
    agent = IMPALA("CartPole-v1", seed=1, eval_freq=0, **TINY)
    killer = KillAnActor(agent)
    agent.learn(1600, progress=False, callbacks=[killer])
    assert killer.killed_at == 240
    assert agent.num_steps == 1600 and agent.updates == 20  # its lost unrolls were never counted
    assert "IMPALA actor 0 died (ActorDiedError); starting a new one" in capfd.readouterr().err


def test_more_actors_than_the_cluster_has_cpus_is_refused_before_anything_is_written(tmp_path, local_ray):
    with pytest.raises(InputError, match=r"actors=3 asks for one CPU each, but the Ray cluster has 2 CPUs; use 2"):
        IMPALA("CartPole-v1", actors=3).learn(1000, run_dir=tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "env, values, message",
    [
        ("CartPole-v1", {"actors": 0}, "actors must be > 0, got 0"),
        ("CartPole-v1", {"unroll_length": 0}, "unroll_length must be > 0, got 0"),
        ("NoSuchEnv-v0", {}, "unknown environment"),
    ],
)
def test_bad_input_is_refused_when_the_agent_is_built(env, values, message):
    with pytest.raises(InputError, match=message):
        IMPALA(env, **values)


def test_without_ray_learning_is_refused_naming_the_extra_and_writes_nothing(tmp_path, monkeypatch):
    agent = IMPALA("CartPole-v1", **TINY)  # building and acting need no Ray
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    refusal = r"IMPALA's actors needs ray, which is not installed: .*pip install -e '\.\[ray\]'"
    with pytest.raises(InputError, match=refusal):
        agent.learn(1000, run_dir=tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["impala", "--env", "CartPole-v1", "--actors", "0"], "actors must be > 0, got 0"),
        (["impala", "--env", "CartPole-v1", "--set", "unroll_length=0"], "unroll_length must be > 0, got 0"),
        (["a3c", "--env", "CartPole-v1", "--actors", "2"], "--actors does not apply to a3c"),
    ],
)
def test_cli_bad_input_exits_2_in_one_line(argv, message, tmp_path, capsys):
    code = cli_main(["train", *argv, "--run-dir", str(tmp_path / "run"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_an_address_where_no_cluster_answers_exits_2_in_one_line_before_anything_is_written(tmp_path):
    pytest.importorskip("ray")
    argv = ["train", "impala", "--env", "CartPole-v1", "--address", "127.0.0.1:9", "--run-dir", str(tmp_path / "run")]
    result = run_cli(*argv, "--no-progress")  # its own process: this module's Ray would be joined instead
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("acrl: error: no Ray cluster answers at 127.0.0.1:9 within 10 s")
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "run").exists()
