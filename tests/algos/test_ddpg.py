"""DDPG/TD3 contracts through the CLI: train, evaluate, offline training, `acrl collect` datasets.

The CLI runs in-process (`acrl.cli.main`) to keep CI frugal; networks are tiny.
"""

import json
import math

import gymnasium as gym
import numpy as np
import pytest

import acrl
from acrl.cli import main
from acrl.core.errors import InputError
from acrl.offline.collect import collect_dataset
from acrl.parts.datasets import load_dataset

TINY = ["hidden_sizes=[16, 16]", "batch_size=32", "start_steps=100", "iteration_steps=100", "eval_episodes=1"]

# InvertedPendulum cut at 8 steps: random actions end some episodes by termination (the pole
# falls past 0.2 rad) and others by the time limit, so a dataset holds both kinds of ends.
SHORT_ID = "acrl_test/ShortInvertedPendulum-v5"
if SHORT_ID not in gym.registry:
    gym.register(
        SHORT_ID, entry_point="gymnasium.envs.mujoco.inverted_pendulum_v5:InvertedPendulumEnv", max_episode_steps=8
    )


def run(capsys, *argv):
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def behavioral(tmp_path_factory):
    """A `final` collection on Pendulum (450 steps): its dataset and behavioral run directory."""
    out = tmp_path_factory.mktemp("final") / "pendulum-final.hdf5"
    data = collect_dataset(
        "final",
        out,
        450,
        env_id="Pendulum-v1",
        seed=2,
        overrides={
            "hidden_sizes": [16, 16],
            "batch_size": 32,
            "start_steps": 100,
            "iteration_steps": 150,
            "eval_freq": 150,
            "eval_episodes": 1,
        },
    )
    return out, data, out.with_name("pendulum-final-behavioral")


def test_train_writes_run_dir_that_evaluate_reads(tmp_path, capsys):
    run_dir = tmp_path / "run"
    code, out, err = run(
        capsys,
        "train",
        "td3",
        "--env",
        "Pendulum-v1",
        "--total-steps",
        "300",
        "--seed",
        "1",
        "--run-dir",
        str(run_dir),
        "--no-progress",
        "--set",
        *TINY,
        "eval_freq=200",
    )
    assert code == 0, err
    for name in (
        "config.yaml",
        "metrics.csv",
        "eval.json",
        "learning_curve.png",
        "checkpoints/best.pt",
        "checkpoints/latest.pt",
    ):
        assert (run_dir / name).exists(), name
    header = (run_dir / "metrics.csv").read_text().splitlines()[0].split(",")
    assert {"train/value_loss", "train/policy_loss", "eval/return_mean", "rollout/ep_return_mean"} <= set(header)
    code, out, err = run(capsys, "evaluate", str(run_dir), "--episodes", "2")
    assert code == 0, err
    result = json.loads(out)
    assert len(result["returns"]) == 2 and result["lengths"] == [200, 200] and result["deterministic"]
    assert -2000 < result["return_mean"] < 0  # Pendulum's rewards are in [-16.3, 0] per step


def test_collect_final_keeps_terminals_and_timeouts_apart(tmp_path, capsys):
    out = tmp_path / "short.hdf5"
    code, stdout, err = run(
        capsys,
        "collect",
        "--kind",
        "final",
        "--env",
        SHORT_ID,
        "--steps",
        "120",
        "--out",
        str(out),
        "--seed",
        "0",
        "--no-progress",
        "--set",
        "hidden_sizes=[16, 16]",
        "start_steps=200",
        "eval_episodes=1",
    )
    assert code == 0, err
    data = load_dataset(out)
    assert len(data) == 120 and json.loads(stdout)["transitions"] == 120
    ends = np.flatnonzero(data.terminals | data.timeouts)
    assert data.terminals.any() and data.timeouts.any() and not (data.terminals & data.timeouts).any()
    # episodes: a timeout exactly after 8 steps, a termination when the pole passes 0.2 rad
    lengths = np.diff(np.concatenate([[-1], ends]))
    assert (lengths[data.timeouts[ends]] == 8).all() and (lengths[data.terminals[ends]] < 8).all()
    assert (np.abs(data.next_observations[data.terminals, 1]) > 0.2).all()  # the true last state
    inside = np.setdiff1d(np.arange(len(data) - 1), ends)
    np.testing.assert_array_equal(data.next_observations[inside], data.observations[inside + 1])
    assert (np.abs(data.observations[ends[ends < len(data) - 1] + 1]) <= 0.01 + 1e-6).all()  # resets
    assert data.attrs["kind"] == "final" and data.attrs["env_id"] == SHORT_ID


