"""The checkpoint format: version 3, old versions migrated in one place, bad files refused in one line.

The files in tests/fixtures/checkpoints/ were written by acrl itself at each earlier format, small PPO, A3C
and SAC agents trained for a few steps: `_f1` at format 1 (commit 3410664, before the policy heads),
`_f2pre` at format 2 before the heads (commit d9c1da2), `_f2` at format 2 with the heads (commit 6734469,
LSTMs included). expected.json holds, for each, what that acrl computed on three fixed observations (its
deterministic raw actions, the log-probabilities of three fixed actions and the values): a migrated file
must load and act the same."""

import json
import math
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import acrl
from acrl import DDPG
from acrl.core.checkpoint import FORMAT_VERSION, MIGRATIONS, load_checkpoint
from acrl.core.errors import InputError
from tests.conftest import save_format_1

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())


def test_every_old_version_has_a_migration_and_saves_write_version_3(tmp_path):
    assert FORMAT_VERSION == 3 and sorted(MIGRATIONS) == [1, 2]
    agent = DDPG("Pendulum-v1", hidden_sizes=(4,), buffer_size=300, batch_size=8, start_steps=10)
    agent.save(tmp_path / "new.pt")
    assert torch.load(tmp_path / "new.pt", weights_only=True)["format_version"] == 3


def test_a_format_1_checkpoint_of_an_algorithm_without_migration_loads_as_it_was(tmp_path):
    agent = DDPG("Pendulum-v1", hidden_sizes=(4,), buffer_size=300, batch_size=8, start_steps=10, seed=3)
    with torch.no_grad():
        agent.actor.net[0].bias.fill_(0.25)
    path = save_format_1(tmp_path / "old.pt", agent, agent.state_dict())
    assert load_checkpoint(path)["format_version"] == 3
    loaded = DDPG.load(path)
    assert loaded.actor.net[0].bias.tolist() == [0.25] * 4


def test_a_newer_format_is_refused(tmp_path):
    torch.save(
        {"format": "acrl-checkpoint", "format_version": 4, "algo": "ppo", "config": {}, "state": {}, "rng": {}},
        tmp_path / "new.pt",
    )
    with pytest.raises(InputError, match="checkpoint format 4; this acrl .* reads formats up to 3. Upgrade acrl."):
        load_checkpoint(tmp_path / "new.pt")


def test_a_raw_pickle_is_refused_without_torch_warning_first(tmp_path):
    """torch warns about the pickle protocol of a raw pickle before it refuses it: that line would
    precede the CLI's one-line error."""
    path = tmp_path / "raw.pt"
    path.write_bytes(pickle.dumps({"format": "acrl-checkpoint"}, protocol=4))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(InputError, match="is not a readable checkpoint"):
            load_checkpoint(path)
    assert [str(w.message) for w in caught] == []


# ------------------------------------------------------------------ files of the earlier formats
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_checkpoint_of_an_earlier_format_loads_and_acts_as_it_did(name):
    """Deterministic actions, log pi of fixed actions and V at fixed observations as the acrl that wrote the
    file computed them (float32 round-off apart), from a fresh state where the policy has one."""
    expected = EXPECTED[name]
    assert torch.load(FIXTURES / name, weights_only=True)["format_version"] == expected["format_version"] < 3
    agent = acrl.load(FIXTURES / name)
    x = agent.obs_normalizer(np.array(expected["obs"], dtype=np.float32))
    with torch.no_grad():
        if agent.algo == "sac":
            torch.testing.assert_close(agent.actor.sample(x, deterministic=True)[0], torch.tensor(expected["mode"]))
            return
        model, n = agent.model, len(x)
        starts = torch.ones(n, dtype=torch.bool)
        mode = model.act(x, model.initial_state(n), starts, deterministic=True).actions
        actions = torch.tensor(expected["actions"])
        log_probs, _, values = model.evaluate(x[None], actions[None], model.initial_state(n), starts[None])
    assert mode.tolist() == expected["mode"] if agent.discrete else torch.allclose(mode, torch.tensor(expected["mode"]))
    torch.testing.assert_close(log_probs[0], torch.tensor(expected["log_probs"]))
    torch.testing.assert_close(values[0], torch.tensor(expected["values"]))


