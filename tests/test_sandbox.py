"""The testing kit's sandbox: clock and randomness calls in workflow bodies are refused."""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import random
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Generator
from datetime import date, datetime
from pathlib import Path
from time import time as time_bound_at_import
from typing import Any

import pytest

from replaykit import Call, Engine, MemoryStore, Now, Random, Step, Uuid, logger, workflow
from replaykit import testing as rt
from replaykit.errors import NonDeterministicCall
from replaykit.lint import lint_file
from replaykit.testing import _sandbox

HERE = Path(__file__)


def line_of(marker: str) -> int:
    for number, line in enumerate(HERE.read_text().splitlines(), start=1):
        if line.rstrip().endswith(f"# {marker}"):
            return number
    raise AssertionError(f"no line marked {marker!r}")


CALLS: dict[str, Callable[[], Any]] = {
    "time.time()": lambda: time.time(),  # call:time.time()
    "time.time_ns()": lambda: time.time_ns(),  # call:time.time_ns()
    "time.monotonic()": lambda: time.monotonic(),  # call:time.monotonic()
    "time.perf_counter()": lambda: time.perf_counter(),  # call:time.perf_counter()
    "random.random()": lambda: random.random(),  # call:random.random()
    "random.randint()": lambda: random.randint(1, 6),  # call:random.randint()
    "random.choice()": lambda: random.choice("abc"),  # call:random.choice()
    "uuid.uuid4()": lambda: uuid.uuid4(),  # call:uuid.uuid4()
    "os.urandom()": lambda: os.urandom(4),  # call:os.urandom()
    "secrets.token_hex()": lambda: secrets.token_hex(4),  # call:secrets.token_hex()
}

chosen: list[str] = []


@workflow(name="sandbox.calls")
def calls_one(which: str) -> Generator[Any, Any, Any]:
    yield Now()
    return repr(CALLS[which]())


@pytest.mark.parametrize("call", sorted(CALLS))
def test_each_call_in_a_body_is_refused_with_the_call_the_workflow_the_line_and_the_fix(
    call: str,
) -> None:
    with pytest.raises(NonDeterministicCall) as caught:
        rt.run(calls_one, call)
    error = caught.value
    assert error.call == call
    assert error.workflow_name == "sandbox.calls"
    assert error.workflow_id == "sandbox.calls:test"
    assert error.call_site.endswith(f"test_sandbox.py:{line_of('call:' + call)}")
    message = str(error)
    assert message.startswith(call)
    assert "was called in the body of workflow 'sandbox.calls'" in message
    assert f"at {error.call_site}" in message
    assert "sandbox=False" in message
    if call.startswith("time.time"):
        assert "yield Now()" in error.fix
    elif call.startswith("uuid"):
        assert "yield Uuid()" in error.fix
    elif call.startswith("random"):
        assert "yield Random()" in error.fix
    else:
        assert "inside a Step" in error.fix


def test_the_guards_are_gone_after_the_run() -> None:
    real = (time.time, random.random, uuid.uuid4, os.urandom, secrets.token_hex)
    with pytest.raises(NonDeterministicCall):
        rt.run(calls_one, "time.time()")
    assert (time.time, random.random, uuid.uuid4, os.urandom, secrets.token_hex) == real


def test_an_interrupted_install_leaves_no_guard_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    real = (time.time, random.random, uuid.uuid4, os.urandom, secrets.token_hex)
    calls = 0
    guard_function = _sandbox._guard_function

    def interrupted(module: Any, name: str, fix: str) -> Callable[[], None]:
        nonlocal calls
        calls += 1
        if calls == 5:
            raise KeyboardInterrupt
        return guard_function(module, name, fix)

    monkeypatch.setattr(_sandbox, "_guard_function", interrupted)
    with pytest.raises(KeyboardInterrupt):
        rt.run(calls_one, "time.time()")
    assert (time.time, random.random, uuid.uuid4, os.urandom, secrets.token_hex) == real
    assert not _sandbox._installed and not _sandbox._owners


