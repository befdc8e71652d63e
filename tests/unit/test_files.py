"""acrl.core.files: a write that fails part-way leaves the previous file as it was, and no temporary file."""

import ast
import math

import numpy as np
import pytest
import torch

from acrl.core.checkpoint import save_checkpoint
from acrl.core.files import atomic_path, json_text, write_json_atomic, write_text_atomic
from tests.conftest import ROOT


def test_a_write_interrupted_mid_way_leaves_the_old_file(tmp_path):
    path = tmp_path / "eval.json"
    path.write_text("old")
    with pytest.raises(KeyboardInterrupt), atomic_path(path) as tmp:
        tmp.write_text("half of the new ")
        raise KeyboardInterrupt  # a Ctrl-C between two writes
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval.json"]


def test_a_checkpoint_whose_pickling_fails_leaves_the_old_checkpoint(tmp_path):
    """torch.save writes the tensors' records before it reaches the lambda it cannot pickle."""
    path = tmp_path / "checkpoints" / "latest.pt"
    save_checkpoint(path, "ppo", {}, {"w": torch.ones(3)}, {})
    before = path.read_bytes()
    with pytest.raises(Exception, match="pickle|lambda"):
        save_checkpoint(path, "ppo", {}, {"w": torch.zeros(1000), "bad": lambda: None}, {})
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == ["latest.pt"]


def test_writes_replace_the_file_and_create_its_directory(tmp_path):
    write_json_atomic(tmp_path / "a" / "b.json", {"x": 1.5})
    assert (tmp_path / "a" / "b.json").read_text() == '{\n  "x": 1.5\n}\n'
    write_text_atomic(tmp_path / "a" / "b.json", "new")
    assert (tmp_path / "a" / "b.json").read_text() == "new"
    with pytest.raises(TypeError):
        write_json_atomic(tmp_path / "a" / "b.json", {"x": object()})
    assert (tmp_path / "a" / "b.json").read_text() == "new"


def test_json_for_people_rounds_float_noise_to_10_significant_digits_and_nothing_else():
    """0.1 + 0.2 is 0.30000000000000004 in binary floats: written 0.3. 1/3 keeps 10 digits, a learning rate
    and an integer-valued float all of theirs; ints, bools, strings and None pass; a numpy float32 through
    `default` is rounded too (0.73 as float32 is 0.7300000190734863)."""
    data = {"mean": 0.1 + 0.2, "third": [1 / 3, (2.5, 3 * 0.1)], "lr": 3e-4, "steps": 65_536, "ok": True}
    data |= {"name": "ppo", "none": None, "ten": 10.0, "inf": math.inf}
    text = json_text(data)
    assert text == json_text(data | {"mean": 0.3})  # the noise is gone
    assert '"third": [\n    0.3333333333,\n    [\n      2.5,\n      0.3\n    ]\n  ]' in text
    assert '"lr": 0.0003,' in text and '"steps": 65536,' in text and '"ok": true,' in text and '"ten": 10.0,' in text
    assert '"name": "ppo",' in text and '"none": null,' in text and '"inf": Infinity' in text
    assert json_text({"f32": np.float32(0.73)}, default=float) == '{\n  "f32": 0.7300000191\n}'
    assert data["mean"] == 0.1 + 0.2  # the data itself is not changed


def test_the_package_and_benchmarks_write_files_only_through_acrl_core_files():
    """A `.write_text`/`.write_bytes` straight to its target leaves half a file when interrupted; the only ones
    allowed write the temporary file of `atomic_path` (named `tmp`)."""
    direct = []
    for path in sorted([*(ROOT / "acrl").rglob("*.py"), *(ROOT / "benchmarks").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("write_text", "write_bytes")
                and not (isinstance(node.func.value, ast.Name) and node.func.value.id == "tmp")
            ):
                direct.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert direct == []
