"""replaykit/_update_names.py: what an update's name and id must be."""

from __future__ import annotations

import pytest

from replaykit._update_names import UPDATE_PREFIX, check_update_id, check_update_name
from replaykit.stores.base import MAX_NAME_BYTES


def test_a_name_and_an_id_are_given_back_as_they_are() -> None:
    assert check_update_name("add_item") == "add_item"
    assert check_update_id("order-7:add:1") == "order-7:add:1"


@pytest.mark.parametrize("bad", ["", None, 3, b"add"])
def test_an_update_name_is_a_non_empty_str(bad: object) -> None:
    with pytest.raises(TypeError, match="an update name must be a non-empty str"):
        check_update_name(bad)


def test_the_kept_prefix_counts_against_the_stores_limit() -> None:
    room = MAX_NAME_BYTES - len(UPDATE_PREFIX)
    check_update_id("x" * room)
    with pytest.raises(ValueError, match=f"over the limit of {room}"):
        check_update_id("x" * (room + 1))
    with pytest.raises(ValueError, match="NUL character"):
        check_update_name("add\x00")
