"""DDPG (Lillicrap et al. 2016, arXiv:1509.02971) and TD3 (Fujimoto et al. 2018, arXiv:1802.09477).

DDPG learns a deterministic policy mu(s) and a critic Q(s, a) from a replay buffer:

    critic:  minimise (Q(s, a) - y)^2,  y = r + gamma * (1 - terminated) * Q'(s', mu'(s'))   (Alg. 1)
    actor:   maximise Q(s, mu(s))                       (deterministic policy gradient, Eq. 6)
    targets: theta' <- tau * theta + (1 - tau) * theta'  (soft updates, Sec. 3)

with the simplifications of the BCQ authors' DDPG (github.com/sfujim/BCQ, DDPG.py, the
behavioral agent of Fujimoto et al. 2019): 400-300 ReLU networks with [s, a] at the critic's
input, Adam lr 1e-3 for both networks and no weight decay, tau 0.005, batch 100, Gaussian
exploration noise N(0, expl_noise * max_action) instead of Ornstein-Uhlenbeck, uniformly random
actions for the first `start_steps` steps, then one gradient update per environment step.

TD3 is the same agent with three changes (Fujimoto et al. 2018, Sec. 4 and Algorithm 1):
clipped double Q-learning (twin critics, y uses min(Q1', Q2'), Eq. 10), target policy
smoothing (a' = clip(mu'(s') + clip(eps, -c, c), -1, 1), eps ~ N(0, sigma), Eq. 14) and
delayed policy updates (actor and target networks updated every `policy_delay` critic updates).

Correctness details (DESIGN.md checklist items 1, 9, 10): the replay buffer keeps terminated and
truncated apart and a time-limit truncation bootstraps from the true final observation
(`info["final_obs"]` of the same-step autoreset vector env); target networks start as exact
copies and are soft-updated in place under no_grad; python, numpy, torch, the environments
and the agent's own generator (exploration noise, random actions, minibatch indices) are seeded.

Actions live in policy units [-1, 1] per dimension inside the agent (the tanh actor's range,
the replay buffer, the noise); `acrl.envs.ActionAdapter` maps them to the environment's Box
bounds, so expl_noise = 0.1 is N(0, 0.1 * max_action) in environment units for a symmetric Box.

Offline mode (`dataset=PATH`): no environment interaction; each iteration performs gradient
updates on minibatches of a fixed HDF5 dataset (`acrl.datasets`) and `num_steps` counts updates.
This is the "plain off-policy learning on the same data" baseline of the BCQ paper
(Fujimoto et al. 2019, Sec. 3 and Fig. 2), which fails from extrapolation error.

Checkpoints hold the networks, target networks, optimizers, the update counter, the episode
statistics and RNG states. The replay buffer is not saved by default: a resumed run starts with
an empty buffer and refills it with `start_steps` uniformly random steps before updating again.
With `save_replay_buffer=True` the filled part of the buffer is stored inside every checkpoint
except `best.pt` (which is for evaluation), and a resume continues with it exactly.
"""

from __future__ import annotations

import warnings
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from acrl.agent import Agent
from acrl.buffers import ReplayBuffer
from acrl.config import RunConfig, in_unit_interval, positive
from acrl.datasets import dataset_env_id, load_dataset
from acrl.envs import EnvSpec, make_vec_env
from acrl.errors import InputError
from acrl.nets import DeterministicActor, QNet, TwinQ
from acrl.optim import hard_update, polyak_update

_BUFFER_KEYS = ("observations", "actions", "rewards", "next_observations", "terminated", "truncated")


