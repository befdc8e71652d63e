"""acrl tune: the search space, the study's pruning, and a small search on one shared local Ray instance."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest
import yaml

import acrl.core.plotting
from acrl.core.errors import InputError
from acrl.core.files import rounded
from acrl.sweep.tune import Dimension, Study, one_driver, parse_space, plot_study, run_tune, write_study
from tests.conftest import PPO_TINY, ROOT, run_cli

ray = pytest.importorskip("ray")
pytest.importorskip("optuna")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    yield
    ray.shutdown()


def test_the_space_reads_each_kind():
    space = parse_space(
        [
            "learning_rate=loguniform:1e-5:1e-2",
            "clip_range=uniform:0.1:0.3",
            "n_epochs=int:3:30",
            "batch_size=categorical:32,64,128",
        ]
    )
    assert space == {
        "learning_rate": Dimension("loguniform", 1e-5, 1e-2),
        "clip_range": Dimension("uniform", 0.1, 0.3),
        "n_epochs": Dimension("int", 3, 30),
        "batch_size": Dimension("categorical", choices=(32, 64, 128)),
    }


@pytest.mark.parametrize(
    "option, message",
    [
        ("learning_rate=log:1e-5:1e-2", "unknown kind 'log'"),
        ("learning_rate=loguniform:1e-5", "needs two numbers LOW:HIGH"),
        ("learning_rate=loguniform:0:1", "loguniform bounds must be > 0"),
        ("clip_range=uniform:0.3:0.1", "low must be below high"),
        ("n_epochs=int:3:7.5", "int bounds must be integers"),
        ("batch_size=categorical:", "categorical needs values"),
        ("learning_rate", "expects KEY=SPEC"),
    ],
)
def test_a_malformed_space_is_refused(option, message):
    with pytest.raises(InputError, match=message):
        parse_space([option])


def median_study(tmp_path) -> Study:
    """A study of one learning rate with the median pruner after one start-up trial, journal in tmp_path."""
    return Study(
        str(tmp_path / "study.journal"),
        seed=0,
        pruner="median",
        startup_trials=1,
        space={"learning_rate": Dimension("loguniform", 1e-4, 1e-2)},
    )


def test_the_median_pruner_stops_a_trial_below_the_median_of_earlier_ones_at_the_same_step(tmp_path):
    study = median_study(tmp_path)
    first, params = study.ask()
    assert 1e-4 <= params["learning_rate"] <= 1e-2
    assert not study.report(first, 100, 50.0) and not study.report(first, 200, 80.0)
    study.tell(first, 80.0, pruned=False)
    second, _ = study.ask()
    assert not study.report(second, 100, 60.0)  # above trial 0's 50 at step 100
    assert study.report(second, 200, 10.0)  # below trial 0's 80 at step 200: pruned
    study.tell(second, None, pruned=True)
    assert study.counts() == {"COMPLETE": 1, "PRUNED": 1}
    reopened = Study(str(tmp_path / "study.journal"), 0, "median", 1, {})  # the journal keeps the study
    assert [t["state"] for t in reopened.trials()] == ["COMPLETE", "PRUNED"]


def test_a_retried_trial_replaces_its_earlier_evaluations_for_the_pruner_and_the_table(tmp_path):
    study = median_study(tmp_path)
    first, _ = study.ask()
    study.report(first, 100, 50.0)
    study.report(first, 200, 80.0)
    study.tell(first, 80.0, pruned=False)
    second, _ = study.ask()
    assert not study.report(second, 100, 60.0)  # 60 > trial 0's 50 at step 100
    assert not study.report(second, 200, 85.0)  # best 85 > trial 0's 80 at step 200
    # The worker dies; the retry resumes from a checkpoint before step 100 and evaluates step 100 again.
    # Its metrics.csv now reads {100: 40}: best 40 < 50 at step 100, pruned. Keeping the first attempt's
    # values (Optuna's report ignores a step it has) would judge best 85 against 80 at step 200: not pruned.
    assert study.report(second, 100, 40.0)
    study.tell(second, None, pruned=True)
    assert [t["intermediate"] for t in study.trials()] == [{100: 50.0, 200: 80.0}, {100: 40.0}]
    assert study.trials()[1]["state"] == "PRUNED"


def test_a_retried_trial_that_is_pruned_is_valued_at_its_retrys_last_evaluation_not_its_dead_attempts(tmp_path):
    study = median_study(tmp_path)
    best, _ = study.ask()
    for step, value in ((1, 10.0), (2, 20.0), (3, 30.0)):
        study.report(best, step, value)
    study.tell(best, 30.0, pruned=False)
    retried, _ = study.ask()
    for step, value in ((1, 12.0), (2, 25.0), (3, 90.0)):  # its first attempt, above trial 0 at each step
        assert not study.report(retried, step, value)
    # The worker dies before the run ends; the retry resumes from a checkpoint before step 1 and
    # evaluates 5 there, below trial 0's 10: pruned. Its value is 5, not the dead attempt's 90 at step 3.
    assert study.report(retried, 1, 5.0)
    study.tell(retried, None, pruned=True)
    assert [(t["state"], t["value"]) for t in study.trials()] == [("COMPLETE", 30.0), ("PRUNED", 5.0)]

    record = {"algo": "ppo", "env_id": "CartPole-v1", "space": {"learning_rate": {}}, "set": {}}
    write_study(tmp_path, {**record, "pruner": "median", "seed": 0, "total_steps": 3}, study.trials())
    rows = [line for line in (tmp_path / "trials.md").read_text().splitlines() if line.startswith("| ")]
    assert rows[2].startswith("| 0 | complete | 30 |") and rows[3].startswith("| 1 | pruned | 5 |")


def test_a_second_driver_on_one_directory_is_refused_and_a_killed_one_leaves_no_lock(tmp_path):
    script = (
        "import sys, time; from pathlib import Path; from acrl.sweep.tune import one_driver\n"
        "with one_driver(Path(sys.argv[1])):\n    print('locked', flush=True); time.sleep(600)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path / "t")],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert holder.stdout.readline() == "locked\n"
        result = run_cli(
            "tune",
            "ppo",
            "--env",
            "CartPole-v1",
            "--trials",
            "2",
            "--startup-trials",
            "1",
            "--space",
            "learning_rate=loguniform:1e-4:1e-3",
            "--out",
            "t",
            cwd=tmp_path,
        )
        assert result.returncode == 2, result.stderr
        assert result.stderr.count("\n") == 1 and "another acrl tune is running the search in t" in result.stderr
    finally:
        holder.kill()  # SIGKILL: no cleanup of any kind runs
        holder.wait()
    with one_driver(tmp_path / "t"):  # the OS dropped the dead driver's lock
        pass


def test_the_studys_curves_panel_has_a_legend_of_the_trials_kinds(tmp_path, monkeypatch):
    kept = []
    monkeypatch.setattr(acrl.core.plotting, "save_figure", lambda fig, out: kept.append(fig) or out)
    trials = [
        {"number": 0, "state": "COMPLETE", "value": 80.0, "intermediate": {100: 50.0, 200: 80.0}},
        {"number": 1, "state": "PRUNED", "value": None, "intermediate": {100: 10.0}},
        {"number": 2, "state": "COMPLETE", "value": 90.0, "intermediate": {100: 60.0, 200: 90.0}},
        {"number": 3, "state": "PRUNED", "value": None, "intermediate": {100: 5.0}},
        {"number": 4, "state": "FAIL", "value": None, "intermediate": {100: 1.0}},
    ]
    plot_study(trials, tmp_path / "study.png")
    curves = kept[0].axes[1]
    assert [t.get_text() for t in curves.get_legend().get_texts()] == ["complete", "pruned", "failed", "best: trial 2"]
    assert [line.get_color() for line in curves.lines] == ["tab:blue", "grey", "grey", "black", "tab:red"]
    acrl.core.plotting.plt.close(kept[0])


def test_a_search_of_4_trials_writes_its_table_figure_and_best_preset_and_a_rerun_adds_none(tmp_path, local_ray):
    space = parse_space(["learning_rate=loguniform:1e-4:3e-3", "n_epochs=int:1:3"])
    summary = run_tune(
        "ppo", "CartPole-v1", 4, space, tmp_path, total_steps=512, overrides=PPO_TINY, startup_trials=2, progress=False
    )

    trials = summary["trials"]
    assert sorted(t["number"] for t in trials) == [0, 1, 2, 3]
    assert all(t["state"] in ("COMPLETE", "PRUNED") for t in trials)
    for t in trials:  # each trial is a run directory trained with its sampled values
        config = yaml.safe_load((tmp_path / f"trial-{t['number']:03d}" / "config.yaml").read_text())["config"]
        assert config["learning_rate"] == pytest.approx(t["params"]["learning_rate"])
        assert config["n_epochs"] == t["params"]["n_epochs"]
        assert sorted(t["intermediate"]) == [256, 512][: len(t["intermediate"])]
    complete = [t for t in trials if t["state"] == "COMPLETE"]
    best = max(complete, key=lambda t: t["value"])
    assert summary["best"]["number"] == best["number"]
    preset = yaml.safe_load((tmp_path / "preset.yaml").read_text())["CartPole-v1"]["tuned"]
    assert preset["learning_rate"] == best["params"]["learning_rate"] and preset["n_steps"] == PPO_TINY["n_steps"]
    assert "study.journal" in preset["source"] and f"best trial {best['number']}" in preset["source"]
    assert (tmp_path / "trials.md").read_text().count("\n| ") == 2 + 4  # header, rule and 4 trials
    assert (tmp_path / "study.png").stat().st_size > 10_000

    again = run_tune(
        "ppo", "CartPole-v1", 4, space, tmp_path, total_steps=512, overrides=PPO_TINY, startup_trials=2, progress=False
    )
    assert len(again["trials"]) == 4
    assert json.loads((tmp_path / "trials.json").read_text())["best"] == rounded(summary["best"])  # as written
    more = run_tune(
        "ppo", "CartPole-v1", 5, space, tmp_path, total_steps=512, overrides=PPO_TINY, startup_trials=2, progress=False
    )  # continued: one trial more, not a repeat of an earlier one
    params = {t["number"]: t["params"] for t in more["trials"]}
    assert len(params) == 5 and all(params[4] != params[n] for n in range(4))


def test_the_cli_refuses_a_malformed_space_and_an_unknown_key_before_starting(tmp_path):
    result = run_cli(
        "tune",
        "ppo",
        "--env",
        "CartPole-v1",
        "--trials",
        "2",
        "--space",
        "learning_rate=log:1:2",
        "--out",
        "t",
        cwd=tmp_path,
    )
    assert result.returncode == 2 and "unknown kind 'log'" in result.stderr
    result = run_cli(
        "tune",
        "ppo",
        "--env",
        "CartPole-v1",
        "--trials",
        "2",
        "--space",
        "learnin_rate=uniform:0:1",
        "--out",
        "t",
        cwd=tmp_path,
    )
    assert result.returncode == 2 and "unknown hyperparameter 'learnin_rate'" in result.stderr
    assert not (tmp_path / "t").exists()
