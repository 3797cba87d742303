"""The layering holds: `windowing` -> `triggers` -> `sdk` -> `traces` -> `runtime` ->
`runners/<name>`; no module imports a layer above its own, a runner never imports another
runner, and only the Spark runner imports pyspark; no private name crosses a module boundary.
Read from the source, so a lazy import inside a function counts too."""
from __future__ import annotations

import ast
import pathlib

import pytest

import pomset

LAYERS = ["windowing", "triggers", "sdk", "traces", "runtime", "runners"]
ROOT = pathlib.Path(pomset.__file__).parent


def _modules():
    for path in sorted(ROOT.rglob("*.py")):
        parts = ("pomset",) + path.relative_to(ROOT).with_suffix("").parts
        package = parts if parts[-1] == "__init__" else parts[:-1]
        if parts[-1] == "__init__":
            parts, package = parts[:-1], parts[:-1]
        yield path, parts, package


def _imports(path: pathlib.Path, package: tuple):
    """Every module a file imports, absolute, with the line it is on."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[:len(package) - node.level + 1])
                name = ".".join(base + ([node.module] if node.module else []))
                if node.module is None:   # from . import x: the modules x
                    for alias in node.names:
                        yield f"{name}.{alias.name}", node.lineno
                    continue
            else:
                name = node.module or ""
            yield name, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno


def _layer(parts) -> int:
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else -1


MODULES = list(_modules())


# --- no private name crosses a module boundary ---------------------------------------------

def _private(name: str) -> bool:
    dunder = name.startswith("__") and name.endswith("__")
    return name.startswith("_") and name != "_" and not dunder


def _defines(tree: ast.AST) -> set:
    """The private names a module defines: functions, classes and variables it binds at any
    scope, attributes it assigns on anything, and the names in its `__slots__`."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.attr)
        elif (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__slots__"
                                                  for t in node.targets)):
            names.update(c.value for c in ast.walk(node.value)
                         if isinstance(c, ast.Constant) and isinstance(c.value, str))
    return {n for n in names if _private(n)}


TREES = {path: ast.parse(path.read_text(), str(path)) for path, _, _ in MODULES}
DEFINED = {path: _defines(tree) for path, tree in TREES.items()}


def _private_crossings(tree: ast.AST, here: set, elsewhere: set):
    """(line, what) for each private name a module takes from another pomset module, by the
    rule `test_no_private_name_crosses_a_module` states; `here` is what the module defines,
    `elsewhere` what the other modules do."""
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (
                node.level or (node.module or "").split(".")[0] == "pomset"):
            for alias in node.names:
                if _private(alias.name):
                    yield node.lineno, f"imports {alias.name}"
                imported.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "pomset":
                    imported.add(alias.asname or "pomset")
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)
                and _private(node.attr)):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in imported:
            yield node.lineno, f"reads {owner.id}.{node.attr} of an imported pomset name"
        elif isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            continue
        elif node.attr not in here and node.attr in elsewhere:
            yield node.lineno, (f"reads {ast.unparse(owner)}.{node.attr}, a private name "
                                f"another module defines")


@pytest.mark.parametrize("path", [path for path, _, _ in MODULES],
                         ids=[".".join(parts) for _, parts, _ in MODULES])
def test_no_private_name_crosses_a_module(path):
    """A private name (`_x`; not a dunder, not `_` alone) crosses a module boundary when it
    is (1) imported from another pomset module, `from .x import _y`; (2) read as an
    attribute of a name imported from a pomset module, `mod._y` or `SomeClass._method`; or
    (3) read as an attribute of any other object but `self`/`cls` (`obj._y`, `type(obj)._y`,
    `self.plan._y`) where this module defines no `_y` (no def, class, variable, attribute
    assignment or `__slots__` entry of that name) and another pomset module does. So a
    private attribute of a third-party object (pyspark's `_jvm`) passes, as does a
    subclass's `self._y` of its base's; a `_y` both modules define is not seen."""
    elsewhere = set().union(*(names for p, names in DEFINED.items() if p != path))
    problems = [f"{path.relative_to(ROOT.parent)}:{line} {what}" for line, what in
                _private_crossings(TREES[path], DEFINED[path], elsewhere)]
    assert not problems, "\n".join(problems)