@workflow(name="sandbox.class_clock")
def class_clock(which: str) -> Generator[Any, Any, Any]:
    yield Now()
    # The clock's class methods are refused through the profile hook (see _sandbox.py).
    if which == "datetime.now()":
        value: Any = datetime.now(dt.UTC)  # class clock:datetime.now()
    elif which == "datetime.utcnow()":
        value = dt.datetime.utcnow()  # class clock:datetime.utcnow()
    elif which == "datetime.today()":
        value = datetime.today()  # class clock:datetime.today()
    else:
        value = date.today()  # class clock:date.today()
    return [type(value).__name__, type(datetime.now).__name__, "now" in vars(datetime)]


@pytest.mark.parametrize("call", ["datetime.now()", "datetime.utcnow()"])
def test_the_datetime_clock_is_refused_and_the_classes_are_never_patched(call: str) -> None:
    # Writing into the C types' namespaces is not safe in a test process (C extensions
    # such as time-machine hold datetime.now as a C function; free-threaded builds race):
    # the profile hook sees the C call instead, and the class stays what it always is.
    with pytest.raises(NonDeterministicCall) as caught:
        rt.run(class_clock, call)
    error = caught.value
    assert error.call == call
    assert error.call_site.endswith(f"test_sandbox.py:{line_of('class clock:' + call)}")
    assert "yield Now()" in str(error)
    assert type(datetime.now).__name__ == "builtin_function_or_method"
    assert "now" in vars(datetime)
    found = [(f.line, f.code) for f in lint_file(HERE) if f.workflow == "class_clock"]
    assert (line_of("class clock:" + call), "RK101") in found
    # Outside a body the classes answer as ever, on every thread.
    assert rt.run(class_clock, call, sandbox=False).unwrap()[0] == "datetime"


@pytest.mark.parametrize("call", ["datetime.today()", "date.today()"])
def test_today_is_refused_through_the_time_time_it_calls(call: str) -> None:
    with pytest.raises(NonDeterministicCall) as caught:
        rt.run(class_clock, call)
    error = caught.value
    assert error.call == "time.time()"
    assert error.call_site.endswith(f"test_sandbox.py:{line_of('class clock:' + call)}")
    assert "date.today() and datetime.today() call it too" in str(error)


def impure_step() -> list[Any]:
    # A step body runs once per record: it may read anything.
    return [time.time(), datetime.now(dt.UTC).isoformat(), random.random(), str(uuid.uuid4())]


@workflow(name="sandbox.right")
def right() -> Generator[Any, Any, Any]:
    facts = yield Step("impure", impure_step)
    now = yield Now()
    value = yield Random()
    key = yield Uuid()
    logger.info("at %s drew %s and %s", now, value, key)  # logging reads the clock: allowed
    return [len(facts), now.year, 0 <= value < 1, key.version]


def test_step_bodies_recorded_commands_and_logging_are_not_refused(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="replaykit.workflow"):
        # The impure step's real body is the point: the sandbox leaves step bodies alone.
        result = rt.run(right, real_steps={"impure"})
    assert result.unwrap() == [4, 2030, True, 4]
    assert any("drew" in r.getMessage() for r in caplog.records)
    rt.check_determinism(right, real_steps={"impure"})


@workflow(name="sandbox.swallows")
def swallows() -> Generator[Any, Any, str]:
    yield Now()
    with contextlib.suppress(Exception):
        random.random()  # swallowed
    return "carried on"


def test_a_refusal_the_body_swallows_is_raised_by_run() -> None:
    with pytest.raises(NonDeterministicCall) as caught:
        rt.run(swallows)
    assert caught.value.call_site.endswith(f":{line_of('swallowed')}")


def test_sandbox_false_lets_the_calls_through() -> None:
    result = rt.run(swallows, sandbox=False)
    assert result.unwrap() == "carried on"
    assert rt.run(calls_one, "uuid.uuid4()", sandbox=False).ok


def test_check_determinism_refuses_and_can_be_told_not_to() -> None:
    with pytest.raises(NonDeterministicCall, match=r"random\.random\(\) was called"):
        rt.check_determinism(swallows)
    report = rt.check_determinism(swallows, sandbox=False)
    assert report.reference.result == "carried on"


