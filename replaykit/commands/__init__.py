"""The commands a workflow yields, one module per family.

Every command is a frozen attrs value. The interpreter needs three things from
each: its `kind` and `name` (compared on every replay), and `describe_args()`,
the JSON-encodable arguments whose digest strict mode compares. Leaf commands
are carried out by the runtime; composites (`Race`, `All`) hold children (leaf
commands or other composites) and take one position for the whole tree. Each
class states its `CommandFacts`; `facts_of` reads them.
"""

from __future__ import annotations

from replaykit._durations import (
    Retry,
    as_seconds,
    earliest_deadline,
    requested_delay,
    run_deadline,
)
from replaykit.commands.attributes import SetAttributes
from replaykit.commands.awakeables import Await, Awakeable, AwakeableToken
from replaykit.commands.base import Command, CommandFacts, Yields, callable_name, facts_of
from replaykit.commands.children import Call, ContinueAsNew, Start, Wait
from replaykit.commands.composites import All, Composite, Race
from replaykit.commands.instants import Now, Random, Sleep, Uuid
from replaykit.commands.messages import GetEvent, Received, Recv, Send, SetEvent
from replaykit.commands.runs import CancelRun
from replaykit.commands.steps import Step, Transaction
from replaykit.commands.streams import CloseStream, WriteStream
from replaykit.commands.updates import ReceiveUpdate, Reply, UpdateRequest, replying
from replaykit.commands.versions import DeprecatePatch, Patch

__all__ = [
    "All",
    "Await",
    "Awakeable",
    "AwakeableToken",
    "Call",
    "CancelRun",
    "CloseStream",
    "Command",
    "CommandFacts",
    "Composite",
    "ContinueAsNew",
    "DeprecatePatch",
    "GetEvent",
    "Now",
    "Patch",
    "Race",
    "Random",
    "ReceiveUpdate",
    "Received",
    "Recv",
    "Reply",
    "Retry",
    "Send",
    "SetAttributes",
    "SetEvent",
    "Sleep",
    "Start",
    "Step",
    "Transaction",
    "UpdateRequest",
    "Uuid",
    "Wait",
    "WriteStream",
    "Yields",
    "as_seconds",
    "callable_name",
    "earliest_deadline",
    "facts_of",
    "replying",
    "requested_delay",
    "run_deadline",
]
