"""PPO's update against hand-computed values (docs/correctness.md item 6): global gradient-norm
clipping, the clipped surrogate with per-minibatch advantage normalisation, the logged
approximate KL and clip fraction, the target-KL early stop and value clipping.

The agents here have their output layers set by hand so that every quantity is known without
running the networks: the policy's logits are [0, ln 3] at every state (pi(0) = 1/4,
pi(1) = 3/4) and the critic's value is a constant. The rollout buffer is filled directly, with
stored log-probabilities equal to the current ones minus chosen offsets, so that the
probability ratios are exp(offset).
"""

import copy
import math

import numpy as np
import pytest
import torch

from acrl.algos.ppo import PPO
from acrl.parts.optim import clip_grad_norm

LOG_PI = (math.log(0.25), math.log(0.75))  # log pi(a | s) for a = 0, 1 at every state
ENTROPY = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))


# --------------------------------------------------------------------------- clip_grad_norm
def params_with_grads(grads):
    params = []
    for grad in grads:
        p = torch.nn.Parameter(torch.zeros_like(grad))
        p.grad = grad.clone()
        params.append(p)
    return params


def test_clip_grad_norm_hand_case():
    (p,) = params_with_grads([torch.tensor([3.0, 4.0])])
    norm = clip_grad_norm([p], max_norm=1.0)
    assert norm.item() == pytest.approx(5.0)
    torch.testing.assert_close(p.grad, torch.tensor([0.6, 0.8]), atol=1e-6, rtol=0)
    # The norm is global over all parameters, not per parameter: [3] and [4] together have norm 5.
    a, b = params_with_grads([torch.tensor([3.0]), torch.tensor([4.0])])
    assert clip_grad_norm([a, b], max_norm=1.0).item() == pytest.approx(5.0)
    torch.testing.assert_close(torch.cat([a.grad, b.grad]), torch.tensor([0.6, 0.8]), atol=1e-6, rtol=0)
    # Under the limit nothing changes.
    (p,) = params_with_grads([torch.tensor([3.0, 4.0])])
    assert clip_grad_norm([p], max_norm=10.0).item() == pytest.approx(5.0)
    torch.testing.assert_close(p.grad, torch.tensor([3.0, 4.0]))


@pytest.mark.parametrize("max_norm", [0.1, 1.0, 1e3])
def test_clip_grad_norm_matches_torch(max_norm):
    gen = torch.Generator().manual_seed(0)
    grads = [torch.randn(4, 3, generator=gen), torch.randn(3, generator=gen), torch.randn(2, 5, generator=gen)]
    ours = params_with_grads(grads)
    ours.append(torch.nn.Parameter(torch.ones(2)))  # no gradient: skipped, left without one
    theirs = params_with_grads(grads)
    norm = clip_grad_norm(ours, max_norm)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm)
    torch.testing.assert_close(norm, expected)
    for a, b in zip(ours, theirs):  # zip stops before the gradient-less parameter
        torch.testing.assert_close(a.grad, b.grad)
    assert ours[-1].grad is None
    if max_norm < expected:  # clipped: the new global norm is max_norm
        new_norm = torch.linalg.vector_norm(torch.cat([p.grad.ravel() for p in ours[:-1]]))
        assert new_norm.item() == pytest.approx(max_norm, rel=1e-5)


# --------------------------------------------------------------------------- the PPO update
def hand_agent(n_steps=4, value=0.0, **hyperparameters):
    """A CartPole PPO agent (one env, one minibatch of the whole rollout unless batch_size says
    otherwise) whose policy is pi = (1/4, 3/4) and whose value is `value` at every state."""
    settings = {"seed": 0, "n_steps": n_steps, "batch_size": 4, "n_epochs": 1, "hidden_sizes": (4,)}
    agent = PPO("CartPole-v1", **(settings | hyperparameters))
    with torch.no_grad():
        agent.model.actor.head.linear.weight.zero_()
        agent.model.actor.head.linear.bias.copy_(torch.tensor([0.0, math.log(3.0)]))
        agent.model.critic.net[-1].weight.zero_()
        agent.model.critic.net[-1].bias.fill_(value)
    return agent


