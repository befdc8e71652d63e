"""BCQ through the command line: train from a dataset (env from its attributes), evaluate, resume,
and bad input (a dataset that does not fit the environment, a missing file) with exit code 2;
plus a cheap learning check of discrete BCQ that fits CI."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
import torch
import yaml

from acrl import BCQ, DiscreteBCQ, load
from acrl.parts.datasets import collect_transitions, save_dataset
from tests.conftest import parameters_of

TINY = [
    "actor_hidden_sizes=[16]",
    "critic_hidden_sizes=[16]",
    "vae_hidden_sizes=[16]",
    "iteration_steps=10",
    "eval_episodes=1",
]


def acrl(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "acrl.cli", *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def random_dataset(path, env_id, steps, seed=0):
    env = gym.make(env_id)
    env.action_space.seed(seed)
    data = collect_transitions(
        env, lambda obs: env.action_space.sample(), steps, seed, kind="random", behavioral_policy="uniform"
    )
    save_dataset(path, data)
    return path


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("bcq-data")
    return {
        "pendulum": random_dataset(root / "pendulum.h5", "Pendulum-v1", 400),
        "cartpole": random_dataset(root / "cartpole.h5", "CartPole-v1", 200),
        "inverted": random_dataset(root / "inverted.h5", "InvertedPendulum-v5", 200),
    }


def read_metrics(run_dir):
    with open(Path(run_dir) / "metrics.csv") as f:
        return list(csv.DictReader(f))


def test_train_evaluate_resume_from_a_dataset(datasets, tmp_path):
    run = tmp_path / "run"
    result = acrl(
        "train",
        "bcq",
        "--dataset",
        datasets["pendulum"],
        "--total-steps",
        40,
        "--run-dir",
        run,
        "--no-progress",
        "--set",
        "eval_freq=20",
        *TINY,
    )
    assert result.returncode == 0, result.stderr
    final = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(final["returns"]) == 1 and final["return_mean"] < 0  # Pendulum's rewards are <= 0
    config = yaml.safe_load((run / "config.yaml").read_text())
    # The environment and its `default` preset come from the dataset's env_id attribute.
    assert config["algo"] == "bcq" and config["config"]["env_id"] == "Pendulum-v1"
    assert config["config"]["preset"] == "default" and config["config"]["batch_size"] == 100
    assert Path(config["config"]["dataset"]).is_absolute()
    assert (run / "checkpoints" / "best.pt").exists() and (run / "checkpoints" / "latest.pt").exists()
    eval_steps = [int(float(r["step"])) for r in read_metrics(run) if r.get("eval/return_mean")]
    assert eval_steps == [20, 40]  # learning curve against gradient updates

    result = acrl("evaluate", run, "--episodes", 2)
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)["returns"]) == 2

    result = acrl("resume", run, "--total-steps", 60, "--no-progress")
    assert result.returncode == 0, result.stderr
    steps = [int(float(r["step"])) for r in read_metrics(run)]
    assert steps == sorted(steps) and steps[-1] == 60 and 50 in steps


@pytest.mark.parametrize(
    "case",
    ["discrete-data-continuous-env", "continuous-data-discrete-env", "observation-size", "missing-file", "no-dataset"],
)
def test_bad_input_exits_2_with_a_clear_message(case, datasets, tmp_path):
    algo = "discrete_bcq" if case == "continuous-data-discrete-env" else "bcq"
    args, expected = {
        # CartPole's (N,) integer actions for InvertedPendulum's Box(1) (both have 4 observations).
        "discrete-data-continuous-env": (
            ["--dataset", datasets["cartpole"], "--env", "InvertedPendulum-v5"],
            "'actions' have shape (200,) but the action space needs (N, 1)",
        ),
        # InvertedPendulum's float actions for CartPole's Discrete(2).
        "continuous-data-discrete-env": (
            ["--dataset", datasets["inverted"], "--env", "CartPole-v1"],
            "not an integer; a Discrete action space needs integer actions",
        ),
        "observation-size": (
            ["--dataset", datasets["pendulum"], "--env", "Hopper-v5"],
            "'observations' have 3 values per row but the environment's observation space has shape (11,)",
        ),
        "missing-file": (["--dataset", tmp_path / "nope.h5"], "does not exist"),
        "no-dataset": (["--env", "Pendulum-v1"], "BCQ learns from a fixed dataset: pass --dataset FILE"),
    }[case]
    run = tmp_path / "run"
    result = acrl("train", algo, *args, "--run-dir", run, "--no-progress")
    assert result.returncode == 2, result.stderr
    assert expected in result.stderr
    assert "Traceback" not in result.stderr and "training" not in result.stderr  # checked before it starts
    assert not run.exists()  # nothing written that could pass for a run


def cartpole_expert(obs):
    """A linear controller that balances CartPole-v1 for the full 500 steps."""
    x, x_dot, theta, theta_dot = obs
    return int(theta + 0.5 * theta_dot + 0.01 * x + 0.1 * x_dot > 0)


def test_discrete_bcq_learns_cartpole_from_imperfect_expert_data(tmp_path):
    """Cheap learning check (CI): 3,000 transitions of an expert taking a uniformly random action
    30% of the time; 1,500 updates. An untrained agent scores ~10, a random policy ~22."""
    env = gym.make("CartPole-v1")
    env.action_space.seed(0)
    data = collect_transitions(env, cartpole_expert, 3_000, seed=0, random_prob=0.3, kind="imperfect")
    save_dataset(tmp_path / "cartpole.h5", data)
    agent = DiscreteBCQ(dataset=str(tmp_path / "cartpole.h5"), seed=0, hidden_sizes=(64, 64), eval_freq=0)
    untrained = agent.evaluate(episodes=3)["return_mean"]
    agent.learn(1_500, progress=False)
    trained = agent.evaluate(episodes=5)["return_mean"]
    assert untrained < 50
    assert trained >= 450, trained


def test_an_offline_run_resumed_from_its_checkpoint_equals_one_run_in_one_go(datasets, tmp_path):
    """An offline agent has no environment state to lose: 20 updates, a checkpoint, then 20 more from `acrl.load`
    end with the parameters and evaluation of 40 updates in one go (BCQ's VAE draws from torch's generator, which
    the checkpoint restores). What splitting a long offline study across sessions relies on."""
    tiny = {key: yaml.safe_load(value) for key, value in (item.split("=", 1) for item in TINY)}
    settings = dict(dataset=str(datasets["pendulum"]), seed=3, eval_freq=20, checkpoint_freq=20, **tiny)
    whole = BCQ("Pendulum-v1", **settings).learn(40, run_dir=tmp_path / "whole", progress=False)
    BCQ("Pendulum-v1", **settings).learn(20, run_dir=tmp_path / "split", progress=False)
    resumed = load(tmp_path / "split/checkpoints/latest.pt").learn(40, run_dir=tmp_path / "split", progress=False)
    assert torch.equal(parameters_of(whole), parameters_of(resumed))
    last = [read_metrics(tmp_path / run)[-1] for run in ("whole", "split")]
    assert last[0]["step"] == last[1]["step"] == "40" and last[0]["eval/return_mean"] == last[1]["eval/return_mean"]
