"""What every store refuses before it touches its data: names no database can hold.

PostgreSQL cannot store NUL in text, and cannot index text much longer than a
third of a page (2,704 bytes: a row of `(queue, dedup_id)` holds two names), so
a 10 KB workflow id failed there with "index row requires 10256 bytes" while
the other stores took it. Every store checks the same names against the same
rule here first, so what is refused does not depend on the store.

Free text that replaykit writes itself (a run's `error`) is not refused but
made storable: its NUL characters are spelled out.
"""

from __future__ import annotations

from collections.abc import Sequence

from replaykit.log import Record
from replaykit.stores._attributes import is_attribute_name
from replaykit.stores.base import (
    MAX_NAME_BYTES,
    EventWrite,
    OutgoingMessage,
    RecordWrite,
    ScheduleSpec,
    WorkflowFilter,
    WorkflowRow,
)

__all__ = [
    "COUNT_FIELDS",
    "check_count_field",
    "check_filter",
    "check_load_log",
    "check_names",
    "check_record",
    "check_row",
    "check_schedule_specs",
    "check_write",
    "checked_topics",
    "refused_writes",
    "storable_error",
]


def _shown(value: str) -> str:
    return repr(value if len(value) <= 60 else value[:60] + "…")


def _fine(value: object) -> bool:
    """The common case of every name check: short ASCII with no NUL (bytes = characters).

    False for anything else, which the full check then looks at.
    """
    return (
        type(value) is str
        and len(value) <= MAX_NAME_BYTES
        and value.isascii()
        and "\x00" not in value
    )


def _check(label: str, value: str, owner: str | None, position: int | None) -> None:
    # Every write checks its names: the common case answers before any message is built.
    if _fine(value):
        return
    where = ""
    if owner is not None:
        where = f" of workflow id {_shown(owner)}"
        if position is not None:
            where += f" at position {position}"
    if "\x00" in value:
        raise ValueError(
            f"the {label} {_shown(value)}{where} holds a NUL character ('\\x00') at index "
            f"{value.index(chr(0))}; PostgreSQL cannot store NUL in text, so no replaykit store "
            f"accepts it. Remove or replace it"
        )
    if value.isascii():
        size = len(value)
    else:
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"the {label} {_shown(value)}{where} holds a lone surrogate "
                f"({value[exc.start]!r} at index {exc.start}), which is not text UTF-8 can "
                "encode; SQLite and PostgreSQL refuse it, so no replaykit store accepts it"
            ) from None
    if size > MAX_NAME_BYTES:
        raise ValueError(
            f"the {label} {_shown(value)}{where} is {size:,} bytes of UTF-8 "
            f"({len(value):,} characters); ids and names may be at most "
            f"{MAX_NAME_BYTES:,} bytes on every replaykit store (PostgreSQL cannot index "
            f"longer ones). Use a shorter {label}, e.g. a hash of this one"
        )


def check_names(
    workflow_id: str | None = None,
    *,
    position: int | None = None,
    **names: str | None,
) -> None:
    """Refuse `workflow_id` and each of `names` (label=value; None is skipped).

    Raises `ValueError` naming the field, the workflow id it belongs to (and
    the position), its length and the limit, or where the NUL is.
    """
    if isinstance(workflow_id, str):
        _check("workflow id", workflow_id, None, None)
    for label, value in names.items():
        if isinstance(value, str):
            _check(label.replace("_", " "), value, workflow_id, position)


def checked_topics(workflow_id: str, topic: str | tuple[str, ...]) -> tuple[str, ...]:
    """`peek_message`'s topic, or tuple of topics, as a tuple: each checked as a name.

    Refuses an empty tuple and anything that is neither a str nor a tuple of them,
    naming the run, before any read.
    """
    if isinstance(topic, str):
        check_names(workflow_id, topic=topic)
        return (topic,)
    if not isinstance(topic, tuple) or not topic:
        raise ValueError(
            f"peek_message of workflow id {_shown(workflow_id)}: topic must be a str or a "
            f"non-empty tuple of them, got {topic!r}"
        )
    check_names(workflow_id)
    for one in topic:
        if not isinstance(one, str):
            raise ValueError(
                f"peek_message of workflow id {_shown(workflow_id)}: every topic must be a "
                f"str, got {one!r} in {topic!r}"
            )
        check_names(workflow_id, topic=one)
    return topic


