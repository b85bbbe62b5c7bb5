"""Stored errors are data: decoding one imports nothing, runs no lookup hook, and
hands back a printable exception that cannot pass for a live signal."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

from replaykit import StepFailed, serde

REPO = Path(__file__).resolve().parent.parent


# -- no import, no hook ----------------------------------------------------------------------


def test_decoding_names_of_lazily_imported_classes_imports_nothing() -> None:
    # concurrent.futures imports ProcessPoolExecutor (and with it multiprocessing)
    # from its module-level __getattr__; a fresh interpreter is the only place
    # where that import has surely not happened yet.
    script = textwrap.dedent(
        """
        import json, sys
        import concurrent.futures
        from replaykit import serde

        def watched():
            return sorted(
                n for n in sys.modules
                if n.split(".")[0] == "multiprocessing" or n == "concurrent.futures.process"
            )

        for name in watched():
            del sys.modules[name]
        for attr in ("ProcessPoolExecutor", "process"):
            vars(concurrent.futures).pop(attr, None)
        names = [
            ("concurrent.futures", "ProcessPoolExecutor"),
            ("concurrent.futures", "process.BrokenProcessPool"),
            ("concurrent.futures.process", "BrokenProcessPool"),
        ]
        kinds = []
        for module, qualname in names:
            exc = serde.decode_error(serde.ErrorInfo(module, qualname, "boom", ["boom"]))
            kinds.append([type(exc).__name__, getattr(exc, "type_name", None)])
        print(json.dumps({"kinds": kinds, "imported": watched()}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["imported"] == []
    assert seen["kinds"] == [
        ["StepFailed", "concurrent.futures.ProcessPoolExecutor"],
        ["StepFailed", "concurrent.futures.process.BrokenProcessPool"],
        ["StepFailed", "concurrent.futures.process.BrokenProcessPool"],
    ]


class Boom(Exception):
    class Inner(Exception):
        pass


def _hooked_module(monkeypatch: pytest.MonkeyPatch, calls: list[str]) -> types.ModuleType:
    module = types.ModuleType("rk_hooked_module")

    def __getattr__(name: str) -> Any:
        calls.append(name)
        return Boom

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module


def test_a_module_getattr_hook_is_never_called(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    module = _hooked_module(monkeypatch, calls)
    again = serde.decode_error(serde.ErrorInfo(module.__name__, "Boom", "x", ["x"]))
    assert calls == []
    assert isinstance(again, StepFailed) and again.type_name == "rk_hooked_module.Boom"


class _Standin:
    """What some libraries put in sys.modules: an object whose attributes are code."""

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    def __getattr__(self, name: str) -> Any:
        self.calls.append(name)
        return Boom


def test_a_stand_in_in_sys_modules_is_not_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setitem(sys.modules, "rk_standin", _Standin(calls))  # type: ignore[arg-type]
    again = serde.decode_error(serde.ErrorInfo("rk_standin", "Boom", "x", ["x"]))
    assert calls == []
    assert isinstance(again, StepFailed)


def test_nested_classes_are_found_through_class_dicts() -> None:
    info = serde.encode_error(Boom.Inner("inside"))
    assert info.qualname == "Boom.Inner"
    again = serde.decode_error(info)
    assert type(again) is Boom.Inner and str(again) == "inside"


class _LoudMeta(type):
    looked_up: list[str] = []  # noqa: RUF012 - a test's shared notebook

    def __getattr__(cls, name: str) -> Any:
        _LoudMeta.looked_up.append(name)
        return Boom


class Outer(metaclass=_LoudMeta):
    pass


def test_a_metaclass_getattr_is_never_called() -> None:
    _LoudMeta.looked_up.clear()
    again = serde.decode_error(serde.ErrorInfo(__name__, "Outer.Missing", "x", ["x"]))
    assert _LoudMeta.looked_up == []
    assert isinstance(again, StepFailed)


class _Proxy:
    """Like a lazy proxy object: asking what it is evaluates something."""

    evaluated: list[str] = []  # noqa: RUF012 - a test's shared notebook

    @property
    def __class__(self) -> type:
        _Proxy.evaluated.append("__class__")
        return type(Boom)


proxy = _Proxy()


def test_an_object_that_is_not_a_class_is_not_asked_what_it_is() -> None:
    _Proxy.evaluated.clear()
    again = serde.decode_error(serde.ErrorInfo(__name__, "proxy", "x", ["x"]))
    assert _Proxy.evaluated == []
    assert isinstance(again, StepFailed)


def test_a_lazily_loaded_module_is_not_executed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = tmp_path / "ran"
    source = tmp_path / "rk_lazy_module.py"
    source.write_text(
        f"open({str(ran)!r}, 'w').close()\nclass Boom(Exception):\n    pass\n", encoding="utf-8"
    )
    spec = importlib.util.spec_from_file_location("rk_lazy_module", source)
    assert spec is not None and spec.loader is not None
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "rk_lazy_module", module)
    spec.loader.exec_module(module)  # lazy: runs nothing until an attribute is read
    again = serde.decode_error(serde.ErrorInfo("rk_lazy_module", "Boom", "x", ["x"]))
    assert not ran.exists()
    assert isinstance(again, StepFailed)
