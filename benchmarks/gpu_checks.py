"""Device checks, for a machine with a GPU (they also run with --device cpu, which is how they are tried here).

1. Every algorithm trains briefly on the device (tiny budgets, the real code paths: collection,
   replay buffer or dataset on the device, updates, evaluation, checkpoints); A3C must refuse CUDA.
2. A checkpoint round trip device -> CPU -> device: the parameters and the greedy actions agree.
3. Gradient updates per second of BCQ, TD3 and SAC at the papers' sizes on Hopper-v5 shapes
   (observation 11, action 3), from a random buffer on the device, after a warm-up.

    python benchmarks/gpu_checks.py                   # --device auto: CUDA when there is one
    python benchmarks/gpu_checks.py --device cpu --updates 50

Writes --out (default benchmarks/results/tmp/gpu_checks.json; the committed result needs
`--out benchmarks/results/gpu_checks.json`) with the device's name, the figures and `provenance()`
(command, commit, date, CPU, load average before and after, versions).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from meta import scratch_path

import acrl
from acrl.algos import get_algorithm
from acrl.core.devices import resolve_device
from acrl.core.errors import InputError
from acrl.core.files import write_json_atomic
from acrl.core.provenance import load_average, provenance
from acrl.parts.buffers import ReplayBuffer
from acrl.parts.datasets import collect_transitions, save_dataset

TINY = {"eval_episodes": 1, "eval_freq": 0}
ONLINE = {
    "ppo": ("CartPole-v1", {"n_steps": 64, "batch_size": 32, "n_epochs": 2}, 128),
    "ddpg": ("Pendulum-v1", {"start_steps": 100, "batch_size": 32, "iteration_steps": 100}, 300),
    "td3": ("Pendulum-v1", {"start_steps": 100, "batch_size": 32, "iteration_steps": 100}, 300),
    "sac": ("Pendulum-v1", {"start_steps": 100, "batch_size": 32, "iteration_steps": 100}, 300),
}
PAPER_SIZES = {
    "bcq": {
        "batch_size": 100,
        "actor_hidden_sizes": (400, 300),
        "critic_hidden_sizes": (400, 300),
        "vae_hidden_sizes": (750, 750),
        "n_action_samples": 10,
    },  # Fujimoto et al. 2019, Supp. D
    "td3": {"batch_size": 100, "hidden_sizes": (400, 300)},  # Fujimoto et al. 2018, Appendix C
    "sac": {"batch_size": 256, "hidden_sizes": (256, 256)},  # Haarnoja et al. 2018, Table 1
}


def same_parameters(a: acrl.Agent, b: acrl.Agent) -> bool:
    return all(
        torch.equal(p.cpu(), q.cpu())
        for name in a.nets
        for p, q in zip(a.nets[name].parameters(), b.nets[name].parameters(), strict=True)
    )


def seeded_predict(agent: acrl.Agent, obs: np.ndarray) -> np.ndarray:
    """The greedy action under torch seed 0 (BCQ samples its candidate actions even when greedy)."""
    torch.manual_seed(0)
    if agent.device.type == "cuda":
        torch.cuda.manual_seed(0)
    return agent.predict(obs)


def train_each(device: str, root: Path) -> dict:
    """Train every algorithm briefly on `device`, round-trip its checkpoint through the CPU."""
    results = {}
    data = {}
    for env_id, name in (("Pendulum-v1", "pendulum"), ("CartPole-v1", "cartpole")):
        import gymnasium as gym

        env = gym.make(env_id)
        env.action_space.seed(0)
        data[name] = root / f"{name}.h5"
        save_dataset(data[name], collect_transitions(env, lambda obs, env=env: env.action_space.sample(), 500, seed=0))
    runs = {
        **{algo: (env_id, values, steps) for algo, (env_id, values, steps) in ONLINE.items()},
        "bcq": (None, {"dataset": str(data["pendulum"]), "batch_size": 32}, 200),
        "discrete_bcq": (None, {"dataset": str(data["cartpole"]), "batch_size": 32}, 200),
    }
    for algo, (env_id, values, steps) in runs.items():
        cls = get_algorithm(algo)
        started = time.perf_counter()
        agent = cls(env_id, device=device, **TINY, **values)
        agent.learn(steps, run_dir=root / algo, progress=False)
        on_cpu = acrl.load(root / algo / "checkpoints" / "latest.pt", device="cpu")
        on_cpu.save(root / algo / "cpu.pt")
        back = acrl.load(root / algo / "cpu.pt", device=device)
        obs = np.zeros(agent.obs_dim, np.float32)
        results[algo] = {
            "device": agent.config.device,
            "steps": agent.num_steps,
            "seconds": round(time.perf_counter() - started, 2),
            "round_trip_parameters_equal": same_parameters(agent, on_cpu) and same_parameters(agent, back),
            "round_trip_actions_equal": bool(np.array_equal(seeded_predict(agent, obs), seeded_predict(back, obs))),
        }
    if device.startswith("cuda"):
        try:
            acrl.A3C("CartPole-v1", workers=1, device=device)
            results["a3c"] = {"refused_cuda": False}
        except InputError as exc:
            results["a3c"] = {"refused_cuda": "runs on the CPU by design" in str(exc)}
    return results


def updates_per_second(algo: str, device: str, updates: int) -> float:
    """Gradient updates/s of `algo` at the paper's sizes on a random Hopper-v5-shaped buffer on `device`."""
    obs_dim, act_dim, n = 11, 3, 100_000
    rng = np.random.default_rng(0)
    buffer = ReplayBuffer(n, obs_dim, (act_dim,), resolve_device(device))
    buffer.add(
        rng.normal(size=(n, obs_dim)),
        rng.uniform(-1, 1, (n, act_dim)),
        rng.normal(size=n),
        rng.normal(size=(n, obs_dim)),
        rng.random(n) < 0.01,
        np.zeros(n, bool),
    )
    cls = {"bcq": acrl.BCQ, "td3": acrl.TD3, "sac": acrl.SAC}[algo]
    agent = cls("Hopper-v5", buffer=buffer, device=device, **TINY, **PAPER_SIZES[algo])
    agent.learn(max(updates // 10, 5), progress=False)  # warm-up (and CUDA's lazy initialisation)
    if agent.device.type == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    agent.learn(agent.num_steps + updates, progress=False)
    if agent.device.type == "cuda":
        torch.cuda.synchronize()
    return updates / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--updates", type=int, default=1000, help="timed updates per algorithm")
    parser.add_argument(
        "--out",
        type=Path,
        default=scratch_path("gpu_checks"),
        help="result file (default: the scratch folder benchmarks/results/tmp/)",
    )
    args = parser.parse_args()
    load_before = load_average()
    device = str(resolve_device(args.device))
    torch.set_num_threads(1 if device == "cpu" else torch.get_num_threads())
    with tempfile.TemporaryDirectory() as tmp:
        trained = train_each(device, Path(tmp))
    speed = {algo: round(updates_per_second(algo, device, args.updates), 1) for algo in PAPER_SIZES}
    report = {
        "meta": provenance(load_before),
        "device": device,
        "gpu": torch.cuda.get_device_name(0) if device.startswith("cuda") else None,
        "trained": trained,
        "updates_per_s": speed,
    }
    write_json_atomic(args.out, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
