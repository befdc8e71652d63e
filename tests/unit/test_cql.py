"""CQL by hand (Kumar et al. 2020, Eq. 4 and Appendix F): the importance-sampled log-sum-exp gap, the sampled
actions and their densities, the penalty and TD loss of an update on hand-set critics, the Lagrange multiplier's
direction; discrete CQL's exact gap, its loss (TD + alpha gap) and gradient by hand, frames; the refusals."""

import math

import pytest
import torch

from acrl import CQL, DiscreteCQL
from acrl.algos.cql import cql_penalty
from acrl.algos.discrete_cql import discrete_cql_penalty
from acrl.core.errors import InputError
from acrl.parts.datasets import collect_transitions, save_dataset
from acrl.parts.encoders import CNNEncoder
from tests.conftest import Frames, set_linear, write_dataset


def test_the_log_sum_exp_subtracts_each_samples_log_density():
    """Q = 0 at three sampled actions of densities 1/2, 1, 1/3: log(2 + 1 + 3) minus Q(s, a) = 0.5."""
    q_sampled = torch.zeros(1, 3)
    log_density = torch.tensor([[-math.log(2.0), 0.0, -math.log(3.0)]])
    assert cql_penalty(q_sampled, log_density, torch.tensor([0.5])).tolist() == pytest.approx([math.log(6.0) - 0.5])


def test_the_sampled_actions_are_uniform_then_the_policys_at_s_and_at_next_s():
    agent = CQL("Pendulum-v1", dataset="unused.h5", hidden_sizes=(8,), n_action_samples=4)
    obs, next_obs = torch.randn(5, 3), torch.randn(5, 3)
    torch.manual_seed(0)
    actions, log_density = agent.sampled_actions(obs, next_obs)
    assert actions.shape == (5, 12, 1) and log_density.shape == (5, 12)
    assert actions.abs().max() <= 1.0 and not actions.requires_grad and not log_density.requires_grad
    assert torch.all(log_density[:, :4] == -math.log(2.0))  # uniform on [-1, 1]: density 1/2 in one dimension
    torch.manual_seed(0)
    torch.rand(5, 4, 1)  # the uniform draws come first
    at_s, log_pi_s = agent.actor.sample(obs.repeat_interleave(4, dim=0))
    at_next, log_pi_next = agent.actor.sample(next_obs.repeat_interleave(4, dim=0))
    assert torch.equal(actions[:, 4:8].reshape(-1, 1), at_s) and torch.equal(log_density[:, 4:8].flatten(), log_pi_s)
    assert torch.equal(actions[:, 8:].reshape(-1, 1), at_next)
    assert torch.equal(log_density[:, 8:].flatten(), log_pi_next)


def hand_cql(**settings) -> CQL:
    """CQL on Pendulum with both critics (and their targets) Q(s, a) = relu(a + 1), the three sampled actions -1, 0, 1
    with log-density 0 each (`sampled_actions` replaced)."""
    agent = CQL("Pendulum-v1", dataset="unused.h5", hidden_sizes=(1,), n_action_samples=1, **settings)
    for critic in (agent.critic, agent.critic_target):
        for net in (critic.q1_net, critic.q2_net):
            set_linear(net[0], [[0.0, 0.0, 0.0, 1.0]], [1.0])
            set_linear(net[2], [[1.0]], [0.0])
    agent.sampled_actions = lambda obs, next_obs: (torch.tensor([[[-1.0], [0.0], [1.0]]]), torch.zeros(1, 3))
    return agent


BATCH = {
    "observations": torch.zeros(1, 3),
    "actions": torch.zeros(1, 1),  # Q(s, 0) = 1
    "rewards": torch.tensor([3.0]),
    "next_observations": torch.zeros(1, 3),
    "not_done": torch.zeros(1),  # terminated: y = r = 3
}


def test_an_update_reports_the_td_loss_and_the_penalty_by_hand():
    """Q at the sampled actions: 0, 1, 2; the gap log(1 + e + e^2) - Q(s, 0) = log(11.107) - 1; TD: 2 (1 - 3)^2."""
    metrics = hand_cql(cql_alpha=5.0).update(BATCH)
    assert metrics["train/cql_penalty"] == pytest.approx(math.log(1 + math.e + math.e**2) - 1.0)
    assert metrics["train/value_loss"] == pytest.approx(8.0)
    assert "train/lagrange_multiplier" not in metrics


