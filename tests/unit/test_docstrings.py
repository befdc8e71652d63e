"""Every public function and class of the package has a docstring, and so has every public method of a public class
(an override too: `forward`, a callback's hook, `state_dict`), read from the source with `ast`. Public: a name
without a leading underscore; `__init__` and the other dunder methods are the class docstring's."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

FunctionOrClass = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def undocumented(tree: ast.AST, prefix: str = "") -> list[str]:
    """The qualified names of `tree`'s public functions, classes and (inside public classes) methods without a
    docstring, with their line numbers: ['Class.method:12', ...]."""
    missing = []
    for node in ast.iter_child_nodes(tree):
        if not isinstance(node, FunctionOrClass) or node.name.startswith("_"):
            continue
        if ast.get_docstring(node) is None:
            missing.append(f"{prefix}{node.name}:{node.lineno}")
        if isinstance(node, ast.ClassDef):
            missing += undocumented(node, f"{prefix}{node.name}.")
    return missing


def test_the_check_finds_a_public_method_without_a_docstring_and_passes_private_and_dunder_ones():
    source = '''
def f():
    """Documented."""

class A:
    """Documented."""
    def __init__(self): pass
    def _private(self): pass
    def forward(self, x): return x

class _Hidden:
    def method(self): pass

def g(): pass
'''
    assert undocumented(ast.parse(source)) == ["A.forward:9", "g:14"]


def test_every_public_function_class_and_method_of_the_package_has_a_docstring():
    missing = [
        f"{path.relative_to(ROOT).as_posix()}:{name}"
        for path in sorted((ROOT / "acrl").rglob("*.py"))
        for name in undocumented(ast.parse(path.read_text()))
    ]
    assert not missing, f"public names without a docstring (file:name:line): {missing}"
