"""Stored errors are data: decoding one imports nothing, runs no lookup hook, and
hands back a printable exception that cannot pass for a live signal."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
import types
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from replaykit import Engine, Status, Step, StepFailed, Transaction, serde, workflow
from replaykit.errors import (
    AwaitedWorkflowCancelled,
    DuplicateDedupId,
    NonDeterminismError,
    PayloadTooLarge,
    RecordConflict,
    SerializationError,
    Stopped,
    StoreError,
    StoreUnavailable,
    TransactionUnsupported,
    WorkflowNotFound,
)
from replaykit.runtime.host import LogMovedOn
from replaykit.testing.replay import ResultMismatch

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


# -- a rebuilt exception always prints -------------------------------------------------------


def _printable(exc: BaseException) -> tuple[str, str]:
    return str(exc), repr(exc)  # either raising fails the test


def test_a_called_process_error_comes_back_printable() -> None:
    # The tuple command comes back a list, so CalledProcessError(*args) prints
    # another message, and the bare rebuild's __str__ reads attributes never set.
    original = subprocess.CalledProcessError(1, ("false",), b"out")
    info = serde.encode_error(original, with_traceback=False)
    again = serde.decode_error(info)
    text, _ = _printable(again)
    assert str(original) in text
    if isinstance(again, StepFailed):
        assert again.type_name == "subprocess.CalledProcessError"
        assert again.message == str(original)
    else:
        assert type(again) is subprocess.CalledProcessError and text == str(original)


def test_a_stored_error_without_its_args_comes_back_printable() -> None:
    message = "Command 'make' returned non-zero exit status 2."
    again = serde.decode_error(serde.ErrorInfo("subprocess", "CalledProcessError", message, []))
    _printable(again)
    assert isinstance(again, StepFailed)
    assert again.type_name == "subprocess.CalledProcessError" and again.message == message


def test_a_list_command_still_comes_back_as_its_class() -> None:
    original = subprocess.CalledProcessError(2, ["make", "all"])
    again = serde.decode_error(serde.encode_error(original))
    assert type(again) is subprocess.CalledProcessError
    assert str(again) == str(original) and again.returncode == 2


class ReprBreaks(Exception):
    def __repr__(self) -> str:
        raise RuntimeError("repr needs state a rebuilt one lacks")


class StrBreaksWithoutState(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.detail = f"code {code}"

    def __str__(self) -> str:
        return self.detail


def test_an_exception_that_cannot_print_falls_back_to_step_failed() -> None:
    for info in [
        serde.ErrorInfo(__name__, "ReprBreaks", "r", ["r"]),
        serde.ErrorInfo(__name__, "StrBreaksWithoutState", "code 7", ["not a code", "extra"]),
    ]:
        again = serde.decode_error(info)
        _printable(again)
        assert isinstance(again, StepFailed), info
        assert again.message == info.message and again.type_name == f"{__name__}.{info.qualname}"


class StrRaises(Exception):
    def __str__(self) -> str:
        raise ValueError("no text")


def test_an_exception_whose_str_raises_can_still_be_recorded() -> None:
    info = serde.encode_error(StrRaises("x"))
    assert info.qualname == "StrRaises" and info.message
    _printable(serde.decode_error(info))


def test_a_step_failed_comes_back_with_its_type_name_and_message() -> None:
    stand_in = StepFailed("billing.CardDeclined", "card declined")
    again = serde.decode_error(serde.encode_error(stand_in))
    assert isinstance(again, StepFailed)
    assert (again.type_name, again.message) == ("billing.CardDeclined", "card declined")
    assert str(again) == str(stand_in)


def test_a_rebuilt_duplicate_dedup_id_still_has_its_attribute() -> None:
    # Its args hold the message only, so it is rebuilt without running __init__.
    again = serde.decode_error(serde.encode_error(DuplicateDedupId("dedup id 'd' is taken", "r1")))
    assert type(again) is DuplicateDedupId and str(again) == "dedup id 'd' is taken"
    assert again.existing_id == ""


# -- replaykit's live signals are never rebuilt from stored data -------------------------------


class MyOutage(StoreUnavailable):
    """An application's own subclass: still an outage signal to replaykit."""


