"""The filter language of `list_workflows(where=...)` and `count_workflows(where=...)`.

A filter is text an operator types, parsed here into a small tree of frozen values;
the SQL stores compile the tree into parameterised SQL (`stores/_where_sql.py`: no text
of the filter's reaches the statement, attribute names included) and the memory store
evaluates it with `matches` below, which is the reference both compilations follow.

    customer = '42' and status in ('ERROR', 'CANCELLED') and created > '2026-12-01'

The grammar (keywords in any case):

    filter     := or
    or         := and ("or" and)*
    and        := unary ("and" unary)*
    unary      := "not" unary | "(" filter ")" | comparison
    comparison := NAME op literal | NAME ["not"] "in" "(" literal ("," literal)* ")"
    op         := "=" | "!=" | "<" | "<=" | ">" | ">="
    literal    := 'text' ('' is a quote inside) | number | true | false

A NAME is a built-in field (`BUILTINS`) or else an attribute. What each compares:

- `status`: a run status (`'ERROR'`, any case), with `=`, `!=` and `in`.
- `name`, `queue`, `id`, `app_version`, `partition_key`: text, with `=`, `!=` and
  `in` (`queue != 'q'` also matches runs on no queue).
- `created`, `updated`: an instant, with every comparison: `'2026-12-01'`,
  `'2026-12-01 09:30'`, `'2026-12-01T09:30:00+02:00'` (no offset: UTC).
- an attribute: every comparison. `=` matches a run whose attribute has the literal's
  type and value, or is a list holding it (`tags = 'red'`); `<`, `<=`, `>`, `>=`
  compare text with text (by code point: a datetime attribute, kept as UTC text such
  as `2026-12-01T09:30:00.000000Z`, compares with `'2026-12-01'` as a time would) and
  numbers with numbers; `!=` matches a run that has the attribute and does not equal
  the literal. A run without the attribute, or with a value of another type, matches
  no comparison; `not` and `not in` match it.

A filter that does not parse raises `FilterError` saying where (the column, from 1)
and why.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import attrs

from replaykit.errors import FilterError
from replaykit.log import Status
from replaykit.stores._attributes import (
    BUILTIN_FIELDS,
    MAX_ATTRIBUTE_NAME,
    encoded_attribute,
)

__all__ = [
    "BUILTINS",
    "And",
    "Compare",
    "FilterError",
    "Has",
    "In",
    "Not",
    "Or",
    "Where",
    "attribute_names",
    "group_key",
    "matches",
    "parse_where",
    "where_of",
]

#: The built-in fields and the row's attribute each reads (`WorkflowRow`).
BUILTINS: Mapping[str, str] = {
    "status": "status",
    "name": "name",
    "queue": "queue",
    "id": "workflow_id",
    "created": "created_at",
    "updated": "updated_at",
    "app_version": "app_version",
    "partition_key": "partition_key",
}
assert tuple(BUILTINS) == BUILTIN_FIELDS
TIME_FIELDS = ("created", "updated")
OPS = ("=", "!=", "<", "<=", ">", ">=")
#: A filter longer than this is refused: it is typed by a person, and each literal is
#: a bound parameter (PostgreSQL takes at most 65,535 of them).
MAX_FILTER_CHARS = 10_000

Literal = str | int | float | bool | datetime


@attrs.frozen
class Compare:
    """`field op value`; `attribute` when the field is an attribute's name."""

    field: str
    op: str
    value: Literal
    attribute: bool = False


@attrs.frozen
class In:
    """`field in (values...)`: equal to one of them."""

    field: str
    values: tuple[Literal, ...]
    attribute: bool = False


@attrs.frozen
class Has:
    """The run has this attribute (whatever its value). Not in the language: what the
    command line asks when a filter on an attribute found nothing."""

    name: str


@attrs.frozen
class Not:
    part: Where


@attrs.frozen
class And:
    parts: tuple[Where, ...]


@attrs.frozen
class Or:
    parts: tuple[Where, ...]


Where = Compare | In | Has | Not | And | Or

