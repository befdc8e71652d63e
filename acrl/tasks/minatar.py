"""MinAtar's games (Young and Tian 2019, arXiv:1903.03176; the `minatar` package) as acrl registers them.

`make_minatar` builds `minatar.gym.BaseEnv` (imported only then: it imports seaborn, about a
second) and wraps it so that `render()` in "rgb_array" mode gives what Gymnasium's render API
and acrl's videos expect: a uint8 (10 * FRAME_SCALE, 10 * FRAME_SCALE, 3) image. MinAtar itself
returns float64 colours in [0, 1], one pixel per cell of its 10 x 10 grid. Observations, rewards
and actions are MinAtar's own: (10, 10, C) bool frames.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

FRAME_SCALE = 32
"""Each grid cell is FRAME_SCALE x FRAME_SCALE pixels in a rendered frame (320 x 320)."""


class MinAtarFrames(gym.Wrapper):
    """Renders MinAtar's grid as uint8 RGB, each cell FRAME_SCALE pixels wide; nothing else changes."""

    metadata = {"render_modes": ["human", "array", "rgb_array"], "render_fps": 10, "channels": "last"}
    """MinAtar's render modes; 10 frames a second for videos (MinAtar sets none); its (10, 10, C) frames are
    channels-last, which a shape such as Seaquest's (10, 10, 10) does not say (`acrl.parts.observations`)."""

    def render(self) -> np.ndarray | None:
        """(10 * FRAME_SCALE, 10 * FRAME_SCALE, 3) uint8 in "rgb_array" mode (else MinAtar's own render)."""
        frame = self.env.render()
        if self.render_mode != "rgb_array" or frame is None:
            return frame
        frame = (np.clip(np.asarray(frame, dtype=np.float64), 0.0, 1.0) * 255.0).round().astype(np.uint8)
        return frame.repeat(FRAME_SCALE, axis=0).repeat(FRAME_SCALE, axis=1)


def make_minatar(game: str, use_minimal_action_set: bool, render_mode: str | None = None, **kwargs: Any) -> gym.Env:
    """The MinAtar `game` ("breakout", ...) with its full or minimal action set, rendering uint8 frames.

    Raises:
        ModuleNotFoundError: the `minatar` package is missing (acrl registers the ids only when it is installed).
    """
    from minatar.gym import BaseEnv

    return MinAtarFrames(
        BaseEnv(game, render_mode=render_mode, use_minimal_action_set=use_minimal_action_set, **kwargs)
    )
