"""SAC pieces against references and values worked out by hand: the tanh log-prob correction,
the log-std clamp, the soft critic target, the alpha loss's sign, target networks, checkpoints."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch.distributions import Normal, TanhTransform, TransformedDistribution

from acrl import SAC
from acrl.algos.sac import LOG_STD_MAX, LOG_STD_MIN
from acrl.core.errors import InputError
from acrl.parts.buffers import ReplayBuffer
from acrl.parts.heads import squashed_log_prob

TINY = {"hidden_sizes": (1,), "buffer_size": 100, "batch_size": 3, "start_steps": 0}
SMALL = {
    "hidden_sizes": (8, 8),
    "buffer_size": 200,
    "batch_size": 16,
    "start_steps": 20,
    "iteration_steps": 20,
    "eval_freq": 0,
}
LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def set_linear(layer, weight, bias):
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weight, dtype=torch.float32))
        layer.bias.copy_(torch.tensor(bias, dtype=torch.float32))


# ------------------------------------------------------------------ the squashed Gaussian
def test_log_prob_matches_torch_transformed_distribution():
    gen = torch.Generator().manual_seed(0)
    mean = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    log_std = torch.rand(6, 3, generator=gen, dtype=torch.float64) * 2 - 1.5
    u = mean + log_std.exp() * torch.randn(6, 3, generator=gen, dtype=torch.float64)
    reference = TransformedDistribution(Normal(mean, log_std.exp()), TanhTransform())
    expected = reference.log_prob(torch.tanh(u)).sum(-1)
    torch.testing.assert_close(squashed_log_prob(u, mean, log_std), expected)
    # float32, as the agent computes it, against the float64 reference
    torch.testing.assert_close(
        squashed_log_prob(u.float(), mean.float(), log_std.float()), expected.float(), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("u", [20.0, -20.0])
def test_log_prob_is_finite_and_exact_where_tanh_saturates(u):
    ut = torch.tensor([[u, u]], requires_grad=True)
    zeros = torch.zeros(1, 2)
    assert torch.isinf(torch.log(1 - torch.tanh(ut.detach()) ** 2)).all()  # the naive form fails here
    value = squashed_log_prob(ut, zeros, zeros)
    # per dimension: log N(u; 0, 1) - log(1 - tanh(u)^2) = -u^2/2 - log sqrt(2 pi) + 2 log cosh(u)
    by_hand = 2 * (-u * u / 2 - LOG_SQRT_2PI + 2 * math.log(math.cosh(u)))
    assert torch.isfinite(value).all()
    assert value.item() == pytest.approx(by_hand, rel=1e-6)
    value.sum().backward()
    assert torch.isfinite(ut.grad).all()


def test_actor_clamps_log_std_and_deterministic_action_is_tanh_mean():
    agent = SAC("Pendulum-v1", seed=0, **TINY)
    out = agent.actor.linear
    obs = torch.zeros(1, 3)
    set_linear(out, [[0.0], [0.0]], [0.7, 50.0])
    mean, log_std = agent.actor.mean_log_std(agent.actor.encoder(obs))
    assert (mean.item(), log_std.item()) == (pytest.approx(0.7), LOG_STD_MAX)
    set_linear(out, [[0.0], [0.0]], [0.7, -50.0])
    assert agent.actor.mean_log_std(agent.actor.encoder(obs))[1].item() == LOG_STD_MIN == -20.0
    set_linear(out, [[0.0], [0.0]], [0.7, 0.0])
    action, log_pi = agent.actor.sample(obs, deterministic=True)
    # density at u = mean with std 1: -log sqrt(2 pi) - log(1 - tanh(0.7)^2)
    assert action.item() == pytest.approx(math.tanh(0.7))
    assert log_pi.item() == pytest.approx(-LOG_SQRT_2PI - math.log(1 - math.tanh(0.7) ** 2), rel=1e-5)
    # predict maps [-1, 1] to Pendulum's [-2, 2]
    assert agent.predict(np.zeros(3, np.float32))[0] == pytest.approx(2 * math.tanh(0.7), rel=1e-5)
    samples = agent.explore(np.zeros((500, 3), np.float32))
    assert samples.dtype == np.float32 and samples.shape == (500, 1) and np.abs(samples).max() <= 1.0
    assert np.arctanh(np.clip(samples, -0.999999, 0.999999)).std() == pytest.approx(1.0, abs=0.15)


# ------------------------------------------------------------------ the soft critic target
def three_transitions():
    """Rewards 1, next state s0 = 1: terminated, truncated, and neither."""
    buffer = ReplayBuffer(10, 3, (1,))
    next_obs = np.tile(np.array([1.0, 0.0, 0.0], np.float32), (3, 1))
    buffer.add(
        np.zeros((3, 3), np.float32),
        np.zeros((3, 1), np.float32),
        np.ones(3, np.float32),
        next_obs,
        np.array([True, False, False]),
        np.array([False, True, False]),
    )
    return buffer.sample(3, type("Arange", (), {"integers": lambda self, low, high, size: np.arange(size)})())


def test_critic_target_by_hand(monkeypatch):
    agent = SAC("Pendulum-v1", seed=0, **TINY)
    # Q1'(s, a) = 3 relu(s0 + 2a) + 0.5, Q2'(s, a) = relu(s0 + 2a) + 2
    for net, scale, bias in ((agent.critic_target.q1_net, 3.0, 0.5), (agent.critic_target.q2_net, 1.0, 2.0)):
        set_linear(net[0], [[1.0, 0.0, 0.0, 2.0]], [0.0])
        set_linear(net[2], [[scale]], [bias])
    next_actions = torch.tensor([[0.5], [0.5], [-0.5]])
    next_log_pi = torch.tensor([0.3, -1.2, 0.8])
    monkeypatch.setattr(agent.actor, "sample", lambda obs, deterministic=False: (next_actions, next_log_pi))
    with torch.no_grad():
        agent.temperature.log_alpha.fill_(math.log(0.5))
    target = agent.compute_target(three_transitions(), agent.temperature())
    # a' = 0.5: Q1' = 6.5, Q2' = 4.0; a' = -0.5: Q1' = 0.5, Q2' = 2.0. alpha = 0.5, gamma = 0.99
    expected = [
        1.0,  # terminated: the reward only
        1.0 + 0.99 * (4.0 - 0.5 * -1.2),  # truncated bootstraps: min is Q2'
        1.0 + 0.99 * (0.5 - 0.5 * 0.8),
    ]  # min is Q1'
    torch.testing.assert_close(target, torch.tensor(expected))


# ------------------------------------------------------------------ alpha
@pytest.mark.parametrize("log_pi, grad", [(2.0, -1.0), (-0.5, 1.5)])
def test_alpha_grows_when_entropy_is_below_target(log_pi, grad):
    agent = SAC("Pendulum-v1", seed=0, **TINY)
    assert agent.target_entropy == -1.0 and agent.temperature().item() == 1.0  # -dim(A), init 1
    loss = agent.alpha_loss(torch.full((4,), log_pi, requires_grad=True))
    loss.backward()
    # d/dlog_alpha = -(log pi + target) = entropy - target: log pi 2 is entropy -2 < -1
    assert agent.temperature.log_alpha.grad.item() == pytest.approx(grad)
    agent.alpha_optimizer.step()
    assert (agent.temperature().item() > 1.0) == (grad < 0)


def test_fixed_ent_coef_is_not_learned():
    agent = SAC("Pendulum-v1", seed=0, ent_coef=0.2, target_entropy=-3.0, **SMALL).learn(60, progress=False)
    assert "temperature" not in agent.optimizers and agent.target_entropy == -3.0
    assert agent.temperature().item() == pytest.approx(0.2)


# ------------------------------------------------------------------ targets and checkpoints
def test_target_critic_starts_as_exact_copy_then_moves_by_tau():
    agent = SAC("Pendulum-v1", seed=0, **SMALL)
    pairs = list(zip(agent.critic_target.parameters(), agent.critic.parameters()))
    for target, source in pairs:
        assert torch.equal(target, source) and target.data_ptr() != source.data_ptr()
        assert not target.requires_grad
    for _ in range(20):
        agent.source.collect_step(agent)
    before = [t.detach().clone() for t, _ in pairs]
    agent.update(agent.buffer.sample(16, agent.rng))
    assert agent.updates == 1
    for (target, source), old in zip(pairs, before):
        torch.testing.assert_close(target, 0.995 * old + 0.005 * source.detach())


def test_checkpoint_round_trip_restores_log_alpha_and_optimizers(tmp_path):
    agent = SAC("Pendulum-v1", seed=0, **SMALL).learn(80, progress=False)
    log_alpha = agent.temperature.log_alpha.item()
    assert log_alpha != 0.0  # alpha moved from 1
    agent.save(tmp_path / "sac.pt")
    loaded = SAC.load(tmp_path / "sac.pt")
    assert loaded.temperature.log_alpha.item() == log_alpha and loaded.num_steps == 80
    for key in ("actor", "critic", "temperature"):
        saved, restored = agent.optimizers[key].state_dict(), loaded.optimizers[key].state_dict()
        assert saved["state"].keys() == restored["state"].keys() and saved["state"]
        for index, state in saved["state"].items():
            for name, value in state.items():
                torch.testing.assert_close(restored["state"][index][name], value)
    for key, net in agent.nets.items():
        for name, value in net.state_dict().items():
            assert torch.equal(loaded.nets[key].state_dict()[name], value), (key, name)


# ------------------------------------------------------------------ bad input
class UnboundedActions(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, False, False, {}


@pytest.mark.parametrize(
    "env, message", [("CartPole-v1", "continuous actions"), (UnboundedActions, "finite action bounds")]
)
def test_bad_action_spaces(env, message):
    with pytest.raises(InputError, match=message):
        SAC(env, seed=0, **TINY)


@pytest.mark.parametrize(
    "values", [{"ent_coef": 0.0}, {"ent_coef": -0.1}, {"init_ent_coef": 0.0}, {"ent_coef": "auto"}]
)
def test_bad_ent_coef(values):
    with pytest.raises(InputError, match="ent_coef"):
        SAC("Pendulum-v1", **TINY, **values)
