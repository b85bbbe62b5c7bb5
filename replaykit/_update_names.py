"""What an update's name and id must be: checked where a workflow is registered
(`registry`), where a command is built (`commands.updates`) and where a caller sends.

A room of its own below both the registry and the commands, so that neither has to
reach up into the other for the rule.
"""

from __future__ import annotations

__all__ = ["UPDATE_PREFIX", "check_update_id", "check_update_name"]

#: The prefix of the topics, send keys and event keys replaykit keeps for updates.
UPDATE_PREFIX = "replaykit.update:"
# The stores take names of up to 1,000 bytes; the prefix is part of each.
_MAX_PART_BYTES = 1000 - len(UPDATE_PREFIX.encode())


def _check_part(value: object, what: str, example: str) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError(f"{what} must be a non-empty str (such as {example!r}), got {value!r}")
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > _MAX_PART_BYTES:
        raise ValueError(
            f"{what} is {size} bytes of UTF-8, over the limit of {_MAX_PART_BYTES}; use a "
            "shorter one (a hash of a long one)"
        )
    if "\x00" in value:
        raise ValueError(f"{what} {value!r} holds a NUL character, which no store takes")
    return value


def check_update_name(name: object) -> str:
    """`name`, or a `TypeError`/`ValueError` saying what an update name must be."""
    return _check_part(name, "an update name", "add_item")


def check_update_id(update_id: object) -> str:
    """`update_id`, or a `TypeError`/`ValueError` saying what an update id must be."""
    return _check_part(update_id, "an update id", "order-7:add:1")
