"""The architecture's claim, tested as a user would meet it: adding an algorithm is one new file, one line of
`acrl.algos.ALGORITHMS` and one preset file, and nothing else in acrl.

For each kind (on-policy, off-policy, offline) the test writes one module outside the package (`tmp_path`, put
on `sys.path`), a tiny but real algorithm written from the docs, registers it with one entry of the registry and
gives it one preset file (a presets folder holding the real ones and NAME.yaml), then uses it as the built-in
ones are used: `acrl train NAME` through the CLI (config.yaml records the preset's values, metrics.csv,
checkpoints, the model card), `acrl.load` (the class rebuilt, its weights trained, `predict` acting), `acrl
resume`, `acrl.CLASS`; the offline one from `--dataset`, and in an offline experiment as one `Learner` line.
"""

from __future__ import annotations

import csv
import dataclasses
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
import tyro
import yaml

import acrl
import acrl.algos
import acrl.core.config
from acrl.cli import main
from acrl.cli_experiment import agent_options
from acrl.core.errors import InputError
from acrl.offline.spec import EXTRAPOLATION, Learner
from tests.conftest import parameters_of, steps_of, write_dataset

A2C_FILE = '''
"""A2C, the synchronous advantage actor-critic (Mnih et al. 2016, arXiv:1602.01783, Algorithm S3 with its
actors stepped together): n_steps of each environment, then one gradient step on

    L = -mean(log pi(a_t|s_t) A_t) + vf_coef * mean((R_t - V(s_t))^2) - ent_coef * mean(H[pi(.|s_t)])

R_t the n-step returns (GAE with lambda 1), A_t = R_t - V(s_t); a truncated episode bootstraps from V of its
final observation."""

from dataclasses import dataclass

import numpy as np
import torch

from acrl.algos.base import ActorCriticAgent
from acrl.core.config import RunConfig, positive
from acrl.core.envs import make_vec_env
from acrl.parts.actor_critic import ActorCritic
from acrl.parts.returns import gae
from acrl.parts.stats import EpisodeStats


@dataclass
class A2CConfig(RunConfig):
    """A2C hyperparameters (Stable-Baselines3's A2C defaults)."""

    n_steps: int = 5
    learning_rate: float = 7e-4
    gamma: float = 0.99
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    hidden_sizes: tuple[int, ...] = (64, 64)

    def validate(self) -> None:
        super().validate()
        positive(self, "n_steps", "learning_rate")


class A2C(ActorCriticAgent):
    """A2C agent on acrl's one actor-critic (acting, and its state, are ActorCriticAgent's)."""

    algo = "a2c"
    config_class = A2CConfig

    def _build(self) -> None:
        cfg = self.config
        self.model = ActorCritic(self.observation_space, self.action_space, cfg.hidden_sizes, channels=cfg.channels)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.learning_rate)
        self.nets, self.optimizers = {"model": self.model}, {"optimizer": self.optimizer}
        self.envs = make_vec_env(self.env, cfg.n_envs)
        self.obs, _ = self.envs.reset(seed=cfg.seed)
        self.state, self.starts = self.model.initial_state(cfg.n_envs, self.device), np.ones(cfg.n_envs, bool)
        self.episode_stats = EpisodeStats()

    def iteration(self, max_steps: int) -> dict[str, float]:
        cfg, device, (T, N) = self.config, self.device, (self.config.n_steps, self.config.n_envs)
        obs, actions, rewards = [], [], np.zeros((T, N), np.float32)
        starts, terminated, truncated = (np.zeros((T, N), bool) for _ in range(3))
        next_values, first_state = np.zeros((T, N), np.float32), self.state
        with torch.no_grad():
            for t in range(T):
                obs.append(self.obs_normalizer(self.obs).to(device))
                starts[t] = self.starts
                action, _, self.state = self.model.act(obs[t], self.state, torch.from_numpy(self.starts).to(device))
                actions.append(action)
                self.obs, rewards[t], terminated[t], truncated[t], info = self.envs.step(
                    self.action_adapter.to_env(action.cpu().numpy())
                )
                for i in np.flatnonzero(truncated[t]):  # V(final observation), with the state the step left
                    final = self.obs_normalizer(info["final_obs"][i][None]).to(device)
                    next_values[t, i] = self.model.value(final, tuple(s[:, i : i + 1] for s in self.state)).item()
                self.starts = terminated[t] | truncated[t]
                self.episode_stats.add_from_info(info)
            last = self.model.value(self.obs_normalizer(self.obs).to(device), self.state).cpu().numpy()
        log_probs, entropy, values = self.model.evaluate(
            torch.stack(obs), torch.stack(actions), first_state, torch.from_numpy(starts).to(device)
        )
        v = values.detach().cpu().numpy()
        next_values = np.where(truncated, next_values, np.concatenate([v[1:], last[None]]))
        advantages, returns = gae(rewards, v, next_values, terminated, truncated, cfg.gamma, 1.0)
        policy_loss = -(log_probs * torch.from_numpy(advantages).to(device)).mean()
        value_loss = (values - torch.from_numpy(returns).to(device)).square().mean()
        loss = policy_loss + cfg.vf_coef * value_loss - cfg.ent_coef * entropy.mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.num_steps += T * N
        losses = {"train/policy_loss": policy_loss.item(), "train/value_loss": value_loss.item()}
        return losses | self.episode_stats.metrics()
'''

