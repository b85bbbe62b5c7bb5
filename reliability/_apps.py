"""The workflows the scenarios run, in the driver and in worker processes alike.

Every step body is `body`: it writes a `start` line to the ledger, sleeps its
share, writes an `end` line and returns a fresh token. A run's result collects
the tokens it was given, so the checker can tell the one execution whose
outcome was recorded from the ones that were not (`reliability._check`).

A worker imports this module by name (`replaykit worker reliability._apps`,
`python -m reliability._worker`): the operator's choice, never stored data's.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Generator, Sequence
from typing import Any

from reliability._harness import LEDGER_ENV, Ledger
from replaykit import (
    All,
    CloseStream,
    ContinueAsNew,
    Queue,
    Recv,
    Send,
    Sleep,
    Step,
    WriteStream,
    context,
    schedule,
    workflow,
)

__all__ = [
    "GRACEFUL",
    "LIMITED",
    "PARTITIONED",
    "body",
    "catch",
    "echo",
    "generations",
    "inbox",
    "layout_of",
    "once",
    "pinger",
    "ponger",
    "received_of",
    "script",
    "streamer",
    "ticked",
    "tokens_of",
]

# A queue whose concurrency the queue scenario sets for every process alike.
LIMITED = Queue("rel-limited", concurrency=int(os.environ.get("RELIABILITY_QUEUE_K", "3")))
# A partitioned queue: at most this many runs of one partition key at once (the
# partition scenario sets it for every process alike), and the queue's own limit above it.
PARTITIONED = Queue(
    "rel-partitioned",
    concurrency=int(os.environ.get("RELIABILITY_PARTITION_TOTAL", "6")),
    partition_concurrency=int(os.environ.get("RELIABILITY_PARTITION_K", "1")),
)
# A queue without limits, for the SIGTERM scenario's queued runs.
GRACEFUL = Queue("rel-graceful")

_ledgers: dict[str, Ledger] = {}


def _the_ledger() -> Ledger:
    # Looked up on every call: a scenario running steps in its own process moves
    # to a new ledger per part by changing the variable.
    path = os.environ.get(LEDGER_ENV)
    if not path:
        raise RuntimeError(
            f"{LEDGER_ENV} is not set: the reliability workflows count their step "
            "executions in a ledger file; run them from a reliability scenario"
        )
    if path not in _ledgers:
        _ledgers[path] = Ledger(path)
    return _ledgers[path]


def body(workflow_id: str, position: int, key: str, seconds: float) -> dict[str, Any]:
    """A step: one `start` and one `end` line in the ledger, and a token no one else has."""
    token = uuid.uuid4().hex
    ledger = _the_ledger()
    ledger.write(ev="start", wf=workflow_id, pos=position, key=key, token=token)
    if seconds > 0:
        time.sleep(seconds)
    ledger.write(ev="end", wf=workflow_id, pos=position, key=key, token=token)
    return {"token": token, "pid": os.getpid()}


# -- a script of steps, sleeps and Alls ----------------------------------------------------
#
# A script is JSON: ["step", key, seconds] | ["sleep", seconds] | ["all", [[key, seconds], ...]].
# Each item takes one position; `layout_of` says what the log must hold there.


@workflow(name="rel-script")
def script(items: list[Any]) -> Generator[Any, Any, dict[str, str]]:
    wid = context().workflow_id
    tokens: dict[str, str] = {}
    for pos, item in enumerate(items):
        if item[0] == "step":
            out = yield Step(item[1], body, wid, pos, item[1], item[2])
            tokens[item[1]] = out["token"]
        elif item[0] == "sleep":
            yield Sleep(item[1])
        else:
            children = [Step(key, body, wid, pos, key, seconds) for key, seconds in item[1]]
            outs = yield All(*children)
            for (key, _seconds), out in zip(item[1], outs, strict=True):
                tokens[key] = out["token"]
    return tokens


# -- messages between runs -----------------------------------------------------------------


@workflow(name="rel-ponger")
def ponger(rounds: int, peer: str) -> Generator[Any, Any, list[Any]]:
    """Answers each ping with a pong carrying its sequence number."""
    wid = context().workflow_id
    got: list[Any] = []
    for _ in range(rounds):
        message = yield Recv("ping")
        got.append(message)
        yield Send(peer, {"seq": message["seq"], "from": wid}, topic="pong")
    return got


@workflow(name="rel-pinger")
def pinger(rounds: int, peer: str, seconds: float) -> Generator[Any, Any, dict[str, Any]]:
    """Sends a ping, waits for its pong, runs a step; `rounds` times."""
    wid = context().workflow_id
    seqs: list[int] = []
    tokens: dict[str, str] = {}
    for i in range(rounds):
        yield Send(peer, {"seq": i, "from": wid}, topic="ping")
        message = yield Recv("pong")
        seqs.append(message["seq"])
        out = yield Step(f"p{i}", body, wid, 3 * i + 2, f"p{i}", seconds)
        tokens[f"p{i}"] = out["token"]
    return {"seqs": seqs, "tokens": tokens}


@workflow(name="rel-inbox")
def inbox(count: int, topic: str) -> Generator[Any, Any, list[Any]]:
    """Receives `count` messages sent from outside (`engine.send`)."""
    got: list[Any] = []
    for _ in range(count):
        got.append((yield Recv(topic)))
    return got


@workflow(name="rel-once")
def once(label: str, seconds: float) -> Generator[Any, Any, dict[str, Any]]:
    """One step; started from many processes at once by the idempotent-start scenario."""
    wid = context().workflow_id
    out = yield Step("only", body, wid, 0, "only", seconds)
    return {"label": label, "token": out["token"]}


# -- continue-as-new ------------------------------------------------------------------------


@workflow(name="rel-generations")
def generations(total: int, seconds: float, done: int = 0) -> Generator[Any, Any, dict[str, Any]]:
    """One step a generation, `total` generations: step `g<n>` in generation n."""
    wid = context().workflow_id
    out = yield Step(f"g{done}", body, wid, 0, f"g{done}", seconds)
    if done + 1 < total:
        yield ContinueAsNew(total, seconds, done + 1)
    return {"generations": done + 1, "token": out["token"]}


# -- streams --------------------------------------------------------------------------------


@workflow(name="rel-streamer")
def streamer(count: int, seconds: float) -> Generator[Any, Any, dict[str, Any]]:
    """Writes 0..count-1 to its stream "out", a step before each, then closes it."""
    wid = context().workflow_id
    tokens: dict[str, str] = {}
    for n in range(count):
        out = yield Step(f"s{n}", body, wid, 2 * n, f"s{n}", seconds)
        tokens[f"s{n}"] = out["token"]
        yield WriteStream("out", {"n": n, "token": out["token"]})
    yield CloseStream("out")
    return tokens


# -- a schedule, for the schedule scenario only ---------------------------------------------

#: Set in the schedule scenario's workers: then every second starts a `rel-ticked` run.
SCHEDULE_ENV = "RELIABILITY_SCHEDULE"


@workflow(name="rel-ticked")
def ticked(tick: Any) -> Generator[Any, Any, dict[str, Any]]:
    """One step a tick."""
    wid = context().workflow_id
    out = yield Step("tick", body, wid, 0, "tick", 0.05)
    return {"token": out["token"]}


if os.environ.get(SCHEDULE_ENV):
    # Every second, and the ticks missed while no worker ran started when one does.
    schedule("* * * * * *", name="rel-every-second", backfill=True)(ticked)


# -- for the bad-input scenario -----------------------------------------------------------


@workflow(name="rel-catch")
def catch(key: str) -> Generator[Any, Any, dict[str, Any]]:
    """One step, whose recorded failure (crafted by the scenario) it catches and describes."""
    wid = context().workflow_id
    try:
        yield Step(key, body, wid, 0, key, 0.0)
    except Exception as exc:
        return {"type": type(exc).__name__, "text": str(exc)[:300]}
    return {"type": None, "text": ""}


@workflow(name="rel-echo")
def echo(value: Any) -> Generator[Any, Any, dict[str, Any]]:
    """Returns its argument, after one step: stored inputs are data, whatever they name."""
    wid = context().workflow_id
    out = yield Step("only", body, wid, 0, "only", 0.0)
    return {"value": value, "token": out["token"]}


# -- what the log of each run must hold ----------------------------------------------------


def layout_of(name: str, args: Sequence[Any]) -> list[tuple[str, str, tuple[str, ...]]]:
    """(kind, name, step keys) per position of a finished run of workflow `name`."""
    if name == "rel-script":
        layout: list[tuple[str, str, tuple[str, ...]]] = []
        for item in args[0]:
            if item[0] == "step":
                layout.append(("step", item[1], (item[1],)))
            elif item[0] == "sleep":
                layout.append(("sleep", "sleep", ()))
            else:
                keys = tuple(key for key, _seconds in item[1])
                layout.append(("all", "|".join(f"step:{key}" for key in keys), keys))
        return layout
    if name == "rel-ponger":
        return [
            entry for _ in range(args[0]) for entry in (("recv", "ping", ()), ("send", "pong", ()))
        ]
    if name == "rel-pinger":
        return [
            entry
            for i in range(args[0])
            for entry in (("send", "ping", ()), ("recv", "pong", ()), ("step", f"p{i}", (f"p{i}",)))
        ]
    if name == "rel-inbox":
        return [("recv", args[1], ())] * args[0]
    if name in ("rel-once", "rel-echo"):
        return [("step", "only", ("only",))]
    if name == "rel-catch":  # its one step's failure is crafted: replayed, never run
        return [("step", args[0], ())]
    raise ValueError(f"no layout for workflow {name!r}")


def tokens_of(name: str, result: Any) -> dict[str, str]:
    """The token each step key of a finished run was given, from its result."""
    if name == "rel-script":
        return dict(result)
    if name == "rel-pinger":
        return dict(result["tokens"])
    if name in ("rel-once", "rel-echo"):
        return {"only": result["token"]}
    return {}


def received_of(name: str, result: Any) -> Any:
    """What a finished run says it received, to compare with a plan's `expect`."""
    if name == "rel-pinger":
        return result["seqs"]
    if name == "rel-echo":
        return result["value"]
    return result
