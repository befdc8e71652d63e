"""BCQ pieces with values worked out by hand: the critic target (repeat_interleave order, soft
clipped double Q, maximum over samples, terminals), the VAE's clamps, module shapes, target
networks and data loading (docs/correctness.md items 1, 8, 9, 10)."""

import math

import numpy as np
import pytest
import torch

from acrl import BCQ
from acrl.algos.bcq import (
    BCQConfig,
    PerturbationActor,
    continuous_target,
    select_continuous,
    soft_clipped_double_q,
)
from acrl.core import torch_fast
from acrl.core.errors import InputError
from acrl.parts.buffers import ReplayBuffer
from acrl.parts.nets import TwinQ
from acrl.parts.vae import LATENT_CLIP, LOG_STD_MAX, LOG_STD_MIN, VAE
from tests.conftest import BCQ_SMALL as SMALL
from tests.conftest import set_linear, write_dataset


def tiny_nets():
    """obs_dim = act_dim = 1, latent_dim = 2, one hidden unit everywhere, weights fixed so that

    decoder:   G(s, z) = tanh(relu(z0 + 1) - 1) = tanh(z0)          (for z0 > -1)
    actor:     xi(s, a) = clip(a + 0.05 * tanh(atanh(0.6)), -1, 1) = a + 0.03
    critics:   Q1(s, a) = relu(s + a + 10) - 10 = s + a,  Q2(s, a) = s - 2 a
    """
    vae = VAE(1, 1, 2, hidden_sizes=(1,))
    set_linear(vae.decoder[0], [[0.0, 1.0, 0.0]], [1.0])
    set_linear(vae.decoder[2], [[1.0]], [-1.0])
    actor = PerturbationActor(1, 1, hidden_sizes=(1,), phi=0.05)
    set_linear(actor.net[0], [[0.0, 0.0]], [0.0])
    set_linear(actor.net[2], [[0.0]], [math.atanh(0.6)])
    critic = TwinQ(1, 1, hidden_sizes=(1,))
    set_linear(critic.q1_net[0], [[1.0, 1.0]], [10.0])
    set_linear(critic.q1_net[2], [[1.0]], [-10.0])
    set_linear(critic.q2_net[0], [[1.0, -2.0]], [10.0])
    set_linear(critic.q2_net[2], [[1.0]], [-10.0])
    return vae, actor, critic


def test_continuous_target_by_hand():
    vae, actor, critic = tiny_nets()
    next_obs = torch.tensor([[1.0], [2.0]])
    # Latents in repeat_interleave order: rows 0-2 belong to s'_0 = 1, rows 3-5 to s'_1 = 2.
    z0 = [0.5, 0.0, -0.5, 0.3, -0.2, 0.1]
    latent = torch.tensor([[z, 0.0] for z in z0])
    rewards, not_done = torch.tensor([0.5, -1.0]), torch.tensor([1.0, 0.0])

    def mixed(s, z):  # 0.75 * min(Q1, Q2) + 0.25 * max(Q1, Q2) at a = tanh(z) + 0.03
        a = math.tanh(z) + 0.03
        q1, q2 = s + a, s - 2 * a
        return 0.75 * min(q1, q2) + 0.25 * max(q1, q2)

    best0 = max(mixed(1.0, z) for z in z0[:3])
    assert best0 == pytest.approx(1.0 - 1.25 * 0.03)  # the z = 0 sample wins for s'_0
    y = continuous_target(
        next_obs, rewards, not_done, vae, actor, critic, gamma=0.99, lmbda=0.75, n_samples=3, latent=latent
    )
    # The second transition is terminal: its target is its reward, nothing bootstrapped.
    torch.testing.assert_close(y, torch.tensor([0.5 + 0.99 * best0, -1.0]))

    # A timeout (not_done = 1) bootstraps: s'_1's best sample is z = -0.2 (a < 0: s + 0.25 a).
    best1 = max(mixed(2.0, z) for z in z0[3:])
    assert best1 == pytest.approx(2.0 + 0.25 * (math.tanh(-0.2) + 0.03))
    y = continuous_target(next_obs, rewards, torch.ones(2), vae, actor, critic, 0.99, 0.75, 3, latent=latent)
    torch.testing.assert_close(y, torch.tensor([0.5 + 0.99 * best0, -1.0 + 0.99 * best1]))

    # `repeat` instead of `repeat_interleave` would pair s'_0 with rows 0, 2, 4: other values.
    wrong0 = max(mixed(1.0, z0[i]) for i in (0, 2, 4))
    wrong1 = max(mixed(2.0, z0[i]) for i in (1, 3, 5))
    assert abs(wrong0 - best0) > 1e-3 and abs(wrong1 - best1) > 1e-3


