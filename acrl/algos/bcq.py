"""Batch-Constrained deep Q-learning (BCQ): offline RL from a fixed dataset, continuous and discrete.

Continuous BCQ (Fujimoto, Meger, Precup 2019, "Off-Policy Deep Reinforcement Learning without
Exploration", ICML, arXiv:1812.02900, Sec. 4 and Algorithm 1; the authors' code
github.com/sfujim/BCQ) learns only about actions that resemble the dataset's:

    VAE G_omega(s):  a conditional VAE of the behavioural policy, trained on (s, a) pairs with
                     reconstruction + 0.5 * KL(N(mu, sigma) || N(0, 1))            (Sec. 4, Supp. D)
    perturbation:    xi_phi(s, a) in [-phi, phi] (phi * tanh), a' = clip(a + xi, -1, 1)    (Eq. 11)
    critics:         twin Q1, Q2 trained toward the soft clipped double-Q target
                     y = r + gamma * not_done * max_{a_i} [lmbda * min_j Q'_j(s', a_i)
                                                           + (1 - lmbda) * max_j Q'_j(s', a_i)]
                     over n actions a_i = xi'(s', G(s')) sampled per next state     (Eq. 13)
    actor:           maximise Q1(s, xi(s, G(s)))                                      (Eq. 12)
    acting:          pi(s) = argmax_{a_i} Q1(s, a_i) over n perturbed VAE samples     (Eq. 10)

Discrete BCQ (Fujimoto, Conti, Ghavamzadeh, Pineau 2019, "Benchmarking Batch Deep Reinforcement
Learning Algorithms", arXiv:1910.01708, Sec. 4; github.com/sfujim/BCQ discrete_BCQ) keeps a
Q-network and a generative model G(a|s) (an imitation head with unrestricted logits). Only
actions with G(a|s) / max_a' G(a'|s) > threshold are allowed; the policy is the argmax of Q
over allowed actions, and the Double-DQN style target uses that argmax of the online network
with the target network's value. Loss: Huber(Q) + NLL of the imitation head + 0.01 * mean of
the squared logits (the authors' regulariser).

Correctness details (DESIGN.md checklist items 1, 8, 9, 10): not_done comes from the dataset's
`terminals` only, so a time-limit `timeout` bootstraps; the VAE's log-std is clamped to
[-4, 15] and the decoder's latent is drawn from N(0, 1) and clamped to [-0.5, 0.5]; next states
are repeated with `repeat_interleave` so that each state's samples are contiguous before the
per-state maximum; the actor's loss uses Q1 only; target networks start as exact copies and are
soft-updated in place under no_grad; disallowed discrete actions are masked with -inf, so they
can never win an argmax, whatever the scale of Q.

Actions live in policy units [-1, 1] per dimension inside the agent (max_action = 1 there);
`acrl.envs.ActionAdapter` maps the dataset's environment-unit actions in when loading and the
chosen actions back out in `predict`. `num_steps` counts gradient updates.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from acrl.agent import Agent
from acrl.buffers import ReplayBuffer
from acrl.config import RunConfig, in_unit_interval, positive
from acrl.datasets import dataset_env_id, load_dataset
from acrl.envs import EnvSpec
from acrl.errors import InputError
from acrl.nets import TwinQ, mlp
from acrl.optim import polyak_update

LOG_STD_MIN, LOG_STD_MAX = -4.0, 15.0
"""Clamp of the VAE encoder's log-std (authors' code, "clamped for numerical stability")."""

LATENT_CLIP = 0.5
"""Decoder latents sampled from N(0, 1) are clamped to [-0.5, 0.5] (Supp. D; authors' code)."""


@dataclass
class BCQConfig(RunConfig):
    """BCQ hyperparameters. Defaults: the paper's (Fujimoto et al. 2019, Sec. 5 and Supp. D) for
    Box actions, the discrete paper's non-Atari settings (authors' discrete_BCQ/main.py) for
    Discrete actions; a field left at None takes the value of the action space's variant.

    Attributes:
        env_id: the environment used for evaluation (and to check the dataset's spaces);
            default: the dataset's `env_id` attribute.
        dataset: path of the offline dataset (HDF5 with the D4RL keys, `acrl.datasets`).
        total_steps: gradient updates (300,000: the length of the paper's Figure 2 curves).
        eval_freq: evaluate every this many updates (5,000, as the authors' code).
        iteration_steps: updates per `_iteration`, i.e. per row of metrics.csv.
        batch_size: transitions per update (None: 100 continuous, 64 discrete).
        learning_rate: Adam step size of the actor and critics, or of the discrete Q-network
            (None: 1e-3 continuous, 3e-4 discrete).
        vae_learning_rate: Adam step size of the VAE (1e-3, torch's default in the authors' code).
        gamma: discount (0.99).
        tau: soft target update weight per update (0.005).
        lmbda: weight of min(Q1', Q2') in the soft clipped double-Q target (0.75).
        phi: the perturbation's range as a fraction of max_action (0.05).
        n_action_samples: VAE actions sampled per next state in the target (10).
        n_select_samples: candidate actions per state when acting (10 in the paper and the
            authors' original code; their later code uses 100).
        kl_weight: weight of the KL term in the VAE loss (0.5).
        latent_dim: VAE latent size (None: 2 * act_dim).
        actor_hidden_sizes: hidden ReLU layers of the perturbation actor (400, 300).
        critic_hidden_sizes: hidden ReLU layers of each critic, and of the discrete Q-network
            and imitation head (None: (400, 300) continuous, (256, 256) discrete).
        vae_hidden_sizes: hidden ReLU layers of the VAE's encoder and of its decoder (750, 750).
        threshold: discrete BCQ's tau: an action is allowed when G(a|s) / max G(.|s) > threshold;
            in [0, 1) (0.3). 0 allows every action (DQN), values near 1 imitate.
        imitation_l2: weight of the mean squared imitation logits in the discrete loss (0.01).
    """

    env_id: str = "Pendulum-v1"
    total_steps: int = 300_000
    eval_freq: int = 5_000
    iteration_steps: int = 1_000
    dataset: str | None = None
    batch_size: int | None = None
    learning_rate: float | None = None
    vae_learning_rate: float = 1e-3
    gamma: float = 0.99
    tau: float = 0.005
    lmbda: float = 0.75
    phi: float = 0.05
    n_action_samples: int = 10
    n_select_samples: int = 10
    kl_weight: float = 0.5
    latent_dim: int | None = None
    actor_hidden_sizes: tuple[int, ...] = (400, 300)
    critic_hidden_sizes: tuple[int, ...] | None = None
    vae_hidden_sizes: tuple[int, ...] = (750, 750)
    threshold: float = 0.3
    imitation_l2: float = 0.01

    def validate(self) -> None:
        """Raise `InputError` for values BCQ cannot run with (see the attribute list)."""
        super().validate()
        positive(self, "iteration_steps", "batch_size", "learning_rate", "vae_learning_rate",
                 "n_action_samples", "n_select_samples", "latent_dim")
        in_unit_interval(self, "gamma", "tau", "lmbda")
        if self.phi < 0 or self.kl_weight < 0 or self.imitation_l2 < 0:
            raise InputError(f"phi, kl_weight and imitation_l2 must be >= 0, got {self.phi}, "
                             f"{self.kl_weight} and {self.imitation_l2}.")
        if not 0.0 <= self.threshold < 1.0:
            raise InputError(f"threshold must lie in [0, 1) (at 1 no action would be allowed), got {self.threshold}.")
        for name in ("actor_hidden_sizes", "critic_hidden_sizes", "vae_hidden_sizes"):
            sizes = getattr(self, name)
            if sizes is not None and (not sizes or any(h <= 0 for h in sizes)):
                raise InputError(f"{name} must be positive layer widths, got {list(sizes)}.")


# --------------------------------------------------------------------------------------------
# Networks
# --------------------------------------------------------------------------------------------


class VAE(nn.Module):
    """Conditional VAE of the dataset's actions, G_omega(a | s) (Fujimoto et al. 2019, Sec. 4).

    Encoder: [s, a] -> hidden ReLU layers -> (mean, log_std) of q(z | s, a), log_std clamped to
    [-4, 15]. Decoder: [s, z] -> hidden ReLU layers -> tanh, an action in [-1, 1] (policy units,
    max_action 1). Sampling (`decode` without z) draws z ~ N(0, 1) clamped to [-0.5, 0.5], so
    only actions near the mode of the data come out (Supp. D).

    Args:
        obs_dim, act_dim: sizes of s and a.
        latent_dim: size of z (BCQ: 2 * act_dim).
        hidden_sizes: hidden widths of the encoder and of the decoder (BCQ: (750, 750)).
    """

    def __init__(self, obs_dim: int, act_dim: int, latent_dim: int, hidden_sizes: tuple[int, ...] = (750, 750)):
        super().__init__()
        self.latent_dim = latent_dim
        self.encoder = mlp(obs_dim + act_dim, hidden_sizes, 2 * latent_dim, "relu")
        self.decoder = mlp(obs_dim + latent_dim, hidden_sizes, act_dim, "relu")

    def encode(self, obs: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """obs (B, obs_dim), actions (B, act_dim) float32 -> mean, log_std (B, latent_dim), log_std in [-4, 15]."""
        mean, log_std = self.encoder(torch.cat([obs, actions], dim=-1)).chunk(2, dim=-1)
        return mean, log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Reconstruct: z = mean + std * eps (reparameterised), returns (recon (B, act_dim), mean, log_std)."""
        mean, log_std = self.encode(obs, actions)
        z = mean + log_std.exp() * torch.randn_like(mean)
        return self.decode(obs, z), mean, log_std

    def sample_latent(self, n: int) -> torch.Tensor:
        """(n, latent_dim) float32 latents from N(0, 1) clamped to [-0.5, 0.5] (torch's global RNG)."""
        return torch.randn(n, self.latent_dim).clamp(-LATENT_CLIP, LATENT_CLIP)

    def decode(self, obs: torch.Tensor, z: torch.Tensor | None = None) -> torch.Tensor:
        """obs (B, obs_dim) [, z (B, latent_dim)] -> actions (B, act_dim) in [-1, 1]; z defaults to `sample_latent`."""
        if z is None:
            z = self.sample_latent(len(obs))
        return torch.tanh(self.decoder(torch.cat([obs, z], dim=-1)))

    @staticmethod
    def loss(actions: torch.Tensor, recon: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor,
             kl_weight: float = 0.5) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(total, reconstruction, KL) losses, scalars: MSE(recon, a) + kl_weight * KL, the KL to
        N(0, I) averaged over batch and latent dims as in the authors' code:
        -0.5 * mean(1 + log sigma^2 - mu^2 - sigma^2) (Kingma & Welling 2014, Appendix B)."""
        recon_loss = F.mse_loss(recon, actions)
        kl = -0.5 * (1.0 + 2.0 * log_std - mean.square() - (2.0 * log_std).exp()).mean()
        return recon_loss + kl_weight * kl, recon_loss, kl


class PerturbationActor(nn.Module):
    """xi_phi(s, a): a' = clip(a + phi * tanh(net([s, a])), -1, 1) (Fujimoto et al. 2019, Eq. 11).

    obs (B, obs_dim), actions (B, act_dim) float32 in policy units -> (B, act_dim) in [-1, 1];
    the perturbation is at most phi (max_action = 1 in policy units).
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes: tuple[int, ...] = (400, 300), phi: float = 0.05):
        super().__init__()
        self.phi = phi
        self.net = mlp(obs_dim + act_dim, hidden_sizes, act_dim, "relu")

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        perturbation = self.phi * torch.tanh(self.net(torch.cat([obs, actions], dim=-1)))
        return (actions + perturbation).clamp(-1.0, 1.0)


class DiscreteBCQNet(nn.Module):
    """Q-network and imitation head of discrete BCQ, two separate ReLU trunks as the authors' FC_Q.

    forward: obs (B, obs_dim) float32 -> (q (B, n_actions), logits (B, n_actions)). The logits
    are unrestricted (no ReLU on the output); `log_softmax(logits)` is log G(a|s).
    """

    def __init__(self, obs_dim: int, n_actions: int, hidden_sizes: tuple[int, ...] = (256, 256)):
        super().__init__()
        self.q = mlp(obs_dim, hidden_sizes, n_actions, "relu")
        self.imitation = mlp(obs_dim, hidden_sizes, n_actions, "relu", output_gain=0.01)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.q(obs), self.imitation(obs)


def inplace_relu(*modules: nn.Module) -> None:
    """Switch every `nn.ReLU` inside `modules` to in-place: the same values and gradients (a ReLU
    after a Linear may overwrite the Linear's output, which its backward does not need), one
    allocation less per layer; ~10% of a BCQ update on CPU."""
    for module in modules:
        for layer in module.modules():
            if isinstance(layer, nn.ReLU):
                layer.inplace = True


# --------------------------------------------------------------------------------------------
# Pure pieces: targets and action selection
# --------------------------------------------------------------------------------------------


def soft_clipped_double_q(q1: torch.Tensor, q2: torch.Tensor, lmbda: float) -> torch.Tensor:
    """lmbda * min(q1, q2) + (1 - lmbda) * max(q1, q2), elementwise (Fujimoto et al. 2019, Eq. 13)."""
    return lmbda * torch.min(q1, q2) + (1.0 - lmbda) * torch.max(q1, q2)


@torch.no_grad()
def continuous_target(next_obs: torch.Tensor, rewards: torch.Tensor, not_done: torch.Tensor, vae: VAE,
                      actor_target: nn.Module, critic_target: nn.Module, gamma: float, lmbda: float,
                      n_samples: int, latent: torch.Tensor | None = None) -> torch.Tensor:
    """BCQ's critic target y (B,) (Fujimoto et al. 2019, Eq. 13 and Algorithm 1).

    Each next state is repeated n_samples times with `repeat_interleave` (rows s'_0 x n, s'_1 x n,
    ...), an action is decoded from the VAE and perturbed by the target actor for every row, the
    target critics' values are mixed by `soft_clipped_double_q`, reshaped to (B, n_samples) and
    maximised per state: y = r + gamma * not_done * max_i Q_mix(s', a_i).

    Args:
        next_obs: (B, obs_dim) float32; rewards, not_done: (B,) float32 (not_done = 1 -
            terminal; a time-limit timeout keeps not_done = 1 and bootstraps).
        vae, actor_target, critic_target: the VAE (online, as in the paper), the target
            perturbation actor and the target twin critics.
        gamma: discount; lmbda: soft clipping weight; n_samples: actions per next state.
        latent: optional (B * n_samples, latent_dim) latents in repeat_interleave row order
            (default: sampled and clamped by `VAE.decode`), for tests.
    Returns:
        (B,) float32 targets, no gradient.
    """
    repeated = next_obs.repeat_interleave(n_samples, dim=0)
    actions = actor_target(repeated, vae.decode(repeated, latent))
    q = soft_clipped_double_q(*critic_target(repeated, actions), lmbda)
    return rewards + gamma * not_done * q.view(len(next_obs), n_samples).max(dim=1).values


@torch.no_grad()
def select_continuous(obs: torch.Tensor, vae: VAE, actor: nn.Module, critic: nn.Module, n_samples: int) -> torch.Tensor:
    """BCQ's policy (Eq. 10): for each state, n_samples perturbed VAE actions, the one with the largest Q1.

    obs (B, obs_dim) float32 -> actions (B, act_dim) float32 in policy units [-1, 1]. Batched:
    the B * n_samples candidates go through the networks in one pass.
    """
    repeated = obs.repeat_interleave(n_samples, dim=0)
    candidates = actor(repeated, vae.decode(repeated))
    best = critic.q1(repeated, candidates).view(len(obs), n_samples).argmax(dim=1)
    return candidates.view(len(obs), n_samples, -1)[torch.arange(len(obs)), best]


def allowed_actions(logits: torch.Tensor, threshold: float) -> torch.Tensor:
    """Discrete BCQ's constraint: G(a|s) / max_a' G(a'|s) > threshold, as a bool mask (B, n_actions).

    Computed in log space, logits - max(logits) > log(threshold), which equals the ratio of
    softmax probabilities without their underflow (Fujimoto et al. 2019b, Sec. 4, Eq. 3).
    The most likely action is always allowed (ratio 1 > threshold for threshold < 1).
    """
    if threshold <= 0.0:
        return torch.ones_like(logits, dtype=torch.bool)
    return logits - logits.max(dim=-1, keepdim=True).values > float(np.log(threshold))


def masked_argmax(q: torch.Tensor, logits: torch.Tensor, threshold: float) -> torch.Tensor:
    """argmax of q (B, n_actions) over the actions `allowed_actions` permits -> (B,) int64.

    Disallowed actions get -inf, so none of them can win, whatever the values of q.
    """
    return q.masked_fill(~allowed_actions(logits, threshold), float("-inf")).argmax(dim=-1)


@torch.no_grad()
def discrete_target(next_obs: torch.Tensor, rewards: torch.Tensor, not_done: torch.Tensor, net: DiscreteBCQNet,
                    target_net: DiscreteBCQNet, gamma: float, threshold: float) -> torch.Tensor:
    """Discrete BCQ's target (B,): the online network picks the allowed argmax a' at s', the target
    network values it: y = r + gamma * not_done * Q'(s', a') (Double DQN, van Hasselt et al. 2016,
    with BCQ's constraint; authors' discrete_BCQ.py). Shapes: next_obs (B, obs_dim); rewards,
    not_done (B,) float32."""
    q, logits = net(next_obs)
    next_actions = masked_argmax(q, logits, threshold)
    next_q = target_net(next_obs)[0].gather(1, next_actions.unsqueeze(1)).squeeze(1)
    return rewards + gamma * not_done * next_q


# --------------------------------------------------------------------------------------------
# The agent
# --------------------------------------------------------------------------------------------


class BCQ(Agent):
    """BCQ agent, offline: `BCQ(dataset="data.hdf5", seed=0).learn(100_000)`; `num_steps` counts updates.

    A Box action space gives continuous BCQ (VAE, perturbation actor, twin critics), a Discrete
    one discrete BCQ (Q-network with an imitation head). Without `env`, the environment is the
    dataset's `env_id` attribute; it is used only to check the dataset's spaces and to evaluate.
    Instead of a dataset, a `ReplayBuffer` in policy units can be passed (`buffer=`); BCQ then
    samples from it as it is, which lets it learn from a buffer that another agent is filling
    (the paper's concurrent experiment).

    `predict` ignores `deterministic`: BCQ's continuous policy always takes the best of
    `n_select_samples` sampled candidates by Q1 (Eq. 10), the discrete one the allowed argmax.

    Raises:
        InputError: see `Agent` and `BCQConfig.validate`; no dataset and no buffer; a dataset
            without an `env_id` attribute and no env given; an unbounded Box action space; at
            `learn`, a dataset that is missing, corrupt or does not fit the environment's spaces.
    """

    algo: ClassVar[str] = "bcq"
    config_class: ClassVar[type[RunConfig]] = BCQConfig
    config: BCQConfig

    def __init__(self, env: EnvSpec | None = None, config: RunConfig | None = None,
                 buffer: ReplayBuffer | None = None, **hyperparameters: Any):
        dataset = hyperparameters.get("dataset", getattr(config, "dataset", None))
        if env is None and "env_id" not in hyperparameters and dataset is not None:
            env = dataset_env_id(dataset)
            if env is None:
                raise InputError(f"{dataset} has no env_id attribute naming a registered environment; "
                                 "pass the environment to evaluate on (--env ENV_ID).")
        self.buffer = buffer
        super().__init__(env, config, **hyperparameters)

    def _build(self) -> None:
        cfg = self.config
        if cfg.dataset is None and self.buffer is None:
            raise InputError("BCQ learns from a fixed dataset: pass --dataset FILE (an HDF5 file with the D4RL "
                             "keys, e.g. from `acrl collect`), or buffer=ReplayBuffer from Python.")
        if cfg.dataset is not None:
            cfg.dataset = str(Path(cfg.dataset).resolve())  # config.yaml stays valid from any directory
        if self.buffer is not None:
            self._check_buffer(self.buffer)
        self.batch_size = cfg.batch_size or (64 if self.discrete else 100)
        learning_rate = cfg.learning_rate or (3e-4 if self.discrete else 1e-3)
        hidden = cfg.critic_hidden_sizes or ((256, 256) if self.discrete else (400, 300))
        if self.discrete:
            self.net = DiscreteBCQNet(self.obs_dim, self.act_dim, hidden)
            self.net_target = copy.deepcopy(self.net).requires_grad_(False)
            self.optimizer = torch.optim.Adam(self.net.parameters(), lr=learning_rate, fused=True)
            self.nets = {"net": self.net, "net_target": self.net_target}
            self.optimizers = {"optimizer": self.optimizer}
            inplace_relu(*self.nets.values())
            return
        if not self.action_space.is_bounded():
            raise InputError(f"BCQ's VAE and perturbation act in [-1, 1] and need finite action bounds; this "
                             f"environment has {self.action_space}. Wrap it with gymnasium.wrappers.ClipAction.")
        latent_dim = cfg.latent_dim or 2 * self.act_dim
        self.vae = VAE(self.obs_dim, self.act_dim, latent_dim, cfg.vae_hidden_sizes)
        self.actor = PerturbationActor(self.obs_dim, self.act_dim, cfg.actor_hidden_sizes, cfg.phi)
        self.critic = TwinQ(self.obs_dim, self.act_dim, hidden)
        # Exact copies at the start, never trained directly (checklist item 9).
        self.actor_target = copy.deepcopy(self.actor).requires_grad_(False)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.vae_optimizer = torch.optim.Adam(self.vae.parameters(), lr=cfg.vae_learning_rate, fused=True)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=learning_rate, fused=True)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=learning_rate, fused=True)
        self.nets = {"vae": self.vae, "actor": self.actor, "critic": self.critic,
                     "actor_target": self.actor_target, "critic_target": self.critic_target}
        self.optimizers = {"vae": self.vae_optimizer, "actor": self.actor_optimizer, "critic": self.critic_optimizer}
        inplace_relu(*self.nets.values())

    # ----------------------------------------------------------------- data
    def _check_buffer(self, buffer: ReplayBuffer) -> None:
        action_shape = () if self.discrete else (self.act_dim,)
        if buffer.observations.shape[1] != self.obs_dim or buffer.actions.shape[1:] != action_shape:
            raise InputError(f"the replay buffer holds observations of size {buffer.observations.shape[1]} and "
                             f"actions of shape {buffer.actions.shape[1:]}; this environment needs {self.obs_dim} "
                             f"and {action_shape}.")

    def load_data(self) -> ReplayBuffer:
        """Load the dataset into a ReplayBuffer (once) and return it.

        Box actions go from environment units to policy units [-1, 1] (`ActionAdapter.to_policy`,
        clipped against float round-off at the bounds); Discrete actions stay int64 indices.
        `terminals` become `terminated` and `timeouts` `truncated`, so only terminals stop
        bootstrapping (checklist item 1). A dataset whose `env_id` differs from the
        environment only warns; the spaces are checked strictly.

        Raises:
            InputError: a missing, corrupt or mismatched dataset (`acrl.datasets.load_dataset`).
        """
        if self.buffer is None:
            path = self.config.dataset
            data = load_dataset(path, self.observation_space, self.action_space)
            if len(data) == 0:
                raise InputError(f"{path} holds no transitions.")
            if data.attrs.get("env_id") not in (None, "unknown", self.config.env_id):
                warnings.warn(f"{path} was collected on {data.attrs['env_id']}; this agent evaluates on "
                              f"{self.config.env_id}.", stacklevel=2)
            if self.discrete:
                actions = data.actions.astype(np.int64) - int(self.action_space.start)
            else:
                actions = np.clip(self.action_adapter.to_policy(data.actions), -1.0, 1.0)
            buffer = ReplayBuffer(len(data), self.obs_dim, () if self.discrete else (self.act_dim,))
            buffer.add(data.observations, actions, data.rewards, data.next_observations, data.terminals,
                       data.timeouts)
            self.buffer = buffer
        return self.buffer

    def learn(self, total_steps: int | None = None, run_dir: str | Path | None = None,
              progress: bool = True) -> BCQ:
        """`Agent.learn` over gradient updates; the dataset is loaded and checked first, before any file is written."""
        self.load_data()
        super().learn(total_steps, run_dir, progress)
        return self

    # ----------------------------------------------------------------- acting
    def _policy_action(self, obs: torch.Tensor, deterministic: bool) -> np.ndarray:
        if self.discrete:
            q, logits = self.net(obs)
            return (masked_argmax(q, logits, self.config.threshold) + int(self.action_space.start)).numpy()
        return select_continuous(obs, self.vae, self.actor, self.critic, self.config.n_select_samples).numpy()

    # ----------------------------------------------------------------- learning
    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One gradient update of every network from a batch (keys as `ReplayBuffer.sample`).

        Continuous, in the authors' order: VAE (reconstruction + kl_weight * KL), critics (MSE
        of Q1 and Q2 to `continuous_target`), perturbation actor (-Q1(s, xi(s, G(s)))), then
        soft target updates. Discrete: Huber(Q(s, a), `discrete_target`) + NLL of a under the
        imitation head + imitation_l2 * mean(logits^2), then the soft target update.
        Returns train/ metrics of this update.
        """
        if self.discrete:
            return self._update_discrete(batch)
        cfg = self.config
        obs, actions = batch["observations"], batch["actions"]

        recon, mean, log_std = self.vae(obs, actions)
        vae_loss, recon_loss, kl = VAE.loss(actions, recon, mean, log_std, cfg.kl_weight)
        self.vae_optimizer.zero_grad(set_to_none=True)
        vae_loss.backward()
        self.vae_optimizer.step()

        target = continuous_target(batch["next_observations"], batch["rewards"], batch["not_done"], self.vae,
                                   self.actor_target, self.critic_target, cfg.gamma, cfg.lmbda,
                                   cfg.n_action_samples)
        q1, q2 = self.critic(obs, actions)
        value_loss = F.mse_loss(q1, target) + F.mse_loss(q2, target)
        self.critic_optimizer.zero_grad(set_to_none=True)
        value_loss.backward()
        self.critic_optimizer.step()

        with torch.no_grad():
            sampled = self.vae.decode(obs)
        policy_loss = -self.critic.q1(obs, self.actor(obs, sampled)).mean()
        self.actor_optimizer.zero_grad(set_to_none=True)
        policy_loss.backward(inputs=list(self.actor.parameters()))  # no critic weight gradients needed
        self.actor_optimizer.step()

        polyak_update(self.critic_target, self.critic, cfg.tau)
        polyak_update(self.actor_target, self.actor, cfg.tau)
        return {"train/vae_loss": vae_loss.item(), "train/recon_loss": recon_loss.item(), "train/kl": kl.item(),
                "train/value_loss": value_loss.item(), "train/policy_loss": policy_loss.item(),
                "train/q_mean": q1.detach().mean().item()}

    def _update_discrete(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        cfg = self.config
        obs, actions = batch["observations"], batch["actions"]
        target = discrete_target(batch["next_observations"], batch["rewards"], batch["not_done"], self.net,
                                 self.net_target, cfg.gamma, cfg.threshold)
        q, logits = self.net(obs)
        q_taken = q.gather(1, actions.unsqueeze(1)).squeeze(1)
        value_loss = F.smooth_l1_loss(q_taken, target)
        imitation_loss = F.cross_entropy(logits, actions)
        loss = value_loss + imitation_loss + cfg.imitation_l2 * logits.square().mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        polyak_update(self.net_target, self.net, cfg.tau)
        with torch.no_grad():
            allowed = allowed_actions(logits, cfg.threshold).float().sum(1).mean()
        return {"train/value_loss": value_loss.item(), "train/imitation_loss": imitation_loss.item(),
                "train/q_mean": q_taken.detach().mean().item(), "train/allowed_actions": allowed.item()}

    def _iteration(self) -> dict[str, float]:
        cfg = self.config
        buffer = self.load_data()
        if len(buffer) == 0:
            raise InputError("BCQ's replay buffer is empty; fill it before learning.")
        budget = min(cfg.iteration_steps, self.total_steps - self.num_steps)
        if cfg.eval_freq:  # end iterations on evaluation points: the curve is sampled at exact multiples
            budget = min(budget, cfg.eval_freq - self.num_steps % cfg.eval_freq)
        stats: dict[str, float] = {}
        for _ in range(budget):
            for key, value in self.update(buffer.sample(self.batch_size, self.rng)).items():
                stats[key] = stats.get(key, 0.0) + value
        self.num_steps += budget
        return {key: value / budget for key, value in stats.items()}

    def __repr__(self) -> str:
        kind = "discrete" if self.discrete else "continuous"
        return f"BCQ({kind}, env_id={self.config.env_id!r}, dataset={self.config.dataset!r}, updates={self.num_steps})"


__all__ = ["BCQ", "BCQConfig", "VAE", "PerturbationActor", "DiscreteBCQNet", "continuous_target", "inplace_relu",
           "discrete_target", "select_continuous", "allowed_actions", "masked_argmax", "soft_clipped_double_q",
           "LOG_STD_MIN", "LOG_STD_MAX", "LATENT_CLIP"]
