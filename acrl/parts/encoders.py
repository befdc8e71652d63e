"""Encoders chosen from the observation space: an MLP for vectors, a CNN for image frames.

A vector observation (a 1-D Box, (obs_dim,)) gets the MLP trunk of `acrl.parts.nets.mlp_encoder`.
An image observation, a 3-D Box of dtype uint8 or bool, gets one of three CNNs, each
convolutions with ReLUs, then one fully connected layer with a ReLU (the features):

- `nature`: Mnih et al. 2015 ("Human-level control through deep reinforcement learning",
  Methods): 32 8x8 stride 4, 64 4x4 stride 2, 64 3x3 stride 1, 512 units. For 84x84 Atari frames.
- `a3c`: Mnih et al. 2016 ("Asynchronous Methods for Deep RL", Sec. 8), after Mnih et al. 2013:
  16 8x8 stride 4, 32 4x4 stride 2, 256 units.
- `minatar`: Young and Tian 2019 ("MinAtar", Sec. 4): 16 3x3 stride 1, 128 units. For 10x10 grids.

`encoder="auto"` picks `mlp` for vectors, `nature` for images whose sides are both at least 36
(the smallest that the Nature CNN's three convolutions reduce to 1x1) and `minatar` for
smaller ones. The initialisation is CleanRL's ppo_atari (Huang et al. 2022): orthogonal weights
of gain sqrt(2), zero biases.

Frames reach the network as the environment gives them, uint8 or bool, in their own layout: a
channels-last (H, W, C) space (Gymnasium's convention, MinAtar's and Atari's) or channels-first
(C, H, W). The encoder makes them (B, C, H, W) in channels-last memory, in float32 or, under
autocast, in the lower precision the convolutions compute in (dtype first, then layout); and it
scales them in its first operation, the first convolution, whose weights it multiplies by 1 / 255
for uint8 (bool frames are cast to 0.0 / 1.0). The transposition is done here, not by an observation
wrapper, so that every path that feeds a policy (rollouts, `predict`, evaluation, videos, dataset
collection) gives it the raw observation.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from acrl.core.errors import InputError
from acrl.parts.nets import mlp_encoder
from acrl.parts.observations import IMAGE_DTYPES, image_layout, is_image


@dataclass(frozen=True)
class CNNSpec:
    """One CNN: its convolutions (out channels, kernel, stride) each, its features' width and the
    smallest frame side it takes."""

    convs: tuple[tuple[int, int, int], ...]
    features_dim: int
    min_side: int

    def output_side(self, side: int) -> int:
        """The side of the last convolution's output for an input side `side` >= `min_side` (no padding):
        floor((side - kernel) / stride) + 1, convolution after convolution."""
        for _, kernel, stride in self.convs:
            side = (side - kernel) // stride + 1
        return side


CNNS: dict[str, CNNSpec] = {
    "nature": CNNSpec(((32, 8, 4), (64, 4, 2), (64, 3, 1)), 512, 36),
    "a3c": CNNSpec(((16, 8, 4), (32, 4, 2)), 256, 20),
    "minatar": CNNSpec(((16, 3, 1),), 128, 4),
}
"""The image encoders by name (see the module docstring). The smallest sides: 36 and 20, where the
Nature and A3C convolutions leave 1x1; 4 for MinAtar's, where its 3x3 kernel sees more than one
position (a 3x3 frame is no image)."""

ENCODERS = ("auto", "mlp", *CNNS)
"""The values of a config's `encoder` field."""


