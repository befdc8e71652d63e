"""Behavioral cloning, BC and discrete BC: the losses by hand (squared error for Box actions,
cross-entropy for Discrete ones), a known policy recovered from its data, and the CLI."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from acrl import BC, DiscreteBC, load
from acrl.cli import main
from acrl.core.errors import InputError
from acrl.parts.buffers import FrameReplayBuffer
from acrl.parts.datasets import collect_transitions, save_dataset
from acrl.parts.heads import CategoricalHead
from tests.conftest import Frames, set_linear, write_dataset


def known_policy(obs: np.ndarray) -> np.ndarray:
    """Pendulum torque in [-2, 2] from the angular velocity: what BC should recover."""
    return np.array([2.0 * np.tanh(obs[2] / 4.0)], dtype=np.float32)


@pytest.fixture(scope="module")
def pendulum_data(tmp_path_factory):
    path = tmp_path_factory.mktemp("bc") / "pendulum.h5"
    save_dataset(
        path,
        collect_transitions(
            gym.make("Pendulum-v1"), known_policy, 2000, seed=0, kind="imitation", behavioral_policy="known_policy"
        ),
    )
    return path


def test_the_loss_is_the_mean_squared_action_error_summed_over_dimensions(pendulum_data):
    agent = BC(dataset=str(pendulum_data), hidden_sizes=[8], seed=0)
    with torch.no_grad():
        for param in agent.actor.parameters():
            param.zero_()  # pi(s) = tanh(0) = 0 for every state
    actions = torch.tensor([[0.5], [-1.0], [0.25], [0.0]])
    batch = {"observations": torch.zeros(4, 3), "actions": actions}
    assert agent.update(batch)["train/bc_loss"] == pytest.approx((0.25 + 1.0 + 0.0625 + 0.0) / 4)


def test_bc_recovers_the_policy_that_labelled_the_data(pendulum_data):
    agent = BC(dataset=str(pendulum_data), hidden_sizes=[64, 64], seed=0, eval_freq=0, iteration_steps=500)
    agent.learn(total_steps=3000, progress=False)
    states = np.stack([np.cos(t := np.linspace(-np.pi, np.pi, 50)), np.sin(t), np.linspace(-6, 6, 50)], axis=1)
    predicted = agent.predict(states.astype(np.float32))
    expected = np.stack([known_policy(s) for s in states])
    assert np.sqrt(np.mean((predicted - expected) ** 2)) < 0.1  # torque units, out of a range of 4 (measured: 0.017)


def test_the_cli_trains_bc_from_box_and_discrete_bc_from_discrete_datasets(pendulum_data, tmp_path, capsys):
    run = tmp_path / "bc"
    assert (
        main(
            [
                "train",
                "bc",
                "--dataset",
                str(pendulum_data),
                "--total-steps",
                "200",
                "--set",
                "eval_freq=100",
                "eval_episodes=1",
                "hidden_sizes=[16]",
                "--run-dir",
                str(run),
                "--no-progress",
            ]
        )
        == 0
    )
    assert (run / "eval.json").is_file() and (run / "checkpoints" / "best.pt").is_file()
    cartpole = tmp_path / "cartpole.h5"
    env = gym.make("CartPole-v1")
    save_dataset(cartpole, collect_transitions(env, lambda obs: 0, 50, seed=0))
    argv = ["--dataset", str(cartpole), "--total-steps", "20", "--no-progress"]
    capsys.readouterr()
    assert main(["train", "bc", *argv]) == 2  # BC regresses continuous actions: one line names discrete_bc
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "use discrete BC (DiscreteBC, `acrl train discrete_bc`)" in err
    run = ["--set", "eval_episodes=1", "hidden_sizes=[8]", "--run-dir", str(tmp_path / "x")]
    assert main(["train", "discrete_bc", *argv, *run]) == 0
    agent = load(tmp_path / "x" / "checkpoints" / "best.pt")
    assert isinstance(agent, DiscreteBC) and agent.predict(np.zeros(4, np.float32)) in (0, 1)


def test_discrete_bc_minimises_the_cross_entropy_of_the_logged_actions(tmp_path):
    """Logits (0, ln 3) everywhere: pi = (1/4, 3/4). The logged actions 0, 1, 1 cost
    (ln 4 + 2 ln 4/3) / 3 = 0.6539; the greedy action is 1, and a sample is 1 three times in four."""
    write_dataset(tmp_path / "c.h5", "CartPole-v1")
    agent = DiscreteBC(dataset=str(tmp_path / "c.h5"), hidden_sizes=[8], seed=0)
    assert agent.config.encoder == "mlp" and isinstance(agent.actor, CategoricalHead)
    set_linear(agent.actor.linear, [[0.0] * 8, [0.0] * 8], [0.0, math.log(3.0)])
    batch = {"observations": torch.randn(3, 4), "actions": torch.tensor([0, 1, 1])}
    loss = (math.log(4.0) + 2 * math.log(4.0 / 3.0)) / 3
    assert agent.update(batch)["train/bc_loss"] == pytest.approx(loss, abs=1e-6)
    set_linear(agent.actor.linear, [[0.0] * 8, [0.0] * 8], [0.0, math.log(3.0)])
    assert agent.predict(np.zeros((5, 4), np.float32)).tolist() == [1] * 5
    sampled = agent.predict(np.zeros((4000, 4), np.float32), deterministic=False)
    assert sampled.mean() == pytest.approx(0.75, abs=0.03)


def test_discrete_bc_takes_frames_and_each_bc_its_own_action_space():
    assert DiscreteBC(Frames, buffer=FrameReplayBuffer(4, (12, 12, 3), np.uint8)).config.encoder == "minatar"
    with pytest.raises(InputError, match=r"BC supports a 1-D Box action space.*use discrete BC"):
        BC("CartPole-v1", dataset="unused.h5")
    with pytest.raises(InputError, match=r"BC needs a flat Box observation space"):
        BC(Frames, buffer=FrameReplayBuffer(4, (12, 12, 3), np.uint8))
    with pytest.raises(InputError, match=r"DiscreteBC supports a Discrete action space.*use BC"):
        DiscreteBC("Pendulum-v1", dataset="unused.h5")
    with pytest.raises(InputError, match="encoder 'nature' takes image frames"):
        DiscreteBC("CartPole-v1", dataset="unused.h5", encoder="nature")


def test_bc_is_a_replay_agent_without_gamma_or_tau(pendulum_data):
    from acrl.algos.bc import BCConfig
    from acrl.algos.off_policy import OffPolicyAgent, ReplayAgent

    agent = BC(dataset=str(pendulum_data), hidden_sizes=[8], seed=0)
    assert isinstance(agent, ReplayAgent) and not isinstance(agent, OffPolicyAgent)
    assert not hasattr(BCConfig(), "gamma") and not hasattr(BCConfig(), "tau")
    assert agent.step_unit == "update"
    with pytest.warns(UserWarning, match="tau is no longer a setting of BCConfig"):
        BC(dataset=str(pendulum_data), hidden_sizes=[8], tau=0.5)


def test_an_old_bc_checkpoint_with_gamma_and_tau_still_loads(pendulum_data, tmp_path):
    """A checkpoint as acrl wrote BC's when it was an off-policy agent: gamma and tau in the config,
    the off-policy extra state (owed updates, episode statistics)."""
    from acrl import load
    from acrl.core.checkpoint import rng_state, save_checkpoint

    agent = BC(dataset=str(pendulum_data), hidden_sizes=[8], seed=0, iteration_steps=5)
    state = agent.state_dict()
    state["counters"]["num_steps"] = 10
    state["extra"] = {"updates": 10, "owed_updates": 0.0, "episode_returns": [], "episode_lengths": []}
    config = {**agent.config.to_dict(), "gamma": 0.99, "tau": 0.005}
    save_checkpoint(tmp_path / "old.pt", "bc", config, state, rng_state(agent.rng))
    with pytest.warns(UserWarning, match="is no longer a setting of BCConfig") as record:
        loaded = load(tmp_path / "old.pt")
    assert [str(w.message).split(": ")[1].split()[0] for w in record] == ["gamma", "tau"]
    assert isinstance(loaded, BC) and (loaded.num_steps, loaded.updates) == (10, 10)
    assert not hasattr(loaded.config, "gamma") and loaded.config.hidden_sizes == (8,)
    for key, value in agent.actor.state_dict().items():
        assert torch.equal(loaded.actor.state_dict()[key], value)
