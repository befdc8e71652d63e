"""A3C contracts that need processes: no deadlock under fork and spawn, shared statistics,
checkpoints and resume, bad input, and clean stops on Ctrl-C, SIGTERM, a worker that raises
and a worker killed by the OS.

The failing workers come from `a3c_test_envs` (next to this file): environments that raise, or
SIGKILL their own process, at a given step.
"""

import contextlib
import csv
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

import acrl
from acrl import A3C
from acrl.cli import main as cli_main
from acrl.core.errors import InputError, TrainingError
from acrl.core.loop import Callback
from tests.conftest import live_children, signal_when_ready

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import a3c_test_envs  # noqa: E402

START_METHODS = [
    pytest.param(
        m,
        marks=pytest.mark.skipif(
            m not in multiprocessing.get_all_start_methods(), reason=f"no {m!r} start method here"
        ),
    )
    for m in ("fork", "spawn")
]


def assert_no_children_left():
    assert multiprocessing.active_children() == []
    assert live_children(os.getpid()) == []


@pytest.mark.parametrize("start_method", START_METHODS)
def test_workers_start_after_a_torch_forward_pass_and_join(start_method):
    """The parent has used torch (intra-op threads) before forking: 4 workers still sync and
    update at least 10 times each and all join well within 120 s (under "spawn" each worker
    imports torch: about 35 s for the four on a loaded 2-core machine)."""
    torch.set_num_threads(2)
    torch.nn.Linear(256, 256)(torch.randn(512, 256)).sum().item()
    started = time.monotonic()
    agent = A3C(
        "CartPole-v1", workers=4, n_steps=5, total_steps=200, eval_freq=0, seed=0, start_method=start_method
    ).learn(progress=False)
    assert time.monotonic() - started < 120
    assert agent.num_steps == 200
    assert agent.updates >= 40  # each update covers at most n_steps = 5 of the 200 steps
    step = agent.optimizer.state[agent.parameters]["step"].item()
    assert 10 <= step <= agent.updates  # the shared step count (lock-free updates may collide)
    assert_no_children_left()


def test_workers_with_several_envs_spend_the_budget_in_whole_rows():
    """2 workers of 3 envs, t_max 5, budget 301: rollouts of at most 15 steps, the counter ends
    at most 2 (n_envs - 1) past the budget, and the envs' episodes reach the statistics."""
    agent = A3C("CartPole-v1", workers=2, n_envs=3, n_steps=5, total_steps=301, eval_freq=0, seed=0)
    agent.learn(progress=False)
    assert 301 <= agent.num_steps <= 303
    assert agent.updates >= 301 // 15
    episodes = agent.episode_stats.metrics()  # CartPole pays 1 a step; its first episodes are short
    assert episodes["rollout/ep_return_mean"] == episodes["rollout/ep_len_mean"] > 0
    assert_no_children_left()


def test_run_dir_shared_normalizer_checkpoint_and_resume(tmp_path):
    """Continuous actions with observation normalization: the statistics shared by 2 workers
    count every step once, are saved in the checkpoint, and a resumed run continues."""
    run = tmp_path / "run"
    agent = A3C(
        "Pendulum-v1",
        workers=2,
        n_steps=10,
        total_steps=600,
        normalize_obs=True,
        eval_freq=300,
        eval_episodes=1,
        checkpoint_freq=300,
        log_freq=100,
        seed=1,
    )
    agent.learn(run_dir=run, progress=False)
    assert agent.num_steps == 600
    assert agent.obs_normalizer.stats.count.item() == 600
    for name in (
        "config.yaml",
        "metrics.csv",
        "eval.json",
        "learning_curve.png",
        "checkpoints/latest.pt",
        "checkpoints/best.pt",
    ):
        assert (run / name).exists(), name
    rows = list(csv.DictReader((run / "metrics.csv").open()))
    steps = [int(row["step"]) for row in rows]
    assert steps == sorted(set(steps)) and steps[-1] == 600  # one row per step: the final evaluation joins the last
    assert rows[-1]["eval/return_mean"] and rows[-1]["train/value_loss"]

    loaded = acrl.load(run / "checkpoints" / "latest.pt")
    assert isinstance(loaded, A3C) and loaded.num_steps == 600
    torch.testing.assert_close(loaded.obs_normalizer.stats.mean, agent.obs_normalizer.stats.mean)
    p, q = agent.parameters, loaded.parameters
    torch.testing.assert_close(q, p)
    assert loaded.optimizer.state[q]["step"].item() == agent.optimizer.state[p]["step"].item() > 0
    assert loaded.optimizer.state[q]["step"].is_shared() and q.is_shared()
    assert all(w.is_shared() and w.untyped_storage().data_ptr() == q.data_ptr() for w in loaded.model.parameters())
    obs = np.zeros(3, np.float32)
    np.testing.assert_array_equal(loaded.predict(obs), agent.predict(obs))

    loaded.learn(total_steps=900, run_dir=run, progress=False)
    assert loaded.num_steps == 900
    assert loaded.obs_normalizer.stats.count.item() == 900
    assert loaded.optimizer.state[q]["step"].item() > agent.optimizer.state[p]["step"].item()
    assert_no_children_left()


