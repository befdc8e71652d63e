"""What the observation space decides, in one place: whether observations are image frames, which axis of
a frame holds its channels, and the observation normaliser (the encoder: `acrl.parts.encoders.make_encoder`,
which asks this module; the replay buffer: `acrl.parts.buffers.make_replay_buffer`).

A vector observation is a 1-D Box; an image observation a 3-D Box of uint8 or bool frames, kept in
its own dtype from the environment to the network (`IdentityNormalizer(dtype=None)`), which scales it.
Its layout, (H, W, C) channels-last (Gymnasium's convention, MinAtar's) or (C, H, W) channels-first
(acrl's Atari stacks), is the `channels` setting: "first", "last", or "auto", which reads it from the
shape only where the shape says it: exactly one end axis is smaller than both other axes ((84, 84, 4):
last; (4, 84, 84): first). A shape such as (12, 12, 16) or (10, 10, 10) could be either, and "auto"
refuses it, naming the setting, rather than guessing. An environment may declare its layout in
`env.metadata["channels"]` ("first" or "last"; MinAtar's wrapper does), which "auto" then takes.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from acrl.core.errors import InputError
from acrl.parts.normalization import IdentityNormalizer, ObservationNormalizer

CHANNELS = ("auto", "first", "last")
"""The values of a config's `channels` field."""

IMAGE_DTYPES = (np.uint8, np.bool_)
"""The dtypes of image frames: uint8 pixels (Atari) or bool cells (MinAtar)."""

Normalizer = ObservationNormalizer | IdentityNormalizer


def is_image(space: gym.Space) -> bool:
    """Whether `space` is an observation space for a CNN encoder's path (a Box of rank other than 1),
    rather than a vector (a 1-D Box). Which image spaces an encoder takes: `make_encoder`."""
    return isinstance(space, gym.spaces.Box) and len(space.shape) != 1


def image_layout(
    space: gym.spaces.Box, channels: str = "auto", declared: str | None = None
) -> tuple[int, int, int, bool]:
    """(C, H, W, channels_last) of a 3-D image space.

    Args:
        space: the observation space, a 3-D Box.
        channels: "first" (C, H, W), "last" (H, W, C), or "auto": `declared` if the environment declares
            its layout, else the shape's one end axis that is smaller than both other axes.
        declared: the environment's own `metadata["channels"]` ("first" or "last"), or None.
    Raises:
        InputError: a `channels` not in `CHANNELS`; a shape that "auto" cannot read (both or neither end
            axis smaller than the others: (12, 12, 16), (10, 10, 10)), naming the setting.
    """
    if channels not in CHANNELS:
        raise InputError(f"channels must be one of {', '.join(CHANNELS)}, got {channels!r}.")
    a, b, c = space.shape
    if channels == "auto":
        channels = declared or ("first" if a < min(b, c) else "last" if c < min(a, b) else "")
        if not channels:
            raise InputError(
                f"observations of shape {space.shape} do not say which axis holds the channels: set channels=last "
                f"for (H, W, C) frames or channels=first for (C, H, W) (--set channels=last)."
            )
    return (c, a, b, True) if channels == "last" else (a, b, c, False)


def observation_layout(env: gym.Env, channels: str) -> str:
    """The `channels` an agent records for `env`'s observations: "auto" resolved to "first" or "last" for
    image frames (`image_layout`, with the env's `metadata["channels"]`), the setting unchanged for vectors.

    Raises:
        InputError: see `image_layout`.
    """
    space = env.observation_space
    if not is_image(space) or len(space.shape) != 3:
        return channels
    return "last" if image_layout(space, channels, env.metadata.get("channels"))[3] else "first"


def default_normalize_obs(space: gym.Space) -> bool:
    """What a config's `normalize_obs=None` means for `space`: on for vectors, off for frames (the network
    scales them)."""
    return not is_image(space)


def make_normalizer(space: gym.Space, normalize_obs: bool | None, obs_clip: float = 10.0) -> Normalizer:
    """The observation normaliser for `space`: a running `ObservationNormalizer` for vectors when
    normalize_obs (None: `default_normalize_obs`), an `IdentityNormalizer` otherwise (float32 for vectors;
    for frames their own dtype, uint8 or bool, never a float copy).

    Args:
        space: the single observation space; normalize_obs: the config's setting (None: from the space);
        obs_clip: the normalised observation's bound (docs/correctness.md item 5).
    Raises:
        InputError: normalize_obs True for image frames, which the network scales to [0, 1].
    """
    images = is_image(space)
    if normalize_obs is None:
        normalize_obs = default_normalize_obs(space)
    if images and normalize_obs:
        raise InputError(
            f"normalize_obs does not apply to image observations ({space}): frames are scaled to [0, 1] inside "
            "the network. Leave normalize_obs unset (it follows the observations) or set it to false."
        )
    if images:
        return IdentityNormalizer(dtype=None)
    return ObservationNormalizer(int(space.shape[0]), obs_clip) if normalize_obs else IdentityNormalizer()
