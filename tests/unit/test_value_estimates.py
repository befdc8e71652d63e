"""The value estimates that show extrapolation error (Fujimoto et al. 2019, Figure 2): the critic's
Q (a Q-learner's Q, DQN's and discrete BCQ's) at the evaluation episodes' first steps, on the data and
on the policy's actions, against the Monte-Carlo discounted return, each checked against a value
computed here by hand."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from acrl import BC, DDPG, DQN, DiscreteBCQ
from acrl.algos.base import EVAL_SEED_OFFSET
from acrl.parts.buffers import FrameReplayBuffer, ReplayBuffer
from tests.conftest import Frames, set_linear


def pendulum_buffer(actions):
    n = len(actions)
    buffer = ReplayBuffer(n, 3, (1,))
    buffer.add(
        np.zeros((n, 3)),
        np.asarray(actions, np.float32)[:, None],
        np.zeros(n),
        np.zeros((n, 3)),
        np.zeros(n, bool),
        np.zeros(n, bool),
    )
    return buffer


def test_value_estimates_by_hand():
    data_actions = np.linspace(-1.0, 1.0, 2001)  # 2,001 pairs: 1,000 evenly spaced ones are read
    agent = DDPG(
        "Pendulum-v1", buffer=pendulum_buffer(data_actions), hidden_sizes=(1,), gamma=0.9, seed=4, eval_episodes=2
    )
    # The policy always acts tanh(0.5) (policy units); the critic is Q(s, a) = relu(a + 10) - 10 = a.
    set_linear(agent.actor.net[0], [[0.0, 0.0, 0.0]], [0.0])
    set_linear(agent.actor.net[2], [[0.0]], [0.5])
    set_linear(agent.critic.q_net[0], [[0.0, 0.0, 0.0, 1.0]], [10.0])
    set_linear(agent.critic.q_net[2], [[1.0]], [-10.0])
    result = agent.evaluate()

    action = np.tanh(0.5)
    assert result["q_initial_mean"] == pytest.approx(action, abs=1e-6)
    assert result["q_policy_mean"] == pytest.approx(action, abs=1e-6)
    read = data_actions[np.linspace(0, 2000, 1000).astype(int)]  # torch.linspace(...).long() truncates too
    assert result["q_data_mean"] == pytest.approx(read.mean(), abs=1e-6)

    env = gym.make("Pendulum-v1")  # the same two episodes, by hand: 200 steps of the constant torque
    env.reset(seed=4 + EVAL_SEED_OFFSET)
    returns = []
    for _ in range(2):
        rewards = [env.step(np.array([2.0 * action], np.float32))[1] for _ in range(200)]
        # cut by the time limit, but 0.9^200 (7e-10) < TAIL_TOLERANCE (1e-3): nothing past it
        returns.append(sum(0.9**t * r for t, r in enumerate(rewards)))
        env.reset()
    assert result["discounted_return_mean"] == pytest.approx(np.mean(returns), rel=1e-6)
    assert result["discounted_returns"] == pytest.approx(returns, rel=1e-6)


class Corridor(gym.Env):
    """Reward 1 every step; terminated at step `end` (None: never)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, end):
        self.end, self.t = end, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(3, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(3, np.float32), 1.0, self.t == self.end, False, {}


@pytest.mark.parametrize(
    ("end", "expected"),
    [(None, (1 - 0.9**66) / 0.1), (8, (1 - 0.9**8) / 0.1), (5, (1 - 0.9**5) / 0.1)],
)
def test_the_discounted_return_goes_on_past_the_time_limit(end, expected):
    """gamma 0.9, reward 1 each step, a time limit of 5 steps. The critic bootstraps through the limit, so
    its true value is that of acting on: 1 / (1 - 0.9) = 10 for a corridor without end. The return goes on
    until 0.9^t < 1e-3, first at t = 66 (0.9^65 = 1.06e-3, 0.9^66 = 9.6e-4): steps 0..65, (1 - 0.9^66) / 0.1
    = 9.99045, within 0.1% of 10. A corridor that terminates at step 8 stops there: (1 - 0.9^8) / 0.1 =
    5.6953; one that terminates at step 5, as the limit strikes, has no more: (1 - 0.9^5) / 0.1 = 4.0951.
    The undiscounted return and the length stay the episode's own: 5 and 5."""
    agent = DDPG(
        lambda: gym.wrappers.TimeLimit(Corridor(end), max_episode_steps=5),
        buffer=pendulum_buffer([0.0]),
        hidden_sizes=(1,),
        gamma=0.9,
        eval_episodes=2,
    )
    result = agent.evaluate()
    assert result["discounted_returns"] == pytest.approx([expected, expected], abs=1e-6)
    assert result["returns"] == [5.0, 5.0] and result["lengths"] == [5, 5]


def test_no_critic_no_estimates_and_no_buffer_no_data_estimates():
    bc = BC("Pendulum-v1", buffer=pendulum_buffer([0.0, 0.5]), eval_episodes=1)
    result = bc.evaluate()
    assert "discounted_return_mean" not in result  # BC has no gamma: Agent.evaluate's undiscounted returns only
    assert not any(key.startswith("q_") for key in result)
    online = DDPG("Pendulum-v1", eval_episodes=1, start_steps=10, buffer_size=100)
    result = online.evaluate()  # nothing collected yet: only the first-step estimate
    assert "q_initial_mean" in result and "q_data_mean" not in result


def test_a_q_learner_reports_its_q_of_the_first_action_by_hand(constant_reward_env):
    """DQN with Q(s, .) = (3, 5) everywhere: greedy action 1, Q(s0, a0) = 5. Reward 1 every step, a time
    limit of 5 steps that the discounted return goes on past until 0.9^t < 1e-3 (t = 66): (1 - 0.9^66) / 0.1
    = 9.99045. On data whose actions are 0, 1, 1, 0: Q(s, a) averages 4, Q(s, pi(s)) is 5."""
    buffer = ReplayBuffer(4, 1, ())
    buffer.add(
        np.zeros((4, 1)), np.array([0, 1, 1, 0]), np.ones(4), np.zeros((4, 1)), np.zeros(4, bool), np.zeros(4, bool)
    )
    agent = DQN(constant_reward_env, buffer=buffer, hidden_sizes=(2,), gamma=0.9, eval_episodes=2)
    set_linear(agent.net.head, [[0.0, 0.0], [0.0, 0.0]], [3.0, 5.0])
    result = agent.evaluate()
    assert result["q_initial_mean"] == pytest.approx(5.0)
    assert result["discounted_returns"] == pytest.approx([9.99045, 9.99045], abs=1e-5)
    assert result["q_data_mean"] == pytest.approx(4.0) and result["q_policy_mean"] == pytest.approx(5.0)


def test_discrete_bcq_on_frames_reads_its_q_at_the_first_frame_and_on_the_stored_frames(tmp_path):
    """Discrete BCQ on uint8 frames (`Frames`: reward = the action, 10 steps then the time limit), Q = (3, 5)
    and every action allowed: Q(s0, a0) = 5; the discounted return of reward 1 a step, on past the time limit
    until 0.9^t < 1e-3 (t = 66), (1 - 0.9^66) / 0.1 = 9.99045; the stored actions 0, 1, 1 give Q(s, a) 13 / 3."""
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (4, 12, 12, 3), dtype=np.uint8)
    buffer = FrameReplayBuffer.from_transitions(
        frames[:3], np.array([0, 1, 1]), np.zeros(3), frames[1:], np.zeros(3, bool), np.zeros(3, bool)
    )
    agent = DiscreteBCQ(Frames, buffer=buffer, gamma=0.9, eval_episodes=1)
    assert agent.config.encoder == "minatar" and agent.buffer.frames.dtype == torch.uint8
    set_linear(agent.net.q[1], torch.zeros(2, 128).tolist(), [3.0, 5.0])
    set_linear(agent.net.imitation[1], torch.zeros(2, 128).tolist(), [0.0, 0.0])
    result = agent.evaluate()
    assert result["q_initial_mean"] == pytest.approx(5.0) and result["returns"] == [10.0]
    assert result["discounted_return_mean"] == pytest.approx((1 - 0.9**66) / 0.1, rel=1e-6)
    assert result["q_data_mean"] == pytest.approx(13 / 3) and result["q_policy_mean"] == pytest.approx(5.0)
