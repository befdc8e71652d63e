"""The policy heads (acrl.parts.heads): the log-std bound keeps a gradient on both sides, and the acting
chain follows `load_state_dict(..., assign=True)`. (State dicts of the layouts before the heads load
through the checkpoint migrations: tests/unit/test_checkpoint.py.)"""

import math

import pytest
import torch

from acrl.parts.heads import bounded_log_std, head_on
from acrl.parts.nets import mlp_encoder

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def mlp_head(discrete: bool, obs_dim: int, act_dim: int, hidden_sizes: tuple[int, ...], **log_std):
    """A Categorical (discrete) or Gaussian head of act_dim on an MLP encoder obs_dim -> hidden_sizes (tanh)."""
    return head_on(mlp_encoder(obs_dim, hidden_sizes), hidden_sizes[-1], discrete, act_dim, **log_std)


# ------------------------------------------------------------------ the log-std bound
@pytest.mark.parametrize("value, expected_log_std", [(-5.001, -5.0), (-4.999, -4.999), (1.999, 1.999), (2.001, 2.0)])
def test_log_std_bound_keeps_its_gradient_on_both_sides(value, expected_log_std):
    """Entropy of a 1-d Gaussian: H = 1/2 + log sqrt(2 pi) + log std, so dH/dlog_std = 1 on both sides
    of each bound (a hard clamp gives 0 at -5.001 and 2.001), and the value is clamped."""
    actor = mlp_head(False, 2, 1, (4,), log_std_min=-5.0)
    with torch.no_grad():
        actor.log_std.fill_(value)
    _, entropy = actor.log_prob_entropy(actor.encoder(torch.zeros(3, 2)), torch.zeros(3, 1))
    assert entropy[0].item() == pytest.approx(0.5 + LOG_SQRT_2PI + expected_log_std, abs=1e-6)
    entropy.sum().backward()
    assert actor.log_std.grad.item() == pytest.approx(3.0)  # three samples, dH/dlog_std = 1 each


def test_bounded_log_std_is_the_clamp_in_value_and_identity_in_gradient():
    x = torch.tensor([-1e6, -5.001, -5.0, 0.3, 2.0, 2.001, 50.0], requires_grad=True)
    y = bounded_log_std(x, -5.0, 2.0)
    assert y.tolist() == torch.tensor([-5.0, -5.0, -5.0, 0.3, 2.0, 2.0, 2.0]).tolist()  # exact
    (y * torch.arange(7.0)).sum().backward()
    assert x.grad.tolist() == list(range(7))


# ------------------------------------------------------------------ acting after a load
@pytest.mark.parametrize("assign", [False, True])
def test_acting_follows_load_state_dict_with_assign(assign):
    """One hidden unit, weights set by hand: h = tanh(0 * obs + 0) = 0, mean = 1 * h + 0.75 = 0.75;
    the deterministic action must be the loaded 0.75, not the old weights' value."""
    actor = mlp_head(False, 1, 1, (1,))
    state = {
        "log_std": torch.tensor([0.0]),
        "encoder.0.weight": torch.zeros(1, 1),
        "encoder.0.bias": torch.zeros(1),
        "linear.weight": torch.ones(1, 1),
        "linear.bias": torch.tensor([0.75]),
    }
    actor.load_state_dict(state, assign=assign)
    action, log_prob = actor.sample(torch.tensor([[3.0]]), deterministic=True)
    assert action.item() == 0.75
    assert log_prob.item() == pytest.approx(-LOG_SQRT_2PI)
    categorical = mlp_head(True, 1, 2, (1,))
    categorical.load_state_dict(
        {
            "encoder.0.weight": torch.zeros(1, 1),
            "encoder.0.bias": torch.zeros(1),
            "linear.weight": torch.zeros(2, 1),
            "linear.bias": torch.tensor([0.0, 1.0]),
        },
        assign=assign,
    )
    assert categorical.sample(torch.tensor([[3.0]]), deterministic=True)[0].item() == 1
