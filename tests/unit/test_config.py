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


@pytest.mark.parametrize(
    "values, message",
    [
        ({"clip_range": 0.0}, "clip_range must be > 0"),
        ({"batch_size": 1}, "batch_size must be >= 2"),
        ({"n_steps": 10, "batch_size": 3}, "divide the rollout size"),
        ({"gamma": 1.5}, r"gamma must lie in \[0, 1\]"),
        ({"learning_rate": -1.0}, "learning_rate must be > 0"),
    ],
)
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


@pytest.mark.parametrize(
    ("config", "fields"),
    [
        ("acrl.algos.ppo:PPOConfig", ["hidden_sizes"]),
        ("acrl.algos.a3c:A3CConfig", ["hidden_sizes", "critic_hidden_sizes"]),
        ("acrl.algos.ddpg:DDPGConfig", ["hidden_sizes"]),
        ("acrl.algos.sac:SACConfig", ["hidden_sizes"]),
        ("acrl.algos.bc:BCConfig", ["hidden_sizes"]),
        ("acrl.algos.vae_bc:VAEBCConfig", ["hidden_sizes"]),
        ("acrl.algos.discrete_bcq:DiscreteBCQConfig", ["hidden_sizes"]),
        ("acrl.algos.dqn:DQNConfig", ["hidden_sizes"]),
        ("acrl.algos.bcq:BCQConfig", ["actor_hidden_sizes", "critic_hidden_sizes", "vae_hidden_sizes"]),
    ],
)
def test_every_hidden_size_field_refuses_empty_and_non_positive_widths(config, fields):
    import importlib

    module, name = config.split(":")
    config_class = getattr(importlib.import_module(module), name)
    for field in fields:
        for sizes in [(), (64, 0), (-1,)]:
            with pytest.raises(InputError, match=rf"{field} must be a non-empty list of positive layer widths"):
                update_config(config_class(), {field: list(sizes)}, "test").validate()
        update_config(config_class(), {field: [3]}, "test").validate()
