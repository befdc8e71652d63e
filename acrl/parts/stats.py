"""Episode statistics of training: the returns and lengths behind `rollout/ep_return_mean`, and each
finished episode once for the run's episodes.csv (`EpisodeStats.take_finished`)."""

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
        self.finished: list[tuple[float, float]] = []
        """(return, length) of every episode added since the last `take_finished`, in the order added."""

    def add(self, returns: Iterable[float], lengths: Iterable[float]) -> None:
        """Append finished episodes' returns and lengths (equal numbers of each)."""
        episodes = [(float(r), float(n)) for r, n in zip(returns, lengths)]
        self.returns.extend(r for r, _ in episodes)
        self.lengths.extend(n for _, n in episodes)
        self.finished += episodes

    def take_finished(self) -> list[tuple[float, float]]:
        """The (return, length) of each episode added since the last call, which forgets them: the run
        loop writes them to episodes.csv after every iteration (`acrl.core.logging.Logger.log_episodes`)."""
        finished, self.finished = self.finished, []
        return finished

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
        """The window's episodes: {"episode_returns", "episode_lengths": lists of floats}."""
        return {"episode_returns": list(self.returns), "episode_lengths": list(self.lengths)}

    def load_state_dict(self, state: dict[str, list[float]]) -> None:
        """Restore the window from `state_dict`; its episodes count as written (`finished` stays empty)."""
        self.returns.clear()
        self.lengths.clear()
        self.add(state["episode_returns"], state["episode_lengths"])
        self.finished = []  # the window's episodes were finished, and written, before the checkpoint
