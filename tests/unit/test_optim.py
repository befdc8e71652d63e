"""Tests for acrl.parts.optim: shared optimizer state across processes, target updates, schedules.

Expected values come from plain `torch.optim` run sequentially and from hand computation,
never from the code under test.
"""

import copy

import pytest
import torch
import torch.multiprocessing as mp
from torch import nn

from acrl.core.checkpoint import flatten_optimizer_state
from acrl.core.errors import InputError
from acrl.parts.optim import (
    SharedAdam,
    SharedRMSprop,
    flatten_parameters,
    hard_update,
    polyak_update,
)

GRAD = torch.tensor([0.5, -1.0, 2.0])  # the fixed gradient every step uses
START = torch.tensor([1.0, 2.0, -3.0])  # the parameter's initial value
STEPS_PER_WORKER = 3
N_WORKERS = 2
TIMEOUT_S = 60

START_METHODS = [
    pytest.param(m, marks=pytest.mark.skipif(m not in mp.get_all_start_methods(), reason=f"no {m!r} start method here"))
    for m in ("fork", "spawn")
]

# (shared class, plain torch class, hyperparameters): the plain class run sequentially
# gives the expected state.
OPTIMIZERS = {
    "adam": (SharedAdam, torch.optim.Adam, {"lr": 0.01, "betas": (0.9, 0.999)}),
    "rmsprop": (SharedRMSprop, torch.optim.RMSprop, {"lr": 0.01, "alpha": 0.99, "eps": 0.1}),
}


def _state_as_lists(optimizer, param):
    """The optimizer's state for `param` and the parameter itself, as plain Python values."""
    state = {key: value.tolist() for key, value in optimizer.state[param].items()}
    state["param"] = param.detach().tolist()
    return state


def _worker(optimizers, lock, barrier, results):
    """Step each optimizer STEPS_PER_WORKER times with GRAD, wait for every worker, then report
    the shared state as this process sees it: {name: state}.

    At module top level so that the "spawn" start method can import it. One process steps
    all the optimizers because starting a "spawn" process (a fresh interpreter importing torch)
    costs seconds.
    """
    torch.set_num_threads(1)
    for _ in range(STEPS_PER_WORKER):
        for optimizer in optimizers.values():
            (param,) = optimizer.param_groups[0]["params"]
            with lock:  # serialize the updates so that the result is deterministic
                param.grad = GRAD.clone()
                optimizer.step()
    barrier.wait(timeout=TIMEOUT_S)  # every worker has finished: the state is final
    results.put(
        {
            name: _state_as_lists(optimizer, optimizer.param_groups[0]["params"][0])
            for name, optimizer in optimizers.items()
        }
    )


def _run_workers(start_method, optimizers):
    """Step `optimizers` from N_WORKERS processes; return what each worker saw at the end."""
    ctx = mp.get_context(start_method)
    lock, barrier, results = ctx.Lock(), ctx.Barrier(N_WORKERS), ctx.Queue()
    workers = [ctx.Process(target=_worker, args=(optimizers, lock, barrier, results)) for _ in range(N_WORKERS)]
    for w in workers:
        w.start()
    try:
        seen = [results.get(timeout=TIMEOUT_S) for _ in workers]
    finally:
        for w in workers:
            w.join(timeout=TIMEOUT_S)
            if w.is_alive():
                w.terminate()
    assert [w.exitcode for w in workers] == [0] * N_WORKERS
    return seen


def _sequential_reference(torch_class, hyperparameters, n_steps):
    """The same updates taken one after another in this process by the plain torch optimizer."""
    param = nn.Parameter(START.clone())
    optimizer = torch_class([param], **hyperparameters)
    for _ in range(n_steps):
        param.grad = GRAD.clone()
        optimizer.step()
    return _state_as_lists(optimizer, param)


def _shared_param():
    param = nn.Parameter(START.clone())
    param.share_memory_()  # as A3C's global model: model.share_memory()
    return param


