"""acrl sweep on Ray: one local Ray instance shared by this module (2 CPUs, its traffic on loopback),
which `ClusterOptions(address="auto")` joins (the local pool's own tests: test_local_pool.py)."""

from __future__ import annotations

import csv
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from acrl.core.errors import InputError
from acrl.parts.ray_session import require
from acrl.sweep.cluster import read_files, run_job_elsewhere, write_files
from acrl.sweep.executor import run_jobs
from acrl.sweep.grid import expand, run_sweep, train_run
from acrl.sweep.jobs import ClusterOptions, Job, run_job_here
from acrl.sweep.spec import SweepSpec
from tests.conftest import PPO_TINY as TINY
from tests.conftest import ROOT, KillOnce, run_cli, signal_when_ready, steps_of

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers need not import tests/
    yield
    ray.shutdown()


def test_grid_of_2_seeds_and_2_learning_rates_writes_4_runs_a_table_and_a_figure_and_a_rerun_trains_nothing(tmp_path):
    spec = SweepSpec("ppo", ["CartPole-v1"], [0, 1], {"learning_rate": [3e-4, 1e-3], **TINY}, total_steps=512)
    summary = run_sweep(spec, tmp_path, ClusterOptions(address="auto"), progress=False)

    names = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert names == [
        "CartPole-v1-learning_rate=0.0003-s0",
        "CartPole-v1-learning_rate=0.0003-s1",
        "CartPole-v1-learning_rate=0.001-s0",
        "CartPole-v1-learning_rate=0.001-s1",
    ]
    for name in names:  # each an ordinary run directory, at its budget, with the grid's value
        run = tmp_path / name
        assert {"config.yaml", "metrics.csv", "eval.json", "job.json"} <= {p.name for p in run.iterdir()}
        assert (run / "checkpoints" / "latest.pt").is_file()
        assert steps_of(run) == [128 * k for k in range(1, 5)]
        assert ("learning_rate: 0.001" in (run / "config.yaml").read_text()) == ("0.001" in name)
    rows = {row["config"]: row for row in summary["table"]}
    assert sorted(rows) == ["CartPole-v1-learning_rate=0.0003", "CartPole-v1-learning_rate=0.001"]
    for config, row in rows.items():  # the statistics from each run's last evaluation, by the formulas
        finals = []
        for seed in (0, 1):
            with (tmp_path / f"{config}-s{seed}" / "metrics.csv").open() as f:
                finals.append(
                    float([r for r in csv.DictReader(f) if r.get("eval/return_mean")][-1]["eval/return_mean"])
                )
        assert row["seeds"] == 2
        assert row["mean"] == pytest.approx(np.mean(finals)) and row["std"] == pytest.approx(np.std(finals))
        assert row["iqm"] == pytest.approx(np.mean(finals))  # the IQM of two values trims nothing
        assert min(finals) <= row["mean_ci"][0] <= row["mean_ci"][1] <= max(finals)
    assert (tmp_path / "results.md").read_text().count("| CartPole-v1-learning_rate=") == 2
    assert json.loads((tmp_path / "results.json").read_text())["table"] == summary["table"]
    assert (tmp_path / "curves.png").stat().st_size > 10_000

    table = (tmp_path / "results.md").read_text()
    for name in ("results.md", "results.json", "curves.png"):
        (tmp_path / name).unlink()
    result = run_cli("plot", str(tmp_path))  # draws the table and figure again from the run directories
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "results.md").read_text() == table and (tmp_path / "curves.png").is_file()

    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file() and p.parent != tmp_path}
    # The same sweep again, from its own sweep.yaml, with RAY_ADDRESS naming a cluster that is not there:
    # a plain sweep runs on this machine whatever RAY_ADDRESS says, and it trains nothing and rewrites nothing.
    again = subprocess.run(
        [sys.executable, "-m", "acrl", "sweep", "--file", str(tmp_path / "sweep.yaml"), "--out", str(tmp_path)],
        env={**os.environ, "PYTHONPATH": str(ROOT), "RAY_ADDRESS": "127.0.0.1:9"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    assert "4 of 4 runs finished before" in again.stderr
    assert {p: p.stat().st_mtime_ns for p in before} == before


def test_a_killed_run_process_is_retried_from_its_checkpoint_without_gap_or_duplicate_rows(tmp_path):
    marker = tmp_path / "killed"
    kwargs = {
        "algo": "ppo",
        "env_id": "CartPole-v1",
        "preset": None,
        "overrides": {**TINY, "checkpoint_freq": 512},
        "flags": {"seed": 0, "total_steps": 2048, "torch_threads": 1, "device": "cpu"},
        "callbacks": [KillOnce(str(marker))],
    }
    results = run_jobs(
        [Job("killed-run", train_run, kwargs)], tmp_path / "sweep", ClusterOptions(address="auto"), progress=False
    )

    assert int(marker.read_text()) == 512 + 256  # it died past its checkpoint at 512
    run = tmp_path / "sweep" / "killed-run"
    assert steps_of(run) == [128 * k for k in range(1, 17)]  # rows after 512 were dropped and redone once
    assert results["killed-run"]["steps"] == 2048
    attempts = json.loads((run / "job.json").read_text())["attempts"]
    assert attempts[0] == "lost: WorkerCrashedError" and len(attempts) == 2


class Collect:
    """A sink that writes shipped files under the driver's root, as the Sink actor does."""

    def __init__(self, root: Path):
        self.root, self.calls = root, 0

    def __call__(self, files):
        self.calls += 1
        write_files(self.root, files)


def test_a_job_on_another_machine_ships_its_run_directory_to_the_driver(tmp_path):
    driver, node = tmp_path / "driver", tmp_path / "node"
    sink = Collect(driver)
    job = Job(
        "run",
        train_run,
        {
            "algo": "ppo",
            "env_id": "CartPole-v1",
            "preset": None,
            "overrides": TINY,
            "flags": {"seed": 0, "total_steps": 512, "device": "cpu"},
        },
    )
    outcome = run_job_elsewhere(job, node, {}, sink)

    assert outcome["status"] == "done" and outcome["result"]["steps"] == 512
    shipped = sorted(str(p.relative_to(driver)) for p in driver.rglob("*") if p.is_file())
    made = sorted(str(p.relative_to(node)) for p in node.rglob("*") if p.is_file())
    assert shipped == made and "run/eval.json" in shipped and "run/checkpoints/latest.pt" in shipped
    assert sink.calls >= 3  # two periodic checkpoints (256, 512) and the end
    assert (driver / "run" / "metrics.csv").read_bytes() == (node / "run" / "metrics.csv").read_bytes()


def test_resume_on_another_machine_starts_from_the_files_the_driver_sent(tmp_path):
    driver, node = tmp_path / "driver", tmp_path / "node"
    kwargs = {
        "algo": "ppo",
        "env_id": "CartPole-v1",
        "preset": None,
        "overrides": TINY,
        "flags": {"seed": 0, "total_steps": 256, "device": "cpu"},
    }
    run_job_here(Job("run", train_run, kwargs), driver)  # the driver holds a finished run
    events = sorted(p.name for p in (driver / "run").glob("events.out.tfevents.*"))
    shipped = read_files(driver, [driver / "run"])
    outcome = run_job_elsewhere(Job("run", train_run, kwargs), node, shipped, Collect(driver))
    assert outcome["result"]["steps"] == 256
    # Loaded from the shipped checkpoint and not trained again: a run trained on the node would have
    # written an event file of its own beside the driver's.
    assert sorted(p.name for p in (node / "run").glob("events.out.tfevents.*")) == events


@pytest.mark.parametrize(
    "values, message",
    [
        ({"learning_rat": [1e-3]}, "unknown hyperparameter 'learning_rat'"),
        ({"learning_rate": []}, "empty list"),
        ({"clip_range": ["a", "b"]}, "clip_range must be a number"),
    ],
)
def test_a_bad_grid_is_refused_before_anything_starts(tmp_path, values, message):
    with pytest.raises(InputError, match=message):
        run_sweep(SweepSpec("ppo", ["CartPole-v1"], [0], values), tmp_path / "s", progress=False)
    assert not (tmp_path / "s").exists()


def test_list_valued_fields_take_a_list_of_lists_as_an_axis_and_a_list_as_one_value():
    spec = SweepSpec("ppo", ["CartPole-v1"], [0], {"hidden_sizes": [[64, 64], [32]], **TINY})
    assert [run.name for run in expand(spec, ClusterOptions())] == [
        "CartPole-v1-hidden_sizes=64x64-s0",
        "CartPole-v1-hidden_sizes=32-s0",
    ]
    one = expand(SweepSpec("ppo", ["CartPole-v1"], [0], {"hidden_sizes": [64, 64], **TINY}), ClusterOptions())
    assert [run.overrides["hidden_sizes"] for run in one] == [[64, 64]]


def test_resources_larger_than_any_node_and_an_address_that_does_not_answer_are_refused(tmp_path):
    spec = SweepSpec("ppo", ["CartPole-v1"], [0], TINY, total_steps=256)
    with pytest.raises(InputError, match="each run asks for 64 CPU .* largest node of the cluster has 2 CPU"):
        run_sweep(spec, tmp_path / "big", ClusterOptions(cpus_per_job=64, address="auto"), progress=False)
    with pytest.raises(InputError, match="each run asks for 64 CPU, but this machine"):  # local: before Ray starts
        run_sweep(spec, tmp_path / "big", ClusterOptions(cpus_per_job=64), progress=False)


def test_the_cli_refuses_a_sweep_without_an_algorithm_an_unknown_env_and_a_dead_address(tmp_path):
    result = run_cli("sweep", "--env", "CartPole-v1", cwd=tmp_path)
    assert result.returncode == 2 and "needs ALGO or --file" in result.stderr
    result = run_cli("sweep", "ppo", "--env", "NoSuchEnv-v0", "--out", "s", cwd=tmp_path)
    assert result.returncode == 2 and "NoSuchEnv-v0" in result.stderr and not (tmp_path / "s").exists()
    assert " -> " not in result.stderr  # no sweep directory announced for a sweep that never starts
    result = run_cli("sweep", "ppo", "--env", "CartPole-v1", "--address", "127.0.0.1:9", "--out", "s", cwd=tmp_path)
    assert result.returncode == 2 and "no Ray cluster answers at 127.0.0.1:9" in result.stderr


def test_a_sweep_file_gives_the_grid_and_unknown_keys_are_named(tmp_path):
    path = tmp_path / "grid.yaml"
    path.write_text("algo: ppo\nenv: CartPole-v1\nseeds: [0, 1]\ntotal_steps: 512\nset:\n  gae_lambda: [0.9, 0.95]\n")
    spec = SweepSpec.from_file(path)
    assert (spec.algo, spec.envs, spec.seeds, spec.total_steps) == ("ppo", ["CartPole-v1"], [0, 1], 512)
    assert len(expand(spec, ClusterOptions())) == 4
    path.write_text("algo: ppo\nenvs: [CartPole-v1]\n")
    with pytest.raises(InputError, match="unknown key.*envs"):
        SweepSpec.from_file(path)


def test_a_missing_extra_names_what_to_install():
    with pytest.raises(InputError, match=r"install acrl's ray extra: pip install -e '\.\[ray\]'"):
        require("acrl_no_such_module", "acrl sweep")


def test_interval_estimates_of_a_curve_take_the_iqm_of_each_point():
    from acrl.sweep.results import interval_estimates

    curve = np.array([[1.0, 10.0], [2.0, 40.0], [3.0, 20.0], [100.0, 30.0]])  # 4 runs x 2 points
    stats = interval_estimates({"c": curve, "final": curve[:, 1]})["c"]
    assert stats["iqm"] == pytest.approx([2.5, 25.0])  # the middle two runs of each point
    assert stats["mean"] == pytest.approx([26.5, 25.0])
    assert interval_estimates({"final": curve[:, 1]})["final"]["iqm"] == pytest.approx(25.0)
    low, high = stats["iqm_ci"]
    assert all(lo <= point <= hi for lo, point, hi in zip(low, stats["iqm"], high))


def ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize(
    "signum, start", [(signal.SIGTERM, None), (signal.SIGINT, ignore_sigint)], ids=["sigterm", "sigint-in-background"]
)
def test_a_signal_to_a_driver_on_ray_checkpoints_every_running_run_and_ends_it(tmp_path, signum, start):
    # Before: SIGTERM met Ray's own handler (a C++ stack dump, exit 134), and a driver started with
    # SIGINT ignored trained on. The driver joins this module's Ray by its address.
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
            "--address",
            ray.get_runtime_context().gcs_address,
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=start,
    )
    runs = [out / f"CartPole-v1-s{seed}" for seed in (0, 1)]
    try:
        stderr = signal_when_ready(
            proc, lambda: all((r / "metrics.csv").is_file() and len(steps_of(r)) >= 2 for r in runs), signum
        )
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, stderr
    assert "acrl: stopping: each running run writes checkpoints/latest.pt" in stderr
    assert "SIGTERM received" not in stderr
    for run in runs:
        assert (run / "checkpoints" / "latest.pt").is_file() and not (run / "job.json").exists()
        assert 0 < steps_of(run)[-1] < 10**7


def test_a_port_that_is_not_a_ray_head_is_refused_in_one_line_within_the_connect_timeout(monkeypatch):
    from acrl.parts import ray_session

    monkeypatch.setattr(ray_session, "CONNECT_TIMEOUT_S", 3.0)
    server = socket.create_server(("127.0.0.1", 0))  # accepts connections, speaks no gRPC
    address = f"127.0.0.1:{server.getsockname()[1]}"
    started = time.monotonic()
    with server, pytest.raises(InputError, match=f"{address} answers, but not as the head of a Ray cluster within 3 s"):
        ray_session.cluster_metadata(address)
    assert time.monotonic() - started < 3.0 + 2.0  # before: Ray's client, 40 s and its C++ warnings


def test_a_cluster_with_another_ray_or_python_is_refused_naming_what_was_found():
    import platform

    from acrl.parts.ray_session import check_versions, cluster_metadata

    ours = cluster_metadata(ray.get_runtime_context().gcs_address)  # this module's Ray: the same versions
    assert (ours["ray_version"], ours["python_version"]) == (ray.__version__, platform.python_version())
    check_versions("h:1", ours)
    with pytest.raises(
        InputError,
        match=rf"the Ray cluster at h:1 runs Ray 2\.9\.3 on Python 3\.10\.4, this driver "
        rf"Ray {ray.__version__} on Python {platform.python_version()}",
    ):
        check_versions("h:1", {**ours, "ray_version": "2.9.3", "python_version": "3.10.4"})


def test_a_sweep_joins_a_running_cluster_by_its_address(tmp_path):
    address = ray.get_runtime_context().gcs_address  # this module's Ray, as `ray start --head` would run it
    overrides = [f"{k}={v}" for k, v in TINY.items()]
    result = run_cli(
        "sweep",
        "ppo",
        "--env",
        "CartPole-v1",
        "--total-steps",
        "256",
        "--set",
        *overrides,
        "--address",
        address,
        "--out",
        str(tmp_path / "s"),
        "--no-progress",
    )
    assert result.returncode == 0, result.stderr
    attempts = json.loads((tmp_path / "s" / "CartPole-v1-s0" / "job.json").read_text())["attempts"]
    assert attempts == [ray.get_runtime_context().get_node_id()]  # it ran as a task of that cluster


def test_address_auto_without_a_cluster_here_and_a_malformed_address_are_one_line_each(monkeypatch):
    import ray._private.services as services

    from acrl.parts.ray_session import reachable

    monkeypatch.setattr(services, "canonicalize_bootstrap_address", lambda address: None)  # no RAY_ADDRESS, no cluster
    with pytest.raises(
        InputError,
        match=r"--address auto: no Ray cluster runs on this machine; start one with `ray "
        r"start --head`, or drop --address",
    ):
        reachable("auto")
    with pytest.raises(InputError, match="--address must be auto or HOST:PORT .* got 'head-node'"):
        reachable("head-node")
