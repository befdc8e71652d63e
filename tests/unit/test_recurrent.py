"""The LSTM core (acrl.parts.recurrent) against a hand-computed one-cell LSTM."""

from __future__ import annotations

import math

import pytest
import torch

from acrl.parts.recurrent import LSTMCore


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def one_cell() -> LSTMCore:
    """One input, one cell: every input weight 1, every recurrent weight 0.5, biases 0, so the gates
    are i = f = o = sigmoid(x + h / 2) and the candidate g = tanh(x + h / 2)."""
    core = LSTMCore(1, 1)
    with torch.no_grad():
        core.cell.weight_ih.fill_(1.0)
        core.cell.weight_hh.fill_(0.5)
        core.cell.bias_ih.zero_()
        core.cell.bias_hh.zero_()
    return core


def hand_step(x: float, h: float, c: float) -> tuple[float, float]:
    """(h', c') of the one-cell LSTM above: c' = f c + i g, h' = o tanh(c')."""
    gate = sigmoid(x + h / 2)
    c_new = gate * c + gate * math.tanh(x + h / 2)
    return gate * math.tanh(c_new), c_new


def test_init_is_orthogonal_gain_1_with_zero_biases():
    core = LSTMCore(3, 4)
    assert all((p == 0).all() for name, p in core.cell.named_parameters() if "bias" in name)
    w = core.cell.weight_hh.detach()  # (16, 4): orthonormal columns
    torch.testing.assert_close(w.T @ w, torch.eye(4), atol=1e-5, rtol=0)


def test_step_matches_the_hand_computed_cell_and_resets_at_episode_start():
    core = one_cell()
    state = core.initial_state(2)
    with torch.no_grad():
        out, state = core.step(torch.tensor([[1.0], [1.0]]), state, torch.tensor([True, True]))
        h1, c1 = hand_step(1.0, 0.0, 0.0)
        torch.testing.assert_close(out, torch.tensor([[h1], [h1]]), atol=1e-7, rtol=0)
        # Env 0 carries its state; env 1 starts an episode: its memory is gone.
        out, (h, c) = core.step(torch.tensor([[0.5], [0.5]]), state, torch.tensor([False, True]))
    carried, fresh = hand_step(0.5, h1, c1), hand_step(0.5, 0.0, 0.0)
    torch.testing.assert_close(out[:, 0], torch.tensor([carried[0], fresh[0]]), atol=1e-7, rtol=0)
    torch.testing.assert_close(c[0, :, 0], torch.tensor([carried[1], fresh[1]]), atol=1e-7, rtol=0)
    torch.testing.assert_close(h[0], out, atol=0, rtol=0)


def test_sequence_resets_inside_a_sequence_and_equals_the_steps():
    core = one_cell()
    xs = [1.0, 0.5, -0.3, 2.0]
    starts = [False, False, True, False]  # an episode starts at t = 2
    h0, c0 = 0.2, 0.7  # a stored chunk-start state
    state = (torch.full((1, 1, 1), h0), torch.full((1, 1, 1), c0))
    with torch.no_grad():
        out, (h, c) = core.sequence(torch.tensor(xs).view(4, 1, 1), state, torch.tensor(starts).view(4, 1))
    expected, hidden, cell = [], h0, c0
    for x, start in zip(xs, starts):
        hidden, cell = hand_step(x, 0.0, 0.0) if start else hand_step(x, hidden, cell)
        expected.append(hidden)
    torch.testing.assert_close(out.view(4), torch.tensor(expected), atol=1e-7, rtol=0)
    torch.testing.assert_close(c.view(()), torch.tensor(cell), atol=1e-7, rtol=0)


@pytest.mark.parametrize("private", [True, False])
def test_sequence_equals_step_by_step_for_a_random_core(private, private_apis):
    """The fused path (oneDNN through torch.lstm) to float32 round-off, the cell loop exactly."""
    private_apis(private)
    torch.manual_seed(0)
    core = LSTMCore(5, 8)
    features = torch.randn(6, 3, 5)
    starts = torch.rand(6, 3) < 0.3
    starts[0, 1] = True  # a reset at the first step too
    state = (torch.randn(1, 3, 8), torch.randn(1, 3, 8))
    with torch.no_grad():
        seq, seq_state = core.sequence(features, state, starts)
        stepped, step_state = [], state
        for t in range(6):
            out, step_state = core.step(features[t], step_state, starts[t])
            stepped.append(out)
    tol = 1e-6 if private else 0.0
    torch.testing.assert_close(seq, torch.stack(stepped), atol=tol, rtol=0)
    torch.testing.assert_close(seq_state[1], step_state[1], atol=tol, rtol=0)