def test_soft_clipped_double_q_weights_min_and_max():
    q = soft_clipped_double_q(torch.tensor([1.0, 4.0]), torch.tensor([3.0, 2.0]), 0.75)
    torch.testing.assert_close(q, torch.tensor([0.75 * 1 + 0.25 * 3, 0.75 * 2 + 0.25 * 4]))
    torch.testing.assert_close(
        soft_clipped_double_q(torch.tensor([1.0]), torch.tensor([3.0]), 1.0), torch.tensor([1.0])
    )  # lmbda = 1: clipped double Q (TD3)


def test_select_continuous_takes_argmax_of_q1_per_state():
    vae, actor, critic = tiny_nets()
    # Q1 = s + a grows with a: the best candidate is the largest perturbed sample of each state.
    torch.manual_seed(0)
    obs = torch.tensor([[1.0], [-3.0]])
    actions = select_continuous(obs, vae, actor, critic, n_samples=50)
    assert actions.shape == (2, 1)
    # 50 clamped latents: with near certainty one is at the clamp +0.5, so a = tanh(0.5) + 0.03.
    torch.testing.assert_close(actions, torch.full((2, 1), math.tanh(0.5) + 0.03))


def test_vae_decode_clamps_the_latent():
    vae = VAE(3, 2, 4, hidden_sizes=(16,))
    z = vae.sample_latent(20_000)
    assert z.shape == (20_000, 4)
    assert z.min() == -LATENT_CLIP and z.max() == LATENT_CLIP
    # P(|N(0, 1)| > 0.5) = 0.617: that share of the entries sits exactly on the bounds.
    assert (z.abs() == LATENT_CLIP).float().mean().item() == pytest.approx(0.617, abs=0.01)
    obs = torch.randn(7, 3)
    torch.manual_seed(1)
    sampled = vae.decode(obs)
    torch.manual_seed(1)
    explicit = vae.decode(obs, torch.randn(7, 4).clamp(-0.5, 0.5))
    torch.testing.assert_close(sampled, explicit)
    unclamped = vae.decode(obs, torch.full((7, 4), 3.0))
    assert not torch.allclose(unclamped, vae.decode(obs, torch.full((7, 4), 0.5)))


def test_vae_log_std_is_clamped_and_loss_by_hand():
    vae = VAE(1, 1, 1, hidden_sizes=(1,))
    obs, actions = torch.zeros(2, 1), torch.zeros(2, 1)
    for bias, expected in ((100.0, LOG_STD_MAX), (-100.0, LOG_STD_MIN)):
        set_linear(vae.encoder[2], [[0.0], [0.0]], [0.0, bias])  # outputs (mean, log_std)
        mean, log_std = vae.encode(obs, actions)
        torch.testing.assert_close(log_std, torch.full((2, 1), expected))
        torch.testing.assert_close(mean, torch.zeros(2, 1))
    # KL(N(mu, sigma) || N(0, 1)) = 0.5 * (mu^2 + sigma^2 - 1) - log sigma; at mu = 1, log sigma = 0: 0.5.
    total, recon_loss, kl = VAE.loss(
        torch.tensor([[1.0], [0.0]]), torch.tensor([[0.0], [0.0]]), torch.ones(2, 1), torch.zeros(2, 1), kl_weight=0.5
    )
    assert recon_loss.item() == pytest.approx(0.5)
    assert kl.item() == pytest.approx(0.5)
    assert total.item() == pytest.approx(0.5 + 0.5 * 0.5)


