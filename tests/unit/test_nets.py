"""Action distributions stay finite at extreme parameters (docs/correctness.md item 4); the oneDNN-backed
Linear computes the textbook product and gradients (second derivatives, frozen weights, torch.func and
torch.compile included); the acting path (`layer_chain`) computes the module call and samples from the
softmax."""

import math

import pytest
import torch
from torch import nn

from acrl.core import torch_fast
from acrl.parts import nets
from acrl.parts.heads import head_on
from acrl.parts.nets import TwinQ, forward_chain, layer_chain, mlp, mlp_encoder
from acrl.parts.optim import flatten_parameters


def mlp_head(discrete: bool, obs_dim: int, act_dim: int, hidden_sizes: tuple[int, ...], **log_std):
    """A Categorical (discrete) or Gaussian head of act_dim on an MLP encoder obs_dim -> hidden_sizes (tanh)."""
    return head_on(mlp_encoder(obs_dim, hidden_sizes), hidden_sizes[-1], discrete, act_dim, **log_std)


@pytest.mark.parametrize("log_std", [-105.0, 50.0])
def test_gaussian_extreme_log_std_is_finite(log_std):
    actor = mlp_head(False, 3, 2, (8,))
    with torch.no_grad():
        actor.log_std.fill_(log_std)
    obs = torch.randn(16, 3)
    actions, log_probs = actor.sample(obs)
    lp, entropy = actor.log_prob_entropy(actor.encoder(obs), actions + 3.0)  # far from the mean too
    for t in (actions, log_probs, lp, entropy):
        assert torch.isfinite(t).all()
    lp.mean().backward()
    assert all(torch.isfinite(p.grad).all() for p in actor.parameters() if p.grad is not None)


def test_gaussian_std_floor_and_ceiling():
    actor = mlp_head(False, 1, 1, (4,), log_std_min=-5.0)
    with torch.no_grad():
        actor.log_std.fill_(-105.0)
    assert actor.distribution(torch.zeros(1, 4)).stddev.item() == pytest.approx(math.exp(-5.0))
    with torch.no_grad():
        actor.log_std.fill_(50.0)
    assert actor.distribution(torch.zeros(1, 4)).stddev.item() == pytest.approx(math.exp(2.0))


def test_categorical_log_prob_matches_softmax_by_hand():
    actor = mlp_head(True, 2, 3, (4,))
    features = actor.encoder(torch.zeros(1, 2))
    logits = actor(features)[0]
    lp, entropy = actor.log_prob_entropy(features, torch.tensor([1]))
    probs = torch.exp(logits) / torch.exp(logits).sum()
    assert lp.item() == pytest.approx(math.log(probs[1].item()), abs=1e-6)
    assert entropy.item() == pytest.approx(-(probs * probs.log()).sum().item(), abs=1e-6)


def test_mlp_orthogonal_init_and_zero_bias():
    net = mlp(4, (8,), 2, output_gain=0.01)
    hidden, out = net[0], net[2]
    # Orthogonal rows scaled by the gain: W W^T = gain^2 I for a wide-to-narrow layer.
    torch.testing.assert_close(out.weight @ out.weight.T, 0.01**2 * torch.eye(2), atol=1e-7, rtol=0)
    torch.testing.assert_close(hidden.weight.T @ hidden.weight, 2.0 * torch.eye(4), atol=1e-5, rtol=0)
    assert not hidden.bias.any() and not out.bias.any()


def test_twin_q_shapes_and_q1():
    q = TwinQ(3, 2, (8, 8))
    obs, act = torch.randn(5, 3), torch.randn(5, 2)
    q1, q2 = q(obs, act)
    assert q1.shape == q2.shape == (5,)
    torch.testing.assert_close(q.q1(obs, act), q1)
    assert not torch.equal(q1, q2)


