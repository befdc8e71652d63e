"""`Agent.from_preset`: the defaults, the preset and the overrides, as `acrl train` assembles them."""

from pathlib import Path

import pytest
import yaml

import acrl
from acrl.cli import Train, build_agent

PRESETS = Path(acrl.__file__).parent / "presets"


def test_from_preset_has_the_preset_values_and_the_cli_builds_the_same_config():
    by_hand = yaml.safe_load((PRESETS / "ppo.yaml").read_text())["Pendulum-v1"]["default"]
    del by_hand["source"]
    assert len(by_hand) > 5 and by_hand["gamma"] == 0.95  # the file as the test expects it
    agent = acrl.PPO.from_preset("Pendulum-v1")
    for key, value in by_hand.items():
        assert getattr(agent.config, key) == (tuple(value) if isinstance(value, list) else value), key
    assert agent.config.preset == "default"
    assert acrl.PPO("Pendulum-v1").config.gamma == 0.99  # the plain constructor keeps the defaults
    cli = build_agent(Train(algo="ppo", env="Pendulum-v1"))
    assert cli.config.to_dict() == agent.config.to_dict()


def test_overrides_go_over_the_preset_and_an_unknown_preset_lists_the_known_ones():
    agent = acrl.PPO.from_preset("Pendulum-v1", gamma=0.9, seed=3)
    assert agent.config.gamma == 0.9 and agent.config.seed == 3 and agent.config.n_envs == 8
    cli = build_agent(Train(algo="ppo", env="Pendulum-v1", seed=3, set=["gamma=0.9"]))
    assert cli.config.to_dict() == agent.config.to_dict()
    with pytest.raises(acrl.InputError, match="no preset 'fast' for ppo on Pendulum-v1. Available presets"):
        acrl.PPO.from_preset("Pendulum-v1", preset="fast")
    with pytest.raises(acrl.InputError, match="gama"):
        acrl.PPO.from_preset("Pendulum-v1", gama=0.9)
