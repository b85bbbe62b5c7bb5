"""`CodecStore`: any store, with every payload encoded at rest by a user's codec.

The engine, the client and the testing kit wrap their store in one when given
`codec=`: what they write is encoded on the way in and decoded on the way
out, so the runtime above and the store below know nothing of it. Payloads
are the user's data: a run's inputs and result, every record's outcome (a
value, or a failure's message, args and traceback: its class stays clear),
messages and events. Names stay clear, as the stores index them: ids,
workflow and step names, topics, event keys, statuses, times, digests, and a
run's short `error` text (a parked run's reason, set by the runtime).

Without a codec (`CodecStore(store, None)`, what an engine given no codec
uses) nothing is encoded, and a payload a codec wrote is refused with
`CodecError` instead of reaching a workflow as an envelope. With one, plain
payloads (written before the codec was configured) read as they are. A plain
payload that looks like an encoded one is written escaped either way and read
back as it was given (`serde.escape_payload`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, NoReturn, Unpack

import attrs

from replaykit import serde
from replaykit.errors import CodecError, RecordConflict, StoreError
from replaykit.log import Failure, Outcome, Record, Status, Value
from replaykit.serde import PayloadCodec
from replaykit.stores._checks import storable_error
from replaykit.stores._finish import same_record
from replaykit.stores._holds import ExecutorHold
from replaykit.stores.base import (
    CancelRequest,
    DamagedRow,
    EventWrite,
    FinishWrite,
    Message,
    OutgoingMessage,
    RecordWrite,
    ScheduleSpec,
    ScheduleState,
    StepHeartbeat,
    Store,
    WorkflowFilter,
    WorkflowRow,
    archive_id,
)
from replaykit.stores.options import (
    ClaimTerms,
    ClearRequest,
    Continuation,
    CreateAndSendOptions,
    Ending,
    HeartbeatOptions,
    Owner,
    RecordOptions,
    Rewind,
    SendOptions,
    StatusChange,
    TransactionBody,
)
from replaykit.stores.values import LoadedRun

__all__ = ["CodecStore", "UndecodableRow", "unwrapped_store_methods", "with_codec"]

log = logging.getLogger("replaykit.stores")


class UndecodableRow(CodecError, DamagedRow):
    """A run's inputs or result cannot be decoded here (`get_workflow`).

    A `CodecError`, and a `DamagedRow` whose `row` is the run as a listing
    shows it (its undecodable fields at their defaults), so that what handles
    a damaged row (deleting it, the UI's page) handles this one too.
    """

    def __init__(self, error: CodecError, row: WorkflowRow) -> None:
        DamagedRow.__init__(self, str(error), row)
        self.codec_name = error.codec_name
        self.workflow_id = error.workflow_id
        self.what = error.what


def _is_store_method(name: str) -> bool:
    return not name.startswith("_") and callable(vars(Store).get(name))


def unwrapped_store_methods() -> list[str]:
    """The `Store` protocol's methods `CodecStore` does not implement (should be none).

    A method added to the protocol may carry payloads; until `CodecStore`
    encodes them, calling it through a `CodecStore` raises rather than storing
    them in clear (tests/test_codec.py checks this list is empty).
    """
    return sorted(
        name for name in vars(Store) if _is_store_method(name) and name not in vars(CodecStore)
    )


def with_codec(store: Store, codec: PayloadCodec | None) -> Store:
    """`store` as an engine or a client uses it: in a `CodecStore` with `codec` (or none).

    A store that is a `CodecStore` already is used as it is when no codec is
    given; given one too, it would encode every payload twice, so that is refused.
    """
    if isinstance(store, CodecStore):
        if codec is not None:
            raise ValueError(
                f"{store!r} encodes payloads already; pass codec= or a CodecStore, not both"
            )
        return store
    return CodecStore(store, codec)


class CodecStore:
    """`inner` with every payload encoded by `codec` on the way in, decoded on the way out.

    Implements the whole `Store` protocol by delegating to `inner`; passes the
    same conformance suite (`check_store`). Other attributes (a SQLite store's
    `path`, a schema's status) are `inner`'s. `codec=None` encodes nothing and
    refuses encoded payloads with `CodecError` naming the codec to pass, or
    with `pass_encoded=True` hands them on as stored, for a tool that shows them.
    """

    def __init__(
        self, inner: Store, codec: PayloadCodec | None, *, pass_encoded: bool = False
    ) -> None:
        self.inner = inner
        self.codec = None if codec is None else serde.check_codec(codec)
        # For a tool that shows what is stored (the `replaykit` command without
        # --codec): with no codec, encoded payloads are handed on as stored. What it
        # writes is new data, escaped as any plain payload is: a payload read through
        # it is not to be written back through it (an encoded one would be escaped
        # into a plain value); copy stored data through the inner store.
        self.pass_encoded = pass_encoded and self.codec is None

    def __repr__(self) -> str:
        shown = "no codec" if self.codec is None else f"codec {self.codec.name!r}"
        return f"<CodecStore ({shown}) of {self.inner!r}>"

    def __getattr__(self, name: str) -> Any:
        if _is_store_method(name):
            return self._unwrapped(name)
        return getattr(self.inner, name)

    @staticmethod
    def _unwrapped(name: str) -> Callable[..., NoReturn]:
        def refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
            raise StoreError(
                f"Store.{name} has no payload encoding in replaykit.stores.codec.CodecStore "
                "yet, so it is refused rather than writing payloads in clear; implement it "
                "there (a bug in replaykit: please report it)"
            )

        return refuse

    # -- encoding ------------------------------------------------------------------------

    # Without a codec, a payload is written as it is unless it looks encoded (or
    # escaped): then escaped. What is unchanged is the caller's own object, as
    # callers tell "written" from "the position held a record" by identity.

    def _encode(self, data: Any) -> Any:
        if self.codec is None:
            return serde.escape_payload(data)
        return serde.encode_payload(data, self.codec)

    def _decode(self, data: Any, what: str, workflow_id: str) -> Any:
        if self.pass_encoded:
            return serde.unescape_payload(data)
        return serde.decode_payload(data, self.codec, what=what, workflow_id=workflow_id)

    def _encode_outcome(self, outcome: Outcome | None) -> Outcome | None:
        if outcome is None:
            return outcome
        if self.codec is None:
            if type(outcome) is Value and type(outcome.data) is not dict:
                return outcome  # only a dict can look encoded or escaped: a step's common case
            if isinstance(outcome, Value):
                data = serde.escape_payload(outcome.data)
                return outcome if data is outcome.data else Value(data)
            info = serde.escape_error_info(outcome.error)
            return outcome if info is outcome.error else Failure(info)
        if isinstance(outcome, Value):
            return Value(serde.encode_payload(outcome.data, self.codec))
        return Failure(serde.encode_error_info(outcome.error, self.codec))

    def _decode_outcome(
        self, outcome: Outcome | None, what: str, workflow_id: str
    ) -> Outcome | None:
        if isinstance(outcome, Value):
            if not (serde.is_encoded(outcome.data) or serde.is_escaped(outcome.data)):
                return outcome
            return Value(self._decode(outcome.data, what, workflow_id))
        if isinstance(outcome, Failure):
            if serde.is_escaped_error(outcome.error):
                return Failure(serde.unescape_error_info(outcome.error))
            if self.pass_encoded or not serde.is_encoded_error(outcome.error):
                return outcome
            info = serde.decode_error_info(
                outcome.error, self.codec, what=what, workflow_id=workflow_id
            )
            return Failure(info)
        return outcome

    def _encode_record(self, record: Record) -> Record:
        outcome = self._encode_outcome(record.outcome)
        return record if outcome is record.outcome else attrs.evolve(record, outcome=outcome)

    def _decode_record(self, record: Record, workflow_id: str) -> Record:
        what = f"the outcome of {record.describe()} at position {record.position}"
        outcome = self._decode_outcome(record.outcome, what, workflow_id)
        return record if outcome is record.outcome else attrs.evolve(record, outcome=outcome)

    def _answer(self, stored: Record, written: Record, given: Record, workflow_id: str) -> Record:
        # The caller's own object when the store wrote it: callers (the testing kit's
        # journal) tell "written" from "the position held a record" by identity.
        return given if stored is written else self._decode_record(stored, workflow_id)

    def _encode_row(self, row: WorkflowRow) -> WorkflowRow:
        inputs = None if row.inputs is None else self._encode(row.inputs)
        result = self._encode_outcome(row.result)
        first = None if row.first_inputs is None else self._encode(row.first_inputs)
        if inputs is row.inputs and result is row.result and first is row.first_inputs:
            return row
        return attrs.evolve(row, inputs=inputs, result=result, first_inputs=first)

    def _decode_row(self, row: WorkflowRow) -> WorkflowRow:
        """The row decoded, or `UndecodableRow` (its `row` as a listing shows it)."""
        workflow_id = row.workflow_id
        fields: dict[str, Any] = {}
        errors: list[CodecError] = []
        try:
            fields["inputs"] = self._decode(row.inputs, "the inputs", workflow_id)
        except CodecError as exc:
            fields["inputs"] = None
            errors.append(exc)
        if row.first_inputs is not None:
            try:
                fields["first_inputs"] = self._decode(
                    row.first_inputs, "the first inputs", workflow_id
                )
            except CodecError:
                # Only a re-issued start compares with them; it then compares with
                # the current inputs alone.
                fields["first_inputs"] = None
        try:
            if (
                not self.pass_encoded
                and isinstance(row.result, Failure)
                and serde.is_encoded_error(row.result.error)
            ):
                info, text = serde.decode_error_info_and_text(
                    row.result.error, self.codec, what="the result", workflow_id=workflow_id
                )
                fields["result"] = Failure(info)
                if text is not None and row.error == row.result.error.message:
                    fields["error"] = text
            else:
                fields["result"] = self._decode_outcome(row.result, "the result", workflow_id)
        except CodecError as exc:
            fields["result"] = None
            errors.append(exc)
        if not errors:
            if (
                fields["inputs"] is row.inputs
                and fields["result"] is row.result
                and fields.get("first_inputs", row.first_inputs) is row.first_inputs
            ):
                return row
            return attrs.evolve(row, **fields)
        why = "; ".join(str(exc) for exc in errors)
        # Not "damaged row: ": the row is whole, this process's codec does not read it.
        shown = attrs.evolve(row, **fields, damaged=why, error=f"not decoded here: {why}")
        raise UndecodableRow(errors[0], shown)

    def _encode_send(self, send: OutgoingMessage | None) -> OutgoingMessage | None:
        if send is None:
            return send
        payload = self._encode(send.payload)
        if_duplicate = self._encode_outcome(send.if_duplicate)
        if payload is send.payload and if_duplicate is send.if_duplicate:
            return send
        return attrs.evolve(send, payload=payload, if_duplicate=if_duplicate)

    def _encode_event(self, event: EventWrite | None) -> EventWrite | None:
        if event is None:
            return event
        value = self._encode(event.value)
        return event if value is event.value else EventWrite(event.key, value)

    # -- runs ----------------------------------------------------------------------------

    def create_workflow(
        self, row: WorkflowRow, *, records: Sequence[Record] = (), fork_of: str | None = None
    ) -> tuple[WorkflowRow, bool]:
        stored, created = self.inner.create_workflow(
            self._encode_row(row),
            records=[self._encode_record(record) for record in records],
            fork_of=fork_of,
        )
        return self._listed(stored), created

    def create_workflows(self, rows: Sequence[WorkflowRow]) -> list[tuple[WorkflowRow, bool]]:
        answers = self.inner.create_workflows([self._encode_row(row) for row in rows])
        return [(self._listed(stored), created) for stored, created in answers]

    def _listed(self, row: WorkflowRow) -> WorkflowRow:
        """The row decoded, or as listings show a damaged row (`damaged` set)."""
        try:
            return self._decode_row(row)
        except UndecodableRow as exc:
            assert exc.row is not None
            return exc.row

    def claim(self, queue: str, **terms: Unpack[ClaimTerms]) -> list[WorkflowRow]:
        claimed = self.inner.claim(queue, **terms)
        rows: list[WorkflowRow] = []
        for row in claimed:
            try:
                rows.append(self._decode_row(row))
            except UndecodableRow as exc:
                # As the stores leave out a damaged row: it stays PENDING for this
                # executor, and activating it parks it with this error.
                log.error("claimed workflow id %r cannot be read: %s", row.workflow_id, exc)
        return rows

    def heartbeat(
        self, executor_id: str, app_version: str, now: datetime, **options: Unpack[HeartbeatOptions]
    ) -> list[str]:
        return self.inner.heartbeat(executor_id, app_version, now, **options)

    def take_over(
        self, *, executor_id: str, app_version: str, lease_seconds: float, now: datetime
    ) -> list[str]:
        return self.inner.take_over(
            executor_id=executor_id, app_version=app_version, lease_seconds=lease_seconds, now=now
        )

    def hold_executor(self, executor_id: str, app_version: str) -> ExecutorHold | None:
        return self.inner.hold_executor(executor_id, app_version)

    def executor_holder(self, executor_id: str, app_version: str) -> str:
        return self.inner.executor_holder(executor_id, app_version)

    def release(self, executor_id: str) -> list[str]:
        return self.inner.release(executor_id)

    def get_workflow(self, workflow_id: str) -> WorkflowRow | None:
        row = self.inner.get_workflow(workflow_id)
        return None if row is None else self._decode_row(row)

    def list_workflows(self, where: WorkflowFilter) -> list[WorkflowRow]:
        return [self._listed(row) for row in self.inner.list_workflows(where)]

    def count_workflows(self, where: WorkflowFilter) -> int:
        return self.inner.count_workflows(where)

    def count_workflows_by(self, where: WorkflowFilter, field: str) -> dict[str, int]:
        return self.inner.count_workflows_by(where, field)

    # -- logs ----------------------------------------------------------------------------

    def load_log(
        self, workflow_id: str, *, since: int = 0, limit: int | None = None
    ) -> list[Record]:
        # `limit` passed on only when given: a store written before it takes `since` only.
        records = (
            self.inner.load_log(workflow_id, since=since)
            if limit is None
            else self.inner.load_log(workflow_id, since=since, limit=limit)
        )
        return [self._decode_record(record, workflow_id) for record in records]

    def load_runs(self, workflow_ids: Sequence[str]) -> list[LoadedRun]:
        """The inner store's batch of wake-ups' read, decoded (beside the protocol: an
        inner store without it raises AttributeError, and the engine reads run by run)."""
        return [
            LoadedRun(
                self._decode_row(run.row),
                [self._decode_record(record, run.row.workflow_id) for record in run.log],
                run.cancel,
            )
            for run in self.inner.load_runs(workflow_ids)  # type: ignore[attr-defined]
        ]

    def record(self, workflow_id: str, record: Record, **options: Unpack[RecordOptions]) -> Record:
        written = self._encode_record(record)
        stored = self.inner.record(workflow_id, written, **self._encode_options(options))
        return self._answer(stored, written, record, workflow_id)

    def record_many(self, writes: Sequence[RecordWrite]) -> list[Record | Exception]:
        encoded = [self._encode_write(write) for write in writes]
        answers = self.inner.record_many(encoded)
        decoded: list[Record | Exception] = []
        for write, sent, answer in zip(writes, encoded, answers, strict=True):
            if answer is sent.record:
                decoded.append(write.record)  # written as sent: the caller's own object
            elif isinstance(answer, Record):
                try:
                    decoded.append(
                        self._answer(answer, sent.record, write.record, write.workflow_id)
                    )
                except CodecError as exc:
                    decoded.append(exc)
            else:
                decoded.append(answer)
        return decoded

    def record_late(
        self, workflow_id: str, record: Record, *, executor_id: str | None = None
    ) -> Record:
        written = self._encode_record(record)
        stored = self.inner.record_late(workflow_id, written, executor_id=executor_id)
        return self._answer(stored, written, record, workflow_id)

    def _encode_options(self, options: RecordOptions) -> RecordOptions:
        """`record()`'s options with the message and the event they carry encoded."""
        send, event = options.get("send"), options.get("event")
        if send is None and event is None:
            return options
        encoded = options.copy()
        encoded["send"] = self._encode_send(send)
        encoded["event"] = self._encode_event(event)
        return encoded

    def _encode_write(self, write: RecordWrite) -> RecordWrite:
        record = self._encode_record(write.record)
        if write.send is None and write.event is None:
            return write if record is write.record else attrs.evolve(write, record=record)
        send = self._encode_send(write.send)
        event = self._encode_event(write.event)
        if record is write.record and send is write.send and event is write.event:
            return write
        return attrs.evolve(write, record=record, send=send, event=event)

    def record_transaction(
        self, workflow_id: str, position: int, body: TransactionBody, **owner: Unpack[Owner]
    ) -> Record:
        given: list[Record] = []
        written: list[Record] = []

        def encoded_body(connection: Any) -> Record:
            record = body(connection)
            given.append(record)
            written.append(self._encode_record(record))
            return written[-1]

        stored = self.inner.record_transaction(workflow_id, position, encoded_body, **owner)
        if written and stored is written[-1]:
            return given[-1]
        return self._decode_record(stored, workflow_id)

    def finish_workflow(
        self, workflow_id: str, status: Status, result: Outcome | None, **options: Unpack[Ending]
    ) -> bool:
        executor_id, record = options.get("executor_id"), options.get("record")
        encoded_result, error = self._encode_result(result, options.get("error", ""))
        try:
            return self.inner.finish_workflow(
                workflow_id,
                status,
                encoded_result,
                error=error,
                executor_id=executor_id,
                record=None if record is None else self._encode_record(record),
            )
        except RecordConflict as conflict:
            return self._finish_past_conflict(
                conflict, workflow_id, status, encoded_result, error, executor_id, record
            )

    def _finish_past_conflict(
        self,
        conflict: RecordConflict,
        workflow_id: str,
        status: Status,
        encoded_result: Outcome | None,
        error: str,
        executor_id: str | None,
        record: Record | None,
    ) -> bool:
        """A finish whose last record the store refused: finished without it if the log
        holds that same record already, else the refusal stands."""
        if record is None or self.codec is None:
            raise conflict
        # The store compares the stored record with the one given as stored
        # bytes, and a codec that encrypts encodes one value differently each
        # time: a retried finish (its first attempt's record committed, the
        # answer lost) would look like another writer's outcome. Compared
        # decoded, the same record is written already; finish without it.
        held = self.inner.load_log(workflow_id, since=record.position)
        if not held or held[0].position != record.position:
            raise conflict
        if not same_record(self._decode_record(held[0], workflow_id), record):
            raise conflict
        return self.inner.finish_workflow(
            workflow_id, status, encoded_result, error=error, executor_id=executor_id
        )

    def finish_many(self, finishes: Sequence[FinishWrite]) -> list[bool | Exception]:
        given = list(finishes)
        # A payload the codec refuses fails its own finish only, as finish_workflow's
        # refusal would: the others are written.
        answers: list[bool | Exception | None] = [None] * len(given)
        encoded: dict[int, FinishWrite] = {}
        for index, finish in enumerate(given):
            try:
                result, error = self._encode_result(finish.result, finish.error)
                record = None if finish.record is None else self._encode_record(finish.record)
            except Exception as exc:
                answers[index] = exc
                continue
            encoded[index] = attrs.evolve(finish, result=result, error=error, record=record)
        for index, stored in zip(
            encoded, self.inner.finish_many(list(encoded.values())), strict=True
        ):
            answers[index] = stored
        settled: list[bool | Exception] = []
        for index, (finish, found) in enumerate(zip(given, answers, strict=True)):
            assert found is not None
            answer: bool | Exception = found
            sent = encoded.get(index)
            if isinstance(answer, RecordConflict) and sent is not None:
                try:
                    answer = self._finish_past_conflict(
                        answer,
                        finish.workflow_id,
                        finish.status,
                        sent.result,
                        sent.error,
                        finish.executor_id,
                        finish.record,
                    )
                except Exception as exc:
                    answer = exc
            settled.append(answer)
        return settled

    def _encode_result(self, result: Outcome | None, error: str) -> tuple[Outcome | None, str]:
        """A run's result and its error text as stored."""
        encoded_result = self._encode_outcome(result)
        if isinstance(result, Failure) and error and self.codec is not None:
            # A failed run's error text is its failure's message (cut short): user
            # data. It is encoded with the failure, the column holds the encoded
            # failure's description, and `get_workflow` and listings give it back.
            encoded_result = Failure(
                serde.encode_error_info(result.error, self.codec, run_error=storable_error(error))
            )
            error = encoded_result.error.message
        return encoded_result, error

    def set_status(self, workflow_id: str, status: Status, **options: Unpack[StatusChange]) -> bool:
        return self.inner.set_status(workflow_id, status, **options)

    def bump_recovery(self, workflow_id: str) -> int:
        return self.inner.bump_recovery(workflow_id)

    def move_family(
        self, workflow_id: str, *, app_version: str, executor_id: str | None = None
    ) -> list[str]:
        return self.inner.move_family(workflow_id, app_version=app_version, executor_id=executor_id)

    def set_deadline(
        self, workflow_id: str, deadline: datetime | None, timeout: float | None
    ) -> bool:
        return self.inner.set_deadline(workflow_id, deadline, timeout)

    def set_attributes(self, workflow_id: str, attributes: Mapping[str, Any]) -> bool:
        # Attributes are kept in clear: they are meant to be searched (docs/operations.md).
        return self.inner.set_attributes(workflow_id, attributes)

    def rewind_workflow(
        self, workflow_id: str, position: int, **options: Unpack[Rewind]
    ) -> WorkflowRow:
        return self._decode_row(self.inner.rewind_workflow(workflow_id, position, **options))

    def continue_workflow(
        self, workflow_id: str, inputs: Any, **options: Unpack[Continuation]
    ) -> WorkflowRow:
        generation, executor_id = options["generation"], options["executor_id"]
        try:
            row = self.inner.continue_workflow(workflow_id, self._encode(inputs), **options)
        except RecordConflict:
            # The store knows a retried continue by its inputs, which an encrypting
            # codec encodes differently each time: compare them decoded here.
            current = self.get_workflow(workflow_id) if self.codec is not None else None
            archived = (
                self.inner.get_workflow(archive_id(workflow_id, generation))
                if current is not None
                else None
            )
            if (
                current is not None
                and archived is not None
                and archived.continued_as == workflow_id
                and current.generation == generation + 1
                and current.status is Status.PENDING
                and (executor_id is None or current.executor_id == executor_id)
                and current.inputs == inputs
            ):
                return current
            raise
        return self._decode_row(row)

    # -- messages and events ---------------------------------------------------------------

    def send_message(
        self, workflow_id: str, topic: str, payload: Any, **options: Unpack[SendOptions]
    ) -> bool:
        return self.inner.send_message(workflow_id, topic, self._encode(payload), **options)

    def create_and_send(
        self, row: WorkflowRow, message: OutgoingMessage, **options: Unpack[CreateAndSendOptions]
    ) -> tuple[WorkflowRow, bool, bool]:
        call_id, accept = options.get("call_id"), options.get("accept")
        # The run in the way is compared decoded, as a start compares it.
        checked = None if accept is None else (lambda found: accept(self._listed(found)))
        sent = self._encode_send(message)
        assert sent is not None
        stored, created, delivered = self.inner.create_and_send(
            self._encode_row(row), sent, call_id=call_id, accept=checked
        )
        return self._listed(stored), created, delivered

    def answer_message(self, workflow_id: str, message_id: int, event: EventWrite) -> bool:
        encoded = self._encode_event(event)
        assert encoded is not None
        return self.inner.answer_message(workflow_id, message_id, encoded)

    def peek_message(self, workflow_id: str, topic: str | tuple[str, ...]) -> Message | None:
        message = self.inner.peek_message(workflow_id, topic)
        if message is None or not (
            serde.is_encoded(message.payload) or serde.is_escaped(message.payload)
        ):
            return message
        what = f"message {message.message_id} on topic {message.topic!r}"
        return attrs.evolve(message, payload=self._decode(message.payload, what, workflow_id))

    def get_event(self, workflow_id: str, key: str) -> tuple[bool, Any]:
        found, value = self.inner.get_event(workflow_id, key)
        return found, self._decode(value, f"event {key!r}", workflow_id) if found else value

    def get_events(self, workflow_id: str) -> dict[str, Any]:
        return {
            key: self._decode(value, f"event {key!r}", workflow_id)
            for key, value in self.inner.get_events(workflow_id).items()
        }

    def record_step_heartbeat(
        self, workflow_id: str, beat: StepHeartbeat, *, executor_id: str | None = None
    ) -> bool:
        details = beat.details if beat.details is None else self._encode(beat.details)
        return self.inner.record_step_heartbeat(
            workflow_id, attrs.evolve(beat, details=details), executor_id=executor_id
        )

    # A cancel's reason is an operator's words, kept as a status detail is: no payload.
    def request_cancel(self, workflow_id: str, request: CancelRequest) -> CancelRequest:
        return self.inner.request_cancel(workflow_id, request)

    def get_cancel_request(self, workflow_id: str) -> CancelRequest | None:
        return self.inner.get_cancel_request(workflow_id)

    def clear_cancel_request(self, workflow_id: str) -> None:
        self.inner.clear_cancel_request(workflow_id)

    def set_parent_close(self, workflow_id: str, policy: str) -> None:
        self.inner.set_parent_close(workflow_id, policy)

    def get_parent_close(self, workflow_id: str) -> str | None:
        return self.inner.get_parent_close(workflow_id)

    def get_step_heartbeats(self, workflow_id: str) -> list[StepHeartbeat]:
        return [
            attrs.evolve(
                beat,
                details=self._decode(
                    beat.details,
                    f"the heartbeat details of step {beat.name!r} at position {beat.position}",
                    workflow_id,
                ),
            )
            for beat in self.inner.get_step_heartbeats(workflow_id)
        ]

    def subscribe(self, callback: Callable[[str, str], None]) -> Callable[[], None]:
        return self.inner.subscribe(callback)

    def delete_workflow(self, workflow_id: str) -> bool:
        return self.inner.delete_workflow(workflow_id)

    # -- schedule states: names and times only ------------------------------------------------

    def schedule_states(self) -> dict[str, ScheduleState]:
        return self.inner.schedule_states()

    def register_schedules(self, specs: Sequence[ScheduleSpec], now: datetime) -> None:
        self.inner.register_schedules(specs, now)

    def set_schedule_paused(self, name: str, paused: bool, now: datetime) -> bool:
        return self.inner.set_schedule_paused(name, paused, now)

    def request_schedule_trigger(self, name: str, at: datetime) -> datetime | None:
        return self.inner.request_schedule_trigger(name, at)

    def request_schedule_backfill(
        self, name: str, start: datetime, end: datetime, now: datetime
    ) -> tuple[datetime, datetime] | None:
        return self.inner.request_schedule_backfill(name, start, end, now)

    def clear_schedule_request(self, name: str, **options: Unpack[ClearRequest]) -> None:
        self.inner.clear_schedule_request(name, **options)

    def delete_schedule_state(self, name: str) -> bool:
        return self.inner.delete_schedule_state(name)

    def close(self) -> None:
        self.inner.close()
