"""Runs Beam's own modules on pomset (issue 17): each module's source, from the pinned wheel
that tests/beam_src.py unpacks, with `apache_beam` replaced by `pomset` (what a Beam user does
to their import) and nothing else changed; its unittest test methods then run as pytest
tests.

While the modules load, sys.modules holds them under their new names (so a Beam test's
`from pomset.examples.complete.game import user_score` finds the loaded example), with their
packages; afterwards sys.modules is as it was, but for a suite module itself. A module loaded `lenient` (a Beam unit-test
module, most of whose tests use Beam internals) may import Beam names pomset lacks: each is a
placeholder that raises, naming it, when a test uses it. The examples are never lenient."""
from __future__ import annotations

import builtins
import contextlib
import importlib.util
import inspect
import pathlib
import sys
import types
import unittest
from typing import Any, Callable, Collection, Dict, Iterator, List, Optional, Sequence, Tuple

import beam_src

BEAM, POMSET = "apache_beam", "pomset"


def ported(text: str) -> str:
    """A Beam source or module name after `import apache_beam` became `import pomset`."""
    return text.replace(BEAM, POMSET)


def load(names: Sequence[str], lenient: Collection[str] = ()) -> Dict[str, types.ModuleType]:
    """Beam's modules `names` (apache_beam.x.y), in order, each ported; those in `lenient`
    may import Beam names pomset lacks. Returns them by their Beam name."""
    root = pathlib.Path(beam_src.fetch())
    hidden: Dict[str, Any] = {}   # what the load's sys.modules entries hid (None: nothing)
    loaded: Dict[str, types.ModuleType] = {}
    try:
        for name in names:
            module = types.ModuleType(ported(name))
            path = root.joinpath(*name.split(".")).with_suffix(".py")
            module.__file__ = str(path)
            if name in lenient:
                module.__builtins__ = dict(vars(builtins), __import__=_lenient_import)
            _register(module, hidden)
            exec(compile(ported(path.read_text()), str(path), "exec"), vars(module))
            loaded[name] = module
    finally:
        for name, before in hidden.items():
            if before is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = before
    return loaded


#: modules a module of beam_src.SUITE imports from Beam's sources, loaded before it
COMPANIONS = {"transforms/combinefn_lifecycle_test": ["transforms/combinefn_lifecycle_pipeline"],
              "transforms/ptransform_test": ["typehints/typehints_test"]}


def load_suite_module(name: str) -> types.ModuleType:
    """Beam's unit-test module `name` (as beam_src.SUITE names it: `transforms/util_test`),
    loaded lenient, after the modules of Beam's it imports. It stays in sys.modules under its
    ported name, so a test that imports its own module (`import_module(__name__)`) finds it;
    what it defines is still pickled by value, as no executor could import it."""
    names = ["apache_beam." + n.replace("/", ".") for n in COMPANIONS.get(name, []) + [name]]
    module = load(names, lenient=names)[names[-1]]
    sys.modules[module.__name__] = module
    try:
        from pyspark import cloudpickle
    except ImportError:   # no Spark: nothing pickles the module's functions by reference
        return module
    cloudpickle.register_pickle_by_value(module)
    return module


def _register(module: types.ModuleType, hidden: Dict[str, Any]) -> None:
    """Put `module` in sys.modules, under a package for each parent pomset does not have
    (pomset.examples, ...), each module an attribute of such a parent."""
    def put(name: str, value: types.ModuleType) -> None:
        hidden.setdefault(name, sys.modules.get(name))
        sys.modules[name] = value
        parent, _, leaf = name.rpartition(".")
        if hidden.get(parent, False) is None:   # a package made here
            setattr(sys.modules[parent], leaf, value)

    parts = module.__name__.split(".")
    for i in range(2, len(parts)):
        name = ".".join(parts[:i])
        if name not in sys.modules and importlib.util.find_spec(name) is None:
            package = types.ModuleType(name)
            package.__path__ = []
            put(name, package)
    put(module.__name__, module)


class Missing:
    """A Beam name pomset lacks, imported by a lenient module: using it raises, naming it."""

    def __init__(self, what: str) -> None:
        object.__setattr__(self, "_what", what)

    def _fail(self, *_: Any, **__: Any) -> Any:
        raise NotImplementedError(f"{self._what}: pomset has no equivalent (the Beam test "
                                  f"module imports it for tests that are not run on pomset)")

    __call__ = __iter__ = __getitem__ = _fail

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        self._fail()

    def __mro_entries__(self, bases: tuple) -> tuple:
        fail = self._fail

        class MissingBase:   # a base class for a class the module defines on it
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                fail()
        return (MissingBase,)

    def __repr__(self) -> str:
        return f"<missing {self._what}>"


