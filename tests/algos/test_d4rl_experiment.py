"""`acrl experiment d4rl`: D4RL's table at a tiny budget on Pendulum (the files, the table's shape, the normalised
scores against the returns they scale), its scores and IQM by hand, resuming, and the bad input it refuses before
any work."""

import csv
import filecmp
import json
import subprocess
import sys

import pytest

from acrl.cli import main
from acrl.offline.experiments import d4rl_scores
from acrl.offline.jobs import VALUE_KEYS, experiment_jobs, training_rate
from acrl.offline.report import results_table
from acrl.offline.spec import D4RL, DISCRETE
from acrl.parts.datasets import dataset_attrs, load_dataset

TINY = ["hidden_sizes=[32]", "batch_size=32"]
NO_VALUES = {key: [] for key in VALUE_KEYS}

PENDULUM = [
    *("experiment", "d4rl", "--env", "Pendulum-v1", "--kinds", "medium", "medium-replay"),
    *("--learners", "bc", "td3_bc", "--steps-behavioral", "400", "--eval-freq", "100", "--eval-episodes", "1"),
    *("--target-return", "-3000", "--expert-return", "-150", "--dataset-size", "300", "--updates", "200"),
    *("--no-progress", "--behavioral-set", *TINY, "--bc-set", *TINY, "--td3-bc-set", *TINY),
]
"""Two learners on Pendulum's medium and medium-replay datasets, whose one SAC stops at its first evaluation (step
100: any Pendulum episode returns more than -3000), 200 updates each; scores 100 (R - R_random) / (-150 - R_random)."""


@pytest.fixture(scope="module")
def pendulum(tmp_path_factory):
    """The PENDULUM experiment of seed 0, run once for the module: (its --out, its stdout)."""
    out = tmp_path_factory.mktemp("d4rl") / "exp"
    completed = subprocess.run(
        [sys.executable, "-m", "acrl", *PENDULUM, "--seeds", "0", "--out", str(out)], capture_output=True, text=True
    )
    assert completed.returncode == 0, completed.stderr
    return out, completed.stdout


def test_the_d4rl_experiment_writes_its_table_in_normalised_scores_and_resumes(pendulum, capsys):
    out, stdout = pendulum
    assert "| TD3+BC |" in stdout and "| BC |" in stdout and "Final normalised score (D4RL)" in stdout
    assert "expert -150.0 (--expert-return)" in stdout
    files = {"d4rl.json", "d4rl.md", "d4rl.png", "experiment.yaml", "sessions.json", "s0", "data-medium"}
    assert {p.name for p in out.iterdir()} == files  # one dataset per kind, not per seed
    # medium-replay is the medium SAC's buffer: one SAC, trained once, writes both
    data = {p.name for p in (out / "data-medium").iterdir()}
    assert data == {"medium.h5", "medium-replay.h5", "medium-sac-medium", "job.json"}
    assert len(load_dataset(out / "data-medium/medium-replay.h5")) == 100  # the SAC's 100 steps to its stop
    summary = json.loads((out / "d4rl.json").read_text())
    assert summary["kinds"] == ["medium", "medium-replay"] and summary["dataset_seed"] == 0
    assert list(summary["table"]) == ["behavioral", "td3_bc", "bc"]  # the spec's order: TD3+BC leads
    assert all(list(row) == ["medium", "medium-replay"] for row in summary["table"].values())
    for kind in summary["kinds"]:
        low = dataset_attrs(out / f"data-medium/{kind}.h5")["random_return"]
        assert low < -150.0
        behavioral = summary["results"][kind]["behavioral"][0]
        assert behavioral["score"] == pytest.approx(100 * (behavioral["return"] - low) / (-150.0 - low))
        for name in ("td3_bc", "bc"):
            run = summary["results"][kind][name][0]
            assert [step for step, _ in run["curve"]] == [100, 200]
            assert run["score"] == pytest.approx(100 * (run["final"] - low) / (-150.0 - low))
            rates = [float(r["time/fps"]) for r in csv.DictReader(open(f"{run['run_dir']}/metrics.csv"))]
            assert min(rates) <= run["updates_per_s"] <= max(rates)  # the iterations' rates, evaluations left out
            assert run["score_curve"][0][1] == pytest.approx(100 * (run["curve"][0][1] - low) / (-150.0 - low))
            cell = summary["table"][name][kind]
            assert cell["final"] == [pytest.approx(run["score"]), 0.0] and cell["final_return"] == [run["final"], 0.0]
    # The same command again resumes: every job is done, the summary is rewritten from them.
    assert main([*PENDULUM, "--seeds", "0", "--out", str(out)]) == 0
    assert "5 of 5 experiment jobs finished before" in capsys.readouterr().err
    again = json.loads((out / "d4rl.json").read_text())["results"]["medium"]
    assert again["bc"][0]["score"] == pytest.approx(summary["results"]["medium"]["bc"][0]["score"])


