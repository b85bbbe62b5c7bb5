"""`check_store`'s checks that values come back as they went in: datetimes, outcomes,
inputs and results, unicode and large payloads, error text holding NUL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from replaykit.log import ErrorInfo, Failure, Record, Status, Value
from replaykit.stores.base import EventWrite, OutgoingMessage, Store, WorkflowFilter
from replaykit.testing.conformance._support import (
    _T0,
    _aware_utc,
    _equal,
    _expect,
    _ids,
    _log_of,
    _present,
    _run,
)

__all__ = [
    "check_datetimes_round_trip",
    "check_error_text_with_nul_is_kept",
    "check_inputs_and_results_round_trip",
    "check_outcomes_round_trip",
    "check_unicode_and_large_payloads",
]


def check_datetimes_round_trip(store: Store) -> None:
    instants = [
        _T0,
        datetime(1970, 1, 1, tzinfo=UTC),
        datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2024, 3, 31, 2, 30, 0, 1, tzinfo=timezone(timedelta(hours=5, minutes=30))),
    ]
    store.create_workflow(_run("dt-1", created_at=instants[0]))
    records = [
        Record(i, "sleep", f"s{i}", Value(None), started_at=at, completed_at=at, wake_at=at)
        for i, at in enumerate(instants)
    ]
    for record in records:
        store.record("dt-1", record, wake_at=record.wake_at)
    loaded = _log_of(store, "dt-1")
    _equal("records with datetimes from year 1 to 9999", records, loaded)
    for record in loaded:
        for field in ("started_at", "completed_at", "wake_at"):
            value = getattr(record, field)
            _expect(
                value is not None and value.tzinfo is not None,
                f"{field} of record {record.position} is timezone-aware",
                "aware",
                value,
            )
            if instants[record.position].tzinfo is UTC:
                _aware_utc(f"{field} of record {record.position}", value)
    row = store.get_workflow("dt-1")
    _equal("run wake_at set from an offset datetime", instants[-1], row.wake_at if row else None)


def check_outcomes_round_trip(store: Store) -> None:
    values = [
        None,
        True,
        False,
        0,
        -1,
        2**53 + 1,
        2**64,
        -(2**70),
        0.1,
        -2.5e-300,
        1e300,
        1.0,
        "",
        "text",
        [],
        {},
        [1, [2, [3, []]]],
        {"nested": {"list": [1, "a", None, {"deep": [True, 0.5]}]}, "b": {}, "a": []},
        {"z": 1, "a": 2, "m": 3},
    ]
    store.create_workflow(_run("o-1"))
    records: list[Record] = [Record(i, "step", "v", Value(v)) for i, v in enumerate(values)]
    records.append(
        Record(
            len(records),
            "step",
            "boom",
            Failure(
                ErrorInfo(
                    module="myapp.errors",
                    qualname="Outer.PaymentDeclined",
                    message="card 4242 declined",
                    args=["card 4242 declined", 402, {"retry": False, "codes": [1, 2]}, None],
                    traceback=(
                        "Traceback (most recent call last):\n"
                        '  File "x.py", line 1\nPaymentDeclined\n'
                    ),
                )
            ),
        )
    )
    records.append(
        Record(len(records), "step", "bare", Failure(ErrorInfo("builtins", "RuntimeError", "")))
    )
    for record in records:
        store.record("o-1", record)
    loaded = _log_of(store, "o-1")
    _equal("outcomes read back", records, loaded)
    for record, back in zip(records, loaded, strict=False):
        if isinstance(record.outcome, Value) and isinstance(back.outcome, Value):
            _equal(
                f"type of the value at position {record.position}",
                type(record.outcome.data),
                type(back.outcome.data),
            )
            if isinstance(record.outcome.data, dict) and isinstance(back.outcome.data, dict):
                _equal(
                    f"key order of the dict at position {record.position}",
                    list(record.outcome.data),
                    list(back.outcome.data),
                )


def check_inputs_and_results_round_trip(store: Store) -> None:
    inputs = {"args": [1, "a", [None]], "kwargs": {"amount": 10.25, "tags": ["x"]}}
    store.create_workflow(_run("o-2", inputs=inputs))
    fetched = store.get_workflow("o-2")
    _equal("inputs read back", inputs, fetched.inputs if fetched else None)
    store.create_workflow(_run("o-2-none"))
    fetched = store.get_workflow("o-2-none")
    _equal("inputs of None read back", None, fetched.inputs if fetched else "missing")
    result = Value({"ok": [1, 2]})
    store.finish_workflow("o-2", Status.SUCCESS, result)
    fetched = store.get_workflow("o-2")
    _equal("result read back", result, fetched.result if fetched else None)
    listed = store.list_workflows(WorkflowFilter(status=Status.SUCCESS))
    _equal("result read back by list_workflows", [result], [r.result for r in listed])


def check_unicode_and_large_payloads(store: Store) -> None:
    wid = "ünï-çødé 🚀 工作流 עברית"
    store.create_workflow(_run(wid, name="名前 ✓", inputs={"args": ["😀" * 100]}))
    store.create_workflow(_run("plain"))
    topic = "тема/🙂"
    big_text = "résumé ✓ 漢字 " * 40_000  # about 600 kB of UTF-8
    big_list = [{"i": i, "s": "x" * 10} for i in range(10_000)]
    escapes = 'tab\tnewline\nquote"backslash\\ nul-free \u2028 \U0001f600 \x7f \x01'
    store.send_message(wid, topic, big_text, idempotency_key="ключ 🔑")
    store.record(
        wid,
        Record(0, "step", "大きい 🐘", Value(big_list)),
        event=EventWrite("ключ", escapes),
        send=OutgoingMessage("plain", topic, {"ü": escapes}),
    )
    row = store.get_workflow(wid)
    _equal("unicode name read back", "名前 ✓", row.name if row else None)
    _equal("unicode inputs read back", {"args": ["😀" * 100]}, row.inputs if row else None)
    message = store.peek_message(wid, topic)
    _equal("large unicode payload read back", big_text, message.payload if message else None)
    _equal(
        "large record read back",
        [Record(0, "step", "大きい 🐘", Value(big_list))],
        _log_of(store, wid),
    )
    _equal("unicode event read back", (True, escapes), store.get_event(wid, "ключ"))
    sent = store.peek_message("plain", topic)
    _equal("escapes in a sent payload", {"ü": escapes}, sent.payload if sent else None)
    _equal(
        "unicode idempotency key reused",
        False,
        store.send_message(wid, topic, "again", idempotency_key="ключ 🔑"),
    )
    _equal(
        "list_workflows by unicode name",
        [wid],
        _ids(store.list_workflows(WorkflowFilter(name="名前 ✓"))),
    )


def check_error_text_with_nul_is_kept(store: Store) -> None:
    failure = Failure(ErrorInfo("builtins", "ValueError", "bad \x00 byte", ["bad \x00 byte"]))
    store.create_workflow(_run("ne-1"))
    store.create_workflow(_run("ne-2"))
    _equal(
        "finish_workflow with NUL in its error",
        True,
        store.finish_workflow("ne-1", Status.ERROR, failure, error="bad \x00 byte"),
    )
    row = _present("the run finished with NUL in its error", store.get_workflow("ne-1"))
    _equal("its error, NUL spelled out", "bad \\x00 byte", row.error)
    _equal("its result, exactly", failure, row.result)
    _equal(
        "set_status with NUL in its error",
        True,
        store.set_status("ne-2", Status.PARKED, error="why \x00"),
    )
    row = _present("the run parked with NUL in its error", store.get_workflow("ne-2"))
    _equal("its error, NUL spelled out", "why \\x00", row.error)
