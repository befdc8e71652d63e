"""IMPALA on Ray, on this machine: steps counted exactly and once, metrics, checkpoint and resume (with another
actor count), actors killed mid-run (replaced, or dropped when no CPU is left), a stalled run and a SIGTERM
ended cleanly, and the bad input refused before anything runs. The tests that train in this process share one
local Ray instance (2 CPUs), started once for the module when the first of them needs it; the SIGTERM test,
first, runs `acrl train impala` in a subprocess with a Ray of its own; the refusals need no Ray. The 2-node
tests are in test_impala_multinode.py."""

from __future__ import annotations

import copy
import logging
import os
import signal
import subprocess
import sys
import time

import gymnasium as gym
import pytest
import torch

import acrl
from acrl.algos.impala import IMPALA, batch_unrolls, impala_loss
from acrl.cli import main as cli_main
from acrl.core.errors import InputError, TrainingError
from acrl.core.loop import Callback
from acrl.parts import actors
from acrl.parts.actors import ActorPool, UnrollActor
from acrl.parts.workers import picklable_env
from tests.conftest import (
    ROOT,
    CueEnv,
    Frames,
    command_line,
    is_alive,
    live_children,
    parameters_of,
    run_cli,
    signal_when_ready,
    steps_of,
)

TINY = {"actors": 2, "n_envs": 2, "unroll_length": 10, "batch_size": 4, "eval_episodes": 2}
"""Each unroll 10 steps x 2 envs = 20 steps, each update 4 unrolls = 80 steps."""