def test_rows_count_the_steps_taken_and_evaluate_where_the_counted_steps_cross_eval_freq(tmp_path):
    """The workers keep stepping while the parent evaluates (20 episodes here, longer than a
    100-step logging interval). On every row, time/fps is the steps taken since the previous
    row over the wall seconds since it (elapsed_s counts from the same clock), evaluations
    included, and a row evaluates exactly where its step passes a multiple of eval_freq (and at
    the end), whatever the timing. The rate's own arithmetic, with steps claimed but not taken,
    is tests/unit/test_a3c_parts.py::test_fps_counts_the_steps_taken_since_the_last_report_evaluations_included."""
    A3C(
        "CartPole-v1", workers=2, n_steps=20, total_steps=6000, eval_freq=1500, eval_episodes=20, log_freq=100, seed=0
    ).learn(run_dir=tmp_path, progress=False)
    rows = list(csv.DictReader((tmp_path / "metrics.csv").open()))
    steps = [0] + [int(row["step"]) for row in rows]
    elapsed = [0.0] + [float(row["time/elapsed_s"]) for row in rows]
    assert steps[-1] == 6000 and steps == sorted(set(steps))
    for i, row in enumerate(rows, 1):
        assert float(row["time/fps"]) == pytest.approx(
            (steps[i] - steps[i - 1]) / (elapsed[i] - elapsed[i - 1]), rel=1e-6
        ), i
        assert bool(row["eval/return_mean"]) == (steps[i] // 1500 > steps[i - 1] // 1500 or i == len(rows)), i


class SignalAtFirstRow(Callback):
    """Stops the run at its first row: by sending this process SIGINT (as Ctrl-C does) or by returning True."""

    def __init__(self, how: str):
        self.how, self.step = how, None

    def on_iteration(self, step, metrics):
        if self.step is None:
            self.step = step
            if self.how == "signal":
                os.kill(os.getpid(), signal.SIGINT)
        return self.how == "callback"


@pytest.mark.parametrize("how", ["signal", "callback"])
def test_the_last_row_holds_the_steps_the_workers_took_while_stopping(how, tmp_path):
    """When the run stops, the workers finish the rollouts they are in (and may start others before
    they see the stop), past the row where the stop came: the last row (after a signal, a row of
    its own; after a callback, the final evaluation's) is at the step checkpoints/latest.pt holds.
    (Before, a signal left the last row at the stop's step, behind latest.pt.)"""
    stop = SignalAtFirstRow(how)
    agent = A3C("CartPole-v1", workers=2, n_steps=50, total_steps=10**7, eval_freq=0, log_freq=200, seed=0)
    with pytest.raises(KeyboardInterrupt) if how == "signal" else contextlib.nullcontext():
        agent.learn(run_dir=tmp_path, progress=False, callbacks=[stop])
    steps = [int(row["step"]) for row in csv.DictReader((tmp_path / "metrics.csv").open())]
    assert steps[0] == stop.step and steps == sorted(set(steps)) and len(steps) <= 2
    assert steps[-1] == agent.num_steps == acrl.load(tmp_path / "checkpoints" / "latest.pt").num_steps
    assert_no_children_left()


def test_box_actions_reach_any_bounds():
    class Shifted(gym.Env):
        observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
        action_space = gym.spaces.Box(np.array([0.0, -10.0], np.float32), np.array([10.0, -5.0], np.float32))

    agent = A3C(Shifted, workers=1, log_std_init=2.0)
    with torch.no_grad():
        raw = agent.model.act(torch.zeros(500, 2), (), torch.zeros(500, dtype=torch.bool)).actions.numpy()
    actions = agent.action_adapter.to_env(raw)
    assert actions.shape == (500, 2)
    assert (actions >= Shifted.action_space.low).all() and (actions <= Shifted.action_space.high).all()
    assert actions[:, 0].min() == 0.0 and actions[:, 0].max() == 10.0  # the clipped ends are reached
    assert agent.predict(np.zeros(2, np.float32)) in Shifted.action_space


class MultiBinaryActions(gym.Env):
    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.MultiBinary(3)


class DictObservations(gym.Env):
    observation_space = gym.spaces.Dict({"x": gym.spaces.Box(-1, 1, (2,), np.float32)})
    action_space = gym.spaces.Discrete(2)


@pytest.mark.parametrize(
    "env, values, message",
    [
        ("CartPole-v9", {}, "unknown environment"),
        (MultiBinaryActions, {}, "action space"),
        (DictObservations, {}, "flat Box observation"),
        ("CartPole-v1", {"workers": 0}, "workers must be > 0"),
        ("CartPole-v1", {"n_steps": 0}, "n_steps must be > 0"),
    ],
)
def test_bad_input_raises_before_any_worker_starts(env, values, message):
    with pytest.raises(InputError, match=message):
        A3C(env, **values).learn(total_steps=100, progress=False)
    assert_no_children_left()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--env", "NoSuchEnv-v0"], "unknown environment"),
        (["--env", "Blackjack-v1"], "flat Box observation"),
        (["--env", "CartPole-v1", "--workers", "0"], "workers must be > 0"),
        (["--env", "CartPole-v1", "--set", "n_steps=0"], "n_steps must be > 0"),
    ],
)
def test_cli_bad_input_exits_2_without_workers(argv, message, tmp_path, capsys):
    code = cli_main(["train", "a3c", *argv, "--run-dir", str(tmp_path / "run"), "--no-progress"])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
    assert_no_children_left()


