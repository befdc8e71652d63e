"""precision="bf16": the networks' products run in bfloat16 under autocast, everything that learns stays float32
(parameters, optimizer state, losses, advantages, returns, targets, checkpoints; docs/correctness.md item 16);
"fp32" runs without autocast; "auto", the default, is bf16 for PPO's frames on a CPU with bfloat16 and fp32 elsewhere;
bf16 is refused, with exit code 2 and before any work, where the hardware has no
bfloat16 arithmetic (simulated here: this machine's Xeon has AMX); the setting is recorded and resumed."""

import contextlib
import json

import gymnasium as gym
import numpy as np
import pytest
import torch
import yaml
from torch import nn

import acrl
from acrl import A3C, PPO, SAC
from acrl.cli import main
from acrl.core import devices, torch_fast
from acrl.core.checkpoint import load_checkpoint
from acrl.core.devices import check_precision, cpu_bf16_features, precision_context
from acrl.core.errors import InputError
from acrl.parts.actor_critic import ActorCritic, ValueHead
from tests.conftest import Frames

needs_bf16 = pytest.mark.skipif(not cpu_bf16_features(), reason="this CPU has no bfloat16 instructions")


@pytest.fixture
def no_bf16_cpu(monkeypatch):
    """A CPU without AVX512-BF16, AMX-BF16 or Arm BF16."""
    monkeypatch.setattr(devices, "cpu_bf16_features", lambda: ())


@contextlib.contextmanager
def recorded(modules):
    """Record (output dtype, autocast on) of every Linear and Conv2d forward of `modules` (but the actor-critic's
    value head, a network output: float32 by contract), and the dtype of every tensor `backward` is called on
    (the losses)."""
    outputs, losses = [], []
    original = torch.Tensor.backward

    def backward(tensor, *args, **kwargs):
        losses.append(tensor.dtype)
        return original(tensor, *args, **kwargs)

    def hook(module, inputs, output):
        outputs.append((output.dtype, torch.is_autocast_enabled("cpu")))

    hooks = [
        layer.register_forward_hook(hook)
        for module in modules
        for layer in module.modules()
        if isinstance(layer, (nn.Linear, nn.Conv2d)) and not isinstance(layer, ValueHead)
    ]
    torch.Tensor.backward = backward
    try:
        yield outputs, losses
    finally:
        torch.Tensor.backward = original
        for handle in hooks:
            handle.remove()


def float32_state(agent):
    """Every parameter and every tensor of the optimizers' states is float32 (Adam's step counts aside)."""
    params = [p for net in agent.nets.values() for p in net.parameters()]
    states = [
        value
        for optimizer in agent.optimizers.values()
        for state in optimizer.state.values()
        for key, value in state.items()
        if torch.is_tensor(value) and key != "step"
    ]
    assert params and states
    return all(t.dtype == torch.float32 for t in params + states)


# ------------------------------------------------------------------------------------------------ the context
def test_fp32_is_no_context_and_bf16_is_bfloat16_autocast():
    with precision_context(torch.device("cpu"), "fp32"):
        assert not torch.is_autocast_enabled("cpu")
    with precision_context(torch.device("cpu"), "bf16"):
        assert torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16
    assert not torch.is_autocast_enabled("cpu")


def test_a_large_product_leaves_onednn_float32_for_autocast():
    """torch_fast.linear sends 128 x 512 x 512 (32M multiply-adds, oneDNN's on every CPU: Zen's threshold) float32
    products to oneDNN, which autocast does not see: under autocast the product goes to F.linear and comes out
    bfloat16."""
    x, weight = torch.randn(128, 512), torch.randn(512, 512)
    assert 128 * 512 * 512 >= torch_fast.ONEDNN_MIN_MACS
    with precision_context(torch.device("cpu"), "bf16"):
        assert torch_fast.linear(x, weight).dtype == torch.bfloat16
    assert torch_fast.linear(x, weight).dtype == torch.float32