class CNNEncoder(nn.Module):
    """obs (B, H, W, C) or (B, C, H, W) uint8 or bool -> features (B, features_dim) float32 (any
    leading dimensions in place of B).

    Scales the frame in the first convolution (uint8: its weights x 1/255; bool: cast to 0.0 or 1.0), then
    `spec`'s convolutions with
    ReLUs, a flatten and one fully connected layer with a ReLU. Orthogonal init, gain sqrt(2),
    zero biases (CleanRL's ppo_atari).

    Args:
        spec: the network (`CNNS`); channels, height, width: the frame's C, H, W;
        channels_last: whether observations come as (B, H, W, C); scale: 1 / 255 for uint8, 1 for bool.
    """

    def __init__(self, spec: CNNSpec, channels: int, height: int, width: int, channels_last: bool, scale: float):
        super().__init__()
        layers: list[nn.Module] = []
        in_channels = channels
        for out_channels, kernel, stride in spec.convs:
            layers += [nn.Conv2d(in_channels, out_channels, kernel, stride), nn.ReLU()]
            in_channels = out_channels
        flat = in_channels * spec.output_side(height) * spec.output_side(width)
        layers += [nn.Flatten(), nn.Linear(flat, spec.features_dim), nn.ReLU()]
        self.net = nn.Sequential(*layers)
        for layer in self.net:
            if isinstance(layer, (nn.Conv2d, nn.Linear)):
                nn.init.orthogonal_(layer.weight, math.sqrt(2))
                nn.init.zeros_(layer.bias)
        self.features_dim, self.channels_last, self.scale = spec.features_dim, channels_last, scale

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """obs (..., H, W, C) or (..., C, H, W), any leading dimensions -> (..., features_dim) float32."""
        x = obs.reshape(-1, *obs.shape[-3:])
        x = x.permute(0, 3, 1, 2) if self.channels_last else x
        # (B, C, H, W) in channels-last (NHWC) memory, oneDNN's fast layout: the Nature CNN's update
        # (forward, backward, Adam) at batch 256 takes 134 ms on one thread against 207 ms in NCHW. The
        # frames go straight to the dtype the convolution computes in: float32, or under autocast its
        # lower precision (bfloat16 and float16 hold 0..255 exactly), which spares autocast its cast of a
        # float32 copy (PPO's bf16 update on Atari: benchmarks/atari_profile.py). Dtype first, then layout:
        # torch's transposing copy is slow from uint8, and for 256 Atari frames on one thread the two
        # copies take 7.1 ms to bfloat16 (13.3 to float32) against 11.6 (13.9) for one .to(dtype, layout).
        device = x.device.type
        dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else torch.float32
        x = x.to(dtype).contiguous(memory_format=torch.channels_last)
        first = self.net[0]
        # conv(x * scale, W) = conv(x, W * scale): the scaling costs a 32x4x8x8 product, not a pass over the frames
        weight = first.weight * self.scale if self.scale != 1.0 else first.weight
        x = F.conv2d(x, weight, first.bias, first.stride)
        for layer in itertools.islice(self.net, 1, None):
            x = layer(x)
        return x.reshape(*obs.shape[:-3], self.features_dim)


def _takes() -> str:
    sides = ", ".join(f"{name} >= {spec.min_side}x{spec.min_side}" for name, spec in CNNS.items())
    return (
        f"the encoders are mlp (a 1-D Box, any dtype) and the CNNs {', '.join(CNNS)}, which take 3-D Box "
        f"frames (H, W, C) or (C, H, W) of dtype uint8 or bool with sides {sides}"
    )


def make_encoder(
    space: gym.spaces.Box, name: str, hidden_sizes: tuple[int, ...], activation: str, channels: str = "auto"
) -> tuple[nn.Module, int, str]:
    """The encoder for observations of `space`: (module, features_dim, the encoder's name).

    Args:
        space: the single observation space (a Box).
        name: "auto" (see the module docstring) or one of `ENCODERS`.
        hidden_sizes, activation: the MLP's layers (vector observations only).
        channels: the frames' layout, "first", "last" or "auto" (`acrl.parts.observations.image_layout`).
    Raises:
        InputError: a name not in `ENCODERS`; a space no encoder takes (a 2-D or 4-D Box, float frames,
            sides too small for the CNN) or an encoder that does not take it, naming the encoders and
            what they take; a frame shape whose channel axis "auto" cannot tell.
    """
    if name not in ENCODERS:
        raise InputError(f"encoder must be one of {', '.join(ENCODERS)}, got {name!r}.")
    if not is_image(space):
        if name not in ("auto", "mlp"):
            raise InputError(
                f"encoder {name!r} takes image frames; this environment's observations are vectors {space}. "
                f"Use encoder 'auto' or 'mlp'; {_takes()}."
            )
        obs_dim = int(space.shape[0])
        return mlp_encoder(obs_dim, hidden_sizes, activation), (obs_dim, *hidden_sizes)[-1], "mlp"
    if len(space.shape) != 3 or space.dtype not in IMAGE_DTYPES:
        raise InputError(
            f"no encoder takes observations {space} (shape {space.shape}, dtype {space.dtype}): {_takes()}."
        )
    channels, height, width, channels_last = image_layout(space, channels)
    if name == "auto":
        name = "nature" if min(height, width) >= CNNS["nature"].min_side else "minatar"
    if name == "mlp":
        raise InputError(
            f"encoder 'mlp' takes 1-D vectors; this environment's observations are frames {space}: {_takes()}."
        )
    spec = CNNS[name]
    if min(height, width) < spec.min_side:
        raise InputError(
            f"encoder {name!r} needs frames of at least {spec.min_side}x{spec.min_side} pixels; this "
            f"environment's are {height}x{width} (space {space}): {_takes()}."
        )
    scale = 1.0 / 255.0 if space.dtype == np.uint8 else 1.0
    return CNNEncoder(spec, channels, height, width, channels_last, scale), spec.features_dim, name
