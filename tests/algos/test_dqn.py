"""DQN through the CLI: `acrl train dqn` with the CartPole preset writes a run directory, `evaluate`
reads it, `resume` continues it; a continuous action space or a schedule past the budget exits 2.

The CLI runs in-process (`acrl.cli.main`) to keep CI frugal; networks are tiny.
"""

import csv
import json

import yaml

import acrl
from acrl.cli import main

TINY = ["start_steps=100", "hidden_sizes=[16]", "epsilon_decay_steps=300", "eval_freq=300", "eval_episodes=2"]


def run(capsys, *argv):
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_train_evaluate_resume(tmp_path, capsys):
    run_dir = tmp_path / "run"
    argv = ["train", "dqn", "--env", "CartPole-v1", "--total-steps", 600, "--set", *TINY, "--no-progress"]
    code, _, err = run(capsys, *argv, "--run-dir", run_dir)
    assert code == 0, err
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert config["algo"] == "dqn" and config["config"]["preset"] == "default"
    assert config["config"]["learning_rate"] == 0.0023 and config["config"]["encoder"] == "mlp"  # the zoo's preset
    with (run_dir / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert {"train/value_loss", "train/q_mean", "rollout/epsilon", "eval/return_mean"} <= set(rows[0])
    assert [int(r["step"]) for r in rows][-1] == 600
    code, out, err = run(capsys, "evaluate", run_dir, "--episodes", 2)
    assert code == 0, err
    assert len(json.loads(out)["returns"]) == 2
    code, _, err = run(capsys, "resume", run_dir, "--total-steps", 900, "--no-progress")
    assert code == 0, err
    assert acrl.load(run_dir / "checkpoints" / "latest.pt").num_steps == 900


def test_bad_input_exits_2(tmp_path, capsys):
    code, _, err = run(capsys, "train", "dqn", "--env", "MountainCarContinuous-v0", "--run-dir", tmp_path / "a")
    assert code == 2 and "ddpg, td3 or sac" in err and "--set action_bins=N splits each dimension" in err
    code, _, err = run(
        capsys, "train", "dqn", "--env", "CartPole-v1", "--total-steps", 5000, "--run-dir", tmp_path / "b"
    )
    assert code == 2 and "the epsilon schedule must end within the budget" in err  # the preset's 8,000 steps
    code, _, err = run(
        capsys, "train", "dqn", "--env", "CartPole-v1", "--set", "epsilon_end=2", "--run-dir", tmp_path / "c"
    )
    assert code == 2 and "epsilon_end must lie in [0, 1]" in err
    assert not any((tmp_path / d).exists() for d in "abc")