def deadline_in_an_hour() -> float:
    return time.time() + 3600  # helper


@workflow(name="sandbox.helper")
def uses_a_helper() -> Generator[Any, Any, float]:
    yield Now()
    return deadline_in_an_hour()


def test_a_helper_called_from_the_body_is_caught_where_it_calls() -> None:
    with pytest.raises(NonDeterministicCall) as caught:
        rt.run(uses_a_helper)
    assert caught.value.call_site.endswith(f":{line_of('helper')}")
    assert caught.value.workflow_name == "sandbox.helper"


@workflow(name="sandbox.child")
def child() -> Generator[Any, Any, str]:
    yield Now()
    return str(uuid.uuid4())


@workflow(name="sandbox.parent")
def parent() -> Generator[Any, Any, str]:
    value: str = yield Call(child)
    return value


def test_a_child_run_is_sandboxed_too() -> None:
    with pytest.raises(NonDeterministicCall) as caught:
        rt.run(parent)
    assert caught.value.workflow_name == "sandbox.child"
    assert caught.value.workflow_id == "sandbox.parent:test:0"


@workflow(name="sandbox.bound")
def bound_at_import() -> Generator[Any, Any, bool]:
    yield Now()
    return time_bound_at_import() > 0  # bound before the run


def test_a_c_clock_bound_to_a_name_before_the_run_is_refused_too() -> None:
    # `from time import time` holds the original C function: the profile hook sees it.
    with pytest.raises(NonDeterministicCall) as caught:
        rt.run(bound_at_import)
    assert caught.value.call == "time.time()"
    assert caught.value.call_site.endswith(f"test_sandbox.py:{line_of('bound before the run')}")
    found = [(f.line, f.code) for f in lint_file(HERE) if f.workflow == "bound_at_import"]
    assert found == [(line_of("bound before the run"), "RK101")]


@workflow(name="sandbox.elsewhere")
def elsewhere() -> Generator[Any, Any, bool]:
    yield Now()
    return time.time() > 0


def run_on_another_engine() -> bool:
    # While the kit's run is in this step, another engine runs a workflow that reads
    # the clock: not a run of the kit's session, so it is not refused.
    with Engine(MemoryStore(), executor_id="elsewhere") as engine:
        handle = engine.start(elsewhere, workflow_id="elsewhere-1")
        answer: bool = handle.result(timeout=10)
    seen_by_a_thread: list[float] = []
    thread = threading.Thread(target=lambda: seen_by_a_thread.append(time.time()))
    thread.start()
    thread.join()
    return answer and len(seen_by_a_thread) == 1


@workflow(name="sandbox.host")
def host() -> Generator[Any, Any, bool]:
    answer: bool = yield Step("elsewhere", run_on_another_engine)
    return answer


def test_other_engines_and_threads_see_the_real_functions_during_a_run() -> None:
    assert rt.run(host, real_steps={"elsewhere"}).unwrap() is True


def test_sessions_on_several_threads_at_once() -> None:
    outcomes: dict[str, Any] = {}
    barrier = threading.Barrier(4)

    def one(name: str, wf: Any, *args: Any) -> None:
        barrier.wait()
        try:
            outcomes[name] = rt.run(wf, *args, workflow_id=f"{name}-run", real_steps=True).unwrap()
        except NonDeterministicCall as exc:
            outcomes[name] = exc

    threads = [
        threading.Thread(target=one, args=("clean-a", right)),
        threading.Thread(target=one, args=("clean-b", right)),
        threading.Thread(target=one, args=("dirty-a", calls_one, "time.time()")),
        threading.Thread(target=one, args=("dirty-b", calls_one, "uuid.uuid4()")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes["clean-a"] == outcomes["clean-b"] == [4, 2030, True, 4]
    assert isinstance(outcomes["dirty-a"], NonDeterministicCall)
    assert outcomes["dirty-a"].workflow_id == "dirty-a-run"
    assert outcomes["dirty-a"].call == "time.time()"
    assert isinstance(outcomes["dirty-b"], NonDeterministicCall)
    assert outcomes["dirty-b"].call == "uuid.uuid4()"
    assert time.time.__module__ == "time"  # the real one again
