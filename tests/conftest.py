"""Shared test helpers: run the CLI in a subprocess, tiny custom environments, small configs, a
dataset writer. Test modules import them from here, never from each other."""

from __future__ import annotations

import csv
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from acrl.core import torch_fast
from acrl.core.checkpoint import rng_state
from acrl.core.loop import Callback
from acrl.parts.datasets import OfflineDataset, save_dataset

ROOT = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Exempt the slow tests (learning runs of up to an hour, `-m slow`) from pyproject's per-test timeout."""
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(0))


@pytest.fixture(scope="module")
def two_nodes():
    """A 2-node Ray cluster on this machine for one test module, which this process joins: a head and a
    second raylet (`ray.cluster_utils.Cluster`), one CPU each. Yields (cluster, the second node), which a
    test may stop with `cluster.remove_node`."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    worker = cluster.add_node(num_cpus=1)
    ray.init(address=cluster.address, log_to_driver=False)
    cluster.wait_for_nodes()
    yield cluster, worker
    ray.shutdown()
    cluster.shutdown()


@pytest.fixture
def private_apis():
    """Set acrl.core.torch_fast's private-API switch for one test and put it back afterwards."""
    before = torch_fast.private_apis_enabled()
    yield torch_fast.set_private_apis
    torch_fast.set_private_apis(before)


def recurrent_returns_by_hand(agent, env_id: str, episodes: int) -> list[float]:
    """The returns of `episodes` deterministic episodes of a recurrent `agent` on `env_id`, played with
    `predict` and a fresh state at each reset (carried within an episode), from the evaluation seed
    (config.seed + 10000): what `agent.evaluate(episodes)` must return."""
    from acrl.core.envs import env_factory

    env = env_factory(env_id)[0]()
    obs, _ = env.reset(seed=agent.config.seed + 10_000)
    returns = []
    for _ in range(episodes):
        total, state, start, done = 0.0, None, True, False
        while not done:
            action, state = agent.predict(obs, state, start)
            obs, reward, terminated, truncated, _ = env.step(action)
            total, start, done = total + reward, False, terminated or truncated
        returns.append(total)
        obs, _ = env.reset()
    return returns


def git_head() -> str | None:
    """This checkout's HEAD, read by git itself (None outside a git checkout)."""
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip() or None


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """`python -m acrl ARGS` in a subprocess; returns the completed process (text output)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "acrl", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


PPO_TINY = {
    "n_steps": 64,
    "n_envs": 2,
    "n_epochs": 2,
    "batch_size": 64,
    "eval_freq": 256,
    "eval_episodes": 2,
    "checkpoint_freq": 256,
}
"""PPO on CartPole at a size that trains 512 steps in about a second (the sweep and tune tests)."""

BCQ_SMALL = {
    "actor_hidden_sizes": (8,),
    "critic_hidden_sizes": (8,),
    "vae_hidden_sizes": (8,),
    "batch_size": 4,
    "eval_freq": 0,
    "iteration_steps": 5,
}
"""BCQ with 8-unit networks, batches of 4 and no evaluation: for checks of its pieces, not its learning."""


def parameters_of(agent) -> torch.Tensor:
    """Every parameter of the agent's nets, flattened into one tensor."""
    return torch.cat([p.flatten() for net in agent.nets.values() for p in net.parameters()])


def assert_resumes_repeat(checkpoint: Path, loaded, steps: int) -> None:
    """Two resumes from `checkpoint`, `steps` more steps each, end with identical parameters (the envs restart
    from a seed derived from the seed and the step), and these differ from `loaded`'s (they trained)."""
    import acrl

    finals = [parameters_of(acrl.load(checkpoint).learn(steps, progress=False)) for _ in range(2)]
    assert torch.equal(finals[0], finals[1])
    assert not torch.equal(finals[0], parameters_of(loaded))


def steps_of(run_dir: Path) -> list[int]:
    """The `step` column of run_dir/metrics.csv, in order."""
    with (run_dir / "metrics.csv").open() as f:
        return [int(row["step"]) for row in csv.DictReader(f)]