@pytest.mark.parametrize("start_method", START_METHODS)
def test_workers_share_state_and_step_count(start_method):
    """Two processes x 3 steps on one shared optimizer == 6 sequential steps of plain torch,
    as seen by both workers and by the parent, for SharedAdam and SharedRMSprop."""
    optimizers = {
        name: shared_class([_shared_param()], **hyperparameters)
        for name, (shared_class, _, hyperparameters) in OPTIMIZERS.items()
    }

    seen_by_workers = _run_workers(start_method, optimizers)

    n_steps = N_WORKERS * STEPS_PER_WORKER
    for name, (_, torch_class, hyperparameters) in OPTIMIZERS.items():
        expected = _sequential_reference(torch_class, hyperparameters, n_steps)
        assert expected["step"] == n_steps
        optimizer = optimizers[name]
        seen_by_parent = _state_as_lists(optimizer, optimizer.param_groups[0]["params"][0])
        for seen in [seen_by_workers[0][name], seen_by_workers[1][name], seen_by_parent]:
            assert seen.keys() == expected.keys()
            for key in expected:
                torch.testing.assert_close(
                    torch.tensor(seen[key]),
                    torch.tensor(expected[key]),
                    msg=f"{name} {key} differs from sequential torch",
                )


def test_shared_adam_matches_hand_computation_after_two_workers():
    """After 6 equal gradients g: m = g (1 - 0.9^6), v = g^2 (1 - 0.999^6); the bias-corrected
    step is lr * g / (|g| + eps), so the parameter moved by 6 * lr * sign(g) (up to eps)."""
    param = _shared_param()
    lr = 0.01
    optimizer = SharedAdam([param], lr=lr, betas=(0.9, 0.999), eps=1e-8)
    method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
    _run_workers(method, {"adam": optimizer})

    state = optimizer.state[param]
    assert state["step"].item() == 6.0
    torch.testing.assert_close(state["exp_avg"], GRAD * (1 - 0.9**6))
    torch.testing.assert_close(state["exp_avg_sq"], GRAD**2 * (1 - 0.999**6))
    torch.testing.assert_close(param.detach(), START - 6 * lr * torch.sign(GRAD))


def test_state_is_created_eagerly_in_shared_memory():
    model = nn.Linear(3, 2)
    adam = SharedAdam(model.parameters(), amsgrad=True)
    rms = SharedRMSprop(model.parameters(), momentum=0.9, centered=True)
    for optimizer, keys in [
        (adam, {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}),
        (rms, {"step", "square_avg", "momentum_buffer", "grad_avg"}),
    ]:
        for p in model.parameters():
            state = optimizer.state[p]
            assert set(state) == keys
            assert all(value.is_shared() for value in state.values())
            assert state["step"].shape == () and state["step"].item() == 0.0
            assert not any(value.requires_grad for value in state.values())


@pytest.mark.parametrize("shared_class", [SharedAdam, SharedRMSprop])
def test_state_dict_round_trip_keeps_values_and_sharing(shared_class, tmp_path):
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    optimizer = shared_class(model.parameters(), lr=0.01)
    for _ in range(2):
        model.zero_grad()
        model(torch.randn(4, 3)).pow(2).sum().backward()
        optimizer.step()
    torch.save(optimizer.state_dict(), tmp_path / "optim.pt")
    saved = {id(p): {k: v.clone() for k, v in optimizer.state[p].items()} for p in model.parameters()}

    restored = shared_class(model.parameters(), lr=0.5)
    tensors_before = {id(p): dict(restored.state[p]) for p in model.parameters()}
    restored.load_state_dict(torch.load(tmp_path / "optim.pt"))

    assert restored.param_groups[0]["lr"] == 0.01
    for p in model.parameters():
        state = restored.state[p]
        assert state["step"].item() == 2.0
        assert state.keys() == saved[id(p)].keys()
        for key, value in state.items():
            torch.testing.assert_close(value, saved[id(p)][key], rtol=0, atol=0)
            assert value.is_shared(), key
            assert value is tensors_before[id(p)][key], "loaded into the same shared tensor"