def test_the_private_name_checker_sees_violations():
    """Each kind of crossing is found; dunders, `_`, `self`/`cls`, a module's own names and
    a third-party object's privates pass."""
    bad = ast.parse(
        "from .relational import _FieldsMap, Select\n"
        "from ..windowing import windowfns\n"
        "import pomset.sdk.core as core\n"
        "class A:\n"
        "    __slots__ = ('_mine',)\n"
        "    def f(self, runner, fn):\n"
        "        self._mine, self._theirs = fn._mine, self.__class__\n"
        "        windowfns._assign; Select._steps; core._default_strategy()\n"
        "        runner._out(); type(fn)._merge_new; self.plan._steps\n"
        "        fn._jvm; fn.__dict__; _ = 1\n")
    found = sorted(_private_crossings(bad, _defines(bad),
                                      {"_out", "_merge_new", "_steps", "_mine"}))
    assert found == [
        (1, "imports _FieldsMap"),
        (8, "reads Select._steps of an imported pomset name"),
        (8, "reads core._default_strategy of an imported pomset name"),
        (8, "reads windowfns._assign of an imported pomset name"),
        (9, "reads runner._out, a private name another module defines"),
        (9, "reads self.plan._steps, a private name another module defines"),
        (9, "reads type(fn)._merge_new, a private name another module defines"),
    ]



def test_the_layers_are_all_there():
    assert {parts[1] for _, parts, _ in MODULES if len(parts) > 2} >= set(LAYERS)


@pytest.mark.parametrize("path,parts,package", MODULES,
                         ids=[".".join(parts) for _, parts, _ in MODULES])
def test_no_module_imports_upward_or_across_runners(path, parts, package):
    here = _layer(parts)
    problems = []
    for name, line in _imports(path, package):
        target = name.split(".")
        where = f"{path.relative_to(ROOT.parent)}:{line} imports {name}"
        if target[0] == "pyspark" and parts[:3] != ("pomset", "runners", "spark"):
            problems.append(f"{where}: only pomset.runners.spark may import pyspark")
        if target[0] != "pomset" or len(target) < 2:
            continue
        there = _layer(target)
        if here >= 0 and there > here:
            problems.append(f"{where}: {parts[1]} may not import the layer above it, {target[1]}")
        if here < 0 and parts[-1] != "cli" and target[1] == "runners":
            problems.append(f"{where}: only the command line may name a runner module")
        if (parts[1:2] == ("runners",) and target[1] == "runners" and len(parts) > 2
                and len(target) > 2 and target[2] != parts[2]):
            problems.append(f"{where}: a runner may not import another runner")
    assert not problems, "\n".join(problems)


def test_the_checker_sees_a_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from ..runners.local import runner\n")
    assert [n for n, _ in _imports(bad, ("pomset", "sdk"))] == ["pomset.runners.local"]


# --- no runner module recognises an SDK transform by its class ---------------------------------

TRANSFORM_HOMES = ("pomset.sdk", "pomset.traces", "pomset.io")


def _transform_classes() -> dict:
    """Every transform class (a `PTransform`) defined in the SDK, the traces or `pomset.io`,
    by name."""
    import importlib
    import pkgutil

    from pomset.sdk.ptransform import PTransform
    modules = [importlib.import_module("pomset.io")]
    for home in ("pomset.sdk", "pomset.traces"):
        package = importlib.import_module(home)
        modules.append(package)
        for info in pkgutil.walk_packages(package.__path__, home + "."):
            modules.append(importlib.import_module(info.name))
    return {obj.__name__: obj for module in modules for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, PTransform)
            and obj.__module__.startswith(TRANSFORM_HOMES)}


TRANSFORMS = _transform_classes()


