"""`SqlFace`: the Store protocol's methods, served by the SQL stores' rooms alike.

`PostgresStore` and `SqliteStore` are faces over rooms, one idea each, whose
statements differ by dialect but whose calls are the same: each face builds its
rooms and hands them to `SqlFace.__init__`, which serves each protocol method by
the room's own bound method (no forwarding method restates a signature; the
protocol in base.py documents them), and keeps only what is its own (opening,
closing, notes, migrations). The memory store and `CodecStore` answer the
protocol their own ways and do not use this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from replaykit.stores.postgres import cancels as pg_cancels
    from replaykit.stores.postgres import claims as pg_claims
    from replaykit.stores.postgres import creates as pg_creates
    from replaykit.stores.postgres import holds as pg_holds
    from replaykit.stores.postgres import messages as pg_messages
    from replaykit.stores.postgres import reads as pg_reads
    from replaykit.stores.postgres import runs as pg_runs
    from replaykit.stores.postgres import schedules as pg_schedules
    from replaykit.stores.postgres import step_beats as pg_step_beats
    from replaykit.stores.postgres import writes as pg_writes
    from replaykit.stores.sqlite import cancels as lite_cancels
    from replaykit.stores.sqlite import claims as lite_claims
    from replaykit.stores.sqlite import finishes as lite_finishes
    from replaykit.stores.sqlite import lifecycle as lite_lifecycle
    from replaykit.stores.sqlite import messages as lite_messages
    from replaykit.stores.sqlite import reads as lite_reads
    from replaykit.stores.sqlite import records as lite_records
    from replaykit.stores.sqlite import runs as lite_runs
    from replaykit.stores.sqlite import schedules as lite_schedules
    from replaykit.stores.sqlite import step_beats as lite_step_beats

__all__ = ["SqlFace"]


class SqlFace:
    """Serves each Store method by the room that answers it. The rooms are typed by
    dialect, so a room whose signature drifts from the protocol fails mypy where a
    store is used as a `Store`."""

    def __init__(
        self,
        *,
        creates: pg_creates.Creates | lite_runs.Runs,
        reads: pg_reads.Reads | lite_reads.Reads,
        claims: pg_claims.Claims | lite_claims.Claims,
        holds: pg_holds.Holds | lite_claims.Claims,
        records: pg_writes.Writes | lite_records.Records,
        finishes: pg_writes.Writes | lite_finishes.Finishes,
        changes: pg_runs.Runs | lite_lifecycle.Lifecycle,
        messages: pg_messages.Messages | lite_messages.Messages,
        step_beats: pg_step_beats.StepBeats | lite_step_beats.StepBeats,
        schedules: pg_schedules.Schedules | lite_schedules.Schedules,
        cancels: pg_cancels.Cancels | lite_cancels.Cancels,
    ) -> None:
        self.create_workflow = creates.create_workflow
        self.create_workflows = creates.create_workflows
        self.count_workflows = reads.count_workflows
        self.count_workflows_by = reads.count_workflows_by
        self.get_workflow = reads.get_workflow
        self.list_workflows = reads.list_workflows
        self.load_log = reads.load_log
        # Not part of the protocol: the engine reads a batch of wake-ups with it where a
        # store has it (runtime/cold.py), and one run at a time where not.
        self.load_runs = reads.load_runs
        self.claim = claims.claim
        self.heartbeat = claims.heartbeat
        # Not part of the protocol: replaykit/_waiting.py asks for it where a store has
        # it, to say which engines run and what (a read; nothing is locked).
        self.read_heartbeats = claims.read_heartbeats
        self.release = claims.release
        self.take_over = claims.take_over
        self.executor_holder = holds.executor_holder
        self.hold_executor = holds.hold_executor
        self.record = records.record
        self.record_late = records.record_late
        self.record_many = records.record_many
        self.record_transaction = records.record_transaction
        self.finish_many = finishes.finish_many
        self.finish_workflow = finishes.finish_workflow
        self.bump_recovery = changes.bump_recovery
        self.continue_workflow = changes.continue_workflow
        self.rewind_workflow = changes.rewind_workflow
        self.delete_workflow = changes.delete_workflow
        self.move_family = changes.move_family
        self.set_deadline = changes.set_deadline
        self.set_attributes = changes.set_attributes
        self.set_status = changes.set_status
        self.answer_message = messages.answer_message
        self.create_and_send = messages.create_and_send
        self.get_event = messages.get_event
        self.get_events = messages.get_events
        self.peek_message = messages.peek_message
        self.send_message = messages.send_message
        self.get_step_heartbeats = step_beats.get_step_heartbeats
        self.record_step_heartbeat = step_beats.record_step_heartbeat
        self.request_cancel = cancels.request_cancel
        self.get_cancel_request = cancels.get_cancel_request
        self.clear_cancel_request = cancels.clear_cancel_request
        self.set_parent_close = cancels.set_parent_close
        self.get_parent_close = cancels.get_parent_close
        self.clear_schedule_request = schedules.clear_schedule_request
        self.delete_schedule_state = schedules.delete_schedule_state
        self.register_schedules = schedules.register_schedules
        self.request_schedule_backfill = schedules.request_schedule_backfill
        self.request_schedule_trigger = schedules.request_schedule_trigger
        self.schedule_states = schedules.schedule_states
        self.set_schedule_paused = schedules.set_schedule_paused
