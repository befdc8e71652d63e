"""`acrl collect` of D4RL's kinds (acrl.offline.d4rl) on Pendulum with tiny SACs: contents, returns, refusals."""

import json
from pathlib import Path

import numpy as np
import pytest

from acrl.cli import main
from acrl.offline.d4rl import collect_d4rl, sac_run_dir
from acrl.parts.datasets import D4RL_KEYS, load_dataset

SAC = {"hidden_sizes": [16, 16], "batch_size": 32, "start_steps": 100, "eval_freq": 200, "eval_episodes": 1}
SAC |= {"iteration_steps": 100}
"""A SAC that evaluates every 200 steps: a target of -2000 (below any Pendulum return of a policy this young)
stops it at its first evaluation."""
SET = ["--set", *(f"{key}={value}" for key, value in SAC.items())]


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def expert(tmp_path_factory):
    """An `expert` collection whose SAC trained here for 400 steps: (dataset, its run directory)."""
    out = tmp_path_factory.mktemp("expert") / "e.h5"
    data = collect_d4rl("expert", out, 300, env_id="Pendulum-v1", train_steps=400, overrides=SAC)
    return data, sac_run_dir(out, "expert")


@pytest.fixture(scope="module")
def medium(tmp_path_factory):
    """A `medium` collection of 150 transitions, its SAC stopped at -2000, with the same SAC's medium-replay
    written beside it (m-replay.h5)."""
    out = tmp_path_factory.mktemp("medium") / "m.h5"
    options = {"env_id": "Pendulum-v1", "target_return": -2000.0, "train_steps": 600, "overrides": SAC}
    return collect_d4rl("medium", out, 150, replay_out=out.with_name("m-replay.h5"), **options)


def test_random_actions_cover_the_action_space(tmp_path):
    data = collect_d4rl("random", tmp_path / "r.h5", 400, env_id="Pendulum-v1", seed=1)
    assert load_dataset(tmp_path / "r.h5").attrs == data.attrs
    # uniform on [-2, 2]: each quarter holds about a quarter of 400 actions (binomial sd 8.7), std 4 / sqrt(12)
    counts = np.histogram(data.actions, bins=4, range=(-2.0, 2.0))[0]
    assert counts.sum() == 400 and (np.abs(counts - 100) < 35).all(), counts
    assert data.actions.std() == pytest.approx(4 / np.sqrt(12), abs=0.15)
    attrs = data.attrs
    assert attrs["kind"] == "random" and attrs["policy_return"] == attrs["random_return"]
    assert -16.3 * 200 < attrs["random_return"] < 0  # Pendulum's rewards are in [-16.3, 0] per step
    assert "uniformly random actions" in attrs["recipe"] and "Fu et al. 2020" in attrs["recipe"]
    discrete = collect_d4rl("random", tmp_path / "c.h5", 400, env_id="CartPole-v1")
    assert 150 < (discrete.actions == 1).sum() < 250


def test_medium_stops_at_its_target_and_records_its_returns(medium):
    attrs = medium.attrs
    assert len(medium) == 150 and attrs["kind"] == "medium" and attrs["algo"] == "sac"
    assert attrs["target_return"] == -2000.0 and attrs["stop_step"] == 200 and attrs["stop_return"] >= -2000.0
    assert attrs["policy_return"] == attrs["medium_return"] and "random_return" in attrs
    assert attrs["behavioral_policy"].endswith("m-sac-medium")
    assert "--target-return" in attrs["recipe"] and "step 200" in attrs["recipe"]
    assert "expert_return" not in attrs  # a given target: no expert


def test_medium_replay_is_the_sac_buffer_up_to_its_stop_the_same_as_beside_medium(tmp_path, medium):
    out = tmp_path / "mr.h5"
    data = collect_d4rl(
        "medium-replay", out, env_id="Pendulum-v1", target_return=-2000.0, train_steps=600, overrides=SAC
    )
    assert len(data) == data.attrs["stop_step"] == 200  # every step the SAC took, in order, nothing after its stop
    assert np.flatnonzero(data.timeouts).tolist() == [199] and not data.terminals.any()
    np.testing.assert_array_equal(data.next_observations[:-1], data.observations[1:])  # one episode, unbroken
    assert data.attrs["policy_return"] == data.attrs["medium_return"]
    assert (sac_run_dir(out, "medium") / "checkpoints" / "best.pt").is_file()
    # `replay_out` beside medium: the same SAC (same seed and settings) trained once for both, the same data.
    beside = load_dataset(Path(medium.attrs["behavioral_policy"]).with_name("m-replay.h5"))
    for key in D4RL_KEYS:
        np.testing.assert_array_equal(getattr(beside, key), getattr(data, key), err_msg=key)
    assert beside.attrs["kind"] == "medium-replay" and beside.attrs["stop_step"] == medium.attrs["stop_step"]
    recipe = beside.attrs["recipe"]
    assert recipe.startswith("D4RL's medium-replay") and "the replay buffer of a SAC" in recipe
    assert beside.attrs["medium_return"] == medium.attrs["medium_return"] == beside.attrs["policy_return"]