def _is_transform(value) -> bool:
    """A transform class, or a tuple of them (a ladder's `isinstance(t, (A, B))` spelled once)."""
    if isinstance(value, tuple):
        return bool(value) and all(_is_transform(v) for v in value)
    return isinstance(value, type) and value in TRANSFORMS.values()


def _transform_type_tests(path: pathlib.Path, package: tuple) -> list:
    """Where a module imports a transform class, or calls `isinstance`/`issubclass` with one
    (by its name, bare or as an attribute): (line, what)."""
    import importlib
    tree = ast.parse(path.read_text(), str(path))
    found, names = [], set(TRANSFORMS)
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = (list(package[:len(package) - node.level + 1]) if node.level else [])
        module = ".".join(base + ([node.module] if node.module else []))
        for alias in node.names:
            try:
                value = getattr(importlib.import_module(module), alias.name, None)
            except ImportError:
                continue
            if _is_transform(value):
                names.add(alias.asname or alias.name)
                found.append((node.lineno, f"imports {alias.name} from {module}"))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2):
            for part in ast.walk(node.args[1]):
                name = (part.id if isinstance(part, ast.Name)
                        else part.attr if isinstance(part, ast.Attribute) else None)
                if name in names:
                    found.append((node.lineno, f"{node.func.id}(..., {name})"))
    return sorted(found)


@pytest.mark.parametrize("runner", ["local", "spark"])
def test_a_runner_recognises_no_sdk_transform_by_its_class(runner):
    """A runner reads what a step is from its plan node's kind and facts, never from the
    transform's class."""
    problems = []
    for path, parts, package in MODULES:
        if parts[1:3] != ("runners", runner):
            continue
        for line, what in _transform_type_tests(path, package):
            problems.append(f"{path.relative_to(ROOT.parent)}:{line} {what}")
    assert not problems, "\n".join(problems)


def test_the_transform_checker_sees_a_violation(tmp_path, monkeypatch):
    (tmp_path / "sources_by_class.py").write_text(
        "from pomset.sdk.core import Create\nfrom pomset.sdk.test_stream import TestStream\n"
        "MADE = (Create, TestStream)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    bad = tmp_path / "bad.py"
    bad.write_text("from ...sdk.core import ParDo\nfrom sources_by_class import MADE\n"
                   "from ...sdk import core\n\n"
                   "def f(t):\n    return isinstance(t, (core.GroupByKey, int))\n")
    assert _transform_type_tests(bad, ("pomset", "runners", "local")) == [
        (1, "imports ParDo from pomset.sdk.core"),
        (2, "imports MADE from sources_by_class"),
        (6, "isinstance(..., GroupByKey)")]
    assert {"ParDo", "ReadFromKafka", "TemplateStep", "OPlus", "DGSStep", "Typed",
            "ReadStreams", "TestStream", "WriteToText"} <= set(TRANSFORMS)


UNDEFINED = ("UndefinedName", "UndefinedExport", "UndefinedLocal")


def _undefined_names(root: pathlib.Path) -> list:
    """pyflakes' messages for names used but never bound, in every module under `root`."""
    from pyflakes import checker, messages
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for m in checker.Checker(tree, filename=str(path)).messages:
            if type(m).__name__ in UNDEFINED:
                found.append(f"{path}:{m.lineno}: {m.message % m.message_args}")
    assert all(hasattr(messages, name) for name in UNDEFINED)
    return found


def test_no_module_uses_a_name_it_never_defines():
    """A rename that misses a caller (a merge that keeps an old private name, say) fails here,
    not at the first run that reaches the caller."""
    problems = _undefined_names(ROOT)
    assert not problems, "\n".join(problems)


def test_the_undefined_name_checker_sees_a_violation(tmp_path):
    (tmp_path / "bad.py").write_text("from typing import Any\n\n"
                                     "def f(x: Any) -> Any:\n    return _FieldsMap(x)\n")
    assert _undefined_names(tmp_path) == [f"{tmp_path / 'bad.py'}:4: undefined name '_FieldsMap'"]