LIVE_ONLY = [
    StoreUnavailable("the database is down"),
    StoreError("bad schema"),
    RecordConflict("another writer recorded position 3"),
    MyOutage("down"),
    NonDeterminismError("the code yielded step 'b', the log recorded step 'a'"),
    ResultMismatch("the code returned 2 but the recorded run returned 1"),
    Stopped("stopped by an operator"),
    LogMovedOn("log moved on"),
]


@pytest.mark.parametrize("live", LIVE_ONLY, ids=lambda e: type(e).__name__)
def test_live_signals_come_back_as_step_failed(live: BaseException) -> None:
    info = serde.encode_error(live)
    again = serde.decode_error(info)
    assert type(again) is StepFailed
    assert again.type_name == f"{type(live).__module__}.{type(live).__qualname__}"
    assert again.message == str(live)


RECORDED_FACTS = [
    WorkflowNotFound("no workflow run with id 'x'"),
    AwaitedWorkflowCancelled("workflow 'child' (id 'c') was cancelled"),
    SerializationError("cannot encode the result"),
    PayloadTooLarge("too big"),
    TransactionUnsupported("needs SQLite or PostgreSQL"),
]


@pytest.mark.parametrize("fact", RECORDED_FACTS, ids=lambda e: type(e).__name__)
def test_errors_that_are_recorded_outcomes_still_come_back_as_their_class(
    fact: BaseException,
) -> None:
    # A workflow may catch these (a child that does not exist, a cancelled child).
    again = serde.decode_error(serde.encode_error(fact))
    assert type(again) is type(fact) and str(again) == str(fact)


def down() -> None:
    raise StoreUnavailable("the step's own database was down")


@workflow(name="safety.outage-in-a-step")
def outage_in_a_step() -> Generator[Any, Any, None]:
    yield Step("down", down)


def test_a_run_that_failed_with_an_outage_is_not_an_outage_of_the_caller(tmp_path: Path) -> None:
    # StoreUnavailable says "retry, the store will be back": a caller that retries
    # on it must not retry a run that has finished for good.
    with (
        Engine(f"sqlite:///{tmp_path / 'runs.db'}", poll_interval=0.05) as eng,
        pytest.raises(StepFailed) as failed,
    ):
        eng.run(outage_in_a_step, workflow_id="outage", timeout=20)
    assert failed.value.type_name == "replaykit.errors.StoreUnavailable"
    assert "the step's own database was down" in failed.value.message


STORED_OUTAGE = serde.encode_error(StoreUnavailable("the job table said: store was down"))


def reraise_stored(conn: Any) -> None:
    # A body that re-raises a failure it read back from stored data of its own.
    raise serde.decode_error(STORED_OUTAGE)


@workflow(name="safety.stored-outage-in-a-transaction")
def stored_outage_in_a_transaction() -> Generator[Any, Any, None]:
    yield Transaction("reraise", reraise_stored)


def test_a_rebuilt_outage_in_a_transaction_fails_it_instead_of_retrying_forever(
    tmp_path: Path,
) -> None:
    # The engine lets a live StoreUnavailable out of a Transaction and retries the
    # run later; a rebuilt one would have it retry a body that always fails.
    with Engine(f"sqlite:///{tmp_path / 'runs.db'}", poll_interval=0.05) as eng:
        with pytest.raises(StepFailed) as failed:
            eng.run(stored_outage_in_a_transaction, workflow_id="tx", timeout=5)
        assert eng.handle("tx").status() is Status.ERROR
    assert failed.value.type_name == "replaykit.errors.StoreUnavailable"
