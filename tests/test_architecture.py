"""The layering holds: `windowing` -> `triggers` -> `sdk` -> `traces` -> `runtime` ->
`runners/<name>`; no module imports a layer above its own, a runner never imports another
runner, and only the Spark runner imports pyspark. Read from the source, so a lazy import
inside a function counts too."""
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
