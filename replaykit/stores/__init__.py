"""Stores: where runs, logs, inboxes and events live."""

from replaykit.stores.base import (
    EventWrite,
    Message,
    OutgoingMessage,
    Store,
    WorkflowFilter,
    WorkflowRow,
)
from replaykit.stores.memory import MemoryStore

__all__ = [
    "EventWrite",
    "MemoryStore",
    "Message",
    "OutgoingMessage",
    "Store",
    "WorkflowFilter",
    "WorkflowRow",
]