@pytest.mark.parametrize("batch", [1, 100])
def test_module_shapes(batch):
    obs_dim, act_dim, latent_dim = 5, 3, 6
    obs, actions = torch.randn(batch, obs_dim), torch.rand(batch, act_dim) * 2 - 1
    vae = VAE(obs_dim, act_dim, latent_dim, hidden_sizes=(32, 32))
    recon, mean, log_std = vae(obs, actions)
    assert recon.shape == (batch, act_dim) and recon.abs().max() <= 1
    assert mean.shape == log_std.shape == (batch, latent_dim)
    assert vae.decode(obs).shape == (batch, act_dim)
    actor = PerturbationActor(obs_dim, act_dim, (32, 32), phi=0.05)
    perturbed = actor(obs, actions)
    assert perturbed.shape == (batch, act_dim)
    assert (perturbed - actions).abs().max() <= 0.05 + 1e-6 and perturbed.abs().max() <= 1
    critic = TwinQ(obs_dim, act_dim, (32, 32))
    q1, q2 = critic(obs, actions)
    assert q1.shape == q2.shape == critic.q1(obs, actions).shape == (batch,)
    assert select_continuous(obs, vae, actor, critic, 10).shape == (batch, act_dim)
    y = continuous_target(obs, torch.zeros(batch), torch.ones(batch), vae, actor, critic, 0.99, 0.75, 10)
    assert y.shape == (batch,)


# ------------------------------------------------------------------------------- the agent


class ArangeRng:
    def integers(self, low, high, size):
        return np.arange(size)


def test_dataset_loads_in_policy_units_with_terminals_apart(tmp_path):
    data = write_dataset(tmp_path / "d.h5")
    agent = BCQ(dataset=str(tmp_path / "d.h5"), **SMALL)
    assert agent.config.env_id == "Pendulum-v1"
    batch = agent.load_data().sample(4, ArangeRng())
    torch.testing.assert_close(batch["actions"], torch.from_numpy(data.actions[:4] / 2.0))  # Box [-2, 2]
    # Row 1 is terminal (no bootstrap), row 2 a timeout (bootstraps).
    torch.testing.assert_close(batch["not_done"], torch.tensor([1.0, 0.0, 1.0, 1.0]))
    raw = agent.predict(np.zeros((3, 3), np.float32))
    assert raw.shape == (3, 1) and np.all(np.abs(raw) <= 2.0)


def test_targets_start_as_copies_and_move_by_tau(tmp_path):
    write_dataset(tmp_path / "d.h5")
    agent = BCQ(dataset=str(tmp_path / "d.h5"), seed=0, tau=0.1, **SMALL)
    for target, source in ((agent.critic_target, agent.critic), (agent.actor_target, agent.actor)):
        for t, s in zip(target.parameters(), source.parameters(), strict=True):
            assert torch.equal(t, s) and not t.requires_grad
    before = [p.clone() for p in agent.critic_target.parameters()]
    agent.update(agent.load_data().sample(4, agent.rng))
    for old, t, s in zip(before, agent.critic_target.parameters(), agent.critic.parameters(), strict=True):
        torch.testing.assert_close(t, 0.9 * old + 0.1 * s)


def test_actor_loss_uses_q1_only(tmp_path):
    write_dataset(tmp_path / "d.h5")
    agent = BCQ(dataset=str(tmp_path / "d.h5"), seed=0, **SMALL)
    batch = agent.load_data().sample(4, agent.rng)
    with torch.no_grad():
        for p in agent.critic.q2_net.parameters():
            p.fill_(float("nan"))
        for p in agent.critic.q1_net.parameters():  # Q1 = 0 everywhere: no actor gradient
            p.zero_()
    actor_before = [p.clone() for p in agent.actor.parameters()]
    critic_q1 = [p.clone() for p in agent.critic.q1_net.parameters()]
    torch.manual_seed(0)
    agent.critic_optimizer.step = lambda: None  # keep the critic as set; exercise the actor step
    metrics = agent.update(batch)
    assert math.isfinite(metrics["train/policy_loss"]) and metrics["train/policy_loss"] == 0.0
    for before, after in zip(actor_before, agent.actor.parameters(), strict=True):
        assert torch.isfinite(after).all()
        torch.testing.assert_close(after, before)  # zero gradient: Adam leaves it unchanged
    for before, after in zip(critic_q1, agent.critic.q1_net.parameters(), strict=True):
        assert torch.equal(before, after)


