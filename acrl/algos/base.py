"""What every acrl agent shares: construction and checks, predict, learn, save and load.

An algorithm subclasses `Agent` and provides `_build()` (networks in `self.nets`, optimizers in
`self.optimizers`, and `self.obs_normalizer` when it normalises observations; the default is
the identity), `iteration(max_steps)` (collect and/or update, advance `self.num_steps`, return
metrics) and the policy `predict` acts through: `_policy_action()` (raw actions; a policy without
state), or, for an actor-critic, nothing more: an `ActorCriticAgent` (PPO, A3C, IMPALA, APPO) sets
`self.model` (an `acrl.parts.actor_critic.ActorCritic`) in `_build` and acts through it, carrying its
state (empty without an LSTM). `_extra_state` and `_load_extra_state` add what else its checkpoints
need. Its forward passes (acting and its update's, with the losses computed from them; not `backward`
or an optimizer step) run inside `self.autocast()`, the config's `precision` (bfloat16 autocast for
"bf16", nothing for "fp32"; `predict` enters it itself), and its networks return float32
(`acrl.parts.nets`). Training itself (evaluation, the best and latest checkpoints, NaN checks,
logging, signals, callbacks) is the run loop's, `acrl.core.loop`, which `learn` calls.
"""

from __future__ import annotations

import contextlib
import difflib
import inspect
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
import yaml
from torch import nn

from acrl.core.checkpoint import load_checkpoint, rng_state, save_checkpoint, set_rng_state
from acrl.core.config import RunConfig, update_config
from acrl.core.devices import auto_precision, check_precision, precision_context, resolve_device
from acrl.core.envs import ActionAdapter, EnvSpec, check_spaces, env_factory, env_family, with_sticky_actions
from acrl.core.errors import InputError
from acrl.core.evaluation import evaluate
from acrl.core.files import write_text_atomic
from acrl.core.loop import Callback, Run, train
from acrl.parts.actor_critic import Action, ActorCritic, State
from acrl.parts.normalization import IdentityNormalizer, ObservationNormalizer
from acrl.parts.observations import is_image, observation_layout
from acrl.parts.stats import EpisodeStats

EVAL_SEED_OFFSET = 10_000
"""Evaluation environments are seeded with seed + 10_000, apart from training (docs/correctness.md item 11)."""


