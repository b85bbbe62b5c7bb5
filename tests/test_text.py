"""replaykit/_text.py: stored data as text for people, escaped alike for the CLI and the UI.

What the commands print end to end is in tests/test_cli_escaping.py; here each function
is asked directly.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from replaykit._text import (
    composite_children,
    format_duration,
    inputs_text,
    json_text,
    outcome_summary,
    outcome_text,
    printable,
    redact,
    short,
    short_json,
    when_text,
)
from replaykit.log import AllOutcome, Failure, RaceOutcome, Record, Value
from replaykit.serde import ErrorInfo

BOOM = Failure(ErrorInfo("builtins", "ValueError", "card declined"))


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain id-1", "plain id-1"),
        ("red\x1b[31m", "red\\x1b[31m"),
        ("two\nlines", "two\\nlines"),
        ("csi\x9b2J", "csi\\x9b2J"),
        ("bidi\u202eevil", "bidi\\u202eevil"),
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("caf\u00e9 \u2603", "caf\u00e9 \u2603"),  # letters and symbols are not hidden
    ],
)
def test_printable_shows_what_a_terminal_would_act_on(text: str, shown: str) -> None:
    assert printable(text) == shown


def test_printable_keeps_line_breaks_when_asked_and_nothing_else() -> None:
    assert printable("Traceback\n  x\x1b", newlines=True) == "Traceback\n  x\\x1b"


def test_json_text_escapes_inside_strings_and_stays_the_same_json() -> None:
    data = {"id": "a\x7f\u202e\U000e0001"}
    text = json.dumps(data, ensure_ascii=False)
    escaped = json_text(text)
    assert "\x7f" not in escaped and "\u202e" not in escaped
    assert "\\u007f" in escaped and "\\u202e" in escaped
    assert "\\udb40\\udc01" in escaped  # past the BMP: a surrogate pair
    assert json.loads(escaped) == data


def test_redact_hides_the_password_of_a_url_only() -> None:
    assert redact("postgresql://app:s3cret@db:5432/x") == "postgresql://app:***@db:5432/x"
    assert redact("postgresql://app@db/x") == "postgresql://app@db/x"
    assert redact("sqlite:///tmp/a.db") == "sqlite:///tmp/a.db"


def test_when_text_is_utc_to_the_second() -> None:
    berlin = timezone(timedelta(hours=2))
    assert when_text(datetime(2024, 6, 1, 14, 0, 5, 999, tzinfo=berlin)) == "2024-06-01 12:00:05"
    assert when_text(datetime(2024, 6, 1, 12, tzinfo=UTC)) == "2024-06-01 12:00:00"
    assert when_text(None) == "-"


def test_format_duration_uses_its_two_largest_units() -> None:
    seconds = (0.0001, 0.212, 3.04, 65, 9000, 3 * 86400 + 4 * 3600 + 59)
    assert [format_duration(s) for s in seconds] == [
        "<1ms",
        "212ms",
        "3.0s",
        "1m05s",
        "2h30m",
        "3d04h",
    ]


def test_short_puts_text_on_one_line_and_cuts_it() -> None:
    assert short("a\n  b\tc") == "a b c"
    assert short("x" * 10, 8) == "xxxxx..."
    assert short("x" * 100, None) == "x" * 100


def test_short_json_is_compact_and_falls_back_on_repr() -> None:
    assert short_json({"a": [1, 2]}) == '{"a":[1,2]}'
    assert short_json({1, 2}) == '"{1, 2}"'  # not JSON: shown as its str, a JSON string
    looped: list[object] = []
    looped.append(looped)
    assert short_json(looped) == "[[...]]"  # no JSON at all: its repr
    assert short_json(list(range(100)), 12) == "[0,1,2,3,..."


def test_inputs_text_shows_args_and_kwargs_only_when_there_are_some() -> None:
    assert inputs_text({"args": ["o-1", 100], "kwargs": {}}) == '["o-1",100]'
    assert inputs_text({"args": [], "kwargs": {"x": 1}}) == '[], kwargs {"x":1}'
    assert inputs_text(None) == "-"
    assert inputs_text({"other": 1}) == '{"other":1}'


def test_an_outcome_says_ok_or_error_with_its_type_and_message() -> None:
    assert outcome_text(Value(None), 60) == "ok"
    assert outcome_text(Value([1]), 60) == "ok [1]"
    assert outcome_text(BOOM, 60) == "error ValueError: card declined"
    wrapped = Failure(ErrorInfo("shop.errors", "Declined", "no"))
    assert outcome_text(wrapped, 60) == "error shop.errors.Declined: no"


def test_a_records_summary_says_pending_and_counts_attempts() -> None:
    wake = datetime(2030, 1, 1, tzinfo=UTC)
    assert outcome_summary(Record(0, "sleep", "sleep", None, wake_at=wake)) == (
        "pending until 2030-01-01 00:00:00"
    )
    assert outcome_summary(Record(0, "recv", "go", None)) == "pending"
    assert outcome_summary(Record(1, "step", "charge", BOOM, attempts=3)) == (
        "error ValueError: card declined (3 attempts)"
    )


def test_a_composites_children_are_read_from_its_name() -> None:
    assert composite_children("step:a|sleep|race(step:b|recv:go)") == [
        ("step", "a"),
        ("sleep", ""),
        ("race", "step:b|recv:go"),
    ]


def test_a_race_says_which_child_won_and_an_all_each_childs_outcome() -> None:
    race = RaceOutcome(1, Value("paid")).to_data()
    record = Record(2, "race", "recv:cancel|step:charge", Value(race))
    assert outcome_summary(record) == 'won by [1] step charge: ok "paid"'
    every = AllOutcome((Value(1), BOOM), first_failure=1).to_data()
    record = Record(3, "all", "step:a|step:b", Value(every))
    assert outcome_summary(record) == "failed at [1] step b: error ValueError: card declined"
    both = AllOutcome((Value(1), Value(2))).to_data()
    assert outcome_summary(Record(4, "all", "step:a|step:b", Value(both))) == (
        "[0] step a: ok 1; [1] step b: ok 2"
    )


def test_a_composite_record_of_another_shape_shows_as_a_value() -> None:
    assert outcome_summary(Record(5, "race", "step:a|step:b", Value({"odd": 1}))) == (
        'ok {"odd":1}'
    )