def test_a_part_on_the_datasets_of_another_merges_with_it_into_one_table(pendulum, tmp_path, capsys):
    """Seed 1 on seed 0's datasets (--datasets-from): the same files byte for byte, no SAC trained; merged with seed
    0's part, the table has both seeds and each cell is their mean. A part on other datasets does not merge."""
    first, _ = pendulum
    part = tmp_path / "s1"
    assert main([*PENDULUM, "--seeds", "1", "--datasets-from", str(first), "--out", str(part)]) == 0
    copied = part / "data-medium"
    assert {p.name for p in copied.iterdir()} == {"medium.h5", "medium-replay.h5", "job.json"}
    for name in ("medium.h5", "medium-replay.h5"):
        assert filecmp.cmp(copied / name, first / "data-medium" / name, shallow=False)
    ours, theirs = (json.loads((d / "d4rl.json").read_text()) for d in (part, first))
    assert ours["datasets_from"] == str(first) and ours["seeds"] == [1]
    for kind in ("medium", "medium-replay"):
        assert ours["results"][kind]["behavioral"] == theirs["results"][kind]["behavioral"]
    capsys.readouterr()
    merge = ["experiment", "d4rl", "--env", "Pendulum-v1", "--no-progress", "--merge"]
    assert main([*merge, str(first / "d4rl.json"), str(part / "d4rl.json"), "--out", str(tmp_path / "m")]) == 0
    assert "| TD3+BC |" in capsys.readouterr().out
    merged = json.loads((tmp_path / "m" / "d4rl.json").read_text())
    assert merged["seeds"] == [0, 1] and merged["kinds"] == ["medium", "medium-replay"]
    assert merged["dataset_seed"] == 0 and merged["reference"] == theirs["reference"]
    for kind in ("medium", "medium-replay"):
        scores = [p["results"][kind]["bc"][0]["score"] for p in (theirs, ours)]
        assert merged["table"]["bc"][kind]["final"][0] == pytest.approx(sum(scores) / 2)
    # Seed 1 with a dataset of other episodes (its data's episode return differs): refused, nothing written.
    other = json.loads((part / "d4rl.json").read_text())
    other["results"]["medium"]["behavioral"][0]["data_episode_return"] += 1.0
    (tmp_path / "other.json").write_text(json.dumps(other))
    argv = [*merge, str(first / "d4rl.json"), str(tmp_path / "other.json"), "--out", str(tmp_path / "m2")]
    assert main(argv) == 2
    assert "learners merge only on the same datasets" in capsys.readouterr().err
    assert not (tmp_path / "m2").exists()
    # Datasets of another environment: refused before anything is written.
    argv = ["experiment", "d4rl", "--env", "Hopper-v5", "--datasets-from", str(first), "--out", str(tmp_path / "h")]
    assert main(argv) == 2
    assert "is a dataset of Pendulum-v1, not of Hopper-v5" in capsys.readouterr().err
    assert not (tmp_path / "h").exists()


def test_a_run_s_training_rate_leaves_its_evaluations_out(tmp_path):
    # Rows of 100 updates at 50/s (2 s) and 200 at 100/s (2 s), the evaluations' time in no row: 300 in 4 s.
    (tmp_path / "metrics.csv").write_text("step,time/fps,time/elapsed_s\n100,50.0,9.0\n300,100.0,20.0\n")
    assert training_rate(tmp_path) == pytest.approx(75.0)


def test_scores_and_their_iqm_by_hand():
    # Hopper takes D4RL's references: random -20.272305, expert 3234.3, so R = -20.272305 + 3254.572305 x / 100
    # scores x. Four seeds of TD3+BC scoring 10, 20, 30, 40: IQM (25% trimmed mean) 25, mean 25, std sqrt(125).
    spec = D4RL.with_buffers(["medium"])
    returns = {score: -20.272305 + 3254.572305 * score / 100 for score in (10, 20, 30, 40, 50, 60)}
    runs = [
        {"curve": [[5, returns[60]], [10, returns[s]]], "final": returns[s], "best": returns[60], "values": NO_VALUES}
        for s in (10, 20, 30, 40)
    ]
    behavioral = [{"return": returns[50], "data_episode_return": returns[60]}] * 4
    results = {"medium": {"behavioral": [dict(b) for b in behavioral], "td3_bc": runs}}
    done = {"data-medium": {"medium": {"random_return": -123.0}}}  # measured here; Hopper's scores take D4RL's
    reference = d4rl_scores(spec, "Hopper-v5", None, results, done)
    assert "D4RL's hopper references" in reference and "random -20.3, expert 3234.3" in reference
    assert [run["score"] for run in runs] == pytest.approx([10, 20, 30, 40])
    assert runs[0]["score_curve"] == [[5, pytest.approx(60)], [10, pytest.approx(10)]]
    assert results["medium"]["behavioral"][0]["score"] == pytest.approx(50)
    table = results_table(spec, results)
    cell = table["td3_bc"]["medium"]
    assert cell["iqm"] == pytest.approx(25.0) and cell["final"] == [pytest.approx(25.0), pytest.approx(125**0.5)]
    assert cell["best"] == [pytest.approx(60.0), pytest.approx(0.0, abs=1e-9)]
    assert table["behavioral"]["medium"]["data_episodes"] == [pytest.approx(60.0), pytest.approx(0.0, abs=1e-9)]
    assert cell["iqm_ci"][0] <= 25.0 <= cell["iqm_ci"][1]


