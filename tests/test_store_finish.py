"""replaykit/stores/_finish.py: the checks of the last record a finish commits with the run."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from replaykit.errors import RecordConflict
from replaykit.log import Record, Value
from replaykit.stores._finish import checked_finish, last_record, same_record, unlike_error

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def test_a_finish_takes_a_completed_record_or_none() -> None:
    done = Record(3, "step", "charge", Value(1))
    assert last_record("r-1", None) is None
    assert checked_finish("r-1", "me", done) is done
    with pytest.raises(ValueError, match=r"'r-1'.*the pending record step 'charge' at position 3"):
        last_record("r-1", Record(3, "step", "charge", None))
    with pytest.raises(TypeError, match=r"takes a Record, not dict \(workflow id 'r-1'\)"):
        last_record("r-1", {"position": 3})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="NUL"):
        checked_finish("r-1", "me\x00", None)


def test_a_stored_record_is_the_same_when_equal_or_encoded_alike() -> None:
    given = Record(3, "step", "charge", Value((1, 2)), completed_at=T0)
    # Read back from JSON: the tuple a step returned is a list now.
    stored = Record(3, "step", "charge", Value([1, 2]), completed_at=T0)
    assert stored != given
    assert same_record(stored, given)
    assert not same_record(
        Record(3, "step", "charge", Value(2)), Record(3, "step", "charge", Value(1))
    )
    assert not same_record(Record(3, "step", "charge", None), Record(3, "step", "charge", None))
    # What cannot be encoded is not the same as anything.
    assert not same_record(
        Record(3, "step", "charge", Value(math.nan)), Record(3, "step", "charge", Value(math.inf))
    )


def test_a_position_holding_another_record_is_refused_saying_what_stays() -> None:
    error = unlike_error(
        "checkout",
        "r-1",
        Record(3, "step", "refund", Value(1)),
        Record(3, "step", "charge", Value(1)),
    )
    assert isinstance(error, RecordConflict)
    assert "position 3 already holds a completed step 'refund'" in str(error)
    assert "the run stays PENDING" in str(error)
