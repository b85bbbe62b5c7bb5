"""`cli/filters.py`: `replaykit workflows list --where`, `replaykit workflows count`
(grouped by a field or an attribute), and what they say of a filter that does not
parse and of an attribute no run has; on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from conftest import error_line, ok, rk
from replaykit.log import Status
from replaykit.stores import open_store
from replaykit.stores.base import WorkflowRow


def _fill(url: str) -> None:
    store = open_store(url)
    try:
        store.create_workflows(
            [
                WorkflowRow(
                    "o-1", "order", Status.ERROR, attributes={"customer": "42", "plan": "pro"}
                ),
                WorkflowRow(
                    "o-2",
                    "order",
                    Status.SUCCESS,
                    attributes={"customer": "42", "due": datetime(2026, 12, 1, tzinfo=UTC)},
                ),
                WorkflowRow("o-3", "order", Status.CANCELLED, attributes={"customer": "7"}),
                WorkflowRow("o-4", "refund", Status.ERROR),
            ]
        )
    finally:
        store.close()


def test_list_where_keeps_the_matching_runs_and_shows_their_attributes(
    created_url: str,
) -> None:
    _fill(created_url)
    out = ok(
        rk(
            "workflows",
            "list",
            "--url",
            created_url,
            "--wide",
            "--where",
            "customer = '42' and status in ('ERROR', 'SUCCESS')",
        )
    )
    assert "o-1" in out and "o-2" in out and "o-3" not in out and "o-4" not in out
    assert "ATTRIBUTES" in out and "customer=42 plan=pro" in out
    assert "due=2026-12-01T00:00:00.000000Z" in out
    listed = json.loads(
        ok(rk("workflows", "list", "--url", created_url, "--json", "--where", "plan = 'pro'"))
    )
    assert [(r["workflow_id"], r["attributes"]) for r in listed] == [
        ("o-1", {"customer": "42", "plan": "pro"})
    ]
    both = ok(
        rk(
            "workflows",
            "list",
            "--url",
            created_url,
            "--name",
            "refund",
            "--where",
            "status = 'ERROR'",
        )
    )
    assert "o-4" in both and "o-1" not in both


def test_a_filter_on_an_attribute_no_run_has_says_so(created_url: str) -> None:
    _fill(created_url)
    result = rk("workflows", "list", "--url", created_url, "--where", "costumer = '42'")
    assert ok(result).strip() == "no workflow runs match"
    assert "no run has an attribute 'costumer'" in result.stderr
    # An attribute some run has, with no run of that value: nothing more to say.
    quiet = rk("workflows", "list", "--url", created_url, "--where", "customer = '1'")
    assert ok(quiet).strip() == "no workflow runs match" and quiet.stderr == ""


def test_a_filter_that_does_not_parse_is_a_usage_error_saying_where(created_url: str) -> None:
    line = error_line(
        rk("workflows", "list", "--url", created_url, "--where", "status = 'FAILED'"), code=2
    )
    assert line.startswith("Error: --where: filter \"status = 'FAILED'\", column 10: ")
    assert "'FAILED' is not a run status; give one of ENQUEUED" in line
    line = error_line(rk("workflows", "count", "--url", created_url, "--where", "a = "), code=2)
    assert "column 5: expected a value" in line


def test_count_and_count_by(created_url: str) -> None:
    _fill(created_url)
    assert ok(rk("workflows", "count", "--url", created_url)).strip() == "4"
    assert (
        ok(rk("workflows", "count", "--url", created_url, "--where", "customer = '42'")).strip()
        == "2"
    )
    by = json.loads(
        ok(rk("workflows", "count", "--url", created_url, "--by", "customer", "--json"))
    )
    assert by == {"42": 2, "7": 1, "": 1}
    table = ok(
        rk(
            "workflows",
            "count",
            "--url",
            created_url,
            "--by",
            "status",
            "--where",
            "customer = '42'",
        )
    )
    assert "STATUS" in table and "ERROR" in table and "SUCCESS" in table
    line = error_line(rk("workflows", "count", "--url", created_url, "--by", "in"), code=2)
    assert "--by: count_workflows_by cannot group by 'in'" in line
    nothing = rk("workflows", "count", "--url", created_url, "--where", "nosuch = 1")
    assert ok(nothing).strip() == "0" and "no run has an attribute 'nosuch'" in nothing.stderr
