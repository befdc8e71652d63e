"""The policy heads (acrl.parts.heads): the log-std bound keeps a gradient on both sides, the acting
chain follows `load_state_dict(..., assign=True)`, and state dicts of the layouts before the heads
(PPO's and A3C's actors, A3C's shared trunk, SAC's actor) load into the same numbers."""

import math

import pytest
import torch

from acrl.algos.a3c import ActorCritic
from acrl.algos.sac import squashed_gaussian_actor
from acrl.parts.heads import bounded_log_std, policy_head

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


# ------------------------------------------------------------------ the log-std bound
@pytest.mark.parametrize("value, expected_log_std", [(-5.001, -5.0), (-4.999, -4.999), (1.999, 1.999), (2.001, 2.0)])
def test_log_std_bound_keeps_its_gradient_on_both_sides(value, expected_log_std):
    """Entropy of a 1-d Gaussian: H = 1/2 + log sqrt(2 pi) + log std, so dH/dlog_std = 1 on both sides
    of each bound (a hard clamp gives 0 at -5.001 and 2.001), and the value is clamped."""
    actor = policy_head(False, 2, 1, (4,), log_std_min=-5.0)
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
    actor = policy_head(False, 1, 1, (1,))
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
    categorical = policy_head(True, 1, 2, (1,))
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


# ------------------------------------------------------------------ checkpoints from before the heads
def test_ppo_and_a3c_actor_state_dicts_of_before_load():
    """Old keys: `mean.0.*`, `mean.2.*`, `log_std` (Gaussian), `logits.*` (Categorical)."""
    actor = policy_head(False, 2, 1, (3,))
    old = {
        "log_std": torch.tensor([-0.5]),
        "mean.0.weight": torch.full((3, 2), 0.1),
        "mean.0.bias": torch.tensor([0.0, 0.1, 0.2]),
        "mean.2.weight": torch.tensor([[1.0, 2.0, 3.0]]),
        "mean.2.bias": torch.tensor([0.5]),
    }
    actor.load_state_dict(old)
    assert actor.log_std.item() == -0.5 and actor.linear.bias.item() == 0.5
    # obs (1, 1): h = tanh(0.2 + (0, 0.1, 0.2)); mean = 1 h0 + 2 h1 + 3 h2 + 0.5
    h = [math.tanh(0.2 + b) for b in (0.0, 0.1, 0.2)]
    mean = actor.sample(torch.ones(1, 2), deterministic=True)[0].item()
    assert mean == pytest.approx(h[0] + 2 * h[1] + 3 * h[2] + 0.5, rel=1e-6)
    categorical = policy_head(True, 2, 2, (3,))
    categorical.load_state_dict(
        {
            "logits.0.weight": torch.zeros(3, 2),
            "logits.0.bias": torch.zeros(3),
            "logits.2.weight": torch.zeros(2, 3),
            "logits.2.bias": torch.tensor([1.0, 0.0]),
        }
    )
    assert categorical.linear.bias.tolist() == [1.0, 0.0]


def test_a3c_shared_trunk_state_dict_of_before_loads():
    """Old keys: `log_std`, `trunk.0.{0,2}.*` (the trunk), `policy_head.0.*`, `value_head.0.*`; the
    parameter order (the flat optimizer's layout) is log-std, trunk, policy layer, value layer."""
    model = ActorCritic(2, 1, False, (3, 3), shared_trunk=True)
    shapes = {
        "log_std": (1,),
        "trunk.0.0.weight": (3, 2),
        "trunk.0.0.bias": (3,),
        "trunk.0.2.weight": (3, 3),
        "trunk.0.2.bias": (3,),
        "policy_head.0.weight": (1, 3),
        "policy_head.0.bias": (1,),
        "value_head.0.weight": (1, 3),
        "value_head.0.bias": (1,),
    }
    old = {key: torch.full(shape, float(i)) for i, (key, shape) in enumerate(shapes.items())}
    model.load_state_dict(old)
    flat = [p.flatten()[0].item() for p in model.parameters()]
    assert flat == [float(i) for i in range(len(shapes))]  # each old tensor where it was, in the old order
    separate = ActorCritic(2, 2, True, (3,))
    separate.load_state_dict(
        {
            "actor.logits.0.weight": torch.zeros(3, 2),
            "actor.logits.0.bias": torch.zeros(3),
            "actor.logits.2.weight": torch.zeros(2, 3),
            "actor.logits.2.bias": torch.tensor([0.0, 2.0]),
            **{f"critic.{k}": v for k, v in separate.critic.state_dict().items()},
        }
    )
    assert separate.sample(torch.zeros(1, 2), deterministic=True).item() == 1


def test_sac_actor_state_dict_of_before_loads():
    """Old keys `net.0.*`, `net.2.*`, `net.4.*` (the last layer holds the means, then the log-stds)."""
    actor = squashed_gaussian_actor(3, 1, (2, 2))
    old = {
        "net.0.weight": torch.zeros(2, 3),
        "net.0.bias": torch.zeros(2),
        "net.2.weight": torch.zeros(2, 2),
        "net.2.bias": torch.zeros(2),
        "net.4.weight": torch.zeros(2, 2),
        "net.4.bias": torch.tensor([0.7, 0.0]),
    }
    actor.load_state_dict(old)
    action, log_pi = actor.sample(torch.zeros(1, 3), deterministic=True)
    assert action.item() == pytest.approx(math.tanh(0.7))
    assert log_pi.item() == pytest.approx(-LOG_SQRT_2PI - math.log(1 - math.tanh(0.7) ** 2), rel=1e-5)
