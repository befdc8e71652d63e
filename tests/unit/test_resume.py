"""Resuming an off-policy run whose checkpoint has no replay buffer says what happens, once."""

import warnings

import pytest

import acrl
from acrl import DDPG

SMALL = {
    "hidden_sizes": (8,),
    "batch_size": 16,
    "start_steps": 50,
    "buffer_size": 1000,
    "eval_freq": 0,
    "iteration_steps": 50,
    "eval_episodes": 1,
}


@pytest.mark.parametrize("save_buffer", [False, True])
def test_resuming_without_the_replay_buffer_warns_once(tmp_path, save_buffer):
    DDPG("Pendulum-v1", seed=0, save_replay_buffer=save_buffer, **SMALL).learn(100, run_dir=tmp_path, progress=False)
    resumed = acrl.load(tmp_path / "checkpoints" / "latest.pt")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resumed.learn(150, run_dir=tmp_path, progress=False)
    messages = [str(w.message) for w in caught if "replay buffer" in str(w.message)]
    if save_buffer:
        assert messages == []
    else:
        assert len(messages) == 1
        assert messages[0].startswith("resuming at step 100 with an empty replay buffer")
        assert "the next 50 steps act uniformly at random" in messages[0]
        assert "save_replay_buffer=true" in messages[0]
