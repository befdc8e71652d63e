"""VAE-BC: acting through the decoder with BCQ's clamped latent, the loss by hand, BCQ's spectrum end
(one sampled action, no perturbation) taking the same actions, a known policy recovered, and the CLI."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

import acrl
from acrl import BCQ, VAEBC
from acrl.cli import main
from acrl.parts.datasets import collect_transitions, save_dataset
from tests.conftest import set_linear, write_dataset


def known_policy(obs: np.ndarray) -> np.ndarray:
    """Pendulum torque in [-2, 2] from the angular velocity: what VAE-BC should recover."""
    return np.array([2.0 * np.tanh(obs[2] / 4.0)], dtype=np.float32)


@pytest.fixture(scope="module")
def pendulum_data(tmp_path_factory):
    path = tmp_path_factory.mktemp("vae_bc") / "pendulum.h5"
    env = gym.make("Pendulum-v1")
    save_dataset(path, collect_transitions(env, known_policy, 2000, seed=0, kind="imitation"))
    return path


def test_acting_decodes_a_latent_drawn_from_n01_and_clamped_to_half(pendulum_data):
    """Decoder wired to output z_0 (hidden ReLUs relu(z_0) and relu(-z_0), output their difference): the
    env action is 2 tanh(z_0) on Pendulum's [-2, 2]; with z_0 ~ N(0, 1) clamped to [-0.5, 0.5], every
    action lies within +-2 tanh(0.5) = +-0.924234, and a fraction P(|z| > 0.5) = 2 (1 - Phi(0.5)) = 0.617
    sits exactly on those bounds."""
    agent = VAEBC(dataset=str(pendulum_data), hidden_sizes=(2,), seed=0)
    decoder = agent.vae.decoder  # [s (3), z (2)] -> 2 ReLUs -> 1
    set_linear(decoder[0], [[0, 0, 0, 1, 0], [0, 0, 0, -1, 0]], [0, 0])
    set_linear(decoder[2], [[1, -1]], [0])
    torch.manual_seed(0)
    actions = agent.predict(np.zeros((4000, 3), np.float32))[:, 0]
    bound = 2 * math.tanh(0.5)
    assert actions.max() == pytest.approx(bound, rel=1e-6) and actions.min() == pytest.approx(-bound, rel=1e-6)
    on_bounds = np.isclose(np.abs(actions), bound, rtol=1e-6).mean()
    assert on_bounds == pytest.approx(2 * (1 - 0.5 * (1 + math.erf(0.5 / math.sqrt(2)))), abs=0.03)


def test_the_loss_is_reconstruction_plus_weighted_kl_by_hand(pendulum_data):
    """Encoder all zeros: mean 0 and log-std 0, so KL(N(0, 1) || N(0, 1)) = 0; decoder all zeros: the
    reconstruction is tanh(0) = 0, so the loss is the mean squared action, (0.5^2 + 1^2) / 2 = 0.625."""
    agent = VAEBC(dataset=str(pendulum_data), hidden_sizes=(4,), kl_weight=0.5, seed=0)
    with torch.no_grad():
        for param in agent.vae.parameters():
            param.zero_()
    batch = {"observations": torch.zeros(2, 3), "actions": torch.tensor([[0.5], [-1.0]])}
    metrics = agent.update(batch)
    assert metrics["train/vae_loss"] == pytest.approx(0.625)
    assert metrics["train/recon_loss"] == pytest.approx(0.625) and metrics["train/kl"] == pytest.approx(0.0)


def test_bcq_with_one_sampled_action_and_no_perturbation_acts_as_vae_bc(tmp_path):
    """The end of BCQ's spectrum (n = 1, phi = 0) is VAE-BC: the same VAE and the same random numbers
    give the same actions; BCQ's defaults (n = 10, phi = 0.05) do not."""
    data = tmp_path / "random.h5"
    write_dataset(data, n=40)
    vae_bc = VAEBC(dataset=str(data), hidden_sizes=(8,), seed=0)
    small = {"vae_hidden_sizes": (8,), "actor_hidden_sizes": (8,), "critic_hidden_sizes": (8,), "seed": 1}
    spectrum_end = BCQ(dataset=str(data), n_select_samples=1, phi=0.0, **small)
    default = BCQ(dataset=str(data), **small)
    for bcq in (spectrum_end, default):
        bcq.vae.load_state_dict(vae_bc.vae.state_dict())
    obs = np.random.default_rng(0).normal(size=(16, 3)).astype(np.float32)
    actions = {}
    for name, agent in (("vae_bc", vae_bc), ("spectrum_end", spectrum_end), ("default", default)):
        torch.manual_seed(7)
        actions[name] = agent.predict(obs)
    np.testing.assert_array_equal(actions["spectrum_end"], actions["vae_bc"])
    assert not np.allclose(actions["default"], actions["vae_bc"])


def test_vae_bc_recovers_the_policy_that_labelled_the_data(pendulum_data):
    agent = VAEBC(dataset=str(pendulum_data), hidden_sizes=(64, 64), seed=0, eval_freq=0, iteration_steps=500)
    agent.learn(total_steps=3000, progress=False)
    states = np.stack([np.cos(t := np.linspace(-np.pi, np.pi, 50)), np.sin(t), np.linspace(-6, 6, 50)], axis=1)
    torch.manual_seed(0)
    predicted = agent.predict(states.astype(np.float32))
    expected = np.stack([known_policy(s) for s in states])
    assert np.sqrt(np.mean((predicted - expected) ** 2)) < 0.1  # torque units, out of a range of 4 (measured: 0.017)


def test_the_cli_trains_vae_bc_and_refuses_a_discrete_dataset(pendulum_data, tmp_path, capsys):
    run = tmp_path / "vae_bc"
    argv = ["train", "vae_bc", "--dataset", str(pendulum_data), "--total-steps", "200", "--run-dir", str(run)]
    assert main([*argv, "--set", "eval_freq=100", "eval_episodes=1", "hidden_sizes=[16]", "--no-progress"]) == 0
    agent = acrl.load(run / "checkpoints" / "best.pt")
    assert isinstance(agent, VAEBC) and agent.num_steps in (100, 200) and agent.config.hidden_sizes == (16,)
    cartpole = tmp_path / "cartpole.h5"
    save_dataset(cartpole, collect_transitions(gym.make("CartPole-v1"), lambda obs: 0, 50, seed=0))
    assert main(["train", "vae_bc", "--dataset", str(cartpole), "--run-dir", str(tmp_path / "x")]) == 2
    assert "for a Discrete action space use discrete_bcq" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