DPG_FILE = '''
"""DPG: deterministic policy gradient with a replay buffer and target networks, DDPG's update (Lillicrap et al.
2016, arXiv:1509.02971, Algorithm 1) in its shortest form on acrl's off-policy core:

    critic: minimise (Q(s, a) - y)^2, y = r + gamma * not_done * Q'(s', mu'(s'));  actor: maximise Q(s, mu(s))
"""

from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch

from acrl.algos.off_policy import OffPolicyAgent, OffPolicyConfig
from acrl.parts.nets import DeterministicActor, QNet
from acrl.parts.optim import hard_update, polyak_update
from acrl.parts.returns import td_target


@dataclass
class DPGConfig(OffPolicyConfig):
    """DPG hyperparameters: OffPolicyConfig's, and expl_noise, the Gaussian exploration's std in policy units."""

    expl_noise: float = 0.1


class DPG(OffPolicyAgent):
    """DPG agent: online, or from a dataset with dataset=PATH."""

    algo = "dpg"
    config_class = DPGConfig
    action_kinds = (gym.spaces.Box,)

    def _build_networks(self) -> None:
        cfg, sizes = self.config, (self.obs_dim, self.act_dim, self.config.hidden_sizes)
        self.actor, self.actor_target = DeterministicActor(*sizes), DeterministicActor(*sizes)
        self.critic, self.critic_target = QNet(*sizes), QNet(*sizes)
        for target, online in ((self.actor_target, self.actor), (self.critic_target, self.critic)):
            hard_update(target, online)
            target.requires_grad_(False)
        self.nets = {
            "actor": self.actor,
            "critic": self.critic,
            "actor_target": self.actor_target,
            "critic_target": self.critic_target,
        }
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=cfg.learning_rate)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=cfg.learning_rate)
        self.optimizers = {"actor": self.actor_optimizer, "critic": self.critic_optimizer}

    def _policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        return self.actor(obs)

    @torch.no_grad()
    def explore(self, obs: np.ndarray) -> np.ndarray:
        actions = self.actor(torch.as_tensor(obs, dtype=torch.float32, device=self.device)).cpu().numpy()
        noise = self.rng.normal(0.0, self.config.expl_noise, actions.shape)
        return np.clip(actions + noise, -1.0, 1.0).astype(np.float32)

    def _update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        obs, next_obs = batch["observations"], batch["next_observations"]
        with torch.no_grad():
            next_q = self.critic_target(next_obs, self.actor_target(next_obs))
            target = td_target(batch["rewards"], batch["not_done"], next_q, self.config.gamma)
        value_loss = (self.critic(obs, batch["actions"]) - target).square().mean()
        self.critic_optimizer.zero_grad()
        value_loss.backward()
        self.critic_optimizer.step()
        policy_loss = -self.critic(obs, self.actor(obs)).mean()
        self.actor_optimizer.zero_grad()
        policy_loss.backward(inputs=list(self.actor.parameters()))
        self.actor_optimizer.step()
        polyak_update(self.critic_target, self.critic, self.config.tau)
        polyak_update(self.actor_target, self.actor, self.config.tau)
        return {"train/value_loss": value_loss.item(), "train/policy_loss": policy_loss.item()}
'''