class KillOnce(Callback):
    """SIGKILLs its own process once, two iterations after the first latest.pt (marker: a file)."""

    def __init__(self, marker: str):
        self.marker, self.checkpointed_at = Path(marker), None

    def on_checkpoint(self, step, path):
        self.checkpointed_at = self.checkpointed_at or step

    def on_iteration(self, step, metrics):
        if self.checkpointed_at and step >= self.checkpointed_at + 256 and not self.marker.exists():
            self.marker.write_text(str(step))
            os.kill(os.getpid(), signal.SIGKILL)


def save_format_1(path: Path, agent, state: dict) -> Path:
    """A checkpoint file of `agent` holding `state`, as acrl wrote them at format version 1."""
    torch.save(
        {
            "format": "acrl-checkpoint",
            "format_version": 1,
            "acrl_version": "0.1.0",
            "algo": agent.algo,
            "config": agent.config.to_dict(),
            "state": state,
            "rng": rng_state(agent.rng),
        },
        path,
    )
    return path


def set_linear(layer: torch.nn.Linear, weight: list[list[float]], bias: list[float]) -> None:
    """Set a linear layer's weight (out, in) and bias (out,) to the given values, in place."""
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weight, dtype=torch.float32))
        layer.bias.copy_(torch.tensor(bias, dtype=torch.float32))


def write_dataset(path: Path, env_id: str = "Pendulum-v1", n: int = 40, seed: int = 0) -> OfflineDataset:
    """Write an HDF5 dataset of `n` random transitions for `env_id`'s spaces (transition 1 terminated,
    2 truncated) to `path`; returns it."""
    env = gym.make(env_id)
    rng = np.random.default_rng(seed)
    obs_dim = env.observation_space.shape[0]
    if isinstance(env.action_space, gym.spaces.Discrete):
        actions = rng.integers(0, env.action_space.n, n)
    else:
        low, high = env.action_space.low, env.action_space.high
        actions = rng.uniform(low, high, (n, len(low))).astype(np.float32)
    terminals, timeouts = np.zeros(n, bool), np.zeros(n, bool)
    terminals[1], timeouts[2] = True, True
    data = OfflineDataset(
        rng.normal(size=(n, obs_dim)).astype(np.float32),
        actions,
        rng.normal(size=n).astype(np.float32),
        rng.normal(size=(n, obs_dim)).astype(np.float32),
        terminals,
        timeouts,
        {"env_id": env_id, "kind": "test"},
    )
    save_dataset(path, data)
    return data


def signal_when_ready(proc: subprocess.Popen, ready: Callable[[], bool], signum: int, timeout: float = 120) -> str:
    """Poll `ready()` until true, send `signum`, return proc's stderr.

    Fails if `proc` exits first, or if `ready()` is still false after `timeout` seconds (naming the
    load average: on 2 cores, CPU-bound work beside the suite is the usual cause). `proc` must have
    been started with stderr=PIPE and text=True; it is killed if it is still running when this
    returns or fails.
    """
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, f"not ready within {timeout} s; load average {os.getloadavg()}"
            time.sleep(0.1)
        proc.send_signal(signum)
        return proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def live_children(pid: int) -> list[int]:
    """Descendant pids of `pid` that are alive (zombies count as dead), from /proc.

    multiprocessing's resource tracker, which the "spawn" start method starts once per
    interpreter and which exits with it, is not counted.
    """
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if b"multiprocessing.resource_tracker" in (entry / "cmdline").read_bytes():
                    continue
            except OSError:
                continue
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        current = frontier.pop()
        children = [p for p, ppid in parents.items() if ppid == current]
        found += children
        frontier += children
    return found


