"""A run's attributes: typed, searchable key/values, checked and stored alike everywhere.

An attribute's name is an identifier (letters, digits and underscores, not starting
with a digit, at most `MAX_ATTRIBUTE_NAME` characters) that is not a built-in field
of the filter language (`status`, `name`, ...), so that `customer = '42'` always means
the attribute. Its value is a str, an int (64-bit), a float (finite), a bool, an
aware datetime or a list of str; anything else is refused with an error naming the
run and the attribute.

Stored as one JSON object per run, in clear: attributes are meant to be searched, so
a `CodecStore` (which encodes payloads) leaves them as they are. A datetime is kept
as UTC text of one fixed shape (`2026-12-01T09:30:00.000000Z`), so that text order is
time order in every store, and reads back as the datetime it spells: a str of
exactly that shape reads back as a datetime too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "BUILTIN_FIELDS",
    "MAX_ATTRIBUTES",
    "MAX_ATTRIBUTE_NAME",
    "MAX_LIST_ITEMS",
    "MAX_TEXT_BYTES",
    "RESERVED_WORDS",
    "checked_attributes",
    "decoded_attributes",
    "encoded_attribute",
    "encoded_attributes",
    "in_name_order",
    "is_attribute_name",
]

#: The filter language's built-in fields (`stores/where.py`); no attribute takes
#: their names, so a filter on one of them never means an attribute.
BUILTIN_FIELDS = (
    "status",
    "name",
    "queue",
    "id",
    "created",
    "updated",
    "app_version",
    "partition_key",
)
#: The filter language's words, which no attribute takes either.
RESERVED_WORDS = ("and", "or", "not", "in", "true", "false")
MAX_ATTRIBUTE_NAME = 64
#: At most this many attributes per run, this many items in a list, this many bytes
#: (UTF-8) in a str: attributes are for searching, not for payloads.
MAX_ATTRIBUTES = 64
MAX_LIST_ITEMS = 100
MAX_TEXT_BYTES = 1000
_INT64 = 2**63

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STORED_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z")
_KINDS = "a str, an int, a float, a bool, an aware datetime or a list of str"


def is_attribute_name(name: str) -> bool:
    """Whether `name` may name an attribute (an identifier that is not a built-in field)."""
    return (
        len(name) <= MAX_ATTRIBUTE_NAME
        and _NAME.fullmatch(name) is not None
        and name.lower() not in BUILTIN_FIELDS
        and name.lower() not in RESERVED_WORDS
    )


def checked_attributes(attributes: Mapping[str, Any] | None, who: str = "a run") -> dict[str, Any]:
    """`attributes` as every store keeps them, or `TypeError`/`ValueError` naming `who`
    (such as "workflow 'order' (id 'o-1')") and the attribute.

    Datetimes come back in UTC; lists as lists; everything else as given; the names
    in order (`in_name_order`).
    """
    if attributes is None:
        return {}
    if not isinstance(attributes, Mapping):
        raise TypeError(
            f"{who}: attributes must be a dict of name -> value, got "
            f"{type(attributes).__name__} {attributes!r}"
        )
    if len(attributes) > MAX_ATTRIBUTES:
        raise ValueError(
            f"{who}: {len(attributes)} attributes, over the limit of {MAX_ATTRIBUTES}; "
            "attributes are for searching runs, keep the rest in the run's arguments"
        )
    checked: dict[str, Any] = {}
    for name, value in attributes.items():
        _check_name(name, who)
        checked[name] = _checked_value(name, value, who)
    return in_name_order(checked)


def in_name_order(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes in the order every store gives them back: by name (PostgreSQL's jsonb
    keeps its own order, SQLite and memory the order given)."""
    return dict(sorted(attributes.items()))


def _check_name(name: Any, who: str) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{who}: an attribute's name must be a str, got {name!r}")
    if len(name) > MAX_ATTRIBUTE_NAME or _NAME.fullmatch(name) is None:
        raise ValueError(
            f"{who}: attribute name {name!r} is not an identifier of at most "
            f"{MAX_ATTRIBUTE_NAME} characters (letters, digits and _, not starting with a "
            "digit), which the filter language needs; rename it, such as "
            f"{_suggested(name)!r}"
        )
    if name.lower() in BUILTIN_FIELDS or name.lower() in RESERVED_WORDS:
        taken = "a built-in field" if name.lower() in BUILTIN_FIELDS else "a word"
        raise ValueError(
            f"{who}: attribute name {name!r} is {taken} of the filter language "
            f"({', '.join(BUILTIN_FIELDS + RESERVED_WORDS)}), so no filter could reach it; "
            f"rename it, such as {name + '_'!r}"
        )


def _suggested(name: str) -> str:
    shaped = re.sub(r"[^A-Za-z0-9_]", "_", name)[:MAX_ATTRIBUTE_NAME] or "attribute"
    return shaped if not shaped[0].isdigit() else ("_" + shaped)[:MAX_ATTRIBUTE_NAME]


def _checked_value(name: str, value: Any, who: str) -> Any:
    where = f"{who}: attribute {name!r}"
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not -_INT64 <= value < _INT64:
            raise ValueError(
                f"{where} is {value}, outside a 64-bit integer's range, which SQLite cannot "
                "compare; store it as a str"
            )
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where} is {value}, which JSON cannot hold; give a finite float")
        return float(value)
    if isinstance(value, str):
        return _checked_text(value, where)
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(
                f"{where} is a naive datetime ({value.isoformat()}); give an aware one, such "
                "as datetime.now(UTC), so every reader compares the same instant"
            )
        return value.astimezone(UTC)
    if isinstance(value, (list, tuple)):
        if len(value) > MAX_LIST_ITEMS:
            raise ValueError(
                f"{where} is a list of {len(value)} items, over the limit of {MAX_LIST_ITEMS}"
            )
        items = []
        for item in value:
            if not isinstance(item, str):
                raise TypeError(
                    f"{where} is a list holding {type(item).__name__} {item!r}; a list "
                    "attribute holds str only"
                )
            items.append(_checked_text(item, where))
        return items
    raise TypeError(f"{where} is {type(value).__name__} {value!r}; give {_KINDS}")


def _checked_text(value: str, where: str) -> str:
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_TEXT_BYTES:
        raise ValueError(
            f"{where} is {size} bytes of text, over the limit of {MAX_TEXT_BYTES}; attributes "
            "are for searching, keep long text in the run's arguments"
        )
    if "\x00" in value or any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        raise ValueError(f"{where} holds NUL or a lone surrogate, which no store keeps")
    return value


def encoded_attribute(value: Any) -> Any:
    """A checked attribute's value as stored JSON (a datetime as its fixed UTC text)."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return value


def encoded_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Checked attributes as the JSON object the stores keep."""
    return {name: encoded_attribute(value) for name, value in attributes.items()}


def decoded_attributes(data: Any) -> dict[str, Any]:
    """The stored JSON object back as attributes (fixed-shape UTC text as datetimes)."""
    if not isinstance(data, dict):
        raise ValueError(f"a JSON {type(data).__name__} where an object of attributes is expected")
    return in_name_order({name: _decoded(value) for name, value in data.items()})


def _decoded(value: Any) -> Any:
    if isinstance(value, str) and _STORED_TIME.fullmatch(value):
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    return value
