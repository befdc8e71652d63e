"""What every acrl agent shares: construction and checks, predict, the learn loop, save and load.

An algorithm subclasses `Agent` and provides `_build()` (networks in `self.nets`, optimizers in
`self.optimizers`, optional `self.obs_normalizer`), `_iteration()` (collect and/or update,
advance `self.num_steps`, return metrics) and `_policy_action()` (raw actions for predict).
Everything else (evaluation, the best and latest checkpoints, NaN guards, the run directory,
logging, the learning-curve plot) lives here once. A3C overrides `learn` because its training
happens in worker processes, and reuses the rest.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
import yaml
from torch import nn

from acrl.checkpoint import load_checkpoint, rng_state, save_checkpoint, set_rng_state
from acrl.config import RunConfig, update_config
from acrl.envs import ActionAdapter, EnvSpec, check_spaces, env_factory
from acrl.errors import InputError, TrainingError
from acrl.evaluation import evaluate
from acrl.logging import Logger
from acrl.normalization import ObservationNormalizer

EVAL_SEED_OFFSET = 10_000
"""Evaluation environments are seeded with seed + 10_000, apart from training (checklist 11)."""


def seed_everything(seed: int) -> None:
    """Seed python's `random`, numpy's global generator and torch (DESIGN.md checklist item 10)."""
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

    def __init__(self, env: EnvSpec | None = None, config: RunConfig | None = None, **hyperparameters: Any):
        if env is None:
            env = hyperparameters.get("env_id", (config or self.config_class()).env_id)
        factory, name = env_factory(env)
        values = dict(hyperparameters)
        if isinstance(env, str) or "env_id" not in values:
            values["env_id"] = name
        self.config = update_config(config or self.config_class(), values, origin=type(self).__name__)
        self.config.validate()
        self.env = env
        probe = factory()
        check_spaces(probe, self.algo.upper(), self.action_kinds)
        self.observation_space, self.action_space = probe.observation_space, probe.action_space
        probe.close()
        self.obs_dim = int(self.observation_space.shape[0])
        self.discrete = isinstance(self.action_space, gym.spaces.Discrete)
        self.act_dim = int(self.action_space.n) if self.discrete else int(self.action_space.shape[0])
        self.action_adapter = ActionAdapter(self.action_space)
        torch.set_num_threads(self.config.torch_threads)  # also before init: QR (orthogonal init) depends on it
        seed_everything(self.config.seed)
        self.rng = np.random.default_rng(self.config.seed)
        self.num_steps = 0
        self.total_steps = self.config.total_steps
        self.best_eval: dict[str, Any] | None = None
        self.last_eval_step: int | None = None
        self.nets: dict[str, nn.Module] = {}
        self.optimizers: dict[str, torch.optim.Optimizer] = {}
        self.obs_normalizer: ObservationNormalizer | None = None
        self._build()

    # ----------------------------------------------------------------- subclass hooks
    def _build(self) -> None:
        """Create networks, optimizers, normaliser and (for online algorithms) environments."""
        raise NotImplementedError

    def _iteration(self) -> dict[str, float]:
        """One unit of training (a rollout and its update, or a batch of updates).

        Advances `self.num_steps` and returns metrics keyed as in DESIGN.md.
        """
        raise NotImplementedError

    def _policy_action(self, obs: torch.Tensor, deterministic: bool) -> np.ndarray:
        """Normalised obs (B, obs_dim) float32 -> raw policy actions (B, act_dim) or (B,)."""
        raise NotImplementedError

    def _extra_state(self) -> dict[str, Any]:
        """Algorithm-specific state for checkpoints beyond nets, optimizers and normaliser."""
        return {}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        """Restore what `_extra_state` returned."""

    # ----------------------------------------------------------------- acting
    def predict(self, obs: np.ndarray, deterministic: bool = True) -> np.ndarray:
        """Actions in the environment's own units for one observation or a batch.

        Args:
            obs: (obs_dim,) or (B, obs_dim) raw observations.
            deterministic: the mode (Categorical) or mean (Gaussian) instead of a sample.
        Returns:
            (act_dim,) / (B, act_dim) in the env's dtype for Box, an int / (B,) int64 for
            Discrete. Observation statistics are not updated.
        Raises:
            InputError: observations of the wrong size.
        """
        obs = np.asarray(obs, dtype=np.float32)
        single = obs.ndim == 1
        batch = obs[None] if single else obs
        if batch.ndim != 2 or batch.shape[1] != self.obs_dim:
            raise InputError(f"predict expects observations of shape ({self.obs_dim},) or (B, {self.obs_dim}), "
                             f"got {obs.shape}.")
        x = self.obs_normalizer(batch) if self.obs_normalizer is not None else torch.from_numpy(batch)
        with torch.no_grad():
            raw = self._policy_action(x, deterministic)
        action = self.action_adapter.to_env(raw)
        return action[0] if single else action

    def evaluate(self, episodes: int | None = None, deterministic: bool = True) -> dict[str, Any]:
        """Evaluate on a fresh env seeded with seed + 10_000 (see `acrl.evaluation.evaluate`)."""
        return evaluate(self, self.env, episodes or self.config.eval_episodes, deterministic,
                        seed=self.config.seed + EVAL_SEED_OFFSET)

    # ----------------------------------------------------------------- training
    def learn(self, total_steps: int | None = None, run_dir: str | Path | None = None,
              progress: bool = True) -> Agent:
        """Train until `num_steps` reaches `total_steps`, evaluating and checkpointing on the way.

        With a `run_dir`, writes config.yaml, metrics.csv, TensorBoard events,
        checkpoints/latest.pt every `checkpoint_freq` steps and checkpoints/best.pt at each
        new best evaluation, then learning_curve.png and eval.json (the best checkpoint's
        evaluation) at the end. A resumed agent continues from its own `num_steps`.

        A Ctrl-C or SIGTERM (in the main thread) stops training at the end of the current
        iteration, where checkpoints/latest.pt is written, so that `acrl resume` continues
        from an iteration boundary; a second one stops at once.

        Raises:
            TrainingError: a loss, statistic or parameter became NaN or infinite; the message
                names the step and the quantity. The last good checkpoint is kept.
            KeyboardInterrupt: after a Ctrl-C or SIGTERM, once that iteration (and with a
                run_dir, its checkpoint) is done.
        """
        run_dir = self._start_learning(total_steps, run_dir)
        logger = Logger(run_dir, self.total_steps, start_step=self.num_steps, progress=progress)
        cfg = self.config
        try:
            with _stop_after_iteration() as stop:
                while self.num_steps < self.total_steps:
                    before, started = self.num_steps, time.perf_counter()
                    metrics = self._iteration()
                    metrics["time/fps"] = (self.num_steps - before) / max(time.perf_counter() - started, 1e-9)
                    self._check_finite(metrics)
                    eval_due = cfg.eval_freq and self.num_steps // cfg.eval_freq > before // cfg.eval_freq
                    if eval_due or (run_dir is not None and self.num_steps >= self.total_steps):  # the final one
                        metrics.update(self._evaluate_and_keep_best(run_dir))
                    logger.log(self.num_steps, metrics)
                    checkpoint_due = self.num_steps // cfg.checkpoint_freq > before // cfg.checkpoint_freq
                    if run_dir is not None and (checkpoint_due or stop):
                        self.save(run_dir / "checkpoints" / "latest.pt")
                    if stop and self.num_steps < self.total_steps:  # at the budget, finish normally
                        raise KeyboardInterrupt(f"{stop[0]} at step {self.num_steps}")
            if run_dir is not None:
                self._finish_run(run_dir, logger)
        finally:
            logger.close()
        return self

    def _start_learning(self, total_steps: int | None, run_dir: str | Path | None) -> Path | None:
        """Set the budget, write config.yaml and set torch's threads: the start of every `learn`.

        Raises:
            InputError: total_steps <= 0.
        """
        if total_steps is not None:
            if total_steps <= 0:
                raise InputError(f"total_steps must be > 0, got {total_steps}.")
            self.total_steps = self.config.total_steps = total_steps
        run_dir = Path(run_dir) if run_dir is not None else None
        if run_dir is not None:
            self.write_config(run_dir)
        torch.set_num_threads(self.config.torch_threads)
        return run_dir

    def _evaluate_and_keep_best(self, run_dir: Path | None) -> dict[str, float]:
        result = self.evaluate()
        self.last_eval_step = self.num_steps
        if self.best_eval is None or result["return_mean"] > self.best_eval["return_mean"]:
            self.best_eval = {**result, "step": self.num_steps}
            if run_dir is not None:
                self.save(run_dir / "checkpoints" / "best.pt")
        metrics = {"eval/return_mean": result["return_mean"], "eval/return_std": result["return_std"]}
        if "y_displacement_mean" in result:
            metrics["eval/y_displacement_mean"] = result["y_displacement_mean"]
        return metrics

    def _finish_run(self, run_dir: Path, logger: Logger) -> None:
        if self.last_eval_step != self.num_steps:
            logger.log(self.num_steps, self._evaluate_and_keep_best(run_dir))
        self.save(run_dir / "checkpoints" / "latest.pt")
        best = {k: v for k, v in self.best_eval.items() if k != "step"}
        write_json_atomic(run_dir / "eval.json", best)
        from acrl.plotting import plot_runs  # matplotlib loads only when a run finishes

        plot_runs([run_dir], run_dir / "learning_curve.png")

    def _check_finite(self, metrics: dict[str, float]) -> None:
        for key, value in metrics.items():
            if not math.isfinite(value):
                raise TrainingError(f"step {self.num_steps}: {key} is {value}; stopping. "
                                    "The last good checkpoint is kept.")
        for net_name, net in self.nets.items():
            for name, param in net.named_parameters():
                if not torch.isfinite(param).all():
                    raise TrainingError(f"step {self.num_steps}: parameter {net_name}.{name} is not finite; "
                                        "stopping. The last good checkpoint is kept.")

    def write_config(self, run_dir: Path) -> None:
        """Write run_dir/config.yaml (algorithm and full config, atomically), creating run_dir."""
        run_dir.mkdir(parents=True, exist_ok=True)
        path = run_dir / "config.yaml"  # rewritten by a resume: its total_steps is the new budget
        text = yaml.safe_dump({"algo": self.algo, "config": self.config.to_dict()}, sort_keys=False)
        tmp = path.with_suffix(".yaml.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)

    # ----------------------------------------------------------------- checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Everything training needs to continue: nets, optimizers, normaliser, counters."""
        state = {
            "nets": {k: v.state_dict() for k, v in self.nets.items()},
            "optimizers": {k: v.state_dict() for k, v in self.optimizers.items()},
            "counters": {"num_steps": self.num_steps, "total_steps": self.total_steps},
            "best_eval": self.best_eval,
            "extra": self._extra_state(),
        }
        if self.obs_normalizer is not None:
            state["obs_normalizer"] = self.obs_normalizer.state_dict()
        return state

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
            if self.obs_normalizer is not None:
                self.obs_normalizer.load_state_dict(state["obs_normalizer"])
            self.num_steps = int(state["counters"]["num_steps"])
            self.total_steps = int(state["counters"]["total_steps"])
            self.best_eval = state["best_eval"]
            self._load_extra_state(state["extra"])
        except (KeyError, RuntimeError, ValueError) as exc:
            raise InputError(f"the checkpoint does not match this {type(self).__name__} "
                             f"(different environment or network sizes?): {exc}") from None

    def save(self, path: str | Path) -> None:
        """Write a checkpoint (atomically) that `load` and `acrl resume` can continue from."""
        save_checkpoint(path, self.algo, self.config.to_dict(), self.state_dict(), rng_state(self.rng))

    @classmethod
    def load(cls, path: str | Path, env: EnvSpec | None = None) -> Agent:
        """Rebuild an agent from a checkpoint, normaliser and RNG states included.

        Args:
            path: a checkpoint file written by `save`.
            env: the environment, needed only for custom envs that are not registered ids
                (default: the checkpoint's `env_id`).
        Raises:
            InputError: a missing, corrupt or mismatched checkpoint (see `load_checkpoint`).
        """
        payload = load_checkpoint(path)
        if cls is Agent:
            from acrl.algos import get_algorithm
            cls = get_algorithm(payload["algo"])
        elif payload["algo"] != cls.algo:
            raise InputError(f"{path} is a {payload['algo']} checkpoint, not {cls.algo}; "
                             f"load it with acrl.load or the {payload['algo'].upper()} class.")
        config = update_config(cls.config_class(), payload["config"], origin=str(path))
        if env is None and config.env_id not in gym.registry:
            raise InputError(f"{path} was trained on the custom environment {config.env_id!r}, which is not a "
                             "registered id: pass it explicitly, e.g. load(path, env=make_my_env).")
        agent = cls(env if env is not None else config.env_id, config=config)
        agent.load_state_dict(payload["state"])
        set_rng_state(payload["rng"], agent.rng)
        return agent


@contextlib.contextmanager
def _stop_after_iteration() -> Iterator[list[str]]:
    """Defer Ctrl-C and SIGTERM to the end of the current training iteration.

    Yields a list that the first signal appends its name to (the learn loop checks it after
    each iteration, saves and raises KeyboardInterrupt); a second signal raises
    KeyboardInterrupt at once. Outside the main thread, where Python cannot install signal
    handlers, signals keep their usual behaviour.
    """
    received: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if received:
            raise KeyboardInterrupt(f"second {name}")
        received.append(name)
        print(f"\nacrl: {name}: stopping at the end of this iteration (checkpoints/latest.pt is written "
              "there); send it again to stop at once.", file=sys.stderr, flush=True)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write `data` as indented JSON to `path` via a temp file and `os.replace`."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)