def test_collect_final_dataset_and_behavioral_run(behavioral):
    out, data, run_dir = behavioral
    stored = load_dataset(out, gym.spaces.Box(-np.inf, np.inf, (3,)), gym.spaces.Box(-2.0, 2.0, (1,)))
    assert len(stored) == 450
    assert np.flatnonzero(stored.timeouts).tolist() == [199, 399] and not stored.terminals.any()
    attrs = stored.attrs
    assert (attrs["env_id"], attrs["kind"], attrs["seed"], attrs["algo"]) == ("Pendulum-v1", "final", 2, "ddpg")
    assert attrs["behavioral_policy"] == str(run_dir) and attrs["acrl_version"] == acrl.__version__
    assert attrs["noise_std"] == 0.1 and attrs["random_prob"] == 0.0
    assert (run_dir / "checkpoints" / "best.pt").exists() and (run_dir / "eval.json").exists()
    # the dataset is the behavioral agent's experience: the same rewards it logged per episode
    np.testing.assert_allclose(stored.rewards[:200].sum(), _first_episode_return(run_dir), rtol=1e-5)
    # the first 100 actions are uniform random in [-2, 2]; afterwards mu(s) + N(0, 0.1 * 2) noise
    assert np.abs(stored.actions).max() <= 2.0 and stored.actions[:100].std() > 0.8


