"""Resuming: an off-policy run whose checkpoint has no replay buffer says what happens, once; a run directory laid
anew around a latest.pt copied from another machine gets the run's history back from it."""

import csv
import json
import shutil
import warnings

import pytest
import torch

import acrl
from acrl import DDPG
from acrl.cli import main
from acrl.core.checkpoint import restore_run_files, save_checkpoint
from acrl.core.errors import InputError

SMALL = {
    "hidden_sizes": (8,),
    "batch_size": 16,
    "start_steps": 50,
    "buffer_size": 1000,
    "eval_freq": 0,
    "iteration_steps": 50,
    "eval_episodes": 1,
}


@pytest.mark.parametrize("save_buffer", [False, True])
def test_resuming_without_the_replay_buffer_warns_once(tmp_path, save_buffer):
    DDPG("Pendulum-v1", seed=0, save_replay_buffer=save_buffer, **SMALL).learn(100, run_dir=tmp_path, progress=False)
    resumed = acrl.load(tmp_path / "checkpoints" / "latest.pt")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resumed.learn(150, run_dir=tmp_path, progress=False)
    messages = [str(w.message) for w in caught if "replay buffer" in str(w.message)]
    if save_buffer:
        assert messages == []
    else:
        assert len(messages) == 1
        assert messages[0].startswith("resuming at step 100 with an empty replay buffer")
        assert "the next 50 steps act uniformly at random" in messages[0]
        assert "save_replay_buffer=true" in messages[0]


def rows(path):
    with path.open() as f:
        return list(csv.DictReader(f))


def test_a_run_resumed_from_its_copied_latest_pt_keeps_its_curve_episodes_sessions_and_clock(tmp_path, capsys):
    """The first machine trains 400 steps (a row per 50-step iteration, two episodes); the second has only its
    latest.pt. `acrl resume` writes back the first machine's metrics.csv, episodes.csv and sessions.json as they
    were, and the run goes on from them: its rows after step 400 follow the first 400's, its clock counts the
    first session's seconds, its sessions are two."""
    first, second = tmp_path / "first", tmp_path / "second"
    DDPG("Pendulum-v1", seed=0, **{**SMALL, "eval_freq": 200}).learn(400, run_dir=first, progress=False)
    (second / "checkpoints").mkdir(parents=True)
    shutil.copyfile(first / "checkpoints" / "latest.pt", second / "checkpoints" / "latest.pt")

    assert main(["resume", str(second), "--total-steps", "450", "--no-progress"]) == 0
    assert "restored metrics.csv, episodes.csv, sessions.json from checkpoints/latest.pt" in capsys.readouterr().err
    before, after = rows(first / "metrics.csv"), rows(second / "metrics.csv")
    assert [row["step"] for row in before] == [str(50 * k) for k in range(1, 9)] and after[:8] == before
    assert [row["step"] for row in after[8:]] == ["450"]  # a row per iteration of 50 steps
    assert float(after[8]["time/elapsed_s"]) > float(before[-1]["time/elapsed_s"])
    episodes = rows(first / "episodes.csv")
    assert len(episodes) == 2 and rows(second / "episodes.csv")[:2] == episodes
    sessions = json.loads((second / "sessions.json").read_text())["train"]
    assert sessions[0] == json.loads((first / "sessions.json").read_text())["train"][0]
    assert [(s["start_step"], s["end_step"], s["precision"]) for s in sessions] == [
        (0, 400, "fp32"),
        (400, 450, "fp32"),
    ]
    assert restore_run_files(second) == []  # a directory that has its history keeps it


def test_a_checkpoint_that_would_write_outside_its_run_files_is_refused(tmp_path):
    path = tmp_path / "run" / "checkpoints" / "latest.pt"
    save_checkpoint(path, "ddpg", {}, {}, {}, run_files={"../../elsewhere.txt": "x", "metrics.csv": "step\n"})
    with pytest.raises(InputError, match=r"carries run files \['../../elsewhere.txt'\]; a checkpoint carries only"):
        restore_run_files(tmp_path / "run")
    assert not (tmp_path / "elsewhere.txt").exists() and not (tmp_path / "run" / "metrics.csv").exists()
    assert "run_files" in torch.load(path, weights_only=True)
