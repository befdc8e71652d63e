"""APPO's policy term by hand (target-worker clipping, both sides of PPO's clip and the gradients they leave), and
its loss against IMPALA's where they must agree: on-policy, with the target network a copy of the policy. No Ray
here: the unrolls come from an `UnrollActor` built in this process (its smoke run is in tests/algos/test_impala.py)."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from acrl.algos.appo import APPO, appo_loss, clipped_surrogate, surrogate_ratio
from acrl.algos.impala import batch_unrolls, impala_loss
from acrl.core.errors import InputError
from acrl.parts.actors import UnrollActor
from acrl.parts.workers import picklable_env
from tests.conftest import CueEnv


def test_the_clipped_surrogate_with_target_worker_clipping_by_hand():
    # step  mu   pi'  pi    mu/pi' (clipped at 2)  pi/mu  r     A    min(rA, clip(r, 0.6, 1.4) A)  term
    # 0     0.4  0.4  0.6   1                      1.5    1.5   2    min(3.0, 2.8) = 2.8           -2.8 (clipped)
    # 1     0.5  0.5  0.25  1                      0.5    0.5   -1   min(-0.5, -0.6) = -0.6         0.6 (clipped)
    # 2     0.6  0.2  0.15  3 -> 2                 0.25   0.5   1    min(0.5, 0.6) = 0.5           -0.5
    # 3     0.5  0.5  0.8   1                      1.6    1.6   -1   min(-1.6, -1.4) = -1.6         1.6
    # d term / d log pi = -r A where the unclipped branch is the minimum, else 0: [0, 0, -0.5, 1.6].
    behaviour = torch.log(torch.tensor([[0.4], [0.5], [0.6], [0.5]]))
    target = torch.log(torch.tensor([[0.4], [0.5], [0.2], [0.5]]))
    log_probs = torch.log(torch.tensor([[0.6], [0.25], [0.15], [0.8]])).requires_grad_()
    advantages = torch.tensor([[2.0], [-1.0], [1.0], [-1.0]])

    ratio = surrogate_ratio(log_probs, target, behaviour, clipping=2.0)
    torch.testing.assert_close(ratio.detach(), torch.tensor([[1.5], [0.5], [0.5], [1.6]]))
    terms = clipped_surrogate(advantages, ratio, clip_range=0.4)
    torch.testing.assert_close(terms.detach(), torch.tensor([[-2.8], [0.6], [-0.5], [1.6]]))
    terms.sum().backward()
    torch.testing.assert_close(log_probs.grad, torch.tensor([[0.0], [0.0], [-0.5], [1.6]]))
    # without the target-worker clipping, step 2's r would be 3 * 0.25 = 0.75
    unclipped = surrogate_ratio(log_probs, target, behaviour, clipping=math.inf)
    assert unclipped[2, 0].item() == pytest.approx(0.75)


def test_on_policy_with_the_target_network_a_copy_of_the_policy_the_loss_and_gradient_are_impalas():
    # r = pi / pi' = 1 and pi' = pi: the surrogate is A log-prob's value and gradient, V-trace the same targets.
    agent = APPO(CueEnv, seed=0, lstm_hidden_size=8)
    actor = UnrollActor(0, picklable_env(agent.env), copy.deepcopy(agent.model), 2, 7, seed=0, weights=(0, [None]))
    actor.version = 0  # its model holds the weights of version 0 already: nothing to fetch (no Ray here)
    batch = batch_unrolls([actor.unroll(), actor.unroll()], agent.device)
    assert all(torch.equal(a, b) for a, b in zip(agent.model.parameters(), agent.target_model.parameters()))

    results = []
    for loss_of in (appo_loss, impala_loss):
        agent.model.zero_grad()
        args = (agent.model, agent.target_model) if loss_of is appo_loss else (agent.model,)
        loss, metrics = loss_of(*args, batch, agent.config)
        loss.backward()
        results.append((metrics, [p.grad.clone() for p in agent.model.parameters() if p.grad is not None]))
    (appo, appo_grads), (impala, impala_grads) = results
    for key in ("value_loss", "entropy", "rho"):  # the values differ by the policy term: -A r against -A log pi
        assert appo[key] == pytest.approx(impala[key], rel=1e-5)
    assert appo["clip_fraction"] == 0.0
    for mine, theirs in zip(appo_grads, impala_grads, strict=True):
        torch.testing.assert_close(mine, theirs, atol=1e-5, rtol=1e-4)
    assert all(p.grad is None for p in agent.target_model.parameters())


@pytest.mark.parametrize(
    "values, message",
    [
        ({"clip_range": 0.0}, "clip_range must lie in (0, 1), got 0.0"),
        ({"target_update_interval": 0}, "target_update_interval must be > 0, got 0"),
        ({"target_worker_clipping": 0.0}, "target_worker_clipping must be > 0"),
    ],
)
def test_bad_appo_settings_are_refused_when_the_agent_is_built(values, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        APPO("CartPole-v1", **values)
