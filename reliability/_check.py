"""The invariants every scenario checks, from the store and the ledger.

- every planned run exists once and ended `SUCCESS` (nothing lost, nothing stuck);
- its log holds each position once, complete, with the kind and name the code yields;
- every recorded step outcome came from exactly one execution in the ledger, and
  every other execution of that step was in flight at an incident (a `kill -9`
  of its process, a database crash): the at-least-once window and nothing more;
- messages between runs and from outside arrived once each, in order, and no
  inbox holds a leftover (a duplicate).

A step execution is *in flight at an incident* when it started before the
incident, in a process the incident hit, and that process had not started a
later position of the same run by then (the next position starts only after
the record commits), and the step ran again after the incident.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reliability._apps import layout_of, received_of, tokens_of
from reliability._harness import Verdict

__all__ = ["Incident", "check_runs", "executions", "topics_of"]

LOST = "no run lost or duplicated"
TERMINAL = "every run ends SUCCESS (none left PENDING, ENQUEUED or PARKED)"
POSITIONS = "every position recorded exactly once, with the command the code yields"
RECORDED = "every recorded step outcome came from exactly one execution"
WINDOW = "a step re-ran only when it was in flight at a kill or a crash"
PHANTOM = "no execution of a step the log does not have"
MESSAGES = "no message lost or duplicated (results, inboxes empty)"


@dataclass(frozen=True)
class Incident:
    """Something that may repeat the steps in flight: a kill, a database crash, a cut."""

    at: float  # time.time() by which it had surely happened
    what: str
    pids: frozenset[int] | None = None  # the processes it hit; None: every process


def executions(lines: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line for line in lines if line.get("ev") == "start"]


def topics_of(name: str) -> tuple[str, ...]:
    return {"rel-ponger": ("ping",), "rel-pinger": ("pong",)}.get(name, ())


def _in_flight(
    run: dict[str, Any],
    key_runs: list[dict[str, Any]],
    by_pid_wf: dict[tuple[int, str], list[dict[str, Any]]],
    incident: Incident,
) -> bool:
    if incident.pids is not None and run["pid"] not in incident.pids:
        return False
    if run["t"] > incident.at:
        return False
    later = [
        other
        for other in by_pid_wf[(run["pid"], run["wf"])]
        if other["pos"] > run["pos"] and run["t"] < other["t"] <= incident.at
    ]
    if later:
        return False
    return any(other["t"] > incident.at for other in key_runs if other is not run)


def check_runs(
    verdict: Verdict,
    store: Any,
    runs: Sequence[dict[str, Any]],
    ledger_lines: Sequence[dict[str, Any]],
    incidents: Sequence[Incident] = (),
    *,
    extra_topics: dict[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """Check the planned `runs` ({'wf', 'id', 'args', 'expect'?}) against store and ledger.

    Returns the finished runs' results by id. Figures go into `verdict`.
    """
    from replaykit import Status
    from replaykit.log import Value

    starts = executions(ledger_lines)
    by_key: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    by_pid_wf: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    for run in starts:
        by_key[(run["wf"], run["key"])].append(run)
        by_pid_wf[(run["pid"], run["wf"])].append(run)
    planned = {run["id"] for run in runs}
    results: dict[str, Any] = {}
    positions = reran = 0
    statuses: dict[str, int] = defaultdict(int)
    reran_by: dict[str, int] = defaultdict(int)
    for run in runs:
        wid, name = run["id"], run["wf"]
        row = store.get_workflow(wid)
        if not verdict.check(row is not None, LOST, f"run {wid!r} is missing from the store"):
            continue
        statuses[row.status.value] += 1
        verdict.check(
            row.status is Status.SUCCESS,
            TERMINAL,
            f"run {wid!r} ({name}) is {row.status.value}"
            + (f": {row.error[:300]}" if row.error else ""),
        )
        layout = layout_of(name, run["args"])
        records = store.load_log(wid)
        positions += len(records)
        if row.status is Status.SUCCESS:
            shape = [(r.position, r.kind, r.name, r.outcome is not None) for r in records]
            want = [(pos, kind, rname, True) for pos, (kind, rname, _keys) in enumerate(layout)]
            verdict.check(
                shape == want,
                POSITIONS,
                f"run {wid!r}: log {shape} but the code yields {want}",
            )
        if row.status is not Status.SUCCESS or not isinstance(row.result, Value):
            continue
        result = row.result.data
        results[wid] = result
        if "expect" in run:
            got = received_of(name, result)
            verdict.check(
                got == run["expect"],
                MESSAGES,
                f"run {wid!r} ({name}) received {got}, expected {run['expect']}",
            )
        topics = list(topics_of(name)) + list((extra_topics or {}).get(wid, ()))
        for topic in topics:
            left = store.peek_message(wid, topic)
            verdict.check(
                left is None,
                MESSAGES,
                f"run {wid!r} finished with a message left in its {topic!r} inbox: "
                f"{None if left is None else left.payload}",
            )
        tokens = tokens_of(name, result)
        keys = {key for _kind, _name, step_keys in layout for key in step_keys}
        for key in sorted(keys):
            key_runs = by_key.get((wid, key), [])
            recorded = tokens.get(key)
            matched = [r for r in key_runs if r["token"] == recorded]
            verdict.check(
                len(matched) == 1,
                RECORDED,
                f"run {wid!r} step {key!r}: recorded token {recorded} matches {len(matched)} "
                f"of its {len(key_runs)} executions",
            )
            for extra in key_runs:
                if extra["token"] == recorded:
                    continue
                why = [i for i in incidents if _in_flight(extra, key_runs, by_pid_wf, i)]
                if verdict.check(
                    bool(why),
                    WINDOW,
                    f"run {wid!r} step {key!r} (position {extra['pos']}) ran in pid "
                    f"{extra['pid']} at {extra['t']:.3f} and again; no kill or crash had it in "
                    f"flight (executions: "
                    + ", ".join(f"pid {r['pid']} at {r['t']:.3f}" for r in key_runs)
                    + ")",
                ):
                    reran += 1
                    reran_by[why[0].what.split(" ")[0]] += 1
        for (wf, key), key_runs in by_key.items():
            if wf == wid and key not in keys:
                verdict.check(False, PHANTOM, f"run {wid!r} executed step {key!r} {len(key_runs)}x")
    strangers = {wf for wf, _key in by_key} - planned
    verdict.check(
        not strangers, PHANTOM, f"executions for runs nobody planned: {sorted(strangers)[:5]}"
    )
    verdict.figure("runs", len(runs))
    verdict.figure("statuses", dict(statuses))
    verdict.figure("positions recorded", positions)
    verdict.figure("step executions", len(starts))
    verdict.figure("re-executions in flight at an incident", reran)
    if reran_by:
        verdict.figure("re-executions by incident", dict(reran_by))
    return results
