"""Scenario 3: lost acknowledgements, through a proxy that cuts connections.

The engine talks to PostgreSQL through `reliability._proxy.CuttingProxy`, which
closes the connection right after the server committed a write and before the
client hears so (the `ReadyForQuery` that follows it is never forwarded). The
engine sees a dropped connection and retries; the server already holds what it
wrote. Phases, each on runs of its own:

- `start`: every `engine.start` loses its acknowledgement (ids given, and not);
  exactly one run per start, and each is dispatched and finishes;
- `record`: step records lose theirs; the retry adopts the committed record;
- `finish`: the statements finishing runs lose theirs;
- `keyed-send`: `engine.send(..., idempotency_key=...)` loses its acknowledgement;
  the message arrives once;
- `unkeyed-send`: the same without a key: the message must arrive once too (a
  retried unkeyed send is not idempotent, so the engine must not retry it blindly);
- `random`: a load of scripts, ping-pong pairs and keyed sends while the proxy cuts
  after committed writes at random, and sometimes in the middle of a reply.

    python -m reliability.lost_ack [--smoke] [--seed N] [--phase start,record,...]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
import urllib.parse
from collections.abc import Sequence
from typing import Any

from reliability._check import MESSAGES, Incident, check_runs
from reliability._harness import (
    APP_VERSION,
    LEDGER_ENV,
    PG_URL,
    Ledger,
    Scenario,
    Verdict,
    drop_schema,
    fresh_schema,
    schema_url,
    wait_until,
)
from reliability._plan import mix, random_script
from reliability._proxy import CuttingProxy

__all__ = ["PHASES", "main"]

PHASES = ("start", "record", "finish", "keyed-send", "unkeyed-send", "random")
START = r"INSERT INTO \S+\.workflows"
RECORD = r"INSERT INTO \S+\.records"
FINISH = r"UPDATE \S+\.workflows w SET status"
SEND = r"WITH target AS .*INSERT INTO \S+\.messages"


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--phase", default=",".join(PHASES), help=f"of {', '.join(PHASES)}")


def main(argv: list[str] | None = None) -> int:
    sc = Scenario("lost_ack", __doc__ or "", add_arguments=_arguments, argv=argv)
    phases = [p for p in sc.args.phase.split(",") if p]
    unknown = set(phases) - set(PHASES)
    if unknown:
        print(f"unknown phase(s) {sorted(unknown)}; the phases are {', '.join(PHASES)}")
        return 2
    first = sc.report.part("postgres through the cutting proxy")
    if not sc.need_postgres(first):
        return sc.finish()
    sc.report.parts.clear()
    # The pool says so each time it throws away a connection the proxy cut.
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    ledger = Ledger(sc.workdir / "ledger.jsonl")
    os.environ[LEDGER_ENV] = str(ledger.path)  # the step bodies run in this process
    import reliability._apps  # noqa: F401 - registers the workflows
    from replaykit.stores.postgres import PostgresStore

    schema = fresh_schema("lost_ack")
    direct = PostgresStore(PG_URL, schema=schema)  # creates the schema, never cut
    parts = urllib.parse.urlsplit(PG_URL)
    upstream = (parts.hostname or "127.0.0.1", parts.port or 5432)
    try:
        for phase in phases:
            verdict = sc.report.part(phase)
            with CuttingProxy(upstream, seed=sc.rng.randrange(1 << 30)) as proxy:
                url = _through(proxy, schema)
                PHASE_RUNS[phase](sc, verdict, proxy, url, direct, ledger)
                verdict.figure("connections through the proxy", proxy.connections)
    finally:
        direct.close()
        drop_schema(schema)
    return sc.finish()


def _through(proxy: CuttingProxy, schema: str) -> str:
    parts = urllib.parse.urlsplit(PG_URL)
    user = f"{parts.username}@" if parts.username else ""
    netloc = f"{user}127.0.0.1:{proxy.port}"
    base = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
    return schema_url(schema, base) + "&sslmode=disable&gssencmode=disable"


def _engine(url: str, poll_interval: float = 0.2) -> Any:
    from replaykit import Engine

    return Engine(
        url,
        executor_id="lost-ack",
        app_version=APP_VERSION,
        poll_interval=poll_interval,
        queues=[],
    )


def _incidents(proxy: CuttingProxy) -> list[Incident]:
    return [Incident(at, f"cut ({why}) after {sql[:60]}") for at, why, sql in proxy.cuts]


def _wait_finished(store: Any, ids: Sequence[str], timeout: float) -> list[str]:
    """The ids still unfinished after `timeout` (polled on a connection nobody cuts)."""

    def unfinished() -> list[str]:
        rows = [store.get_workflow(wid) for wid in ids]
        return [wid for wid, row in zip(ids, rows, strict=True) if not _done(row)]

    left = unfinished()
    deadline = time.monotonic() + timeout
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = unfinished()
    return left


def _done(row: Any) -> bool:
    from replaykit import Status

    return row is not None and (row.status.is_terminal or row.status is Status.PARKED)


def _lines_of(ledger: Ledger, prefix: str) -> list[dict[str, Any]]:
    return [line for line in ledger.read() if str(line.get("wf", "")).startswith(prefix)]


def _cuts_fired(verdict: Verdict, proxy: CuttingProxy, wanted: int) -> None:
    verdict.figure("acknowledgements cut", len(proxy.cuts))
    verdict.check(
        proxy.armed_left() == 0,
        "the proxy cut every acknowledgement it was armed for",
        f"{proxy.armed_left()} of {wanted} armed cuts never fired: the phase proves less",
    )


# -- phases --------------------------------------------------------------------------------


def phase_start(
    sc: Scenario, verdict: Verdict, proxy: CuttingProxy, url: str, direct: Any, ledger: Ledger
) -> None:
    from replaykit.registry import lookup

    named, anonymous = sc.size(4, 20), sc.size(3, 10)
    runs: list[dict[str, Any]] = []
    began: dict[str, float] = {}
    # Its sweep for untracked PENDING runs comes every ten poll intervals (10 s): a
    # run that only the sweep dispatches takes that long.
    engine = _engine(url, poll_interval=1.0)
    try:
        for i in range(named):
            items = random_script(sc.rng, 3, (0.005, 0.02), 0.0)
            run: dict[str, Any] = {"wf": "rel-script", "id": f"start-{i}", "args": [items]}
            proxy.arm(START, 1)
            engine.start(lookup("rel-script"), items, workflow_id=run["id"])
            began[run["id"]] = time.monotonic()
            runs.append(run)
        for i in range(anonymous):
            proxy.arm(START, 1)
            handle = engine.start(lookup("rel-once"), f"anon-{i}", 0.0)
            began[handle.workflow_id] = time.monotonic()
            runs.append({"wf": "rel-once", "id": handle.workflow_id, "args": [f"anon-{i}", 0.0]})
        _cuts_fired(verdict, proxy, named + anonymous)
        latency = _latencies(direct, began, timeout=sc.size(30, 60))
    finally:
        engine.close()
    verdict.figure("slowest start-to-finish after a lost acknowledgement (s)", max(latency))
    verdict.figure("fastest (s)", min(latency))
    slow = {wid: round(s, 1) for wid, s in zip(began, latency, strict=True) if s >= 5.0}
    verdict.check(
        not slow,
        "a start whose acknowledgement was lost is dispatched at once (not by a later sweep)",
        f"runs that took 5s or more from start to finish: {slow} (a three-step run takes well "
        "under a second; the engine's sweep for untracked runs comes every 10s)",
    )
    from replaykit.stores.base import WorkflowFilter

    once_runs = direct.list_workflows(WorkflowFilter(name="rel-once"))
    labels = [row.inputs["args"][0] for row in once_runs]
    for i in range(anonymous):
        verdict.check(
            labels.count(f"anon-{i}") == 1,
            "no run lost or duplicated",
            f"engine.start without an id, acknowledgement lost: {labels.count(f'anon-{i}')} runs "
            f"labelled anon-{i}",
        )
    check_runs(verdict, direct, runs, _lines_of(ledger, ""), _incidents(proxy))


def _latencies(store: Any, began: dict[str, float], timeout: float) -> list[float]:
    """Seconds from each run's creation to its finish, as the store stamped them."""
    left = _wait_finished(store, list(began), timeout)
    out = []
    for wid in began:
        row = store.get_workflow(wid)
        if wid in left or row.created_at is None or row.updated_at is None:
            out.append(float("inf"))
        else:
            out.append((row.updated_at - row.created_at).total_seconds())
    return out or [0.0]


