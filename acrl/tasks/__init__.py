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

Atari (the `atari` extra: ale-py, ROMs included, and opencv): every `ALE/...-v5` id, as the "ALE"
environment family of `acrl.core.envs.ENV_FAMILIES`, and ALE's `...NoFrameskip-v4` ids (the same
family under the key "*NoFrameskip-v4": the same game without sticky actions): `env_factory` builds
the preprocessed single game (`acrl.tasks.atari.make_atari_env`) and `make_vec_env` ALE's vector env
with episodic life and clipped rewards for training (`acrl.tasks.atari.AtariVecEnv`). Their sticky
actions are a run's `sticky_actions` setting (`acrl.core.envs.with_sticky_actions`; unset: the id's
registration). `ale_py` is imported (registering the ids) when an ALE id is first built, not at
`import acrl`. Without the extra, either family's ids are unknown and the error names the extra to
install.

POPGym (Morad et al. 2023; the `popgym` extra): its partially observable tasks, ids
`popgym-<Task><Difficulty>-v0` without a namespace, as the "popgym-" family: `popgym` is imported
(registering them) when such an id is first built, and Discrete observations become one-hot
vectors (`acrl.tasks.popgym.make_popgym`). For recurrent policies (PPO's and A3C's lstm_hidden_size).
"""

import importlib.util

import gymnasium as gym

from acrl.core.envs import ENV_FAMILIES, EnvFamily
from acrl.tasks.ant_directional import AntDirectional, make_ant_directional
from acrl.tasks.atari import make_atari_env, make_atari_vec_env, register_ale
from acrl.tasks.popgym import make_popgym, register_popgym

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

ENV_FAMILIES["MinAtar"] = EnvFamily(
    install="install acrl's minatar extra (pip install 'acrl[minatar]'; ./run setup does)"
)
ENV_FAMILIES["ALE"] = ENV_FAMILIES["*NoFrameskip-v4"] = EnvFamily(
    install="install acrl's atari extra (pip install 'acrl[atari]'; ./run setup does)",
    register=register_ale,
    make_env=make_atari_env,
    make_vec_env=make_atari_vec_env,
    sticky_actions=True,
)
ENV_FAMILIES["popgym-"] = EnvFamily(
    install="install acrl's popgym extra (pip install 'acrl[popgym]')",
    register=register_popgym,
    make_env=make_popgym,
)

__all__ = ["AntDirectional", "make_ant_directional"]
