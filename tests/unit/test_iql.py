"""IQL by hand (Kostrikov et al. 2022): the expectile loss |tau - 1(u < 0)| u^2 (Eq. 5), the advantage weights
exp(beta (Q - V)) clipped at 100 (Eq. 7), one whole update on hand-set networks (V's loss, the critics' target
r + gamma (1 - terminated) V(s'), the weighted log-likelihood), the policy's cosine schedule, the locomotion reward
scaling, and the refusals."""

import math

import numpy as np
import pytest
import torch

from acrl import IQL
from acrl.algos.iql import awr_weights, cosine_decay, episode_returns, expectile_loss
from acrl.core.errors import InputError
from acrl.parts.datasets import OfflineDataset, save_dataset
from tests.conftest import set_linear, write_dataset


def test_expectile_loss_weighs_positive_errors_by_tau():
    u = torch.tensor([2.0, -2.0, 0.0])
    assert expectile_loss(u, 0.7).tolist() == pytest.approx([0.7 * 4, 0.3 * 4, 0.0])
    assert expectile_loss(u, 0.5).tolist() == pytest.approx([2.0, 2.0, 0.0])  # 0.5: half the squared error


def test_weights_are_exponentiated_advantages_clipped_at_100_and_detached():
    q = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    weights = awr_weights(q, torch.ones(3), beta=3.0, max_weight=100.0)
    assert weights.tolist() == pytest.approx([1.0, math.exp(3.0), 100.0])  # exp(6) = 403 is clipped
    assert not weights.requires_grad


def test_cosine_decay_of_the_policys_step_size():
    assert cosine_decay(3e-4, 0, 100) == pytest.approx(3e-4)
    assert cosine_decay(3e-4, 50, 100) == pytest.approx(1.5e-4)
    assert cosine_decay(3e-4, 100, 100) == cosine_decay(3e-4, 150, 100) == pytest.approx(0.0)


def test_one_update_by_hand():
    """Hand-set networks on Pendulum (s_0 the first feature): V(s) = s_0 + 1; Q1 = 1, Q2 = 3 everywhere (the target
    critics the same); the policy N(tanh(0), 1). A step size of 1e-12 keeps every network where it was, so the
    losses the update reports are those of the hand-set networks:
        V:      Q' = min(1, 3) = 1, V = [1, 3] at s_0 = [0, 2]: u = [0, -2], loss mean(0.7 * 0, 0.3 * 4) = 0.6
        target: y = r + gamma (1 - terminated) V(s') = [1 + 0.5 * 2, 0 + 0] = [2, 0] (s'_0 = [1, 3], 2nd terminated)
        critics: mean((1 - 2)^2 + (3 - 2)^2, (1 - 0)^2 + (3 - 0)^2) = mean(2, 10) = 6
        policy: weights exp(3 [0, -2]) = [1, e^-6]; log N(a; 0, 1) at a = [0, 1]: -0.5 log 2 pi - [0, 0.5]
    """
    agent = IQL("Pendulum-v1", dataset="unused.h5", hidden_sizes=(1,), learning_rate=1e-12, gamma=0.5)
    set_linear(agent.value.net[0], [[1.0, 0.0, 0.0]], [1.0])
    set_linear(agent.value.net[2], [[1.0]], [0.0])
    for critic in (agent.critic, agent.critic_target):
        for net, q in ((critic.q1_net, 1.0), (critic.q2_net, 3.0)):
            set_linear(net[0], [[0.0, 0.0, 0.0, 0.0]], [1.0])
            set_linear(net[2], [[q]], [0.0])
    set_linear(agent.actor.net[0], [[0.0, 0.0, 0.0]], [0.0])
    set_linear(agent.actor.net[2], [[0.0]], [0.0])
    batch = {
        "observations": torch.tensor([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]]),
        "actions": torch.tensor([[0.0], [1.0]]),
        "rewards": torch.tensor([1.0, 0.0]),
        "next_observations": torch.tensor([[1.0, 0.0, 0.0], [3.0, 0.0, 0.0]]),
        "not_done": torch.tensor([1.0, 0.0]),
    }
    metrics = agent.update(batch)
    log_normal = -0.5 * math.log(2 * math.pi)
    policy_loss = -(1.0 * log_normal + math.exp(-6.0) * (log_normal - 0.5)) / 2
    assert metrics["train/value_loss"] == pytest.approx(0.6)
    assert metrics["train/critic_loss"] == pytest.approx(6.0)
    assert metrics["train/weight_mean"] == pytest.approx((1.0 + math.exp(-6.0)) / 2)
    assert metrics["train/policy_loss"] == pytest.approx(policy_loss)
    assert metrics["train/actor_lr"] == pytest.approx(1e-12)  # the first update of the budget: the full step size


def test_episode_returns_and_the_locomotion_reward_scaling(tmp_path):
    rewards = np.array([1, 1, 1, 2, 0, 0], np.float32)
    ends = np.array([0, 0, 1, 1, 0, 0], bool)  # episodes [1, 1, 1], [2] and the unfinished [0, 0]
    assert episode_returns(rewards, ends).tolist() == [3.0, 2.0, 0.0]
    n = len(rewards)
    terminals, timeouts = np.zeros(n, bool), np.zeros(n, bool)
    terminals[2], timeouts[3] = True, True
    obs, actions = np.zeros((n, 3), np.float32), np.zeros((n, 1), np.float32)
    data = OfflineDataset(obs, actions, rewards, obs, terminals, timeouts, {"env_id": "Pendulum-v1"})
    save_dataset(tmp_path / "episodes.h5", data)
    agent = IQL(dataset=str(tmp_path / "episodes.h5"), hidden_sizes=(4,), return_range=1000.0)
    assert agent.load_data().rewards.tolist() == pytest.approx((rewards * 1000.0 / 3.0).tolist())
    never = np.zeros(n, bool)  # one unfinished episode: no spread of returns to scale by
    save_dataset(tmp_path / "one.h5", OfflineDataset(obs, actions, rewards, obs, never, never))
    agent = IQL("Pendulum-v1", dataset=str(tmp_path / "one.h5"), hidden_sizes=(4,), return_range=1000.0)
    with pytest.raises(InputError, match=r"its 1 episode\(s\) all return 5: set return_range=null"):
        agent.load_data()


@pytest.mark.parametrize(
    "values, message",
    [
        ({"expectile": 0.0}, r"expectile must lie in \(0, 1\)"),
        ({"expectile": 1.0}, r"expectile must lie in \(0, 1\)"),
        ({"beta": -1.0}, "beta must be >= 0"),
        ({"max_weight": 0.0}, "max_weight must be > 0"),
    ],
)
def test_bad_settings_are_one_line_before_any_work(values, message):
    with pytest.raises(InputError, match=message) as error:
        IQL("Pendulum-v1", dataset="unused.h5", **values)
    assert "\n" not in str(error.value)


def test_a_discrete_dataset_is_refused_naming_discrete_cql(tmp_path):
    write_dataset(tmp_path / "cartpole.h5", "CartPole-v1")
    with pytest.raises(InputError, match=r"use discrete CQL \(DiscreteCQL, `acrl train discrete_cql`\)"):
        IQL(dataset=str(tmp_path / "cartpole.h5"))