def fill_buffer(agent, actions, offsets, advantages, returns=None, values=None):
    """Write one rollout by hand; stored log-probs are log pi(a) - offset, so ratio = exp(offset)."""
    buf = agent.buffer
    n = len(actions)
    assert buf.observations.shape[:2] == (n, 1)
    buf.observations[:] = np.random.default_rng(1).normal(size=buf.observations.shape)
    buf.actions[:] = np.asarray(actions).reshape(n, 1)
    buf.log_probs[:] = (np.array([LOG_PI[a] for a in actions]) - np.asarray(offsets)).reshape(n, 1)
    buf.advantages[:] = np.asarray(advantages).reshape(n, 1)
    buf.returns[:] = np.zeros((n, 1)) if returns is None else np.asarray(returns).reshape(n, 1)
    buf.values[:] = np.zeros((n, 1)) if values is None else np.asarray(values).reshape(n, 1)


def surrogate(offsets, advantages, clip, ddof=1, clipped=True):
    """-mean(min(r A, clip(r, 1 - eps, 1 + eps) A)) with A normalised (std with `ddof`)."""
    r = np.exp(np.asarray(offsets, dtype=np.float64))
    a = np.asarray(advantages, dtype=np.float64)
    a = (a - a.mean()) / (a.std(ddof=ddof) + 1e-8)
    r_clip = np.clip(r, 1 - clip, 1 + clip) if clipped else r
    return float(-np.mean(np.minimum(r * a, r_clip * a)))


ACTIONS = [0, 1, 1, 0]
OFFSETS = [0.5, -0.5, 0.0, 0.0]  # ratios e^0.5 = 1.65 and e^-0.5 = 0.61 lie outside [0.8, 1.2]
ADVANTAGES = [2.0, -1.0, 0.5, -0.3]  # normalised: positive where r > 1.2, negative where r < 0.8


def test_clipped_surrogate_clip_fraction_and_approx_kl_by_hand():
    agent = hand_agent(clip_range=0.2, max_grad_norm=1e6)
    fill_buffer(agent, ACTIONS, OFFSETS, ADVANTAGES)
    metrics = agent.update()

    # By hand: mean = 0.3, std (Bessel) = sqrt(4.98 / 3) = 1.288; normalised A = (1.319, -1.009, 0.155, -0.466).
    mean = 0.3
    std = math.sqrt(sum((a - mean) ** 2 for a in ADVANTAGES) / 3)
    norm = [(a - mean) / (std + 1e-8) for a in ADVANTAGES]
    # Sample 0: r = 1.65 > 1.2, A > 0: the clipped 1.2 A is the minimum. Sample 1: r = 0.61 < 0.8,
    # A < 0: 0.8 A is the minimum. Samples 2, 3: r = 1, the term is A itself.
    expected = -(1.2 * norm[0] + 0.8 * norm[1] + norm[2] + norm[3]) / 4
    assert expected == pytest.approx(surrogate(OFFSETS, ADVANTAGES, 0.2))
    assert metrics["train/policy_loss"] == pytest.approx(expected, rel=1e-5, abs=1e-6)
    # The test tells the right formula from plausible wrong ones.
    for wrong in (
        surrogate(OFFSETS, ADVANTAGES, 0.2, ddof=0),
        surrogate(OFFSETS, ADVANTAGES, 0.2, clipped=False),
        -np.mean(np.exp(OFFSETS) * np.array(ADVANTAGES)),
    ):
        assert abs(wrong - expected) > 1e-3

    assert metrics["train/clip_fraction"] == pytest.approx(0.5)  # |r - 1| > 0.2 for samples 0 and 1
    # Schulman's k3: mean((r - 1) - log r) = ((e^0.5 - 1.5) + (e^-0.5 - 0.5)) / 4 = 0.0638.
    approx_kl = ((math.exp(0.5) - 1 - 0.5) + (math.exp(-0.5) - 1 + 0.5)) / 4
    assert metrics["train/approx_kl"] == pytest.approx(approx_kl, rel=1e-5)
    assert metrics["train/entropy"] == pytest.approx(ENTROPY, rel=1e-5)