@pytest.mark.parametrize("lstm", [0, 8])
def test_actor_critic_products_in_bf16_and_outputs_in_float32(lstm):
    """Frames through the A3C CNN (and an LSTM): its convolutions and linear layers compute in bfloat16, the
    log-probabilities, entropies, values and the carried state come out float32. (Torch keeps the LSTM cell,
    the acting step, in float32 under CPU autocast and runs the fused sequence, training's, in bfloat16.)"""
    torch.manual_seed(0)
    frames = gym.spaces.Box(0, 255, (20, 20, 4), np.uint8)
    model = ActorCritic(frames, gym.spaces.Discrete(3), encoder="a3c", channels="last", lstm_hidden_size=lstm)
    obs = torch.randint(0, 256, (3, 2, 20, 20, 4), dtype=torch.uint8)
    starts = torch.zeros(3, 2, dtype=torch.bool)
    state = model.initial_state(2)
    with recorded([model]) as (outputs, _), precision_context(torch.device("cpu"), "bf16"):
        log_probs, entropy, values = model.evaluate(obs, torch.zeros(3, 2, dtype=torch.long), state, starts)
        with torch.no_grad():
            actions, action_log_probs, next_state = model.act(obs[0], state, starts[0])
            bootstrap = model.value(obs[1], next_state)
            features = model.actor.encoder(obs.flatten(0, 1)).unflatten(0, (3, 2))
            _, sequence_state = model.actor.core.sequence(features, state, starts)
    assert {dtype for dtype, _ in outputs} == {torch.bfloat16}
    for tensor in (log_probs, entropy, values, action_log_probs, bootstrap, *next_state, *sequence_state):
        assert tensor.dtype == torch.float32
    assert actions.dtype == torch.int64


# ------------------------------------------------------------------------------------------------ agents
@needs_bf16
def test_ppo_bf16_computes_in_bfloat16_and_learns_in_float32():
    agent = PPO("CartPole-v1", precision="bf16", n_steps=32, batch_size=16, n_epochs=1, eval_freq=0, seed=0)
    with recorded(agent.nets.values()) as (outputs, losses):
        agent.learn(32, progress=False)
    assert outputs and {dtype for dtype, _ in outputs} == {torch.bfloat16}
    assert losses == [torch.float32] * 2  # one backward per minibatch
    assert agent.buffer.advantages.dtype == agent.buffer.returns.dtype == agent.buffer.values.dtype == np.float32
    assert float32_state(agent)


@needs_bf16
def test_sac_bf16_computes_in_bfloat16_and_learns_in_float32():
    agent = SAC(
        "Pendulum-v1", precision="bf16", start_steps=40, batch_size=32, hidden_sizes=(32, 32), eval_freq=0, seed=0
    )
    with recorded(agent.nets.values()) as (outputs, losses):
        agent.learn(50, progress=False)
    assert agent.updates == 11  # after each of transitions 40 to 50
    assert {dtype for dtype, _ in outputs} == {torch.bfloat16}
    assert set(losses) == {torch.float32} and len(losses) == 3 * 11  # critic, actor and alpha per update
    assert float32_state(agent)


def test_fp32_runs_without_autocast_and_is_the_default_for_vectors():
    """The float32 path has no autocast at all: every product float32 with autocast off, and a seeded run on
    vectors with precision unset ("auto") gives the same parameters, bit for bit, as one with precision="fp32"."""
    runs = []
    for values in ({}, {"precision": "fp32"}):
        agent = PPO("CartPole-v1", n_steps=32, batch_size=16, n_epochs=2, eval_freq=0, seed=3, **values)
        with recorded(agent.nets.values()) as (outputs, losses):
            agent.learn(64, progress=False)
        assert outputs and set(outputs) == {(torch.float32, False)} and set(losses) == {torch.float32}
        runs.append([p.detach().clone() for p in agent.model.parameters()])
    assert agent.config.precision == "fp32"
    assert all(torch.equal(a, b) for a, b in zip(*runs, strict=True))


@needs_bf16
def test_a3c_bf16_with_one_worker_finishes_with_float32_shared_parameters():
    agent = A3C("CartPole-v1", precision="bf16", workers=1, eval_freq=0, log_freq=100, seed=0)
    agent.learn(300, progress=False)
    assert agent.num_steps >= 300 and agent.updates > 0
    assert agent.parameters.dtype == torch.float32 and float32_state(agent)


# ------------------------------------------------------------------------------------------------ refusal
def test_bf16_on_a_cpu_without_it_is_refused_before_any_environment(no_bf16_cpu, monkeypatch):
    def build(self):
        raise AssertionError("the agent was built")

    monkeypatch.setattr(PPO, "_build", build)
    with pytest.raises(InputError, match=r"precision bf16 asked for, but this CPU \(.*\) has no bfloat16 .*use "):
        PPO("CartPole-v1", precision="bf16")