def test_loads_plain_torch_adam_checkpoints_and_stays_shared():
    model = nn.Linear(2, 1)
    plain = torch.optim.Adam(model.parameters(), lr=0.01)  # foreach=None, state still empty
    shared = SharedAdam(model.parameters())
    shared.load_state_dict(plain.state_dict())  # an empty state must be recreated, shared
    p = next(model.parameters())
    assert shared.state[p]["step"].item() == 0.0 and shared.state[p]["exp_avg"].is_shared()
    assert shared.param_groups[0]["fused"] is True  # its own path, whose step increment is in place

    model(torch.ones(1, 2)).sum().backward()
    plain.step()
    shared.load_state_dict(plain.state_dict())
    assert shared.state[p]["step"].item() == 1.0
    torch.testing.assert_close(shared.state[p]["exp_avg"], plain.state[p]["exp_avg"])
    assert all(value.is_shared() for value in shared.state[p].values())


def test_load_state_dict_does_not_alias_the_source_optimizer():
    model = nn.Linear(2, 1)
    source = SharedAdam(model.parameters())
    model(torch.ones(1, 2)).sum().backward()
    source.step()
    copy_of = SharedAdam(model.parameters())
    copy_of.load_state_dict(source.state_dict())
    source.step()
    p = next(model.parameters())
    assert source.state[p]["step"].item() == 2.0
    assert copy_of.state[p]["step"].item() == 1.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"lr": 0.0},
        {"lr": -1e-3},
        {"lr": float("nan")},
        {"betas": (1.0, 0.999)},
        {"betas": (0.9, -0.1)},
        {"betas": (0.9,)},
        {"eps": -1.0},
        {"weight_decay": -0.1},
    ],
)
def test_shared_adam_rejects_invalid_hyperparameters(kwargs):
    with pytest.raises(InputError):
        SharedAdam(nn.Linear(2, 1).parameters(), **kwargs)


def test_shared_rmsprop_with_eps_inside_is_the_papers_rmsprop_after_two_workers():
    """Mnih et al. 2016, Eq. S3 (TensorFlow's RMSProp): g <- 0.99 g + 0.01 d^2, theta <- theta - lr d / sqrt(g + eps),
    six steps of GRAD from two processes, computed by hand. torch's form lr d / (sqrt(g) + eps) with eps 0.1 moves
    the first step by 0.01 * 0.5 / (0.05 + 0.1) = 0.0333 for d = 0.5, the paper's by 0.01 * 0.5 / sqrt(0.0025 + 0.1)
    = 0.0156."""
    param = _shared_param()
    lr, alpha, eps = 0.01, 0.99, 0.1
    optimizer = SharedRMSprop([param], lr=lr, alpha=alpha, eps=eps, eps_inside=True)
    method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
    _run_workers(method, {"rmsprop": optimizer})

    expected, square_avg = START.tolist(), [0.0, 0.0, 0.0]
    for _ in range(N_WORKERS * STEPS_PER_WORKER):
        for i, d in enumerate(GRAD.tolist()):
            square_avg[i] = alpha * square_avg[i] + (1 - alpha) * d * d
            expected[i] -= lr * d / (square_avg[i] + eps) ** 0.5
    assert optimizer.state[param]["step"].item() == 6.0
    torch.testing.assert_close(optimizer.state[param]["square_avg"], torch.tensor(square_avg))
    torch.testing.assert_close(param.detach(), torch.tensor(expected))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"lr": 0.0},
        {"alpha": 1.0},
        {"alpha": -0.5},
        {"eps": -1.0},
        {"momentum": -0.9},
        {"eps_inside": True, "momentum": 0.9},
        {"eps_inside": True, "centered": True},
    ],
)
def test_shared_rmsprop_rejects_invalid_hyperparameters(kwargs):
    with pytest.raises(InputError):
        SharedRMSprop(nn.Linear(2, 1).parameters(), **kwargs)


def _filled_linear(value, requires_grad=True):
    net = nn.Linear(2, 2)
    with torch.no_grad():
        for p in net.parameters():
            p.fill_(value)
            p.requires_grad_(requires_grad)
    return net


