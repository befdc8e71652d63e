"""Devices on a CPU-only machine: resolving `device`, bad device strings, what config.yaml records,
A3C staying on the CPU, and checkpoints that load on the CPU whatever device they were written on.

CUDA itself is simulated only where nothing touches it (`resolve_device`); the GPU runs are
`benchmarks/gpu_checks.py`'s, on a machine with a GPU."""

import numpy as np
import pytest
import torch
import yaml

import acrl
from acrl import A3C, PPO
from acrl.cli import main
from acrl.core.devices import resolve_device
from acrl.core.errors import InputError


@pytest.fixture
def two_gpus(monkeypatch):
    """A machine that reports CUDA with two devices (nothing may run on them)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


def test_resolve_with_cuda(two_gpus):
    assert [str(resolve_device(s)) for s in ("auto", "cpu", "cuda", "cuda:1")] == ["cuda:0", "cpu", "cuda:0", "cuda:1"]
    with pytest.raises(InputError, match=r"'cuda:7' asked for, but this machine has 2 GPUs \(cuda:0 to cuda:1\)"):
        resolve_device("cuda:7")


def test_resolve_without_cuda(no_gpu):
    assert str(resolve_device("auto")) == str(resolve_device("cpu")) == "cpu"
    with pytest.raises(InputError, match="CUDA is not available on this machine .*auto would use cpu"):
        resolve_device("cuda")
    with pytest.raises(InputError, match="CUDA is not available"):
        resolve_device("cuda:0")


@pytest.mark.parametrize(
    "spec, message",
    [("gpu", "unknown device 'gpu'"), ("cuda:x", "unknown device"), ("meta", "not supported"), ("", "unknown device")],
)
def test_bad_device_strings(spec, message):
    with pytest.raises(InputError, match=message):
        resolve_device(spec)


def test_the_config_records_the_device_used(tmp_path, no_gpu):
    agent = PPO("CartPole-v1", n_steps=8, batch_size=8, n_epochs=1, eval_freq=0, eval_episodes=1)
    assert agent.config.device == "cpu" and agent.device == torch.device("cpu")
    agent.learn(8, run_dir=tmp_path, progress=False)
    assert yaml.safe_load((tmp_path / "config.yaml").read_text())["config"]["device"] == "cpu"


def test_a3c_stays_on_the_cpu(two_gpus):
    assert A3C("CartPole-v1", workers=1).device == torch.device("cpu")  # auto: the CPU for A3C
    with pytest.raises(InputError, match="A3C runs on the CPU by design .*shared CPU memory"):
        A3C("CartPole-v1", workers=1, device="cuda")


@pytest.mark.parametrize(
    "device, message",
    [("cuda", "CUDA is not available"), ("cuda:7", "CUDA is not available"), ("tpu", "unknown device 'tpu'")],
)
def test_cli_bad_device_exits_2_and_writes_nothing(tmp_path, capsys, no_gpu, device, message):
    run_dir = tmp_path / "run"
    assert main(["train", "ppo", "--env", "CartPole-v1", "--device", device, "--run-dir", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not run_dir.exists()


def test_a_checkpoint_of_another_device_loads_on_the_cpu(tmp_path, capsys, no_gpu):
    """A run recorded on cuda:0 (its config says so) is read on this CPU-only machine with --device cpu."""
    run_dir = tmp_path / "run"
    agent = PPO("CartPole-v1", n_steps=8, batch_size=8, n_epochs=1, eval_freq=0, eval_episodes=1)
    agent.learn(8, run_dir=run_dir, progress=False)
    agent.config.device = "cuda:0"
    agent.save(run_dir / "checkpoints" / "best.pt")
    with pytest.raises(InputError, match="CUDA is not available"):
        acrl.load(run_dir / "checkpoints" / "best.pt")
    loaded = acrl.load(run_dir / "checkpoints" / "best.pt", device="cpu")
    obs = np.zeros(4, np.float32)
    assert loaded.config.device == "cpu" and loaded.predict(obs) == agent.predict(obs)
    for a, b in zip(agent.model.parameters(), loaded.model.parameters(), strict=True):
        assert torch.equal(a, b)
    assert main(["evaluate", str(run_dir), "--episodes", "1", "--device", "cpu"]) == 0
    assert '"return_mean"' in capsys.readouterr().out
