"""replaykit/stores/_sql.py: the listing and count queries both SQL stores build from a filter.

What they select on a real database is the conformance suite's; here, that every value
is bound (never spliced into the text) and the paging and payload rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from replaykit.log import Status
from replaykit.stores._sql import (
    LISTED_COLUMNS,
    WORKFLOW_COLUMNS,
    Dialect,
    counting,
    listing,
)
from replaykit.stores._where_sql import POSTGRES, SQLITE
from replaykit.stores.base import WorkflowFilter

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def _statuses(statuses: Sequence[Status]) -> tuple[str, list[Any]]:
    return f"status IN ({', '.join('?' for _ in statuses)})", [s.value for s in statuses]


DIALECT = Dialect(
    placeholder="?",
    timestamp=lambda d: d.isoformat(),
    no_limit=-1,
    statuses=_statuses,
    language=SQLITE,
)


def test_an_empty_filter_lists_everything_oldest_first_without_a_limit() -> None:
    text, params = listing(WorkflowFilter(), "runs", DIALECT)
    assert text == (
        f"SELECT {WORKFLOW_COLUMNS} FROM runs ORDER BY created_at, workflow_id LIMIT ? OFFSET ?"
    )
    assert params == [-1, 0]


def test_every_value_of_a_filter_is_bound_in_order() -> None:
    where = WorkflowFilter(
        status=[Status.PENDING, Status.ERROR],
        name="x'; DROP TABLE runs; --",
        queue="mail",
        since=T0,
        limit=10,
        offset=20,
    )
    text, params = listing(where, "runs", DIALECT)
    assert "DROP" not in text
    assert " WHERE status IN (?, ?) AND name = ? AND queue = ? AND created_at >= ? " in text
    assert params == ["PENDING", "ERROR", "x'; DROP TABLE runs; --", "mail", T0.isoformat(), 10, 20]


def test_a_listing_without_payloads_selects_no_inputs_and_only_failures() -> None:
    text, _ = listing(WorkflowFilter(payloads=False), "runs", DIALECT)
    assert text.startswith(f"SELECT {LISTED_COLUMNS} FROM runs")
    assert "NULL AS inputs" in LISTED_COLUMNS and "WHEN status = 'ERROR'" in LISTED_COLUMNS


def test_a_count_ignores_the_paging() -> None:
    where = WorkflowFilter(app_version="v2", until=T0, limit=5, offset=5)
    text, params = counting(where, "runs", DIALECT)
    assert text == "SELECT COUNT(*) FROM runs WHERE app_version = ? AND created_at < ?"
    assert params == ["v2", T0.isoformat()]


def test_no_text_of_a_filter_reaches_the_statement_attribute_names_included() -> None:
    typed = "customer_x9 = 'x''; DROP TABLE runs; --' and amount_q7 > 1 or not flag_z3 in (true)"
    for language in (SQLITE, POSTGRES):
        mark = "?" if language is SQLITE else "%s"
        dialect = Dialect(mark, lambda d: d.isoformat(), -1, _statuses, language)
        text, params = listing(WorkflowFilter(where=typed, name="n"), "runs", dialect)
        for fragment in ("DROP", "customer_x9", "amount_q7", "flag_z3"):
            assert fragment not in text, (fragment, text)
        assert any("DROP TABLE" in str(p) for p in params)
        assert any("customer_x9" in str(p) for p in params)