def phase_record(
    sc: Scenario, verdict: Verdict, proxy: CuttingProxy, url: str, direct: Any, ledger: Ledger
) -> None:
    from replaykit.registry import lookup

    cuts = sc.size(8, 40)
    runs: list[dict[str, Any]] = [
        {
            "wf": "rel-script",
            "id": f"record-{i}",
            "args": [random_script(sc.rng, sc.size(8, 20), (0.005, 0.03), 0.05)],
        }
        for i in range(sc.size(3, 10))
    ]
    engine = _engine(url)
    try:
        proxy.arm(RECORD, cuts)
        for run in runs:
            engine.start(lookup("rel-script"), *run["args"], workflow_id=run["id"])
        left = _wait_finished(direct, [r["id"] for r in runs], sc.size(40, 120))
        verdict.check(not left, "every run finishes", f"unfinished: {left}")
        proxy.disarm()
    finally:
        engine.close()
    verdict.figure("acknowledgements cut", len(proxy.cuts))
    check_runs(verdict, direct, runs, _lines_of(ledger, "record-"), _incidents(proxy))


def phase_finish(
    sc: Scenario, verdict: Verdict, proxy: CuttingProxy, url: str, direct: Any, ledger: Ledger
) -> None:
    from replaykit.registry import lookup

    runs: list[dict[str, Any]] = [
        {"wf": "rel-script", "id": f"finish-{i}", "args": [[["step", "k0", 0.01]]]}
        for i in range(sc.size(4, 20))
    ]
    engine = _engine(url)
    try:
        for run in runs:
            proxy.arm(FINISH, 1)
            engine.start(lookup("rel-script"), *run["args"], workflow_id=run["id"])
            wait_until(lambda r=run: _done(direct.get_workflow(r["id"])), 20)
        left = _wait_finished(direct, [r["id"] for r in runs], 20)
        verdict.check(not left, "every run finishes", f"unfinished: {left}")
        _cuts_fired(verdict, proxy, len(runs))
    finally:
        engine.close()
    check_runs(verdict, direct, runs, _lines_of(ledger, "finish-"), _incidents(proxy))