def test_cli_bf16_on_a_cpu_without_it_exits_2_and_writes_nothing(no_bf16_cpu, tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert main(["train", "a3c", "--env", "CartPole-v1", "--set", "precision=bf16", "--run-dir", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "no bfloat16 instructions" in err and "precision fp32" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not run_dir.exists()


def test_bf16_on_a_gpu_before_ampere_is_refused(monkeypatch):
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (7, 5))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Tesla T4")
    with pytest.raises(InputError, match=r"cuda:0 \(Tesla T4, compute capability 7\.5\) has no bfloat16"):
        check_precision(torch.device("cuda", 0), "bf16")
    check_precision(torch.device("cuda", 0), "fp32")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
    check_precision(torch.device("cuda", 0), "bf16")


def test_an_unknown_precision_is_refused():
    with pytest.raises(InputError, match="precision must be auto or one of fp32, bf16 .*got 'fp16'"):
        PPO("CartPole-v1", precision="fp16")


@pytest.mark.parametrize("features", [("amx_bf16",), ()])
def test_auto_is_bf16_for_ppo_on_frames_where_the_cpu_has_it_and_fp32_elsewhere(features, monkeypatch):
    """PPO measured faster in bf16 on frames with the same learning (`bf16_on_frames`); A3C, slower there, and
    vectors stay fp32, as does every agent on a CPU without bfloat16 instructions."""
    monkeypatch.setattr(devices, "cpu_bf16_features", lambda: features)
    frames = "bf16" if features else "fp32"
    assert PPO(Frames(), n_steps=16, batch_size=16).config.precision == frames
    assert PPO(Frames(), precision="fp32", n_steps=16, batch_size=16).config.precision == "fp32"
    assert A3C(Frames(), workers=1).config.precision == "fp32"
    assert PPO("CartPole-v1").config.precision == "fp32"


@pytest.mark.parametrize(
    "text, found",
    [
        ("flags\t\t: fpu sse avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n", ("avx512_bf16", "amx_bf16")),
        ("flags\t\t: fpu sse avx2 avx512f avx512_vnni\n", ()),
        ("Features\t: fp asimd sve bf16 i8mm\n", ("bf16",)),
        ("", ()),
    ],
)
def test_the_cpu_features_come_from_proc_cpuinfo_where_torch_finds_none(text, found, tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: {}, raising=False)
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(text)
    assert cpu_bf16_features(cpuinfo) == found
    assert cpu_bf16_features(tmp_path / "missing") == ()


# ------------------------------------------------------------------------------------------------ on disk
@needs_bf16
def test_config_yaml_model_card_checkpoint_and_resume_keep_bf16(tmp_path, capsys):
    run_dir = tmp_path / "run"
    agent = PPO("CartPole-v1", precision="bf16", n_steps=16, batch_size=16, n_epochs=1, eval_freq=16, eval_episodes=1)
    agent.learn(16, run_dir=run_dir, progress=False)
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["config"]["precision"] == "bf16"
    card = (run_dir / "README.md").read_text()
    assert "Precision: bf16" in card and " precision=bf16" in card.partition("## Reproduce")[2]
    payload = load_checkpoint(run_dir / "checkpoints" / "latest.pt")
    tensors = [t for net in payload["state"]["nets"].values() for t in net.values()]
    assert tensors and all(t.dtype == torch.float32 for t in tensors)
    assert main(["resume", str(run_dir), "--total-steps", "32"]) == 0
    resumed = acrl.load(run_dir / "checkpoints" / "latest.pt")
    assert resumed.num_steps == 32 and resumed.config.precision == "bf16"
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["config"]["precision"] == "bf16"


def test_a_bf16_run_is_read_in_fp32_on_a_cpu_without_bf16(tmp_path, capsys, monkeypatch):
    """A bf16 checkpoint taken to a CPU without bfloat16: `acrl evaluate` refuses it in one line that names
    --precision fp32, and with it evaluates (and `acrl.load(..., precision="fp32")` loads) in float32."""
    run_dir = tmp_path / "run"
    monkeypatch.setattr(devices, "cpu_bf16_features", lambda: ("amx_bf16",))  # trained where bf16 exists
    PPO("CartPole-v1", precision="bf16", n_steps=32, batch_size=16, n_epochs=1, eval_freq=0, seed=0).learn(
        32, run_dir=run_dir, progress=False
    )
    monkeypatch.setattr(devices, "cpu_bf16_features", lambda: ())  # then read where it does not
    assert main(["evaluate", str(run_dir), "--episodes", "1"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--precision fp32 for acrl resume, evaluate or record" in err
    assert main(["evaluate", str(run_dir), "--episodes", "1", "--precision", "fp32"]) == 0
    assert len(json.loads(capsys.readouterr().out)["returns"]) == 1
    assert acrl.load(run_dir / "checkpoints" / "latest.pt", precision="fp32").config.precision == "fp32"