def _first_episode_return(run_dir):
    import csv

    with (run_dir / "metrics.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r.get("rollout/ep_return_mean")]
    return float(rows[0]["rollout/ep_return_mean"])  # the first row with an episode: exactly one episode


def test_collect_imitation_and_imperfect_from_run_dir(behavioral, tmp_path, capsys):
    _, _, run_dir = behavioral
    policy = acrl.load(run_dir / "checkpoints" / "best.pt")
    code, _, err = run(
        capsys,
        "collect",
        "--kind",
        "imitation",
        "--steps",
        "50",
        "--policy",
        str(run_dir),
        "--out",
        str(tmp_path / "imitation.hdf5"),
        "--seed",
        "4",
    )
    assert code == 0, err
    imitation = load_dataset(tmp_path / "imitation.hdf5")
    np.testing.assert_allclose(imitation.actions, policy.predict(imitation.observations), atol=1e-6)
    assert imitation.attrs["behavioral_policy"] == str(run_dir) and imitation.attrs["kind"] == "imitation"
    assert imitation.attrs["noise_std"] == 0.0 and imitation.attrs["random_prob"] == 0.0
    code, _, err = run(
        capsys,
        "collect",
        "--kind",
        "imperfect",
        "--steps",
        "400",
        "--policy",
        str(run_dir),
        "--out",
        str(tmp_path / "imperfect.hdf5"),
        "--env",
        "Pendulum-v1",
    )
    assert code == 0, err
    imperfect = load_dataset(tmp_path / "imperfect.hdf5")
    assert (imperfect.attrs["noise_std"], imperfect.attrs["random_prob"]) == (0.3, 0.3)
    deviation = (imperfect.actions - policy.predict(imperfect.observations))[:, 0]
    assert np.abs(imperfect.actions).max() <= 2.0
    # N(0, 0.3 * 2) noise on 70% of the steps: far from the noiseless policy, but most within 3 sigma
    assert np.abs(deviation).mean() > 0.3 and np.mean(np.abs(deviation) < 1.8) > 0.7
    assert np.flatnonzero(imperfect.timeouts).tolist() == [199, 399]


def test_offline_training_from_dataset_through_cli(behavioral, tmp_path, capsys):
    out, _, _ = behavioral
    run_dir = tmp_path / "offline"
    code, _, err = run(
        capsys,
        "train",
        "ddpg",
        "--dataset",
        str(out),
        "--total-steps",
        "60",
        "--run-dir",
        str(run_dir),
        "--no-progress",
        "--set",
        "hidden_sizes=[16, 16]",
        "iteration_steps=30",
        "eval_episodes=1",
    )
    assert code == 0, err
    agent = acrl.load(run_dir / "checkpoints" / "latest.pt")
    assert agent.config.env_id == "Pendulum-v1" and agent.config.dataset == str(out)
    assert (agent.num_steps, agent.updates) == (60, 60)
    assert math.isfinite(json.loads((run_dir / "eval.json").read_text())["return_mean"])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--kind", "imitation", "--env", "Pendulum-v1"], "needs --policy"),
        (["--kind", "imperfect"], "needs --policy"),
        (["--kind", "final", "--env", "CartPole-v1"], "PPO or A3C"),
        (["--kind", "final"], "needs --env"),
        (["--kind", "bogus", "--env", "Pendulum-v1"], "--kind must be final, imitation, imperfect, random, medium,"),
        (["--kind", "concurrent", "--env", "Pendulum-v1"], "got 'concurrent'"),  # `acrl experiment concurrent`
        (["--kind", "final", "--env", "Pendulum-v1", "--steps", "0"], "positive integer"),
        (["--kind", "imitation", "--policy", "no/such/run"], "no checkpoint"),
    ],
)
def test_collect_bad_input_exits_2(tmp_path, capsys, argv, message):
    argv = ["collect", "--out", str(tmp_path / "x.hdf5"), *argv]
    if "--steps" not in argv:
        argv += ["--steps", "10"]
    code, out, err = run(capsys, *argv)
    assert code == 2 and message in err and "Traceback" not in err
    assert not (tmp_path / "x.hdf5").exists() and not (tmp_path / "x-behavioral").exists()


def test_collect_refuses_to_overwrite(behavioral, capsys):
    out, _, run_dir = behavioral
    before = out.stat().st_mtime_ns
    code, _, err = run(
        capsys, "collect", "--kind", "imitation", "--policy", str(run_dir), "--steps", "5", "--out", str(out)
    )
    assert code == 2 and "already exists" in err and out.stat().st_mtime_ns == before


def test_collect_imperfect_on_a_discrete_policy_is_epsilon_greedy_at_0_2_without_noise(tmp_path):
    ppo = acrl.PPO("CartPole-v1", seed=0, n_steps=64, batch_size=32, n_epochs=1)
    ppo.save(tmp_path / "ppo" / "checkpoints" / "best.pt")
    with pytest.raises(InputError, match="take random actions only .* default 0.2 for imperfect.*drop --noise"):
        collect_dataset("imperfect", tmp_path / "d.hdf5", 10, policy=tmp_path / "ppo", noise_std=0.3)
    data = collect_dataset("imperfect", tmp_path / "d.hdf5", 30, policy=tmp_path / "ppo")
    assert data.actions.dtype == np.int64 and data.attrs["algo"] == "ppo"
    assert (data.attrs["noise_std"], data.attrs["random_prob"]) == (0.0, 0.2)  # discrete BCQ's epsilon
    data = collect_dataset("imperfect", tmp_path / "e.hdf5", 30, policy=tmp_path / "ppo", random_prob=0.3)
    assert data.attrs["random_prob"] == 0.3
