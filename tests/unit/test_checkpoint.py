"""The checkpoint format: version 2, old versions migrated in one place, bad files refused in one line."""

import pickle
import warnings

import pytest
import torch

from acrl import DDPG
from acrl.core.checkpoint import FORMAT_VERSION, MIGRATIONS, load_checkpoint
from acrl.core.errors import InputError
from tests.conftest import save_format_1


def test_every_old_version_has_a_migration_and_saves_write_version_2(tmp_path):
    assert FORMAT_VERSION == 2 and sorted(MIGRATIONS) == [1]
    agent = DDPG("Pendulum-v1", hidden_sizes=(4,), buffer_size=300, batch_size=8, start_steps=10)
    agent.save(tmp_path / "new.pt")
    assert torch.load(tmp_path / "new.pt", weights_only=True)["format_version"] == 2


def test_a_format_1_checkpoint_of_an_algorithm_without_migration_loads_as_it_was(tmp_path):
    agent = DDPG("Pendulum-v1", hidden_sizes=(4,), buffer_size=300, batch_size=8, start_steps=10, seed=3)
    with torch.no_grad():
        agent.actor.net[0].bias.fill_(0.25)
    path = save_format_1(tmp_path / "old.pt", agent, agent.state_dict())
    assert load_checkpoint(path)["format_version"] == 2
    loaded = DDPG.load(path)
    assert loaded.actor.net[0].bias.tolist() == [0.25] * 4


def test_a_newer_format_is_refused(tmp_path):
    torch.save(
        {"format": "acrl-checkpoint", "format_version": 3, "algo": "ppo", "config": {}, "state": {}, "rng": {}},
        tmp_path / "new.pt",
    )
    with pytest.raises(InputError, match="checkpoint format 3; this acrl .* reads formats up to 2. Upgrade acrl."):
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