def test_same_seed_same_updates(tmp_path):
    write_dataset(tmp_path / "d.h5")
    runs = []
    for _ in range(2):
        agent = BCQ(dataset=str(tmp_path / "d.h5"), seed=3, **SMALL)
        agent.learn(10, progress=False)
        runs.append([p.detach().clone() for p in agent.critic.parameters()])
    for a, b in zip(*runs, strict=True):
        assert torch.equal(a, b)


def test_buffer_instead_of_dataset_and_bad_configs():
    buffer = ReplayBuffer(10, 3, (1,))
    buffer.add(
        np.zeros((10, 3), np.float32),
        np.zeros((10, 1), np.float32),
        np.zeros(10, np.float32),
        np.zeros((10, 3), np.float32),
        np.zeros(10, bool),
        np.zeros(10, bool),
    )
    agent = BCQ("Pendulum-v1", buffer=buffer, **SMALL)
    assert agent.load_data() is buffer
    agent.learn(5, progress=False)
    with pytest.raises(InputError, match="--dataset FILE"):
        BCQ("Pendulum-v1", **SMALL)
    with pytest.raises(
        InputError, match=r"observations of shape \(3,\) and actions of shape \(1,\); this environment needs \(2,\)"
    ):
        BCQ("MountainCarContinuous-v0", buffer=buffer)
    with pytest.raises(InputError, match="lmbda"):
        BCQConfig(lmbda=1.5).validate()


def test_inplace_relu_changes_no_value_or_gradient(tmp_path):
    write_dataset(tmp_path / "d.h5")
    params = []
    for inplace in (True, False):
        agent = BCQ(dataset=str(tmp_path / "d.h5"), seed=5, **SMALL)
        relus = [m for net in agent.nets.values() for m in net.modules() if isinstance(m, torch.nn.ReLU)]
        assert relus and all(m.inplace for m in relus)
        for m in relus:
            m.inplace = inplace
        batch = agent.load_data().sample(4, ArangeRng())
        torch.manual_seed(0)
        agent.update(batch)
        params.append([p.detach().clone() for net in agent.nets.values() for p in net.parameters()])
    for a, b in zip(*params, strict=True):
        assert torch.equal(a, b)


def test_evaluation_repeats_and_leaves_the_training_random_stream_alone(tmp_path):
    """BCQ samples its candidate actions inside predict: evaluation seeds torch from its own seed on a
    forked state, so two evaluations agree and torch's generator is where it was before."""
    write_dataset(tmp_path / "d.h5")
    agent = BCQ(dataset=str(tmp_path / "d.h5"), seed=0, eval_episodes=2, **SMALL)
    before = torch.get_rng_state()
    first, second = agent.evaluate(), agent.evaluate()
    assert first["returns"] == second["returns"]
    assert torch.equal(torch.get_rng_state(), before)


@pytest.mark.skipif(
    not (torch_fast.ONEDNN_AVAILABLE and torch_fast.private_apis_enabled()),
    reason="this torch has no oneDNN, or ACRL_PRIVATE_APIS=0: both runs would be torch's own",
)
def test_onednn_products_leave_the_update_unchanged():
    """At the paper's sizes (where the products run on oneDNN) a fixed-seed run's losses are torch's own
    within float32 round-off (benchmarks/update_roofline.py measures the speed)."""
    rng = np.random.default_rng(0)
    buffer = ReplayBuffer(1000, 11, (3,))
    buffer.add(
        rng.normal(size=(1000, 11)),
        rng.uniform(-1, 1, (1000, 3)),
        rng.normal(size=1000),
        rng.normal(size=(1000, 11)),
        rng.random(1000) < 0.05,
        np.zeros(1000, bool),
    )
    losses = {}
    try:
        for onednn in (True, False):
            torch_fast.set_private_apis(onednn)
            agent = BCQ("Hopper-v5", buffer=buffer, seed=0, eval_freq=0)  # 750-750 VAE, 400-300 nets, batch 100
            torch.manual_seed(0)
            losses[onednn] = [agent.update(buffer.sample(100, ArangeRng())) for _ in range(3)]
    finally:
        torch_fast.set_private_apis(True)
    for with_onednn, without in zip(losses[True], losses[False], strict=True):
        assert with_onednn.keys() == without.keys()
        for key in with_onednn:
            assert with_onednn[key] == pytest.approx(without[key], rel=1e-4, abs=1e-6), key