@pytest.mark.parametrize("gap, rises", [(0.5, True), (3.0, False)])
def test_the_lagrange_multiplier_rises_while_the_weighted_gap_exceeds_the_target(gap, rises):
    agent = hand_cql(cql_alpha=1.0, target_action_gap=gap)  # the weighted gap is 1.41
    metrics = agent.update(BATCH)
    assert metrics["train/lagrange_multiplier"] == pytest.approx(1.0)  # alpha' = exp(0) when the update began
    assert (agent.lagrange_multiplier().item() > 1.0) == rises


def test_discrete_gap_is_the_exact_log_sum_exp_minus_the_datas_q():
    q = torch.tensor([[0.0, math.log(3.0)], [1.0, 1.0]])
    gaps = [math.log(4.0) - 0.0, math.log(2.0 * math.e) - 1.0]
    assert discrete_cql_penalty(q, torch.tensor([0, 1])).item() == pytest.approx(sum(gaps) / 2)


def test_a_discrete_update_adds_alpha_times_the_gap_to_the_td_loss():
    """Q(s, .) = [0, log 3] everywhere; action 0, reward 0.5, terminated: Huber(0 - 0.5) = 0.125, gap log 4. The
    gradient on the output biases: the TD error [-0.5, 0] plus alpha (softmax - one-hot) = alpha [-3/4, 3/4]."""
    agent = DiscreteCQL("CartPole-v1", dataset="unused.h5", hidden_sizes=(1,), cql_alpha=2.0)
    set_linear(agent.net.encoder[0], [[0.0] * 4], [1.0])
    set_linear(agent.net.head, [[0.0], [math.log(3.0)]], [0.0, 0.0])
    batch = {
        "observations": torch.zeros(1, 4),
        "actions": torch.tensor([0]),
        "rewards": torch.tensor([0.5]),
        "next_observations": torch.zeros(1, 4),
        "not_done": torch.zeros(1),
    }
    metrics = agent.update(batch)
    assert metrics["train/value_loss"] == pytest.approx(0.125)
    assert metrics["train/cql_penalty"] == pytest.approx(math.log(4.0))
    assert agent.net.head.bias.grad.tolist() == pytest.approx([-0.5 - 2.0 * 0.75, 2.0 * 0.75])


def test_discrete_cql_learns_from_frames_with_a_cnn(tmp_path):
    data = collect_transitions(Frames(), lambda obs: int(obs[0, 0, 0] > 127), 30, seed=0)
    save_dataset(tmp_path / "frames.h5", data)
    agent = DiscreteCQL(Frames, dataset=str(tmp_path / "frames.h5"), seed=0, eval_freq=0, iteration_steps=5)
    assert agent.config.encoder == "minatar" and isinstance(agent.net.encoder, CNNEncoder)
    agent.learn(5, progress=False)
    assert agent.buffer.frames.dtype == torch.uint8
    assert agent.predict(data.observations[:4]).shape == (4,)


def test_each_cql_refuses_the_other_action_space_naming_the_one_that_fits(tmp_path):
    write_dataset(tmp_path / "cartpole.h5", "CartPole-v1")
    write_dataset(tmp_path / "pendulum.h5", "Pendulum-v1")
    with pytest.raises(InputError, match=r"use discrete CQL \(DiscreteCQL, `acrl train discrete_cql`\)") as error:
        CQL(dataset=str(tmp_path / "cartpole.h5"))
    assert "\n" not in str(error.value)
    with pytest.raises(InputError, match=r"use CQL \(`acrl train cql`\)") as error:
        DiscreteCQL(dataset=str(tmp_path / "pendulum.h5"))
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("cls", [CQL, DiscreteCQL])
def test_a_negative_alpha_is_one_line_before_any_work(cls):
    env = "Pendulum-v1" if cls is CQL else "CartPole-v1"
    with pytest.raises(InputError, match="cql_alpha must be >= 0") as error:
        cls(env, dataset="unused.h5", cql_alpha=-1.0)
    assert "\n" not in str(error.value)
    assert cls(env, dataset="unused.h5", cql_alpha=0.0).config.cql_alpha == 0.0  # 0: no penalty, plain Q-learning
