"""What an idle engine costs its database: statements per minute, by statement.

    python -m bench.bench_idle [--seconds 30] [--pg URL]

One engine on PostgreSQL (LISTEN on, the default), nothing to run, measured after a
few seconds of launch: every statement it sends is counted in this process (psycopg's
`Cursor.execute` and `executemany`, wrapped before the engine opens its pool), for
`--seconds`. Three cases in the same run: an engine that defines no schedule, one
that defines a schedule firing once a year (so no tick falls in the window), and one
with that schedule that also listens to an empty queue, as a worker does. Printed:
statements per minute of each, each statement's share, the ratio against the target
of issue "beyond one server" (under 10 a minute), and the WAL the server wrote in the
window (the whole server's: on a machine where anything else writes, an upper bound).
Nothing is asserted.

Where the statements went (docs/performance.md): a beat is one statement (the
heartbeat upsert and the takeover of dead engines' runs together), the executor hold
is watched on its socket rather than pinged, runs resumed elsewhere and schedule
states are heard by notification (read again after a reconnect, and otherwise every
300 polls), an empty queue is claimed from when a note says a run was put on it (or
every 60 s), so an idle engine's statements are its beat, every lease_seconds / 3, and
two a minute for each queue it listens to.
"""

from __future__ import annotations

import argparse
import collections
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

TARGET_PER_MINUTE = 10
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"


class StatementCounter:
    """Counts the statements this process sends through psycopg, by their first words."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self._patched: list[tuple[type, str, Callable[..., Any]]] = []

    def install(self) -> None:
        # `Connection.execute` sends through a cursor's `execute`: counted there, once.
        for cls, name in ((psycopg.Cursor, "execute"), (psycopg.Cursor, "executemany")):
            original = getattr(cls, name)
            self._patched.append((cls, name, original))
            setattr(cls, name, self._counting(original))

    def uninstall(self) -> None:
        for cls, name, original in self._patched:
            setattr(cls, name, original)
        self._patched.clear()

    def _counting(self, original: Callable[..., Any]) -> Callable[..., Any]:
        counter = self

        def counted(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            text = query if isinstance(query, str) else repr(query)
            with counter._lock:
                counter.counts[" ".join(text.split())[:70]] += 1
            return original(self, query, *args, **kwargs)

        return counted

    @contextmanager
    def window(self) -> Iterator[collections.Counter[str]]:
        with self._lock:
            self.counts.clear()
        taken: collections.Counter[str] = collections.Counter()
        yield taken
        with self._lock:
            taken.update(self.counts)


def wal_position(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        found = conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()
        return int(found[0]) if found else 0


def measure(
    url: str, seconds: float, *, with_schedule: bool, with_queue: bool = False
) -> tuple[collections.Counter[str], int]:
    from replaykit import Engine, Queue, workflow
    from replaykit.runtime.schedules import Schedule

    counter = StatementCounter()
    counter.install()
    try:
        schema = f"bench_idle_{uuid.uuid4().hex[:8]}"
        queues = [Queue("bench-idle-queue").name] if with_queue else None
        with Engine(f"{url}?schema={schema}", executor_id="idle", queues=queues) as engine:
            if with_schedule:

                @workflow(name="bench-idle-yearly", replace=True)
                def yearly(tick: Any) -> Any:
                    return None
                    yield

                engine.schedules.add(Schedule("0 0 1 1 *", yearly, "bench-idle-yearly"))
            time.sleep(3)  # past launch and recovery
            wal_before = wal_position(url)  # outside the counted window
            with counter.window() as taken:
                time.sleep(seconds)
            wal = wal_position(url) - wal_before
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        return taken, wal
    finally:
        counter.uninstall()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_idle")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--pg", default=DEFAULT_PG)
    args = parser.parse_args(argv)
    cases = (
        ("no schedule", False, False),
        ("one schedule", True, False),
        ("one schedule, one queue (a worker)", True, True),
    )
    for label, with_schedule, with_queue in cases:
        taken, wal = measure(
            args.pg, args.seconds, with_schedule=with_schedule, with_queue=with_queue
        )
        total = sum(taken.values())
        per_minute = total * 60 / args.seconds
        print(
            f"idle engine, {label}: {per_minute:.0f} statements a minute "
            f"({per_minute / TARGET_PER_MINUTE:.1f}x the target of {TARGET_PER_MINUTE}), "
            f"{wal * 60 / args.seconds / 1024:.1f} KiB of WAL a minute (the server's)"
        )
        for text, count in taken.most_common():
            print(f"  {count * 60 / args.seconds:6.1f}/min  {text}")


if __name__ == "__main__":
    main()