@pytest.mark.parametrize("target_requires_grad", [True, False])
def test_polyak_update_hand_values(target_requires_grad):
    target = _filled_linear(0.0, requires_grad=target_requires_grad)
    source = _filled_linear(10.0)
    target_tensors = [p for p in target.parameters()]

    with torch.enable_grad():  # in-place updates of leaves that require grad must not raise
        polyak_update(target, source, tau=0.1)
    for p in target.parameters():
        torch.testing.assert_close(p.detach(), torch.full_like(p, 1.0))  # 0.1*10 + 0.9*0
    polyak_update(target, source, tau=0.1)
    for p in target.parameters():
        torch.testing.assert_close(p.detach(), torch.full_like(p, 1.9))  # 0.1*10 + 0.9*1

    for p, before in zip(target.parameters(), target_tensors, strict=True):
        assert p is before  # updated in place
        assert p.requires_grad is target_requires_grad
        assert p.is_leaf and p.grad_fn is None and p.grad is None  # no autograd graph
    for p in source.parameters():
        torch.testing.assert_close(p.detach(), torch.full_like(p, 10.0))  # source untouched


def test_polyak_update_copies_buffers_and_handles_tau_ends():
    source = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    source(torch.randn(8, 2))  # moves the BatchNorm running statistics
    target = copy.deepcopy(source)
    with torch.no_grad():
        for p in target.parameters():
            p.add_(1.0)
        target[1].running_mean.zero_()
    polyak_update(target, source, tau=0.0)
    for t, s in zip(target.parameters(), source.parameters(), strict=True):
        torch.testing.assert_close(t, s + 1.0)
    torch.testing.assert_close(target[1].running_mean, source[1].running_mean)
    polyak_update(target, source, tau=1.0)
    for t, s in zip(target.parameters(), source.parameters(), strict=True):
        assert torch.equal(t, s)


@pytest.mark.parametrize("tau", [-0.1, 1.5, float("nan")])
def test_polyak_update_rejects_bad_tau(tau):
    with pytest.raises(InputError):
        polyak_update(nn.Linear(2, 2), nn.Linear(2, 2), tau)


def test_target_updates_reject_different_architectures():
    with pytest.raises(InputError):
        polyak_update(nn.Linear(2, 2), nn.Linear(2, 3), 0.5)
    with pytest.raises(InputError):
        hard_update(nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2)))


def test_hard_update_makes_exact_copies_in_place():
    torch.manual_seed(0)
    source = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    source(torch.randn(8, 3))
    target = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    target.requires_grad_(False)
    target_tensors = list(target.parameters())

    hard_update(target, source)

    for t, s in zip(target.state_dict().values(), source.state_dict().values(), strict=True):
        assert torch.equal(t, s)
    for p, before in zip(target.parameters(), target_tensors, strict=True):
        assert p is before and not p.requires_grad and p.grad_fn is None
    with torch.no_grad():
        next(source.parameters()).add_(1.0)
    assert not torch.equal(next(target.parameters()), next(source.parameters()))  # a copy


# ------------------------------------------------------------------- one flat parameter tensor
def two_layer_net() -> nn.Sequential:
    """Linear(2, 1) weight [[1, 2]], bias [3], then Linear(1, 1) weight [[4]], bias [5]: flat [1, 2, 3, 4, 5]."""
    net = nn.Sequential(nn.Linear(2, 1), nn.Linear(1, 1))
    with torch.no_grad():
        for param, value in zip(net.parameters(), ([[1.0, 2.0]], [3.0], [[4.0]], [5.0])):
            param.copy_(torch.tensor(value))
    return net


def test_flat_parameters_are_views_in_module_order_and_stay_views_in_shared_memory():
    net = two_layer_net()
    keys = list(net.state_dict())
    flat = flatten_parameters(net)
    assert flat.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0] and list(net.state_dict()) == keys
    net.share_memory()
    assert flat.is_shared()
    with torch.no_grad():
        flat.mul_(2.0)  # one in-place op on the flat tensor changes every layer
    assert net[0].weight.tolist() == [[2.0, 4.0]] and net[1].bias.tolist() == [10.0]
    # y = 8 (2 x0 + 4 x1 + 6) + 10 at x = (1, 1): 106
    assert net(torch.ones(1, 2)).item() == 106.0


def test_flat_gradients_collect_one_backward_pass_and_zero_in_place():
    """d/d params of y = w2 (w1 . x + b1) + b2 at x = (1, 1): w2 x = (4, 4), w2 = 4, h = 6, 1."""
    net = two_layer_net()
    flat = flatten_parameters(net, gradients=True)
    for _ in range(2):
        flat.grad.zero_()
        net(torch.ones(1, 2)).sum().backward()
        assert flat.grad.tolist() == [4.0, 4.0, 4.0, 6.0, 1.0]  # not doubled by the second pass
    assert net[0].weight.grad.data_ptr() == flat.grad.data_ptr()


