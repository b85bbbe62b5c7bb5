"""Typed steps: `yield from Step(...)` gives mypy a step's result type and checks its arguments."""

from __future__ import annotations

import textwrap
from collections.abc import Generator
from pathlib import Path
from typing import Any

from replaykit import Engine, Retry, Step, workflow


def charge(order: str, amount: int) -> float:
    return amount * 1.5


async def fetch(url: str) -> bytes:
    return url.encode()


@workflow(name="typed-steps")
def typed(order: str) -> Generator[Any, Any, str]:
    charged = yield from Step("charge", charge, order, 2)
    fetched = yield from Step("fetch", fetch, "u")
    retried = yield from Step("charge-again", charge, order, 4).options(retry=Retry(2))
    plain = yield Step("plain", charge, order, 1)
    return f"{charged}:{fetched.decode()}:{retried}:{plain}"


def test_yield_from_a_step_runs_as_yield_does_and_records_the_workflows_line(
    store_url: str,
) -> None:
    with Engine(store_url) as engine:
        assert engine.run(typed, "o", workflow_id="typed-1", timeout=20) == "3.0:u:6.0:1.5"
        records = engine.steps("typed-1")
    assert [r.name for r in records] == ["charge", "fetch", "charge-again", "plain"]
    assert records[2].attempts == 1
    # The call site is the workflow's own line, not the command's iterator.
    assert all("test_typed_steps.py" in r.call_site for r in records)
    assert Step("s", charge, "o", 1).options(retry=Retry(3)).retry == Retry(3)


SNIPPET = """
from collections.abc import Generator
from typing import Any
from replaykit import Retry, Step

def charge(order: str, amount: int) -> float:
    return 1.0
async def fetch(url: str) -> bytes:
    return b""

def body(order: str) -> Generator[Any, Any, None]:
    charged = yield from Step("charge", charge, order, 3)
    reveal_type(charged)
    fetched = yield from Step("fetch", fetch, "https://x")
    reveal_type(fetched)
    retried = yield from Step("charge", charge, order, 3).options(retry=Retry(3))
    reveal_type(retried)
    optioned = yield from Step("charge", charge, order, 3, retry=Retry(3))
    reveal_type(optioned)
    wrong = yield from Step("charge", charge, order, "three")
    missing = yield from Step("charge", charge)
"""


def test_mypy_infers_results_and_reports_wrong_arguments(tmp_path: Path) -> None:
    from mypy import api

    source = tmp_path / "user_workflows.py"
    source.write_text(textwrap.dedent(SNIPPET))
    out, err, _status = api.run(
        ["--strict", "--no-error-summary", "--cache-dir", str(tmp_path / ".mypy"), str(source)]
    )
    lines = [line.split(":", 2)[1:] for line in out.splitlines() if "user_workflows.py" in line]
    by_line: dict[int, list[str]] = {}
    for number, text in lines:
        by_line.setdefault(int(number), []).append(text)
    revealed = {n: t for n, texts in by_line.items() for t in texts if "Revealed type" in t}
    assert [revealed[n].split('"')[1] for n in sorted(revealed)] == [
        "float",
        "bytes",
        "float",
        "float",
    ], out + err
    errors = {n for n, texts in by_line.items() for t in texts if " error: " in t}
    snippet_lines = textwrap.dedent(SNIPPET).splitlines()
    wrong = next(i for i, s in enumerate(snippet_lines, 1) if "wrong =" in s)
    missing = next(i for i, s in enumerate(snippet_lines, 1) if "missing =" in s)
    assert errors == {wrong, missing}, out


def test_a_bound_workflow_starts_enqueues_and_runs_as_its_unbound_spelling(
    store_url: str,
) -> None:
    with Engine(store_url) as engine:
        handle = engine.start(typed.bind("b"), workflow_id="typed-bound-1")
        assert handle.result(timeout=20) == "3.0:u:6.0:1.5"
        # The same arguments under the same id, in the other spelling, is the same run.
        assert engine.start(typed, "b", workflow_id="typed-bound-1").workflow_id == "typed-bound-1"
        assert engine.run(typed.bind("c"), workflow_id="typed-bound-2", timeout=20) == (
            "3.0:u:6.0:1.5"
        )
        queued = engine.enqueue("typed-q", typed.bind("d"), workflow_id="typed-bound-3")
        assert engine.steps(queued.workflow_id) == []


def test_binding_refuses_wrong_arguments_and_a_second_set() -> None:
    import pytest

    with pytest.raises(TypeError, match="workflow 'typed-steps': bad arguments"):
        typed.bind("o", "extra")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="bound to its arguments already"):
        Engine("memory://").start(typed.bind("o"), "again")


START_SNIPPET = """
from collections.abc import Generator
from typing import Any
from replaykit import Engine, workflow

@workflow
def checkout(order: str, amount: int) -> Generator[Any, Any, float]:
    return 1.0
    yield

def main(engine: Engine) -> None:
    handle = engine.start(checkout.bind("o-1", 100), workflow_id="order-1")
    reveal_type(handle.result())
    queued = engine.enqueue("orders", checkout.bind("o-2", amount=3))
    reveal_type(queued)
    wrong = engine.start(checkout.bind("o-3", "a hundred"))
    missing = engine.enqueue("orders", checkout.bind("o-4"))
"""


