"""replaykit/stores/_beats.py: what an engine's heartbeat says it runs, bounded and kept."""

from __future__ import annotations

import json

import pytest

from replaykit.stores._beats import MAX_NAMES, Registered, decode, encode, registered


def test_names_are_kept_sorted_once_each_and_none_when_not_given() -> None:
    names = registered(["b", "a", "b"], None)
    assert names == Registered(("a", "b"), None, 0, 0)
    assert registered(None, None) is None
    assert registered([], ["mail"]) == Registered((), ("mail",), 0, 0)


def test_a_list_past_its_bounds_is_cut_and_says_how_many_it_left_out() -> None:
    many = [f"wf-{i:05d}" for i in range(MAX_NAMES + 7)]
    names = registered(many, None)
    assert names is not None and names.workflows is not None
    assert len(names.workflows) == MAX_NAMES and names.more_workflows == 7
    huge = ["x" * 40_000 + str(i) for i in range(3)]  # past the bytes bound at the second
    cut = registered(None, huge)
    assert cut is not None and cut.queues == (huge[0],) and cut.more_queues == 2


def test_what_is_not_names_is_refused() -> None:
    with pytest.raises(TypeError, match="not the string 'checkout'"):
        registered("checkout", None)
    with pytest.raises(TypeError, match="must be names \\(str\\), got 3"):
        registered(None, ["mail", 3])  # type: ignore[list-item]


def test_the_column_round_trips_and_null_means_unknown() -> None:
    names = Registered(("a",), None, 2, 0)
    assert decode(encode(names)) == names
    assert decode(json.loads(encode(names) or "")) == names  # PostgreSQL's json, parsed
    assert encode(None) is None and decode(None) is None


@pytest.mark.parametrize("stored", ["{oops", "[1]", 7])
def test_a_column_of_another_shape_reads_as_unknown(stored: object) -> None:
    assert decode(stored) is None


def test_odd_members_of_a_stored_list_are_dropped_and_bad_counts_read_zero() -> None:
    stored = '{"workflows": ["a", 3, null], "queues": "mail", "more_workflows": -2}'
    assert decode(stored) == Registered(("a",), None, 0, 0)
