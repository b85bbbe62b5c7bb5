"""Scenario 8: bad input and malicious rows, through the engine and the CLI.

Parts, on SQLite and PostgreSQL:

- `stored-code`: rows written straight into the store whose recorded errors name
  `os.system`, `subprocess.Popen`, `builtins.eval`, `importlib.import_module`,
  `os._exit`, `shutil.rmtree` or a module nobody imported (`reliability._canary`),
  with arguments that would leave marker files; and inputs shaped like
  pickle/jsonpickle objects naming callables. The engine reads the finished runs'
  results, recovers pending runs that replay such failures, and the CLI lists,
  shows, exports and replays them. Nothing named may run or be imported.
- `names`: NUL bytes, lone surrogates and over-long ids, topics and keys through
  `engine.start`, `engine.send` and `engine.get_event` are refused at once with a
  `ValueError`; NUL inside values round-trips; the engine goes on working.
- `damaged`: runs whose stored inputs or result are truncated JSON (SQLite) or
  JSON of the wrong shape (PostgreSQL), next to good runs: the good runs finish,
  the damaged ones are said to be damaged (never PENDING with nothing said), the
  CLI copes; `damaged-record`: the same for a run whose log holds such a record.
- `escapes`: ids, names, errors and tracebacks holding ESC, OSC, BEL, C1 CSI and
  bidi overrides: the CLI's piped output holds no raw ESC byte (nor the others),
  and on a terminal only its own colour sequences.

    python -m reliability.bad_input [--smoke] [--part stored-code,names,...]
"""

from __future__ import annotations

import argparse
import logging
import os
import pty
import re
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from reliability._check import check_runs
from reliability._harness import (
    APP_VERSION,
    LEDGER_ENV,
    ROOT,
    Ledger,
    Scenario,
    Verdict,
    postgres_schema,
    wait_until,
)

__all__ = ["DAMAGE_SAID", "PARTS", "main"]

PARTS = ("stored-code", "names", "damaged", "damaged-record", "escapes")
CANARY_ENV = "RELIABILITY_CANARY_DIR"
NOTHING_RAN = "nothing that stored data names ran or got imported"
DAMAGE_SAID = (
    "the store says a damaged run is damaged (marked, or PARKED/ERROR with the error named); "
    "it is never left PENDING with nothing said"
)
NO_TRACEBACK = "the CLI answers bad data with an exit code and a line, never a traceback"
RAW_BYTES = {
    "ESC": b"\x1b",
    "BEL": b"\x07",
    "C1 CSI": "\x9b".encode(),
    "DEL": b"\x7f",
    "bidi override": "\u202e".encode(),
}
_SGR = re.compile(rb"\x1b\[[0-9;]*m")


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--part", default=",".join(PARTS), help=", ".join(PARTS))
    parser.add_argument("--stores", default="sqlite,postgres")


def main(argv: list[str] | None = None) -> int:
    sc = Scenario("bad_input", __doc__ or "", add_arguments=_arguments, argv=argv)
    canaries = sc.workdir / "canaries"
    canaries.mkdir()
    os.environ[CANARY_ENV] = str(canaries)
    os.environ[LEDGER_ENV] = str(sc.workdir / "ledger.jsonl")
    import reliability._apps  # noqa: F401 - registers the workflows

    logging.getLogger("replaykit").addHandler(_LOGGED)
    for store in sc.args.stores.split(","):
        for part in sc.args.part.split(","):
            if part not in PARTS:
                print(f"unknown part {part!r}; the parts are {', '.join(PARTS)}")
                return 2
            verdict = sc.report.part(f"{store}: {part}")
            if store == "postgres" and not sc.need_postgres(verdict):
                continue
            work = sc.workdir / f"{store}-{part}"
            work.mkdir()
            (work / "victim").mkdir()  # what a stored shutil.rmtree would remove
            ledger = Ledger(work / "ledger.jsonl")
            os.environ[LEDGER_ENV] = str(ledger.path)  # the step bodies run in this process
            with ExitStack() as stack:
                if store == "postgres":
                    url = stack.enter_context(postgres_schema("bad"))
                else:
                    url = f"sqlite:///{work / 'bad.db'}"
                RUN_PART[part](sc, verdict, url, work, ledger)
            _nothing_ran(verdict, canaries, work)
    return sc.finish()


