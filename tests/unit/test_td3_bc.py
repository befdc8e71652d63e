"""TD3+BC by hand: the actor loss -lambda Q + (pi - a)^2 with lambda = alpha / mean|Q| detached (Fujimoto and Gu
2021, Eq. 3-4), on tensors and on the agent's hand-set networks; the state normalisation by the dataset's mean and
std (Eq. 5), used for acting and kept by checkpoints; the refusals."""

import math

import numpy as np
import pytest
import torch

from acrl import TD3BC, load
from acrl.algos.td3_bc import td3_bc_actor_loss
from acrl.core.errors import InputError
from acrl.parts.datasets import OfflineDataset, save_dataset
from tests.conftest import set_linear, write_dataset


def test_actor_loss_by_hand_with_lambda_detached():
    q = torch.tensor([2.0, -4.0], requires_grad=True)  # mean |Q| = 3: lambda = 2.5 / 3
    pi = torch.tensor([[0.5], [0.0]], requires_grad=True)
    actions = torch.tensor([[0.0], [0.5]])
    loss, lmbda, bc = td3_bc_actor_loss(q, pi, actions, alpha=2.5)
    assert lmbda.item() == pytest.approx(5 / 6)
    assert bc.item() == pytest.approx(0.25)  # (0.25 + 0.25) / 2: the mean over batch and action dimensions
    assert loss.item() == pytest.approx(5 / 6 + 0.25)  # -lambda * mean Q = -(5/6)(-1)
    loss.backward()
    # lambda is a constant of the gradient: d loss / d q_i = -lambda / B, whatever the sign of q_i
    assert q.grad.tolist() == pytest.approx([-5 / 12, -5 / 12])
    assert pi.grad.flatten().tolist() == pytest.approx([0.5, -0.5])  # 2 (pi - a) / B


def test_the_agents_actor_loss_on_hand_set_networks():
    """pi(s) = tanh(relu(s_0)), Q1(s, a) = 2 relu(a + 1): at s_0 = 0 and atanh(0.5), pi = 0 and 0.5, Q = 2 and 3,
    lambda = 2.5 / 2.5 = 1, BC term ((0 - 0)^2 + (0.5 - 0)^2) / 2 = 0.125, loss -2.5 + 0.125."""
    agent = TD3BC("Pendulum-v1", dataset="unused.h5", hidden_sizes=(1,))
    set_linear(agent.actor.net[0], [[1.0, 0.0, 0.0]], [0.0])
    set_linear(agent.actor.net[2], [[1.0]], [0.0])
    set_linear(agent.critic.q1_net[0], [[0.0, 0.0, 0.0, 1.0]], [1.0])
    set_linear(agent.critic.q1_net[2], [[2.0]], [0.0])
    batch = {"observations": torch.tensor([[0.0, 0.0, 0.0], [math.atanh(0.5), 0.0, 0.0]]), "actions": torch.zeros(2, 1)}
    loss, metrics = agent.actor_loss(batch)
    assert loss.item() == pytest.approx(-2.375)
    assert metrics == pytest.approx({"train/policy_loss": -2.375, "train/bc_loss": 0.125, "train/lmbda": 1.0})


@pytest.fixture
def hand_dataset(tmp_path):
    """Two Pendulum transitions: observations [1, 0, 5], [3, 4, 5] (mean [2, 2, 5], std [1, 2, 0])."""
    data = OfflineDataset(
        np.array([[1, 0, 5], [3, 4, 5]], np.float32),
        np.array([[0.0], [1.0]], np.float32),
        np.array([1.0, 0.0], np.float32),
        np.array([[3, 4, 5], [5, 8, 6]], np.float32),
        np.zeros(2, bool),
        np.zeros(2, bool),
        {"env_id": "Pendulum-v1", "kind": "test"},
    )
    save_dataset(tmp_path / "hand.h5", data)
    return tmp_path / "hand.h5"


def test_states_are_normalised_by_the_datasets_mean_and_std_for_learning_and_acting(hand_dataset, tmp_path):
    agent = TD3BC(dataset=str(hand_dataset), hidden_sizes=(8,), batch_size=2, iteration_steps=2, eval_freq=0)
    buffer = agent.load_data()
    # (s - mu) / (sigma + 1e-3): the constant third feature divides by 1e-3 exactly, the others by sigma + ~0
    np.testing.assert_allclose(buffer.observations.numpy(), [[-1, -1, 0], [1, 1, 0]], atol=1e-3)
    np.testing.assert_allclose(buffer.next_observations.numpy(), [[1, 1, 0], [3, 3, 1000]], atol=1e-3)
    raw = np.array([5, 8, 6], np.float32)
    with torch.no_grad():
        expected = 2.0 * agent.actor(torch.tensor([[3.0, 3.0, 1000.0]])).item()  # Pendulum's torque bound is 2
    assert agent.predict(raw).item() == pytest.approx(expected, abs=1e-5)
    # a checkpoint keeps the statistics; a resumed run keeps them rather than refitting
    agent.learn(2, run_dir=tmp_path / "run", progress=False)
    loaded = load(tmp_path / "run" / "checkpoints" / "latest.pt")
    assert loaded.obs_normalizer.stats.mean.tolist() == [2, 2, 5] and loaded.obs_normalizer.stats.count == 2
    assert loaded.predict(raw) == pytest.approx(agent.predict(raw))
    loaded.learn(4, progress=False)
    assert loaded.obs_normalizer.stats.count == 2
    np.testing.assert_allclose(loaded.buffer.observations.numpy(), buffer.observations.numpy())


def test_refusals(tmp_path):
    write_dataset(tmp_path / "cartpole.h5", "CartPole-v1")
    with pytest.raises(InputError, match=r"use discrete CQL \(DiscreteCQL, `acrl train discrete_cql`\)") as error:
        TD3BC(dataset=str(tmp_path / "cartpole.h5"))
    assert "\n" not in str(error.value)
    with pytest.raises(InputError, match="alpha must be >= 0") as error:
        TD3BC("Pendulum-v1", dataset="unused.h5", alpha=-1.0)
    assert "\n" not in str(error.value)
    with pytest.raises(InputError, match="learns from a fixed dataset"):
        TD3BC("Pendulum-v1")