# -- parsing -------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<text>'(?:[^']|'')*')
  | (?P<open_text>'(?:[^']|'')*$)
  | (?P<number>-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>!=|<=|>=|<>|=|<|>)
  | (?P<punct>[(),])
    """,
    re.VERBOSE,
)
_WORDS = ("and", "or", "not", "in", "true", "false")


@attrs.frozen
class _Token:
    kind: str  # "text", "number", "name", "word", "op", "punct", "end"
    value: Any
    column: int  # from 1


def _tokens(text: str) -> list[_Token]:
    found: list[_Token] = []
    at = 0
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None:
            raise FilterError(
                text,
                at + 1,
                f"unexpected {text[at]!r}; a filter compares fields and attributes with "
                "=, !=, <, <=, >, >= or in (...), joined by and, or, not and parentheses",
            )
        kind = match.lastgroup
        assert kind is not None
        value = match.group()
        column = at + 1
        at = match.end()
        if kind == "space":
            continue
        if kind == "open_text":
            raise FilterError(text, column, "this text has no closing quote (')")
        if kind == "text":
            literal = value[1:-1].replace("''", "'")
            if "\x00" in literal or any(0xD800 <= ord(c) <= 0xDFFF for c in literal):
                raise FilterError(
                    text, column, "this text holds NUL or a lone surrogate, which no run holds"
                )
            found.append(_Token("text", literal, column))
        elif kind == "number":
            number: int | float = float(value) if re.search("[.eE]", value) else int(value)
            found.append(_Token("number", number, column))
        elif kind == "name" and value.lower() in _WORDS:
            found.append(_Token("word", value.lower(), column))
        elif kind == "op" and value == "<>":
            found.append(_Token("op", "!=", column))
        else:
            found.append(_Token(kind, value, column))
    found.append(_Token("end", None, len(text) + 1))
    return found


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.at = 0

    def error(self, token: _Token, why: str) -> FilterError:
        return FilterError(self.text, token.column, why)

    @property
    def next(self) -> _Token:
        return self.tokens[self.at]

    def take(self) -> _Token:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def word(self, word: str) -> bool:
        if self.next.kind == "word" and self.next.value == word:
            self.at += 1
            return True
        return False

    def punct(self, mark: str, why: str) -> _Token:
        token = self.take()
        if token.kind != "punct" or token.value != mark:
            raise self.error(token, f"expected {mark!r} {why}, found {_shown(token)}")
        return token

    def parse(self) -> Where:
        if self.next.kind == "end":
            raise self.error(
                self.next, "the filter is empty; compare a field, such as status = 'ERROR'"
            )
        tree = self.or_()
        if self.next.kind != "end":
            raise self.error(
                self.next,
                f"expected and, or or the end of the filter, found {_shown(self.next)}",
            )
        return tree

    def or_(self) -> Where:
        parts = [self.and_()]
        while self.word("or"):
            parts.append(self.and_())
        return parts[0] if len(parts) == 1 else Or(tuple(parts))

    def and_(self) -> Where:
        parts = [self.unary()]
        while self.word("and"):
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def unary(self) -> Where:
        if self.word("not"):
            return Not(self.unary())
        token = self.next
        if token.kind == "punct" and token.value == "(":
            self.take()
            inner = self.or_()
            self.punct(")", f"to close the '(' at column {token.column}")
            return inner
        return self.comparison()

    def comparison(self) -> Where:
        token = self.take()
        if token.kind != "name":
            raise self.error(
                token,
                f"expected a field or an attribute's name, found {_shown(token)}; the "
                f"fields are {', '.join(BUILTINS)}, any other name is an attribute",
            )
        name = token.value
        field = name.lower() if name.lower() in BUILTINS else name
        attribute = field not in BUILTINS
        if attribute and len(name) > MAX_ATTRIBUTE_NAME:
            raise self.error(
                token,
                f"{name[:20]!r}...: an attribute's name is at most {MAX_ATTRIBUTE_NAME} characters",
            )
        negated = self.word("not")
        if self.word("in"):
            opening = self.punct("(", f"after {'not in' if negated else 'in'}")
            values = [self.literal(field, "=", attribute)]
            while self.next.kind == "punct" and self.next.value == ",":
                self.take()
                values.append(self.literal(field, "=", attribute))
            self.punct(")", f"to close the list opened at column {opening.column}")
            found: Where = In(field, tuple(values), attribute)
            return Not(found) if negated else found
        if negated:
            raise self.error(self.next, f"expected in after {name} not, found {_shown(self.next)}")
        op_token = self.take()
        if op_token.kind != "op":
            raise self.error(
                op_token,
                f"expected a comparison after {name} (=, !=, <, <=, >, >= or in (...)), "
                f"found {_shown(op_token)}",
            )
        op = op_token.value
        if not attribute and op not in ("=", "!=") and field not in TIME_FIELDS:
            raise self.error(
                op_token,
                f"{field} takes =, != and in (...), not {op}; only created, updated and "
                "attributes are ordered",
            )
        return Compare(field, op, self.literal(field, op, attribute), attribute)

    def literal(self, field: str, op: str, attribute: bool) -> Literal:
        token = self.take()
        if token.kind == "word" and token.value in ("true", "false"):
            value: Literal = token.value == "true"
        elif token.kind in ("text", "number"):
            value = token.value
        else:
            raise self.error(
                token,
                f"expected a value ('text', a number, true or false), found {_shown(token)}",
            )
        if attribute:
            if isinstance(value, bool) and op not in ("=", "!="):
                raise self.error(token, f"true and false take = and !=, not {op}")
            return value
        if not isinstance(value, str):
            raise self.error(token, f"{field} compares with 'text', not {_shown(token)}")
        if field == "status":
            try:
                return Status(value.upper()).value
            except ValueError:
                raise self.error(
                    token,
                    f"{value!r} is not a run status; give one of "
                    f"{', '.join(s.value for s in Status)}",
                ) from None
        if field in TIME_FIELDS:
            return self.instant(token, value)
        return value

    def instant(self, token: _Token, value: str) -> datetime:
        try:
            when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise self.error(
                token,
                f"{value!r} is not a date or a time; write '2026-12-01', "
                "'2026-12-01 09:30' or '2026-12-01T09:30:00+02:00' (no offset: UTC)",
            ) from None
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _shown(token: _Token) -> str:
    if token.kind == "end":
        return "the end of the filter"
    if token.kind == "text":
        return f"the text {token.value!r}"
    return repr(str(token.value))


def parse_where(text: str) -> Where:
    """The tree of the filter `text`, or `FilterError` saying where and why."""
    if not isinstance(text, str):
        raise TypeError(f"a filter is text, such as \"status = 'ERROR'\"; got {text!r}")
    if len(text) > MAX_FILTER_CHARS:
        raise FilterError(
            text, MAX_FILTER_CHARS + 1, f"a filter is at most {MAX_FILTER_CHARS:,} characters"
        )
    return _Parser(text).parse()


def where_of(given: str | Where | None) -> Where | None:
    """`where=` as the faces and `WorkflowFilter` take it: text to parse, a tree, or None."""
    if given is None or isinstance(given, (Compare, In, Has, Not, And, Or)):
        return given
    return parse_where(given)


def attribute_names(tree: Where) -> list[str]:
    """The attributes a filter names, in order, each once."""
    names: dict[str, None] = {}
    for node in _walk(tree):
        if isinstance(node, (Compare, In)) and node.attribute:
            names[node.field] = None
        elif isinstance(node, Has):
            names[node.name] = None
    return list(names)


def _walk(tree: Where) -> Iterator[Where]:
    yield tree
    if isinstance(tree, Not):
        yield from _walk(tree.part)
    elif isinstance(tree, (And, Or)):
        for part in tree.parts:
            yield from _walk(part)


# -- evaluating (the memory store, and the reference for the SQL) --------------------------


def matches(tree: Where, row: Any) -> bool:
    """Whether the run `row` (a `WorkflowRow`) matches the filter."""
    if isinstance(tree, And):
        return all(matches(part, row) for part in tree.parts)
    if isinstance(tree, Or):
        return any(matches(part, row) for part in tree.parts)
    if isinstance(tree, Not):
        return not matches(tree.part, row)
    if isinstance(tree, Has):
        return tree.name in row.attributes
    if isinstance(tree, In):
        return any(matches(Compare(tree.field, "=", v, tree.attribute), row) for v in tree.values)
    if tree.attribute:
        if tree.field not in row.attributes:
            return False
        return _compare_attribute(
            encoded_attribute(row.attributes[tree.field]), tree.op, tree.value
        )
    return _compare_builtin(tree, row)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "text"
    return "list" if isinstance(value, list) else "other"


def _compare_attribute(stored: Any, op: str, value: Literal) -> bool:
    if op == "=":
        return _equal(stored, value)
    if op == "!=":
        return not _equal(stored, value)
    if _kind(stored) != _kind(value) or _kind(value) not in ("text", "number"):
        return False
    return _ordered(stored, op, value)


def _equal(stored: Any, value: Literal) -> bool:
    if isinstance(stored, list):
        return isinstance(value, str) and value in stored
    return _kind(stored) == _kind(value) and stored == value


def _ordered(left: Any, op: str, right: Any) -> bool:
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left >= right)


def _compare_builtin(tree: Compare, row: Any) -> bool:
    stored = getattr(row, BUILTINS[tree.field])
    if tree.field == "status":
        stored = Status(stored).value
    elif tree.field == "partition_key":
        stored = stored or ""  # the SQL stores keep '' for none
    if tree.op == "=":
        return bool(stored is not None and stored == tree.value)
    if tree.op == "!=":
        return bool(stored != tree.value)
    return stored is not None and _ordered(stored, tree.op, tree.value)


def group_key(value: Any) -> str:
    """An attribute's value as `count_workflows_by` names its group, alike in every
    store: text as it is (a datetime as its stored text), true/false, a number in its
    shortest form (1.0 is "1"), a list as JSON; "" for runs without it."""
    if value is None:
        return ""
    value = encoded_attribute(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)
