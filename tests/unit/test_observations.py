"""What the observation space decides (acrl.parts.observations): the frames' layout and the normaliser."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from acrl.core.errors import InputError
from acrl.parts.normalization import IdentityNormalizer, ObservationNormalizer
from acrl.parts.observations import image_layout, make_normalizer, observation_layout


def frames(*shape: int) -> gym.spaces.Box:
    return gym.spaces.Box(0, 255, shape, np.uint8)


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ((84, 84, 4), (4, 84, 84, True)),  # Gymnasium's channels-last
        ((4, 84, 84), (4, 84, 84, False)),  # acrl's Atari stack, channels-first
        ((210, 160, 3), (3, 210, 160, True)),
        ((3, 210, 160), (3, 210, 160, False)),
        ((10, 10, 4), (4, 10, 10, True)),  # MinAtar Breakout
    ],
)
def test_auto_reads_the_layout_where_the_shape_says_it(shape, expected):
    assert image_layout(frames(*shape)) == expected


@pytest.mark.parametrize("shape", [(12, 12, 16), (16, 12, 12), (10, 10, 10)])
def test_auto_refuses_an_ambiguous_shape_naming_the_setting(shape):
    with pytest.raises(InputError, match=r"channels=last .* channels=first"):
        image_layout(frames(*shape))


def test_an_explicit_or_declared_layout_decides():
    assert image_layout(frames(12, 12, 16), "last") == (16, 12, 12, True)
    assert image_layout(frames(12, 12, 16), "first") == (12, 12, 16, False)
    assert image_layout(frames(10, 10, 10), "auto", declared="last") == (10, 10, 10, True)
    with pytest.raises(InputError, match="channels must be one of auto, first, last"):
        image_layout(frames(84, 84, 4), "hwc")


def test_observation_layout_records_the_resolved_layout_and_leaves_vectors_alone():
    class Frames(gym.Env):
        metadata = {"channels": "last"}
        observation_space = frames(10, 10, 10)
        action_space = gym.spaces.Discrete(2)

    assert observation_layout(Frames(), "auto") == "last"
    assert observation_layout(gym.make("CartPole-v1"), "auto") == "auto"


def test_the_normaliser_follows_the_observations():
    vector = gym.spaces.Box(-1, 1, (3,), np.float32)
    assert isinstance(make_normalizer(vector, None), ObservationNormalizer)
    assert isinstance(make_normalizer(vector, False), IdentityNormalizer)
    identity = make_normalizer(frames(84, 84, 4), None)
    assert identity(np.zeros((2, 84, 84, 4), np.uint8)).dtype == torch.uint8  # no float copy of a frame
    with pytest.raises(InputError, match="normalize_obs does not apply to image observations"):
        make_normalizer(frames(84, 84, 4), True)