def is_alive(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def command_line(pid: int) -> str:
    """Process `pid`'s command line (its title, where it set one), "" once it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class ConstantRewardEnv(gym.Env):
    """One state (observation [0.]), reward 1 every step, never terminates.

    Wrapped in a 5-step TimeLimit it is the textbook case of truncation: the true value of the
    state under gamma 0.99 is 1 / (1 - 0.99) = 100, while treating the time limit as a
    termination would teach 1 + 0.99 + ... + 0.99**4 = 4.90.
    """

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 1.0, False, False, {}


@pytest.fixture
def constant_reward_env():
    """Factory for ConstantRewardEnv truncated every 5 steps."""
    return lambda: gym.wrappers.TimeLimit(ConstantRewardEnv(), max_episode_steps=5)


class CountdownEnv(gym.Env):
    """Observation [t / 5], an episode of exactly 5 steps whatever the actions, reward drawn
    uniformly from the env's own RNG (so returns depend on the seed and only on it). Every
    instance is appended to `made`; it records the seed of each reset, its step count and, in
    `threads`, torch.get_num_threads() at each reset and step."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, made: list[CountdownEnv]):
        made.append(self)
        self.resets, self.threads, self.steps, self.t = [], [], 0, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.resets.append(seed)
        self.threads.append(torch.get_num_threads())
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.threads.append(torch.get_num_threads())
        self.steps += 1
        self.t += 1
        return np.array([self.t / 5], np.float32), float(self.np_random.uniform()), self.t >= 5, False, {}


class Frames(gym.Env):
    """12x12 RGB uint8 frames, 2 actions, reward 1 for action 1, 10 steps per episode."""

    observation_space = gym.spaces.Box(0, 255, (12, 12, 3), np.uint8)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.integers(0, 256, (12, 12, 3), dtype=np.uint8), {}

    def step(self, action):
        self.t += 1
        return self.np_random.integers(0, 256, (12, 12, 3), dtype=np.uint8), float(action), False, self.t >= 10, {}


# ------------------------------------------------------------------- recurrent policies (PPO and A3C)
class CueEnv(gym.Env):
    """A cue, one-hot of 2, in the first observation of an episode only (blank ones after); each later
    step pays 1 when the action equals the cue. Episodes of 4 steps end terminated and truncated in
    turn. The best feed-forward policy earns 1.5 a episode on average (a guess at blank observations),
    a policy with memory 3."""

    observation_space = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self):
        self.episodes = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.cue, self.t = int(self.np_random.integers(2)), 0
        self.episodes += 1
        return np.eye(2, dtype=np.float32)[self.cue], {}

    def step(self, action):
        reward = float(self.t > 0 and int(action) == self.cue)
        self.t += 1
        end = self.t == 4
        return np.zeros(2, np.float32), reward, end and self.episodes % 2 == 0, end and self.episodes % 2 == 1, {}


class RampEnv(gym.Env):
    """Observations 0.1, 0.2, 0.3, ... within an episode (reset gives 0.1), reward 1; each episode
    has `length` steps (default 3; its final observation 0.1 * (length + 1), 0.4), and ends truncated,
    terminated, truncated, ... in turn."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, length: int = 3):
        self.episodes, self.length = 0, length

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.episodes = 0, self.episodes + 1
        return np.array([0.1], np.float32), {}

    def step(self, action):
        self.t += 1
        end = self.t == self.length
        odd = self.episodes % 2 == 1
        return np.array([0.1 * (self.t + 1)], np.float32), 1.0, end and not odd, end and odd, {}


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def hand_lstm(x: float, h: float, c: float) -> tuple[float, float]:
    """The one-cell LSTM of `script_ramp_agent` on feature x = tanh(obs): every gate is
    sigmoid(x + h / 2), the candidate tanh(x + h / 2); c' = f c + i g, h' = o tanh(c')."""
    gate = sigmoid(x + h / 2)
    c_new = gate * c + gate * math.tanh(x + h / 2)
    return gate * math.tanh(c_new), c_new


def script_ramp_lstm(actor: torch.nn.Module, value_layer: torch.nn.Linear) -> None:
    """An `ActorCritic`'s actor with hidden_sizes (1,) and one LSTM cell, and its value layer, set so that V is
    hand-computable from the observations and the state (`hand_lstm`): encoder tanh(obs) (one unit,
    weight 1), LSTM input weights 1 and recurrent weights 0.5, biases 0, value = h (weight 1, bias 0)."""
    with torch.no_grad():
        linear = actor.encoder[0]
        linear.weight.fill_(1.0), linear.bias.zero_()
        cell = actor.core.cell
        cell.weight_ih.fill_(1.0), cell.weight_hh.fill_(0.5), cell.bias_ih.zero_(), cell.bias_hh.zero_()
        value_layer.weight.fill_(1.0), value_layer.bias.zero_()
