"""replaykit/stores/postgres/shapes.py: the record() and finish statements built per shape.

An optional part a call does not need is left out of the text (not switched off with
`param IS NULL OR ...`), so each shape's plan never needs re-planning; what these
statements do on a database is the conformance suite's (tests/test_stores.py).
"""

from __future__ import annotations

import itertools

import pytest

from replaykit.stores.postgres.shapes import (
    RecordShape,
    finish_record_statement,
    record_statement,
)

FIELDS = ("executor", "first", "consume", "send", "send_key", "event", "stream")
SHAPES = [
    RecordShape(*flags)
    for flags in itertools.product((False, True), repeat=len(FIELDS))
    if not (flags[4] and not flags[3])  # a send key comes with a send
]

# The part of the text each optional part of a shape brings.
PARTS = {
    "executor": "run.executor_id = %(executor)s",
    "consume": "%(consume)s::bigint[]",
    "send": "%(send_topic)s",
    "send_key": "%(send_key)s",
    "event": "%(event_key)s",
}


@pytest.mark.parametrize(
    "shape", SHAPES, ids=lambda s: "-".join(f for f in FIELDS if getattr(s, f))
)
def test_each_optional_part_is_in_the_text_only_when_the_shape_asks(shape: RecordShape) -> None:
    text = record_statement("app", shape)
    for field, part in PARTS.items():
        assert (part in text) is getattr(shape, field), (field, text)
    # A stream's note, as every note, is the writer's statement of its own (single.py).
    assert "pg_notify" not in text
    previous = "p.position = %(pos)s - 1"
    assert (previous in text) is not shape.first
    assert "IS NULL OR" not in text
    assert text.startswith(
        "WITH run AS (SELECT workflow_id, status, executor_id FROM app.workflows"
    )


def test_every_shape_is_a_statement_of_its_own() -> None:
    # A stream's record is written as any other (its note goes apart).
    written = [shape for shape in SHAPES if not shape.stream]
    assert len({record_statement("app", shape) for shape in SHAPES}) == len(written)


def test_a_completed_record_is_never_written_over() -> None:
    text = record_statement("app", RecordShape(True, False, False, False, False, False))
    assert "ON CONFLICT (shard_key, workflow_id, position) DO UPDATE" in text
    assert "WHERE r.outcome IS NULL AND (excluded.outcome IS NOT NULL OR (" in text
    assert "excluded.attempts > r.attempts" in text


def test_the_schema_names_every_table() -> None:
    shape = RecordShape(True, False, True, True, True, True, True)
    text = record_statement("shop_7", shape)
    for table in ("workflows", "records", "messages", "send_keys", "events"):
        assert f"shop_7.{table}" in text
    assert " workflows " not in text and " records " not in text


def test_a_finish_writes_through_the_records_gate_and_leaves_its_note_apart() -> None:
    owned = finish_record_statement("app", executor=True, first=False)
    assert "run.executor_id = %(executor)s" in owned
    assert "p.position = %(pos)s - 1" in owned
    assert "SET status = %(status)s, result = %(result)s" in owned
    assert "pg_notify" not in owned
    alone = finish_record_statement("app", executor=False, first=True)
    assert "%(executor)s" not in alone and "p.position" not in alone