def test_the_d4rl_experiment_chooses_its_kinds_the_others_do_not():
    assert D4RL.with_buffers(["medium-expert", "random", "medium"]).buffers == ("random", "medium", "medium-expert")
    for kinds in ([], ["medium", "medium"], ["final"]):
        with pytest.raises(Exception, match="--kinds must be one or more of random, medium"):
            D4RL.with_buffers(kinds)
    with pytest.raises(Exception, match="the discrete experiment's buffers are fixed"):
        DISCRETE.with_buffers(["medium"])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--env", "Hopper-v5", "--expert-return", "3000"], "Hopper-v5 is one of D4RL's tasks"),
        (["--env", "Pendulum-v1"], "Pendulum-v1 is not one of D4RL's tasks"),
        (["--env", "CartPole-v1"], "For a Discrete action space run `acrl experiment discrete`"),
        (["--env", "Hopper-v5", "--kinds", "medium", "medium"], "--kinds must be one or more of"),
        (["--env", "Hopper-v5", "--iql-set", "expectile=1.5"], "(iql): expectile must lie in (0, 1)"),
        (["--env", "Hopper-v5", "--updates", "0"], "must be >= 1"),
        (["--env", "Hopper-v5", "--final-noise", "0.3"], "unrecognized arguments --final-noise 0.3"),
        (["--env", "Hopper-v5", "--datasets-from", "/nonexistent"], "no finished data-medium job"),
    ],
)
def test_bad_input_exits_2_before_announcing_or_writing_anything(argv, message, tmp_path, capsys):
    assert main(["experiment", "d4rl", *argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert " -> " not in err and not (tmp_path / "out").exists()


def test_each_kind_s_collection_gets_the_options_collect_d4rl_takes_for_it(tmp_path):
    spec = D4RL.with_buffers(["random", "medium", "medium-replay", "expert", "medium-expert"])
    settings = spec.resolve("Pendulum-v1", {"target_return": -900.0, "expert_return": -150.0, "steps_behavioral": 500})
    settings |= {"dataset_size": 300, "updates": 10, "eval_freq": 5}
    overrides = spec.overrides({"behavioral_overrides": {"batch_size": 32}})
    jobs = experiment_jobs(spec, "Pendulum-v1", tmp_path, [0, 1], settings, overrides, ["bc"], 0.99)
    collections = {job.name: job.kwargs for job in jobs if job.name.startswith("data-")}  # one per kind, not seed
    sac = {"train_steps": 500, "overrides": {"batch_size": 32, "eval_freq": 5, "eval_episodes": 10}}
    assert collections["data-random"] == {"kind": "random", "env_id": "Pendulum-v1", "seed": 0, "steps": 300}
    assert collections["data-expert"] == {**collections["data-random"], "kind": "expert", **sac}
    # --target-return stops the medium SAC; --expert-return is then the score's alone. Its job writes medium-replay
    # too (the same SAC's buffer): no job of its own.
    medium = {**collections["data-expert"], "kind": "medium", "target_return": -900.0, "with_replay": True}
    assert collections["data-medium"] == medium and "data-medium-replay" not in collections
    assert collections["data-medium-expert"]["target_return"] == -900.0
    trained = {job.name: job.kwargs["flags"]["dataset"] for job in jobs if not job.name.startswith("data-")}
    assert trained["s1/medium/bc"] == str(tmp_path / "data-medium/medium.h5")  # every seed on the one dataset
    assert trained["s0/medium-replay/bc"] == str(tmp_path / "data-medium/medium-replay.h5")
    alone = experiment_jobs(
        D4RL.with_buffers(["medium-replay"]), "Pendulum-v1", tmp_path, [0], settings, overrides, [], 0.99
    )
    assert [(job.name, job.kwargs["steps"]) for job in alone] == [("data-medium-replay", None)]  # where its SAC stops
    assert len(trained) == 2 * 5
