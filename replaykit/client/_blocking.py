"""`Client`: start, message, read and operate runs from outside, on the caller's thread.

What a client is and is not is in the package's docstring (`replaykit/client/`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar, Unpack, cast

from replaykit import _waiting, serde
from replaykit._limits import checked_count, checked_interval, checked_wait
from replaykit.client._handles import ClientHandle, ResumedHandle
from replaykit.client._schedules import ClientSchedules
from replaykit.commands import run_deadline
from replaykit.errors import UnknownWorkflowError
from replaykit.log import Status
from replaykit.otel import current_trace_context
from replaykit.runtime import admin, debounce, updates
from replaykit.runtime.bulk import BulkActions
from replaykit.runtime.cancels import DEFAULT_GRACE, ask_to_cancel
from replaykit.runtime.listing import Listing
from replaykit.runtime.overlaps import enqueue_planned, keyed_start, known_concurrency_queue
from replaykit.runtime.queues import check_partition_key
from replaykit.runtime.retries import RetryingStore
from replaykit.runtime.run_filters import ListFilters
from replaykit.runtime.starts import (
    RunPlacement,
    placed,
    store_start,
    store_start_and_send,
    written_here,
)
from replaykit.runtime.waits import wait_event
from replaykit.serde import PayloadCodec
from replaykit.stores.base import OutgoingMessage, Store, WorkflowFilter, WorkflowRow
from replaykit.stores.codec import with_codec

__all__ = ["Client", "ClientHandle", "ResumedHandle"]

T = TypeVar("T")
log = logging.getLogger("replaykit.client")

#: How long a start's check of the running engines is reused (seconds).
_ENGINE_CHECK_KEPT = 5.0


def _check_name(name: object, what: str) -> None:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(
            f"{what}: the workflow name is {name!r}; pass the name a @workflow registered "
            "(replaykit workflows versions lists what the running engines run)"
        )


class Client(ClientSchedules, BulkActions, Listing):
    """Starts, messages, reads and operates runs on a store without running any.

    `Client()` opens what `Engine()` would (REPLAYKIT_URL, else SQLite at
    ./replaykit.db); `Client("postgresql://...")` or `Client(store)` another.
    `app_version` is the version runs it starts are stamped with, and
    `executor_id` the engine its queue-less starts go to; both may be given
    per call instead. `poll_interval` bounds how long a wait goes without
    looking at the store when no notification comes (SQLite notifies only
    within one process). `codec` is the payload codec the engines use
    (`Engine(codec=...)`): what the client sends and starts is encoded with it,
    and what it reads decoded.

    A start that no running engine may run (no engine of its version runs, its
    executor's engine is down, or an engine of the version wrote that it cannot
    run the workflow) logs a warning; with `strict=True` it is refused with
    `UnknownWorkflowError` and nothing is written.
    """

    def __init__(
        self,
        target: str | Store | None = None,
        *,
        app_version: str | None = None,
        executor_id: str | None = None,
        poll_interval: float = 0.5,
        max_payload_bytes: int = serde.DEFAULT_MAX_PAYLOAD_BYTES,
        codec: PayloadCodec | None = None,
        strict: bool = False,
    ) -> None:
        # Checked before the store is opened: a refused argument leaves nothing open.
        poll_interval = checked_interval(poll_interval, "Client(poll_interval=...)")
        checked_count(max_payload_bytes, "Client(max_payload_bytes=...)", minimum=1)
        self._closed = False
        self.strict = strict
        self._engine_checks: dict[tuple[str, str, str | None, str | None], tuple[float, str]] = {}
        # The engines' retry policy: the store retries what may run twice; inside
        # it, the engines' payload codec (give the client the one they use).
        self.codec = codec
        self.store: Store = cast(
            Store,
            RetryingStore(
                with_codec(admin.open_store_for(target, who="Client"), codec),
                stop=lambda: self._closed,
            ),
        )
        self.app_version = app_version
        self.executor_id = executor_id
        self.poll_interval = poll_interval
        self.max_payload_bytes = max_payload_bytes
        self._lock = threading.Lock()
        self._waiters: dict[tuple[str, str], set[Callable[[], None]]] = {}
        self._unsubscribe: Callable[[], None] | None = None
        self.updater = updates.Updater(
            self.store,
            self.listen,
            poll_interval=poll_interval,
            max_payload_bytes=max_payload_bytes,
            trace_context=current_trace_context,
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Client app_version={self.app_version!r} executor_id={self.executor_id!r}>"

    def close(self) -> None:
        """Release the store (idempotent). Handles made by this client stop working."""
        if self._closed:
            return
        self._closed = True
        with self._lock:
            unsubscribe, self._unsubscribe = self._unsubscribe, None
        if unsubscribe is not None:
            unsubscribe()
        self.store.close()

    @property
    def closed(self) -> bool:
        """Whether `close()` was called."""
        return self._closed

    # -- starting runs --------------------------------------------------------------------

    def start(
        self,
        name: str,
        /,
        *args: Any,
        workflow_id: str | None = None,
        queue: str | None = None,
        app_version: str | None = None,
        executor_id: str | None = None,
        timeout: timedelta | float | None = None,
        deadline: datetime | None = None,
        concurrency_key: str | None = None,
        concurrency_limit: int = 1,
        overlap: str = "allow",
        attributes: Mapping[str, Any] | None = None,
        shard_key: str | None = None,
        **kwargs: Any,
    ) -> ClientHandle:
        """Start a run of the workflow registered as `name`, for engines to run.

        With `queue`, the run is ENQUEUED there (as `enqueue` with its
        defaults); without, it is PENDING for the engine `executor_id` names,
        which is told at once. Stamped with `app_version` (or the client's);
        neither a version nor, without a queue, an executor id given raises
        `ValueError`. Idempotent by `workflow_id`: the same workflow with the
        same arguments returns the existing run; another workflow or other
        arguments raise `WorkflowIdConflict`.

        `timeout` (a timedelta or seconds) and `deadline` (an aware datetime)
        bound the run as in `Engine.start`, the earlier winning: a timeout
        counts from now (this machine's clock), or, with `queue`, from the
        claim. The engine running it cancels it when it passes.

        `concurrency_key`, `concurrency_limit` and `overlap` as `Engine.start` takes
        them: any engine that claims runs the keyed run when its key has a slot.
        `attributes`: the run's searchable key/values (docs/operations.md);
        `shard_key`: where its rows are placed, as `Engine.start` takes it.
        """
        _check_name(name, "Client.start")
        what = f"Client.start({name!r}, ...)"
        keyed = keyed_start(concurrency_key, concurrency_limit, overlap, what)
        if keyed is not None and queue is not None:
            raise ValueError(
                f"{what}: a concurrency_key puts the run on a queue of its key's own; it takes "
                f"no queue={queue!r} (to limit a queue's runs per key, enqueue with "
                "partition_key= on a Queue declared with partition_concurrency=)"
            )
        if keyed is not None:
            seconds, deadline = run_deadline(timeout, deadline, what=what)
            deadline = keyed.deadline(seconds, deadline, lambda: datetime.now(UTC))
            return self.enqueue(
                keyed.queue.name,
                name,
                *args,
                workflow_id=workflow_id,
                app_version=app_version,
                deadline=deadline,
                partition_key=keyed.key,
                overlap=keyed.overlap,
                attributes=attributes,
                shard_key=shard_key,
                **kwargs,
            )
        if queue is not None:
            return self.enqueue(
                queue,
                name,
                *args,
                workflow_id=workflow_id,
                app_version=app_version,
                timeout=timeout,
                deadline=deadline,
                attributes=attributes,
                shard_key=shard_key,
                **kwargs,
            )
        self._check_open()
        seconds, deadline = run_deadline(timeout, deadline, what=f"Client.start({name!r}, ...)")
        version = self._version(name, app_version)
        target = executor_id or self.executor_id
        if not target:
            raise ValueError(
                f"Client.start({name!r}, ...) has no engine to run it: pass queue='...' (any "
                "engine listening to that queue claims the run; the usual way) or "
                "executor_id='...' (the engine with that executor id runs it: at once if it "
                "is live, else when it launches); either may also be given to Client(...)"
            )
        row = self._new_row(
            name,
            args,
            kwargs,
            workflow_id,
            version,
            executor_id=target,
            timeout=seconds,
            deadline=deadline,
            attributes=attributes,
            shard_key=shard_key,
        )
        stored, ours = self._create(row)
        if ours:
            self._hand_over(stored)
        return ClientHandle(self, stored.workflow_id)

    def enqueue(
        self,
        queue: str,
        name: str,
        /,
        *args: Any,
        workflow_id: str | None = None,
        priority: int = 0,
        dedup_id: str | None = None,
        delay: timedelta | float | None = None,
        if_exists: str = "raise",
        app_version: str | None = None,
        timeout: timedelta | float | None = None,
        deadline: datetime | None = None,
        partition_key: str | None = None,
        overlap: str = "allow",
        attributes: Mapping[str, Any] | None = None,
        shard_key: str | None = None,
        **kwargs: Any,
    ) -> ClientHandle:
        """Put a run of the workflow registered as `name` on `queue` (ENQUEUED until claimed).

        As `Engine.enqueue`: lower `priority` first; a `dedup_id` a live run of
        the queue holds raises `DuplicateDedupId` (or, with
        `if_exists="return"`, gives that run's handle); `delay` holds it back;
        a used `workflow_id` returns its run for the same workflow and
        arguments and raises `WorkflowIdConflict` otherwise. Only engines of
        the stamped version claim it. `timeout` counts from the claim,
        `deadline` holds from now (the run can time out while queued).
        `partition_key` puts the run in that key's partition of the queue, and
        `overlap` says what happens while a run of that key is live there;
        `shard_key` as for `start`.
        """
        _check_name(name, "Client.enqueue")
        what = f"Client.enqueue({queue!r}, {name!r}, ...)"
        check_partition_key(partition_key, what)
        self._check_open()
        if if_exists not in ("raise", "return"):
            raise ValueError(f"if_exists must be 'raise' or 'return', got {if_exists!r}")
        seconds, deadline = run_deadline(timeout, deadline, what=what)

        def create(dedup_id: str | None) -> str:
            row = self._new_row(
                name,
                args,
                kwargs,
                workflow_id,
                self._version(name, app_version),
                queue=queue,
                priority=priority,
                dedup_id=dedup_id,
                delay=delay,
                timeout=seconds,
                deadline=deadline,
                partition_key=partition_key,
                attributes=attributes,
                shard_key=shard_key,
            )
            stored, _ours = self._create(row)
            return stored.workflow_id

        run_id = enqueue_planned(
            self, queue, partition_key, overlap, dedup_id, if_exists, what, create
        )
        return ClientHandle(self, run_id)

    def _version(self, name: str, app_version: str | None) -> str:
        version = app_version or self.app_version
        if not version:
            raise ValueError(
                f"Client.start({name!r}, ...) needs the application version to stamp the run "
                "with: engines run only runs of their own version, and a Client, which imports "
                "no workflow code, cannot compute the default one (a digest of the workflows' "
                "source). Pass app_version='...' here or to Client(...), the same string your "
                "engines are given as Engine(app_version=...) (docs/client.md)"
            )
        return version

    def _new_row(
        self,
        name: str,
        args: Sequence[Any],
        kwargs: dict[str, Any],
        workflow_id: str | None,
        version: str,
        *,
        executor_id: str = "",
        **placement: Unpack[RunPlacement],
    ) -> WorkflowRow:
        if not isinstance(name, str):
            hint = getattr(name, "workflow_name", None)
            raise TypeError(
                f"Client.start takes a workflow's registered name, got {name!r}"
                + (f"; pass {hint!r}" if isinstance(hint, str) else "")
            )
        inputs = admin.encode_inputs(name, args, kwargs, max_bytes=self.max_payload_bytes)
        return admin.new_run_row(
            name,
            inputs,
            workflow_id=workflow_id,
            executor_id=executor_id,
            app_version=version,
            now=datetime.now(UTC),
            # The caller's span: the run's spans join its trace (replaykit.otel).
            trace_context=current_trace_context(),
            **placed(placement),
        )

    def _check_engines(self, row: WorkflowRow) -> str:
        """Why no running engine may run this start ("" if nothing known); refused if strict.

        The warning is logged once the run is stored (`_warn`): a start refused
        for another reason says only that. The answer is kept for a few seconds
        per workflow, version and executor: a loop of starts reads the
        heartbeats once, and warns once.
        """
        queue = row.queue if row.status is Status.ENQUEUED else None
        if queue is not None and known_concurrency_queue(queue) is not None:
            queue = None  # a keyed start's queue: every engine that claims meets it
        key = (row.name, row.app_version, row.executor_id or None, queue)
        now = time.monotonic()
        kept = self._engine_checks.get(key)
        if kept is not None and now - kept[0] <= _ENGINE_CHECK_KEPT:
            why, fresh = kept[1], False
        else:
            try:
                why = _waiting.start_warning(
                    self.store,
                    row.name,
                    row.app_version,
                    executor_id=row.executor_id or None,
                    queue=queue,
                )
            except Exception:
                if self.strict:
                    raise  # a strict start that cannot check is not made
                return ""  # a diagnostic only: the start itself says what is wrong
            self._engine_checks[key] = (now, why)
            fresh = True
        if not why:
            return ""
        start = f"start of workflow {row.name!r} (id {row.workflow_id!r})"
        if self.strict:
            raise UnknownWorkflowError(
                f"{start} refused (strict): {why}. Start an engine that runs it first, or "
                "start without strict to leave the run waiting for one"
            )
        return f"{start}: {why}" if fresh else ""

    @staticmethod
    def _warn(warning: str) -> None:
        if warning:
            log.warning("%s", warning)

    def _create(self, row: WorkflowRow) -> tuple[WorkflowRow, bool]:
        """Store the run; (the stored run, whether this call wrote it). What no running
        engine may run is refused first if strict, else warned of once it is stored."""
        warning = self._check_engines(row)
        stored, created = store_start(self.store, row)
        self._warn(warning)
        return stored, written_here(row, stored, created)

    def _hand_over(self, row: WorkflowRow) -> None:
        """Tell the engine of a PENDING run it has one, as a resume tells it."""
        # Re-affirming PENDING notifies ("resumed", id): a live engine with that
        # executor id and version dispatches it at once (another process's
        # engine on SQLite, which hears no notification, at its next sweep).
        self.store.set_status(row.workflow_id, Status.PENDING, only_from=(Status.PENDING,))
        try:
            holder = self.store.executor_holder(row.executor_id, row.app_version)
        except Exception:  # a diagnostic only
            return
        if not holder:
            log.warning(
                "workflow %r (id %r) waits PENDING for executor id %r (version %r), which no "
                "live engine holds now: it starts when such an engine launches (it recovers "
                "its runs). To have any engine of the version take it, start it with queue=",
                row.name,
                row.workflow_id,
                row.executor_id,
                row.app_version,
            )

    # -- finding and reading runs ----------------------------------------------------------

    def handle(self, workflow_id: str) -> ClientHandle:
        """A handle on an existing run; `WorkflowNotFound` if none has that id."""
        self._row(workflow_id)
        return ClientHandle(self, workflow_id)

    def _reading(self) -> None:
        self._check_open()

    def _writing(self) -> None:
        self._check_open()

    def _trace_context(self) -> str | None:
        return current_trace_context()

    def _stranded(self, where: WorkflowFilter, filters: ListFilters) -> list[WorkflowRow]:
        """PENDING and ENQUEUED runs stamped with another version than the client's
        `app_version` (of `executor_id`, if given): what its engines never pick up."""
        status, version = filters.get("status"), filters.get("version")
        if not self.app_version or status is not None or version is not None:
            raise ValueError(
                "list_workflows(stranded=True) lists the PENDING and ENQUEUED runs of "
                "versions other than the client's: give Client(app_version=...) the "
                "version your engines run, and pass no status= or version="
            )
        return admin.stranded_runs(
            self.store,
            app_version=self.app_version,
            executor_id=filters.get("executor_id"),
            where=where,
        )

    # -- messages and events ----------------------------------------------------------------

    # -- updates ----------------------------------------------------------------------------

    def update_with_start(
        self,
        workflow: str,
        name: str,
        /,
        *args: Any,
        workflow_id: str,
        start_args: Sequence[Any] = (),
        start_kwargs: Mapping[str, Any] | None = None,
        queue: str | None = None,
        executor_id: str | None = None,
        app_version: str | None = None,
        timeout: timedelta | float | None = None,
        update_id: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """As `Engine.update_with_start`, the run of the workflow registered as `workflow`
        (with `start_args` and `start_kwargs`) started as `start` starts it (on `queue`,
        or for the engine `executor_id` names) if `workflow_id` is free."""
        self._check_open()
        row = self._start_row(
            workflow, start_args, start_kwargs, workflow_id, queue, executor_id, app_version
        )
        call = self.updater.call(
            workflow_id, name, args, kwargs, update_id=update_id, timeout=timeout
        )
        start = functools.partial(self._create_and_send, row, accept=updates.refuse_finished(call))
        return self.updater.update(call, start, updates.registered_workflow(workflow))

    def debounce(
        self,
        key: str,
        period: timedelta | float,
        workflow: str,
        /,
        *args: Any,
        max_wait: timedelta | float | None = None,
        queue: str | None = None,
        executor_id: str | None = None,
        app_version: str | None = None,
        **kwargs: Any,
    ) -> str:
        """`Engine.debounce` from outside: the key's debouncer run (registered by every
        engine) is started on `queue`, or for the engine `executor_id` names, if the key
        has none; the workflow registered as `workflow` is looked up where it runs."""
        call = debounce.debounce_call(
            key, period, workflow, args, kwargs, max_wait, registered_here=False
        )
        answer = self.update_with_start(
            debounce.DEBOUNCER_NAME,
            debounce.DEBOUNCE_UPDATE,
            *call.update_args(),
            workflow_id=debounce.debouncer_id(key),
            start_args=[key],
            queue=queue,
            executor_id=executor_id,
            app_version=app_version,
        )
        return str(answer)

    def send_with_start(
        self,
        workflow: str,
        message: Any,
        /,
        topic: str | None = None,
        *,
        workflow_id: str,
        start_args: Sequence[Any] = (),
        start_kwargs: Mapping[str, Any] | None = None,
        queue: str | None = None,
        executor_id: str | None = None,
        app_version: str | None = None,
        idempotency_key: str | None = None,
    ) -> ClientHandle:
        """As `Engine.send_with_start`, for the workflow registered as `workflow` (with
        `start_args` and `start_kwargs`), started as `start` starts it."""
        self._check_open()
        row = self._start_row(
            workflow, start_args, start_kwargs, workflow_id, queue, executor_id, app_version
        )
        outgoing, call_id = admin.outgoing_message(
            workflow_id, message, topic, idempotency_key=idempotency_key, **self._delivery()
        )
        self._create_and_send(row, message=outgoing, call_id=call_id)
        return ClientHandle(self, workflow_id)

    def _start_row(
        self,
        name: str,
        args: Sequence[Any],
        kwargs: Mapping[str, Any] | None,
        workflow_id: str,
        queue: str | None,
        executor_id: str | None,
        app_version: str | None,
    ) -> WorkflowRow:
        """The row of a start with a message: on `queue`, else for the engine named."""
        _check_name(name, "Client.update_with_start / send_with_start")
        if not isinstance(workflow_id, str) or not workflow_id:
            raise TypeError(
                f"a start with a message names its run: workflow_id must be a non-empty str, "
                f"got {workflow_id!r}"
            )
        version = self._version(name, app_version)
        target = "" if queue is not None else (executor_id or self.executor_id or "")
        if queue is None and not target:
            raise ValueError(
                f"a start of {name!r} with a message has no engine to run it: pass queue='...' "
                "or executor_id='...' (here or to Client(...)), as for Client.start"
            )
        return self._new_row(
            name,
            args,
            dict(kwargs or {}),
            workflow_id,
            version,
            executor_id=target,
            queue=queue,
        )

    def _create_and_send(
        self,
        row: WorkflowRow,
        *,
        message: OutgoingMessage,
        call_id: str,
        accept: Callable[[WorkflowRow], None] | None = None,
    ) -> tuple[WorkflowRow, bool, bool]:
        """Store the run unless its id is taken (by this same start), and deliver."""
        warning = self._check_engines(row)
        stored, created, delivered = store_start_and_send(
            self.store, row, message, call_id=call_id, accept=accept
        )
        self._warn(warning)
        if written_here(row, stored, created) and row.queue is None:
            self._hand_over(stored)
        return stored, created, delivered

    def get_event(self, workflow_id: str, key: str, timeout: float | None = None) -> Any:
        """The latest value of a run's event `key`, waiting up to `timeout` for it; else None."""
        timeout = checked_wait(timeout, "get_event(timeout=...)")
        self._check_open()
        return wait_event(self.store, self.listen, workflow_id, key, timeout, self.poll_interval)

    # -- operating runs ----------------------------------------------------------------------

    def cancel(
        self,
        workflow_id: str,
        *,
        grace: float = DEFAULT_GRACE,
        reason: str = "",
        children: bool = True,
    ) -> bool:
        """Ask a run to cancel (`Engine.cancel`): the request is kept in the store, and
        the engine running the run raises `Cancelled` in it at its current yield when
        it next activates it (a wake-up, a recovery); `grace` seconds from now it may
        be stopped. A run that does not run (ENQUEUED, PARKED), or a second cancel,
        is stopped now as `terminate` does. False if it had finished.
        """
        return ask_to_cancel(
            self.store,
            datetime.now(UTC),
            workflow_id,
            grace=grace,
            reason=reason,
            children=children,
            stop=lambda wid, detail, kids: self.terminate(wid, children=kids, reason=detail),
        )

    def terminate(self, workflow_id: str, *, children: bool = True, reason: str = "") -> bool:
        """Mark a run CANCELLED now, with no cleanup (and its unfinished children);
        False if it had finished.

        The engine running it stops at its next record. `reason` is kept as the
        run's status detail; a later `resume` brings back the children this
        stop reached.
        """
        self._row(workflow_id)
        return admin.cancel_run(self.store, workflow_id, children=children, reason=reason)

    def resume(
        self,
        workflow_id: str,
        *,
        executor_id: str | None = None,
        app_version: str | None = None,
        timeout: timedelta | float | None = None,
        deadline: datetime | None = None,
    ) -> ResumedHandle:
        """Make a CANCELLED or PARKED run PENDING again, for its engine to continue it.

        The children its cancel cascaded to come back with it. It stays with
        its own executor id and version unless told others (`app_version`
        restamps it onto newer code, and moves its unfinished family with it in
        one transaction: children, grandchildren and the children of earlier
        generations still on another version; the handle's `moved` lists them,
        its `resumed` every run changed). An ENQUEUED run (delayed or not) starts
        now, PENDING for `executor_id` or the client's, which it then needs. A
        finished run is left as it is (fork it instead). A deadline that
        passed is dropped (one still ahead holds); `timeout` / `deadline` set
        a new one, as in `Engine.resume`.
        """
        row = self._row(workflow_id)
        seconds, deadline = run_deadline(timeout, deadline, what=f"resume({workflow_id!r})")
        target = executor_id
        if target is None and row.status is Status.ENQUEUED:
            target = self.executor_id  # it has no engine of its own yet
        resumed = admin.resume_family(
            self.store,
            workflow_id,
            executor_id=target,
            app_version=app_version,
            timeout=seconds,
            deadline=deadline,
        )
        return ResumedHandle(self, workflow_id, resumed)

    def fork(
        self,
        source_id: str,
        from_position: int,
        /,
        *,
        workflow_id: str | None = None,
        executor_id: str | None = None,
        app_version: str | None = None,
    ) -> ClientHandle:
        """Copy the run's records below `from_position` into a new PENDING run.

        The new run goes to `executor_id` and `app_version` (default: the
        source's), whose engine is told at once and runs it from there.
        """
        self._check_open()
        stored, _kept = admin.fork_run(
            self.store,
            source_id,
            from_position,
            workflow_id=workflow_id,
            executor_id=executor_id,
            app_version=app_version,
        )
        self._hand_over(stored)
        return ClientHandle(self, stored.workflow_id)

    def rewind(
        self,
        workflow_id: str,
        position: int,
        /,
        *,
        executor_id: str | None = None,
        app_version: str | None = None,
    ) -> ClientHandle:
        """Run a finished or failed run again from `position`, under its own id.

        The records below `position` are kept; the attempt that ended stays in the
        run's history. The run goes to `executor_id` and `app_version` (default: the
        run's), whose engine is told at once. A live run is refused: cancel it first.
        """
        self._check_open()
        stored = admin.rewind_run(
            self.store, workflow_id, position, executor_id=executor_id, app_version=app_version
        )
        self._hand_over(stored)
        return ClientHandle(self, workflow_id)

    # -- internals ---------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this Client is closed; create a new one")

    def _row(self, workflow_id: str) -> WorkflowRow:
        self._check_open()
        return admin.get_run(self.store, workflow_id)

    def _wait_finished(self, workflow_id: str, timeout: float | None) -> WorkflowRow:
        timeout = checked_wait(timeout, "result(timeout=...)")
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._notified(("finished", workflow_id)) as finished:
            while True:
                row = self._row(workflow_id)
                if row.status.is_terminal:
                    return row
                wait = self.poll_interval
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        why = _waiting.why_waiting(self.store, row)
                        raise _waiting.still_running(row, timeout, why)
                    wait = min(wait, left)
                finished.wait(wait)
                finished.clear()

    def listen(
        self, wakes: Iterable[tuple[str, str]], callback: Callable[[], None]
    ) -> Callable[[], None]:
        """Call `callback` (from any thread) when the store notifies any of `wakes`,
        e.g. [("finished", id)]; returns the function that stops it. The waits use it,
        and it takes what `Engine.listen` takes."""
        self._check_open()
        wakes = tuple(wakes)
        with self._lock:
            if self._unsubscribe is None:
                self._unsubscribe = self.store.subscribe(self._on_notify)
            for wake in wakes:
                self._waiters.setdefault(wake, set()).add(callback)

        def stop() -> None:
            with self._lock:
                for wake in wakes:
                    callbacks = self._waiters.get(wake)
                    if callbacks is not None:
                        callbacks.discard(callback)
                        if not callbacks:
                            del self._waiters[wake]

        return stop

    @contextlib.contextmanager
    def _notified(self, wake: tuple[str, str]) -> Iterator[threading.Event]:
        event = threading.Event()
        stop = self.listen((wake,), event.set)
        try:
            yield event
        finally:
            stop()

    def _on_notify(self, kind: str, key: str) -> None:
        with self._lock:
            callbacks = list(self._waiters.get((kind, key), ()))
        for callback in callbacks:
            callback()