def test_sigterm_stops_a_cli_run_with_exit_130_and_latest_pt_leaving_no_actor_or_raylet_behind(tmp_path):
    pytest.importorskip("ray")
    run = tmp_path / "run"
    argv = ["train", "impala", "--env", "CartPole-v1", "--actors", "1", "--total-steps", str(10**8)]
    argv += ["--run-dir", str(run), "--no-progress", "--set", "eval_freq=0", "n_envs=1", "batch_size=2"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "acrl", *argv],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    seen: set[int] = set()  # the driver's descendants: Ray's GCS, raylet, the actor's worker, ...

    def training_with_its_actor_up() -> bool:
        seen.update(live_children(proc.pid))
        names = " ".join(command_line(pid) for pid in seen)
        trained = (run / "metrics.csv").is_file() and len(steps_of(run)) >= 2
        return trained and "raylet" in names and "UnrollActor" in names

    try:
        stderr = signal_when_ready(proc, training_with_its_actor_up, signal.SIGTERM)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, stderr
    deadline = time.monotonic() + 10  # Ray's processes may take a moment to exit once told to
    while any(is_alive(pid) for pid in seen) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [command_line(pid) for pid in seen if is_alive(pid)] == []
    agent = acrl.load(run / "checkpoints" / "latest.pt")
    assert 0 < agent.num_steps == steps_of(run)[-1]


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_a_run_counts_every_step_once_logs_its_metrics_and_resumes_from_its_checkpoint(tmp_path, local_ray, capsys):
    run = tmp_path / "run"
    agent = IMPALA("CartPole-v1", seed=3, eval_freq=1000, checkpoint_freq=1000, **{**TINY, "actors": 1})
    agent.learn(2000, run_dir=run, progress=False)

    # 80 steps per update; the update before the evaluation at 1000 takes ceil(40 / 20) = 2 unrolls, as does the
    # last one, so the budget is spent exactly.
    expected = [*range(80, 1000, 80), 1000, *range(1080, 2000, 80), 2000]
    assert agent.num_steps == 2000 and steps_of(run) == expected
    assert agent.updates == len(expected)
    text = (run / "metrics.csv").read_text()
    for key in (
        "train/policy_loss",
        "train/value_loss",
        "train/entropy",
        "train/rho",
        "train/policy_lag",
        "train/wait_s",
    ):
        assert key in text.splitlines()[0]
    assert (run / "eval.json").is_file() and (run / "checkpoints" / "best.pt").is_file()

    loaded = acrl.load(run / "checkpoints" / "latest.pt")
    assert type(loaded) is IMPALA and loaded.num_steps == 2000 and loaded.updates == agent.updates
    assert torch.equal(parameters_of(loaded), parameters_of(agent))
    for mine, theirs in zip(loaded.model.parameters(), agent.model.parameters()):  # RMSProp's statistics
        assert torch.equal(loaded.optimizer.state[mine]["square_avg"], agent.optimizer.state[theirs]["square_avg"])
    assert loaded.predict([0.0, 0.0, 0.0, 0.0]) == agent.predict([0.0, 0.0, 0.0, 0.0])

    capsys.readouterr()
    assert cli_main(["resume", str(run), "--total-steps", "2400", "--actors", "2", "--no-progress"]) == 0
    assert "acrl: resuming with 2 actors (the checkpoint's run had 1)" in capsys.readouterr().err
    resumed = acrl.load(run / "checkpoints" / "latest.pt")
    assert resumed.num_steps == 2400 and steps_of(run) == [*expected, 2080, 2160, 2240, 2320, 2400]
    assert resumed.config.actors == 2 and not torch.equal(parameters_of(resumed), parameters_of(agent))

    assert cli_main(["resume", str(run), "--total-steps", "3000", "--actors", "0", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "actors must be > 0, got 0" in err and len(err.strip().splitlines()) == 1
    ppo = tmp_path / "ppo"
    acrl.PPO("CartPole-v1").save(ppo / "checkpoints" / "latest.pt")
    assert cli_main(["resume", str(ppo), "--total-steps", "3000", "--actors", "2", "--no-progress"]) == 2
    assert "--actors does not apply to ppo" in capsys.readouterr().err


class TargetNetwork(Callback):
    """Records, after each update, whether APPO's target network holds the policy's parameters."""

    def __init__(self, agent):
        self.agent, self.equal = agent, {}

    def on_iteration(self, step, metrics):
        pairs = zip(self.agent.model.parameters(), self.agent.target_model.parameters())
        self.equal[self.agent.updates] = all(torch.equal(p, q) for p, q in pairs)


def test_appo_runs_on_impalas_actors_refreshing_its_target_network_every_interval(tmp_path, local_ray):
    run = tmp_path / "run"
    agent = acrl.APPO("CartPole-v1", seed=2, eval_freq=0, target_update_interval=3, **TINY)
    target = TargetNetwork(agent)
    agent.learn(800, run_dir=run, progress=False, callbacks=[target])
    assert agent.num_steps == 800 and steps_of(run) == list(range(80, 801, 80))
    assert target.equal == {u: u % 3 == 0 for u in range(1, 11)}  # copied after updates 3, 6 and 9 only
    assert "train/clip_fraction" in (run / "metrics.csv").read_text().splitlines()[0]
    loaded = acrl.load(run / "checkpoints" / "latest.pt")
    assert type(loaded) is acrl.APPO and torch.equal(parameters_of(loaded), parameters_of(agent))


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


class KillActors(Callback):
    """After update u of the run, for each (u, rank, cpus) of `plan`: make the pool see a cluster of `cpus`
    CPUs (as after a node lost; None: the real count) and kill actor `rank`'s process."""

    def __init__(self, agent: IMPALA, plan: list[tuple[int, int, int | None]], monkeypatch):
        self.agent, self.plan, self.monkeypatch, self.killed_at = agent, plan, monkeypatch, []

    def on_iteration(self, step, metrics):
        import ray

        for update, rank, cpus in self.plan:
            if self.agent.updates == update:
                if cpus is not None:
                    self.monkeypatch.setattr(ActorPool, "_cpus", staticmethod(lambda cpus=cpus: cpus))
                ray.kill(self.agent._pool.actors[rank])
                self.killed_at.append(step)


@pytest.fixture
def taken(monkeypatch):
    """Every unroll `ActorPool.take` hands to the learner, in order."""
    unrolls = []
    take = ActorPool.take

    def recording(pool, count):
        unrolls.extend(take(pool, count))
        return unrolls[-count:]

    monkeypatch.setattr(ActorPool, "take", recording)
    return unrolls


def test_actors_killed_mid_run_are_replaced_or_dropped_and_each_step_is_counted_once(
    local_ray, capfd, monkeypatch, taken
):
    # Actor 0 is killed after update 3 and replaced; actor 1 after update 6 with one CPU left: it is dropped and
    # the run goes on with the new actor 0. The unrolls lost with them were never counted, those taken once each.
    agent = IMPALA("CartPole-v1", seed=1, eval_freq=0, **TINY)
    killer = KillActors(agent, [(3, 0, None), (6, 1, 1)], monkeypatch)
    agent.learn(1600, progress=False, callbacks=[killer])
    assert killer.killed_at == [240, 480]
    assert agent.num_steps == 1600 and agent.updates == 20 and agent._pool is None
    assert sum(u.steps for u in taken) == 1600 and len(taken) == 80
    assert len({u.observations.tobytes() for u in taken}) == 80  # no unroll taken twice
    err = capfd.readouterr().err
    assert "Ray actor 0 died (ActorDiedError); starting a new one" in err
    assert "Ray actor 1 died (ActorDiedError) and the Ray cluster has 1 CPUs left; going on with 1 actors" in err


def test_the_last_actor_dead_with_no_cpu_left_ends_the_run_with_a_training_error(local_ray, monkeypatch):
    agent = IMPALA("CartPole-v1", seed=1, eval_freq=0, **{**TINY, "actors": 1})
    killer = KillActors(agent, [(2, 0, 0)], monkeypatch)
    with pytest.raises(TrainingError, match=r"Ray actor 0 died \(ActorDiedError\) and no actor is left"):
        agent.learn(1600, progress=False, callbacks=[killer])
    assert agent.num_steps == 160 and agent._pool is None


def test_actors_that_send_no_unroll_within_the_deadline_end_the_run_with_a_training_error(local_ray, monkeypatch):
    class Stalls(gym.Wrapper):  # defined here: Ray sends it to the actors by value
        """CartPole that hangs at its 30th step."""

        steps = 0

        def step(self, action):
            self.steps += 1
            if self.steps == 30:
                time.sleep(3600)
            return super().step(action)

    start = ActorPool.start

    def start_then_shorten_the_deadline(pool, state_dict):
        start(pool, state_dict)
        monkeypatch.setattr(actors, "UNROLL_TIMEOUT_S", 3.0)

    monkeypatch.setattr(ActorPool, "start", start_then_shorten_the_deadline)
    agent = IMPALA(lambda: Stalls(gym.make("CartPole-v1")), seed=1, eval_freq=0, **{**TINY, "actors": 1})
    started = time.monotonic()
    with pytest.raises(TrainingError, match=r"no Ray actor sent an unroll within 3 s \(1 actors"):
        agent.learn(1600, progress=False)
    assert agent.num_steps == 0 and time.monotonic() - started < 60


def test_more_actors_than_the_cluster_has_cpus_is_refused_before_anything_is_written(tmp_path, local_ray):
    with pytest.raises(InputError, match=r"actors=3 asks for one CPU each, but the Ray cluster has 2 CPUs; use 2"):
        IMPALA("CartPole-v1", actors=3).learn(1000, run_dir=tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "env, values, message",
    [
        ("CartPole-v1", {"actors": 0}, "actors must be > 0, got 0"),
        ("CartPole-v1", {"unroll_length": 0}, "unroll_length must be > 0, got 0"),
        ("CartPole-v1", {"optimizer": "sgd"}, "optimizer must be 'rmsprop' or 'adam', got 'sgd'"),
        ("NoSuchEnv-v0", {}, "unknown environment"),
    ],
)
def test_bad_input_is_refused_when_the_agent_is_built(env, values, message):
    with pytest.raises(InputError, match=message):
        IMPALA(env, **values)


def test_the_adam_learner_first_moves_every_parameter_by_the_learning_rate_against_its_gradient():
    # Adam's first step (Kingma & Ba 2015, Algorithm 1, bias-corrected): m / sqrt(v) = g / |g|, so each weight
    # moves by lr * sign(g), where RMSProp's first step (epsilon 0.1 inside the root) moves it by
    # lr g / sqrt(0.01 g^2 + 0.1).
    agent = IMPALA("CartPole-v1", optimizer="adam", learning_rate=0.01, adam_eps=0.0)
    before = [p.detach().clone() for p in agent.model.parameters()]
    for p in agent.model.parameters():
        p.grad = torch.full_like(p, -3.0)
    agent.optimizer.step()
    for old, p in zip(before, agent.model.parameters()):
        torch.testing.assert_close(p.detach(), old + 0.01)


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