@dataclass
class DDPGConfig(RunConfig):
    """DDPG hyperparameters; defaults are the BCQ authors' DDPG (sfujim/BCQ DDPG.py, main.py).

    Attributes:
        env_id: environment with a bounded 1-D Box action space (offline: used for evaluation).
        total_steps: environment steps online; gradient updates offline (`dataset` set).
        learning_rate: Adam step size of actor and critic (1e-3, torch's default in DDPG.py).
        batch_size: transitions per gradient update (100).
        gamma: discount (0.99).
        tau: soft target update weight per update (0.005).
        buffer_size: replay capacity in transitions (1e6); offline: ignored (the dataset's size).
        start_steps: uniformly random actions until the buffer holds this many transitions,
            and no update before (25e3 in BCQ's main.py; presets use less for small tasks).
        expl_noise: std of the Gaussian exploration noise as a fraction of max_action (0.1).
        hidden_sizes: hidden ReLU layers of actor and critic (400, 300).
        iteration_steps: environment steps (offline: updates) per `_iteration`, i.e. per row of
            metrics.csv; evaluation and checkpoints happen at the end of the iteration that
            crosses `eval_freq` / `checkpoint_freq`.
        dataset: path of an offline dataset (HDF5, D4RL keys; see `acrl.datasets`). When set,
            the agent learns from it only and never steps an environment except to evaluate.
        save_replay_buffer: store the replay buffer in latest.pt (not best.pt) so that a resume
            continues with it; off by default (a resume refills with random steps).
    """

    env_id: str = "Pendulum-v1"
    eval_freq: int = 5_000
    learning_rate: float = 1e-3
    batch_size: int = 100
    gamma: float = 0.99
    tau: float = 0.005
    buffer_size: int = 1_000_000
    start_steps: int = 25_000
    expl_noise: float = 0.1
    hidden_sizes: tuple[int, ...] = (400, 300)
    iteration_steps: int = 1_000
    dataset: str | None = None
    save_replay_buffer: bool = False

    def validate(self) -> None:
        """Raise `InputError` for values DDPG cannot run with (see the attribute list)."""
        super().validate()
        positive(self, "learning_rate", "batch_size", "buffer_size", "iteration_steps")
        in_unit_interval(self, "gamma", "tau")
        if self.start_steps < 0 or self.expl_noise < 0:
            raise InputError(f"start_steps and expl_noise must be >= 0, got {self.start_steps} "
                             f"and {self.expl_noise}.")
        if self.dataset is None and self.buffer_size < max(self.batch_size, self.start_steps):
            raise InputError(f"buffer_size ({self.buffer_size}) must hold at least batch_size "
                             f"({self.batch_size}) and start_steps ({self.start_steps}) transitions.")
        if not self.hidden_sizes or any(h <= 0 for h in self.hidden_sizes):
            raise InputError(f"hidden_sizes must be positive layer widths, got {list(self.hidden_sizes)}.")


@dataclass
class TD3Config(DDPGConfig):
    """TD3 hyperparameters; defaults from Fujimoto et al. 2018, Sec. 6.1 and Appendix C.

    Attributes (besides DDPGConfig's):
        policy_noise: std of the target policy smoothing noise, policy units (0.2).
        noise_clip: the smoothing noise is clipped to [-noise_clip, noise_clip] (0.5).
        policy_delay: critic updates per actor and target update (d = 2).
    """

    policy_noise: float = 0.2
    noise_clip: float = 0.5
    policy_delay: int = 2

    def validate(self) -> None:
        """Raise `InputError` for values TD3 cannot run with (see the attribute list)."""
        super().validate()
        positive(self, "policy_delay")
        if self.policy_noise < 0 or self.noise_clip < 0:
            raise InputError(f"policy_noise and noise_clip must be >= 0, got {self.policy_noise} "
                             f"and {self.noise_clip}.")


def td_target(rewards: torch.Tensor, not_done: torch.Tensor, next_q: torch.Tensor, gamma: float) -> torch.Tensor:
    """One-step TD target y = r + gamma * not_done * Q'(s', a') (Lillicrap et al. 2016, Alg. 1).

    Args:
        rewards, not_done, next_q: (B,) float32; not_done = 1 - terminated, so a transition cut
            by a time limit still bootstraps (DESIGN.md checklist item 1).
        gamma: discount in [0, 1].
    Returns:
        (B,) float32 targets.
    """
    return rewards + gamma * not_done * next_q


def smooth_target_actions(actions: torch.Tensor, policy_noise: float, noise_clip: float) -> torch.Tensor:
    """TD3 target policy smoothing: clip(a' + clip(eps, -c, c), -1, 1), eps ~ N(0, policy_noise).

    Fujimoto et al. 2018, Sec. 5.3, Eq. 14. Actions (B, act_dim) float32 in policy units
    [-1, 1]; the noise comes from torch's global generator. Returns (B, act_dim) float32.
    """
    noise = (torch.randn_like(actions) * policy_noise).clamp(-noise_clip, noise_clip)
    return (actions + noise).clamp(-1.0, 1.0)


