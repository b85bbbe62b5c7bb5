"""WorkPool: the scheduler's threads for work whose answer nobody waits on."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from conftest import wait_for
from replaykit.runtime.pool import WorkPool


def test_every_call_runs_with_its_arguments() -> None:
    pool = WorkPool(4, thread_name_prefix="t-pool")
    seen: list[tuple[int, str]] = []
    lock = threading.Lock()

    def note(i: int, tag: str) -> None:
        with lock:
            seen.append((i, tag))

    for i in range(200):
        pool.submit(note, i, "x")
    pool.shutdown(wait=True)
    assert sorted(seen) == [(i, "x") for i in range(200)]


def test_threads_start_on_demand_up_to_the_limit_and_idle_ones_are_reused() -> None:
    pool = WorkPool(3, thread_name_prefix="t-pool")
    release = threading.Event()
    names: set[str] = set()
    lock = threading.Lock()

    def blocked() -> None:
        with lock:
            names.add(threading.current_thread().name)
        release.wait(10)

    for _ in range(5):  # more calls than threads: two wait their turn
        pool.submit(blocked)
    wait_for(lambda: len(names) == 3)
    assert names == {"t-pool_0", "t-pool_1", "t-pool_2"}
    release.set()
    pool.shutdown(wait=True)

    # One call at a time, each after the last ended: the first thread does them all.
    serial = WorkPool(3, thread_name_prefix="t-serial")
    used: list[str] = []
    for _ in range(5):
        done = threading.Event()

        def note(done: threading.Event = done) -> None:
            used.append(threading.current_thread().name)
            done.set()

        serial.submit(note)
        assert done.wait(10)
        wait_for(lambda: serial._idle == 1)  # the thread is back, waiting
    serial.shutdown(wait=True)
    assert set(used) == {"t-serial_0"}


def test_a_failing_call_is_logged_and_its_thread_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pool = WorkPool(1, thread_name_prefix="t-fail")
    after = threading.Event()

    def fails() -> None:
        raise ValueError("boom in a pool")

    with caplog.at_level(logging.ERROR, logger="replaykit.engine"):
        pool.submit(fails)
        pool.submit(after.set)
        assert after.wait(10)
    pool.shutdown(wait=True)
    assert "work handed to t-fail failed" in caplog.text
    assert "boom in a pool" in caplog.text


def test_no_work_after_shutdown_and_pending_calls_can_be_dropped() -> None:
    pool = WorkPool(1, thread_name_prefix="t-shut")
    started, release = threading.Event(), threading.Event()
    ran: list[int] = []

    def first() -> None:
        started.set()
        release.wait(10)
        ran.append(1)

    pool.submit(first)
    assert started.wait(10)
    pool.submit(ran.append, 2)  # queued behind the running call
    pool.shutdown(wait=False, cancel_pending=True)
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(ran.append, 3)
    release.set()
    pool.shutdown(wait=True)  # a second shutdown waits for what runs, nothing more
    assert ran == [1]


def test_shutdown_without_cancelling_runs_what_was_queued() -> None:
    pool = WorkPool(1, thread_name_prefix="t-drain")
    release = threading.Event()
    ran: list[int] = []
    pool.submit(release.wait, 10)
    for i in range(5):
        pool.submit(ran.append, i)
    release.set()
    pool.shutdown(wait=True)
    assert ran == [0, 1, 2, 3, 4]


def test_a_waiting_shutdown_with_a_timeout_drops_what_has_not_started_by_then() -> None:
    """A patient close drains the bookkeeping writes, but a store that answers slowly
    (or not at all) must not hold it for ever."""
    pool = WorkPool(1, thread_name_prefix="t-out-of-time")
    release = threading.Event()
    ran: list[int] = []
    pool.submit(release.wait)
    for i in range(5):
        pool.submit(ran.append, i)
    began = time.monotonic()
    assert pool.shutdown(wait=True, timeout=0.2) is False
    assert time.monotonic() - began < 5
    release.set()
    wait_for(lambda: not any(t.name.startswith("t-out-of-time") for t in threading.enumerate()))
    assert ran == []  # dropped, not run after the shutdown returned


def test_a_waiting_shutdown_within_its_timeout_runs_everything_queued() -> None:
    pool = WorkPool(2, thread_name_prefix="t-pool")
    ran: list[int] = []
    for i in range(50):
        pool.submit(ran.append, i)
    assert pool.shutdown(wait=True, timeout=10) is True
    assert sorted(ran) == list(range(50))


def test_a_pool_thread_may_shut_its_own_pool_down() -> None:
    pool = WorkPool(2, thread_name_prefix="t-self")
    done = threading.Event()

    def close_from_inside() -> None:
        pool.shutdown(wait=True)  # must not wait for itself
        done.set()

    pool.submit(close_from_inside)
    assert done.wait(10)


def test_a_pool_needs_a_thread() -> None:
    with pytest.raises(ValueError, match="at least one thread"):
        WorkPool(0, thread_name_prefix="t-none")


def test_a_thread_that_cannot_start_leaves_the_work_to_those_running(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    pool = WorkPool(4, thread_name_prefix="t-start")
    release = threading.Event()
    ran: list[str] = []
    real_start = threading.Thread.start
    pool.submit(release.wait, 10)  # the first thread starts, and is kept busy

    def refuse(thread: threading.Thread) -> None:
        if thread.name.startswith("t-start"):
            raise RuntimeError("can't start new thread")
        real_start(thread)

    monkeypatch.setattr(threading.Thread, "start", refuse)
    with caplog.at_level(logging.WARNING, logger="replaykit.engine"):
        pool.submit(ran.append, "queued")  # no new thread: it waits for the first
    assert "could not start another t-start thread" in caplog.text
    monkeypatch.setattr(threading.Thread, "start", real_start)
    release.set()
    wait_for(lambda: ran == ["queued"])
    pool.shutdown(wait=True)  # only started threads are waited for


def test_a_pool_that_cannot_start_its_first_thread_says_so_and_queues_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool = WorkPool(2, thread_name_prefix="t-none-started")

    def refuse(thread: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    with pytest.raises(RuntimeError, match="can't start new thread"):
        pool.submit(print, "never")
    monkeypatch.undo()
    ran: list[int] = []
    pool.submit(ran.append, 1)  # threads can start again: only this call runs
    pool.shutdown(wait=True)
    assert ran == [1]