def _onednn_calls(fn):
    """The number of oneDNN products `fn()` runs."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        calls = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is torch.ops.mkldnn._linear_pointwise.default:
                Count.calls += 1
            return func(*args, **(kwargs or {}))

    with Count():
        fn()
    return Count.calls


ONEDNN = torch_fast.ONEDNN_AVAILABLE and torch_fast.private_apis_enabled()
needs_onednn = pytest.mark.skipif(not ONEDNN, reason="this torch has no oneDNN, or ACRL_PRIVATE_APIS=0")


@needs_onednn
def test_large_linear_runs_on_onednn_with_the_textbook_gradients():
    torch.manual_seed(0)
    layer = nets.Linear(750, 600)
    x = torch.randn(100, 750, requires_grad=True)
    upstream = torch.randn(100, 600)

    def step():
        layer(x).mul(upstream).sum().backward()  # dL/dy = upstream

    assert 100 * 750 * 600 >= torch_fast.ONEDNN_MIN_MACS
    assert _onednn_calls(step) == 3  # y = x W^T + b, dL/dx = g W, dL/dW = g^T x
    x64, w64, g64 = x.detach().double(), layer.weight.detach().double(), upstream.double()
    expected = x64 @ w64.T + layer.bias.detach().double()
    torch.testing.assert_close(layer(x).detach().double(), expected, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(x.grad.double(), g64 @ w64, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(layer.weight.grad.double(), g64.T @ x64, rtol=1e-5, atol=1e-3)
    torch.testing.assert_close(layer.bias.grad.double(), g64.sum(0), rtol=1e-5, atol=1e-4)


def test_small_or_gradient_free_linears_and_the_state_dict():
    small = nets.Linear(4, 8)
    assert _onednn_calls(lambda: small(torch.randn(1, 4)).sum().backward()) == 0  # below ONEDNN_MIN_MACS
    large = nets.Linear(750, 600)
    x = torch.randn(100, 750)
    with torch.no_grad():
        expected = 1 if ONEDNN else 0
        assert _onednn_calls(lambda: large(x)) == expected  # no autograd node, the same product
    plain = torch.nn.Linear(750, 600)
    plain.load_state_dict(large.state_dict())  # checkpoints are nn.Linear's
    torch.testing.assert_close(plain(x), large(x), rtol=1e-5, atol=1e-4)


def test_layer_chain_computes_the_module_call_and_follows_in_place_updates():
    trunk = nn.Sequential(mlp(3, (8,), 6, "relu"), nn.ReLU())
    head = mlp(6, (), 2)
    chain = layer_chain(trunk, head)
    assert [activation for _, _, activation in chain] == [torch.relu, torch.relu, None]
    x = torch.randn(5, 3)
    torch.testing.assert_close(forward_chain(chain, x), head(trunk(x)))
    flat = flatten_parameters(nn.ModuleList([trunk, head]))
    with torch.no_grad():
        flat.mul_(-0.5)
    torch.testing.assert_close(forward_chain(chain, x), head(trunk(x)))
    with pytest.raises(TypeError, match="Linear, Tanh and ReLU"):
        layer_chain(nn.Sequential(nn.Linear(2, 2), nn.Dropout()))


def test_categorical_sample_is_a_draw_from_the_softmax():
    """Logits (0, ln 3) everywhere: P(action 1) = 3/4; 20,000 draws within 4 standard errors."""
    actor = mlp_head(True, 2, 2, (4,))
    with torch.no_grad():
        actor.linear.weight.zero_()
        actor.linear.bias.copy_(torch.tensor([0.0, math.log(3.0)]))
    torch.manual_seed(0)
    actions, log_probs = actor.sample(torch.zeros(20_000, 2))
    assert abs(actions.float().mean().item() - 0.75) < 4 * math.sqrt(0.75 * 0.25 / 20_000)
    torch.testing.assert_close(log_probs, torch.where(actions == 1, math.log(0.75), math.log(0.25)))


@pytest.mark.parametrize("shape", [(4, 64), (512, 64)])
def test_tanh_values_and_gradients_match_torch_tanh(shape):
    """(4, 64) stays on torch.tanh; (512, 64) goes through 2 sigmoid(2x) - 1 (`SIGMOID_TANH_MIN_ELEMENTS`)."""
    assert (math.prod(shape) >= torch_fast.SIGMOID_TANH_MIN_ELEMENTS) == (shape[0] == 512)
    x = (torch.randn(shape) * 3).requires_grad_()
    weights = torch.randn(shape)
    (nets.Tanh()(x) * weights).sum().backward()
    ours, x.grad = x.grad, None
    (torch.tanh(x) * weights).sum().backward()
    torch.testing.assert_close(nets.Tanh()(x), torch.tanh(x), rtol=0, atol=3e-7)
    torch.testing.assert_close(ours, x.grad, rtol=0, atol=3e-6)  # weights * (1 - y^2), |weights| up to ~4
