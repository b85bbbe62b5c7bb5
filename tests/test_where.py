"""`stores/where.py`: the filter language parsed (errors say where and why), evaluated
in Python (the memory store; the SQL stores are held to it by `check_store`'s
`where_filters`), and on PostgreSQL an equality on an attribute served by its index."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from replaykit.log import Status
from replaykit.stores.base import WorkflowFilter, WorkflowRow
from replaykit.stores.where import (
    And,
    Compare,
    FilterError,
    Has,
    In,
    Not,
    Or,
    attribute_names,
    group_key,
    matches,
    parse_where,
    where_of,
)


def test_the_grammar_and_its_precedence() -> None:
    assert parse_where("a = 1 or b = 2 and not c = 3") == Or(
        (
            Compare("a", "=", 1, True),
            And((Compare("b", "=", 2, True), Not(Compare("c", "=", 3, True)))),
        )
    )
    assert parse_where("(a = 1 or b = 2) and c = 'x'") == And(
        (Or((Compare("a", "=", 1, True), Compare("b", "=", 2, True))), Compare("c", "=", "x", True))
    )
    assert parse_where("status NOT IN ('error', 'Cancelled')") == Not(
        In("status", ("ERROR", "CANCELLED"))
    )
    assert parse_where("created > '2026-12-01'") == Compare(
        "created", ">", datetime(2026, 12, 1, tzinfo=UTC)
    )
    assert parse_where("updated <= '2026-12-01T10:00:00+02:00'").value == datetime(
        2026, 12, 1, 8, tzinfo=UTC
    )
    assert parse_where("note = 'it''s' and n <> -1.5e2 and ok = TRUE") == And(
        (
            Compare("note", "=", "it's", True),
            Compare("n", "!=", -150.0, True),
            Compare("ok", "=", True, True),
        )
    )
    assert parse_where("ID = 'o-1'") == Compare("id", "=", "o-1")


@pytest.mark.parametrize(
    ("text", "column", "why"),
    [
        ("", 1, "the filter is empty"),
        ("customer =", 11, "expected a value"),
        ("customer = '42", 12, "no closing quote"),
        ("(a = 1", 7, "expected ')' to close the '(' at column 1"),
        ("a in (1, 2", 11, "to close the list opened at column 6"),
        ("a = 1 b = 2", 7, "expected and, or or the end of the filter, found 'b'"),
        ("a ~ 1", 3, "unexpected '~'"),
        ("= 1", 1, "expected a field or an attribute's name"),
        ("a 1", 3, "expected a comparison after a"),
        ("a not = 1", 7, "expected in after a not"),
        ("status = 'FAILED'", 10, "'FAILED' is not a run status; give one of ENQUEUED"),
        ("status < 'ERROR'", 8, "status takes =, != and in (...), not <"),
        ("name = 3", 8, "name compares with 'text', not '3'"),
        ("created > 'yesterday'", 11, "'yesterday' is not a date or a time"),
        ("flag > true", 8, "true and false take = and !=, not >"),
    ],
)
def test_a_filter_that_does_not_parse_says_where_and_why(text: str, column: int, why: str) -> None:
    with pytest.raises(FilterError) as refused:
        parse_where(text)
    assert refused.value.column == column, str(refused.value)
    assert why in refused.value.why
    shown = str(refused.value).splitlines()
    assert shown[0].startswith(f"filter {text!r}, column {column}: ")
    assert shown[2].index("^") == shown[1].index(text) + column - 1 if text else True


def test_a_filter_is_text_or_a_tree() -> None:
    tree = parse_where("a = 1")
    assert where_of("a = 1") == tree and where_of(tree) is tree and where_of(None) is None
    assert WorkflowFilter(where="a = 1").where == tree
    with pytest.raises(FilterError):
        WorkflowFilter(where="a =")
    with pytest.raises(TypeError, match="a filter is text"):
        parse_where(3)  # type: ignore[arg-type]
    assert attribute_names(
        parse_where("a = 1 and status = 'ERROR' or not (b in (1) or a = 2)")
    ) == [
        "a",
        "b",
    ]


def _row(**attributes: Any) -> WorkflowRow:
    return WorkflowRow("r-1", "order", Status.ERROR, queue=None, attributes=attributes)


def test_matches_in_python() -> None:
    row = _row(customer="42", n=3, tags=["a", "b"], due=datetime(2026, 12, 1, tzinfo=UTC))
    assert matches(parse_where("customer = '42' and n < 4 and tags = 'b'"), row)
    assert matches(parse_where("due > '2026-11-30' and due < '2026-12-02'"), row)
    assert not matches(parse_where("n = '3'"), row)  # a number is not text
    assert not matches(parse_where("missing != 'x'"), row)
    assert matches(parse_where("not missing = 'x'"), row)
    assert matches(parse_where("queue != 'q'"), row)  # a run on no queue
    assert not matches(parse_where("queue = 'q'"), row)
    assert matches(Has("tags"), row) and not matches(Has("missing"), row)


def test_group_keys_are_alike_everywhere() -> None:
    assert [group_key(v) for v in (None, "x", 2, 2.0, 2.5, True, ["a", "b"])] == [
        "",
        "x",
        "2",
        "2",
        "2.5",
        "true",
        '["a","b"]',
    ]
    assert group_key(datetime(2026, 12, 1, tzinfo=UTC)) == "2026-12-01T00:00:00.000000Z"


def test_postgres_serves_an_equality_on_an_attribute_by_its_index(
    pg_url: str, pg_schema: str
) -> None:
    import psycopg

    from replaykit.stores._sql import listing
    from replaykit.stores.postgres import PostgresStore
    from replaykit.stores.postgres.reads import _DIALECT

    store = PostgresStore(pg_url, schema=pg_schema)
    table = f'"{pg_schema}".workflows'
    try:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            # 100,000 runs of 5,000 customers, each run's attributes its own (an order
            # id), analyzed; then a new customer's five runs, as a busy store has them.
            conn.execute(
                f"INSERT INTO {table} (shard_key, workflow_id, name, status, executor_id, "
                "app_version, created_at, updated_at, attributes) SELECT 'r-' || n, 'r-' || n, "
                "'order', 'SUCCESS', 'local', '', now(), now(), jsonb_build_object('customer', "
                "'c' || (n % 5000), 'order', n) FROM generate_series(1, 100000) AS n"
            )
            conn.execute(f"ANALYZE {table}")
            store.create_workflows(
                [
                    WorkflowRow(f"new-{n}", "order", Status.ERROR, attributes={"customer": "42"})
                    for n in range(5)
                ]
            )
            where = WorkflowFilter(where="customer = '42' and status in ('SUCCESS', 'ERROR')")
            assert store.count_workflows(where) == 5
            text, params = listing(where, table, _DIALECT)
            plan = "\n".join(row[0] for row in conn.execute(f"EXPLAIN {text}", params))
    finally:
        store.close()
    assert "workflows_by_attributes" in plan, plan
    assert "Bitmap Index Scan" in plan, plan