class DDPG(Agent):
    """DDPG agent: `DDPG(env="Pendulum-v1", seed=0, **hyperparameters).learn(total_steps)`.

    Offline (no environment interaction, `num_steps` counts gradient updates):
    `DDPG(dataset="final.hdf5", seed=0).learn(100_000)`. Without `env`, the environment is
    the dataset's `env_id` attribute (else `env_id` / the config's); it is used to check the
    dataset's spaces and to evaluate.

    Raises:
        InputError: see `Agent` and `DDPGConfig.validate`; a Discrete or unbounded action space
            (use PPO or A3C online, or discrete BCQ offline); at `learn`, a dataset that is
            missing, corrupt or does not fit the environment's spaces.
    """

    algo: ClassVar[str] = "ddpg"
    config_class: ClassVar[type[RunConfig]] = DDPGConfig
    action_kinds = (gym.spaces.Box,)
    twin: ClassVar[bool] = False
    """Twin critics, target policy smoothing and delayed actor updates (TD3)."""
    config: DDPGConfig

    def __init__(self, env: EnvSpec | None = None, config: RunConfig | None = None, **hyperparameters: Any):
        dataset = hyperparameters.get("dataset", getattr(config, "dataset", None))
        if env is None and "env_id" not in hyperparameters and dataset is not None:
            env = dataset_env_id(dataset)
        try:
            super().__init__(env, config, **hyperparameters)
        except InputError as exc:
            if "action space" not in str(exc):
                raise
            raise InputError(f"{exc} {self.algo.upper()} needs continuous actions: for a Discrete action "
                             "space use PPO or A3C (online) or discrete BCQ (offline).") from None

    def _build(self) -> None:
        cfg = self.config
        if not self.action_space.is_bounded():
            raise InputError(f"{self.algo.upper()}'s tanh actor needs finite action bounds; this "
                             f"environment has {self.action_space}. Wrap it with "
                             "gymnasium.wrappers.ClipAction or RescaleAction.")
        critic_class = TwinQ if self.twin else QNet
        self.actor = DeterministicActor(self.obs_dim, self.act_dim, cfg.hidden_sizes)
        self.critic: nn.Module = critic_class(self.obs_dim, self.act_dim, cfg.hidden_sizes)
        self.actor_target = DeterministicActor(self.obs_dim, self.act_dim, cfg.hidden_sizes)
        self.critic_target: nn.Module = critic_class(self.obs_dim, self.act_dim, cfg.hidden_sizes)
        for target, source in ((self.actor_target, self.actor), (self.critic_target, self.critic)):
            hard_update(target, source)  # exact copies at the start (checklist item 9)
            target.requires_grad_(False)
        self.nets = {"actor": self.actor, "critic": self.critic,
                     "actor_target": self.actor_target, "critic_target": self.critic_target}
        # foreach: one fused call per step instead of a Python loop over tensors (~30% faster on CPU)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=cfg.learning_rate, foreach=True)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=cfg.learning_rate, foreach=True)
        self._critic_params = list(self.critic.parameters())
        self.optimizers = {"actor": self.actor_optimizer, "critic": self.critic_optimizer}
        self.updates = 0
        """Critic updates so far (TD3's policy delay counts these)."""
        self.episode_returns: deque[float] = deque(maxlen=100)
        self.episode_lengths: deque[float] = deque(maxlen=100)
        self.offline = cfg.dataset is not None
        self._saving_to: Path | None = None
        if self.offline:
            self.envs = None
            self.buffer: ReplayBuffer | None = None  # loaded by `load_data` (at the first `learn`)
        else:
            self.envs = make_vec_env(self.env, cfg.n_envs)
            self._obs, _ = self.envs.reset(seed=cfg.seed)
            self.envs.action_space.seed(cfg.seed)
            self.buffer = ReplayBuffer(cfg.buffer_size, self.obs_dim, (self.act_dim,))

    # ----------------------------------------------------------------- data
    def load_data(self) -> ReplayBuffer:
        """Load the offline dataset into a ReplayBuffer (once) and return it.

        Actions are converted from environment units to policy units [-1, 1]; `terminals`
        become `terminated` and `timeouts` `truncated`, so only terminals stop bootstrapping.
        A dataset whose `env_id` attribute differs from the agent's environment only warns
        (the spaces are checked strictly).

        Raises:
            InputError: not an offline agent; a missing, corrupt or mismatched dataset.
        """
        if not self.offline:
            raise InputError(f"this {self.algo.upper()} learns online; pass dataset=PATH to learn offline.")
        if self.buffer is None:
            data = load_dataset(self.config.dataset, self.observation_space, self.action_space)
            if data.attrs.get("env_id") not in (None, "unknown", self.config.env_id):
                warnings.warn(f"{self.config.dataset} was collected on {data.attrs['env_id']}; this agent "
                              f"evaluates on {self.config.env_id}.", stacklevel=2)
            buffer = ReplayBuffer(len(data), self.obs_dim, (self.act_dim,))
            buffer.add(data.observations, self.action_adapter.to_policy(data.actions), data.rewards,
                       data.next_observations, data.terminals, data.timeouts)
            self.buffer = buffer
        return self.buffer

    def learn(self, total_steps: int | None = None, run_dir: str | Path | None = None,
              progress: bool = True) -> DDPG:
        """`Agent.learn`; an offline agent loads (and checks) its dataset first, before any file is written."""
        if self.offline:
            self.load_data()
        elif (total_steps or self.total_steps) <= self.config.start_steps:
            warnings.warn(f"total_steps {total_steps or self.total_steps} <= start_steps {self.config.start_steps}: "
                          "every action will be uniformly random and no gradient update will happen. Train "
                          "longer or lower start_steps (--set start_steps=1000).", stacklevel=2)
        super().learn(total_steps, run_dir, progress)
        return self

    # ----------------------------------------------------------------- acting
    def _policy_action(self, obs: torch.Tensor, deterministic: bool) -> np.ndarray:
        actions = self.actor(obs)
        if not deterministic:
            actions = (actions + self.config.expl_noise * torch.randn_like(actions)).clamp(-1.0, 1.0)
        return actions.numpy()

    @torch.no_grad()
    def _explore(self, obs: np.ndarray) -> np.ndarray:
        """Behaviour actions (n_envs, act_dim) in policy units: uniform while the buffer holds
        fewer than start_steps transitions, then mu(s) + N(0, expl_noise) clipped to [-1, 1]."""
        cfg = self.config
        if len(self.buffer) < cfg.start_steps:
            return self.rng.uniform(-1.0, 1.0, (len(obs), self.act_dim)).astype(np.float32)
        actions = self.actor(torch.as_tensor(obs, dtype=torch.float32)).numpy()
        noise = self.rng.normal(0.0, cfg.expl_noise, actions.shape)
        return np.clip(actions + noise, -1.0, 1.0).astype(np.float32)

    def collect_step(self) -> None:
        """Step the vector env once with exploration actions and store the n_envs transitions.

        Ended episodes store the true final observation (`info["final_obs"]`) as
        next_observation, with terminated and truncated kept apart (checklist item 1).
        """
        actions = self._explore(self._obs)
        next_obs, rewards, terminated, truncated, info = self.envs.step(self.action_adapter.to_env(actions))
        real_next = next_obs
        ended = np.flatnonzero(terminated | truncated)
        if ended.size:
            real_next = next_obs.copy()
            for i in ended:
                real_next[i] = info["final_obs"][i]
        self.buffer.add(self._obs, actions, rewards, real_next, terminated, truncated)
        self._obs = next_obs
        self.num_steps += len(actions)
        if "_episode" in info:
            done = info["_episode"]
            self.episode_returns.extend(info["episode"]["r"][done].tolist())
            self.episode_lengths.extend(info["episode"]["l"][done].tolist())

    # ----------------------------------------------------------------- learning
    @torch.no_grad()
    def compute_target(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """TD targets (B,) for a replay batch (keys as `ReplayBuffer.sample`).

        DDPG: y = r + gamma * not_done * Q'(s', mu'(s')) (Lillicrap et al. 2016, Alg. 1).
        TD3: a' smoothed by `smooth_target_actions`, y = r + gamma * not_done * min(Q1', Q2')(s', a')
        (Fujimoto et al. 2018, Eq. 10 and 14).
        """
        cfg = self.config
        next_obs = batch["next_observations"]
        next_actions = self.actor_target(next_obs)
        if self.twin:
            next_actions = smooth_target_actions(next_actions, cfg.policy_noise, cfg.noise_clip)
            next_q = torch.min(*self.critic_target(next_obs, next_actions))
        else:
            next_q = self.critic_target(next_obs, next_actions)
        return td_target(batch["rewards"], batch["not_done"], next_q, cfg.gamma)

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One gradient update from a replay batch; returns train/ metrics of this update.

        Critic: MSE to `compute_target` (TD3: summed over both critics). Actor (every update for
        DDPG, every `policy_delay`-th for TD3): minimise -Q1(s, mu(s)), then soft-update both
        target networks in place with `tau` (checklist item 9).
        Keys: train/value_loss, train/q_mean, and train/policy_loss when the actor moved.
        """
        cfg = self.config
        target = self.compute_target(batch)
        obs, actions = batch["observations"], batch["actions"]
        q = self.critic(obs, actions)
        qs = q if self.twin else (q,)
        value_loss = sum((qi - target).square().mean() for qi in qs)
        self.critic_optimizer.zero_grad(set_to_none=True)
        value_loss.backward()
        self.critic_optimizer.step()
        self.updates += 1
        metrics = {"train/value_loss": value_loss.item(), "train/q_mean": qs[0].detach().mean().item()}
        if not self.twin or self.updates % cfg.policy_delay == 0:
            for p in self._critic_params:  # the actor's loss needs no critic gradients
                p.requires_grad_(False)
            policy_loss = -self.critic.q1(obs, self.actor(obs)).mean()
            self.actor_optimizer.zero_grad(set_to_none=True)
            policy_loss.backward()
            self.actor_optimizer.step()
            for p in self._critic_params:
                p.requires_grad_(True)
            polyak_update(self.critic_target, self.critic, cfg.tau)
            polyak_update(self.actor_target, self.actor, cfg.tau)
            metrics["train/policy_loss"] = policy_loss.item()
        return metrics

    def _iteration(self) -> dict[str, float]:
        cfg = self.config
        budget = min(cfg.iteration_steps, self.total_steps - self.num_steps)
        stats: dict[str, list[float]] = {}
        if self.offline:
            buffer = self.load_data()
            for _ in range(budget):
                for key, value in self.update(buffer.sample(cfg.batch_size, self.rng)).items():
                    stats.setdefault(key, []).append(value)
            self.num_steps += budget
        else:
            end = self.num_steps + budget
            while self.num_steps < end:
                self.collect_step()
                if len(self.buffer) >= max(cfg.start_steps, cfg.batch_size):
                    for _ in range(cfg.n_envs):  # one update per collected transition
                        for key, value in self.update(self.buffer.sample(cfg.batch_size, self.rng)).items():
                            stats.setdefault(key, []).append(value)
        metrics = {key: float(np.mean(values)) for key, values in stats.items()}
        if self.episode_returns:
            metrics["rollout/ep_return_mean"] = float(np.mean(self.episode_returns))
            metrics["rollout/ep_len_mean"] = float(np.mean(self.episode_lengths))
        return metrics

    # ----------------------------------------------------------------- checkpoints
    def save(self, path: str | Path) -> None:
        """`Agent.save`; with save_replay_buffer, the buffer goes into every file but best.pt."""
        self._saving_to = Path(path)
        try:
            super().save(path)
        finally:
            self._saving_to = None

    def _extra_state(self) -> dict[str, Any]:
        state: dict[str, Any] = {"updates": self.updates, "episode_returns": list(self.episode_returns),
                                 "episode_lengths": list(self.episode_lengths)}
        keep = self._saving_to is None or self._saving_to.name != "best.pt"
        if self.config.save_replay_buffer and not self.offline and keep:
            size = len(self.buffer)
            state["replay_buffer"] = {
                **{key: torch.from_numpy(getattr(self.buffer, key)[:size].copy()) for key in _BUFFER_KEYS},
                "position": self.buffer.position, "size": size}
        return state

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self.updates = int(state["updates"])
        self.episode_returns.extend(state["episode_returns"])
        self.episode_lengths.extend(state["episode_lengths"])
        if self.offline:
            return
        saved = state.get("replay_buffer")
        if saved is not None:
            size = int(saved["size"])
            if size > self.buffer.capacity:
                raise InputError(f"the checkpoint's replay buffer holds {size} transitions, more than "
                                 f"buffer_size {self.buffer.capacity}.")
            for key in _BUFFER_KEYS:
                getattr(self.buffer, key)[:size] = saved[key].numpy()
            self.buffer.position, self.buffer.size = int(saved["position"]) % self.buffer.capacity, size
        # The environments' state is not in the checkpoint: fresh episodes, seeded from the
        # run's seed and step so that a resume repeats exactly.
        self._obs, _ = self.envs.reset(seed=self.config.seed + self.num_steps)


class TD3(DDPG):
    """TD3 agent (Fujimoto et al. 2018): DDPG with twin critics, target policy smoothing and
    delayed actor updates. `TD3(env="Pendulum-v1", seed=0).learn(20_000)`; offline with
    `dataset=PATH` like DDPG.

    Raises:
        InputError: see `DDPG` and `TD3Config.validate`.
    """

    algo: ClassVar[str] = "td3"
    config_class: ClassVar[type[RunConfig]] = TD3Config
    twin: ClassVar[bool] = True
    config: TD3Config
