"""replaykit/stores/_step_beats.py: what every store refuses of a step heartbeat, and keeps."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from replaykit.errors import DamagedData, WorkflowNotFound
from replaykit.stores._step_beats import (
    check_beat,
    heartbeat_details,
    keeps,
    no_run_for_heartbeats,
    path_of,
    path_text,
)
from replaykit.stores.base import StepHeartbeat

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def beat(**changed: object) -> StepHeartbeat:
    fields: dict[str, object] = {
        "position": 2,
        "name": "upload",
        "attempt": 1,
        "at": T0,
        "details": None,
        "child_path": (),
        "generation": 0,
    }
    fields.update(changed)
    return StepHeartbeat(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changed", "message"),
    [
        ({"position": -1}, "position must be an int >= 0"),
        ({"attempt": 0}, "attempt must be an int >= 1"),
        ({"generation": True}, "generation must be an int >= 0"),
        ({"child_path": [0]}, "child_path must be a tuple"),
        ({"child_path": (0, -1)}, "child_path index must be an int >= 0"),
        ({"at": datetime(2030, 1, 1)}, "must be an aware datetime"),
        ({"name": "up\x00load"}, "NUL"),
    ],
)
def test_a_beat_no_store_can_keep_is_refused(changed: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_beat("r-1", beat(**changed), "me")


def test_a_beat_must_be_a_step_heartbeat() -> None:
    check_beat("r-1", beat(child_path=(1, 0)), None)
    with pytest.raises(TypeError, match="takes a StepHeartbeat"):
        check_beat("r-1", {"position": 2}, None)  # type: ignore[arg-type]


def test_a_child_path_is_keyed_as_dotted_text_and_read_back() -> None:
    assert path_text((1, 0, 3)) == "1.0.3" and path_text(()) == ""
    assert path_of("1.0.3") == (1, 0, 3) and path_of("") == ()


def test_a_later_generation_or_attempt_writes_over_an_earlier_one_only() -> None:
    assert keeps(0, 1, beat(attempt=1))  # the same attempt beating again
    assert keeps(0, 1, beat(attempt=2))
    assert keeps(0, 3, beat(generation=1, attempt=1))
    assert not keeps(0, 2, beat(attempt=1))  # a stale attempt's late beat
    assert not keeps(1, 1, beat(generation=0, attempt=5))


def test_unreadable_details_and_a_missing_run_are_named() -> None:
    def broken(value: object) -> object:
        raise ValueError("not JSON")

    with pytest.raises(
        DamagedData, match=r"'r-1': the heartbeat details of the step at position 2, child 1\.0"
    ):
        heartbeat_details(broken, "{", "r-1", 2, "1.0")
    assert heartbeat_details(lambda v: v, 5, "r-1", 2, "") == 5
    error = no_run_for_heartbeats("gone")
    assert isinstance(error, WorkflowNotFound) and "'gone': no such run" in str(error)
