"""replaykit/stores/_checks.py: the names every store refuses before it touches its data.

That each store refuses them is tests/test_store_bad_input.py's; here, the rule.
"""

from __future__ import annotations

import pytest

from replaykit.log import Record, Value
from replaykit.stores._checks import (
    check_log_limit,
    check_names,
    check_record,
    checked_topics,
    refused_writes,
    storable_error,
)
from replaykit.stores.base import MAX_NAME_BYTES, OutgoingMessage, RecordWrite


def test_a_name_up_to_the_limit_in_utf8_bytes_is_taken() -> None:
    check_names("r" * MAX_NAME_BYTES, topic="t" * MAX_NAME_BYTES, queue=None)
    check_names("\u00e9" * (MAX_NAME_BYTES // 2))  # two bytes each


def test_a_name_too_long_says_its_size_in_bytes_and_characters() -> None:
    with pytest.raises(ValueError, match=r"is 1,002 bytes of UTF-8 \(501 characters\)"):
        check_names("\u00e9" * 501)


def test_a_refused_name_names_its_field_its_run_and_its_position() -> None:
    with pytest.raises(
        ValueError, match=r"the event key 'k\\x00' of workflow id 'r-1' at position 4 holds a NUL"
    ):
        check_names("r-1", position=4, event_key="k\x00")
    with pytest.raises(ValueError, match="lone surrogate"):
        check_names("r-1", topic="bad\udc80")


def test_a_long_name_is_shown_cut_short() -> None:
    with pytest.raises(ValueError) as refused:
        check_names("x" * 5000)
    assert "x" * 60 + "\u2026" in str(refused.value)
    assert "x" * 61 not in str(refused.value)


def test_a_records_names_are_checked_with_its_position() -> None:
    check_record("r-1", Record(0, "step", "charge", Value(1)))
    with pytest.raises(ValueError, match="the name 'a\\\\x00b' of workflow id 'r-1' at position 7"):
        check_record("r-1", Record(7, "step", "a\x00b", Value(1)))


def test_topics_are_a_str_or_a_non_empty_tuple_of_them() -> None:
    assert checked_topics("r-1", "go") == ("go",)
    assert checked_topics("r-1", ("go", "stop")) == ("go", "stop")
    with pytest.raises(ValueError, match="non-empty tuple"):
        checked_topics("r-1", ())
    with pytest.raises(ValueError, match="every topic must be a str, got 3"):
        checked_topics("r-1", ("go", 3))  # type: ignore[arg-type]


def test_a_batch_of_writes_answers_each_refusal_by_its_index() -> None:
    good = RecordWrite("r-1", Record(0, "step", "a", Value(1)))
    bad_send = RecordWrite(
        "r-1", Record(1, "send", "s", Value(None)), send=OutgoingMessage("r-2", "t\x00", 1)
    )
    refused = refused_writes([good, bad_send, good])
    assert list(refused) == [1] and "NUL" in str(refused[1])


def test_a_log_limit_is_a_whole_number_or_none() -> None:
    check_log_limit(None)
    check_log_limit(0)
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="give a whole number of records"):
            check_log_limit(bad)  # type: ignore[arg-type]


def test_an_error_text_is_kept_with_its_nul_spelled_out() -> None:
    assert storable_error("bad\x00byte") == "bad\\x00byte"
    text = "nothing to change"
    assert storable_error(text) is text
