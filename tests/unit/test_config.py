"""Config overrides, presets and validation errors."""

import pytest

from acrl.algos.ppo import PPOConfig
from acrl.core.config import parse_set_options, preset_values, update_config
from acrl.core.errors import InputError


def test_set_options_are_yaml_typed():
    values = parse_set_options(["clip_range=0.1", "anneal_lr=true", "hidden_sizes=[32, 16]", "target_kl=null"])
    config = update_config(PPOConfig(), values, "--set")
    assert config.clip_range == 0.1 and config.anneal_lr is True
    assert config.hidden_sizes == (32, 16) and config.target_kl is None


def test_unknown_key_suggests_close_names():
    with pytest.raises(InputError, match="clip_range"):
        update_config(PPOConfig(), {"clip_rang": 0.1}, "--set")


def test_wrong_type_is_rejected():
    with pytest.raises(InputError, match="n_steps must be an integer"):
        update_config(PPOConfig(), {"n_steps": "many"}, "--set")
    with pytest.raises(InputError, match="key=value"):
        parse_set_options(["clip_range"])


@pytest.mark.parametrize("values, message", [
    ({"clip_range": 0.0}, "clip_range must be > 0"),
    ({"batch_size": 1}, "batch_size must be >= 2"),
    ({"n_steps": 10, "batch_size": 3}, "divide the rollout size"),
    ({"gamma": 1.5}, r"gamma must lie in \[0, 1\]"),
    ({"learning_rate": -1.0}, "learning_rate must be > 0"),
])
def test_validation_messages(values, message):
    with pytest.raises(InputError, match=message):
        update_config(PPOConfig(), values, "test").validate()


def test_presets_cite_a_source_and_apply():
    values, name = preset_values("ppo", "CartPole-v1", None)
    assert name == "default" and values["n_envs"] == 8 and "source" not in values
    update_config(PPOConfig(), values, "preset").validate()
    assert preset_values("ppo", "Unknown-v0", None) == ({}, "")
    with pytest.raises(InputError, match="no preset 'nope'"):
        preset_values("ppo", "CartPole-v1", "nope")
