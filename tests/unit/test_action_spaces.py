"""Action spaces through whole agents: Discrete(n, start) in PPO and discrete BCQ, and the Box
bounds that every agent refuses at construction (a constant dimension, one bound only)."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from acrl import DDPG, PPO, DiscreteBCQ
from acrl.core.errors import InputError
from acrl.parts.datasets import OfflineDataset, save_dataset
from tests.conftest import set_linear


class ShiftedActions(gym.Env):
    """Discrete(2, start=1): actions 1 and 2 only; any other raises. Episodes of 3 steps."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2, start=1)

    def __init__(self):
        self.received = []

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"action {action!r} is not in {self.action_space}")
        self.received.append(int(action))
        self.t += 1
        return np.zeros(2, np.float32), 1.0, False, self.t == 3, {}


def test_ppo_predicts_and_rolls_out_discrete_actions_from_start():
    agent = PPO(ShiftedActions, seed=0, n_steps=4, batch_size=4, hidden_sizes=(4,), device="cpu")
    last = agent.model.actor.head.linear
    set_linear(last, torch.zeros(2, 4).tolist(), [0.0, 5.0])  # policy index 1 is the mode
    assert agent.predict(np.zeros(2, np.float32)) == 2  # index 1 + start 1
    set_linear(last, torch.zeros(2, 4).tolist(), [5.0, 0.0])
    assert agent.predict(np.zeros((2, 2), np.float32)).tolist() == [1, 1]

    set_linear(last, torch.zeros(2, 4).tolist(), [0.0, 0.0])  # both actions, probability 1/2
    agent.collect()
    stored = agent.buffer.actions[:, 0].tolist()  # policy indices, what the log-probabilities belong to
    assert set(stored) <= {0, 1}
    assert agent.envs.envs[0].unwrapped.received == [a + 1 for a in stored]


def test_a3c_rollout_sends_discrete_actions_from_start():
    from acrl.algos.a3c import collect_rollout
    from acrl.core.envs import ActionAdapter, LeanSyncVectorEnv
    from acrl.parts.actor_critic import ActorCritic
    from acrl.parts.normalization import IdentityNormalizer

    torch.manual_seed(0)
    envs = LeanSyncVectorEnv([ShiftedActions, ShiftedActions])
    obs, _ = envs.reset(seed=0)
    model = ActorCritic(ShiftedActions.observation_space, gym.spaces.Discrete(2), (4,))
    adapter, starts = ActionAdapter(envs.single_action_space), torch.ones(2, dtype=torch.bool)
    rollout = collect_rollout(envs, model, obs, 3, adapter, IdentityNormalizer(), (), starts)
    stored = rollout.actions.numpy()  # (T, N) policy indices
    assert stored.shape == (3, 2) and set(stored.ravel().tolist()) <= {0, 1}
    for i, env in enumerate(envs.envs):
        assert env.received == (stored[:, i] + 1).tolist()


def test_discrete_bcq_learns_indices_from_0_and_acts_from_start(tmp_path):
    n = 6
    actions = np.array([1, 2, 2, 1, 2, 1])  # environment units of Discrete(2, start=1)
    data = OfflineDataset(
        np.zeros((n, 2), np.float32),
        actions,
        np.zeros(n, np.float32),
        np.zeros((n, 2), np.float32),
        np.zeros(n, bool),
        np.zeros(n, bool),
        {"kind": "test"},
    )
    save_dataset(tmp_path / "shifted.h5", data)
    agent = DiscreteBCQ(ShiftedActions, dataset=str(tmp_path / "shifted.h5"), hidden_sizes=(4,), device="cpu")
    assert agent.load_data().actions.tolist() == [0, 1, 1, 0, 1, 0]
    set_linear(agent.net.q[-1], torch.zeros(2, 4).tolist(), [0.0, 1.0])  # Q prefers index 1
    set_linear(agent.net.imitation[-1], torch.zeros(2, 4).tolist(), [0.0, 0.0])  # both allowed
    assert agent.predict(np.zeros(2, np.float32)) == 2


def box_env(low, high):
    """A factory of a 1-step env with a flat observation and Box(low, high) actions."""

    class BoxActions(gym.Env):
        observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        action_space = gym.spaces.Box(np.array(low, np.float32), np.array(high, np.float32))

        def reset(self, *, seed=None, options=None):
            return np.zeros(2, np.float32), {}

        def step(self, action):
            return np.zeros(2, np.float32), 0.0, True, False, {}

    return BoxActions


@pytest.mark.parametrize("cls", [PPO, DDPG])
@pytest.mark.parametrize(
    ("low", "high", "message"),
    [
        ([0.0, -1.0], [0.0, 1.0], r"action dimensions \[0\] .* have low == high"),
        ([-1.0, 0.0], [1.0, np.inf], r"action dimensions \[1\] .* bounded on one side only"),
    ],
)
def test_agents_refuse_constant_and_half_bounded_action_dimensions_at_construction(cls, low, high, message):
    with pytest.raises(InputError, match=message):
        cls(box_env(low, high), device="cpu")