class _Logged(logging.Handler):
    """What replaykit logged at WARNING or above, to tell 'said' from 'silent'."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


_LOGGED = _Logged()


def _engine(url: str, executor_id: str) -> Any:
    from replaykit import Engine

    return Engine(url, executor_id=executor_id, app_version=APP_VERSION, poll_interval=0.2)


def _now() -> Any:
    from replaykit.runtime.clock import SystemClock

    return SystemClock().now()


def _row(
    wid: str,
    name: str,
    status: Any,
    *,
    inputs: Any = None,
    result: Any = None,
    executor_id: str = "bad",
) -> Any:
    from replaykit.stores.base import WorkflowRow

    return WorkflowRow(
        workflow_id=wid,
        name=name,
        status=status,
        inputs=inputs if inputs is not None else {"args": [], "kwargs": {}},
        result=result,
        executor_id=executor_id,
        app_version=APP_VERSION,
        created_at=_now(),
    )


def cli(url: str, *args: str, terminal: bool = False) -> tuple[int, bytes, bytes]:
    """Run `python -m replaykit ARGS --url URL`: its exit code, stdout and stderr.

    With `terminal=True` both go to a pseudo-terminal (rich output, colours on)
    and come back together as stdout.
    """
    argv = [sys.executable, "-m", "replaykit", *args, "--url", url]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    env.pop("NO_COLOR", None)
    env.pop("REPLAYKIT_DEBUG", None)
    if not terminal:
        done = subprocess.run(argv, capture_output=True, timeout=60, env=env, cwd=ROOT)
        return done.returncode, done.stdout, done.stderr
    env["TERM"] = "xterm-256color"
    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, stdout=follower, stderr=follower, env=env, cwd=ROOT)
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    return proc.wait(timeout=60), out, b""


# A traceback of the CLI's own (as opposed to one stored with a run, which it prints).
_OWN_FRAME = re.compile(rb'File "[^"]*/replaykit/[^"]*\.py", line \d+')


def _check_cli(
    verdict: Verdict, what: str, answer: tuple[int, bytes, bytes], ok_codes: tuple[int, ...]
) -> bytes:
    code, out, err = answer
    crashed = b"Traceback" in err or _OWN_FRAME.search(out + err) is not None
    verdict.check(
        code in ok_codes and not crashed,
        NO_TRACEBACK,
        f"`replaykit {what}` exited {code}: {(err or out)[-300:]!r}",
    )
    return out + err


def _thorough(sc: Scenario, url: str) -> bool:
    """Every CLI command on every store in full runs; in a smoke, the full set on SQLite."""
    return not sc.smoke or url.startswith("sqlite")


def _nothing_ran(verdict: Verdict, canaries: Path, work: Path) -> None:
    marks = sorted(p.name for p in canaries.iterdir()) + sorted(p.name for p in work.glob("ran-*"))
    verdict.check(
        not marks and "reliability._canary" not in sys.modules and (work / "victim").exists(),
        NOTHING_RAN,
        f"markers {marks}; reliability._canary imported here: "
        f"{'reliability._canary' in sys.modules}; victim folder still there: "
        f"{(work / 'victim').exists()}",
    )


# -- stored code ---------------------------------------------------------------------------


def _hostile(work: Path) -> list[tuple[str, str, list[Any]]]:
    return [
        ("os", "system", [f"touch {work}/ran-os-system"]),
        ("subprocess", "Popen", [["touch", f"{work}/ran-popen"]]),
        ("subprocess", "check_call", [["touch", f"{work}/ran-check-call"]]),
        ("builtins", "eval", [f"open({str(work / 'ran-eval')!r}, 'w')"]),
        ("builtins", "exec", [f"open({str(work / 'ran-exec')!r}, 'w')"]),
        ("builtins", "__import__", ["reliability._canary"]),
        ("importlib", "import_module", ["reliability._canary"]),
        ("reliability._canary", "CanaryError", ["boom"]),
        ("os", "_exit", [7]),
        ("shutil", "rmtree", [str(work / "victim")]),
        ("posix", "system", [f"touch {work}/ran-posix-system"]),
    ]


def part_stored_code(sc: Scenario, verdict: Verdict, url: str, work: Path, ledger: Ledger) -> None:
    from replaykit import Status, StepFailed
    from replaykit.log import Failure, Record
    from replaykit.serde import ErrorInfo
    from replaykit.stores import open_store

    hostile = _hostile(work)
    store = open_store(url)
    runs: list[dict[str, Any]] = []
    try:
        for n, (module, qualname, args) in enumerate(hostile):
            info = ErrorInfo(
                module,
                qualname,
                f"{module}.{qualname}{tuple(args)!r}",
                args,
                f"Traceback (most recent call last):\n  {module}.{qualname}\n",
            )
            store.create_workflow(
                _row(
                    f"error-{n}",
                    "rel-catch",
                    Status.ERROR,
                    result=Failure(info),
                    inputs={"args": [f"k{n}"], "kwargs": {}},
                )
            )
            store.create_workflow(
                _row(
                    f"replay-{n}",
                    "rel-catch",
                    Status.PENDING,
                    inputs={"args": [f"k{n}"], "kwargs": {}},
                ),
                records=[Record(0, "step", f"k{n}", Failure(info), call_site="evil.py:1")],
            )
            runs.append({"wf": "rel-catch", "id": f"replay-{n}", "args": [f"k{n}"]})
        objects = [
            {"py/object": "subprocess.Popen", "args": ["touch", f"{work}/ran-jsonpickle"]},
            {"__reduce__": ["os.system", [f"touch {work}/ran-reduce"]]},
            {"__class__": "builtins.eval", "__module__": "reliability._canary"},
            {"$type": "reliability._canary.CanaryError, reliability", "value": 1},
        ]
        for n, value in enumerate(objects):
            store.create_workflow(
                _row(
                    f"inputs-{n}",
                    "rel-echo",
                    Status.PENDING,
                    inputs={"args": [value], "kwargs": {}},
                )
            )
            runs.append({"wf": "rel-echo", "id": f"inputs-{n}", "args": [value], "expect": value})
    finally:
        store.close()

    engine = _engine(url, "bad")  # recovers the pending runs: replays the hostile failures
    try:
        rebuilt: dict[str, int] = {}
        for n in range(len(hostile)):
            try:
                engine.handle(f"error-{n}").result(timeout=10)
                rebuilt["(no exception!)"] = rebuilt.get("(no exception!)", 0) + 1
            except Exception as exc:
                name = type(exc).__name__
                rebuilt[name] = rebuilt.get(name, 0) + 1
                verdict.check(
                    isinstance(exc, StepFailed),
                    "a stored error naming a callable comes back as StepFailed",
                    f"error-{n} ({hostile[n][0]}.{hostile[n][1]}) came back as {name}: {exc}",
                )
        verdict.figure("finished runs with hostile errors, read back as", rebuilt)
        left = [
            r["id"]
            for r in runs
            if not wait_until(lambda r=r: engine.store.get_workflow(r["id"]).status.is_terminal, 20)
        ]
        verdict.check(not left, "every hostile run is replayed to its end", f"unfinished {left}")
        caught: dict[str, int] = {}
        for n in range(len(hostile)):
            result = engine.handle(f"replay-{n}").result(timeout=5)
            caught[result["type"]] = caught.get(result["type"], 0) + 1
        verdict.figure("replayed hostile failures, as the workflow caught them", caught)
        verdict.check(
            set(caught) == {"StepFailed"},
            "a stored error naming a callable comes back as StepFailed",
            f"caught {caught}",
        )
    finally:
        engine.close()
    store = open_store(url)
    try:
        check_runs(
            verdict,
            store,
            runs,
            [
                line
                for line in ledger.read()
                if line.get("wf", "").startswith(("replay-", "inputs-"))
            ],
        )
    finally:
        store.close()
    commands: list[tuple[str, ...]] = [("workflows", "list"), ("workflows", "list", "--json")]
    picked = (0, 3, 6, 7, 8) if not sc.smoke else (0, 7, 8) if _thorough(sc, url) else (7,)
    for n in picked:
        commands += [
            ("workflows", "show", f"error-{n}", "--traceback"),
            ("workflows", "show", f"replay-{n}", "--json"),
            ("workflows", "export", f"replay-{n}", "-o", str(work / f"replay-{n}.json")),
        ]
    for args in commands:
        _check_cli(verdict, " ".join(args), cli(url, *args), (0,))
    for n in picked:
        answer = cli(url, "replay", "reliability._apps:catch", str(work / f"replay-{n}.json"))
        _check_cli(verdict, f"replay of replay-{n}", answer, (0, 1))
    verdict.figure("CLI commands over hostile rows", len(commands) + len(picked))


# -- names ---------------------------------------------------------------------------------


def part_names(sc: Scenario, verdict: Verdict, url: str, work: Path, ledger: Ledger) -> None:
    from replaykit.registry import lookup

    once, echo = lookup("rel-once"), lookup("rel-echo")
    engine = _engine(url, "names")
    refused: dict[str, str] = {}
    try:
        attempts = {
            "start, id with NUL": lambda: engine.start(once, "x", 0.0, workflow_id="a\x00b"),
            "start, id of 100,000 characters": lambda: engine.start(
                once, "x", 0.0, workflow_id="i" * 100_000
            ),
            "start, id with a lone surrogate": lambda: engine.start(
                once, "x", 0.0, workflow_id="a\ud800b"
            ),
            "send, id with NUL": lambda: engine.send("a\x00b", 1),
            "send, topic with NUL": lambda: engine.send("good-0", 1, topic="t\x00"),
            "send, key of 10,000 characters": lambda: engine.send(
                "good-0", 1, idempotency_key="k" * 10_000
            ),
            "get_event, key with NUL": lambda: engine.get_event("good-0", "e\x00"),
        }
        engine.start(once, "good", 0.0, workflow_id="good-0").result(timeout=20)
        for what, call in attempts.items():
            began = time.monotonic()
            try:
                call()
                outcome = "accepted"
            except ValueError as exc:
                outcome = "ValueError"
                verdict.check(len(str(exc)) > 20, "a refusal says what is wrong", f"{what}: {exc}")
            except Exception as exc:
                outcome = f"{type(exc).__name__}: {str(exc)[:120]}"
            seconds = time.monotonic() - began
            refused[what] = outcome
            verdict.check(
                outcome == "ValueError" and seconds < 5,
                "a bad id, topic or key is refused at once with ValueError",
                f"{what}: {outcome} after {seconds:.1f}s",
            )
        values = ["nul\x00inside", {"k\x00": ["\x00", "\u2028", "\x1b[2J"]}, "\U0001f600" * 1000]
        for n, value in enumerate(values):
            got = engine.start(echo, value, workflow_id=f"echo-{n}").result(timeout=20)["value"]
            verdict.check(
                got == value,
                "values holding NUL and control characters round-trip",
                f"echo-{n}: sent {value!r:.60}, got {got!r:.60}",
            )
        empty = engine.start(once, "empty", 0.0, workflow_id="")
        empty.result(timeout=20)
        verdict.note(
            f"engine.start(..., workflow_id='') is not refused: it starts a run under the "
            f"random id {empty.workflow_id!r} (an empty id counts as no id)"
        )
        after = engine.start(once, "after", 0.0, workflow_id="good-1").result(timeout=20)
        values_ids = range(len(values))
        verdict.check(
            after["label"] == "after",
            "bad input affects nobody else",
            f"a run after the bad input returned {after}",
        )
        rows = engine.list_workflows()
        verdict.check(
            sorted(r.workflow_id for r in rows)
            == sorted(["good-0", "good-1", empty.workflow_id, *(f"echo-{n}" for n in values_ids)]),
            "nothing refused left a row behind",
            f"rows {[r.workflow_id[:20] for r in rows]}",
        )
    finally:
        engine.close()
    verdict.figure("bad names tried", len(refused))
    verdict.figure(
        "answers",
        {o: sum(1 for v in refused.values() if v == o) for o in sorted(set(refused.values()))},
    )


# -- damaged rows --------------------------------------------------------------------------


# id -> (workflow, column damaged, what SQLite gets, what PostgreSQL gets)
DAMAGE = {
    "dmg-inputs": ("rel-echo", "workflows.inputs", '{"args":[1,', '"a string"'),
    "dmg-inputs-2": ("rel-echo", "workflows.inputs", "not json", "[1, 2]"),
    "dmg-result": ("rel-echo", "workflows.result", '{"val', '{"nope": 1}'),
    "dmg-record": ("rel-catch", "records.outcome", '{"value":{"tok', "[1]"),
}


def part_damaged(sc: Scenario, verdict: Verdict, url: str, work: Path, ledger: Ledger) -> None:
    _damaged(sc, verdict, url, ["dmg-inputs", "dmg-inputs-2", "dmg-result"])


def part_damaged_record(
    sc: Scenario, verdict: Verdict, url: str, work: Path, ledger: Ledger
) -> None:
    _damaged(sc, verdict, url, ["dmg-record"])


def _damaged(sc: Scenario, verdict: Verdict, url: str, damaged: list[str]) -> None:
    from replaykit import Status
    from replaykit.log import Record, Value
    from replaykit.stores import open_store
    from replaykit.stores.base import WorkflowFilter

    store = open_store(url)
    good = [f"good-{n}" for n in range(4)]
    try:
        for wid in good:
            store.create_workflow(
                _row(
                    wid,
                    "rel-echo",
                    Status.PENDING,
                    inputs={"args": [wid], "kwargs": {}},
                    executor_id="dmg",
                )
            )
        for wid in damaged:
            name, column = DAMAGE[wid][0], DAMAGE[wid][1]
            finished = column == "workflows.result"
            store.create_workflow(
                _row(
                    wid,
                    name,
                    Status.SUCCESS if finished else Status.PENDING,
                    inputs={"args": ["k"], "kwargs": {}},
                    executor_id="dmg",
                    result=Value(1) if finished else None,
                ),
                records=[Record(0, "step", "k", Value({"token": "t"}))]
                if column == "records.outcome"
                else [],
            )
    finally:
        store.close()
    sqlite = url.startswith("sqlite")
    if sqlite:
        import sqlite3

        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        with conn:
            for wid in damaged:
                table, column = DAMAGE[wid][1].split(".")
                conn.execute(
                    f"UPDATE {table} SET {column} = ? WHERE workflow_id = ?", (DAMAGE[wid][2], wid)
                )
        conn.close()
        how = "truncated JSON"
    else:
        import psycopg
        from psycopg import sql

        base, _, schema = url.rpartition("?schema=")
        with psycopg.connect(base, autocommit=True) as pg:
            for wid in damaged:
                table, column = DAMAGE[wid][1].split(".")
                pg.execute(
                    sql.SQL("UPDATE {}.{} SET {} = %s::json WHERE workflow_id = %s").format(
                        sql.Identifier(schema), sql.Identifier(table), sql.Identifier(column)
                    ),
                    (DAMAGE[wid][3], wid),
                )
        how = "JSON of the wrong shape"
    how += ": " + ", ".join(f"{wid} ({DAMAGE[wid][1]})" for wid in damaged)
    verdict.figure("damage", how)
    logged_before = len(_LOGGED.lines)
    try:
        engine = _engine(url, "dmg")
    except Exception as exc:
        verdict.check(
            False,
            "bad rows affect only their run",
            f"Engine() failed to start over damaged rows: {type(exc).__name__}: {exc}",
        )
        return
    try:
        left = [
            wid
            for wid in good
            if not wait_until(lambda w=wid: _status(engine.store, w) == "SUCCESS", 20)
        ]
        verdict.check(
            not left,
            "bad rows affect only their run",
            f"good runs not finished next to damaged ones: {left}",
        )
        time.sleep(1.0)
        rows = {row.workflow_id: row for row in engine.store.list_workflows(WorkflowFilter())}
        verdict.check(
            sorted(rows) == sorted(good + damaged),
            "a listing shows damaged runs too",
            f"listed {sorted(rows)}",
        )
        said = []
        for wid in damaged:
            row = rows.get(wid)
            logged = any(wid in line for line in _LOGGED.lines[logged_before:])
            marked = row is not None and bool(getattr(row, "damaged", ""))
            status = "absent" if row is None else row.status.value
            said.append(f"{wid}: {status}, marked {marked}, logged {logged}")
            verdict.check(
                row is not None and (marked or (status in ("PARKED", "ERROR") and bool(row.error))),
                DAMAGE_SAID,
                f"{wid}: {status} with error {row.error if row else ''!r}, not marked damaged "
                f"(the engine only logged it: {logged}); every recovery tries it again",
            )
        verdict.figure("damaged runs as the engine left them", said)
    finally:
        engine.close()
    for args in (("workflows", "list"), ("workflows", "list", "--json")):
        out = _check_cli(verdict, " ".join(args), cli(url, *args), (0,))
        verdict.check(
            all(wid.encode() in out for wid in damaged),
            "a listing shows damaged runs too",
            f"`replaykit {' '.join(args)}` omits some of {damaged}",
        )
    for wid in damaged if _thorough(sc, url) else damaged[::2]:
        for args in (("workflows", "show", wid), ("workflows", "export", wid)):
            _check_cli(verdict, " ".join(args), cli(url, *args), (0, 1))
    _check_cli(verdict, "workflows show good-0", cli(url, "workflows", "show", "good-0"), (0,))


def _status(store: Any, wid: str) -> str:
    row = store.get_workflow(wid)
    return "" if row is None else row.status.value


# -- escapes -------------------------------------------------------------------------------


def part_escapes(sc: Scenario, verdict: Verdict, url: str, work: Path, ledger: Ledger) -> None:
    from replaykit import Status
    from replaykit.log import Failure, Record, Value
    from replaykit.serde import ErrorInfo
    from replaykit.stores import open_store

    red, title, clear = "\x1b[31m", "\x1b]0;pwned\x07", "\x1b[2J\x1b[H"
    ids = [
        f"esc-{red}red",
        f"osc-{title}",
        "csi-\x9b2J",
        "bidi-\u202eevil",
        f"clear-{clear}",
        f"del-\x7f-{red}",
    ]
    error = ErrorInfo(
        "app",
        f"Bad{red}",
        f"no{title}{clear}",
        [f"{red}x"],
        f'Traceback (most recent call last):\n  File "app.py"\napp.Bad: {red}x{title}\n',
    )
    store = open_store(url)
    try:
        for n, wid in enumerate(ids):
            status = Status.ERROR if n % 2 else Status.SUCCESS
            result = Failure(error) if n % 2 else Value(f"ok{clear}")
            store.create_workflow(
                _row(wid, f"flow{red}{title}", status, result=result, executor_id=f"host{title}"),
                records=[
                    Record(0, "step", f"charge{red}", Failure(error), call_site=f"app.py:3{clear}")
                ],
            )
    finally:
        store.close()
    commands: list[tuple[str, ...]] = [("workflows", "list"), ("workflows", "list", "--json")]
    for wid in ids if not sc.smoke else ids[1::2] if _thorough(sc, url) else []:
        commands += [
            ("workflows", "show", wid),
            ("workflows", "show", wid, "--traceback"),
            ("workflows", "show", wid, "--json"),
            ("workflows", "export", wid),
            ("workflows", "cancel", wid),
        ]
    raw_found: dict[str, int] = {}
    for args in commands:
        shown = " ".join(a.encode("unicode_escape").decode() for a in args)
        out = _check_cli(verdict, shown, cli(url, *args), (0, 1))
        found = [name for name, raw in RAW_BYTES.items() if raw in out]
        for name in found:
            raw_found[name] = raw_found.get(name, 0) + 1
        verdict.check(
            not found,
            "the CLI's piped output holds no raw ESC byte (nor BEL, C1, DEL, bidi)",
            f"`replaykit {shown}` printed raw {found}",
        )
    for args in (("workflows", "list"), ("workflows", "show", ids[1], "--traceback")):
        out = _check_cli(
            verdict, f"{args[0]} {args[1]} (terminal)", cli(url, *args, terminal=True), (0, 1)
        )
        stripped = _SGR.sub(b"", out)
        found = [name for name, raw in RAW_BYTES.items() if raw in stripped]
        verdict.check(
            not found,
            "on a terminal the CLI prints only its own colour sequences",
            f"`replaykit {args[0]} {args[1]}` on a pty printed raw {found}",
        )
    verdict.figure("CLI commands over rows full of escapes", len(commands) + 2)
    verdict.figure("raw bytes found", raw_found)


RUN_PART = {
    "stored-code": part_stored_code,
    "names": part_names,
    "damaged": part_damaged,
    "damaged-record": part_damaged_record,
    "escapes": part_escapes,
}


if __name__ == "__main__":
    sys.exit(main())
