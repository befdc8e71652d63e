"""Registered task variants. Importing acrl registers them with Gymnasium.

A task wrapper may declare `episode_metrics`, names of `info` keys that hold a per-episode
quantity at the episode's last step; `acrl.core.evaluation.evaluate` reports each of them
(as a list and its mean) next to the returns, so the task, not the training code, decides
what is measured.

MinAtar (Young and Tian 2019; the `minatar` extra): when the package is installed, its ids
`MinAtar/{Asterix,Breakout,Freeway,Seaquest,SpaceInvaders}-v0` and `-v1` (v1: the minimal action
set) are registered here as `minatar.gym.register_envs()` registers them, through
`acrl.tasks.minatar.make_minatar` (uint8 video frames) and with the entry point as a string:
importing `minatar` (which imports seaborn) costs about a second, paid at the first `gym.make`
of a MinAtar id instead of at every `import acrl`.
"""

import importlib.util

import gymnasium as gym

from acrl.tasks.ant_directional import AntDirectional, make_ant_directional

if "acrl/AntDirectional-v5" not in gym.registry:
    gym.register(id="acrl/AntDirectional-v5", entry_point=make_ant_directional, max_episode_steps=1000)

MINATAR_GAMES = ("asterix", "breakout", "freeway", "seaquest", "space_invaders")

if importlib.util.find_spec("minatar") is not None:
    for game in MINATAR_GAMES:
        name = game.title().replace("_", "")
        for version, minimal in (("v0", False), ("v1", True)):
            if f"MinAtar/{name}-{version}" not in gym.registry:
                gym.register(
                    id=f"MinAtar/{name}-{version}",
                    entry_point="acrl.tasks.minatar:make_minatar",
                    kwargs={"game": game, "use_minimal_action_set": minimal},
                )

__all__ = ["AntDirectional", "make_ant_directional"]
