"""Environment construction: ids, factories, seeding, vector envs, action rescaling, task variants.

Gymnasium 1.x API throughout: `reset(seed=...) -> (obs, info)` and
`step(action) -> (obs, reward, terminated, truncated, info)`. Vector envs (`make_vec_env`,
`LeanSyncVectorEnv`) autoreset in the same step (Gymnasium's `AutoresetMode.SAME_STEP`): a
sub-environment that ends is reset inside the same `step`, and the true last observation of the
episode is in `info["final_obs"]`, which is what a time-limit truncation must bootstrap from
(docs/correctness.md item 1).

Every training environment is wrapped in `CheckFinite`, so a NaN or infinite observation or
reward stops the run with a `TrainingError` before it reaches a normaliser, a replay buffer or
a policy.

Environment families (`ENV_FAMILIES`, filled by `acrl.tasks`): an id namespace ("ALE" of
"ALE/Pong-v5"), an id prefix ending in "-" for a package that registers its ids without a
namespace ("popgym-" of "popgym-RepeatPreviousEasy-v0"), or an id suffix after a "*"
("*NoFrameskip-v4" of "PongNoFrameskip-v4", ALE's older ids), whose ids acrl builds its own way, with
the package that registers them imported only when one of its ids is first built, and what to
install when it is missing. An id (or its Gymnasium `EnvSpec`, whose keyword arguments it is built
with) of such a family gets the family's single env from `env_factory` and its training vector env
from `make_vec_env` (Atari: `acrl.tasks.atari`); an env instance is used as given. A run's
`sticky_actions` setting becomes the `repeat_action_probability` of its ALE id's EnvSpec
(`with_sticky_actions`), so that every env the run builds from that spec has the same probability.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import difflib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from acrl.core.errors import InputError, TrainingError

if TYPE_CHECKING:
    import torch

EnvSpec = str | gym.Env | Callable[[], gym.Env]
"""What the API accepts as an environment: a registered id, an env instance, or a factory."""


@dataclass(frozen=True)
class EnvFamily:
    """How acrl builds the environments of one id namespace (see the module docstring).

    Attributes:
        install: what to do when none of the namespace's ids is registered, a clause of the error
            message ("install acrl's atari extra (pip install 'acrl[atari]'; ./run setup does)").
        register: registers the namespace's ids with Gymnasium (imports its package), called when an
            id of the namespace is built and not registered yet; raises ImportError when the package
            is missing (None: the ids are registered when `acrl.tasks` is imported, if at all).
        make_env: (env id or its EnvSpec, render_mode) -> the single environment (probe, evaluation,
            videos; None: `gym.make`); an EnvSpec's keyword arguments are the ones it is built with.
        make_vec_env: (env id or its EnvSpec, n_envs, num_threads) -> the training vector env, with
            `LeanSyncVectorEnv`'s protocol (None: a `LeanSyncVectorEnv` of single envs).
        sticky_actions: whether the family's games have sticky actions (ALE; Machado et al. 2018): their
            probability is the EnvSpec's `repeat_action_probability`, which a run's `sticky_actions`
            setting sets (`with_sticky_actions`).
    """

    install: str
    register: Callable[[], None] | None = None
    make_env: Callable[[str | gym.envs.registration.EnvSpec, str | None], gym.Env] | None = None
    make_vec_env: Callable[[str | gym.envs.registration.EnvSpec, int, int | None], gym.vector.VectorEnv] | None = None
    sticky_actions: bool = False


ENV_FAMILIES: dict[str, EnvFamily] = {}
"""Id namespace ("ALE", "MinAtar"), id prefix ending in "-" ("popgym-") or id suffix after a "*"
("*NoFrameskip-v4") -> its `EnvFamily`; `acrl.tasks` fills it."""


def _affix_matches(key: str, env_id: str) -> bool:
    """Whether `env_id` is of the prefix family `key` ("popgym-") or the suffix family `key` ("*NoFrameskip-v4")."""
    if key.startswith("*"):
        return env_id.endswith(key[1:])
    return key.endswith("-") and env_id.startswith(key)


def family_key(env_id: str) -> str | None:
    """The `ENV_FAMILIES` key of `env_id`: its namespace ("ALE" of "ALE/Pong-v5"), the prefix ending
    in "-" it starts with ("popgym-") or the suffix after a "*" it ends with ("*NoFrameskip-v4"),
    when that is a family; else None."""
    if "/" in env_id:
        namespace = env_id.split("/")[0]
        return namespace if namespace in ENV_FAMILIES else None
    return next((key for key in ENV_FAMILIES if _affix_matches(key, env_id)), None)


def env_family(env_id: str) -> EnvFamily | None:
    """The family of `env_id` (`family_key`), or None; its ids are registered with Gymnasium when its
    package is installed (`EnvFamily.register` is called if `env_id` is not registered yet)."""
    key = family_key(env_id)
    family = None if key is None else ENV_FAMILIES[key]
    if family is not None and family.register is not None and env_id not in gym.registry:
        with contextlib.suppress(ImportError):  # not installed: env_factory's error names what to install
            family.register()
    return family


def env_factory(env: EnvSpec | gym.envs.registration.EnvSpec) -> tuple[Callable[[], gym.Env], str]:
    """Turn an id, instance or factory into a factory that builds a fresh env, and a name.

    Args:
        env: a Gymnasium id ("CartPole-v1", "acrl/AntDirectional-v5"; an id of an `ENV_FAMILIES`
            namespace builds the family's env, e.g. "ALE/Pong-v5" the preprocessed game of
            `acrl.tasks.atari.make_atari_env`), a `gym.Env` (each call of the factory makes a fresh
            copy: `gym.make(env.spec)`, or a deep copy for an unregistered env), a Gymnasium `EnvSpec`
            (what A3C's parent sends its workers, and what `with_sticky_actions` gives for an ALE id:
            built as its id is, with the spec's keyword arguments), or a zero-argument callable
            returning one (custom environments need no registration).
    Returns:
        (factory, name): the name is the id, or the class name for custom environments.
    Raises:
        InputError: an id that is not registered (with the closest registered ids, or, for a
            family's namespace without any, what to install).
    """
    if isinstance(env, str):
        family = env_family(env)
        if env not in gym.registry:
            namespace = env.split("/")[0] if "/" in env else None  # "ALE" of ALE/Pong-v5: suggest only its ids
            same = [spec.id for spec in gym.registry.values() if spec.namespace == namespace]
            label, key = f"{namespace}/", family_key(env)
            if key is not None and namespace is None:  # an affix family ("popgym-", "*NoFrameskip-v4"): its ids
                namespace, label = key, key if key.startswith("*") else f"{key}*"
                same = [spec_id for spec_id in gym.registry if _affix_matches(key, spec_id)]
            close = difflib.get_close_matches(env, same, n=3, cutoff=0.5)
            hint = (
                f" Did you mean {', '.join(close)}?"
                if close
                else f" No {label} environment is registered: {family.install}."
                if family is not None and not same
                else f" No {label} environment is registered: is the package that registers them installed "
                "and imported?"
                if namespace and not same
                else ""
            )
            raise InputError(
                f"unknown environment id {env!r}.{hint} Any id registered with Gymnasium works "
                "(see gymnasium.pprint_registry()), or pass an env instance/factory from Python."
            )
        if family is not None and family.make_env is not None:
            return (lambda: family.make_env(env, None)), env
        return (lambda: gym.make(env)), env
    if isinstance(env, gym.envs.registration.EnvSpec):
        family = env_family(env.id)
        if family is not None and family.make_env is not None:
            return (lambda: family.make_env(env, None)), env.id
        return (lambda: gym.make(env)), env.id
    if isinstance(env, gym.Env):
        # A fresh copy per call, so training and evaluation never share one env's state.
        if env.spec is not None:
            return (lambda: gym.make(env.spec)), env.spec.id
        return (lambda: copy.deepcopy(env)), type(env.unwrapped).__name__
    if callable(env):
        return env, getattr(env, "__name__", "custom")
    raise InputError(f"env must be a Gymnasium id, a gymnasium.Env or a factory, got {type(env).__name__}.")


def with_sticky_actions(
    env: EnvSpec | gym.envs.registration.EnvSpec, probability: float | None
) -> tuple[EnvSpec | gym.envs.registration.EnvSpec, float | None]:
    """The environment a run builds, and its sticky-action probability (`RunConfig.sticky_actions`).

    Sticky actions (Machado et al. 2018, Sec. 5.2): at each emulator frame the previous action is
    repeated instead of the agent's with this probability. An id or EnvSpec of a family that has them
    (`EnvFamily.sticky_actions`: ALE's `ALE/...-v5` and `...NoFrameskip-v4` ids) becomes its EnvSpec with
    `repeat_action_probability` = `probability` (None: the spec's own, ALE/Pong-v5 0.25,
    PongNoFrameskip-v4 0), so that everything built from it through `env_factory` and `make_vec_env`
    (the training vector env, A3C's workers, evaluation, videos, dataset collection) has that same
    probability. Any other environment comes back as given, with None.

    Args:
        env: a registered id (`env_factory` has checked it), an EnvSpec, an env instance or a factory.
        probability: in [0, 1] (`RunConfig.validate`), or None.
    Returns:
        (the environment to build, the probability it has or None).
    Raises:
        InputError: a probability for an environment without sticky actions to set: an id of
            another kind, or an env instance or factory (whose probability is set where it is made).
    """
    env_id = env.id if isinstance(env, gym.envs.registration.EnvSpec) else env if isinstance(env, str) else None
    family = env_family(env_id) if env_id is not None else None
    if family is None or not family.sticky_actions:
        if probability is not None:
            what = (
                f"{env_id} is not an Atari (ALE) game"
                if env_id is not None
                else "an env instance or factory has its own (set repeat_action_probability where it is made, "
                "or pass the ALE id)"
            )
            raise InputError(
                f"sticky_actions={probability} sets the sticky-action probability of an Atari game given by its "
                f"id (ALE/Pong-v5, PongNoFrameskip-v4); {what}. Leave sticky_actions unset (None)."
            )
        return env, None
    spec = gym.spec(env) if isinstance(env, str) else env
    if probability is None:
        probability = float(spec.kwargs["repeat_action_probability"])
    return dataclasses.replace(spec, kwargs={**spec.kwargs, "repeat_action_probability": probability}), probability


def check_spaces(env: gym.Env, algo: str, action_kinds: tuple[type, ...], hint: str = "", images: bool = False) -> None:
    """Check that `algo` can handle the env's spaces before any work starts.

    Observations must be a flat `Box` (with `images`, a `Box` of any shape, which the algorithm's
    encoder checks); actions one of `action_kinds` (`Box`, `Discrete`).
    A 1-D `Box`'s bounds are checked by `ActionAdapter`.

    Args:
        env: the environment (only its spaces are read).
        algo: the algorithm's name, for the message.
        action_kinds: the action space classes the algorithm handles.
        hint: a sentence appended to an action-space error, naming what would work instead
            (e.g. "For a Discrete action space use discrete_bcq.").
        images: whether `algo` takes image observations (PPO).
    Raises:
        InputError: naming the space and what would work.
    """
    obs_space, act_space = env.observation_space, env.action_space
    if not isinstance(obs_space, gym.spaces.Box) or (len(obs_space.shape) != 1 and not images):
        frames = " or image frames (a 3-D uint8 or bool Box)" if images else ""
        what = f"a flat Box observation space (a 1-D vector){frames}"
        raise InputError(
            f"{algo} needs {what}; this environment has {obs_space}, which is not supported. Wrap it with "
            "gymnasium.wrappers.FlattenObservation for Dict/Tuple spaces."
        )
    if not isinstance(act_space, action_kinds) or (isinstance(act_space, gym.spaces.Box) and len(act_space.shape) != 1):
        kinds = " or ".join(f"a 1-D {k.__name__}" if k is gym.spaces.Box else f"a {k.__name__}" for k in action_kinds)
        raise InputError(f"{algo} supports {kinds} action space; this environment has {act_space}. {hint}".rstrip())


def require_finite_bounds(space: gym.spaces.Box, user: str) -> None:
    """Refuse a Box action space with an infinite bound, for what acts inside [low, high].

    Args:
        space: the environment's Box action space.
        user: what needs the bounds, the subject of the message ("DDPG's tanh actor",
            "noise or a random action").
    Raises:
        InputError: some dimension's low or high is infinite.
    """
    if not space.is_bounded():
        raise InputError(
            f"{user} needs finite action bounds; this environment has {space}. Give it a bounded Box, "
            "e.g. gymnasium.wrappers.TransformAction(env, func, gymnasium.spaces.Box(low, high))."
        )


class ActionAdapter:
    """Map the policy's raw actions to the environment's action space.

    Continuous policies act in [-1, 1] per dimension; a dimension with finite bounds
    low < high is reached by clipping to [-1, 1] and rescaling, a dimension unbounded on both
    sides passes through. The raw sample is what the algorithm stores with its log-probability
    (docs/correctness.md item 3); only the copy sent to the environment is clipped. Discrete
    actions are indices 0..n-1 for the policy and start..start+n-1 for the environment
    (Gymnasium's `Discrete(n, start)`), int64 both.

    Replay buffers and datasets hold actions in these policy units ([-1, 1] per Box dimension, indices
    from 0), so that every agent on one action space can learn from any buffer of it; an adapter whose
    policy acts otherwise (`DiscretizedActions`) maps its actions to and from them (`to_buffer`,
    `from_buffer`, identities here).

    Attributes:
        shape: one policy action's shape, () for a Discrete space, (act_dim,) for a Box.
        n: Discrete: the number of actions (indices 0..n - 1); Box: None.

    Args:
        space: the environment's single action space (`Box` or `Discrete`).
    Raises:
        InputError: a Box dimension with low == high (nothing to rescale: its half-range is 0)
            or with one bound finite and the other infinite (neither rescaled nor clipped).
    """

    def __init__(self, space: gym.Space):
        self.discrete = isinstance(space, gym.spaces.Discrete)
        self.shape: tuple[int, ...] = tuple(space.shape)
        self.n: int | None = int(space.n) if self.discrete else None
        if self.discrete:
            self.start = int(space.start)
            return
        low, high = space.low.astype(np.float64), space.high.astype(np.float64)
        self.bounded = np.isfinite(low) & np.isfinite(high)
        half = np.flatnonzero(np.isfinite(low) != np.isfinite(high))
        if half.size:
            raise InputError(
                f"action dimensions {half.tolist()} of {space} are bounded on one side only; acrl "
                "rescales a dimension with both bounds finite and passes one with neither through: "
                "give each dimension both bounds or none (gymnasium.wrappers.TransformAction)."
            )
        flat = np.flatnonzero(self.bounded & (low >= high))
        if flat.size:
            raise InputError(
                f"action dimensions {flat.tolist()} of {space} have low == high, a constant action "
                "with nothing to learn; give each dimension low < high (drop the constant one with "
                "gymnasium.wrappers.TransformAction)."
            )
        low, high = np.where(self.bounded, low, -1.0), np.where(self.bounded, high, 1.0)
        self.center = ((high + low) / 2).astype(np.float32)  # 0 and 1 where unbounded
        self.half_range = ((high - low) / 2).astype(np.float32)
        self.dtype = space.dtype

    def to_env(self, raw: np.ndarray) -> np.ndarray:
        """Raw policy actions (..., act_dim) float32, or (...) int64 indices -> env actions in env units
        (its dtype), or (...) int64 in [start, start + n)."""
        if self.discrete:
            return raw.astype(np.int64) + self.start
        clipped = np.where(self.bounded, np.clip(raw, -1.0, 1.0), raw)
        return (self.center + self.half_range * clipped).astype(self.dtype)

    def to_policy(self, action: np.ndarray) -> np.ndarray:
        """Env-unit actions (..., act_dim) -> the policy's [-1, 1] units float32, a bounded dimension
        clipped to [-1, 1] (against float round-off at its bounds), or Discrete actions (...) -> indices
        from 0, int64 (the inverse of `to_env`)."""
        if self.discrete:
            return action.astype(np.int64) - self.start
        raw = ((action - self.center) / self.half_range).astype(np.float32)
        return np.where(self.bounded, np.clip(raw, -1.0, 1.0), raw).astype(np.float32)

    def to_buffer(self, raw: np.ndarray) -> np.ndarray:
        """Policy actions -> the units replay buffers and datasets hold: the same actions (see the class)."""
        return raw

    def from_buffer(self, actions: torch.Tensor) -> torch.Tensor:
        """Actions as replay buffers hold them (B, ...) -> policy actions: the same tensor (see the class)."""
        return actions


class DiscretizedActions(ActionAdapter):
    """A Box action space discretised independently per dimension: each of its J dimensions takes one of
    n_bins sub-actions evenly spaced from its low to its high bound, both included, so a policy action is
    J indices, (J,) int64 (the DQN baseline of Fujimoto, Meger, Precup 2019, Supp. D: 10 per dimension).

    Sub-action k of a dimension is -1 + 2k / (n_bins - 1) in the Box's policy units (`bins`), which
    `ActionAdapter` maps to low + k (high - low) / (n_bins - 1). Replay buffers and datasets hold the
    Box's policy units (the sub-actions' values, or any other agent's continuous actions), so a DQN
    learns from a DDPG's buffer: `from_buffer` takes each dimension's nearest sub-action.

    Attributes:
        shape: (J,); n: n_bins, the sub-actions per dimension; bins: (n_bins,) float32, their values.
    Args:
        space: the environment's Box action space, 1-D, with finite bounds; n_bins: >= 2.
    Raises:
        InputError: n_bins < 2; an infinite bound (`require_finite_bounds`); see `ActionAdapter`.
    """

    def __init__(self, space: gym.spaces.Box, n_bins: int, user: str = "discretised actions"):
        import torch  # torch loads with the agents, not with the CLI's --help

        if n_bins < 2:
            raise InputError(
                f"{user} need at least 2 sub-actions per dimension (from its low to its high bound), got {n_bins}."
            )
        require_finite_bounds(space, user)
        super().__init__(space)
        self.n = n_bins
        self.bins = torch.linspace(-1.0, 1.0, n_bins).numpy()  # torch's values, as DQN has always used

    def to_env(self, raw: np.ndarray) -> np.ndarray:
        """Sub-action indices (..., J) int64 -> env actions (..., J) in the Box's dtype."""
        return super().to_env(self.bins[raw])

    def to_policy(self, action: np.ndarray) -> np.ndarray:
        """Env-unit actions (..., J) -> the indices (..., J) int64 of each dimension's nearest sub-action."""
        import torch

        return self.from_buffer(torch.from_numpy(super().to_policy(action))).numpy()

    def to_buffer(self, raw: np.ndarray) -> np.ndarray:
        """Sub-action indices (..., J) int64 -> their values (..., J) float32 in the Box's policy units."""
        return self.bins[raw]

    def from_buffer(self, actions: torch.Tensor) -> torch.Tensor:
        """Box policy-unit actions (..., J) float32 -> the index (..., J) int64 of each dimension's nearest
        sub-action, floor((a + 1) (n_bins - 1) / 2 + 1/2): a value halfway between two goes to the upper
        one, a value outside [-1, 1] to the end one; each sub-action's value gives its own index."""
        return ((actions + 1.0) * ((self.n - 1) / 2.0) + 0.5).floor().clamp(0, self.n - 1).long()


def _ordinal(n: int) -> str:
    """1 -> "1st", 2 -> "2nd", 11 -> "11th", 120 -> "120th"."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _kind(values: np.ndarray) -> str:
    """What the non-finite `values` are: "NaN", "infinite" or "NaN and infinite"."""
    nan = bool(np.isnan(values).any())
    inf = bool(np.isinf(values).any())
    return "NaN and infinite" if nan and inf else "NaN" if nan else "infinite"


class CheckFinite(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Raise `TrainingError` when the environment returns a NaN or infinite observation or reward.

    Checks the observation returned by `reset` and by `step` (`np.isfinite(obs).all()`, any
    shape: a flat Box observation is (obs_dim,)) and the reward returned by `step` (as a
    float, `math.isfinite`). Observations of a non-Box space are not checked. With a
    same-step autoreset vector env, the true last observation of an episode is the one `step`
    returned, so `info["final_obs"]` is checked too. The cost is one `np.isfinite(...).all()`
    on the observation and one `math.isfinite` on the reward per step (about 1-2 µs).

    Args:
        env: the environment to check.
        index: the environment's index in its vector env (A3C: the worker's rank), named in
            the error.
    Raises:
        TrainingError (from `reset` and `step`): naming the environment (index and id), the
            quantity (observation with its non-finite components, or reward), the value, and
            the step: of the episode and over the wrapper's lifetime.
    """

    def __init__(self, env: gym.Env, index: int = 0):
        gym.utils.RecordConstructorArgs.__init__(self, index=index)
        gym.Wrapper.__init__(self, env)
        self.index = index
        self._check_obs = isinstance(env.observation_space, gym.spaces.Box)
        self.episode_steps = 0
        """Steps since the last reset."""
        self.total_steps = 0
        """Steps over this wrapper's lifetime, across episodes."""

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """`env.reset`, then check the first observation. Raises: TrainingError (see the class)."""
        obs, info = self.env.reset(seed=seed, options=options)
        self.episode_steps = 0
        if self._check_obs and not np.isfinite(obs).all():
            self._fail_observation(obs, f"from reset (after {self.total_steps} steps overall)")
        return obs, info

    def step(self, action):
        """`env.step`, then check the observation and the reward. Raises: TrainingError (see the class)."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.episode_steps += 1
        self.total_steps += 1
        if self._check_obs and not np.isfinite(obs).all():
            self._fail_observation(obs, self._when())
        if not math.isfinite(reward):
            self._fail(f"{_kind(np.float64(reward))} reward ({float(reward)})", self._when(), "reward")
        return obs, reward, terminated, truncated, info

    def _when(self) -> str:
        return f"at step {self.episode_steps} of its episode (its {_ordinal(self.total_steps)} step overall)"

    def _fail_observation(self, obs: np.ndarray, when: str) -> None:
        obs = np.asarray(obs)
        bad = ~np.isfinite(obs)
        where = np.argwhere(bad)
        components = [int(i[0]) if len(i) == 1 else tuple(int(j) for j in i) for i in where[:10]]
        more = f" and {len(where) - 10} more" if len(where) > 10 else ""
        values = ", ".join(str(v) for v in obs[bad][:10])
        self._fail(f"{_kind(obs[bad])} observation (components {components}{more}: {values})", when, "observation")

    def _fail(self, what: str, when: str, quantity: str) -> None:
        spec = self.env.spec
        name = spec.id if spec is not None else type(self.env.unwrapped).__name__
        article = "an" if what.startswith("infinite") else "a"
        wrapper = "TransformObservation" if quantity == "observation" else "TransformReward"
        raise TrainingError(
            f"environment {self.index} ({name}) returned {article} {what} {when}; acrl stops before it "
            f"reaches the normaliser or the policy. Check the environment's dynamics, or, if such values "
            f"are expected, wrap it to replace the {quantity} (gymnasium.wrappers.{wrapper} with "
            f"np.nan_to_num) or to end the episode there."
        )


class LeanSyncVectorEnv(gym.vector.VectorEnv):
    """`num_envs` environments stepped in turn in this process, reset in the same step when they
    end, whose `info` holds only what acrl reads: Gymnasium's `SyncVectorEnv` with
    `AutoresetMode.SAME_STEP` and the vector `RecordEpisodeStatistics`, minus their per-step
    merging of every sub-environment's info dictionary.

    That merging is most of what a vector step costs beyond the environments' own steps: with
    Ant-v5's info keys, 241 µs per sub-environment step through Gymnasium against 217 µs here;
    CartPole-v1 10.0 against 7.9 µs (8 environments, `benchmarks/vector_env.py`). The observations, rewards,
    terminations, truncations and autoresets are Gymnasium's for the same actions and seeds
    (`tests/unit/test_envs.py` steps both side by side).

    `step(actions)` returns (obs (n, *obs_shape), rewards (n,) float64, terminated (n,) bool,
    truncated (n,) bool, info): `info` is {} unless an episode ended in this step; then, for the
    sub-environments that ended (the masks `info["_final_obs"]` and `info["_episode"]`):
    `info["final_obs"]` (n,) object array, the episode's true last observation (the returned
    observation is already the next episode's first); `info["episode"]["r"]` (n,) float64 the
    undiscounted return and `info["episode"]["l"]` (n,) int64 the length in steps. The
    sub-environments' own info dictionaries are dropped. `reset(seed=s)` seeds sub-environment
    i with s + i (or takes a list of seeds), as Gymnasium does.

    Args:
        env_fns: zero-argument callables, each returning one environment (all with the same spaces).
    Raises:
        InputError (from `reset`): a list of seeds whose length is not `num_envs`.
        TrainingError (from `reset` and `step`): see `CheckFinite`, when the environments have it.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, env_fns: list[Callable[[], gym.Env]]):
        self.envs = [fn() for fn in env_fns]
        self.num_envs = len(self.envs)
        first = self.envs[0]
        self.single_observation_space, self.single_action_space = first.observation_space, first.action_space
        self.observation_space = batch_space(first.observation_space, self.num_envs)
        self.action_space = batch_space(first.action_space, self.num_envs)
        self.render_mode, self.spec = first.render_mode, first.spec
        self._returns = np.zeros(self.num_envs)
        self._lengths = np.zeros(self.num_envs, dtype=np.int64)

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict | None = None
    ) -> tuple[np.ndarray, dict]:
        """Reset every sub-environment: obs (n, *obs_shape) and {} (their infos are dropped)."""
        seeds = (
            [None] * self.num_envs
            if seed is None
            else [seed + i for i in range(self.num_envs)]
            if isinstance(seed, int)
            else list(seed)
        )
        if len(seeds) != self.num_envs:
            raise InputError(f"reset needs one seed per environment ({self.num_envs}), got {len(seeds)}.")
        self._returns[:] = 0.0
        self._lengths[:] = 0
        return np.stack([env.reset(seed=s, options=options)[0] for env, s in zip(self.envs, seeds)]), {}

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Step sub-environment i with actions[i] and reset those that ended (see the class)."""
        n = self.num_envs
        observations, rewards = [], np.empty(n)
        terminated, truncated = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        info: dict = {}
        for i, env in enumerate(self.envs):
            obs, reward, terminated[i], truncated[i], _ = env.step(actions[i])
            rewards[i] = reward
            self._returns[i] += reward
            self._lengths[i] += 1
            if terminated[i] or truncated[i]:
                if not info:
                    info = {
                        "final_obs": np.full(n, None, dtype=object),
                        "_final_obs": np.zeros(n, dtype=bool),
                        "episode": {"r": np.zeros(n), "l": np.zeros(n, dtype=np.int64)},
                        "_episode": np.zeros(n, dtype=bool),
                    }
                info["final_obs"][i], info["_final_obs"][i], info["_episode"][i] = obs, True, True
                info["episode"]["r"][i], info["episode"]["l"][i] = self._returns[i], self._lengths[i]
                self._returns[i], self._lengths[i] = 0.0, 0
                obs, _ = env.reset()
            observations.append(obs)
        return np.stack(observations), rewards, terminated, truncated, info

    def close_extras(self, **kwargs: object) -> None:
        """Close every sub-environment (`gym.vector.VectorEnv.close` calls this once)."""
        for env in self.envs:
            env.close()


def make_vec_env(
    env: EnvSpec | gym.envs.registration.EnvSpec, n_envs: int, first_index: int = 0, num_threads: int | None = None
) -> gym.vector.VectorEnv:
    """`n_envs` copies in a `LeanSyncVectorEnv` (same-step autoreset, episode statistics), or for an id
    (or `EnvSpec`) of a family with its own vector env, that one (`EnvFamily.make_vec_env`, the same protocol;
    ALE: `acrl.tasks.atari.AtariVecEnv`, with episodic life and clipped rewards).

    Seed it with `vec.reset(seed=seed)`: sub-environment i is seeded with seed + i.
    Episode returns and lengths appear in `info["episode"]` with the mask `info["_episode"]`.
    Sub-environment i is wrapped in `CheckFinite(..., index=first_index + i)` (A3C: its index among
    all workers' environments). `num_threads` is what a family's vector env may step its
    environments in (None: its own choice; an A3C worker passes 1); `LeanSyncVectorEnv` steps them in turn.
    Raises:
        InputError: see `env_factory`.
        TrainingError (from the vector env's `reset` and `step`): a sub-environment returned a
            NaN or infinite observation or reward (see `CheckFinite`); it propagates as is.
    """
    factory, name = env_factory(env)
    family = env_family(name) if isinstance(env, str | gym.envs.registration.EnvSpec) else None
    if family is not None and family.make_vec_env is not None:
        return family.make_vec_env(env, n_envs, num_threads)
    return LeanSyncVectorEnv([lambda i=i: CheckFinite(factory(), first_index + i) for i in range(n_envs)])
