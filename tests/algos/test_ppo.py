"""PPO contracts: truncation, raw actions, normalisation, determinism, checkpoints, the CLI."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch

import acrl
from acrl import PPO, InputError, TrainingError
from acrl.core.logging import format_return
from tests.conftest import ROOT, ConstantRewardEnv, assert_resumes_repeat, run_cli, save_format_1, signal_when_ready

TINY = {"n_steps": 64, "batch_size": 32, "n_epochs": 2, "eval_episodes": 2}


def test_truncation_learns_the_infinite_horizon_value(constant_reward_env):
    # Truncated every 5 steps, never terminated, reward 1, gamma 0.99: V = 100, not 4.9.
    agent = PPO(
        constant_reward_env,
        seed=0,
        n_steps=50,
        batch_size=50,
        n_epochs=10,
        learning_rate=0.01,
        gamma=0.99,
        gae_lambda=1.0,
        vf_coef=1.0,
        max_grad_norm=100.0,
        normalize_obs=False,
        eval_freq=0,
    )
    agent.learn(total_steps=12_000, progress=False)
    value = agent.model.value(torch.zeros(1, 1), ()).item()
    assert 90 < value < 110, value


def test_stored_actions_are_raw_samples_with_ratio_one():
    # A wide Gaussian (std e) on Pendulum's [-2, 2]: many samples fall outside the Box.
    agent = PPO("Pendulum-v1", seed=0, n_steps=256, batch_size=64, log_std_init=1.0, eval_freq=0)
    agent.collect()
    actions = torch.from_numpy(agent.buffer.actions.reshape(-1, 1))
    assert (actions.abs() > 1).float().mean() > 0.3
    with torch.no_grad():
        features = agent.model.actor.encoder(torch.from_numpy(agent.buffer.observations.reshape(-1, 3)))
        log_probs, _ = agent.model.actor.head.log_prob_entropy(features, actions)
    ratio = torch.exp(log_probs - torch.from_numpy(agent.buffer.log_probs.reshape(-1)))
    torch.testing.assert_close(ratio, torch.ones_like(ratio), atol=1e-5, rtol=0)


@pytest.mark.parametrize("log_std", [-105.0, 50.0])
def test_extreme_log_std_update_stays_finite(log_std):
    agent = PPO("Pendulum-v1", seed=0, eval_freq=0, **TINY)
    with torch.no_grad():
        agent.model.actor.head.log_std.fill_(log_std)
    agent.collect()
    metrics = agent.update()
    assert all(np.isfinite(v) for v in metrics.values())
    assert all(torch.isfinite(p).all() for p in agent.model.parameters())


def test_evaluation_leaves_normalizer_unchanged():
    agent = PPO("Pendulum-v1", seed=0, eval_freq=0, **TINY).learn(64, progress=False)
    before = {k: v.clone() for k, v in agent.obs_normalizer.state_dict().items()}
    assert agent.obs_normalizer.stats.count.item() == 64
    agent.evaluate(episodes=1)
    agent.predict(np.zeros(3, np.float32))
    for key, value in agent.obs_normalizer.state_dict().items():
        assert torch.equal(value, before[key])


def test_normalizer_round_trip_in_a_new_process(tmp_path):
    agent = PPO("Pendulum-v1", seed=0, eval_freq=0, **TINY).learn(128, progress=False)
    path = tmp_path / "agent.pt"
    agent.save(path)
    raw = np.array([[0.5, -0.25, 3.0]], np.float32)
    here = agent.obs_normalizer(raw).numpy()
    code = (
        f"import acrl, numpy as np; a = acrl.PPO.load({str(path)!r}); "
        "print(a.obs_normalizer(np.array([[0.5, -0.25, 3.0]], np.float32)).numpy().tolist())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    np.testing.assert_array_equal(np.array(json.loads(out.stdout)), here)
    assert not np.allclose(here, raw)  # the statistics really moved away from the identity


def test_predict_single_and_batch_in_env_units():
    agent = PPO("Pendulum-v1", seed=0, eval_freq=0, log_std_init=2.0, **TINY)
    single = agent.predict(np.zeros(3), deterministic=False)
    batch = agent.predict(np.zeros((200, 3)), deterministic=False)
    assert single.shape == (1,) and batch.shape == (200, 1)
    assert batch.min() >= -2.0 and batch.max() <= 2.0 and batch.max() == 2.0  # clipped into the Box
    assert isinstance(PPO("CartPole-v1", eval_freq=0, **TINY).predict(np.zeros(4)).item(), int)
    with pytest.raises(InputError, match=r"shape \(3,\)"):
        agent.predict(np.zeros(4))


def metric_rows(run_dir):
    with open(run_dir / "metrics.csv") as f:
        return [{k: v for k, v in row.items() if not k.startswith("time/")} for row in csv.DictReader(f)]


def test_same_seed_same_metrics(tmp_path):
    for name in ("a", "b"):
        PPO("CartPole-v1", seed=3, eval_freq=128, **TINY).learn(256, run_dir=tmp_path / name, progress=False)
    rows = metric_rows(tmp_path / "a")
    assert len(rows) == 4 and rows[1]["eval/return_mean"]
    assert rows == metric_rows(tmp_path / "b")
    PPO("CartPole-v1", seed=4, eval_freq=128, **TINY).learn(256, run_dir=tmp_path / "c", progress=False)
    assert metric_rows(tmp_path / "c") != rows


def test_run_directory_contents(tmp_path):
    PPO("CartPole-v1", seed=0, eval_freq=128, checkpoint_freq=128, **TINY).learn(256, run_dir=tmp_path, progress=False)
    for name in (
        "config.yaml",
        "metrics.csv",
        "learning_curve.png",
        "eval.json",
        "checkpoints/latest.pt",
        "checkpoints/best.pt",
    ):
        assert (tmp_path / name).is_file(), name
    assert list(tmp_path.glob("events.out.tfevents.*"))
    result = json.loads((tmp_path / "eval.json").read_text())
    assert set(result) == {
        "return_mean",
        "return_std",
        "returns",
        "lengths",
        "deterministic",
        "step",
        "checkpoint",
        "resumed_at",
        "last",
    }
    assert len(result["returns"]) == 2 and result["deterministic"] is True
    assert result["step"] in (128, 256) and result["checkpoint"] == "checkpoints/best.pt"
    assert result["last"]["step"] == 256 and result["resumed_at"] is None
    payload = torch.load(tmp_path / "checkpoints/latest.pt", weights_only=True)
    assert payload["state"]["counters"]["num_steps"] == 256


def test_resume_restores_state_exactly_and_continues(tmp_path):
    cfg = dict(seed=1, eval_freq=0, checkpoint_freq=128, **TINY)
    agent = PPO("Pendulum-v1", **cfg).learn(128, run_dir=tmp_path / "run", progress=False)
    loaded = acrl.load(tmp_path / "run/checkpoints/latest.pt")
    assert loaded.num_steps == 128
    for a, b in zip(agent.model.state_dict().values(), loaded.model.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    opt_a, opt_b = agent.optimizer.state_dict()["state"], loaded.optimizer.state_dict()["state"]
    assert all(torch.equal(opt_a[k]["exp_avg_sq"], opt_b[k]["exp_avg_sq"]) for k in opt_a)
    for key, value in agent.obs_normalizer.state_dict().items():
        assert torch.equal(value, loaded.obs_normalizer.state_dict()[key])
    assert agent.rng.bit_generator.state == loaded.rng.bit_generator.state
    assert_resumes_repeat(tmp_path / "run/checkpoints/latest.pt", loaded, 256)


def test_bad_learn_and_evaluate_arguments_are_input_errors():
    agent = PPO("CartPole-v1", **TINY)
    with pytest.raises(InputError, match="unknown keyword: 'total_step' \\(did you mean total_steps\\?\\)"):
        agent.learn(total_step=100)
    with pytest.raises(InputError, match="episodes must be an integer >= 1 .*got 0"):
        acrl.evaluate(agent, "CartPole-v1", episodes=0)
    with pytest.raises(InputError, match="episodes must be an integer >= 1"):
        agent.evaluate(episodes=0)  # not the config's eval_episodes in its place
    assert agent.num_steps == 0


def test_nan_loss_stops_with_step_and_quantity(tmp_path):
    agent = PPO("CartPole-v1", seed=0, eval_freq=0, checkpoint_freq=64, **TINY)
    agent.learn(64, run_dir=tmp_path, progress=False)
    with torch.no_grad():
        agent.model.critic.net[0].weight.fill_(float("nan"))
    with pytest.raises(TrainingError, match=r"step 128: train/\w+ is nan"):
        agent.learn(256, run_dir=tmp_path, progress=False)
    assert acrl.load(tmp_path / "checkpoints/latest.pt").num_steps == 64  # the last good one stays


def test_custom_env_without_registration(constant_reward_env):
    agent = PPO(constant_reward_env, eval_freq=0, **TINY).learn(64, progress=False)
    result = acrl.evaluate(agent, constant_reward_env, episodes=2)
    assert result["returns"] == [5.0, 5.0] and result["lengths"] == [5, 5]


# ---------------------------------------------------------------- CLI
def test_cli_train_evaluate_resume_plot(tmp_path):
    run = tmp_path / "run"
    out = run_cli(
        "train",
        "ppo",
        "--env",
        "CartPole-v1",
        "--total-steps",
        "256",
        "--run-dir",
        str(run),
        "--no-progress",
        "--set",
        "n_envs=2",
        "n_steps=64",
        "batch_size=64",
        "eval_freq=256",
        "eval_episodes=2",
        "checkpoint_freq=128",
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["return_mean"] > 0
    assert "learning_curve.png" in out.stderr
    # without a progress bar, a line per evaluation (one here, at 256); then which evaluation is reported
    evaluation = json.loads((run / "eval.json").read_text())
    mean = format_return(evaluation["return_mean"])
    assert f"step 256: eval return {mean} +/- " in out.stderr, out.stderr
    assert f"best evaluation: return {mean} at step 256, kept in " in out.stderr, out.stderr
    evaluated = run_cli("evaluate", str(run), "--episodes", "3")
    assert evaluated.returncode == 0, evaluated.stderr
    result = json.loads(evaluated.stdout)
    assert len(result["returns"]) == 3 and result["deterministic"] is True
    assert result["checkpoint"] == "checkpoints/best.pt" and result["step"] == 256
    resumed = run_cli("resume", str(run), "--total-steps", "512", "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    assert summary["resumed_at"] == 256 and summary["last"]["step"] == 512
    assert f"last evaluation: return {summary['last']['return_mean']:.1f} at step 512" in resumed.stderr
    if summary["step"] == 256:  # the best is still the first session's: the report says so
        assert "at step 256 (from before the resume at step 256), kept in" in resumed.stderr, resumed.stderr
    steps = [float(r["step"]) for r in metric_rows(run)]
    assert steps == sorted(set(steps)) and steps[-1] == 512
    assert "total_steps: 512" in (run / "config.yaml").read_text()  # the resumed budget
    assert run_cli("plot", str(run), "--out", str(tmp_path / "c.png")).returncode == 0
    out = run_cli("plot", str(run), "--out", str(tmp_path / "missing" / "c.png"))
    assert out.returncode == 2 and "does not exist" in out.stderr and "Traceback" not in out.stderr
    assert (tmp_path / "c.png").stat().st_size > 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["train", "ppo", "--env", "CartPol-v1"], "Did you mean CartPole-v1"),
        (["train", "ppo", "--env", "Blackjack-v1"], "flat Box observation space"),
        (["train", "ppo", "--env", "CartPole-v1", "--set", "clip_range=0"], "clip_range must be > 0"),
        (["train", "ppo", "--env", "CartPole-v1", "--set", "n_steps=10", "batch_size=3"], "divide the rollout"),
        (["train", "ppo", "--env", "CartPole-v1", "--set", "batch_size=1"], "batch_size must be >= 2"),
        (["train", "ppo", "--env", "CartPole-v1", "--set", "clip_rnage=0.1"], "unknown hyperparameter 'clip_rnage'"),
        (["train", "ppo", "--env", "Pendulum-v1", "--dataset", "d.h5"], "--dataset does not apply to ppo"),
        (["train", "nope", "--env", "CartPole-v1"], "unknown algorithm"),
    ],
)
def test_cli_bad_input_exit_2_and_nothing_written(tmp_path, args, message):
    run = tmp_path / "run"
    out = run_cli(*args, "--run-dir", str(run))
    assert out.returncode == 2, out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr
    assert not run.exists()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_cli_signal_stops_at_an_iteration_boundary_with_a_checkpoint(tmp_path, signum):
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "acrl",
            "train",
            "ppo",
            "--env",
            "CartPole-v1",
            "--total-steps",
            "10000000",
            "--run-dir",
            str(run),
            "--no-progress",
            "--set",
            "n_envs=2",
            "n_steps=64",
            "batch_size=64",
            "eval_freq=0",
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stderr=subprocess.PIPE,
        text=True,
    )
    stderr = signal_when_ready(proc, lambda: (run / "metrics.csv").exists() and len(metric_rows(run)) >= 2, signum)
    assert proc.returncode == 130, stderr
    assert "stopping at the end of this iteration" in stderr and "Traceback" not in stderr
    agent = acrl.load(run / "checkpoints" / "latest.pt")
    assert agent.num_steps > 0 and agent.num_steps % 128 == 0  # whole rollouts of 2 envs x 64 steps
    assert int(float(metric_rows(run)[-1]["step"])) == agent.num_steps  # the log ends where the checkpoint is


class InterruptAtStep(ConstantRewardEnv):
    """ConstantRewardEnv that sends SIGINT to its own process during its `at`-th step."""

    def __init__(self, at: int):
        self.at, self.steps = at, 0

    def step(self, action):
        self.steps += 1
        if self.steps == self.at:
            os.kill(os.getpid(), signal.SIGINT)
        return super().step(action)


@pytest.mark.parametrize("at, stops", [(40, True), (70, False)])
def test_signal_stops_after_its_iteration_unless_that_one_ends_the_run(tmp_path, at, stops):
    # Two iterations of 64 steps: a SIGINT in the first stops after it with a checkpoint at
    # step 64; one in the last lets the run finish normally with its final evaluation.
    env = lambda: gym.wrappers.TimeLimit(InterruptAtStep(at), max_episode_steps=5)  # noqa: E731
    agent = PPO(env, seed=0, n_steps=64, batch_size=32, n_epochs=1, eval_freq=0, eval_episodes=1)
    if stops:
        with pytest.raises(KeyboardInterrupt, match="SIGINT at step 64"):
            agent.learn(total_steps=128, run_dir=tmp_path, progress=False)
        assert PPO.load(tmp_path / "checkpoints" / "latest.pt", env=env).num_steps == 64
        assert not (tmp_path / "eval.json").exists()
    else:
        agent.learn(total_steps=128, run_dir=tmp_path, progress=False)
        assert agent.num_steps == 128
        assert json.loads((tmp_path / "eval.json").read_text())["returns"] == [5.0]


def test_cli_resume_without_checkpoint_and_corrupt_checkpoint(tmp_path):
    out = run_cli("resume", str(tmp_path))
    assert out.returncode == 2 and "no checkpoint" in out.stderr and "Traceback" not in out.stderr
    out = run_cli("evaluate", str(tmp_path / "nope"))
    assert out.returncode == 2 and "no run directory" in out.stderr and "Traceback" not in out.stderr
    good = tmp_path / "good.pt"
    PPO("CartPole-v1", eval_freq=0, **TINY).save(good)
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints/best.pt").write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    out = run_cli("evaluate", str(tmp_path))
    assert out.returncode == 2 and "truncated, corrupt" in out.stderr and "Traceback" not in out.stderr
    (tmp_path / "checkpoints/best.pt").write_bytes(b"not a checkpoint at all")
    out = run_cli("evaluate", str(tmp_path))
    # One paragraph, and never torch's advice to retry with weights_only=False.
    assert out.returncode == 2 and "truncated, corrupt" in out.stderr and "weights_only" not in out.stderr


@pytest.mark.parametrize("critic_weight_decay", [0.0, 1e-3])
def test_checkpoint_with_a_per_layer_optimizer_state_still_loads(critic_weight_decay, tmp_path):
    """Checkpoints of format 1, written before the parameters became one flat tensor per net,
    hold Adam's state per layer (12 parameters in one group, or the actor's 6 and the critic's 6
    in two with critic weight decay) and PPO's two nets, actor and critic; loading one gives the same
    moments as the flat state they came from."""
    settings = {**TINY, "seed": 0, "eval_freq": 0, "critic_weight_decay": critic_weight_decay}
    agent = PPO("CartPole-v1", **settings)
    agent.collect()
    agent.update()
    state = agent.state_dict()
    flat_state = state["optimizers"]["optimizer"]
    per_layer, groups, index = {}, [], 0
    parts = (agent.model.actor, agent.model.critic)
    for k, net in enumerate(parts):  # split each flat moment by layer, by hand
        sizes = [p.numel() for p in net.parameters()]
        moments = {key: flat_state["state"][k][key].split(sizes) for key in ("exp_avg", "exp_avg_sq")}
        ids = []
        for i, param in enumerate(net.parameters()):
            per_layer[index] = {
                "step": flat_state["state"][k]["step"].clone(),
                **{key: moments[key][i].reshape(param.shape).clone() for key in moments},
            }
            ids.append(index)
            index += 1
        groups.append(ids)
    old_groups = (
        [{**flat_state["param_groups"][0], "params": groups[0] + groups[1]}]
        if not critic_weight_decay
        else [{**group, "params": ids} for group, ids in zip(flat_state["param_groups"], groups)]
    )
    assert index == 12
    old_nets = {"actor": parts[0].state_dict(), "critic": parts[1].state_dict()}
    old = {**state, "nets": old_nets, "optimizers": {"optimizer": {"state": per_layer, "param_groups": old_groups}}}

    loaded = PPO.load(save_format_1(tmp_path / "old.pt", agent, old))
    for k in (0, 1):
        for key in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(loaded.optimizer.state_dict()["state"][k][key], flat_state["state"][k][key])
    for mine, theirs in zip(loaded.params, agent.params, strict=True):
        assert torch.equal(mine, theirs)
