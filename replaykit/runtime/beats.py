"""Step heartbeats: what a step body reports while it runs, kept durable without
holding the body up, and the attempts whose heartbeats stopped.

Each attempt of a step has an `AttemptBeats` (made by `attempts()` and handed to
the body in its `StepContext`). A beat updates it in memory; the room's one
thread writes the latest to the store (`Store.record_step_heartbeat`), the first
beat of an attempt at once and then at most once per `WRITE_INTERVAL` seconds of
wall time, whatever the body's pace (a loop may beat a million times). The end
of the attempt writes what is still unwritten, on the driver's thread or awaited
off the loop, before the attempt's outcome goes on: a retry, here or in another
process, reads the last details, and a crash loses at most the last second's.

A write the store refuses because the run moved on (cancelled elsewhere, taken
over, deleted) stops the attempt's cancel scope, as the preempt watch does: the
body hears it at its next beat, which raises the runtime's stop signal. So does a
cancel made in this engine, which stops the scope itself.

The heartbeat timeout (`Step(heartbeat_timeout=)`) counts on the engine's clock
from the body's start and from each beat; `bodies.py` waits on it. An attempt
whose body ends after its expiry timed out all the same, whoever noticed first:
on virtual time that makes the verdict the same on every run.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from replaykit import serde
from replaykit.commands import Step
from replaykit.errors import (
    Cancelled,
    ControlSignal,
    HeartbeatTimeout,
    RecordConflict,
    RunNotPending,
    Stopped,
    WorkflowNotFound,
)
from replaykit.log import Status
from replaykit.runtime.clock import Clock, SystemClock, VirtualClock
from replaykit.runtime.host import CancelScope
from replaykit.stores.base import StepHeartbeat, Store, WorkflowRow

__all__ = ["VIRTUAL_LOOK", "WRITE_INTERVAL", "AttemptBeats", "StepBeats", "elapse"]

log = logging.getLogger("replaykit.engine")

#: The least wall time between two writes of one attempt's heartbeats, in seconds.
WRITE_INTERVAL = 1.0
#: How often a waiter looks at a heartbeat timeout on virtual time, in wall seconds:
#: the time moves only when a test moves it (`replaykit.testing.elapse`).
VIRTUAL_LOOK = 0.01
# A waiter on the wall clock wakes this much after an expiry, so that it has passed.
_PAST = 0.001
_NEVER = datetime.min.replace(tzinfo=UTC)
# How many recovered runs `StepBeats` remembers the first step of.
_RECOVERED_KEPT = 10_000


class AttemptBeats:
    """One attempt's heartbeats: the latest details, and when it last beat.

    Its state changes under the room's lock; its writes are one at a time under its
    own, so the last write is always of the latest beat.
    """

    __slots__ = (
        "_room",
        "_write_lock",
        "abandoned",
        "attempt",
        "body_ended_at",
        "child_path",
        "details",
        "earlier",
        "generation",
        "last_at",
        "needs_earlier",
        "next_write",
        "position",
        "queued",
        "refused",
        "scope",
        "seq",
        "started",
        "step_name",
        "stopped_body",
        "timeout",
        "workflow_id",
        "workflow_name",
        "written",
    )

    def __init__(
        self,
        room: StepBeats,
        row: WorkflowRow,
        command: Step[Any],
        position: int,
        attempt: int,
        child_path: tuple[int, ...],
        scope: CancelScope | None,
    ) -> None:
        self._room = room
        # Made by the first beat: most attempts never beat, and this is their hot path.
        self._write_lock: threading.Lock | None = None
        self.workflow_id = row.workflow_id
        self.workflow_name = row.name
        self.generation = row.generation
        self.step_name = command.name
        self.position = position
        self.attempt = attempt
        self.child_path = child_path
        self.scope = scope
        self.timeout = command.heartbeat_timeout
        #: Whether the details of an earlier attempt are worth a read of the store: a
        #: retry, or a step with a heartbeat timeout (`StepBeats.begin` adds the step a
        #: recovered run was at when it crashed).
        self.needs_earlier = attempt > 1 or self.timeout is not None
        self.earlier: Any = None
        self.started = False
        # The last beat, or the body's start (`body_started`, for a heartbeat timeout).
        self.last_at: datetime = _NEVER
        self.details: Any = None
        self.seq = 0  # beats so far
        self.written = 0  # the beats the store has seen (the last write's seq)
        self.next_write = 0.0  # monotonic time before which no write starts
        self.queued = False
        self.body_ended_at: datetime | None = None
        self.abandoned = False
        self.refused = ""  # why the store refused a write: the run moved on
        self.stopped_body = False  # a beat raised the stop signal into the body

    # -- the body's side --------------------------------------------------------------

    def beat(self, details: Any) -> None:
        room = self._room
        self._stop_if_told()
        now = room.clock.now()
        if self.timeout is not None and self.started and self._past(now):
            # Too late: the attempt timed out meanwhile; its waiter abandons it.
            self.abandoned = True
            self._stop_if_told()
        data = (
            None
            if details is None
            else serde.encode(
                details,
                what=f"the heartbeat details of {self._where()}",
                max_bytes=room.max_payload_bytes,
            )
        )
        with room.lock:
            if self._write_lock is None:
                self._write_lock = threading.Lock()
            self.details = data
            self.last_at = now
            self.seq += 1
            if self.queued:
                return
            self.queued = True
            due = self.next_write
        room.schedule(self, due)

    def _stop_if_told(self) -> None:
        why = ""
        if self.abandoned:
            why = (
                f"attempt {self.attempt} was abandoned after its heartbeat timeout: a new "
                "attempt may run, and whatever this one does from here is dropped"
            )
        elif self.refused:
            why = self.refused
        elif self.scope is not None and self.scope.cancelled:
            why = (
                "its run was cancelled"
                if self.scope.run_stopped
                else "the attempt was cancelled (its engine is closing, or its branch of a "
                "Race lost or an All failed)"
            )
        if not why:
            reason = self._room.cancel_asked(self.workflow_id)
            if reason is not None:
                said = f": {reason}" if reason else ""
                raise Cancelled(
                    f"{self._where()}: its run was asked to cancel{said}. heartbeat() raises "
                    "this so that the body may stop (or clean up and re-raise); the workflow "
                    "then gets Cancelled at this step's yield",
                    reason,
                )
        if why:
            self.stopped_body = True
            raise Stopped(
                f"{self._where()}: {why}. heartbeat() raises this so that the body stops; "
                "let it propagate (a finally block runs)"
            )

    # -- the runtime's side -------------------------------------------------------------

    def body_started(self) -> None:
        """The body begins: its heartbeat timeout counts from now."""
        now = self._room.clock.now()
        with self._room.lock:
            self.started = True
            if self.seq == 0:
                self.last_at = now

    def body_ended(self) -> None:
        """The body returned or raised: judged on this instant, whoever looks later."""
        if self.body_ended_at is None:
            self.body_ended_at = self._room.clock.now()

    def expired(self) -> bool:
        """Whether the heartbeats stopped for longer than the timeout (by the body's end)."""
        if self.timeout is None or not self.started:
            return False
        return self._past(self.body_ended_at or self._room.clock.now())

    def _past(self, at: datetime) -> bool:
        assert self.timeout is not None
        return at > self.last_at + timedelta(seconds=self.timeout)

    def seconds_left(self) -> float:
        """Wall seconds a waiter may sleep before looking at the expiry again."""
        clock = self._room.clock
        if self.timeout is None:
            return 3600.0
        if not isinstance(clock, SystemClock):
            return VIRTUAL_LOOK
        if not self.started:
            return self.timeout
        due = self.last_at + timedelta(seconds=self.timeout)
        return max((due - clock.now()).total_seconds(), 0.0) + _PAST

    def timed_out(self) -> HeartbeatTimeout:
        """Abandon the attempt; the error it fails with."""
        self.abandoned = True
        assert self.timeout is not None
        last = (
            f"it last beat at {self.last_at.isoformat()}"
            if self.seq
            else f"it never beat after it started at {self.last_at.isoformat()}"
        )
        return HeartbeatTimeout(
            f"{self._where()} went more than {self.timeout:g}s without a heartbeat on attempt "
            f"{self.attempt} ({last}; heartbeat_timeout={self.timeout:g}s), so the attempt "
            "was abandoned, and the step's Retry decides whether another runs. Call "
            "step_context().heartbeat() more often than that, or raise heartbeat_timeout",
            workflow_name=self.workflow_name,
            workflow_id=self.workflow_id,
            step_name=self.step_name,
            position=self.position,
            attempt=self.attempt,
        )

    def _where(self) -> str:
        child = f" (child {'.'.join(str(i) for i in self.child_path)})" if self.child_path else ""
        return (
            f"step {self.step_name!r} of workflow {self.workflow_name!r} (id "
            f"{self.workflow_id!r}) at position {self.position}{child}"
        )


class StepBeats:
    """The engine's step heartbeats: makes each attempt's, writes them from one thread.

    `begin` is called by `attempts()`; the drivers (steps.py) load what an earlier
    attempt beat before the body starts (`prepare`) and write what is left when it
    ends (`end`); `bodies.py` watches a heartbeat timeout.
    """

    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        executor_id: str,
        max_payload_bytes: int,
        interval: float = WRITE_INTERVAL,
    ) -> None:
        self.store = store
        self.clock = clock
        self.executor_id = executor_id
        self.max_payload_bytes = max_payload_bytes
        self.interval = interval
        self.lock = threading.Lock()
        self._cv = threading.Condition(self.lock)
        self._due: list[tuple[float, int, AttemptBeats]] = []
        self._jobs: collections.deque[Callable[[], None]] = collections.deque()
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._warned = False
        #: The reason of a cancel the run was asked for (None: none), asked at each beat:
        #: a cancel reaches a heartbeating body at its next `heartbeat()`.
        self.cancel_asked: Callable[[str], str | None] = lambda _workflow_id: None
        # Recovered runs: the (generation, recovery count) seen, and their first step's
        # position (`_first_since_recovery`).
        self._recovered: collections.OrderedDict[str, tuple[tuple[int, int], int]] = (
            collections.OrderedDict()
        )

    def begin(
        self,
        row: WorkflowRow,
        command: Step[Any],
        position: int,
        attempt: int,
        child_path: tuple[int, ...],
        scope: CancelScope | None,
        previous: AttemptBeats | None,
    ) -> AttemptBeats:
        """An attempt's heartbeats; `previous` is the attempt before it in this driver,
        whose details it starts from without asking the store."""
        beats = AttemptBeats(self, row, command, position, attempt, child_path, scope)
        if previous is not None:
            beats.earlier = previous.details if previous.seq else previous.earlier
            beats.needs_earlier = False
        elif row.recovery_attempts and self._first_since_recovery(row, position):
            beats.needs_earlier = True
        return beats

    def _first_since_recovery(self, row: WorkflowRow, position: int) -> bool:
        """Whether `position` is where a recovered run's activation carries out its first
        step: the one under way when its last process died (a composite's children share
        it). Its later steps are new, and reading the store for each would cost a
        recovered run one query a step until its first wait."""
        mark = (row.generation, row.recovery_attempts)
        with self.lock:
            seen = self._recovered.get(row.workflow_id)
            if seen is None or seen[0] != mark:
                self._recovered[row.workflow_id] = (mark, position)
                while len(self._recovered) > _RECOVERED_KEPT:
                    self._recovered.popitem(last=False)
                return True
            return seen[1] == position

    # -- before and after the body --------------------------------------------------------

    def prepare(self, beats: AttemptBeats) -> None:
        """Load what the step beat before this attempt, when worth a read (blocking)."""
        if beats.needs_earlier:
            beats.needs_earlier = False
            beats.earlier = self._read_earlier(beats)

    async def prepare_async(self, beats: AttemptBeats) -> None:
        """`prepare`, for an async body: the read runs on the room's thread."""
        if beats.needs_earlier:
            beats.needs_earlier = False
            beats.earlier = await self._off_loop(lambda: self._read_earlier(beats))

    def end(self, beats: AttemptBeats) -> None:
        """The attempt is over: write what it beat and the store has not seen (blocking)."""
        if beats.seq > beats.written:
            self.write(beats)

    async def end_async(self, beats: AttemptBeats) -> None:
        """`end`, for an async body: the write runs on the room's thread."""
        if beats.seq > beats.written:
            await self._off_loop(lambda: self.write(beats))

    def _read_earlier(self, beats: AttemptBeats) -> Any:
        try:
            stored = self.store.get_step_heartbeats(beats.workflow_id)
        except Exception as exc:  # an outage or a damaged row: the attempt starts afresh
            log.warning(
                "could not read the last heartbeat of %s: %s; the attempt starts with none",
                beats._where(),
                exc,
            )
            return None
        for beat in stored:
            if (
                beat.position == beats.position
                and beat.child_path == beats.child_path
                and beat.name == beats.step_name
                and beat.generation == beats.generation
            ):
                return beat.details
        return None

    # -- writing -------------------------------------------------------------------------

    def schedule(self, beats: AttemptBeats, due: float) -> None:
        """Have the room's thread write `beats` at monotonic time `due` (or now)."""
        with self._cv:
            if self._closed:
                beats.queued = False
                return
            heapq.heappush(self._due, (due, next(self._order), beats))
            self._start_locked()
            self._cv.notify()

    def write(self, beats: AttemptBeats) -> None:
        """Write the attempt's latest beat if the store has not seen it."""
        lock = beats._write_lock
        if lock is None:
            return  # it never beat
        with lock:
            with self.lock:
                seq, details, at = beats.seq, beats.details, beats.last_at
                if seq <= beats.written:
                    return
            beat = StepHeartbeat(
                beats.position,
                beats.step_name,
                beats.attempt,
                at,
                details,
                beats.child_path,
                beats.generation,
            )
            try:
                self.store.record_step_heartbeat(
                    beats.workflow_id, beat, executor_id=self.executor_id
                )
            except RunNotPending as exc:
                self._moved_on(
                    beats, f"its run is {exc.status} (a heartbeat's write found it so)", exc
                )
            except (RecordConflict, WorkflowNotFound) as exc:
                self._moved_on(beats, f"its run can no longer be written here ({exc})", exc)
            except (Exception, ControlSignal) as exc:  # an outage: the next beat tries again
                if not self._warned:
                    self._warned = True
                    log.warning("could not write the heartbeat of %s: %s", beats._where(), exc)
                return
            with self.lock:
                beats.written = max(beats.written, seq)

    def _moved_on(self, beats: AttemptBeats, why: str, exc: Exception) -> None:
        """The store refused a beat: the run is not this engine's to go on with."""
        with self.lock:
            beats.written = beats.seq  # nothing more to write for it
            beats.refused = why
        scope = beats.scope
        if scope is None:
            return
        if isinstance(exc, RunNotPending) and exc.status == Status.CANCELLED.value:
            scope.stop_run()  # a step cut short then records that it was
        else:
            scope.cancel()

    def _start_locked(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="replaykit-beats", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._cv:
                while True:
                    if self._closed and not self._jobs:
                        return
                    if self._jobs:
                        job: Callable[[], None] | None = self._jobs.popleft()
                        break
                    if self._due:
                        wait = self._due[0][0] - time.monotonic()
                        if wait <= 0:
                            _, _, beats = heapq.heappop(self._due)
                            beats.queued = False
                            # The next write of this attempt no sooner than this: a beat
                            # during the write below waits its turn.
                            beats.next_write = time.monotonic() + self.interval
                            job = None
                            break
                        self._cv.wait(wait)
                    else:
                        self._cv.wait()
            try:
                if job is not None:
                    job()
                else:
                    self.write(beats)
            except BaseException:  # the thread must outlive any one write
                log.exception("a step heartbeat's write failed")
            del job

    async def _off_loop(self, call: Callable[[], Any]) -> Any:
        """Run `call` on the room's thread and await its answer, from an event loop."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()

        def settle(answer: Any, error: BaseException | None) -> None:
            if done.cancelled():
                return
            if error is not None:
                done.set_exception(error)
            else:
                done.set_result(answer)

        def job() -> None:
            try:
                answer, error = call(), None
            except BaseException as exc:
                answer, error = None, exc
            # The loop may have closed meanwhile: nobody awaits the answer then.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, answer, error)

        with self._cv:
            if self._closed:
                return call()  # closing: the caller's own thread does it
            self._jobs.append(job)
            self._start_locked()
            self._cv.notify()
        return await done

    def close(self) -> None:
        """Write what is due no more; end the thread once its jobs are done."""
        with self._cv:
            self._closed = True
            self._due.clear()
            thread = self._thread
            self._cv.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)


def elapse(beats: AttemptBeats, seconds: float) -> None:
    """Let `seconds` of virtual time pass inside a step body (`replaykit.testing.elapse`)."""
    clock = beats._room.clock
    if not isinstance(clock, VirtualClock):
        raise RuntimeError(
            f"{beats._where()}: testing.elapse() moves the testing kit's virtual clock, "
            "and this engine runs on the wall clock, where time passes by itself"
        )
    clock.advance(seconds)