GAUSSIAN_BC_FILE = '''
"""Gaussian BC: behavioral cloning by maximum likelihood, offline: a Gaussian policy N(mu(s), diag(std^2)) with
a state-independent std fitted to the dataset's (s, a) pairs,

    loss = -mean over the batch of log N(a; mu(s), std)          (a in policy units)
"""

from dataclasses import dataclass

import gymnasium as gym
import torch

from acrl.algos.off_policy import ReplayAgent, ReplayConfig
from acrl.core.config import positive
from acrl.parts.heads import GaussianHead
from acrl.parts.nets import mlp_encoder


@dataclass
class GaussianBCConfig(ReplayConfig):
    """Gaussian BC hyperparameters: Adam's step size and the policy's hidden ReLU layers."""

    learning_rate: float = 1e-3
    hidden_sizes: tuple[int, ...] = (256, 256)

    def validate(self) -> None:
        super().validate()
        positive(self, "learning_rate")


class GaussianBC(ReplayAgent):
    """Gaussian BC agent, offline: GaussianBC(dataset=PATH).learn(updates)."""

    algo = "gaussian_bc"
    config_class = GaussianBCConfig
    action_kinds = (gym.spaces.Box,)

    def _build_networks(self) -> None:
        cfg = self.config
        encoder = mlp_encoder(self.obs_dim, cfg.hidden_sizes, "relu")
        self.policy = GaussianHead(encoder, cfg.hidden_sizes[-1], self.act_dim)
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=cfg.learning_rate)
        self.nets, self.optimizers = {"policy": self.policy}, {"policy": self.optimizer}

    def _policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        return self.policy.sample(obs, deterministic, with_log_prob=False)[0]

    def _update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        features = self.policy.encoder(batch["observations"])
        loss = -self.policy.log_prob_entropy(features, batch["actions"])[0].mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return {"train/nll": loss.item()}
'''


@dataclasses.dataclass(frozen=True)
class NewAlgorithm:
    """What a user writes: the registry name, the module (its file's contents) and class, and the preset file."""

    name: str
    module: str
    cls: str
    source: str
    preset: dict


KINDS = {
    "on-policy": NewAlgorithm(
        "a2c",
        "user_algorithms_a2c",
        "A2C",
        A2C_FILE,
        {
            "CartPole-v1": {
                "default": {
                    "source": "Stable-Baselines3's A2C defaults (n_steps 5, gamma 0.99), a small network for tests.",
                    "n_steps": 8,
                    "learning_rate": 0.002,
                    "hidden_sizes": [16],
                }
            }
        },
    ),
    "off-policy": NewAlgorithm(
        "dpg",
        "user_algorithms_dpg",
        "DPG",
        DPG_FILE,
        {
            "Pendulum-v1": {
                "default": {
                    "source": "rl-baselines3-zoo's DDPG on Pendulum (gamma 0.98), shrunk for tests.",
                    "gamma": 0.98,
                    "learning_rate": 0.002,
                    "hidden_sizes": [16],
                    "start_steps": 50,
                    "buffer_size": 1000,
                }
            }
        },
    ),
    "offline": NewAlgorithm(
        "gaussian_bc",
        "user_algorithms_gaussian_bc",
        "GaussianBC",
        GAUSSIAN_BC_FILE,
        {
            "Pendulum-v1": {
                "default": {
                    "source": "BC's settings in the BCQ paper (Fujimoto et al. 2019, Supp. D), a small network.",
                    "learning_rate": 0.002,
                    "hidden_sizes": [16],
                    "batch_size": 8,
                }
            }
        },
    ),
}


