"""`acrl experiment extrapolation|concurrent` on a tiny budget: the files, the table's contents,
the concurrent learners' use of the behavioral agent's growing buffer, and bad input."""

import json

import numpy as np
import pytest

from acrl import load
from acrl.cli import main
from acrl.offline.experiments import BUFFERS, episode_returns, run_extrapolation
from acrl.parts.datasets import OfflineDataset, load_dataset

TINY_NETS = {"behavioral_overrides": {"start_steps": 100, "hidden_sizes": [16]},
             "ddpg_overrides": {"hidden_sizes": [16]},
             "bcq_overrides": {"actor_hidden_sizes": [16], "critic_hidden_sizes": [16], "vae_hidden_sizes": [16]},
             "bc_overrides": {"hidden_sizes": [16]}}


def test_extrapolation_writes_table_figure_and_runs(tmp_path):
    out = tmp_path / "exp"
    summary = run_extrapolation("Pendulum-v1", out, steps_behavioral=300, updates=150, seeds=[0], dataset_size=250,
                                eval_freq=150, eval_episodes=1, progress=False, **TINY_NETS)
    assert {p.name for p in out.iterdir()} == {"extrapolation.json", "extrapolation.md", "extrapolation.png", "s0",
                                               "experiment.yaml"}
    assert json.loads((out / "extrapolation.json").read_text())["table"] == summary["table"]
    assert list(summary["table"]) == ["behavioral", "bcq", "ddpg", "bc"]
    assert all(list(row) == list(BUFFERS) for row in summary["table"].values())
    final = load_dataset(out / "s0" / "final" / "final.h5")  # every transition of its own behavioral run
    assert len(final) == 300 and final.attrs["noise_std"] == 0.5
    assert len(load_dataset(out / "s0" / "data-imperfect" / "imperfect.h5")) == 250
    results = summary["results"]
    for kind in ("final", "imitation", "imperfect"):
        curve = results[kind]["bcq"][0]["curve"]
        assert [step for step, _ in curve] == [150]  # evaluated every eval_freq updates
        agent = load(f"{results[kind]['bcq'][0]['run_dir']}/checkpoints/best.pt")  # `acrl evaluate` works
        assert agent.algo == "bcq" and agent.num_steps == 150
    concurrent = results["concurrent"]
    assert [step for step, _ in concurrent["bcq"][0]["curve"]] == [150, 300]
    assert [step for step, _ in concurrent["bc"][0]["curve"]] == [150, 300]
    assert [step for step, _ in concurrent["behavioral"][0]["curve"]] == [150, 300]
    # Value estimates at every evaluation; one seed: the table's cells are that run's last ones, std 0.
    ddpg_values = results["imitation"]["ddpg"][0]["values"]
    assert [step for step, _ in ddpg_values["q_initial_mean"]] == [150]
    cell = summary["table"]["ddpg"]["imitation"]
    assert cell["q_initial"] == [ddpg_values["q_initial_mean"][-1][1], 0.0]
    assert cell["true_value"] == [ddpg_values["discounted_return_mean"][-1][1], 0.0]
    assert cell["final"][0] == cell["iqm"] == results["imitation"]["ddpg"][0]["final"]
    assert not results["final"]["bc"][0]["values"]["q_initial_mean"]  # BC has no critic
    md = (out / "extrapolation.md").read_text()
    assert "| imperfect |" in md and "| BC |" in md and "Value estimates" in md
    # The imitation data has no noise: its episodes score what the behavioral policy does.
    imitation = results["imitation"]["behavioral"][0]
    assert imitation["return"] == pytest.approx(imitation["data_episode_return"], rel=0.5)


def test_concurrent_learners_learn_from_the_behavioral_buffer_without_acting(tmp_path, capsys):
    out = tmp_path / "c"
    argv = ["experiment", "concurrent", "--env", "Pendulum-v1", "--steps-behavioral", "250", "--eval-freq", "250",
            "--eval-episodes", "1", "--seeds", "1", "--out", str(out), "--no-progress",
            "--behavioral-set", "start_steps=100", "hidden_sizes=[16]", "--ddpg-set", "hidden_sizes=[16]",
            "--bcq-set", "actor_hidden_sizes=[16]", "critic_hidden_sizes=[16]", "vae_hidden_sizes=[16]",
            "--bc-set", "hidden_sizes=[16]"]
    assert main(argv) == 0
    assert "| BCQ (same buffer) |" in capsys.readouterr().out
    assert {p.name for p in out.iterdir()} == {"concurrent.json", "concurrent.md", "concurrent.png", "s1",
                                               "experiment.yaml"}
    result = json.loads((out / "concurrent.json").read_text())["runs"][0]
    bcq = load(f"{result['run_dirs']['bcq']}/checkpoints/latest.pt")
    ddpg = load(f"{result['run_dirs']['ddpg']}/checkpoints/latest.pt")
    # One update per behavioral step, from the first one on: 250 updates, evaluated at the same steps.
    assert bcq.num_steps == ddpg.num_steps == 250
    assert bcq.config.dataset == result["final_dataset"] and len(load_dataset(result["final_dataset"])) == 250
    assert not ddpg.episode_stats.returns  # it never acted
    assert set(result["final"]) == {"behavioral", "ddpg", "bcq", "bc"}


def test_episode_returns_skip_the_unfinished_episode():
    terminals = np.array([False, True, False, False, False, False])
    timeouts = np.array([False, False, False, False, True, False])
    data = OfflineDataset(np.zeros((6, 1), np.float32), np.zeros((6, 1), np.float32),
                          np.arange(1, 7, dtype=np.float32), np.zeros((6, 1), np.float32), terminals, timeouts)
    assert episode_returns(data).tolist() == [3.0, 12.0]


@pytest.mark.parametrize("argv, message", [
    (["experiment", "concurrent", "--env", "Pendulum-v1", "--updates", "5"], "--updates, --dataset-size"),
    (["experiment", "extrapolation", "--env", "CartPole-v1", "--steps-behavioral", "10"], "Discrete"),
    (["experiment", "extrapolation", "--env", "Pendulum-v9"], "unknown environment id"),
    (["experiment", "extrapolation", "--env", "Pendulum-v1", "--bcq-set", "lmbda=2"], "lmbda"),
])
def test_experiment_bad_input_exits_2(argv, message, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    assert message in capsys.readouterr().err
