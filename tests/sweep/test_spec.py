"""What a command line asks of `acrl sweep` and `acrl tune` (a file's spec with the flags on top),
and the sweep modules' imports: spec <- results <- grid, without a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from acrl.core.errors import InputError
from acrl.sweep.spec import SweepSpec
from acrl.sweep.tune import Dimension, read_space


def test_flags_replace_the_sweep_files_keys_and_set_values_add_to_its_set(tmp_path, monkeypatch):
    path = tmp_path / "sweep.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "algo": "ppo",
                "env": ["CartPole-v1"],
                "seeds": [0, 1],
                "total_steps": 1000,
                "set": {"learning_rate": [3e-4, 1e-3], "n_epochs": 10},
            }
        )
    )
    spec = SweepSpec.from_command(str(path), None, ["Acrobot-v1"], [], [], {"n_epochs": 3}, None, "default")
    assert spec == SweepSpec(
        "ppo",
        ["Acrobot-v1"],
        [0, 1],
        {"learning_rate": [3e-4, 1e-3], "n_epochs": 3},
        total_steps=1000,
        preset="default",
    )
    monkeypatch.chdir(tmp_path)  # dataset paths are made absolute, from where the command runs
    spec = SweepSpec.from_command(None, "bc", [], [], ["d.h5"], {}, None, None)
    assert spec.datasets == [str((tmp_path / "d.h5").resolve())] and spec.envs == [None] and spec.seeds == [0]
    with pytest.raises(InputError, match="needs ALGO or --file"):
        SweepSpec.from_command(None, None, [], [], [], {}, None, None)


def test_the_tune_files_space_and_set_with_space_options_on_top(tmp_path):
    path = tmp_path / "space.yaml"
    path.write_text(
        yaml.safe_dump(
            {"space": {"learning_rate": "loguniform:1e-5:1e-2", "n_epochs": "int:3:30"}, "set": {"batch_size": 64}}
        )
    )
    space, fixed = read_space(str(path), ["n_epochs=int:1:5"])
    assert space == {"learning_rate": Dimension("loguniform", 1e-5, 1e-2), "n_epochs": Dimension("int", 1, 5)}
    assert fixed == {"batch_size": 64}
    path.write_text(yaml.safe_dump({"space": {}, "sett": {}}))
    with pytest.raises(InputError, match="must be a YAML mapping with `space:`"):
        read_space(str(path), [])


def test_the_sweep_modules_import_each_other_without_a_cycle():
    folder = Path(__file__).resolve().parents[2] / "acrl" / "sweep"
    imports = {}  # module -> the acrl.sweep modules it imports, anywhere in it (functions included)
    for file in folder.glob("*.py"):
        nodes = [n for n in ast.walk(ast.parse(file.read_text())) if isinstance(n, ast.ImportFrom) and n.module]
        imports[file.stem] = {n.module.removeprefix("acrl.sweep.") for n in nodes if n.module.startswith("acrl.sweep.")}
    assert imports["grid"] >= {"spec", "results"} and "spec" in imports["results"]
    ordered: list[str] = []  # take modules whose imports are all taken; a cycle leaves some behind
    while len(ordered) < len(imports):
        ready = [m for m in imports if m not in ordered and imports[m] <= set(ordered)]
        assert ready, f"import cycle among {sorted(set(imports) - set(ordered))}"
        ordered += ready