@pytest.mark.parametrize(
    "factory, cause",
    [
        (a3c_test_envs.make_raising_env, "FailingEnv: deliberate failure"),
        (a3c_test_envs.make_killing_env, "killed by SIGKILL"),
    ],
)
def test_failed_worker_stops_the_run_with_a_final_checkpoint(factory, cause, tmp_path):
    started = time.monotonic()
    with pytest.raises(TrainingError, match=cause) as info:
        A3C(factory, workers=2, n_steps=5, total_steps=10**7, eval_freq=0).learn(run_dir=tmp_path, progress=False)
    assert time.monotonic() - started < 30
    if "raise" in factory.__name__:
        assert "Traceback" in str(info.value) and "a3c_test_envs.py" in str(info.value)
    assert_no_children_left()
    assert acrl.load(tmp_path / "checkpoints" / "latest.pt", env=factory).num_steps > 0


# ------------------------------------------------------------------- the `acrl` command, as a user runs it
def run_cli(args: list[str], tmp_path: Path, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    code = "import sys, a3c_test_envs; from acrl.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=tmp_path,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kwargs,
    )


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_training_with_checkpoint_and_no_orphans(signum, tmp_path):
    run = tmp_path / "run"
    proc = run_cli(
        [
            "train",
            "a3c",
            "--env",
            "CartPole-v1",
            "--workers",
            "2",
            "--total-steps",
            "100000000",
            "--run-dir",
            str(run),
            "--no-progress",
            "--set",
            "eval_freq=0",
            "log_freq=200",
        ],
        tmp_path,
    )
    children: list[int] = []

    def workers_running() -> bool:
        if (run / "metrics.csv").exists():
            children.extend(live_children(proc.pid))
        return bool(children)

    stderr = signal_when_ready(proc, workers_running, signum, timeout=90)
    assert len(children) >= 2, "the workers were running"
    assert proc.returncode == 130, stderr
    assert all(
        not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        for pid in children
    )
    agent = acrl.load(run / "checkpoints" / "latest.pt")
    assert agent.num_steps > 0


def test_worker_exception_exits_1_with_its_traceback(tmp_path):
    proc = run_cli(
        [
            "train",
            "a3c",
            "--env",
            "acrl_test/FailingCartPole-v0",
            "--workers",
            "2",
            "--total-steps",
            "100000000",
            "--run-dir",
            str(tmp_path / "run"),
            "--no-progress",
            "--set",
            "eval_freq=0",
        ],
        tmp_path,
    )
    try:
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, stderr
    assert "raised an exception" in stderr and "Traceback" in stderr
    assert "RuntimeError: FailingEnv: deliberate failure" in stderr
    assert (tmp_path / "run" / "checkpoints" / "latest.pt").exists()
