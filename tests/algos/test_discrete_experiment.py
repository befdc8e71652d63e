"""`acrl experiment discrete` at a tiny budget (CartPole in CI: the files, the table; MinAtar Breakout, slow:
frames kept bool from the replay to the offline agents), its two collections on MinAtar (a behavioral DQN's
whole replay, its policy at epsilon 0.2) and the bad input it refuses before any work."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from acrl import load
from acrl.cli import main
from acrl.offline.spec import DISCRETE
from acrl.parts.datasets import load_dataset

BUFFERS, LEARNERS = DISCRETE.buffers, DISCRETE.names

TINY_DQN = ["start_steps=50", "epsilon_decay_steps=100", "batch_size=8", "target_update_interval=20"]
"""A behavioral DQN that learns after 50 random steps and ends its epsilon schedule at step 100."""


def test_a_behavioral_dqn_s_replay_is_the_final_dataset_and_its_policy_collects_the_imperfect_one(tmp_path, capsys):
    out = tmp_path / "final.h5"
    argv = ["collect", "--kind", "final", "--algo", "dqn", "--env", "MinAtar/Breakout-v1", "--steps", "300"]
    assert main([*argv, "--out", str(out), "--noise", "0.1"]) == 2  # a DQN explores by its epsilon schedule
    assert "a behavioral DQN explores epsilon-greedily" in capsys.readouterr().err and not out.exists()
    assert (
        main([*argv, "--out", str(out), "--set", *TINY_DQN, "eval_freq=300", "eval_episodes=1", "--no-progress"]) == 0
    )
    final = load_dataset(out)
    assert len(final) == 300 and final.observations.shape == (300, 10, 10, 4)
    assert final.observations.dtype == final.next_observations.dtype == np.bool_
    ends = final.terminals | final.timeouts
    assert np.array_equal(final.next_observations[:-1][~ends[:-1]], final.observations[1:][~ends[:-1]])  # in order
    assert final.attrs["algo"] == "dqn" and final.attrs["epsilon_end"] == 0.1 and "random_prob" not in final.attrs
    behavioral = tmp_path / "final-behavioral"
    assert load(behavioral / "checkpoints" / "latest.pt").buffer.capacity == 600  # 2 x 300 slots: nothing lost
    capsys.readouterr()
    # Discrete actions: imperfect is epsilon-greedy at 0.2 without --noise (which is refused), as the paper's.
    imperfect = tmp_path / "imperfect.h5"
    argv = ["collect", "--kind", "imperfect", "--policy", str(behavioral), "--steps", "200", "--out", str(imperfect)]
    assert main([*argv, "--noise", "0.3"]) == 2
    assert "the Discrete actions of this environment take random actions only" in capsys.readouterr().err
    assert main(argv) == 0
    data = load_dataset(imperfect)
    assert (data.attrs["noise_std"], data.attrs["random_prob"], len(data)) == (0.0, 0.2, 200)
    assert data.observations.dtype == np.bool_


def run_experiment(out: Path, env_id: str, capsys, *flags: str) -> dict:
    """`acrl experiment discrete` on `env_id` at a tiny budget, seed 3, into `out` (through the local pool, a
    process per job); checks the files and the markdown on stdout and returns discrete.json."""
    argv = ["experiment", "discrete", "--env", env_id, "--steps-behavioral", "200", "--updates", "40"]
    argv += ["--dataset-size", "150", "--eval-freq", "40", "--eval-episodes", "1", "--seeds", "3", "--out", str(out)]
    assert main([*argv, "--no-progress", *flags]) == 0
    stdout = capsys.readouterr().out
    assert "| discrete BCQ |" in stdout and "| DQN (offline) |" in stdout and "| discrete CQL |" in stdout
    assert "Value estimates" in stdout
    files = {"discrete.json", "discrete.md", "discrete.png", "s3", "experiment.yaml", "sessions.json"}
    assert {p.name for p in out.iterdir()} == files
    assert "| DQN (offline) |" in (out / "discrete.md").read_text()
    summary = json.loads((out / "discrete.json").read_text())
    assert summary["meta"]["sessions"] == json.loads((out / "sessions.json").read_text())["experiment jobs"]
    return summary


def test_the_discrete_experiment_writes_its_table_figure_and_runs(tmp_path, capsys):
    out = tmp_path / "exp"
    tiny = ["hidden_sizes=[16]", "batch_size=8"]
    behavioral = [*TINY_DQN, "hidden_sizes=[16]", "train_freq=1", "utd_ratio=1"]
    flags = ["--behavioral-set", *behavioral, "--dqn-set", *tiny, "--bcq-set", *tiny, "--bc-set", *tiny]
    flags += ["--cql-set", *tiny]
    summary = run_experiment(out, "CartPole-v1", capsys, *flags)
    assert list(summary["table"]) == ["behavioral", *LEARNERS] and summary["imperfect_epsilon"] == 0.2
    assert all(list(row) == list(BUFFERS) for row in summary["table"].values())
    final, imperfect = load_dataset(out / "s3/final/final.h5"), load_dataset(out / "s3/data-imperfect/imperfect.h5")
    assert (len(final), len(imperfect), imperfect.attrs["random_prob"], final.attrs["algo"]) == (200, 150, 0.2, "dqn")
    results = summary["results"]
    for kind in BUFFERS:
        for algo in LEARNERS:
            assert [step for step, _ in results[kind][algo][0]["curve"]] == [40]  # evaluated every eval_freq updates
        agent = load(f"{results[kind]['dqn'][0]['run_dir']}/checkpoints/best.pt")  # `acrl evaluate` works
        assert (agent.algo, agent.num_steps, agent.config.gamma, agent.config.batch_size) == ("dqn", 40, 0.99, 8)
    # One seed: each cell is that run's last value estimate, std 0; BC has none.
    values = results["imperfect"]["discrete_bcq"][0]["values"]
    cell = summary["table"]["discrete_bcq"]["imperfect"]
    assert cell["q_initial"] == [values["q_initial_mean"][-1][1], 0.0]
    assert cell["true_value"] == [values["discounted_return_mean"][-1][1], 0.0]
    assert cell["final"][0] == cell["iqm"] == results["imperfect"]["discrete_bcq"][0]["final"]
    assert summary["table"]["bc"]["final"]["q_initial"] is None
    best = json.loads((out / "s3/final/final-behavioral/eval.json").read_text())["return_mean"]
    assert results["imperfect"]["behavioral"][0]["return"] == best  # the checkpoint that collected it


@pytest.mark.slow  # about 80 s on 2 cores: each job's process imports minatar (seaborn, scipy)
def test_on_minatar_frames_stay_bool_from_the_replay_to_the_offline_agents(tmp_path, capsys):
    out = tmp_path / "exp"
    flags = ["--behavioral-set", *TINY_DQN, "--dqn-set", "batch_size=8", "--bcq-set", "batch_size=8"]
    flags += ["--bc-set", "batch_size=8", "--cql-set", "batch_size=8"]
    summary = run_experiment(out, "MinAtar/Breakout-v1", capsys, *flags)
    final, imperfect = load_dataset(out / "s3/final/final.h5"), load_dataset(out / "s3/data-imperfect/imperfect.h5")
    assert final.observations.shape == (200, 10, 10, 4)
    assert final.observations.dtype == imperfect.next_observations.dtype == np.bool_
    for kind in BUFFERS:
        for algo in LEARNERS:
            agent = load(f"{summary['results'][kind][algo][0]['run_dir']}/checkpoints/best.pt")
            assert agent.config.encoder == "minatar" and agent.load_data().frames.dtype == torch.bool


@pytest.mark.parametrize(
    "argv, message",
    [
        (["discrete", "--env", "Pendulum-v1"], "For continuous actions run `acrl experiment extrapolation`"),
        (["extrapolation", "--env", "CartPole-v1"], "For a Discrete action space run `acrl experiment discrete`"),
        (
            ["discrete", "--env", "MinAtar/Breakout-v1", "--final-noise", "0.3"],
            "unrecognized arguments --final-noise 0.3",
        ),
        (
            ["discrete", "--env", "MinAtar/Breakout-v1", "--vae-bc-set", "kl_weight=1"],
            "unrecognized arguments --vae-bc-set kl_weight=1",
        ),
        (["discrete", "--env", "MinAtar/Breakout-v1", "--bcq-set", "threshold=1.5"], "(discrete_bcq): threshold"),
        (["discrete", "--env", "MinAtar/Breakout-v1", "--cql-set", "cql_alpha=-1"], "(discrete_cql): cql_alpha"),
        (["discrete", "--env", "MinAtar/Breakout-v1", "--steps-behavioral", "1000"], "epsilon_decay_steps=100000"),
    ],
)
def test_bad_input_exits_2_before_announcing_or_writing_anything(argv, message, tmp_path, capsys):
    assert main(["experiment", *argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert " -> " not in err and not (tmp_path / "out").exists()