def test_advantages_are_normalised_per_minibatch(monkeypatch):
    """Two minibatches of 4 out of 8 samples: each is normalised with its own mean and std."""
    agent = hand_agent(n_steps=8, batch_size=4, clip_range=0.2, max_grad_norm=1e6)
    actions = [0, 1, 1, 0, 1, 0, 0, 1]
    offsets = [0.5, -0.5, 0.1, -0.1, 0.3, -0.3, 0.0, 0.05]
    advantages = [1.0, 2.0, 3.0, 4.0, 10.0, -20.0, 30.0, 40.0]
    fill_buffer(agent, actions, offsets, advantages)
    order = copy.deepcopy(agent.rng).permutation(8)  # the shuffle the update will draw
    monkeypatch.setattr(agent.optimizer, "step", lambda: None)  # both minibatches see the same policy
    metrics = agent.update()
    halves = [order[:4], order[4:]]
    off, adv = np.array(offsets), np.array(advantages)
    expected = np.mean([surrogate(off[i], adv[i], 0.2) for i in halves])
    assert metrics["train/policy_loss"] == pytest.approx(expected, rel=1e-5, abs=1e-6)
    assert abs(expected - surrogate(off, adv, 0.2)) > 1e-3  # normalising over the whole rollout differs
    r = np.exp(off)
    assert metrics["train/clip_fraction"] == pytest.approx(np.mean(np.abs(r - 1) > 0.2))
    assert metrics["train/approx_kl"] == pytest.approx(np.mean((r - 1) - off), rel=1e-5)


def grad_norms_at_step(agent, monkeypatch):
    """Record the global gradient norm and the gradients each time the optimizer steps."""
    seen = []
    step = agent.optimizer.step

    def recording_step():
        grads = [p.grad.clone() for p in agent.params if p.grad is not None]
        seen.append((torch.linalg.vector_norm(torch.cat([g.ravel() for g in grads])).item(), grads))
        step()

    monkeypatch.setattr(agent.optimizer, "step", recording_step)
    return seen


def test_update_clips_the_global_gradient_norm(monkeypatch):
    runs = {}
    for max_grad_norm in (1e6, 1e-3):
        agent = hand_agent(clip_range=0.2, max_grad_norm=max_grad_norm, value=0.5)
        fill_buffer(agent, ACTIONS, OFFSETS, ADVANTAGES, returns=[1.0, -1.0, 2.0, 0.0])
        runs[max_grad_norm] = grad_norms_at_step(agent, monkeypatch)
        agent.update()
    ((raw_norm, raw_grads),) = runs[1e6]
    ((clipped_norm, clipped_grads),) = runs[1e-3]
    assert raw_norm > 1e-2  # the unclipped gradient is well above the limit
    assert clipped_norm == pytest.approx(1e-3, rel=1e-4)
    scale = 1e-3 / (raw_norm + 1e-6)  # torch.nn.utils.clip_grad_norm_'s coefficient
    for raw, clipped in zip(raw_grads, clipped_grads, strict=True):
        torch.testing.assert_close(clipped, raw * scale, rtol=1e-4, atol=1e-9)


def test_target_kl_stops_before_any_gradient_step():
    agent = hand_agent(clip_range=0.2, target_kl=1e-9)
    fill_buffer(agent, ACTIONS, OFFSETS, ADVANTAGES)
    before = [p.detach().clone() for p in agent.params]
    metrics = agent.update()
    for old, new in zip(before, agent.params, strict=True):
        assert torch.equal(old, new)
    assert not agent.optimizer.state  # Adam never stepped
    assert "train/policy_loss" not in metrics and "train/approx_kl" not in metrics

    # The threshold is 1.5 * target_kl on the hand value of the approximate KL (0.0638).
    approx_kl = ((math.exp(0.5) - 1.5) + (math.exp(-0.5) - 0.5)) / 4
    for factor, stops in ((0.95, True), (1.05, False)):
        agent = hand_agent(clip_range=0.2, target_kl=factor * approx_kl / 1.5)
        fill_buffer(agent, ACTIONS, OFFSETS, ADVANTAGES)
        before = [p.detach().clone() for p in agent.params]
        agent.update()
        changed = any(not torch.equal(old, new) for old, new in zip(before, agent.params, strict=True))
        assert changed != stops, factor