def old_moment_of_log_std(raw: dict) -> torch.Tensor:
    """Adam's first moment of the log-std in a raw checkpoint of an earlier format, read by hand: one flat
    tensor per net (PPO's actor first; format 1 could also keep one state per parameter, which
    test_a3c_parts.py covers), in the order of the net's state dict, the log-std's elements at its offset."""
    net = next(iter(raw["state"]["nets"].values()))  # PPO's actor or A3C's model: the log-std is there
    keys = list(net)
    position = next(i for i, key in enumerate(keys) if key.endswith("log_std"))
    moments = raw["state"]["optimizers"]["optimizer"]["state"]
    assert len(moments) == len(raw["state"]["nets"])  # flat
    offset = sum(net[key].numel() for key in keys[:position])
    return moments[0]["exp_avg"][offset : offset + net[keys[position]].numel()]


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if "pendulum" in n and not n.startswith("sac")))
def test_the_optimizer_state_follows_its_parameters_into_the_new_layout(name):
    """The log-std moves from first to after the encoder in the flat layout (`ActorCritic`'s parameter order):
    its Adam moments move with it, and the step count stays."""
    raw = torch.load(FIXTURES / name, weights_only=True)
    agent = acrl.load(FIXTURES / name)
    flat = agent.params[0] if agent.algo == "ppo" else agent.parameters
    part = agent.model.actor if agent.algo == "ppo" else agent.model
    offset, size = 0, 0
    for key, param in part.named_parameters():
        if key.endswith("log_std"):
            size = param.numel()
            break
        offset += param.numel()
    state = agent.optimizer.state[flat]
    expected = old_moment_of_log_std(raw)
    assert size == 1 and expected.abs().sum() > 0  # Pendulum: one action dimension; the file has trained
    torch.testing.assert_close(state["exp_avg"][offset : offset + size], expected, rtol=0, atol=0)
    assert math.isclose(
        float(state["step"]), float(next(iter(raw["state"]["optimizers"]["optimizer"]["state"].values()))["step"])
    )


def test_a_migrated_ppo_checkpoint_trains_on(tmp_path):
    """A format-1 PPO file (per-layer Adam state, keys of before the heads) resumes: one more rollout and
    update, then it saves at format 3 and loads back to the same parameters."""
    agent = acrl.load(FIXTURES / "ppo_pendulum_f1.pt")
    before = agent.num_steps
    agent.learn(before + 32, progress=False)
    assert agent.num_steps == before + 32
    agent.save(tmp_path / "again.pt")
    again = acrl.load(tmp_path / "again.pt")
    for a, b in zip(agent.model.parameters(), again.model.parameters(), strict=True):
        assert torch.equal(a, b)


def test_a_discrete_bc_checkpoint_of_format_2_loads_as_discrete_bc():
    """acrl 0.2's BC on a Discrete space (a softmax policy, keys `encoder.*` and `linear.*`, written at commit
    6d5905f after 40 updates on CartPole data) is DiscreteBC's now: it loads as one and gives that acrl's
    logits on three fixed observations."""
    agent = acrl.load(FIXTURES / "bc_cartpole_discrete_f2.pt")
    assert agent.algo == "discrete_bc"
    obs = torch.tensor([[0.01, 0.2, -0.03, 0.1], [0.0, -0.5, 0.05, -0.2], [0.1, 0.0, 0.1, 0.3]])
    logits = [[0.00891940575093031, -0.008974021300673485], [0.0069796135649085045, -0.0026494483463466167]]
    logits.append([0.0018452471122145653, -3.537070006132126e-05])
    with torch.no_grad():
        torch.testing.assert_close(agent.actor(agent.actor.encoder(obs)), torch.tensor(logits), rtol=0, atol=1e-7)
