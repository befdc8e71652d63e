"""Episode statistics of training: the returns and lengths behind `rollout/ep_return_mean`."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

import numpy as np


class EpisodeStats:
    """Undiscounted returns and lengths (steps) of the last `window` finished training episodes.

    Args:
        window: how many recent episodes the means cover (100, as Stable-Baselines3's).
    """

    def __init__(self, window: int = 100):
        self.returns: deque[float] = deque(maxlen=window)
        self.lengths: deque[float] = deque(maxlen=window)

    def add(self, returns: Iterable[float], lengths: Iterable[float]) -> None:
        """Append finished episodes' returns and lengths (equal numbers of each)."""
        self.returns.extend(float(r) for r in returns)
        self.lengths.extend(float(n) for n in lengths)

    def add_from_info(self, info: dict[str, Any]) -> None:
        """Append the episodes that Gymnasium's vector `RecordEpisodeStatistics` reports in
        `info["episode"]` ("r": returns, "l": lengths, masked by `info["_episode"]`)."""
        if "_episode" in info:
            done = info["_episode"]
            self.add(info["episode"]["r"][done], info["episode"]["l"][done])

    def metrics(self) -> dict[str, float]:
        """{"rollout/ep_return_mean", "rollout/ep_len_mean"} over the window; {} before any episode."""
        if not self.returns:
            return {}
        return {
            "rollout/ep_return_mean": float(np.mean(self.returns)),
            "rollout/ep_len_mean": float(np.mean(self.lengths)),
        }

    def state_dict(self) -> dict[str, list[float]]:
        return {"episode_returns": list(self.returns), "episode_lengths": list(self.lengths)}

    def load_state_dict(self, state: dict[str, list[float]]) -> None:
        self.returns.clear()
        self.lengths.clear()
        self.add(state["episode_returns"], state["episode_lengths"])
