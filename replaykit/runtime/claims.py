"""Claims: taking runs from queues, keeping this engine's lease, taking over dead ones.

One thread claims from the queues this engine listens to, as often as runs
arrive and room frees up, and beats the engine's heartbeat so that others see
it alive; runs of engines whose heartbeat stopped are taken over. What it
takes goes to `dispatch`; this room never runs a workflow itself.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta

from replaykit.errors import StoreUnavailable
from replaykit.log import Status
from replaykit.registry import registered
from replaykit.runtime.clock import Clock
from replaykit.runtime.fence import Fence
from replaykit.runtime.loop_thread import LoopThread
from replaykit.runtime.overlaps import known_concurrency_queue
from replaykit.runtime.queues import Queue, queue_named, registered_queues
from replaykit.stores.base import ClaimLimits, Store, WorkflowFilter, WorkflowRow

__all__ = ["CLAIM_SPACING", "EMPTY_RECHECK", "IN_FLIGHT_ROUNDS", "Claims"]

log = logging.getLogger("replaykit.engine")

# Claim rounds that follow each other this closely would each take a run or
# two of a steady stream of enqueues; waiting out the rest lets one claim take
# what arrived meanwhile. A lone enqueue after a quiet spell is claimed at once.
CLAIM_SPACING = 0.002

# How often runs ending in a drained queue may call a claim round. Every one of
# them did (an empty round of 2 ms on PostgreSQL each, 355 per 2,000 one-step
# runs); at most one per this long finds what came due or came from elsewhere
# nearly as soon.
DRAINED_RECHECK = 0.05
# A queue this engine finds nothing to claim in is checked, at most this often,
# for runs enqueued longer ago than STRANDED_AFTER under another application
# version, which no engine of this version will ever take (docs/versioning.md).
STRANDED_CHECK_SECONDS = 60.0
STRANDED_AFTER = timedelta(seconds=30)
# Where the store's notes reach every sharer, a queue found empty (no ENQUEUED run at
# all, delayed ones included) is claimed from again when a note says a run was put on
# it, after a relisten, or after this many seconds: an idle engine then costs its
# database two statements a minute for each queue, not a claim every poll.
EMPTY_RECHECK = 60.0

# How often an engine that claims looks in the store for queues of keyed starts
# (`start(..., concurrency_key=...)`, runtime/overlaps.py) that it has not met yet:
# where notes reach every sharer, a note names such a queue when a run is put on it,
# and the store is read only at launch and after a relisten.
KEYED_QUEUES_RECHECK = 10.0

# How many claim rounds' worth of runs (`capacity` each) may be under way in this
# engine (activations queued or running) before it claims more. Claims used to go on
# while the scheduler had runs to take: a queue of 200,000 sleepers put 8,700
# activations in flight in one engine, each with its claimed row, its log and its
# interpreter, and the resident set kept the pages of that peak (docs/performance.md,
# "Sleepers"); each run also waited seconds between its records behind the others.
# A run that suspends or finishes makes room: what the queue holds waits in the store.
# Eight rounds (1,024 runs at the default `max_workers`) cover a claim statement's
# second or so on a loaded database with a queue of 200,000 (four starved the engines:
# they fell asleep at 670 runs a second where unbounded claims reached 1,180).
IN_FLIGHT_ROUNDS = 8

# How often an engine whose runs in flight fill its room looks again (no statement:
# it reads its own count).
ROOM_RECHECK = 0.01

Dispatch = Callable[[str, WorkflowRow | None, bool], None]


class Claims(LoopThread):
    """Queue claiming, the heartbeat and takeovers, with the state they need.

    A producer (`queue_names` empty) claims nothing and takes no run over.

    `dispatch(workflow_id, row, fresh)` starts an activation of what was
    claimed (`row` as claimed, `fresh` when it has no log yet); `forget(id)`
    is told about runs taken over, whose cached state may be stale.
    """

    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        executor_id: str,
        app_version: str,
        queue_names: list[str] | None,
        capacity: int,
        lease_seconds: float,
        poll_interval: float,
        dispatch: Dispatch,
        forget: Callable[[str], None],
        fence: Fence,
        notes_reach_every_sharer: bool = False,
        busy: Callable[[], int] = lambda: 0,
    ) -> None:
        self.store = store
        # Activations under way in the engine: claims stop at `IN_FLIGHT_ROUNDS` rounds.
        self._busy = busy
        self._held_back = False
        self._fence = fence
        self.clock = clock
        self.executor_id = executor_id
        self.app_version = app_version
        # None: every registered queue, looked up afresh on each claim round.
        self._queue_names = queue_names
        # Queues claimed beside the listened ones, even by a producer: the hold queues of
        # the schedules this engine fires (`also_claim`).
        self._also: list[str] = []
        self.capacity = capacity
        self.lease_seconds = lease_seconds
        self.poll_interval = poll_interval
        self._dispatch = dispatch
        self._forget = forget
        self._lock = threading.Lock()
        # queue -> runs of it this engine runs, for the queues with a `worker_concurrency`
        self._held: dict[str, set[str]] = {}
        # Queues whose last claim round took less than the room it had and which no
        # limit holds back: a run of theirs ending frees no room anyone waits for,
        # so it calls a round only if none ran for DRAINED_RECHECK seconds (runs come
        # due, or are enqueued by processes whose notifications never reach here).
        self._drained: set[str] = set()
        # Queues found empty, and when (only where notes reach every sharer); a note of
        # an enqueue bumps its queue's count, so a round that read the queue empty
        # before the note does not mark it empty after it (`_found_empty`).
        self._watch_empty = notes_reach_every_sharer
        self._empty: dict[str, float] = {}
        self._enqueues: dict[str, int] = {}
        self._last_round = 0.0
        self._keyed_checked: float | None = None  # never: at the first round
        self._stranded_checked: dict[str, float] = {}
        self._stranded_warned: set[tuple[str, frozenset[str]]] = set()
        super().__init__("replaykit-queues")

    def wake(self, queue: str | None = None) -> None:
        """Something was enqueued on `queue` (None: anywhere, or notes may have been
        lost), or room freed up: claim again soon."""
        if queue is not None and self._claims_keyed():
            keyed = known_concurrency_queue(queue)
            if keyed is not None and queue not in self._also:
                self._also_add(keyed.name)
        with self._lock:
            if queue is None:
                self._empty.clear()
                self._keyed_checked = None
            else:
                self._empty.pop(queue, None)
                self._enqueues[queue] = self._enqueues.get(queue, 0) + 1
        self._wanted.set()

    def run_done(self, queue: str, workflow_id: str) -> None:
        with self._lock:
            runs = self._held.get(queue)
            if runs is not None:
                runs.discard(workflow_id)
            drained = queue in self._drained
        if not drained or time.monotonic() - self._last_round >= DRAINED_RECHECK:
            self._wanted.set()

    def listened(self) -> list[Queue]:
        if self._queue_names is None:
            queues = registered_queues()
        else:
            queues = [queue_named(name) for name in self._queue_names]
        known = {queue.name for queue in queues}
        with self._lock:
            also = [name for name in self._also if name not in known]
        return queues + [queue_named(name) for name in also]

    def queue_depths(self, cap: int) -> list[tuple[str, int]]:
        """ENQUEUED runs of each listened queue (up to `cap`): one bounded read per queue,
        for the queue-depth gauge (on the metric reader's thread, never the scheduler's)."""
        depths = []
        for queue in self.listened():
            waiting = self.store.list_workflows(
                WorkflowFilter(status=Status.ENQUEUED, queue=queue.name, limit=cap, payloads=False)
            )
            depths.append((queue.name, len(waiting)))
        return depths

    def also_claim(self, queue_name: str) -> None:
        """Claim from `queue_name` too, whatever the engine listens to: a schedule this
        engine fires holds its ticks there (runtime/schedule_loop.py)."""
        self._also_add(queue_name)
        self.wake()

    def _also_add(self, queue_name: str) -> None:
        with self._lock:
            if queue_name not in self._also:
                self._also.append(queue_name)

    def _claims_keyed(self) -> bool:
        """Whether this engine claims the keyed starts of others: any but a producer."""
        return self._queue_names != []

    def _find_keyed_queues(self) -> None:
        """Claim from the queues of keyed starts that hold waiting runs (one grouped count),
        at the first round, after a relisten, and every KEYED_QUEUES_RECHECK seconds where
        notes do not reach every sharer."""
        if not self._claims_keyed():
            return
        checked = self._keyed_checked
        now = time.monotonic()
        if checked is not None and (self._watch_empty or now - checked < KEYED_QUEUES_RECHECK):
            return
        self._keyed_checked = now
        counts = self.store.count_workflows_by(WorkflowFilter(status=Status.ENQUEUED), "queue")
        for name in counts:
            keyed = known_concurrency_queue(name) if isinstance(name, str) else None
            if keyed is not None:
                self._also_add(keyed.name)

    def running(self) -> tuple[list[str], list[str]]:
        """(the workflows registered, the queues listened to) now, for the heartbeat.

        With `queues=None` that is every `Queue` declared so far, so a queue
        declared after the engine started shows from the next beat on.
        """
        # Named queues as named, declared or not: this beat must never raise.
        if self._queue_names is not None:
            names = set(self._queue_names)
        else:
            names = {queue.name for queue in registered_queues()}
        with self._lock:
            names.update(self._also)
        return sorted(registered()), sorted(names)

    def claim_now(self) -> int:
        """One claim round over the listened queues; returns how many runs it took."""
        return self._round()[0]

    def _round(self) -> tuple[int, bool]:
        """(runs taken, whether some queue filled all the room it had: more may wait)."""
        if self._fence.lost:
            return 0, False  # fenced (fence.py): the id's runs are another engine's now
        room = self.capacity * IN_FLIGHT_ROUNDS - self._busy()
        # Less room than half a round: wait for more rather than claim a few at a time.
        self._held_back = room < max(self.capacity // 2, 1)
        if self._held_back:
            return 0, False
        taken = 0
        saturated = False
        now = self.clock.now()
        self._last_round = time.monotonic()
        for queue in self.listened():
            with self._lock:
                held = self._held.setdefault(queue.name, set())
                capacity = min(self.capacity, room - taken)
                if queue.worker_concurrency is not None:
                    capacity = min(capacity, queue.worker_concurrency - len(held))
            if capacity <= 0 or self._still_empty(queue.name):
                continue
            enqueues = self._enqueues.get(queue.name, 0)
            rows = self.store.claim(
                queue.name,
                executor_id=self.executor_id,
                app_version=self.app_version,
                limits=ClaimLimits(
                    capacity,
                    queue.concurrency,
                    queue.rate_limit,
                    partitioned=queue.partitioned,
                    partition_concurrency=queue.partition_concurrency,
                    partition_rate_limit=queue.partition_rate_limit,
                    partition_weights=queue.partition_weights,
                ),
                now=now,
            )
            if not rows and not self._found_empty(queue.name, enqueues):
                try:
                    self._warn_if_stranded(queue.name)
                except Exception:  # a diagnostic: it must not stop the claims
                    log.debug(
                        "could not check queue %r for stranded runs", queue.name, exc_info=True
                    )
            if queue.worker_concurrency is not None:
                # Only a per-worker limit counts what this engine runs of its queue: for
                # any other, an id kept per run was weight (a million sleepers' ids).
                with self._lock:
                    held.update(row.workflow_id for row in rows)
            for row in rows:
                # A claimed run may have a log (one released by a stopped worker);
                # one claimed for the first time starts without reading it.
                self._forget(row.workflow_id)
                self._dispatch(row.workflow_id, row, row.has_log is False)
            taken += len(rows)
            saturated = saturated or len(rows) >= capacity
            limited = (
                queue.concurrency is not None
                or queue.rate_limit is not None
                or queue.worker_concurrency is not None
                or queue.partitioned
            )
            with self._lock:
                if len(rows) < capacity and not limited:
                    self._drained.add(queue.name)
                else:
                    self._drained.discard(queue.name)
        return taken, saturated

    def _still_empty(self, queue: str) -> bool:
        """Whether the queue was found empty lately and no note said otherwise since."""
        with self._lock:
            found = self._empty.get(queue)
        return found is not None and time.monotonic() - found < EMPTY_RECHECK

    def _found_empty(self, queue: str, enqueues: int) -> bool:
        """After a claim that took nothing: whether the queue holds no run at all, which
        is then left alone until a note names it (where notes reach every sharer)."""
        if not self._watch_empty:
            return False
        waiting = self.store.list_workflows(
            WorkflowFilter(status=Status.ENQUEUED, queue=queue, limit=1, payloads=False)
        )
        if waiting:
            return False
        with self._lock:
            if self._enqueues.get(queue, 0) == enqueues:  # no note since the claim
                self._empty[queue] = time.monotonic()
        return True

    def _warn_if_stranded(self, queue: str) -> None:
        """Say so when a queue holds old runs of application versions this engine never claims.

        Their usual cause is a producer and a worker that compute different
        default versions because they import different workflows.
        """
        checked = time.monotonic()
        last = self._stranded_checked.get(queue)
        if last is not None and checked - last < STRANDED_CHECK_SECONDS:
            return
        self._stranded_checked[queue] = checked
        cutoff = self.clock.now() - STRANDED_AFTER  # engines stamp created_at by their clocks
        waiting = self.store.list_workflows(
            WorkflowFilter(status=Status.ENQUEUED, queue=queue, until=cutoff, limit=100)
        )
        stranded = [row for row in waiting if row.app_version != self.app_version]
        versions = frozenset(row.app_version for row in stranded)
        if not stranded or (queue, versions) in self._stranded_warned:
            return
        self._stranded_warned.add((queue, versions))
        log.warning(
            "queue %r holds %s%d run(s) enqueued over %ds ago under application version(s) %s; "
            "this engine (executor %r) runs version %r and never claims them. If the process "
            "that enqueued them runs this same code, give both the same app_version "
            "(Engine(app_version=...)); if they are an older release's, run a process of "
            "that version to drain them (docs/versioning.md)",
            queue,
            "at least " if len(waiting) == 100 else "",
            len(stranded),
            STRANDED_AFTER.total_seconds(),
            ", ".join(sorted(repr(v) for v in versions)),
            self.executor_id,
            self.app_version,
        )

    def _loop(self) -> None:
        last_beat = 0.0
        last_claim = 0.0
        while not self._closed:
            try:
                monotonic = time.monotonic()
                if monotonic - last_beat >= self.lease_seconds / 3:
                    last_beat = monotonic
                    self._beat()
                self._find_keyed_queues()
                last_claim = time.monotonic()
                saturated = self._round()[1]
            except StoreUnavailable as exc:
                log.warning("queue claim failed (%s); retrying", exc)
                saturated = False
            except Exception:
                log.exception("queue loop failed; retrying")
                saturated = False
            if saturated:
                continue  # the room was filled: more runs may be ready right now
            if self._held_back:
                # Its runs in flight fill this engine: it claims again as they suspend
                # or finish, which it sees in its own count, not in the store.
                self._wanted.wait(ROOM_RECHECK)
                self._wanted.clear()
                continue
            # Woken by an enqueue, a finished run (room again) or the poll interval;
            # when every queue is empty, by a note or the next beat.
            self._wanted.wait(self._idle_wait())
            self._wanted.clear()
            spacing = CLAIM_SPACING - (time.monotonic() - last_claim)
            if spacing > 0:
                time.sleep(spacing)

    def _idle_wait(self) -> float:
        beat = self.lease_seconds / 3
        if self._watch_empty:
            with self._lock:
                empty = set(self._empty)
            if all(queue.name in empty for queue in self.listened()):
                return beat
        return min(self.poll_interval, beat)

    def announce(self) -> None:
        """The launch's heartbeat: the engine is alive and says what it runs, before it
        claims or takes over anything. Through a dropped connection, as every
        launch-time store call: a launch must not fail because one answer was lost."""
        workflows, queues = self.running()
        self.store.heartbeat(
            self.executor_id, self.app_version, self.clock.now(), workflows=workflows, queues=queues
        )

    def _beat(self) -> None:
        now = self.clock.now()
        if not self._keep_hold():
            return
        workflows, queues = self.running()
        # A producer runs what it starts and nothing else, not even the runs of a dead
        # engine; any other engine's beat takes those over in the same round trip.
        producer = self._queue_names == []
        for workflow_id in self.store.heartbeat(
            self.executor_id,
            self.app_version,
            now,
            workflows=workflows,
            queues=queues,
            lease_seconds=None if producer else self.lease_seconds,
        ):
            log.warning("took over workflow id %r from a dead engine", workflow_id)
            self._adopt(workflow_id)

    def _keep_hold(self) -> bool:
        """Whether this engine still holds its executor id (a server restart drops the lock,
        and takes it again here); False for good once another engine took it: the fence
        (fence.py) then stops this engine's writes, steps and claims, and says so."""
        return self._fence.keep()

    def _adopt(self, workflow_id: str) -> None:
        row = self.store.get_workflow(workflow_id)
        if row is not None and row.queue is not None:
            with self._lock:
                self._held.setdefault(row.queue, set()).add(workflow_id)
        # Another engine ran it meanwhile: what this one may hold of it is stale.
        self._forget(workflow_id)
        self._dispatch(workflow_id, None, False)
