"""The package's tree is its architecture: layers that import only downward, no cycles.

Every import in ``code/attnbook`` (at the top of a module or inside a function) is read
with ``ast`` and resolved to the module it names. A module may import its own layer and
the layers below it; the import graph has no cycle; every folder says in its docstring
what lives there and what it may import.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "code" / "attnbook"

# Bottom up. The private helpers import only each other: the memory limit,
# the argument checks (which use it), the random-state helpers and the
# pinned weight files (which use the checks).
LAYERS = [
    "_memory",
    "_checks",
    "_random",
    "_weights",
    "measure",
    "core",
    "kernels",
    "nn",
    "tasks",
    "experiments",
    "train",
    "display",
    "widgets",
    "__init__",
]


def module_name(path: Path) -> str:
    """'attnbook.core.attention' for code/attnbook/core/attention.py."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def imported_modules(path: Path) -> set:
    """The attnbook modules ``path`` imports, as dotted names."""
    return imported_modules_of(path.read_text(), path)


def imported_modules_of(source: str, path: Path) -> set:
    """The attnbook modules ``source`` imports, read as the module at ``path``."""
    tree = ast.parse(source)
    here = module_name(path).split(".")
    package = here if is_package(path) else here[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {
                a.name
                for a in node.names
                if a.name.split(".")[0] == "attnbook"
            }
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(
                    base + ([node.module] if node.module else [])
                )
            else:
                target = node.module or ""
            if target.split(".")[0] != "attnbook":
                continue
            for alias in node.names:  # `from . import x` may name a module
                candidate = f"{target}.{alias.name}"
                found.add(candidate if resolves(candidate) else target)
    return found


def resolves(dotted: str) -> bool:
    relative = Path(*dotted.split(".")[1:])
    return (PACKAGE / relative).with_suffix(".py").exists() or (
        PACKAGE / relative / "__init__.py"
    ).exists()


def layer(dotted: str) -> int:
    """The index in LAYERS of a module's top-level part ('attnbook' itself: the API)."""
    parts = dotted.split(".")
    return LAYERS.index(parts[1] if len(parts) > 1 else "__init__")


MODULES = sorted(PACKAGE.rglob("*.py"))
GRAPH = {module_name(p): imported_modules(p) for p in MODULES}


def upward(name: str, imports) -> list:
    """The imports of module ``name`` from a layer above its own."""
    return sorted(m for m in imports if layer(m) > layer(name))


@pytest.mark.parametrize(
    "path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_module_imports_only_its_layer_and_below(path):
    name = module_name(path)
    found = upward(name, GRAPH[name])
    assert not found, f"{name} (layer {LAYERS[layer(name)]}) imports {found}"


def test_every_module_is_in_a_layer():
    tops = {
        p.relative_to(PACKAGE).parts[0].removesuffix(".py") for p in MODULES
    }
    assert tops <= set(LAYERS), f"not in LAYERS: {sorted(tops - set(LAYERS))}"


def test_no_import_cycle():
    edges = {name: targets - {name} for name, targets in GRAPH.items()}
    state = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                cycle = path[path.index(nxt) :] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for name in sorted(edges):
        if name not in state and name != "attnbook":
            visit(name, [name])


@pytest.mark.parametrize(
    "folder",
    sorted(p.parent for p in PACKAGE.rglob("__init__.py")),
    ids=lambda p: p.name,
)
def test_every_folder_says_what_lives_there(folder):
    docstring = ast.get_docstring(
        ast.parse((folder / "__init__.py").read_text())
    )
    assert docstring and len(docstring) > 80, f"{folder.name}/__init__.py"
    if folder != PACKAGE:
        assert "import" in docstring, f"{folder.name}: say what it may import"


def test_an_upward_import_is_caught():
    # The check can fail: a core module importing a task, written out and read back.
    fake = PACKAGE / "core" / "attention.py"
    source = fake.read_text() + "\nfrom ..tasks.dates import iso\n"
    imports = imported_modules_of(source, fake)
    assert upward("attnbook.core.attention", imports) == [
        "attnbook.tasks.dates"
    ]


def private_imports_of(source: str, path: Path) -> list:
    """The private names (``_name``) that ``source``, read as the module at
    ``path``, imports from another attnbook module that is not itself a
    private helper module (``_checks``, ``core/_nonfinite``, ...: those exist
    to be shared)."""
    here = module_name(path).split(".")
    package = here if is_package(path) else here[:-1]
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package[: len(package) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        parts = target.split(".")
        if parts[0] != "attnbook" or any(p.startswith("_") for p in parts):
            continue
        for alias in node.names:
            name = alias.name
            private = name.startswith("_") and not name.endswith("__")
            if private and not resolves(f"{target}.{name}"):
                found.append(f"{target}.{name}")
    return found


@pytest.mark.parametrize(
    "path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_no_module_imports_another_modules_private_names(path):
    # A private name is its module's own business: what two modules share
    # gets a public name, or lives in a private helper module.
    found = private_imports_of(path.read_text(), path)
    assert not found, f"{module_name(path)} imports private names {found}"


def test_a_private_import_is_caught():
    # The check can fail, and lets the private helper modules through.
    fake = PACKAGE / "nn" / "luong.py"
    source = (
        fake.read_text()
        + "\nfrom .seq2seq import Seq2Seq, _hidden\n"
        + "from ..core.masking import _also_hidden\n"
        + "from attnbook.nn.pointer import _and_this\n"
        + "from .._checks import require_int\n"
        + "from ..core._nonfinite import softmax_nonfinite\n"
        + "from ..core import _nonfinite\n"
    )
    assert private_imports_of(source, fake) == [
        "attnbook.nn.seq2seq._hidden",
        "attnbook.core.masking._also_hidden",
        "attnbook.nn.pointer._and_this",
    ]


def test_checks_are_first_line_calls_not_forward_pre_hooks():
    # One way to keep checks out of a listing: a call on the function's
    # first line. A forward pre-hook hides where an error comes from, and
    # skips a direct call of forward.
    found = [
        str(p.relative_to(PACKAGE))
        for p in MODULES
        if "register_forward_pre_hook" in p.read_text()
    ]
    assert not found, f"forward pre-hooks in {found}"
