"""replaykit: durable workflows as plain Python generators."""

from replaykit.client import AsyncClient, AsyncClientHandle, Client, ClientHandle
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
    ExecutorIdInUse,
    NonDeterminismError,
    ReplayKitError,
    SerializationError,
    StepFailed,
    WorkflowFailed,
    WorkflowIdConflict,
    WorkflowNotFound,
)
from replaykit.interpreter import ReplaySafeFilter, StepContext, context, logger, step_context
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
    "AsyncClient",
    "AsyncClientHandle",
    "AsyncEngine",
    "AsyncWorkflowHandle",
    "AwaitedWorkflowCancelled",
    "Call",
    "Cancelled",
    "Client",
    "ClientHandle",
    "DeprecatePatch",
    "Engine",
    "ExecutorIdInUse",
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
    "ReplaySafeFilter",
    "Retry",
    "Send",
    "SerializationError",
    "SetEvent",
    "Sleep",
    "Start",
    "Status",
    "Step",
    "StepContext",
    "StepFailed",
    "SystemClock",
    "Transaction",
    "Uuid",
    "VirtualClock",
    "Wait",
    "Workflow",
    "WorkflowFailed",
    "WorkflowHandle",
    "WorkflowIdConflict",
    "WorkflowNotFound",
    "context",
    "logger",
    "schedule",
    "step_context",
    "workflow",
]