class _Lenient:
    """A pomset module whose names a Beam module imports, a `Missing` for each it lacks."""

    def __init__(self, module: types.ModuleType) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        try:
            return getattr(self._module, name)
        except AttributeError:
            beam = self._module.__name__.replace(POMSET, BEAM, 1)
            return Missing(f"Beam's {beam}.{name}")


class _MissingModule:
    """A Beam module pomset has no counterpart of, as `from pomset.x import y` sees it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, name: str) -> Any:
        return Missing(f"Beam's {self._name.replace(POMSET, BEAM, 1)}.{name}")


def _lenient_import(name: str, globals: Any = None, locals: Any = None,
                    fromlist: Sequence[str] = (), level: int = 0) -> Any:
    """`__import__` for a lenient module: `from pomset.x import y` where pomset has no
    pomset.x, or pomset.x no y, gives placeholders instead of failing the module."""
    try:
        module = builtins.__import__(name, globals, locals, fromlist, level)
    except ModuleNotFoundError:
        if level or not fromlist or not name.startswith(POMSET + "."):
            raise
        return _MissingModule(name)
    if fromlist and not all(hasattr(module, n) for n in fromlist if n != "*"):
        return _Lenient(module)
    return module


def test_params(cases: Sequence[Tuple[str, str, str]], local_only: Collection[str],
                differences: Dict[str, str],
                runners: Sequence[str] = ("local", "spark")) -> Iterator[Any]:
    """pytest params (module, class, method, runner) of Beam test methods: each on every one
    of `runners` (conftest's runner modes), but on Spark's only where not in `local_only`
    (those that build no pipeline, set its options themselves, or keep what they see in the
    test's process); a method in `differences` is a strict expected failure (pomset's answer
    differs on purpose, for the reason given)."""
    import pytest
    from pomset.testing import BeamAssertException
    for module, cls, method in cases:
        for runner in runners:
            if runner.startswith("spark") and method in local_only:
                continue
            marks = ([pytest.mark.xfail(strict=True, raises=BeamAssertException,
                                        reason=differences[method])]
                     if method in differences else [])
            yield pytest.param(module, cls, method, runner, marks=marks,
                               id=f"{module}.py:{method}-{runner}")


def beam_test_methods(module: types.ModuleType) -> Iterator[Tuple[str, str]]:
    """(class name, method name) of each unittest test method in `module`."""
    loader = unittest.TestLoader()
    for cls_name, cls in list(vars(module).items()):
        if isinstance(cls, type) and issubclass(cls, unittest.TestCase) and \
                cls.__module__ == module.__name__:
            for method in loader.getTestCaseNames(cls):
                yield cls_name, method


def run_beam_test(module: types.ModuleType, cls_name: str, method: str,
                  fixture: Optional[Callable[[str], Any]] = None) -> None:
    """Run one of the module's test methods as unittest would (setUp, the test, tearDown,
    cleanups), its failure raised as it is. Under pytest, `fixture(name)` gives a pytest
    fixture's value: the test class's own fixture methods the test uses (autouse, or named by
    its `usefixtures` mark) are run first on the test's instance, as pytest runs them for
    Beam's unittest classes (`inject_fixtures(self, caplog)`)."""
    case = getattr(module, cls_name)(method)
    with contextlib.ExitStack() as stack:
        if fixture is not None:
            for fn in _fixture_methods(type(case), getattr(type(case), method)):
                names = list(inspect.signature(fn).parameters)[1:]
                out = fn(case, **{n: fixture(n) for n in names})
                if inspect.isgenerator(out):
                    next(out)
                    stack.callback(next, out, None)
        case.debug()


def _fixture_methods(cls: type, test: Any) -> List[Callable[..., Any]]:
    """The pytest fixture methods of a test class that a test of it uses."""
    used = {name for mark in getattr(test, "pytestmark", []) if mark.name == "usefixtures"
            for name in mark.args}
    found = []
    for klass in reversed(cls.__mro__):
        for name, attr in vars(klass).items():
            marker = getattr(attr, "_fixture_function_marker", None)
            if marker is not None and (marker.autouse or name in used):
                found.append(inspect.unwrap(attr))
    return found


def outputs_of(module: types.ModuleType, cls_name: str, method: str) -> List[List[Any]]:
    """Run one of the module's test methods with its `equal_to` recording instead of
    comparing: what each of its assertions got, in the order they were checked (for a test
    of pomset's own answer to the same pipeline, where it differs from Beam's)."""
    got: List[List[Any]] = []

    def recorder(expected: Any) -> Callable[[List[Any]], None]:
        return lambda actual: got.append(list(actual))

    saved = vars(module)["equal_to"]
    module.equal_to = recorder
    try:
        run_beam_test(module, cls_name, method)
    finally:
        module.equal_to = saved
    return got


__all__ = ["COMPANIONS", "Missing", "beam_test_methods", "load", "load_suite_module", "outputs_of", "ported", "run_beam_test",
           "test_params"]
