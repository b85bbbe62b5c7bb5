"""`stores/_attributes.py`: what an attribute may be, and its stored form."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from replaykit.stores._attributes import (
    checked_attributes,
    decoded_attributes,
    encoded_attributes,
    is_attribute_name,
)

WHO = "workflow 'order' (id 'o-1')"


def test_values_keep_their_types_and_datetimes_go_to_utc() -> None:
    local = datetime(2026, 12, 1, 11, 30, tzinfo=timezone(timedelta(hours=2)))
    checked = checked_attributes({"a": "x", "n": 3, "f": 0.5, "b": False, "t": local, "l": ("x",)})
    assert checked == {"a": "x", "n": 3, "f": 0.5, "b": False, "t": local, "l": ["x"]}
    assert checked["t"].tzinfo is UTC
    assert checked_attributes(None) == {}


def test_a_datetime_is_stored_as_fixed_utc_text_and_read_back() -> None:
    stored = encoded_attributes({"t": datetime(2026, 12, 1, 9, 30, tzinfo=UTC), "s": "x"})
    assert stored == {"t": "2026-12-01T09:30:00.000000Z", "s": "x"}
    assert decoded_attributes(stored) == {"t": datetime(2026, 12, 1, 9, 30, tzinfo=UTC), "s": "x"}
    # Text order is time order: what a filter on it compares.
    later = encoded_attributes({"t": datetime(2026, 12, 1, 10, 0, tzinfo=UTC)})["t"]
    assert stored["t"] < later
    assert decoded_attributes({"s": "2026-12-01"}) == {"s": "2026-12-01"}  # not the shape
    with pytest.raises(ValueError, match="where an object of attributes is expected"):
        decoded_attributes(["x"])


@pytest.mark.parametrize(
    ("given", "error", "said"),
    [
        ("not a dict", TypeError, "attributes must be a dict"),
        ({1: "x"}, TypeError, "an attribute's name must be a str"),
        ({"9lives": 1}, ValueError, "rename it, such as '_9lives'"),
        ({"a-b": 1}, ValueError, "rename it, such as 'a_b'"),
        ({"Name": 1}, ValueError, "'Name' is a built-in field"),
        ({"not": 1}, ValueError, "'not' is a word of the filter language"),
        ({"d": {"x": 1}}, TypeError, "attribute 'd' is dict"),
        ({"f": float("inf")}, ValueError, "attribute 'f' is inf"),
        ({f"a{n}": n for n in range(65)}, ValueError, "65 attributes, over the limit of 64"),
        ({"l": ["x"] * 101}, ValueError, "a list of 101 items"),
        ({"s": "\ud800"}, ValueError, "lone surrogate"),
    ],
)
def test_refusals_name_the_run_and_the_attribute(given: object, error: type, said: str) -> None:
    with pytest.raises(error) as refused:
        checked_attributes(given, WHO)  # type: ignore[arg-type]
    assert str(refused.value).startswith(f"{WHO}: ") and said in str(refused.value)


def test_attribute_names() -> None:
    assert is_attribute_name("customer") and is_attribute_name("_x9")
    assert not is_attribute_name("status") and not is_attribute_name("IN")
    assert not is_attribute_name("a.b") and not is_attribute_name("x" * 65)