@pytest.mark.parametrize(
    "clip_range_vf, expected",
    [
        # V = 1 everywhere; unclipped (V - R)^2 = (4, 4, 0.01, 0): mean 2.0025.
        (None, 2.0025),
        # V - V_old = (0.5, -0.2, -1.0, 0.05) clipped to (0.2, -0.2, -0.2, 0.05): V_clip = (0.7, 1.0, 1.8, 1.0),
        # (V_clip - R)^2 = (5.29, 4, 0.81, 0); the elementwise max with the unclipped: (5.29, 4, 0.81, 0),
        # mean 2.525.
        (0.2, 2.525),
    ],
)
def test_value_loss_by_hand(clip_range_vf, expected):
    agent = hand_agent(value=1.0, clip_range_vf=clip_range_vf)
    fill_buffer(agent, ACTIONS, OFFSETS, ADVANTAGES, returns=[3.0, -1.0, 0.9, 1.0], values=[0.5, 1.2, 2.0, 0.95])
    metrics = agent.update()
    assert metrics["train/value_loss"] == pytest.approx(expected, rel=1e-5)


def test_a_whole_rollout_minibatch_is_normalised_the_same_in_every_epoch():
    """One minibatch of the whole rollout, 3 epochs: each pass sees A normalised over the rollout."""
    agent = hand_agent(n_epochs=3)
    fill_buffer(agent, ACTIONS, OFFSETS, ADVANTAGES)
    std = math.sqrt(sum((a - 0.3) ** 2 for a in ADVANTAGES) / 3)  # mean 0.3, Bessel's std
    expected = torch.tensor([(a - 0.3) / (std + 1e-8) for a in ADVANTAGES])
    batches = list(agent.buffer.minibatches(4, agent.rng, 3, normalize_advantages=True))
    assert len(batches) == 3
    for batch in batches:
        torch.testing.assert_close(batch["advantages"], expected[None])  # (1 step, 4 one-step sequences)
    raw = next(agent.buffer.minibatches(4, agent.rng, 1))
    torch.testing.assert_close(raw["advantages"], torch.tensor(ADVANTAGES)[None])  # without the flag: as stored


def test_entropy_bonus_gradient_by_hand(monkeypatch):
    """Advantages 0 and ratios 1: the policy term has no gradient, so the actor's gradient is that of
    -ent_coef * H. With logits z = (0, ln 3) at every state, p = (1/4, 3/4) and
    dH/dz_k = -p_k (log p_k + H): the output bias gets -0.1 * (dH/dz_0, dH/dz_1) = (-0.0206, +0.0206),
    which pushes the policy towards more entropy; a flipped sign gives the opposite."""
    agent = hand_agent(clip_range=0.2, max_grad_norm=1e6, ent_coef=0.1)
    fill_buffer(agent, ACTIONS, [0.0] * 4, [0.0] * 4)
    seen = []
    monkeypatch.setattr(agent.optimizer, "step", lambda: seen.append(agent.model.actor.head.linear.bias.grad.clone()))
    metrics = agent.update()
    p = (0.25, 0.75)
    d_entropy = [-pk * (math.log(pk) + ENTROPY) for pk in p]
    (bias_grad,) = seen
    torch.testing.assert_close(bias_grad, torch.tensor([-0.1 * d for d in d_entropy]), rtol=1e-5, atol=1e-7)
    assert bias_grad[0] < 0 < bias_grad[1]  # gradient descent raises z_0: towards the uniform policy
    assert metrics["train/entropy"] == pytest.approx(ENTROPY, rel=1e-5)
    assert metrics["train/policy_loss"] == pytest.approx(0.0, abs=1e-7)


def test_learning_rate_anneals_linearly_through_the_update():
    """anneal_lr with 16 total steps and rollouts of 4: the k-th update (k = 0..3) runs at
    lr = 1e-3 * (1 - 4k / 16) = 1e-3, 7.5e-4, 5e-4, 2.5e-4 (steps taken before its rollout)."""
    agent = PPO(
        "CartPole-v1",
        seed=0,
        n_steps=4,
        batch_size=4,
        n_epochs=1,
        hidden_sizes=(4,),
        learning_rate=1e-3,
        anneal_lr=True,
        total_steps=16,
    )
    rates = []
    for _ in range(4):
        metrics = agent.iteration(4)
        rates.append((metrics["train/learning_rate"], agent.optimizer.param_groups[0]["lr"]))
    for (logged, used), expected in zip(rates, (1e-3, 7.5e-4, 5e-4, 2.5e-4), strict=True):
        assert logged == used == pytest.approx(expected, rel=1e-12)