def test_flatten_parameters_rejects_mixed_dtypes():
    with pytest.raises(ValueError, match="one dtype and device"):
        flatten_parameters(nn.Sequential(nn.Linear(2, 1), nn.Linear(1, 1).double()))


def test_per_layer_optimizer_state_flattens_in_parameter_order():
    """Adam's moments per layer of `two_layer_net`, as older A3C checkpoints hold them."""
    state = {
        "state": {
            i: {
                "step": torch.tensor(float(step)),
                "exp_avg": torch.full(shape, float(i)),
                "exp_avg_sq": torch.full(shape, 10.0 + i),
            }
            for i, (shape, step) in enumerate((((1, 2), 7), ((1,), 7), ((1, 1), 6), ((1,), 7)))
        },
        "param_groups": [{"lr": 0.01, "params": [0, 1, 2, 3]}],
    }
    flat = flatten_optimizer_state(state)
    assert flat["param_groups"] == [{"lr": 0.01, "params": [0]}]
    assert flat["state"][0]["step"].item() == 7.0
    assert flat["state"][0]["exp_avg"].tolist() == [0.0, 0.0, 1.0, 2.0, 3.0]
    assert flat["state"][0]["exp_avg_sq"].tolist() == [10.0, 10.0, 11.0, 12.0, 13.0]
    optimizer = SharedAdam([flatten_parameters(two_layer_net())])
    optimizer.load_state_dict(flat)
    assert optimizer.state_dict()["state"][0]["exp_avg"].tolist() == [0.0, 0.0, 1.0, 2.0, 3.0]
    assert flatten_optimizer_state(flat) is flat


def per_layer_adam_state(groups):
    """A per-layer Adam state: parameter i has step 3 + i and moments filled with i and 10 + i."""
    shapes = [(1, 2), (1,), (1, 1), (1,)]
    state = {
        i: {
            "step": torch.tensor(3.0 + i),
            "exp_avg": torch.full(shapes[i], float(i)),
            "exp_avg_sq": torch.full(shapes[i], 10.0 + i),
        }
        for i in range(4)
    }
    return {"state": state, "param_groups": groups}


@pytest.mark.parametrize(
    "groups, expected_groups",
    [
        # one group over both nets -> one group over the two flat tensors
        ([{"lr": 0.1, "params": [0, 1, 2, 3]}], [{"lr": 0.1, "params": [0, 1]}]),
        # the second net in a group of its own (PPO's critic weight decay) -> one flat tensor per group
        (
            [{"lr": 0.1, "params": [0, 1]}, {"lr": 0.1, "weight_decay": 0.5, "params": [2, 3]}],
            [{"lr": 0.1, "params": [0]}, {"lr": 0.1, "weight_decay": 0.5, "params": [1]}],
        ),
    ],
)
def test_per_layer_optimizer_state_flattens_into_one_tensor_per_net(groups, expected_groups):
    """Two nets of two parameters each (counts [2, 2]), as older PPO checkpoints hold them."""
    flat = flatten_optimizer_state(per_layer_adam_state(groups), [2, 2])
    assert flat["param_groups"] == expected_groups
    assert [flat["state"][k]["step"].item() for k in (0, 1)] == [4.0, 6.0]  # the larger step of each pair
    assert flat["state"][0]["exp_avg"].tolist() == [0.0, 0.0, 1.0]
    assert flat["state"][1]["exp_avg_sq"].tolist() == [12.0, 13.0]
    assert flatten_optimizer_state(flat, [2, 2]) is flat


def test_per_layer_optimizer_state_that_does_not_fit_is_refused():
    state = per_layer_adam_state([{"lr": 0.1, "params": [0, 1, 2]}, {"lr": 0.1, "params": [3]}])
    with pytest.raises(InputError, match="two optimizer groups"):
        flatten_optimizer_state(state, [2, 2])
    with pytest.raises(InputError, match="4 parameters; expected 2 \\(flat\\) or 5"):
        flatten_optimizer_state(state, [2, 3])
