"""The filter language (`stores/where.py`) compiled to SQL, for PostgreSQL and SQLite.

Every value of the filter is a bound parameter, an attribute's name included (as a
JSON key on PostgreSQL, `attributes -> %s`, and inside a bound JSON path on SQLite,
`json_extract(attributes, ?)`): no text the user typed reaches the statement. What
each leaf matches is `where.matches`, the memory store's evaluation; the two
compilations follow it, and `check_store` holds all three to the same answers.

SQL compares with three values: a leaf on a run without the attribute (or a NULL
column) is NULL, which a WHERE clause drops as it drops FALSE. That is what a leaf
means anywhere but under `not`, where NULL would stay NULL instead of turning TRUE:
a leaf that can be NULL is wrapped in COALESCE(..., FALSE) there, and only there, so
that an equality on an attribute outside `not` stays a bare jsonpath match the GIN
index serves (`attributes @@ '$."customer" == "42"'`, postgres_0014_attributes.sql).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import attrs

from replaykit.stores.where import BUILTINS, And, Compare, Has, In, Not, Or, Where

__all__ = ["POSTGRES", "SQLITE", "Compiled", "WhereDialect", "compile_where"]

# The columns of the built-in fields that may hold NULL (a leaf on them may be NULL).
_NULLABLE = ("queue", "created_at", "updated_at")


@attrs.frozen
class Compiled:
    sql: str
    params: list[Any]
    nullable: bool  # may be NULL for some row (see the module's note on `not`)


@attrs.frozen
class WhereDialect:
    """How a dialect spells the leaves on attributes, and its few other differences."""

    mark: str
    false: str
    distinct: str  # "not equal, NULL a value like any other"
    #: The attribute equals one of the values (or is a list holding one).
    equal: Callable[[str, Sequence[Any]], Compiled]
    present: Callable[[str], Compiled]
    ordered: Callable[[str, str, Any], Compiled]  # (name, op, a str or a number)
    #: (select expressions, their params, GROUP BY ordinals) naming an attribute's
    #: value for a grouped count (ordinals: a bound name twice would be two parameters,
    #: which PostgreSQL does not take for the same expression).
    group: Callable[[str], tuple[str, list[Any], str]]
    #: A grouped count's row (its value columns, then the count) as the JSON value.
    grouped_value: Callable[[Sequence[Any]], Any]


def compile_where(
    tree: Where, dialect: WhereDialect, timestamp: Callable[[datetime], Any]
) -> Compiled:
    """The WHERE condition of `tree`, every value bound."""
    if isinstance(tree, (And, Or)):
        parts = [compile_where(part, dialect, timestamp) for part in tree.parts]
        joiner = " AND " if isinstance(tree, And) else " OR "
        return Compiled(
            "(" + joiner.join(p.sql for p in parts) + ")",
            [param for p in parts for param in p.params],
            any(p.nullable for p in parts),
        )
    if isinstance(tree, Not):
        inner = compile_where(tree.part, dialect, timestamp)
        sql = f"COALESCE({inner.sql}, {dialect.false})" if inner.nullable else inner.sql
        return Compiled(f"(NOT {sql})", inner.params, False)
    if isinstance(tree, Has):
        return dialect.present(tree.name)
    if isinstance(tree, In):
        if tree.attribute:
            return dialect.equal(tree.field, tree.values)
        # One `IN` rather than a chain of ORs: the same answer, one index probe each.
        column = BUILTINS[tree.field]
        values = [timestamp(v) if isinstance(v, datetime) else v for v in tree.values]
        marks = ", ".join(dialect.mark for _ in values)
        return Compiled(f"{column} IN ({marks})", values, column in _NULLABLE)
    if tree.attribute:
        return _attribute(tree, dialect)
    return _builtin(tree, dialect, timestamp)


def _attribute(tree: Compare, dialect: WhereDialect) -> Compiled:
    name, op, value = tree.field, tree.op, tree.value
    if op in ("=", "!="):
        equal = dialect.equal(name, (value,))
        if op == "=":
            return equal
        present = dialect.present(name)
        inner = f"COALESCE({equal.sql}, {dialect.false})" if equal.nullable else equal.sql
        return Compiled(f"({present.sql} AND NOT {inner})", present.params + equal.params, False)
    return dialect.ordered(name, op, value)


def _builtin(
    tree: Compare, dialect: WhereDialect, timestamp: Callable[[datetime], Any]
) -> Compiled:
    column = BUILTINS[tree.field]
    value: Any = tree.value
    if isinstance(value, datetime):
        value = timestamp(value)
    if tree.op == "!=":
        return Compiled(f"{column} {dialect.distinct} {dialect.mark}", [value], False)
    return Compiled(f"{column} {tree.op} {dialect.mark}", [value], column in _NULLABLE)


# -- PostgreSQL: containment for equality (the GIN index), typed reads for the rest -------


def _pg_equal(name: str, values: Sequence[Any]) -> Compiled:
    # One jsonpath the GIN index serves (`@@`, jsonb_path_ops), bound as a parameter:
    # `$."customer" == "42" || $."customer" == "7"`. Lax mode unwraps a list, so a list
    # holding the value matches too; a value of another type is "unknown" (NULL), never
    # equal. The name is an identifier and each value JSON, escaped by json.dumps: the
    # path is built from the parsed filter, not from its text.
    path = " || ".join(f'$."{name}" == {json.dumps(value)}' for value in values)
    return Compiled("attributes @@ %s::jsonpath", [path], True)


def _pg_present(name: str) -> Compiled:
    return Compiled("attributes ? %s", [name], False)


def _pg_ordered(name: str, op: str, value: Any) -> Compiled:
    if isinstance(value, str):
        # Code point order, as Python compares str (the C collation on UTF-8).
        return Compiled(
            f"(jsonb_typeof(attributes -> %s) = 'string' AND (attributes ->> %s) COLLATE \"C\" "
            f"{op} %s)",
            [name, name, value],
            True,
        )
    # The CASE keeps the cast off values of other types (the planner may evaluate an
    # AND's sides in any order, and a cast of text to numeric raises).
    return Compiled(
        f"(CASE WHEN jsonb_typeof(attributes -> %s) = 'number' THEN (attributes ->> %s)::numeric "
        f"END) {op} %s::numeric",
        [name, name, value],
        True,
    )


def _pg_group(name: str) -> tuple[str, list[Any], str]:
    return "attributes -> %s", [name], "1"


def _pg_grouped_value(values: Sequence[Any]) -> Any:
    return values[0]  # psycopg reads jsonb as the JSON value (None: the run lacks it)


POSTGRES = WhereDialect(
    mark="%s",
    false="FALSE",
    distinct="IS DISTINCT FROM",
    equal=_pg_equal,
    present=_pg_present,
    ordered=_pg_ordered,
    group=_pg_group,
    grouped_value=_pg_grouped_value,
)


# -- SQLite: JSON paths, bound like any value ---------------------------------------------


def _path(name: str) -> str:
    # Names are identifiers (stores/_attributes.py), so the quoted key needs no escape.
    return f'$."{name}"'


_NUMBER_TYPES = "('integer', 'real')"


def _lite_equal_one(name: str, value: Any) -> Compiled:
    if isinstance(value, str):
        # json_each walks a list's items, and gives a lone value as its one row.
        return Compiled(
            "EXISTS (SELECT 1 FROM json_each(attributes, ?) WHERE type = 'text' AND value = ?)",
            [_path(name), value],
            False,
        )
    if isinstance(value, bool):
        return Compiled("json_type(attributes, ?) = ?", [_path(name), json.dumps(value)], True)
    return Compiled(
        f"(json_type(attributes, ?) IN {_NUMBER_TYPES} AND json_extract(attributes, ?) = ?)",
        [_path(name), _path(name), value],
        True,
    )


def _lite_equal(name: str, values: Sequence[Any]) -> Compiled:
    leaves = [_lite_equal_one(name, value) for value in values]
    if len(leaves) == 1:
        return leaves[0]
    return Compiled(
        "(" + " OR ".join(leaf.sql for leaf in leaves) + ")",
        [param for leaf in leaves for param in leaf.params],
        any(leaf.nullable for leaf in leaves),
    )


def _lite_present(name: str) -> Compiled:
    return Compiled("json_type(attributes, ?) IS NOT NULL", [_path(name)], False)


def _lite_ordered(name: str, op: str, value: Any) -> Compiled:
    types = "= 'text'" if isinstance(value, str) else f"IN {_NUMBER_TYPES}"
    return Compiled(
        f"(json_type(attributes, ?) {types} AND json_extract(attributes, ?) {op} ?)",
        [_path(name), _path(name), value],
        True,
    )


def _lite_group(name: str) -> tuple[str, list[Any], str]:
    path = _path(name)
    return "json_type(attributes, ?), json_extract(attributes, ?)", [path, path], "1, 2"


def _lite_grouped_value(values: Sequence[Any]) -> Any:
    kind, value = values[0], values[1]
    if kind in ("true", "false"):
        return kind == "true"
    if kind in ("array", "object"):
        return json.loads(value)
    return value


SQLITE = WhereDialect(
    mark="?",
    false="0",
    distinct="IS NOT",
    equal=_lite_equal,
    present=_lite_present,
    ordered=_lite_ordered,
    group=_lite_group,
    grouped_value=_lite_grouped_value,
)