def check_row(row: WorkflowRow) -> None:
    """The names of a run to be created."""
    check_names(
        row.workflow_id,
        name=row.name,
        executor_id=row.executor_id,
        app_version=row.app_version,
        parent_id=row.parent_id,
        queue=row.queue,
        dedup_id=row.dedup_id,
        forked_from=row.forked_from,
        continued_as=row.continued_as,
        partition_key=row.partition_key,
    )


def check_record(workflow_id: str, record: Record) -> None:
    """The names a record carries: its command's name (a step's, a topic, a key) and kind."""
    if _fine(workflow_id) and _fine(record.name) and _fine(record.kind):
        return  # every checkpoint passes here: no keyword dict, no label built
    check_names(workflow_id, position=record.position, name=record.name, kind=record.kind)


def check_write(
    workflow_id: str,
    record: Record,
    executor_id: str | None,
    send: OutgoingMessage | None,
    event: EventWrite | None,
) -> None:
    """The names of one `record()` call."""
    if executor_id is not None and not _fine(executor_id):
        check_names(workflow_id, executor_id=executor_id)
    check_record(workflow_id, record)
    if send is not None:
        check_names(send.workflow_id, topic=send.topic, idempotency_key=send.idempotency_key)
    if event is not None:
        check_names(workflow_id, position=record.position, event_key=event.key)


def refused_writes(writes: Sequence[RecordWrite]) -> dict[int, ValueError]:
    """For `record_many`: the index of each write `record()` would refuse, with its error.

    A refused write is answered with its error and the others still commit,
    as for any other refusal.
    """
    refused: dict[int, ValueError] = {}
    for index, w in enumerate(writes):
        try:
            check_write(w.workflow_id, w.record, w.executor_id, w.send, w.event)
        except ValueError as exc:
            refused[index] = exc
    return refused


def check_schedule_specs(specs: Sequence[ScheduleSpec]) -> None:
    """The names a schedule's definition stores, checked before any of them is written."""
    for spec in specs:
        check_names(
            schedule_name=spec.name,
            name=spec.workflow_name,
            queue=spec.queue,
            cron=spec.cron,
            time_zone=spec.tz,
        )


def check_filter(where: WorkflowFilter) -> None:
    """The names a listing filters on."""
    check_names(
        parent_id=where.parent_id,
        name=where.name,
        executor_id=where.executor_id,
        app_version=where.app_version,
        queue=where.queue,
        forked_from=where.forked_from,
        continued_as=where.continued_as,
        partition_key=where.partition_key,
        id_prefix=where.id_prefix,
        after_id=None if where.after is None else where.after[1],
    )


#: What `count_workflows_by` groups by: columns of the runs' table, never a name the
#: caller makes up (the SQL stores put the field into the statement's text), or an
#: attribute's name (which they bind as a parameter).
COUNT_FIELDS = ("status", "name", "queue", "app_version", "executor_id")


def check_count_field(field: str) -> str:
    if field not in COUNT_FIELDS and not (isinstance(field, str) and is_attribute_name(field)):
        raise ValueError(
            f"count_workflows_by cannot group by {field!r}; give one of "
            f"{', '.join(COUNT_FIELDS)} or an attribute's name"
        )
    return field


def check_load_log(workflow_id: str, limit: int | None) -> None:
    """`load_log`'s run id and `limit`, before anything is read."""
    check_names(workflow_id)
    check_log_limit(limit)


def check_log_limit(limit: int | None) -> None:
    """`load_log`'s `limit`: None, or a whole number of records, 0 or more."""
    if limit is not None and (type(limit) is not int or limit < 0):
        raise ValueError(
            f"load_log(limit={limit!r}): give a whole number of records, 0 or more, or None "
            "for all of them"
        )


def storable_error(error: str) -> str:
    """A run's `error` text as every store keeps it: NUL spelled out as `\\x00`.

    The text is replaykit's own (an exception's message, a reason for
    parking), so it is kept rather than refused; the exception itself is in
    the run's result, exactly.
    """
    return error.replace("\x00", "\\x00") if "\x00" in error else error
