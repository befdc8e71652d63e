"""The local process pool (`acrl.sweep.local.LocalPool`, what `acrl sweep` and `acrl experiment`
use without --address): the contracts it shares with the Ray path, without Ray."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acrl.core.errors import InputError, TrainingError
from acrl.core.provenance import SESSIONS, wall_clock_s
from acrl.sweep.executor import run_jobs
from acrl.sweep.grid import train_run
from acrl.sweep.jobs import ClusterOptions, Job
from acrl.sweep.local import LocalPool
from tests.conftest import PPO_TINY as TINY
from tests.conftest import ROOT, KillOnce, git_head, steps_of


def test_a_killed_job_process_is_started_again_from_its_checkpoint_without_gap_or_duplicate_rows(tmp_path):
    marker = tmp_path / "killed"
    kwargs = {
        "algo": "ppo",
        "env_id": "CartPole-v1",
        "preset": None,
        "overrides": {**TINY, "checkpoint_freq": 512},
        "flags": {"seed": 0, "total_steps": 2048, "torch_threads": 1, "device": "cpu"},
        "callbacks": [KillOnce(str(marker))],
    }
    results = run_jobs([Job("killed-run", train_run, kwargs)], tmp_path / "sweep", ClusterOptions(), progress=False)

    assert int(marker.read_text()) == 512 + 256  # it died past its checkpoint at 512
    run = tmp_path / "sweep" / "killed-run"
    assert steps_of(run) == [128 * k for k in range(1, 17)]  # rows after 512 were dropped and redone once
    assert results["killed-run"]["steps"] == 2048
    assert json.loads((run / "job.json").read_text())["attempts"] == ["lost: killed by SIGKILL", "local"]


def finishes(root: Path, job_dir: Path, callbacks: list, value: int) -> dict:
    job_dir.mkdir(parents=True)
    return {"value": value}


def fails(root: Path, job_dir: Path, callbacks: list) -> dict:
    raise TrainingError("step 3: train/loss is nan; stopping.")


def test_a_job_that_raises_is_reported_once_and_the_others_complete(tmp_path):
    jobs = [Job("bad", fails), Job("good", finishes, {"value": 7})]
    with pytest.raises(TrainingError, match=r"1 of 2 runs failed \(bad: step 3: train/loss is nan; stopping.\)"):
        run_jobs(jobs, tmp_path, ClusterOptions(retries=3), progress=False)
    assert json.loads((tmp_path / "good" / "job.json").read_text()) == {"result": {"value": 7}, "attempts": ["local"]}
    assert not (tmp_path / "bad" / "job.json").exists()  # not done: a rerun tries it again
    assert run_jobs([Job("good", finishes, {"value": 8})], tmp_path, ClusterOptions(), progress=False) == {
        "good": {"value": 7}
    }  # finished before: skipped, its recorded result returned


def reads(root: Path, job_dir: Path, callbacks: list, source: str) -> dict:
    """A job whose input is another's output: that job's recorded value, plus one."""
    job_dir.mkdir(parents=True)
    return {"value": json.loads((root / source / "job.json").read_text())["result"]["value"] + 1}


def test_a_job_starts_once_those_it_waits_for_are_done_and_is_not_run_after_one_fails(tmp_path):
    jobs = [
        Job("first", finishes, {"value": 1}),
        Job("bad", fails),
        Job("second", reads, {"source": "first"}, after=("first",)),
        Job("third", reads, {"source": "second"}, after=("second",)),
        Job("needs-bad", finishes, {"value": 5}, after=("first", "bad")),
        Job("needs-that", finishes, {"value": 6}, after=("needs-bad",)),
    ]
    with pytest.raises(TrainingError, match=r"3 of 6 runs failed") as failed:
        run_jobs(jobs, tmp_path, ClusterOptions(), progress=False)
    assert "needs-bad: not run: it needs bad, which failed" in str(failed.value)
    assert "needs-that: not run: it needs needs-bad, which failed" in str(failed.value)
    assert json.loads((tmp_path / "third" / "job.json").read_text())["result"] == {"value": 3}  # 1, then 2, then 3
    assert not (tmp_path / "needs-bad").exists() and not (tmp_path / "needs-that").exists()
    with pytest.raises(ValueError, match=r"early waits for \['late'\], which are not listed before it"):
        unordered = [Job("early", finishes, {"value": 1}, after=("late",)), Job("late", finishes, {"value": 2})]
        run_jobs(unordered, tmp_path, ClusterOptions())


def test_each_call_that_runs_jobs_records_its_session_and_the_wall_clock_sums_them(tmp_path):
    run_jobs([Job("one", finishes, {"value": 1})], tmp_path, ClusterOptions(), progress=False, label="runs")
    run_jobs([Job("one", finishes, {"value": 1})], tmp_path, ClusterOptions(), progress=False, label="runs")  # done
    run_jobs([Job("two", finishes, {"value": 2})], tmp_path, ClusterOptions(), progress=False, label="runs")
    sessions = json.loads((tmp_path / SESSIONS).read_text())["runs"]
    assert len(sessions) == 2  # none for the call that had nothing to run
    assert all(s["started"] <= s["ended"] for s in sessions)
    assert all(s["commit"] == git_head() for s in sessions)  # the code each session ran

    # two sessions of one label, 90 s and 30 s (the second resumed it), and another label's
    (tmp_path / SESSIONS).write_text(
        json.dumps(
            {
                "experiment jobs": [
                    {"started": "2026-12-04T10:00:00+00:00", "ended": "2026-12-04T10:01:30+00:00"},
                    {"started": "2026-12-04T11:00:00+00:00", "ended": "2026-12-04T11:00:30+00:00"},
                ],
                "BCQ spectrum": [{"started": "2026-12-04T12:00:00+00:00", "ended": "2026-12-04T13:00:00+00:00"}],
            }
        )
    )
    assert wall_clock_s(tmp_path, "experiment jobs") == 120.0
    assert wall_clock_s(tmp_path, "runs") is None and wall_clock_s(tmp_path / "elsewhere", "runs") is None
    (tmp_path / SESSIONS).write_text('{"runs": [')  # cut short
    with pytest.raises(InputError, match=r"sessions.json is not valid JSON .* delete it to go on"):
        run_jobs([Job("three", finishes, {"value": 3})], tmp_path, ClusterOptions(), progress=False)


def session_processes(sid: int) -> list[str]:
    """Command lines of the live processes in session `sid` (zombies excluded)."""
    out = subprocess.run(["ps", "-eo", "sid=,stat=,args="], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.split()[0] == str(sid) and not line.split()[1].startswith("Z")]


def ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize(
    "signum, target, start",
    [
        (signal.SIGINT, "group", None),  # Ctrl-C in a terminal: the whole foreground process group
        (signal.SIGTERM, "driver", None),  # kill PID
        (signal.SIGINT, "driver", ignore_sigint),  # `acrl sweep ... &` in a script: SIGINT starts ignored
    ],
    ids=["ctrl-c", "sigterm", "sigint-in-background"],
)
def test_a_signal_checkpoints_every_running_run_exits_130_and_leaves_no_process(tmp_path, signum, target, start):
    out = tmp_path / "sweep"
    overrides = [f"{k}={v}" for k, v in {**TINY, "checkpoint_freq": 10**7}.items()]  # latest.pt only at the stop
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "acrl",
            "sweep",
            "ppo",
            "--env",
            "CartPole-v1",
            "--seeds",
            "0",
            "1",
            "--total-steps",
            str(10**7),
            "--set",
            *overrides,
            "--out",
            str(out),
            "--no-progress",
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=start,
    )
    try:
        runs = [out / f"CartPole-v1-s{seed}" for seed in (0, 1)]
        deadline = time.monotonic() + 120
        while not all((r / "metrics.csv").is_file() and len(steps_of(r)) >= 2 for r in runs):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.2)
        if target == "group":
            os.killpg(proc.pid, signum)
        else:
            os.kill(proc.pid, signum)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, stderr
    assert "acrl: stopping: each running run writes checkpoints/latest.pt" in stderr and "Traceback" not in stderr
    for run in runs:  # each stopped at an iteration boundary with its checkpoint, not counted as done
        assert (run / "checkpoints" / "latest.pt").is_file() and not (run / "job.json").exists()
        assert 0 < steps_of(run)[-1] < 10**7
    assert wait_for(lambda: not session_processes(proc.pid), timeout=15), session_processes(proc.pid)


def wait_for(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def test_the_progress_bar_reads_a_running_job_s_last_whole_row_of_steps(tmp_path):
    from acrl.sweep.executor import _last_step

    job = tmp_path / "s0" / "concurrent"
    (job / "behavioral").mkdir(parents=True)
    (job / "bcq").mkdir()
    (job / "behavioral" / "metrics.csv").write_text("step,train/loss\n1000,0.5\n2000,0.25\n")
    (job / "bcq" / "metrics.csv").write_text("step,train/loss\n1000,0.5\n3000,0.2")  # a row being written
    assert _last_step(job) == 2000  # the largest whole row; the header and the partial row do not count
    assert _last_step(tmp_path / "nothing-yet") == 0


@pytest.mark.parametrize(
    "share, expected",
    [(0.5, ["0", "0", "1", "1"]), (1.0, ["0", "1", "2", "3"]), (2.0, ["0,1", "2,3"]), (0.0, ["", "", "", ""])],
)
def test_each_slot_of_the_pool_sees_its_share_of_the_gpus(tmp_path, monkeypatch, share, expected):
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    pool = LocalPool(tmp_path, ClusterOptions(gpus_per_job=share))
    assert [pool._gpu_ids(slot) for slot in range(pool.slots)][:4] == expected
    assert pool.slots == (8 if share == 0 else min(8, int(4 // share)))


def test_more_gpus_per_run_than_the_machine_has_is_refused(tmp_path, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    with pytest.raises(InputError, match="each run asks for 1 GPU, but this machine has 0; lower --gpus-per-run"):
        LocalPool(tmp_path, ClusterOptions(gpus_per_job=1))


def test_a_sweep_with_a_budget_counts_steps_across_its_runs(tmp_path, capsys):
    from acrl.sweep.grid import SweepSpec, run_sweep

    run_sweep(SweepSpec("ppo", ["CartPole-v1"], [0, 1], TINY, total_steps=256), tmp_path, progress=True)
    err = capsys.readouterr().err
    assert "runs: 100%" in err and "| 512/512 [" in err, err  # 2 runs x 256 steps, not "2/2" runs


def test_a_sweep_on_this_machine_imports_ray_in_no_process(tmp_path):
    # A `ray` package first on the path that leaves a mark when imported, by the driver or by a job's
    # process (which inherits the path): the local path must not import Ray at all, installed or not.
    fake = tmp_path / "path" / "ray"
    fake.mkdir(parents=True)
    marker = tmp_path / "ray-imported"
    (fake / "__init__.py").write_text(
        f"import os\nopen({str(marker)!r}, 'a').write(f'{{os.getpid()}}\\n')\nraise ImportError('ray')\n"
    )
    overrides = [f"{k}={v}" for k, v in TINY.items()]
    result = subprocess.run(
        [sys.executable, "-m", "acrl", "sweep", "ppo", "--env", "CartPole-v1", "--total-steps", "256"]
        + ["--set", *overrides, "--out", str(tmp_path / "s"), "--no-progress"],
        env={**os.environ, "PYTHONPATH": f"{fake.parent}{os.pathsep}{ROOT}"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "s" / "CartPole-v1-s0" / "job.json").read_text())["attempts"] == ["local"]
    assert not marker.exists(), f"ray was imported by the processes {marker.read_text().split()}"