def seed_everything(seed: int) -> None:
    """Seed python's `random`, numpy's global generator and torch (docs/correctness.md item 10)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


class Agent:
    """Base of the acrl agents; see the module docstring for what a subclass provides.

    Args:
        env: a Gymnasium id, env instance or zero-argument factory (default: the config's env_id).
        config: a full config to start from (defaults: the algorithm's defaults).
        **hyperparameters: config fields to override, e.g. `seed=0, clip_range=0.1`.
    Raises:
        InputError: an unknown environment or hyperparameter, a bad value, or a space the
            algorithm cannot handle, all before anything is trained or written.
    """

    algo: ClassVar[str]
    config_class: ClassVar[type[RunConfig]]
    action_kinds: ClassVar[tuple[type, ...]] = (gym.spaces.Box, gym.spaces.Discrete)
    image_observations: ClassVar[bool] = False
    """Whether the algorithm takes observation spaces other than a 1-D Box (PPO: image frames; its
    encoder checks them, `acrl.parts.encoders.make_encoder`)."""
    bf16_on_frames: ClassVar[bool] = False
    """Whether `precision="auto"` takes bf16 for image observations (on a CPU with bfloat16 instructions,
    `acrl.core.devices.auto_precision`): true where it was measured faster with learning parity (PPO)."""
    action_space_hint: ClassVar[str] = ""
    """Appended to the error for an action space not in `action_kinds`: what to use instead."""
    step_unit: ClassVar[str] = "step"
    """What num_steps counts: "step" (environment steps) or "update" (gradient updates, offline); config.yaml
    records it for the figures' step axis (`acrl.core.plotting`)."""
    episode_stats: EpisodeStats | None = None
    """The training episodes' statistics, whose finished episodes the run loop writes to episodes.csv; None
    for an agent that plays no training episodes (offline)."""
    checkpoint_on_failure: ClassVar[bool] = False
    """Whether the run loop may write latest.pt after an exception (see `acrl.core.loop.Trainable`)."""
    cpu_only_reason: ClassVar[str | None] = None
    """Why the algorithm runs on the CPU whatever `device` says (A3C), or None: it trains on any device."""

    def __init__(self, env: EnvSpec | None = None, config: RunConfig | None = None, **hyperparameters: Any):
        if env is None:
            env = hyperparameters.get("env_id", (config or self.config_class()).env_id)
        factory, name = env_factory(env)
        values = dict(hyperparameters)
        if isinstance(env, str) or "env_id" not in values:
            values["env_id"] = name
        self.config = update_config(config or self.config_class(), values, origin=type(self).__name__)
        probe = factory()  # the spaces first: a config is judged for an environment the algorithm can take
        check_spaces(probe, type(self).__name__, self.action_kinds, self.action_space_hint, self.image_observations)
        self.observation_space, self.action_space = probe.observation_space, probe.action_space
        self.config.channels = observation_layout(probe, self.config.channels)
        probe.close()
        self.action_adapter = self.make_action_adapter()
        self.config.validate()
        self.device = self._device()
        self.config.device = str(self.device)  # what was used, for config.yaml: "cpu" or "cuda:0"
        if self.config.precision == "auto":  # the one used, for config.yaml
            bf16_pays = self.bf16_on_frames and is_image(self.observation_space)
            self.config.precision = auto_precision(self.device, bf16_pays)
        check_precision(self.device, self.config.precision)  # bf16 where the hardware has it, before any work
        self.env, self.config.sticky_actions = with_sticky_actions(env, self.config.sticky_actions)
        self.obs_dim = int(self.observation_space.shape[0])
        self.discrete = isinstance(self.action_space, gym.spaces.Discrete)
        self.act_dim = int(self.action_space.n) if self.discrete else int(self.action_space.shape[0])
        torch.set_num_threads(self.config.torch_threads)  # also before init: QR (orthogonal init) depends on it
        seed_everything(self.config.seed)
        self.rng = np.random.default_rng(self.config.seed)
        self.num_steps = 0
        self.total_steps = self.config.total_steps
        self.best_eval: dict[str, Any] | None = None
        self.nets: dict[str, nn.Module] = {}
        self.optimizers: dict[str, torch.optim.Optimizer] = {}
        self.obs_normalizer: ObservationNormalizer | IdentityNormalizer = IdentityNormalizer()
        self._build()
        for net in self.nets.values():  # in place: the optimizers keep their parameters
            net.to(self.device)

    @classmethod
    def from_preset(cls, env: EnvSpec, preset: str | None = None, **hyperparameters: Any) -> Agent:
        """The agent `acrl train` builds: the algorithm's defaults < the preset < `hyperparameters`.

        `cls(env)` takes the defaults only; the tuned presets (acrl/presets/ALGO.yaml, each
        with its source) apply here and in the CLI through the same `acrl.algos.make_config`.

        Args:
            env: a Gymnasium id, env instance or zero-argument factory; its id selects the preset.
            preset: a preset name for this environment (default: its `default` preset when it
                has one, else none), as `acrl train --preset`.
            **hyperparameters: config fields set over the preset, e.g. `seed=1, total_steps=50_000`.
        Raises:
            InputError: a preset that does not exist for this algorithm and environment (the
                message lists those that do), an unknown hyperparameter or a bad value.
        """
        from acrl.algos import make_config  # the registry, in this package's __init__

        _, config = make_config(cls.algo, env_factory(env)[1], preset, hyperparameters, f"{cls.__name__}.from_preset")
        return cls(env, config=config)

    def make_action_adapter(self) -> ActionAdapter:
        """The map between the policy's actions and the environment's (`acrl.core.envs.ActionAdapter`), decided
        from the action space before the config is validated (DQN's `action_bins` overrides it).

        Raises:
            InputError: a Box the adapter cannot map (`ActionAdapter`: a dimension with low == high, or one
                bound finite and the other not).
        """
        return ActionAdapter(self.action_space)

    def _device(self) -> torch.device:
        """The config's device, resolved on this machine (`acrl.core.devices.resolve_device`).

        Raises:
            InputError: a device this machine lacks or an unknown string; CUDA for an
                algorithm with a `cpu_only_reason`.
        """
        spec = self.config.device
        if self.cpu_only_reason is None:
            return resolve_device(spec)
        if spec not in ("auto", "cpu"):
            raise InputError(
                f"{type(self).__name__} runs on the CPU by design ({self.cpu_only_reason}); got device "
                f"{spec!r}. Use --device cpu (or auto, which picks the CPU for it)."
            )
        return torch.device("cpu")

    def autocast(self) -> contextlib.AbstractContextManager:
        """The context of the networks' forward passes (`acrl.core.devices.precision_context` for the agent's device
        and `precision`): bfloat16 autocast for "bf16", nothing for "fp32". An algorithm enters it around acting
        and around its update's forward passes and losses, not around `backward` or an optimizer step."""
        return precision_context(self.device, self.config.precision)

    # ----------------------------------------------------------------- what an algorithm provides
    def _build(self) -> None:
        """Create networks, optimizers, normaliser and (for online algorithms) environments."""
        raise NotImplementedError

    def iteration(self, max_steps: int) -> dict[str, float]:
        """One unit of training: a rollout and its update, or a batch of updates.

        Takes at most `max_steps` steps where the algorithm can cut its unit (the loop passes
        the steps left to the budget or the next evaluation; a PPO rollout is taken whole),
        advances `self.num_steps` and returns metrics keyed as in metrics.csv.
        """
        raise NotImplementedError

    def _policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        """Normalised obs (B, obs_dim) float32 on the agent's device -> raw policy actions (B, act_dim)
        float32 or (B,) int64, on the same device (the policy of an agent that keeps the default `_act`)."""
        raise NotImplementedError

    def initial_state(self, n: int) -> State:
        """The policy's state for n fresh episodes on the agent's device (what `predict` starts from): tensors
        (layers, n, hidden), e.g. an LSTM's (h, c) zeros; () for a policy without state (the default)."""
        return ()

    def _act(self, obs: torch.Tensor, state: State, episode_start: torch.Tensor, deterministic: bool) -> Action:
        """The policy's step for `predict`, without gradients: normalised obs (B, ...) on the agent's device,
        `state` (`initial_state`'s shapes for B), episode_start (B,) bool (reset there first) -> `Action`
        (raw actions, log-probabilities or None, the state after the step). Default: `_policy_action`,
        the state left as it is."""
        return Action(self._policy_action(obs, deterministic), None, state)

    @property
    def stateful(self) -> bool:
        """Whether the policy carries a state from step to step (an LSTM: PPO's and A3C's lstm_hidden_size):
        `predict` then takes and returns it."""
        return bool(self.initial_state(1))

    def _extra_state(self) -> dict[str, Any]:
        """Algorithm-specific state for checkpoints beyond nets, optimizers and normaliser."""
        return {}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        """Restore what `_extra_state` returned."""

    # ----------------------------------------------------------------- acting
    def predict(
        self,
        obs: np.ndarray,
        state: tuple[torch.Tensor, ...] | None = None,
        episode_start: np.ndarray | bool | None = None,
        deterministic: bool = True,
    ) -> Any:
        """Actions in the environment's own units for one observation or a batch (Stable-Baselines3's
        signature; pass `deterministic` by keyword).

        The agent acts through its policy's `_act` from a state: one passed, or a fresh one
        (`initial_state`). An agent whose policy has no state (`stateful` False: the state is empty)
        returns the actions alone and takes no state. One with a state (PPO or A3C with
        lstm_hidden_size > 0) returns `(actions, state)`: pass that state back with the next observation
        of the same episodes, and `episode_start` True where an episode begins (its state is then reset).
        Without a state, predict starts fresh episodes: it never reuses the state of an earlier call on
        its own.

        Args:
            obs: (obs_dim,) or (B, obs_dim) raw observations; image frames (*obs_shape) or (B, *obs_shape),
                kept in the space's dtype.
            state: the state the previous call returned, a tuple of tensors (layers, B, hidden) (None:
                fresh episodes).
            episode_start: a bool, or (B,) bools, True where obs is an episode's first observation
                (None: all False; with no state, all are fresh anyway).
            deterministic: the mode (Categorical) or mean (Gaussian) instead of a sample.
        Returns:
            (act_dim,) / (B, act_dim) in the env's dtype for Box, an int / (B,) int64 for
            Discrete; an agent with a state returns (that, state). Observation statistics are not updated.
        Raises:
            InputError: observations of the wrong size; a state or episode_start for an agent without
                state (a positional `deterministic` lands there); a state of the wrong shape.
        """
        shape = self.observation_space.shape
        obs = np.asarray(obs, dtype=np.float32 if len(shape) == 1 else self.observation_space.dtype)
        single = obs.shape == shape
        batch = obs[None] if single else obs
        if batch.shape[1:] != shape:
            raise InputError(
                f"predict expects observations of shape {shape} or (B, {', '.join(map(str, shape))}), got {obs.shape}."
            )
        n = len(batch)
        fresh = self.initial_state(n)
        if not fresh and (state is not None or episode_start is not None):
            raise InputError(
                f"this {type(self).__name__} has a feed-forward policy: predict takes no state or episode_start "
                f"(got state={state!r:.40}, episode_start={episode_start!r:.40}); pass deterministic by keyword, "
                "predict(obs, deterministic=False)."
            )
        if state is None:
            state = fresh
        elif (
            not isinstance(state, tuple | list)
            or len(state) != len(fresh)
            or any(tuple(getattr(s, "shape", ())) != tuple(f.shape) for s, f in zip(state, fresh))
        ):
            raise InputError(
                f"state must be the tuple of {len(fresh)} tensors of shape {tuple(fresh[0].shape)} that predict "
                f"returned for {n} observation(s); got {type(state).__name__} "
                f"{[tuple(getattr(s, 'shape', ())) for s in state] if isinstance(state, tuple | list) else ''}."
            )
        else:
            state = tuple(torch.as_tensor(s, dtype=torch.float32, device=self.device) for s in state)
        starts = np.zeros(n, dtype=bool) if episode_start is None else np.asarray(episode_start, dtype=bool).reshape(-1)
        if starts.shape != (n,):
            raise InputError(f"episode_start must be a bool or {n} bools, one per observation; got {episode_start!r}.")
        x = self.obs_normalizer(batch).to(self.device)
        with torch.no_grad(), self.autocast():
            raw, _, state = self._act(x, state, torch.from_numpy(starts).to(self.device), deterministic)
        action = self.action_adapter.to_env(raw.cpu().numpy())
        action = action[0] if single else action
        return (action, state) if fresh else action

    def evaluate(self, episodes: int | None = None, deterministic: bool = True) -> dict[str, Any]:
        """Evaluate `episodes` episodes (default: the config's eval_episodes) on a fresh env seeded with
        seed + 10_000 (see `acrl.core.evaluation.evaluate`, which raises InputError for episodes < 1)."""
        return evaluate(
            self,
            self.env,
            self.config.eval_episodes if episodes is None else episodes,
            deterministic,
            seed=self.config.seed + EVAL_SEED_OFFSET,
        )

    def record_video(
        self,
        path: str | Path,
        episodes: int = 1,
        deterministic: bool = True,
        seed: int | None = None,
        max_steps: int | None = None,
        keep_frames: bool = False,
    ) -> dict[str, Any]:
        """Write `episodes` episodes of the policy to an MP4 (see `acrl.core.video.record_video`).

        The environment is the agent's own (a registered id or an env from `gym.make`), seeded
        by default as evaluation is (seed + 10_000), so the video shows the episodes that
        `evaluate` scores.
        """
        from acrl.core.video import record_video  # Pillow and imageio-ffmpeg load only when recording

        seed = self.config.seed + EVAL_SEED_OFFSET if seed is None else seed
        return record_video(self, self.env, path, episodes, deterministic, seed, max_steps, keep_frames)

    # ----------------------------------------------------------------- training
    def learn(
        self,
        total_steps: int | None = None,
        run_dir: str | Path | None = None,
        progress: bool = True,
        callbacks: Sequence[Callback] = (),
        label: str | None = None,
        **unknown: Any,
    ) -> Agent:
        """Train until `num_steps` reaches `total_steps` through the run loop (`acrl.core.loop`).

        With a `run_dir`, writes config.yaml, metrics.csv, episodes.csv (a row per training episode),
        TensorBoard events, checkpoints/latest.pt every `checkpoint_freq` steps and checkpoints/best.pt at each
        new best evaluation, then learning_curve.png, eval.json (the best checkpoint's
        evaluation and its step, and the last evaluation) and README.md (the model card) at the
        end. A loaded agent continues from its own `num_steps`.

        A Ctrl-C or SIGTERM (in the main thread) stops training at the end of the current
        iteration, where checkpoints/latest.pt is written, so that `acrl resume` continues
        from an iteration boundary; a second one stops at once.

        Args:
            total_steps: the budget (default: the config's; a loaded agent's own).
            run_dir: where to write the run (default: nowhere; nothing is saved).
            progress: show a progress bar.
            callbacks: `acrl.core.loop.Callback`s, told after each iteration and evaluation;
                one returning True ends the run early.
            label: the progress bar's description (e.g. "bcq on imperfect").
        Raises:
            InputError: an unknown keyword (the message names the valid ones), total_steps <= 0, a
                new run in a directory that holds one, or data the algorithm checks before training.
            TrainingError: a loss, statistic or parameter became NaN or infinite; the message
                names the step and the quantity. The last good checkpoint is kept.
            KeyboardInterrupt: after a Ctrl-C or SIGTERM, once that iteration (and with a
                run_dir, its checkpoint) is done.
        """
        if unknown:
            valid = list(inspect.signature(Agent.learn).parameters)[1:-1]
            said = "; ".join(
                f"{key!r}"
                + "".join(f" (did you mean {close}?)" for close in difflib.get_close_matches(key, valid, n=1))
                for key in unknown
            )
            raise InputError(
                f"learn() got an unknown keyword: {said}. It takes {', '.join(valid)}; hyperparameters "
                f"go to the constructor, e.g. {type(self).__name__}(env, learning_rate=...)."
            )
        if total_steps is not None:
            if total_steps <= 0:
                raise InputError(f"total_steps must be > 0, got {total_steps}.")
            self.total_steps = self.config.total_steps = total_steps
        run = Run(self, run_dir, progress, callbacks, label)  # checks the run directory, writes nothing yet
        self.before_learning()
        torch.set_num_threads(self.config.torch_threads)
        train([run])
        return self

    def before_learning(self) -> None:
        """Checks and preparation before a run starts and before anything is written (default: none).

        Raises:
            InputError: what the algorithm cannot train on (an offline dataset that does not fit).
        """

    @contextlib.contextmanager
    def training(self) -> Iterator[None]:
        """Held by the run loop while it calls `iteration` (A3C starts its workers here)."""
        yield

    def snapshot(self) -> Agent:
        """The agent as the loop evaluates and keeps it in best.pt: itself, whose weights only
        change inside `iteration` (A3C returns a frozen copy)."""
        return self

    def write_config(self, run_dir: Path) -> None:
        """Write run_dir/config.yaml (algorithm, what its steps count, full config; atomically), creating run_dir."""
        run = {"algo": self.algo, "step_unit": self.step_unit, "config": self.config.to_dict()}
        text = yaml.safe_dump(run, sort_keys=False)
        write_text_atomic(run_dir / "config.yaml", text)  # rewritten by a resume: its total_steps is the new budget

    # ----------------------------------------------------------------- checkpoints
    def state_dict(self, replay_buffer: bool = True) -> dict[str, Any]:
        """Everything training needs to continue: nets, optimizers, normaliser, counters.

        `replay_buffer` is for agents that keep one (`acrl.algos.off_policy`); others ignore it.
        """
        return {
            "nets": {k: v.state_dict() for k, v in self.nets.items()},
            "optimizers": {k: v.state_dict() for k, v in self.optimizers.items()},
            "obs_normalizer": self.obs_normalizer.state_dict(),
            "counters": {"num_steps": self.num_steps, "total_steps": self.total_steps},
            "best_eval": self.best_eval,
            "extra": self._extra_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore `state_dict()` output.

        Raises:
            InputError: the state does not fit this agent's networks (another env or config).
        """
        try:
            for key, net in self.nets.items():
                net.load_state_dict(state["nets"][key])
            for key, optimizer in self.optimizers.items():
                optimizer.load_state_dict(state["optimizers"][key])
            self.obs_normalizer.load_state_dict(state["obs_normalizer"])
            self.num_steps = int(state["counters"]["num_steps"])
            self.total_steps = int(state["counters"]["total_steps"])
            self.best_eval = state["best_eval"]
            self._load_extra_state(state["extra"])
        except (KeyError, RuntimeError, ValueError) as exc:
            raise InputError(
                f"the checkpoint does not match this {type(self).__name__} "
                f"(different environment or network sizes?): {exc}"
            ) from None

    def save(self, path: str | Path, replay_buffer: bool = True, run_files: dict[str, str] | None = None) -> None:
        """Write a checkpoint (atomically) that `load` and `acrl resume` can continue from.

        Args:
            path: the file to write (its directory is created).
            replay_buffer: include the replay buffer where the agent keeps one and its config
                asks for it (`save_replay_buffer`); the run loop passes False for best.pt.
            run_files: the run directory's history for latest.pt to carry (`acrl.core.checkpoint.RUN_FILES`).
        """
        state = self.state_dict(replay_buffer)
        save_checkpoint(path, self.algo, self.config.to_dict(), state, rng_state(self.rng), run_files)

    @classmethod
    def load(
        cls, path: str | Path, env: EnvSpec | None = None, device: str | None = None, precision: str | None = None
    ) -> Agent:
        """Rebuild an agent from a checkpoint, normaliser and RNG states included.

        Checkpoints are device-free: every tensor is read onto the CPU, then moved to the
        agent's device, so a checkpoint written on a GPU loads on a CPU-only machine.

        Args:
            path: a checkpoint file written by `save`.
            env: the environment, needed only for custom envs that are not registered ids
                (default: the checkpoint's `env_id`).
            device: where to put the agent, as a config's `device` (default: the device it was
                trained on, recorded in its config; pass "cpu" on a machine without that GPU).
            precision: "fp32" or "bf16" (default: the run's; pass "fp32" on hardware without bfloat16).
        Raises:
            InputError: a missing, corrupt or mismatched checkpoint (see `load_checkpoint`), one of
                another algorithm (`acrl.load` rebuilds any), or a precision this hardware cannot run.
        """
        payload = load_checkpoint(path)
        if payload["algo"] != cls.algo:
            raise InputError(
                f"{path} is a {payload['algo']} checkpoint, not {cls.algo}; "
                f"load it with acrl.load or the {payload['algo'].upper()} class."
            )
        config = update_config(cls.config_class(), payload["config"], origin=str(path))
        if device is not None:
            config.device = device
        if precision is not None:
            config.precision = precision
        if env is None:
            env_family(config.env_id)  # registers a family's ids (POPGym, ALE) in a fresh process
        if env is None and config.env_id not in gym.registry:
            raise InputError(
                f"{path} was trained on the custom environment {config.env_id!r}, which is not a "
                "registered id: pass it explicitly, e.g. load(path, env=make_my_env)."
            )
        agent = cls(env if env is not None else config.env_id, config=config)
        agent.load_state_dict(payload["state"])
        set_rng_state(payload["rng"], agent.rng)
        return agent


class ActorCriticAgent(Agent):
    """Base of the agents on one `acrl.parts.actor_critic.ActorCritic` (PPO, A3C, IMPALA, APPO): `_build` sets
    `self.model`, and `predict` acts through it, carrying its state from step to step (an LSTM's; empty without
    one). No algorithm of this family asks whether its policy is recurrent."""

    model: ActorCritic

    def initial_state(self, n: int) -> State:
        """The model's state for n fresh episodes on the agent's device: an LSTM's (h, c), zeros (layers, n,
        hidden) float32 each; () without an LSTM (`ActorCritic.initial_state`)."""
        return self.model.initial_state(n, self.device)

    def _act(self, obs: torch.Tensor, state: State, episode_start: torch.Tensor, deterministic: bool) -> Action:
        """The model's step without log-probabilities (`ActorCritic.act`): normalised obs (B, ...), `state`,
        episode_start (B,) bool -> `Action` (raw actions (B,) int64 or (B, act_dim) float32, None, the state
        after the step)."""
        return self.model.act(obs, state, episode_start, deterministic, with_log_prob=False)
