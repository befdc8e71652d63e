"""Each private-API path of acrl.core.torch_fast against its public fallback (the same outputs), the
switch that turns them off, and the Linear and Tanh paths under second derivatives, frozen weights,
torch.func and torch.compile (docs: the oneDNN Linear of acrl.parts.nets)."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from acrl.core import torch_fast
from acrl.parts import nets
from acrl.parts.nets import mlp

needs_private = pytest.mark.skipif(
    not (torch_fast.ONEDNN_AVAILABLE and torch_fast.private_apis_enabled()),
    reason="this torch has no oneDNN, or ACRL_PRIVATE_APIS=0",
)


def _ops(fn):
    """The set of aten/mkldnn ops `fn()` dispatches (forward and backward)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = set()

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.add(str(func.overloadpacket))
            return func(*args, **(kwargs or {}))

    with Record():
        fn()
    return seen


# ---------------------------------------------------------------------------- each path, both ways
@needs_private
@pytest.mark.parametrize("rows", [100, torch_fast.LONG_REDUCTION_ROWS])
def test_linear_private_and_fallback_paths_agree(private_apis, rows):
    """Outputs and the three gradients, at a short batch and at one whose weight gradient torch.mm computes."""
    gen = torch.Generator().manual_seed(0)
    x, w = torch.randn(rows, 750, generator=gen), torch.randn(600, 750, generator=gen)
    b = torch.randn(600, generator=gen)
    u = torch.randn(rows, 600, generator=gen)
    results = {}
    for enabled in (True, False):
        private_apis(enabled)
        xs, ws, bs = (t.clone().requires_grad_() for t in (x, w, b))
        ops = _ops(lambda: torch_fast.linear(xs, ws, bs).mul(u).sum().backward())  # noqa: B023
        assert ("mkldnn._linear_pointwise" in ops) == enabled, ops
        if enabled:  # torch.mm only for the long batch's weight gradient
            assert ("aten.mm" in ops) == (rows >= torch_fast.LONG_REDUCTION_ROWS), ops
        results[enabled] = [torch_fast.linear(xs, ws, bs).detach(), xs.grad, ws.grad, bs.grad]
    for private, public in zip(results[True], results[False], strict=True):
        torch.testing.assert_close(private, public, rtol=1e-4, atol=1e-3)


def test_tanh_private_and_fallback_paths_agree(private_apis):
    x = (torch.randn(512, 64, generator=torch.Generator().manual_seed(0)) * 3).requires_grad_()
    results = {}
    for enabled in (True, False):
        private_apis(enabled)
        x.grad = None
        ops = _ops(lambda: torch_fast.tanh(x).mul(x).sum().backward())
        assert ("aten.sigmoid" in ops) == (enabled and torch_fast.private_apis_enabled()), ops
        results[enabled] = [torch_fast.tanh(x).detach(), x.grad.clone()]
    torch.testing.assert_close(results[True][0], results[False][0], rtol=0, atol=3e-7)
    torch.testing.assert_close(results[True][1], results[False][1], rtol=0, atol=3e-6)


def test_lstm_private_and_fallback_paths_agree(private_apis):
    """Outputs, final state and every gradient (inputs, state, the cell's four parameters) of the fused
    LSTM equal the cell loop's; only the private path runs oneDNN's RNN layer."""
    gen = torch.Generator().manual_seed(0)
    cell = nn.LSTMCell(4, 6)
    x, h, c = (
        torch.randn(5, 2, 4, generator=gen),
        torch.randn(1, 2, 6, generator=gen),
        torch.randn(1, 2, 6, generator=gen),
    )
    results = {}
    for enabled in (True, False):
        private_apis(enabled)
        cell.zero_grad()
        xs, hs, cs = (t.clone().requires_grad_() for t in (x, h, c))
        outputs = {}

        def run():
            out, (h_last, c_last) = torch_fast.lstm(cell, xs, (hs, cs))  # noqa: B023
            outputs.update(out=out.detach(), h=h_last.detach(), c=c_last.detach())  # noqa: B023
            (out.square().sum() + c_last.sum()).backward()

        ops = _ops(run)
        assert ("aten.mkldnn_rnn_layer" in ops) == (enabled and torch_fast.private_apis_enabled()), ops
        grads = [xs.grad, hs.grad, cs.grad, *(p.grad.clone() for p in cell.parameters())]
        results[enabled] = [outputs["out"], outputs["h"], outputs["c"], *grads]
    for private, public in zip(results[True], results[False], strict=True):
        torch.testing.assert_close(private, public, rtol=0, atol=1e-6)


