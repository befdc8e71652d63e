"""Encoders from the observation space: the papers' CNN sizes, uint8/bool scaling in the network, bad spaces."""

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from acrl.core.errors import InputError
from acrl.parts import encoders
from acrl.parts.encoders import CNNEncoder, make_encoder
from acrl.parts.heads import head_on


def frames(shape, dtype=np.uint8):
    high = 1 if dtype == np.bool_ else 255
    return gym.spaces.Box(0, high, shape, dtype)


def n_params(module):
    return sum(p.numel() for p in module.parameters())


# Parameter counts from the papers' layer sizes, (in * out * k * k + out) per convolution, (in * out + out)
# for the fully connected layer:
# nature, 84x84x4: sides 84 -> 20 -> 9 -> 7; 4*32*64+32 + 32*64*16+64 + 64*64*9+64 + 3136*512+512 = 1_684_128.
# a3c, 4x84x84: sides 84 -> 20 -> 9; 4*16*64+16 + 16*32*16+32 + 2592*256+256 = 676_144.
# minatar, 10x10x4: side 10 -> 8; 4*16*9+16 + 1024*128+128 = 131_792; Seaquest's 10 channels: 10*16*9+16 + 131_200.
@pytest.mark.parametrize(
    "shape, dtype, name, channels, chosen, features, params",
    [
        ((84, 84, 4), np.uint8, "auto", "auto", "nature", 512, 1_684_128),
        ((4, 84, 84), np.uint8, "a3c", "auto", "a3c", 256, 676_144),
        ((10, 10, 4), np.bool_, "auto", "auto", "minatar", 128, 131_792),
        ((10, 10, 10), np.bool_, "auto", "last", "minatar", 128, 1456 + 131_200),  # a cube: the layout is set
    ],
)
def test_cnn_sizes_are_the_papers(shape, dtype, name, channels, chosen, features, params):
    encoder, features_dim, used = make_encoder(frames(shape, dtype), name, (64, 64), "tanh", channels)
    assert (used, features_dim, n_params(encoder)) == (chosen, features, params)
    torch_dtype = torch.bool if dtype is np.bool_ else torch.uint8
    out = encoder(torch.zeros((5, *shape), dtype=torch_dtype))
    assert out.shape == (5, features) and out.dtype == torch.float32
    # CleanRL's initialisation: orthogonal with gain sqrt(2), so W W^T = 2 I for the first conv's rows.
    first = encoder.net[0].weight.reshape(encoder.net[0].weight.shape[0], -1)
    torch.testing.assert_close(first @ first.T, 2 * torch.eye(len(first)), atol=1e-4, rtol=0)
    # A policy head on it: 0.01-gain output layer, acting through module calls (no layer chain).
    head = head_on(encoder, features_dim, True, 3)
    assert head._chain is None
    assert head.sample(torch.zeros((2, *shape), dtype=torch_dtype))[0].shape == (2,)


def test_vector_observations_keep_the_mlp():
    encoder, features_dim, used = make_encoder(gym.spaces.Box(-1, 1, (4,)), "auto", (64, 64), "tanh")
    assert (used, features_dim, n_params(encoder)) == ("mlp", 64, 4 * 64 + 64 + 64 * 64 + 64)
    assert head_on(encoder, features_dim, True, 2)._chain is not None


def reference(encoder: CNNEncoder, frames_nchw: torch.Tensor) -> torch.Tensor:
    """The features by the textbook order: float (N, C, H, W) frames already scaled, then the layers as modules."""
    return encoder.net(frames_nchw)


def test_uint8_frames_are_scaled_by_1_over_255_and_transposed_inside_the_network():
    encoder, _, _ = make_encoder(frames((12, 12, 3)), "auto", (), "tanh")
    obs = torch.randint(0, 256, (2, 12, 12, 3), dtype=torch.uint8)
    obs[0, 2, 5, 1] = 255  # row 2, column 5, channel 1
    expected = reference(encoder, obs.permute(0, 3, 1, 2).float() / 255.0)
    torch.testing.assert_close(encoder(obs), expected, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(encoder(obs), reference(encoder, obs.permute(0, 3, 1, 2).float()))


def test_under_bf16_autocast_the_frames_reach_the_first_convolution_as_bfloat16_and_lose_nothing(monkeypatch):
    encoder, _, _ = make_encoder(frames((4, 84, 84)), "a3c", (), "tanh")  # Atari's channels-first frames
    obs = torch.randint(0, 256, (3, 4, 84, 84), dtype=torch.uint8)
    obs[0, 0, :2, :2] = torch.tensor([[0, 255], [254, 1]], dtype=torch.uint8)
    first = encoder.net[0]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        # float32 frames that autocast casts for the convolution: 0..255 are exact in bfloat16 as in float32
        x = F.conv2d(
            obs.float().contiguous(memory_format=torch.channels_last), first.weight * (1.0 / 255.0), first.bias, 4
        )
        for layer in list(encoder.net)[1:]:
            x = layer(x)
        seen = []
        conv2d = F.conv2d
        monkeypatch.setattr(
            encoders.F,
            "conv2d",
            lambda x, *args: (
                seen.append((x.dtype, x.is_contiguous(memory_format=torch.channels_last))) or conv2d(x, *args)
            ),
        )
        features = encoder(obs)
    assert seen[0] == (torch.bfloat16, True)  # the first convolution's input (the others follow it)
    assert torch.equal(features, x)


def test_bool_frames_are_cast_without_scaling_and_channels_first_stay():
    encoder, _, _ = make_encoder(frames((2, 8, 8), np.bool_), "minatar", (), "tanh")
    obs = torch.zeros((1, 2, 8, 8), dtype=torch.bool)
    obs[0, 1, 3, 4] = True
    expected = reference(encoder, obs.float())
    torch.testing.assert_close(encoder(obs), expected, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(encoder(obs), reference(encoder, obs.transpose(2, 3).float()))


@pytest.mark.parametrize(
    "space, words",
    [
        (frames((3, 3, 1)), ["minatar' needs frames of at least 4x4", "3x3"]),
        (frames((2, 10, 10, 4, 1)), ["no encoder takes", "(2, 10, 10, 4, 1)"]),
        (gym.spaces.Box(0.0, 255.0, (84, 84, 3), np.float64), ["no encoder takes", "float64"]),
        (frames((6, 6)), ["no encoder takes", "(6, 6)"]),
    ],
)
def test_an_image_space_no_encoder_takes_names_the_encoders_and_what_they_take(space, words):
    with pytest.raises(InputError) as error:
        make_encoder(space, "auto", (64,), "tanh")
    message = str(error.value)
    for word in [*words, "mlp", "nature", "a3c", "minatar", "uint8 or bool", "nature >= 36x36", "minatar >= 4x4"]:
        assert word in message, message


def test_an_encoder_for_the_other_kind_of_observation_is_refused():
    with pytest.raises(InputError, match="encoder 'nature' takes image frames"):
        make_encoder(gym.spaces.Box(-1, 1, (4,)), "nature", (64,), "tanh")
    with pytest.raises(InputError, match="encoder 'mlp' takes 1-D vectors"):
        make_encoder(frames((10, 10, 4)), "mlp", (64,), "tanh")
    with pytest.raises(InputError, match="encoder 'nature' needs frames of at least 36x36"):
        make_encoder(frames((10, 10, 4)), "nature", (64,), "tanh")
