"""replaykit: durable workflows as plain Python generators."""

from replaykit.commands import (
    All,
    Call,
    DeprecatePatch,
    GetEvent,
    Now,
    Patch,
    Race,
    Random,
    Recv,
    Retry,
    Send,
    SetEvent,
    Sleep,
    Start,
    Step,
    Transaction,
    Uuid,
    Wait,
)
from replaykit.errors import (
    AwaitedWorkflowCancelled,
    Cancelled,
    NonDeterminismError,
    ReplayKitError,
    SerializationError,
    StepFailed,
    WorkflowFailed,
    WorkflowNotFound,
)
from replaykit.interpreter import StepContext as StepContext
from replaykit.interpreter import context, logger
from replaykit.interpreter import step_context as step_context
from replaykit.log import Log, Record, Status
from replaykit.registry import Workflow, workflow
from replaykit.runtime.aio import AsyncEngine, AsyncWorkflowHandle
from replaykit.runtime.clock import SystemClock, VirtualClock
from replaykit.runtime.engine import Engine, WorkflowHandle
from replaykit.runtime.queues import Queue, QueueItem
from replaykit.runtime.schedules import schedule
from replaykit.stores import MemoryStore

__all__ = [
    "All",
    "AsyncEngine",
    "AsyncWorkflowHandle",
    "AwaitedWorkflowCancelled",
    "Call",
    "Cancelled",
    "DeprecatePatch",
    "Engine",
    "GetEvent",
    "Log",
    "MemoryStore",
    "NonDeterminismError",
    "Now",
    "Patch",
    "Queue",
    "QueueItem",
    "Race",
    "Random",
    "Record",
    "Recv",
    "ReplayKitError",
    "Retry",
    "Send",
    "SerializationError",
    "SetEvent",
    "Sleep",
    "Start",
    "Status",
    "Step",
    "StepFailed",
    "SystemClock",
    "Transaction",
    "Uuid",
    "VirtualClock",
    "Wait",
    "Workflow",
    "WorkflowFailed",
    "WorkflowHandle",
    "WorkflowNotFound",
    "context",
    "logger",
    "schedule",
    "workflow",
]
