"""Atari 2600 games through the Arcade Learning Environment (Bellemare et al. 2013; the `ale-py` package,
ROMs included; the `atari` extra), preprocessed as Mnih et al. 2015 (Nature DQN, Methods and Extended
Data Table 1) and Machado et al. 2018 (sticky actions).

Every `ALE/...-v5` id (ALE/Pong-v5, ALE/Breakout-v5, ...) means, in acrl, the game with `AtariSettings`;
ALE's older `...NoFrameskip-v4` ids (PongNoFrameskip-v4: the ids CleanRL and SB3's zoo train on) mean
the same game and preprocessing without sticky actions, as their registrations say
(`AtariSettings.of`). A run's `sticky_actions` setting (`acrl.core.config.RunConfig`) overrides the
registration's probability: the agent builds every env of the run from the id's EnvSpec with that
`repeat_action_probability` (`acrl.core.envs.with_sticky_actions`), so training, A3C's workers,
evaluation and videos have the same one, and config.yaml and the model card record it.

- `make_atari_env`, the single environment (the agent's probe, evaluation, `acrl record`, and any
  env built by `acrl.core.envs.env_factory`): Gymnasium's `AtariPreprocessing` (up to 30 no-op
  actions after each reset, the action repeated for 4 frames with the maximum over the last two
  frames, 84 x 84 grayscale by `cv2.resize(..., INTER_AREA)`) and `FrameStackObservation` (the last
  4 frames, zero-padded after a reset) on the ALE env with sticky actions 0.25. Whole games and the
  game's own (unclipped) score: what every reported score is.
- `AtariVecEnv`, the training vector env (`acrl.core.envs.make_vec_env`): ALE's own C++ vector env
  (`ale_py.vector_env.AtariVectorEnv`, stepped in threads) with the same preprocessing, presenting
  `acrl.core.envs.LeanSyncVectorEnv`'s protocol, plus what training alone uses: a life loss ends
  the episode for the learner (terminated, so the value is not bootstrapped across it) while the game
  goes on (Mnih et al. 2015's "episodic life"; SB3's EpisodicLifeEnv), and rewards are clipped to
  their sign, {-1, 0, +1} (Mnih et al. 2015; SB3/CleanRL's ClipRewardEnv). `info["episode"]` reports
  whole games only, with the raw score.

Observations are (4, 84, 84) uint8 frames, channels first, in both paths (acrl's CNNs scale them
inside the network). Actions are the game's minimal action set, Discrete(n).

The two paths give the same observations, rewards and game ends for the same actions wherever no
random number is drawn: with `noop_max=0` and `repeat_action_probability=0` they agree exactly, frame
for frame (`tests/unit/test_atari.py`). Where they differ:

- Randomness: the number of no-ops after a reset (uniform in 1..noop_max in both) and the sticky
  actions come from different generators (Gymnasium's `np_random` against ALE's C++ one), so the
  same seed gives different no-op counts and sticky repeats.
- The 108,000-frame limit (30 minutes of play, a time-limit truncation): the vector env counts it
  from the end of the no-ops, the single env from the reset, up to noop_max frames (8 steps) earlier.
- No fire reset in either: games that wait for FIRE after a reset or a lost life (Breakout) wait
  until the policy presses it (`use_fire_reset=False` in the vector env, as Gymnasium's wrappers have
  none; CleanRL's FireResetEnv presses it for the agent). A policy that never fires plays until the
  frame limit.
- After a lost life the training env's frame stack goes on (the game did not restart): the learner
  sees a new episode start on frames of the old one, as with SB3's EpisodicLifeEnv.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec
from gymnasium.vector import AutoresetMode

from acrl.core.errors import InputError
from acrl.parts.workers import default_workers

EMULATOR_FPS = 60
"""Frames a second of the Atari 2600 (NTSC); a video frame per agent step plays at EMULATOR_FPS / frame_skip."""


@dataclass(frozen=True)
class AtariSettings:
    """The Atari preprocessing, shared by the training vector env and the single env.

    Attributes:
        noop_max: at most this many no-op actions (one frame each) after a reset, their number
            uniform in 1..noop_max (0: none), so games start in different states (Mnih et al. 2015,
            Extended Data Table 1, "no-op max" 30).
        frame_skip: each action is repeated for this many frames, and the observation is the
            pixel-wise maximum of the last two (Atari sprites flicker), the rewards summed (Mnih et
            al. 2015, "action repeat" 4, Methods: preprocessing).
        screen_size: frames are resized to screen_size x screen_size pixels (Mnih et al. 2015: 84).
        grayscale: the luminance instead of RGB (Mnih et al. 2015).
        frame_stack: observations stack the last this many frames, channels first (Mnih et al.
            2015, "agent history length" 4).
        repeat_action_probability: sticky actions: at each frame the emulator repeats the previous
            action instead of the agent's with this probability (Machado et al. 2018, Sec. 5.2;
            ALE v5's default 0.25), so that an open-loop action sequence cannot memorise a game.
        max_frames: a game is truncated after this many emulator frames (108,000: 30 minutes at
            60 frames a second; Machado et al. 2018, Sec. 5.3; ALE v5's default).
    Raises:
        InputError: a value out of range (negative no-ops, a probability outside [0, 1], a size,
            skip, stack or limit below 1).
    """

    noop_max: int = 30
    frame_skip: int = 4
    screen_size: int = 84
    grayscale: bool = True
    frame_stack: int = 4
    repeat_action_probability: float = 0.25
    max_frames: int = 108_000

    def __post_init__(self) -> None:
        low = [name for name in ("frame_skip", "screen_size", "frame_stack", "max_frames") if getattr(self, name) < 1]
        if low or self.noop_max < 0:
            raise InputError(
                f"AtariSettings needs frame_skip, screen_size, frame_stack and max_frames >= 1 and noop_max >= 0; "
                f"got {', '.join(f'{name}={getattr(self, name)}' for name in low or ['noop_max'])}."
            )
        if not 0.0 <= self.repeat_action_probability <= 1.0:
            raise InputError(
                "repeat_action_probability (sticky actions) is a probability in [0, 1] (ALE v5: 0.25), got "
                f"{self.repeat_action_probability}."
            )

    @classmethod
    def of(cls, env: str | EnvSpec) -> AtariSettings:
        """The settings of a registered ALE id, or of its EnvSpec: the defaults, with the sticky-action
        probability and the frame limit its keyword arguments give (`repeat_action_probability`,
        `max_num_frames_per_episode`: ALE/Pong-v5 0.25 and 108,000, PongNoFrameskip-v4 0 and 108,000; an
        EnvSpec from `acrl.core.envs.with_sticky_actions`: the run's `sticky_actions`).

        Raises:
            gymnasium.error.NameNotFound / NamespaceNotFound: an id that is not registered.
            InputError: a probability outside [0, 1] in the spec.
        """
        kwargs = _spec(env).kwargs
        return cls(
            repeat_action_probability=kwargs.get("repeat_action_probability", cls.repeat_action_probability),
            max_frames=kwargs.get("max_num_frames_per_episode") or cls.max_frames,
        )


def _spec(env: str | EnvSpec) -> EnvSpec:
    """The EnvSpec of an ALE id (registered: `env_factory` checks it), or the EnvSpec itself."""
    return gym.spec(env) if isinstance(env, str) else env


def make_atari_env(
    env: str | EnvSpec, render_mode: str | None = None, settings: AtariSettings | None = None
) -> gym.Env:
    """The single environment of an ALE id: whole games, the game's own score (see the module docstring).

    `gym.make(spec, frameskip=1, ...)` (the ALE env steps one frame at a time, with sticky actions)
    -> `AtariPreprocessing` (no-ops, frame skip with max-pooling, resize, grayscale) ->
    `FrameStackObservation` (zero padding, as ALE's vector env). Its videos play at the game's speed:
    `metadata["render_fps"]` is 60 / frame_skip.

    Args:
        env: an ALE id registered with Gymnasium ("ALE/Pong-v5"; `import ale_py` registers them), or
            its EnvSpec (with the run's sticky actions: `acrl.core.envs.with_sticky_actions`).
        render_mode: None, or "rgb_array" for videos: `render()` gives the emulator's RGB screen,
            (210, 160, 3) uint8.
        settings: the preprocessing (None: `AtariSettings.of(env)`).
    Returns:
        the env: observations (frame_stack, screen_size, screen_size) uint8 (with grayscale=False,
        (frame_stack, screen_size, screen_size, 3)), Discrete actions (the minimal action set), rewards
        the game's score per step (float), terminated at game over, truncated at max_frames.
    Raises:
        gymnasium.error.NameNotFound / NamespaceNotFound: an id that is not registered.
        gymnasium.error.DependencyNotInstalled: opencv is missing (AtariPreprocessing resizes with it).
    """
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    settings = settings or AtariSettings.of(env)
    env = gym.make(
        _spec(env),
        frameskip=1,
        repeat_action_probability=settings.repeat_action_probability,
        max_num_frames_per_episode=settings.max_frames,
        render_mode=render_mode,
    )
    env = AtariPreprocessing(
        env,
        noop_max=settings.noop_max,
        frame_skip=settings.frame_skip,
        screen_size=settings.screen_size,
        terminal_on_life_loss=False,
        grayscale_obs=settings.grayscale,
        scale_obs=False,
    )
    env = FrameStackObservation(env, settings.frame_stack, padding_type="zero")
    env.metadata = {**env.metadata, "render_fps": EMULATOR_FPS / settings.frame_skip}
    return env


class AtariVecEnv(gym.vector.VectorEnv):
    """ALE's own vector env for training: `LeanSyncVectorEnv`'s protocol, episodic life, sign-clipped
    rewards, whole-game raw scores in `info["episode"]` (see the module docstring).

    `step(actions)` returns (obs (n, frame_stack, H, W) uint8, rewards (n,) float64 in {-1, 0, 1}
    (the sign of the game's reward), terminated (n,) bool (a life lost or the game over), truncated
    (n,) bool (max_frames reached), info). Same-step autoreset: a game that ends is reset (with its
    no-ops) inside the step; a lost life only marks the step terminated and the game goes on. `info`
    is {} unless a life was lost or a game ended in this step; then, for those sub-environments (mask
    `info["_final_obs"]`), `info["final_obs"]` (n,) object array holds the episode's last observation
    (after a lost life, the returned observation itself), and for the games that ended (mask
    `info["_episode"]`, a subset), `info["episode"]["r"]` (n,) float64 is the game's score (the sum of
    the unclipped rewards over all its lives) and `info["episode"]["l"]` (n,) int64 its length in agent
    steps. A lost life is told from the game's `lives` counter dropping (SB3's EpisodicLifeEnv; games
    without lives, such as Pong, never lose one); game over and truncation are ALE's own.

    `reset(seed=s)` seeds sub-environment i with s + i (or takes a list of seeds), as Gymnasium does.
    `frame_stack` is the frames per observation, for a replay buffer that stores each frame once
    (`acrl.parts.buffers.FrameReplayBuffer`).
    Observations and rewards are integers, so no NaN can occur (nothing like `CheckFinite` is needed).

    `settings` is the preprocessing it was built with (the vector env cannot be asked for it).

    Args:
        env: a registered ALE id ("ALE/Pong-v5") or its EnvSpec (as `make_atari_env`).
        n_envs: sub-environments.
        settings: the preprocessing (None: `AtariSettings.of(env)`).
        num_threads: threads ALE steps the sub-environments in (None: one per sub-environment, up to
            the cores this process may run on; an A3C worker passes 1).
    Raises:
        InputError: n_envs or num_threads < 1; a list of seeds whose length is not n_envs (`reset`).
        gymnasium.error.NameNotFound: an id that is not registered.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(
        self, env: str | EnvSpec, n_envs: int, settings: AtariSettings | None = None, num_threads: int | None = None
    ):
        from ale_py.vector_env import AtariVectorEnv

        if n_envs < 1 or (num_threads is not None and num_threads < 1):
            raise InputError(f"AtariVecEnv needs n_envs >= 1 and num_threads >= 1, got {n_envs} and {num_threads}.")
        self.spec = _spec(env)
        self.settings = settings = settings or AtariSettings.of(self.spec)
        self.ale = AtariVectorEnv(
            self.spec.kwargs["game"],
            n_envs,
            num_threads=num_threads or min(n_envs, default_workers()),
            autoreset_mode=AutoresetMode.SAME_STEP,
            img_height=settings.screen_size,
            img_width=settings.screen_size,
            grayscale=settings.grayscale,
            stack_num=settings.frame_stack,
            frameskip=settings.frame_skip,
            maxpool=True,
            noop_max=settings.noop_max,
            episodic_life=False,  # ALE's would restart the whole game at a lost life
            life_loss_info=False,  # lost lives are found here, so terminated means game over below
            reward_clipping=False,  # clipped here, so that the raw score can be reported
            use_fire_reset=False,  # as the single env (Gymnasium's AtariPreprocessing has no fire reset)
            repeat_action_probability=settings.repeat_action_probability,
            max_num_frames_per_episode=settings.max_frames,
            full_action_space=self.spec.kwargs.get("full_action_space", False),
        )
        self.num_envs = n_envs
        self.frame_stack = settings.frame_stack
        self.single_observation_space = self.ale.single_observation_space
        self.single_action_space = self.ale.single_action_space
        self.observation_space, self.action_space = self.ale.observation_space, self.ale.action_space
        self.render_mode = None
        self._lives = np.zeros(n_envs, dtype=np.int64)
        self._scores = np.zeros(n_envs)
        self._lengths = np.zeros(n_envs, dtype=np.int64)

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict | None = None
    ) -> tuple[np.ndarray, dict]:
        """Start a new game in every sub-environment: obs (n, frame_stack, H, W) uint8 and {}."""
        if isinstance(seed, list | tuple):
            if len(seed) != self.num_envs:
                raise InputError(f"reset needs one seed per environment ({self.num_envs}), got {len(seed)}.")
            seed = np.array([-1 if s is None else s for s in seed], dtype=np.int64)  # ALE: -1 is unseeded
        obs, info = self.ale.reset(seed=seed)
        self._lives[:] = info["lives"]
        self._scores[:] = 0.0
        self._lengths[:] = 0
        return obs, {}

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Step sub-environment i with actions[i] (n,) int; see the class for what comes back."""
        obs, scores, game_over, truncated, ale_info = self.ale.step(np.asarray(actions, dtype=np.int64))
        game_ended = game_over | truncated  # ALE reset these games in this step (same-step autoreset)
        life_lost = (ale_info["lives"] < self._lives) & ~game_ended  # after a game ended: the new game's lives
        self._lives[:] = ale_info["lives"]
        self._scores += scores
        self._lengths += 1
        terminated = game_over | life_lost
        ended = game_ended | life_lost
        rewards = np.sign(scores).astype(np.float64)
        if not ended.any():
            return obs, rewards, terminated, truncated, {}
        n = self.num_envs
        final_obs = np.full(n, None, dtype=object)
        for i in np.flatnonzero(ended):
            final_obs[i] = ale_info["final_obs"][i] if game_ended[i] else obs[i]
        info = {
            "final_obs": final_obs,
            "_final_obs": ended,
            "episode": {"r": np.where(game_ended, self._scores, 0.0), "l": np.where(game_ended, self._lengths, 0)},
            "_episode": game_ended,
        }
        self._scores[game_ended] = 0.0
        self._lengths[game_ended] = 0
        return obs, rewards, terminated, truncated, info

    def close_extras(self, **kwargs: object) -> None:
        """Close the ALE vector interface."""
        self.ale.close()


def make_atari_vec_env(env: str | EnvSpec, n_envs: int, num_threads: int | None = None) -> AtariVecEnv:
    """`AtariVecEnv(env, n_envs, AtariSettings.of(env), num_threads)`: what `acrl.core.envs.make_vec_env`
    builds for an ALE id or its EnvSpec (see `AtariVecEnv`)."""
    return AtariVecEnv(env, n_envs, None, num_threads)


def register_ale() -> None:
    """Register the ALE/ ids with Gymnasium (`import ale_py`, about 0.1 s) and keep ALE from printing
    its banner at every env it makes.

    Raises:
        ModuleNotFoundError: ale-py or opencv (which `AtariPreprocessing` resizes with) is missing.
    """
    import ale_py
    import cv2  # noqa: F401  (checked here, so that a missing one names the atari extra)

    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
    gym.register_envs(ale_py)


__all__ = ["AtariSettings", "AtariVecEnv", "make_atari_env", "make_atari_vec_env", "register_ale"]