def test_expert_records_its_return(expert):
    data, run_dir = expert
    attrs = data.attrs
    assert len(data) == 300 and attrs["kind"] == "expert" and attrs["behavioral_policy"] == str(run_dir)
    assert attrs["expert_return"] == attrs["policy_return"] and "random_return" in attrs
    assert not np.array_equal(data.actions[:-1], data.actions[1:])  # sampled, not one fixed action


def test_medium_expert_is_the_medium_then_the_expert_data(tmp_path, medium, expert):
    _, expert_dir = expert
    data = collect_d4rl(
        "medium-expert",
        tmp_path / "me.h5",
        300,
        policy=expert_dir,
        target_return=-2000.0,
        train_steps=600,
        overrides=SAC,
    )
    alone = collect_d4rl("expert", tmp_path / "e.h5", 150, policy=expert_dir, seed=1)  # the second half's seed
    for key in D4RL_KEYS:
        np.testing.assert_array_equal(getattr(data, key)[:150], getattr(medium, key), err_msg=key)
        np.testing.assert_array_equal(getattr(data, key)[150:], getattr(alone, key), err_msg=key)
    attrs = data.attrs
    assert attrs["medium_return"] == medium.attrs["medium_return"]  # both policies' returns
    assert attrs["expert_return"] == expert[0].attrs["expert_return"] and "policy_return" not in attrs
    assert not sac_run_dir(tmp_path / "me.h5", "expert").exists()  # the expert came from --policy


def test_a_medium_sac_that_never_reaches_its_target_writes_nothing(tmp_path, capsys):
    out = tmp_path / "u.h5"
    argv = ["collect", "--kind", "medium", "--env", "Pendulum-v1", "--out", out, "--steps", 100]
    code, stdout, err = run(capsys, *argv, "--target-return", 0, "--train-steps", 400, "--no-progress", *SET)
    assert code == 2 and stdout == "" and err.count("\n") == 1
    assert "never reached its target return 0.0 within its 400 steps" in err and "--train-steps N" in err
    assert list(tmp_path.iterdir()) == []  # no dataset, no run directory, no temporary file


def test_the_cli_writes_a_minari_dataset_that_trains_and_scores(tmp_path, capsys, expert):
    out = tmp_path / "e"
    code, stdout, err = run(
        capsys, "collect", "--kind", "expert", "--policy", expert[1], "--out", out, "--steps", 250, "--format", "minari"
    )
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["transitions"] == 250 and summary["timeouts"] == 1 and (out / "data" / "metadata.json").is_file()
    run_dir = tmp_path / "bc"
    argv = ["train", "bc", "--dataset", out, "--total-steps", 40, "--run-dir", run_dir, "--no-progress"]
    assert run(capsys, *argv, "--set", "hidden_sizes=[8]", "eval_episodes=1", "eval_freq=40")[0] == 0
    code, stdout, err = run(capsys, "evaluate", run_dir, "--episodes", 1)
    assert code == 0, err
    result = json.loads(stdout)
    low, high = summary["random_return"], summary["expert_return"]
    assert result["normalized_score"] == pytest.approx(100 * (result["return_mean"] - low) / (high - low), rel=1e-6)
    assert result["normalized_score_reference"]["source"].startswith("measured here")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--kind", "random", "--steps", "9", "--policy", "x"], "--policy is the expert of --kind expert"),
        (["--kind", "random", "--noise", "0.1"], "--noise: for the BCQ paper's kinds"),
        (["--kind", "final", "--target-return", "1"], "--target-return: for D4RL's kinds"),
        (["--kind", "medium-replay", "--steps", "9"], "--kind medium-replay holds its SAC's transitions"),
        (["--kind", "medium", "--steps", "9"], "needs where to stop: --target-return R, or --expert-return R"),
        (["--kind", "medium", "--steps", "9", "--target-return", "1", "--expert-return", "2"], "not both"),
        (["--kind", "random", "--steps", "9", "--train-steps", "9"], "trains none: it takes uniformly random"),
        (["--kind", "expert", "--steps", "9", "--env", "CartPole-v1"], "SAC, which needs a Box action space"),
        (["--kind", "expert"], "--kind expert needs --steps N"),
        (["--kind", "expert", "--steps", "9", "--replay-out", "r.h5"], "from the same SAC: --kind medium, not expert"),
        (["--kind", "final", "--replay-out", "r.h5"], "--replay-out: for D4RL's kinds"),
    ],
)
def test_wrong_combinations_are_one_line_before_any_work(tmp_path, capsys, argv, message):
    argv = ["collect", "--out", str(tmp_path / "d.h5"), *argv]
    if "--env" not in argv:
        argv += ["--env", "Pendulum-v1"]
    code, stdout, err = run(capsys, *argv)
    assert code == 2 and err.startswith("acrl: error: ") and err.count("\n") == 1 and message in err, err
    assert list(tmp_path.iterdir()) == []