def _phase_send(
    sc: Scenario,
    verdict: Verdict,
    proxy: CuttingProxy,
    url: str,
    direct: Any,
    ledger: Ledger,
    *,
    keyed: bool,
) -> None:
    from replaykit.registry import lookup

    count = sc.size(3, 20)
    prefix = "keyed" if keyed else "unkeyed"
    wid = f"{prefix}-inbox"
    run = {
        "wf": "rel-inbox",
        "id": wid,
        "args": [count, "m"],
        "expect": [{"n": n} for n in range(count)],
    }
    answers: list[bool] = []
    engine = _engine(url)
    try:
        engine.start(lookup("rel-inbox"), count, "m", workflow_id=wid)
        for n in range(count):
            proxy.arm(SEND, 1)
            key = f"{wid}:{n}" if keyed else None
            answers.append(engine.send(wid, {"n": n}, topic="m", idempotency_key=key))
        _cuts_fired(verdict, proxy, count)
        left = _wait_finished(direct, [wid], sc.size(10, 20))
    finally:
        engine.close()
    left_over = direct.peek_message(wid, "m")
    inbox = [] if left_over is None else [left_over.payload]
    verdict.figure("messages sent, each acknowledgement lost", count)
    verdict.figure("engine.send answers", {str(a): answers.count(a) for a in set(answers)})
    if not keyed:
        verdict.check(
            not left and not inbox,
            MESSAGES,
            f"{count} unkeyed engine.send calls whose acknowledgement was lost: the inbox run "
            f"{'finished' if not left else 'is still waiting'}, and a message is left over in "
            f"its inbox after {count} were received: {inbox[:1]} (the retry sent it again)",
        )
    else:
        verdict.check(
            False not in answers,
            "a keyed send whose acknowledgement was lost reports its delivery",
            f"engine.send answered False {answers.count(False)} time(s) for a keyed message it "
            "had delivered (its first attempt used the key; the retry found it used)",
        )
    check_runs(verdict, direct, [run], _lines_of(ledger, wid), extra_topics={wid: ["m"]})


def phase_keyed_send(*args: Any) -> None:
    _phase_send(*args, keyed=True)


def phase_unkeyed_send(*args: Any) -> None:
    _phase_send(*args, keyed=False)


def phase_random(
    sc: Scenario, verdict: Verdict, proxy: CuttingProxy, url: str, direct: Any, ledger: Ledger
) -> None:
    from replaykit.registry import lookup

    plan = mix(
        sc.rng,
        "random-",
        scripts=sc.size(4, 16),
        length=sc.size(10, 40),
        pairs=sc.size(2, 4),
        rounds=sc.size(4, 15),
        inboxes=sc.size(1, 2),
        messages=sc.size(6, 20),
        step_seconds=(0.005, 0.05),
        sleep_seconds=0.2,
    )
    proxy.cut_probability = sc.size(0.05, 0.03)
    proxy.random_cut = 0.002
    engine = _engine(url)
    try:
        for run in plan["start"]:
            # The engine's store retries the create through a cut connection.
            engine.start(lookup(run["wf"]), *run["args"], workflow_id=run["id"])
        for message in plan["send"]:
            engine.send(
                message["to"], message["message"], topic="ext", idempotency_key=message["key"]
            )
        left = _wait_finished(direct, [r["id"] for r in plan["start"]], sc.size(60, 240))
        verdict.check(not left, "every run finishes", f"unfinished: {left}")
        proxy.cut_probability = proxy.random_cut = 0.0
    finally:
        engine.close()
    verdict.figure("connections cut", len(proxy.cuts))
    verdict.figure(
        "cuts by kind",
        {why: sum(1 for c in proxy.cuts if c[1] == why) for why in ("random", "mid-reply")},
    )
    inboxes: dict[str, Sequence[str]] = {
        r["id"]: ["ext"] for r in plan["start"] if r["wf"] == "rel-inbox"
    }
    check_runs(
        verdict,
        direct,
        plan["start"],
        _lines_of(ledger, "random-"),
        _incidents(proxy),
        extra_topics=inboxes,
    )


PHASE_RUNS = {
    "start": phase_start,
    "record": phase_record,
    "finish": phase_finish,
    "keyed-send": phase_keyed_send,
    "unkeyed-send": phase_unkeyed_send,
    "random": phase_random,
}


if __name__ == "__main__":
    sys.exit(main())
