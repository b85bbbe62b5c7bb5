"""The `-- name:` statements format: parsed by name, malformed files refused."""

from __future__ import annotations

import pytest

from replaykit.stores._statements import StatementError, dialect_only, parse_statements


def test_blocks_are_split_by_name_and_leading_comments_dropped() -> None:
    text = """\
-- The test dialect's statements.

-- name: first
-- What the first one does.
SELECT 1;

-- name: second_one
UPDATE t
SET x = 1
WHERE y = %s;
"""
    assert parse_statements(text, source="t.sql") == {
        "first": "SELECT 1;",
        "second_one": "UPDATE t\nSET x = 1\nWHERE y = %s;",
    }


def test_a_name_defined_twice_is_refused_with_its_line() -> None:
    text = "-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;\n"
    with pytest.raises(StatementError, match=r"t.sql, line 3: statement 'a' is defined twice"):
        parse_statements(text, source="t.sql")


def test_an_empty_block_is_refused() -> None:
    with pytest.raises(StatementError, match=r"'a' .* has no SQL"):
        parse_statements("-- name: a\n-- only a comment\n-- name: b\nSELECT 1;\n", source="t")


def test_sql_before_the_first_name_is_refused() -> None:
    with pytest.raises(StatementError, match="line 1: SQL before the first"):
        parse_statements("SELECT 1;\n-- name: a\nSELECT 2;\n", source="t")


def test_a_bad_name_is_refused() -> None:
    with pytest.raises(StatementError, match="must be lowercase"):
        parse_statements("-- name: Bad-Name\nSELECT 1;\n", source="t")


def test_a_statement_only_one_dialect_needs_says_why() -> None:
    text = "-- name: a\n-- only: SQLite has no advisory locks\nSELECT pg_advisory_lock(1);\n"
    assert dialect_only(text, source="t") == {"a": "SQLite has no advisory locks"}
    assert parse_statements(text, source="t") == {"a": "SELECT pg_advisory_lock(1);"}
    with pytest.raises(StatementError, match="without saying why"):
        dialect_only("-- name: a\n-- only:\nSELECT 1;\n", source="t")


def test_a_part_is_set_into_each_statement_that_names_it() -> None:
    text = """\
-- part: live_runs
-- The runs still going.
live AS (SELECT id
    FROM runs
    WHERE status = 'PENDING')

-- name: count_live
WITH {part:live_runs}
SELECT count(*) FROM live;

-- name: first_live
WITH {part:live_runs}
SELECT min(id) FROM live;
"""
    live = "live AS (SELECT id\n    FROM runs\n    WHERE status = 'PENDING')"
    assert parse_statements(text, source="t.sql") == {
        "count_live": f"WITH {live}\nSELECT count(*) FROM live;",
        "first_live": f"WITH {live}\nSELECT min(id) FROM live;",
    }


def test_a_missing_or_unused_part_is_refused() -> None:
    with pytest.raises(StatementError, match=r"uses part 'gone', which the file does not"):
        parse_statements("-- name: a\nSELECT {part:gone};\n", source="t.sql")
    unused = "-- part: spare\nSELECT 2\n-- name: a\nSELECT 1;\n"
    with pytest.raises(StatementError, match=r"part 'spare' is used by no statement"):
        parse_statements(unused, source="t.sql")
    twice = "-- part: p\nSELECT 2\n-- part: p\nSELECT 3\n-- name: a\nSELECT {part:p};\n"
    with pytest.raises(StatementError, match=r"line 3: part 'p' is defined twice"):
        parse_statements(twice, source="t.sql")


def test_the_postgres_batches_share_their_gate_as_parts() -> None:
    from replaykit.stores.postgres.statements import SQL

    locked = "FOR NO KEY UPDATE) w\n    WHERE w.status = 'PENDING'"
    for name in ("record_batch", "finish_batch", "finish_with_record_batch"):
        assert "{part:" not in SQL[name]
        assert locked in SQL[name], name
    gate = "WHERE r.outcome IS NULL AND (excluded.outcome IS NOT NULL"
    assert gate in SQL["record_batch"] and gate in SQL["finish_with_record_batch"]
