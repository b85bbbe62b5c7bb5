"""`Patch` and `DeprecatePatch`: the markers that let old runs replay past changed code."""

from __future__ import annotations

from typing import ClassVar

import attrs

from replaykit.commands.base import Command, CommandFacts, alone


@attrs.frozen
class _PatchMarker(Command):
    """What both markers are: instant, alone, and named by the patch."""

    facts: ClassVar[CommandFacts] = alone(
        "a patch marker takes a position of its own (or none, on old runs)", instant=True
    )
    patch_name: str

    @property
    def name(self) -> str:
        return self.patch_name


@attrs.frozen
class Patch(_PatchMarker):
    """`True` for runs that reach this point after the patch shipped, else `False`.

    A run recorded before the patch has no marker at this position; the
    interpreter then answers `False` without taking a position, so the old
    branch lines up with the old log. Once it has answered `False` for a run, it
    answers `False` at every later site of the same name in that run, so the run
    never takes half of each branch (docs/versioning.md).
    """

    kind: ClassVar[str] = "patch"


@attrs.frozen
class DeprecatePatch(_PatchMarker):
    """Keeps old runs that recorded `Patch(name)` replayable after the old branch is gone.

    It consumes a recorded marker of that name if one stands at this position and
    records nothing for new runs. A run for which `Patch(name)` already answered
    `False` cannot follow the code past it: the interpreter raises
    `NonDeterminismError` (the engine parks the run).
    """

    kind: ClassVar[str] = "deprecate_patch"
