"""Stored data as text for people: escaped for a terminal or a page, summed up in a line.

The CLI and the web UI both show what the store holds (ids, names, errors,
tracebacks, values), and both take it from here, so they escape alike and
summarise a record alike. Standard library only: neither click nor rich nor
the UI's packages are needed to import it.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from datetime import UTC, datetime
from typing import Any

from replaykit import serde
from replaykit.log import AllOutcome, Failure, Outcome, RaceOutcome, Record, Value

__all__ = [
    "compact_json",
    "composite_children",
    "encoded_text",
    "format_duration",
    "inputs_text",
    "json_text",
    "outcome_summary",
    "outcome_text",
    "printable",
    "redact",
    "short",
    "short_json",
    "shown_path",
    "when_text",
]


# Characters a terminal acts on or shows as something else: control characters
# (C0, DEL and C1, where 0x9b is ESC [ to some terminals), format characters
# (bidi overrides and isolates that reorder what is shown, zero-width ones that
# make two ids look alike), lone surrogates (which cannot even be encoded), and
# the Unicode line and paragraph separators.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# Printable ASCII is never hidden; only what is outside it is looked up.
_MAYBE_HIDDEN = re.compile(r"[^\x20-\x7e]")


def printable(text: str, *, newlines: bool = False) -> str:
    """`text` with every hidden character shown as its Python escape (ESC as `\\x1b`).

    `newlines=True` keeps line breaks, for a traceback; elsewhere they are
    escaped too, so one stored value cannot pass for several lines of output.
    """

    def show(match: re.Match[str]) -> str:
        char = match.group()
        if (newlines and char == "\n") or unicodedata.category(char) not in _HIDDEN_CATEGORIES:
            return char
        return repr(char)[1:-1]

    return _MAYBE_HIDDEN.sub(show, text)


def json_text(text: str) -> str:
    """JSON text with the hidden characters json.dumps leaves raw as \\u escapes.

    With ensure_ascii=False it escapes C0 controls, not DEL, C1 or bidi
    overrides; they can only be inside strings, where \\u escapes mean the same.
    """

    def show(match: re.Match[str]) -> str:
        char = match.group()
        if char == "\n" or unicodedata.category(char) not in _HIDDEN_CATEGORIES:
            return char
        code = ord(char)
        if code <= 0xFFFF:
            return f"\\u{code:04x}"
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"

    return _MAYBE_HIDDEN.sub(show, text)


def redact(text: str) -> str:
    """Hide passwords in database URLs before they reach a terminal or a CI log."""
    return re.sub(r"(://[^:/@\s]+:)[^@\s]+@", r"\1***@", text)


def when_text(value: datetime | None) -> str:
    """A time as UTC to the second ('2024-06-01 12:00:00'); '-' for none."""
    if value is None:
        return "-"
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%d %H:%M:%S")


def format_duration(seconds: float) -> str:
    """A duration in its two largest units: '212ms', '3.0s', '1m05s', '2h30m', '3d04h'."""
    if seconds < 0.001:
        return "<1ms"
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    if whole < 86400:
        return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d{whole % 86400 // 3600:02d}h"


def short(text: str, width: int | None = 60) -> str:
    """`text` on one line, cut to `width` characters (None: never cut)."""
    text = " ".join(text.split())
    return text if width is None or len(text) <= width else text[: width - 3] + "..."


def encoded_text(data: Any) -> str | None:
    """'<encoded by fernet, 212 bytes>' for a payload a codec encoded; None for a plain one.

    A reader without the codec (`replaykit` without `--codec`) shows what it
    holds: that there is a payload, which codec has it, and its size.
    """
    return serde.describe_encoded(data) if serde.is_encoded(data) else None


def short_json(data: Any, width: int | None = 60) -> str:
    """`data` as compact JSON on one line (its repr if it is not JSON), cut to `width`.

    A payload a codec encoded shows as such (`encoded_text`).
    """
    encoded = encoded_text(data)
    if encoded is not None:
        return encoded
    return short(compact_json(data), width)


def compact_json(data: Any) -> str:
    """`data` as compact JSON on one line, or its repr if it is not JSON."""
    try:
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return repr(data)


def shown_path(filename: str) -> str:
    """A source file's name as a person reads it: relative to the working directory
    when it lies below it, else as given."""
    try:
        relative = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if relative.startswith("..") else relative


def inputs_text(inputs: Any, width: int | None = 60) -> str:
    """A run's arguments on one line: `["o-1",100]`, with `kwargs {...}` when it has some.

    Inputs a codec encoded show as such (`encoded_text`); a shape other than
    the one engines store shows as its JSON.
    """
    encoded = encoded_text(inputs)
    if encoded is not None:
        return encoded
    if inputs is None:
        return "-"
    if not (isinstance(inputs, dict) and set(inputs) <= {"args", "kwargs"}):
        return short_json(inputs, width)
    args = short_json(inputs.get("args") or [], width)
    kwargs = inputs.get("kwargs")
    return f"{args}, kwargs {short_json(kwargs, width)}" if kwargs else args


def outcome_summary(
    record: Record, width: int | None = 60, *, child_width: int | None = None
) -> str:
    """One cell for a record's outcome: ok + value, error + type and message, or pending.

    A `Race` shows which child won and its outcome, an `All` each child's
    outcome: their record's value is the composite's internal form, which says
    that only to someone who knows it. Values are cut at `width` (None: never),
    a composite child's at `child_width` (default: half of `width`).
    """
    outcome = record.outcome
    if outcome is None:
        return f"pending until {when_text(record.wake_at)}" if record.wake_at else "pending"
    tries = f" ({record.attempts} attempts)" if record.attempts > 1 else ""
    if record.kind in ("race", "all") and isinstance(outcome, Value):
        if child_width is None and width is not None:
            child_width = max(width // 2, 12)
        text = _composite_text(record.kind, record.name, outcome.data, child_width)
        if text is not None:
            return short(text, None if width is None else 2 * width) + tries
    return outcome_text(outcome, width) + tries


def outcome_text(outcome: Outcome, width: int | None) -> str:
    """'ok' and the value, or 'error' with the type and message; cut at about `width`."""
    if isinstance(outcome, Failure):
        error = outcome.error
        return short(
            f"error {error.type_name}: {error.message}", None if width is None else width + 20
        )
    if outcome.data is None:
        return "ok"
    return "ok " + short_json(outcome.data, width)


def _split_top(name: str) -> list[str]:
    """'a|b(c|d)|e' -> ['a', 'b(c|d)', 'e']: the children a composite's name lists."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in name:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(depth - 1, 0)
        if char == "|" and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def composite_children(name: str) -> list[tuple[str, str]]:
    """(kind, name) of each child of a composite record, from its name.

    The name is `kind:name|kind(inner)|...` (`Composite.name`); a step name holding
    `|` or `(` makes this a guess, which is why it only labels what the record holds.
    """
    children: list[tuple[str, str]] = []
    for part in _split_top(name):
        colon, paren = part.find(":"), part.find("(")
        if paren != -1 and (colon == -1 or paren < colon) and part.endswith(")"):
            children.append((part[:paren], part[paren + 1 : -1]))
        elif colon != -1:
            children.append((part[:colon], part[colon + 1 :]))
        else:
            children.append((part, ""))
    return children


