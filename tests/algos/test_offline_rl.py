"""TD3+BC, IQL, CQL and discrete CQL as a user meets them: `acrl train ALGO --dataset FILE` (the environment from
the dataset), `acrl evaluate`, `acrl resume`, `acrl.load`; a run split across a checkpoint equals one run in one go;
a dataset of the wrong action space or a bad setting is one line, exit 2, before anything is written."""

import json

import gymnasium as gym
import numpy as np
import pytest
import torch
import yaml

from acrl import CQL, IQL, TD3BC, DiscreteCQL, load
from acrl.cli import main
from acrl.parts.datasets import collect_transitions, save_dataset
from tests.conftest import parameters_of
from tests.unit.test_precision import float32_state, needs_bf16, recorded

ALGOS = {"td3_bc": "Pendulum-v1", "iql": "Pendulum-v1", "cql": "Pendulum-v1", "discrete_cql": "CartPole-v1"}
TINY = {"hidden_sizes": [8], "batch_size": 16, "iteration_steps": 10, "eval_episodes": 1}


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """Uniformly random transitions of Pendulum (300) and CartPole (200), each file with its env_id."""
    root = tmp_path_factory.mktemp("offline-rl")
    paths = {}
    for env_id, steps in (("Pendulum-v1", 300), ("CartPole-v1", 200)):
        env = gym.make(env_id)
        env.action_space.seed(0)
        data = collect_transitions(env, lambda obs, space=env.action_space: space.sample(), steps, 0, kind="random")
        paths[env_id] = root / f"{env_id}.h5"
        save_dataset(paths[env_id], data)
    return paths


@pytest.mark.parametrize("algo", ALGOS)
def test_train_evaluate_resume_through_the_cli(algo, datasets, tmp_path, capsys):
    run = tmp_path / algo
    settings = [f"{key}={json.dumps(value)}" for key, value in TINY.items()]
    argv = ["train", algo, "--dataset", str(datasets[ALGOS[algo]]), "--total-steps", "40", "--run-dir", str(run)]
    assert main([*argv, "--no-progress", "--set", "eval_freq=20", *settings]) == 0
    config = yaml.safe_load((run / "config.yaml").read_text())
    assert config["algo"] == algo and config["config"]["env_id"] == ALGOS[algo]
    agent = load(run / "checkpoints" / "latest.pt")
    assert agent.algo == algo and agent.num_steps == 40 and agent.step_unit == "update"
    capsys.readouterr()
    assert main(["evaluate", str(run), "--episodes", "2"]) == 0
    assert len(json.loads(capsys.readouterr().out)["returns"]) == 2
    assert main(["resume", str(run), "--total-steps", "60", "--no-progress"]) == 0
    assert load(run / "checkpoints" / "latest.pt").num_steps == 60


@pytest.mark.parametrize(
    "cls, settings",
    [(TD3BC, {}), (IQL, {"actor_lr_decay_steps": 40, "return_range": 1000.0}), (CQL, {"target_action_gap": 1.0})]
    + [(DiscreteCQL, {})],
)
def test_a_run_resumed_from_its_checkpoint_equals_one_run_in_one_go(cls, settings, datasets, tmp_path):
    """20 updates, a checkpoint, 20 more from `acrl.load`: the parameters of 40 in one go. The checkpoint holds all
    an update needs: TD3+BC's state statistics, IQL's place on its schedule, CQL's temperature and multiplier
    with their optimizers, the generators."""
    env_id = ALGOS[cls.algo]
    common = dict(dataset=str(datasets[env_id]), seed=3, eval_freq=20, checkpoint_freq=20, **TINY, **settings)
    whole = cls(env_id, **common).learn(40, run_dir=tmp_path / "whole", progress=False)
    split = cls(env_id, **common).learn(20, run_dir=tmp_path / "split", progress=False)
    loaded = load(tmp_path / "split/checkpoints/latest.pt")
    assert torch.equal(parameters_of(loaded), parameters_of(split))
    obs = np.stack([loaded.observation_space.sample() for _ in range(3)])
    assert np.array_equal(loaded.predict(obs), split.predict(obs))  # TD3+BC: the same state statistics
    resumed = loaded.learn(40, run_dir=tmp_path / "split", progress=False)
    assert torch.equal(parameters_of(whole), parameters_of(resumed))


@pytest.mark.parametrize(
    "algo, data, settings, message",
    [
        ("td3_bc", "CartPole-v1", [], "use discrete CQL (DiscreteCQL, `acrl train discrete_cql`)"),
        ("iql", "CartPole-v1", [], "use discrete CQL (DiscreteCQL, `acrl train discrete_cql`)"),
        ("cql", "CartPole-v1", [], "use discrete CQL (DiscreteCQL, `acrl train discrete_cql`)"),
        ("discrete_cql", "Pendulum-v1", [], "use CQL (`acrl train cql`)"),
        ("iql", "Pendulum-v1", ["expectile=1.5"], "expectile must lie in (0, 1)"),
        ("iql", "Pendulum-v1", ["beta=-1"], "beta must be >= 0"),
        ("td3_bc", "Pendulum-v1", ["alpha=-2.5"], "alpha must be >= 0"),
        ("cql", "Pendulum-v1", ["cql_alpha=-5"], "cql_alpha must be >= 0"),
    ],
)
def test_bad_input_is_one_line_exit_2_before_anything_is_written(
    algo, data, settings, message, datasets, tmp_path, capsys
):
    run = tmp_path / "run"
    argv = ["train", algo, "--dataset", str(datasets[data]), "--run-dir", str(run), "--no-progress"]
    assert main([*argv, *(["--set", *settings] if settings else [])]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err
    assert not run.exists()


@needs_bf16
@pytest.mark.parametrize("cls", [TD3BC, IQL, CQL, DiscreteCQL])
def test_bf16_computes_the_updates_in_bfloat16_and_learns_in_float32(cls, datasets):
    """precision bf16: every Linear of the update's forward passes runs in bfloat16 under autocast, every loss
    `backward` is called on is float32, and the parameters and optimizer states stay float32 (DESIGN.md item 16)."""
    env_id = "CartPole-v1" if cls is DiscreteCQL else "Pendulum-v1"
    agent = cls(dataset=str(datasets[env_id]), precision="bf16", seed=0, eval_freq=0, **TINY)
    with recorded(agent.nets.values()) as (outputs, losses):
        agent.learn(3, progress=False)
    assert outputs and {dtype for dtype, _ in outputs} == {torch.bfloat16}
    assert losses and set(losses) == {torch.float32}
    assert float32_state(agent)
