"""The package's layers: a module imports only from its own layer or lower ones.

core (0) < parts, tasks (1) < algos (2) < sweep (3) < offline (4) < the top: acrl/__init__.py,
acrl/__main__.py, acrl/cli*.py (5). Every import counts: `import x` and `from x import y`, at
module level or inside a function, absolute or relative. Below the top, no module imports the
package root (`import acrl`, `from acrl import ...`), which would pull in every layer.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "acrl"
SUBPACKAGE_LAYERS = {"core": 0, "parts": 1, "tasks": 1, "algos": 2, "sweep": 3, "offline": 4}
TOP_MODULES = {"__init__", "__main__", "cli", "cli_experiment", "cli_parse", "cli_sweep"}
TOP = 5


def module_name(path: str) -> str:
    """'acrl/core/x.py' -> 'acrl.core.x'; 'acrl/core/__init__.py' -> 'acrl.core'."""
    parts = list(Path(path).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> int | None:
    """The layer of dotted module `module` inside acrl (None: not mapped to a layer)."""
    parts = module.split(".")
    if len(parts) == 1:
        return TOP  # the package root, acrl/__init__.py
    if len(parts) == 2 and parts[1] in TOP_MODULES:
        return TOP
    return SUBPACKAGE_LAYERS.get(parts[1])


def is_top(path: str) -> bool:
    parts = Path(path).parts
    return len(parts) == 2 and Path(parts[1]).stem in TOP_MODULES


def imported_modules(path: str, tree: ast.AST) -> list[tuple[int, str]]:
    """(line, dotted target) for every import in `tree` that names an acrl module."""
    found = []
    package = module_name(path) if Path(path).name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: `from . import x` (level 1) is the importer's own package
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            found.append((node.lineno, target))
    return sorted((line, target) for line, target in found if target.split(".")[0] == PACKAGE)


def layer_violations(path: str, source: str) -> list[str]:
    """Every import in `source` (the text of the module at `path`, e.g. 'acrl/core/x.py') that
    breaks the layering, as 'path:line imports target (why)'."""
    importer = module_name(path)
    importer_layer = layer_of(importer)
    if importer_layer is None:
        return [f"{path}:1 is in no layer: add its folder to SUBPACKAGE_LAYERS in tests/unit/test_layers.py"]
    problems = []
    for line, target in imported_modules(path, ast.parse(source, filename=path)):
        if target == PACKAGE and not is_top(path):
            problems.append(f"{path}:{line} imports {target} (the package root, from inside the package)")
            continue
        target_layer = layer_of(target)
        if target_layer is None:
            problems.append(f"{path}:{line} imports {target} (in no layer)")
        elif target_layer > importer_layer:
            problems.append(f"{path}:{line} imports {target} (layer {importer_layer} imports layer {target_layer})")
    return problems


def test_no_module_imports_from_a_higher_layer_or_the_package_root():
    paths = sorted((ROOT / PACKAGE).rglob("*.py"))
    assert len(paths) > 10
    problems = []
    for file in paths:
        path = file.relative_to(ROOT).as_posix()
        problems += layer_violations(path, file.read_text(encoding="utf-8"))
    assert not problems, "imports against the layering:\n" + "\n".join(problems)


def test_the_checker_reports_upward_root_and_relative_imports():
    source = (
        "import numpy\n"
        "from acrl.core.errors import InputError\n"  # same layer: fine
        "from acrl.algos.ppo import PPO\n"  # line 3: core -> algos
        "def f():\n"
        "    import acrl.offline.collect\n"  # line 5: inside a function
        "    from acrl import load\n"  # line 6: the package root
        "from ..parts import nets\n"  # line 7: relative, core -> parts
        "from . import envs\n"  # relative, same package: fine
    )
    assert layer_violations("acrl/core/x.py", source) == [
        "acrl/core/x.py:3 imports acrl.algos.ppo (layer 0 imports layer 2)",
        "acrl/core/x.py:5 imports acrl.offline.collect (layer 0 imports layer 4)",
        "acrl/core/x.py:6 imports acrl (the package root, from inside the package)",
        "acrl/core/x.py:7 imports acrl.parts (layer 0 imports layer 1)",
    ]
    # The same imports are fine from the top; parts and tasks share a layer; downward is fine.
    assert layer_violations("acrl/cli.py", source) == []
    assert layer_violations("acrl/parts/y.py", "from acrl.tasks import AntDirectional\nimport acrl.core.envs\n") == []
    assert layer_violations("acrl/offline/z.py", "from acrl.algos import PPO\n") == []
    assert layer_violations("acrl/algos/w.py", "import acrl\n") == [
        "acrl/algos/w.py:1 imports acrl (the package root, from inside the package)"
    ]
    assert layer_violations("acrl/algos/__init__.py", "from .ppo import PPO\nfrom ..offline import collect\n") == [
        "acrl/algos/__init__.py:2 imports acrl.offline (layer 2 imports layer 4)"
    ]


def import_graph() -> dict[str, set[str]]:
    """{module: the acrl modules it imports}, every import counted (as `imported_modules` finds them);
    `from package import name` counts package.name when that is a module."""
    files = {module_name(file.relative_to(ROOT).as_posix()): file for file in (ROOT / PACKAGE).rglob("*.py")}
    graph = {}
    for module, file in files.items():
        path = file.relative_to(ROOT).as_posix()
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=path)
        names = {
            (node.lineno, alias.name)
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        targets = set()
        for line, target in imported_modules(path, tree):
            submodules = {f"{target}.{name}" for at, name in names if at == line} & files.keys()
            targets |= submodules or {target}
        graph[module] = targets & files.keys() - {module}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or through others (strongly connected
    components of more than one module, Tarjan 1972), each sorted."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while not group or group[-1] != module:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(cycles)


def test_no_two_modules_import_each_other():
    """A cycle (`core/loop.py` -> `core/model_card.py` -> `core/loop.py`, say) means neither module
    can be read, or imported, without the other: the shared part belongs in a module of its own."""
    assert import_cycles(import_graph()) == []


def test_the_cycle_finder_sees_direct_and_indirect_cycles():
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert import_cycles(graph) == [["a", "b"], ["c", "d", "e"]]