def _composite_text(kind: str, name: str, data: Any, width: int | None) -> str | None:
    """A Race's winner or an All's children in words; None if `data` is not such a record.

    Each child's value is cut at `width` (None: never).
    """
    children = composite_children(name)

    def label(index: int) -> str:
        if index >= len(children):
            return f"[{index}]"
        child_kind, child_name = children[index]
        shown = child_name if child_name and child_name != child_kind else ""
        if child_kind in ("race", "all"):
            shown = ""  # its children are listed with its outcome
        return f"[{index}] {child_kind} {shown}".rstrip()

    def child(index: int, outcome: Outcome) -> str:
        if index < len(children) and isinstance(outcome, Value):
            inner_kind, inner_name = children[index]
            if inner_kind in ("race", "all"):
                inner = _composite_text(inner_kind, inner_name, outcome.data, width)
                if inner is not None:
                    return f"({inner})"
        return outcome_text(outcome, width)

    try:
        if kind == "race":
            race = RaceOutcome.from_data(data)
            return f"won by {label(race.index)}: {child(race.index, race.outcome)}"
        every = AllOutcome.from_data(data)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return None
    first = every.first_failure
    if first is not None and first < len(every.outcomes):
        # Fail-fast: the children still running then were cancelled and hold no
        # outcome worth showing.
        return f"failed at {label(first)}: {child(first, every.outcomes[first])}"
    return "; ".join(f"{label(i)}: {child(i, o)}" for i, o in enumerate(every.outcomes))