def _summaries(log_dir):
    from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
    from tensorboard.compat.proto.event_pb2 import Event

    found = []
    for name in sorted(os.listdir(log_dir)):
        for record in RawEventFileLoader(os.path.join(log_dir, name)).Load():
            event = Event.FromString(record)
            if event.HasField("summary"):
                found += [(event.step, value.tag, value.image.encoded_image_string) for value in event.summary.value]
    return found


@pytest.mark.parametrize("enabled", [True, False])
def test_add_summary_writes_the_same_event_either_way(enabled, private_apis, tmp_path):
    from tensorboard.compat.proto.summary_pb2 import Summary
    from torch.utils.tensorboard import SummaryWriter

    private_apis(enabled)
    writer = SummaryWriter(str(tmp_path))
    image = Summary.Image(height=1, width=2, colorspace=3, encoded_image_string=b"GIF89a-bytes")
    torch_fast.add_summary(writer, Summary(value=[Summary.Value(tag="video", image=image)]), 7)
    writer.close()
    assert _summaries(tmp_path) == [(7, "video", b"GIF89a-bytes")]
    assert len(os.listdir(tmp_path)) == (1 if enabled and torch_fast.private_apis_enabled() else 2)


def test_environment_variable_turns_the_private_paths_off():
    code = (
        "from acrl.core import torch_fast; import torch;"
        "x = torch.randn(512, 64);"
        "print(torch_fast.private_apis_enabled(), torch.equal(torch_fast.tanh(x), torch.tanh(x)))"
    )
    env = {**os.environ, "ACRL_PRIVATE_APIS": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]  # off, and tanh is torch's exactly


# ---------------------------------------------------------------------------- Linear and Tanh, any use
@needs_private
def test_second_derivatives_through_a_large_linear_equal_f_linear():
    """A gradient penalty: P = |dL/dx|^2 with L = sum(y * u), y = x W^T + b, so dL/dx = u W and
    dP/dW = 2 u^T (u W) (by hand); the oneDNN path must record its backward (before, dP/dW was 0)."""
    gen = torch.Generator().manual_seed(0)
    layer = nets.Linear(750, 600)
    x = torch.randn(100, 750, generator=gen, requires_grad=True)
    u = torch.randn(100, 600, generator=gen)
    (grad_x,) = torch.autograd.grad((layer(x) * u).sum(), x, create_graph=True)
    (penalty_w,) = torch.autograd.grad(grad_x.square().sum(), layer.weight)
    u64, w64 = u.double(), layer.weight.detach().double()
    torch.testing.assert_close(penalty_w.double(), 2 * u64.T @ (u64 @ w64), rtol=1e-4, atol=1e-2)
    assert penalty_w.abs().max() > 1.0


def test_second_derivatives_through_a_large_tanh():
    """d/dx of d tanh(x)/dx summed = d(1 - tanh^2)/dx = -2 tanh(x) (1 - tanh(x)^2), by hand."""
    x = torch.linspace(-3, 3, 512 * 64).reshape(512, 64).requires_grad_()
    (first,) = torch.autograd.grad(nets.Tanh()(x).sum(), x, create_graph=True)
    (second,) = torch.autograd.grad(first.sum(), x)
    t = torch.tanh(x.detach().double())
    torch.testing.assert_close(second.double(), -2 * t * (1 - t * t), rtol=0, atol=1e-5)


def test_frozen_weight_with_a_trainable_bias_gets_the_bias_gradient():
    """dL/db = sum over rows of dL/dy = 100 * ones for L = sum(y), whatever path the product takes."""
    layer = nets.Linear(750, 600)
    layer.weight.requires_grad_(False)
    layer(torch.randn(100, 750)).sum().backward()
    torch.testing.assert_close(layer.bias.grad, torch.full((600,), 100.0))


