"""The networks BCQ builds: the VAE's default latent size (twice the action dimension) and
discrete BCQ's target network, an exact copy that moves by tau (docs/correctness.md items 8, 9)."""

import numpy as np
import pytest
import torch

from acrl import BCQ, DiscreteBCQ
from acrl.parts.buffers import ReplayBuffer
from tests.conftest import BCQ_SMALL, write_dataset


@pytest.mark.parametrize("env_id, obs_dim, act_dim", [("Pendulum-v1", 3, 1), ("Hopper-v5", 11, 3)])
def test_bcq_latent_size_defaults_to_twice_the_action_dimension(env_id, obs_dim, act_dim):
    if env_id.startswith("Hopper"):
        pytest.importorskip("mujoco")
    buffer = ReplayBuffer(8, obs_dim, (act_dim,))
    buffer.add(
        np.zeros((8, obs_dim), np.float32),
        np.zeros((8, act_dim), np.float32),
        np.zeros(8, np.float32),
        np.zeros((8, obs_dim), np.float32),
        np.zeros(8, bool),
        np.zeros(8, bool),
    )
    agent = BCQ(env_id, buffer=buffer, seed=0, **BCQ_SMALL)
    assert agent.config.latent_dim is None
    latent = 2 * act_dim  # Hopper: 3 actions -> latent 6
    assert agent.vae.latent_dim == latent
    assert agent.vae.encoder[-1].out_features == 2 * latent  # mean and log-std: 12 for Hopper
    assert agent.vae.decoder[0].in_features == obs_dim + latent
    assert agent.vae.sample_latent(5).shape == (5, latent)
    agent.update(buffer.sample(4, agent.rng))  # the networks fit together at that size
    # An explicit latent size is kept.
    assert BCQ(env_id, buffer=buffer, seed=0, latent_dim=5, **BCQ_SMALL).vae.latent_dim == 5


def test_discrete_bcq_target_starts_as_exact_copy_and_moves_by_tau(tmp_path):
    write_dataset(tmp_path / "d.h5", "CartPole-v1")
    agent = DiscreteBCQ(
        dataset=str(tmp_path / "d.h5"), seed=0, tau=0.1, hidden_sizes=(8,), batch_size=4, eval_freq=0, iteration_steps=5
    )
    pairs = list(zip(agent.net_target.parameters(), agent.net.parameters(), strict=True))
    for target, online in pairs:
        assert torch.equal(target, online)  # an exact copy ...
        assert target.data_ptr() != online.data_ptr()  # ... in tensors of its own
        assert not target.requires_grad
    old_target = [t.detach().clone() for t, _ in pairs]
    old_online = [s.detach().clone() for _, s in pairs]
    agent.update(agent.load_data().sample(4, agent.rng))
    moved = False
    for old_t, old_s, (target, online) in zip(old_target, old_online, pairs, strict=True):
        torch.testing.assert_close(target, 0.9 * old_t + 0.1 * online)  # (1 - tau) old + tau online
        moved |= not torch.equal(online, old_s)
    assert moved  # the online net did change, so the check above is not vacuous
