"""Discrete BCQ pieces with values worked out by hand: the allowed-action mask, the masked argmax,
the Double-DQN target with the mask, and the agent on a CartPole dataset and on frames."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from acrl import BCQ, DiscreteBCQ
from acrl.algos.discrete_bcq import DiscreteBCQConfig, DiscreteBCQNet, allowed_actions, masked_argmax
from acrl.core.errors import InputError
from acrl.parts.datasets import collect_transitions, save_dataset
from acrl.parts.encoders import CNNEncoder
from tests.conftest import Frames, set_linear, write_dataset


@pytest.mark.parametrize("batch", [1, 100])
def test_module_shapes(batch):
    obs_dim, n_actions = 5, 4
    obs = torch.randn(batch, obs_dim)
    net = DiscreteBCQNet(gym.spaces.Box(-1.0, 1.0, (obs_dim,)), "auto", n_actions, (32, 32))
    q, logits = net(obs)
    assert q.shape == logits.shape == (batch, n_actions)
    assert masked_argmax(q, logits, 0.3).shape == (batch,)
    assert allowed_actions(logits, 0.3).shape == (batch, n_actions)


def test_vector_trunks_keep_the_keys_of_two_mlps_and_frames_layout_is_the_channels_setting():
    """The vector net is the authors' FC_Q, two MLPs: its checkpoint keys are those of `mlp`, layers 0, 2, 4 (with
    ReLUs between), so discrete BCQ checkpoints written before the trunks came from make_encoder still load; a
    (10, 10, 10) frame, ambiguous, takes its layout from `channels`."""
    net = DiscreteBCQNet(gym.spaces.Box(-1.0, 1.0, (5,)), "auto", 4, (32, 16))
    assert list(net.state_dict()) == [
        f"{trunk}.{layer}.{p}" for trunk in ("q", "imitation") for layer in (0, 2, 4) for p in ("weight", "bias")
    ]
    assert net.q[4].weight.shape == (4, 16) and net.encoder_name == "mlp"
    cube = gym.spaces.Box(0, 1, (10, 10, 10), bool)
    with pytest.raises(InputError, match="do not say which axis holds the channels"):
        DiscreteBCQNet(cube, "auto", 4)
    net = DiscreteBCQNet(cube, "auto", 4, channels="last")
    assert net.q(torch.zeros(2, 10, 10, 10, dtype=torch.bool)).shape == (2, 4)


def test_frames_get_a_cnn_trunk_each_and_stay_uint8_up_to_the_network(tmp_path):
    data = collect_transitions(Frames(), lambda obs: int(obs[0, 0, 0] > 127), 30, seed=0)
    save_dataset(tmp_path / "frames.h5", data)
    agent = DiscreteBCQ(Frames, dataset=str(tmp_path / "frames.h5"), seed=0, eval_freq=0, iteration_steps=5)
    assert agent.config.encoder == "minatar"  # 12 x 12 frames: "auto" picks MinAtar's CNN
    assert isinstance(agent.net.q[0], CNNEncoder) and isinstance(agent.net.imitation[0], CNNEncoder)
    assert agent.net.q[0] is not agent.net.imitation[0]
    agent.learn(5, progress=False)
    assert agent.buffer.frames.dtype == torch.uint8 and len(agent.buffer) == 30
    assert agent.predict(data.observations[:4]).shape == (4,)
    with pytest.raises(InputError, match="encoder 'minatar' takes image frames"):
        DiscreteBCQ("CartPole-v1", dataset="unused.h5", encoder="minatar")


def test_discrete_masking_chooses_the_only_allowed_action():
    q = torch.tensor([[5.0, 3.0, 1.0]])
    logits = torch.tensor([[-5.0, -5.0, 0.0]])  # G ratios e^-5, e^-5, 1: only action 2 passes 0.3
    torch.testing.assert_close(allowed_actions(logits, 0.3), torch.tensor([[False, False, True]]))
    assert masked_argmax(q, logits, 0.3).tolist() == [2]
    # Ratios 0.5 and 0.25 against 0.3: actions 0 and 1 allowed, 2 not.
    logits = torch.log(torch.tensor([[0.5, 1.0, 0.25]]))
    assert masked_argmax(torch.tensor([[1.0, 0.0, 9.0]]), logits, 0.3).tolist() == [0]
    assert masked_argmax(torch.tensor([[1.0, 0.0, 9.0]]), logits, 0.0).tolist() == [2]  # threshold 0: DQN
    # Values far below the authors' -1e8 mask: a disallowed action still never wins.
    q = torch.tensor([[-1e9, -2e9, -3e9]])
    assert masked_argmax(q, torch.tensor([[-5.0, -5.0, 0.0]]), 0.3).tolist() == [2]


def test_allowed_actions_has_no_underflow_and_keeps_the_mode():
    logits = torch.tensor([[0.0, -200.0, -200.5]])  # softmax ratios underflow to 0 in float32
    assert allowed_actions(logits, 0.0).all()
    assert allowed_actions(logits, 0.99).tolist() == [[True, False, False]]


def test_discrete_target_double_q_with_mask(tmp_path):
    write_dataset(tmp_path / "c.h5", "CartPole-v1")
    agent = DiscreteBCQ(dataset=str(tmp_path / "c.h5"), hidden_sizes=(4,), gamma=0.9, device="cpu")
    # Online Q prefers action 1, but G allows only action 0 (ratio e^-5 < 0.3 for action 1); the
    # target net values action 0 at 10 (action 1 at 20).
    for module, q_bias in ((agent.net, [3.0, 5.0]), (agent.net_target, [10.0, 20.0])):
        set_linear(module.q[2], torch.zeros(2, 4).tolist(), q_bias)
        set_linear(module.imitation[2], torch.zeros(2, 4).tolist(), [0.0, -5.0])
    batch = {
        "next_observations": torch.zeros(2, 4),
        "rewards": torch.tensor([1.0, 2.0]),
        "not_done": torch.tensor([1.0, 0.0]),
        "discount": torch.tensor([0.9, 0.9]),
    }
    torch.testing.assert_close(agent.compute_target(batch), torch.tensor([1.0 + 0.9 * 10.0, 2.0]))


def test_discrete_agent_from_cartpole_dataset(tmp_path):
    write_dataset(tmp_path / "c.h5", "CartPole-v1")
    agent = DiscreteBCQ(dataset=str(tmp_path / "c.h5"), seed=0, hidden_sizes=(8,), eval_freq=0, iteration_steps=5)
    assert agent.config.batch_size == 64 and agent.optimizer.param_groups[0]["lr"] == 3e-4
    agent.learn(5, progress=False)
    action = agent.predict(np.zeros(4, np.float32))
    assert int(action) in (0, 1)
    assert agent.predict(np.zeros((6, 4), np.float32)).shape == (6,)


def test_bad_input():
    with pytest.raises(InputError, match="threshold"):
        DiscreteBCQConfig(threshold=1.0).validate()
    with pytest.raises(InputError, match="action space"):
        BCQ("CartPole-v1", dataset="unused.h5")
    with pytest.raises(InputError, match="action space"):
        DiscreteBCQ("Pendulum-v1", dataset="unused.h5")