def _plain_copy(net):
    """The same net built from nn.Linear and nn.Tanh."""
    plain = nn.Sequential(
        *[nn.Linear(m.in_features, m.out_features) if isinstance(m, nn.Linear) else nn.Tanh() for m in net]
    )
    plain.load_state_dict(net.state_dict())
    return plain


@pytest.mark.parametrize("hidden", [(600,), (64,)])
def test_torch_func_grad_and_vmap_on_large_layers_and_tanh(hidden):
    """torch.func.grad and vmap through a 750-600 Linear with a Tanh over (100, 600) = 60,000
    elements, and through a small net: the values of the same net built from nn.Linear/nn.Tanh."""
    torch.manual_seed(0)
    net = mlp(750, hidden, 3)
    plain = _plain_copy(net)
    x = torch.randn(100, 750)

    def loss(params, module):
        return torch.func.functional_call(module, params, (x,)).square().mean()

    ours = torch.func.grad(loss)(dict(net.named_parameters()), net)
    reference = torch.func.grad(loss)(dict(plain.named_parameters()), plain)
    for key in reference:
        torch.testing.assert_close(ours[key], reference[key], rtol=1e-4, atol=1e-6)
    batched = torch.func.vmap(net)(x.reshape(4, 25, 750))
    torch.testing.assert_close(batched.reshape(100, 3), plain(x), rtol=1e-4, atol=1e-5)


@needs_private
def test_compiled_mlp_with_a_large_layer_traces_public_ops_only():
    """Under torch.compile the large layer and the large tanh step aside to F.linear and torch.tanh:
    the traced graph holds no oneDNN or sigmoid op (before, oneDNN's op reached Inductor, which raised
    InductorError) and computes the eager values. Inductor itself takes ~35 s here, so the graph is
    checked with a recording backend; `test_inductor_compiles_a_large_mlp` (slow) runs Inductor."""
    torch.manual_seed(0)
    net = mlp(750, (600,), 3)
    x = torch.randn(100, 750)
    graphs = []

    def record(graph_module, example_inputs):
        graphs.append({str(node.target) for node in graph_module.graph.nodes})
        return graph_module.forward

    compiled = torch.compile(net, backend=record, fullgraph=True)
    torch.testing.assert_close(compiled(x), net(x), rtol=1e-4, atol=1e-5)
    targets = set().union(*graphs)
    assert not any("mkldnn" in t or "sigmoid" in t or "OneDNN" in t for t in targets), targets
    assert any("linear" in t for t in targets), targets


@pytest.mark.slow
def test_inductor_compiles_a_large_mlp():
    torch.manual_seed(0)
    net = mlp(750, (600,), 3)
    x = torch.randn(100, 750)
    torch.testing.assert_close(torch.compile(net)(x), net(x), rtol=1e-4, atol=1e-5)


def test_a_small_linear_is_f_linear_exactly():
    """Below ONEDNN_MIN_MACS nothing private runs: the same bits as F.linear."""
    layer = nets.Linear(4, 8)
    x = torch.randn(3, 4)
    assert torch.equal(layer(x), F.linear(x, layer.weight, layer.bias))
    assert np.isfinite(layer(x).detach().numpy()).all()


def test_the_cpu_generation_is_read_from_cpuinfo_and_picks_the_onednn_threshold(tmp_path):
    """The first processor's vendor_id and cpu family; a missing file (not Linux) gives None; AMD family 25's threshold
    is 32M multiply-adds (`ONEDNN_MIN_MACS_BY_CPU`)."""
    info = tmp_path / "cpuinfo"
    info.write_text(
        "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n\n"
        "processor\t: 1\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n"
    )
    assert torch_fast.cpu_generation(info) == ("AuthenticAMD", 25)
    assert torch_fast.cpu_generation(tmp_path / "absent") is None
    assert torch_fast.ONEDNN_MIN_MACS_BY_CPU.get(("AuthenticAMD", 25)) == 32 * 2**20