def add_algorithm(new: NewAlgorithm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The three things a new algorithm needs, and nothing else: its file (on sys.path), its line in the
    registry and its preset file beside the real ones (acrl.core.config.PRESET_DIR pointed there)."""
    code = tmp_path / "code"
    code.mkdir()
    (code / f"{new.module}.py").write_text(textwrap.dedent(new.source))
    monkeypatch.syspath_prepend(str(code))
    monkeypatch.setitem(acrl.algos.ALGORITHMS, new.name, (new.module, new.cls))
    presets = tmp_path / "presets"
    presets.mkdir()
    for real in acrl.core.config.PRESET_DIR.glob("*.yaml"):
        (presets / real.name).symlink_to(real)
    (presets / f"{new.name}.yaml").write_text(yaml.safe_dump(new.preset, sort_keys=False))
    monkeypatch.setattr(acrl.core.config, "PRESET_DIR", presets)


@pytest.fixture
def new_algorithm(request, tmp_path, monkeypatch):
    """The algorithm of `KINDS[request.param]`, added; its module is forgotten afterwards."""
    new = KINDS[request.param]
    add_algorithm(new, tmp_path, monkeypatch)
    yield new
    sys.modules.pop(new.module, None)


def metrics_header(run: Path) -> list[str]:
    with (run / "metrics.csv").open() as f:
        return next(csv.reader(f))


def check_run(new: NewAlgorithm, run: Path, env_id: str, total_steps: int, given: dict) -> None:
    """The run directory of `acrl train NEW`: config.yaml with the preset's values beneath the --set ones,
    metrics.csv up to the budget with the algorithm's losses, both checkpoints, eval.json and the model card;
    latest.pt loads as the new class through `acrl.load`, trained, and acts in the environment's action space."""
    saved = yaml.safe_load((run / "config.yaml").read_text())
    preset = {k: v for k, v in new.preset[env_id]["default"].items() if k != "source"}
    assert saved["algo"] == new.name
    assert saved["config"]["preset"] == "default" and saved["config"]["env_id"] == env_id
    assert {k: saved["config"][k] for k in preset} == preset | {k: v for k, v in given.items() if k in preset}
    assert {k: saved["config"][k] for k in given} == given
    assert saved["config"]["total_steps"] == total_steps
    assert steps_of(run)[-1] == total_steps
    assert any(key.startswith("train/") for key in metrics_header(run))
    assert {p.name for p in (run / "checkpoints").iterdir()} >= {"latest.pt", "best.pt"}
    assert (run / "eval.json").is_file()
    assert (run / "README.md").read_text().startswith(f"# {new.name.upper()} on {env_id}")
    assert main(["evaluate", str(run), "--episodes", "1"]) == 0

    agent = acrl.load(run / "checkpoints" / "latest.pt")
    cls = getattr(acrl, new.cls)
    assert type(agent) is cls and cls.__module__ == new.module
    assert getattr(acrl, f"{new.cls}Config") is cls.config_class
    assert agent.num_steps == total_steps
    fresh = cls(env_id, config=agent.config)  # the same seed: the weights it started from
    assert not torch.equal(parameters_of(agent), parameters_of(fresh))
    space = gym.make(env_id).observation_space
    observations = np.stack([space.sample() for _ in range(3)])
    actions = agent.predict(observations)
    assert len(actions) == 3 and all(agent.action_space.contains(a) for a in actions)
    assert agent.action_space.contains(agent.predict(observations[0]))


def check_resume(run: Path, before: int, total_steps: int) -> None:
    """`acrl resume RUN --total-steps N` goes on from step `before` to N, in the same metrics.csv."""
    assert main(["resume", str(run), "--total-steps", str(total_steps), "--no-progress"]) == 0
    steps = steps_of(run)
    assert steps[-1] == total_steps and before in steps and steps == sorted(steps)
    assert acrl.load(run / "checkpoints" / "latest.pt").num_steps == total_steps


@pytest.mark.parametrize("new_algorithm", ["on-policy"], indirect=True)
def test_an_on_policy_algorithm_is_one_file_one_registry_line_and_one_preset_file(new_algorithm, tmp_path):
    run = tmp_path / "run"
    argv = ["train", "a2c", "--env", "CartPole-v1", "--total-steps", "128", "--run-dir", str(run), "--no-progress"]
    given = {"n_envs": 2, "eval_freq": 64, "eval_episodes": 1, "checkpoint_freq": 64}
    assert main([*argv, "--set", *(f"{k}={v}" for k, v in given.items())]) == 0
    check_run(new_algorithm, run, "CartPole-v1", 128, given)  # 8 iterations of 8 steps of 2 environments
    check_resume(run, 128, 192)
    assert acrl.A2C.from_preset("CartPole-v1").config.hidden_sizes == (16,)


@pytest.mark.parametrize("new_algorithm", ["off-policy"], indirect=True)
def test_an_off_policy_algorithm_is_one_file_one_registry_line_and_one_preset_file(new_algorithm, tmp_path):
    run = tmp_path / "run"
    argv = ["train", "dpg", "--env", "Pendulum-v1", "--total-steps", "200", "--run-dir", str(run), "--no-progress"]
    given = {"batch_size": 16, "iteration_steps": 50, "eval_freq": 100, "eval_episodes": 1, "checkpoint_freq": 100}
    assert main([*argv, "--set", *(f"{k}={v}" for k, v in given.items())]) == 0
    check_run(new_algorithm, run, "Pendulum-v1", 200, given)
    check_resume(run, 200, 250)


@pytest.mark.parametrize("new_algorithm", ["offline"], indirect=True)
def test_an_offline_algorithm_is_one_file_one_registry_line_and_one_preset_file(new_algorithm, tmp_path):
    data = tmp_path / "pendulum.h5"
    write_dataset(data, "Pendulum-v1")  # its env_id attribute names the environment: no --env
    run = tmp_path / "run"
    argv = ["train", "gaussian_bc", "--dataset", str(data), "--total-steps", "100", "--run-dir", str(run)]
    given = {"iteration_steps": 25, "eval_freq": 50, "eval_episodes": 1, "checkpoint_freq": 50}
    assert main([*argv, "--no-progress", "--set", *(f"{k}={v}" for k, v in given.items())]) == 0
    check_run(new_algorithm, run, "Pendulum-v1", 100, given)
    check_resume(run, 100, 150)
    assert main(["train", "gaussian_bc", "--env", "Pendulum-v1", "--run-dir", str(tmp_path / "x")]) == 2  # no data


@pytest.mark.parametrize("new_algorithm", ["offline"], indirect=True)
def test_an_offline_algorithm_joins_an_experiment_as_one_learner_line(new_algorithm):
    """The extrapolation experiment with one more `Learner` builds and validates its configs, through the registry
    and the new preset, for the concurrent run and the offline runs alike; its overrides are its own option, on the
    command line too."""
    spec = dataclasses.replace(EXTRAPOLATION, learners=(*EXTRAPOLATION.learners, Learner("gaussian_bc", "Gaussian BC")))
    settings = spec.resolve("Pendulum-v1", {"steps_behavioral": 2000, "updates": 500, "eval_freq": 100})
    overrides = spec.overrides({"gaussian_bc_overrides": {"batch_size": 4}})
    assert spec.check_configs("Pendulum-v1", settings, overrides, seed=0)[0].total_steps == 2000
    config = spec.concurrent_configs("Pendulum-v1", settings, overrides, 0, "final.h5")["gaussian_bc"]
    assert type(config).__name__ == "GaussianBCConfig"
    assert (config.hidden_sizes, config.learning_rate, config.batch_size) == ((16,), 0.002, 4)  # preset, override
    assert (config.total_steps, config.dataset, config.preset) == (2000, "final.h5", "default")
    bad = spec.overrides({"gaussian_bc_overrides": {"learning_rate": -1.0}})
    with pytest.raises(InputError) as refused:
        spec.check_configs("Pendulum-v1", settings, bad, seed=0)
    assert refused.value.cli == "--gaussian-bc-set (gaussian_bc): learning_rate must be > 0, got -1.0."
    options = tyro.cli(agent_options(spec), args=["--gaussian-bc-set", "batch_size=4", "hidden_sizes=[8]"])
    assert options.gaussian_bc_set == ["batch_size=4", "hidden_sizes=[8]"] and options.bcq_set == []
