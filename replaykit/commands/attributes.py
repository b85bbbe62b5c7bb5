"""`SetAttributes`: a run sets its own searchable attributes, recorded once."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, ClassVar

import attrs

from replaykit.commands.base import NEVER_UNDONE, CommandFacts, Yields, alone

#: The longest record name a `SetAttributes` takes (its attributes' names, sorted and
#: joined); a longer join is cut there, the same way on every replay.
_NAME_CHARS = 200


def _plain(value: Any) -> Any:
    """An attribute's value as strict replay compares it (a datetime as its ISO text)."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return repr(value)  # refused when carried out; compared by its text meanwhile


@attrs.frozen(init=False)
class SetAttributes(Yields[None]):
    """Set this run's attributes, the searchable key/values that `list_workflows(where=...)`
    filters on: `yield SetAttributes(customer="42", plan="pro")` (or a dict as the one
    positional argument). The names given take their new values; the others stay.

    Values are a str, an int, a float, a bool, an aware datetime or a list of str,
    checked when carried out: anything else raises `TypeError` (a bad name or size
    `ValueError`) at the yield, naming the workflow, its id and the attribute. The
    attributes are written before the command's record, and a replay answers from the
    record without writing them again.
    """

    kind: ClassVar[str] = "set_attributes"
    facts: ClassVar[CommandFacts] = alone(
        f"it writes the run's attributes when it is carried out, {NEVER_UNDONE}"
    )
    attributes: Mapping[str, Any] = attrs.field(hash=False)

    def __init__(self, attributes: Mapping[str, Any] | None = None, /, **named: Any) -> None:
        if attributes is not None and not isinstance(attributes, Mapping):
            raise TypeError(
                f"SetAttributes({attributes!r}): give a dict of name -> value, or the "
                "attributes by name: SetAttributes(customer='42')"
            )
        merged = {**(attributes or {}), **named}
        if not merged:
            raise TypeError(
                "SetAttributes() sets nothing: name at least one attribute, such as "
                "SetAttributes(customer='42')"
            )
        self.__attrs_init__(merged)

    @property
    def name(self) -> str:
        return ",".join(sorted(str(name) for name in self.attributes))[:_NAME_CHARS]

    def describe_args(self) -> Any:
        return {str(name): _plain(value) for name, value in sorted(self.attributes.items())}
