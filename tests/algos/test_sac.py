"""SAC through the CLI: train writes a run directory, resume continues it, --dataset learns offline.

The CLI runs in-process (`acrl.cli.main`) to keep CI frugal; networks are tiny.
"""

import csv
import json
import math

import gymnasium as gym
import yaml

import acrl
from acrl.cli import main
from acrl.parts.datasets import collect_transitions, save_dataset
from acrl.parts.sources import DatasetSource

TINY = [
    "start_steps=200",
    "hidden_sizes=[16,16]",
    "batch_size=32",
    "iteration_steps=200",
    "eval_freq=600",
    "eval_episodes=1",
]


def run(capsys, *argv):
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def metric_steps(run_dir):
    with (run_dir / "metrics.csv").open() as f:
        return [int(float(row["step"])) for row in csv.DictReader(f)]


def test_train_then_resume(tmp_path, capsys):
    run_dir = tmp_path / "run"
    code, _, err = run(
        capsys,
        "train",
        "sac",
        "--env",
        "Pendulum-v1",
        "--total-steps",
        600,
        "--set",
        *TINY,
        "--no-progress",
        "--run-dir",
        run_dir,
    )
    assert code == 0, err
    for name in ("config.yaml", "metrics.csv", "checkpoints/latest.pt", "checkpoints/best.pt", "eval.json"):
        assert (run_dir / name).exists(), name
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert config["algo"] == "sac" and config["config"]["ent_coef"] is None
    with (run_dir / "metrics.csv").open() as f:
        header = next(csv.reader(f))
    assert {
        "train/value_loss",
        "train/policy_loss",
        "train/ent_coef",
        "train/entropy",
        "train/ent_coef_loss",
        "eval/return_mean",
    } <= set(header)
    assert metric_steps(run_dir)[-1] == 600
    assert -2000 < json.loads((run_dir / "eval.json").read_text())["return_mean"] <= 0
    first = acrl.load(run_dir / "checkpoints" / "latest.pt")
    assert first.num_steps == 600 and first.temperature().item() < 1.0  # alpha was tuned down from 1

    code, _, err = run(capsys, "resume", run_dir, "--total-steps", 1000, "--no-progress")
    assert code == 0, err
    steps = metric_steps(run_dir)
    assert steps == sorted(steps) and steps[-1] == 1000
    resumed = acrl.load(run_dir / "checkpoints" / "latest.pt")
    assert resumed.num_steps == 1000 and resumed.temperature().item() != first.temperature().item()


def test_offline_training_from_a_dataset(tmp_path, capsys):
    env = gym.make("Pendulum-v1")
    env.action_space.seed(0)
    data = collect_transitions(
        env, lambda obs: env.action_space.sample(), 300, 0, kind="random", behavioral_policy="uniform"
    )
    save_dataset(tmp_path / "random.hdf5", data)
    run_dir = tmp_path / "offline"
    code, _, err = run(
        capsys,
        "train",
        "sac",
        "--dataset",
        tmp_path / "random.hdf5",
        "--total-steps",
        60,
        "--run-dir",
        run_dir,
        "--no-progress",
        "--set",
        "hidden_sizes=[16,16]",
        "batch_size=32",
        "iteration_steps=30",
        "eval_freq=60",
        "eval_episodes=1",
    )
    assert code == 0, err
    agent = acrl.load(run_dir / "checkpoints" / "latest.pt")
    assert agent.config.env_id == "Pendulum-v1" and agent.step_unit == "update"
    assert (agent.num_steps, agent.updates) == (60, 60) and metric_steps(run_dir)[-1] == 60  # updates, offline
    assert isinstance(agent.source, DatasetSource) and len(agent.load_data()) == 300
    assert agent.temperature().item() != 1.0  # alpha moved: updates happened
    assert math.isfinite(json.loads((run_dir / "eval.json").read_text())["return_mean"])
