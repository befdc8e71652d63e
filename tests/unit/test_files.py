"""acrl.core.files: a write that fails part-way leaves the previous file as it was, and no temporary file."""

import ast

import pytest
import torch

from acrl.core.checkpoint import save_checkpoint
from acrl.core.files import atomic_path, write_json_atomic, write_text_atomic
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