def test_mypy_checks_the_arguments_of_a_bound_start(tmp_path: Path) -> None:
    from mypy import api

    source = tmp_path / "user_starts.py"
    source.write_text(textwrap.dedent(START_SNIPPET))
    out, err, _status = api.run(
        ["--strict", "--no-error-summary", "--cache-dir", str(tmp_path / ".mypy"), str(source)]
    )
    lines = [line.split(":", 2)[1:] for line in out.splitlines() if "user_starts.py" in line]
    revealed = [text.split('"')[1] for _n, text in lines if "Revealed type" in text]
    assert revealed == [
        "float",
        "replaykit.runtime.handles.WorkflowHandle[float]",
    ], out + err
    snippet_lines = textwrap.dedent(START_SNIPPET).splitlines()
    expected = {
        next(i for i, s in enumerate(snippet_lines, 1) if f"{name} =" in s)
        for name in ("wrong", "missing")
    }
    errors = {int(n) for n, text in lines if " error: " in text}
    assert errors == expected, out


def test_mypy_finds_the_installed_package_from_outside_the_project(tmp_path: Path) -> None:
    """After README's `pip install -e '.[test]'`, a user's mypy run in a folder of its
    own sees replaykit's types (an import-hook editable install would hide them)."""
    import os
    import subprocess
    import sys

    source = tmp_path / "elsewhere.py"
    source.write_text(
        "from replaykit import Step\n"
        "def f(x: int) -> str:\n"
        "    return str(x)\n"
        'reveal_type(Step("s", f, 1))\n'
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "elsewhere.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "import-not-found" not in done.stdout and "missing library stubs" not in done.stdout
    assert 'Revealed type is "replaykit.commands.steps.Step[str]"' in done.stdout, done.stdout


COMMANDS_SNIPPET = """
import functools
from collections.abc import Generator
from typing import Any
from replaykit import (
    All, Await, Awakeable, Call, GetEvent, Now, Race, Random, Recv, Retry, Sleep, Start, Step,
    Uuid, workflow
)

def charge(order: str, amount: int) -> float:
    return 1.0
def keyword(order: str, *, amount: int) -> int:
    return 1

@workflow
def child(n: int) -> Generator[Any, Any, str]:
    return "x"
    yield

def body(order: str) -> Generator[Any, Any, None]:
    reveal_type((yield from Call(child, 3)))
    reveal_type((yield from Call(child.bind(3), workflow_id="c-1")))
    reveal_type((yield from Start(child, 3)))
    reveal_type((yield from Recv("t")))
    reveal_type((yield from Recv("t", timeout=5)))
    reveal_type((yield from Recv(("a", "b"))))
    reveal_type((yield from Recv(("a", "b"), timeout=5)))
    reveal_type((yield from GetEvent("w", "k")))
    reveal_type((yield from GetEvent("w", "k", timeout=5)))
    token = yield from Awakeable("approval")
    reveal_type(token)
    reveal_type((yield from Await(token)))
    reveal_type((yield from Await(token, timeout=5)))
    won = yield from Race(Call(child, 1), Sleep(5))
    reveal_type(won)
    if won[0] == 0:
        reveal_type(won[1])
    reveal_type((yield from All(Now(), Random(), Uuid())))
    reveal_type((yield from All(*[Step("c", charge, order, i) for i in range(3)])))
    reveal_type((yield from Now()))
    reveal_type((yield from Random()))
    reveal_type((yield from Uuid()))
    reveal_type((yield from Step("k", functools.partial(keyword, amount=3), order)))
    wrong = yield from Step("charge", charge, order, "three")
    missing = yield from Step("charge", charge)
    bad_option = yield from Step("charge", charge, order, 3, retry=3)
    bad_child = yield from Call(child.bind("three"))
"""


def test_mypy_types_yield_from_every_command_and_a_wrong_step_is_one_error(
    tmp_path: Path,
) -> None:
    from mypy import api

    source = tmp_path / "user_commands.py"
    source.write_text(textwrap.dedent(COMMANDS_SNIPPET))
    out, err, _status = api.run(
        ["--strict", "--no-error-summary", "--cache-dir", str(tmp_path / ".mypy"), str(source)]
    )
    lines = [line.split(":", 2)[1:] for line in out.splitlines() if "user_commands.py" in line]
    revealed = [text.split('"')[1] for _n, text in lines if "Revealed type" in text]
    assert revealed == [
        "str",
        "str",
        "str",
        "Any",
        "Any | None",
        "tuple[str, Any, fallback=replaykit.commands.messages.Received]",
        "tuple[str, Any, fallback=replaykit.commands.messages.Received] | None",
        "Any",
        "Any | None",
        "str",
        "Any",
        "Any | None",
        "tuple[Literal[0], str] | tuple[Literal[1], None]",
        "str",
        "list[datetime.datetime | float | uuid.UUID]",
        "list[float]",
        "datetime.datetime",
        "float",
        "uuid.UUID",
        "int",
    ], out + err
    snippet_lines = textwrap.dedent(COMMANDS_SNIPPET).splitlines()
    by_line: dict[int, list[str]] = {}
    for number, text in lines:
        by_line.setdefault(int(number), []).append(text)

    def at(name: str) -> list[str]:
        line = next(i for i, s in enumerate(snippet_lines, 1) if f"{name} =" in s)
        return by_line.get(line, [])

    # One error line each, naming what does not fit; no list of overload variants.
    assert at("wrong") == [
        ' error: Argument 2 to "Step" has incompatible type "Callable[[str, int], float]"; '
        'expected "Callable[[str, str], float]"  [arg-type]'
    ], out
    assert len(at("missing")) == 1 and " error: " in at("missing")[0], out
    assert at("bad_option") == [
        ' error: Argument "retry" to "Step" has incompatible type "int"; '
        'expected "Retry | None"  [arg-type]'
    ], out
    assert len(at("bad_child")) == 1 and '"bind" of "Workflow"' in at("bad_child")[0], out
    assert "overload" not in out, out
