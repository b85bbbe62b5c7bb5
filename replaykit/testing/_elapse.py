"""`elapse`: virtual time passing inside a step body, so that a test can stall an
attempt past its heartbeat timeout in no wall time."""

from __future__ import annotations

from datetime import timedelta

from replaykit._durations import as_seconds
from replaykit.interpreter import attempt_beats, step_context
from replaykit.runtime.beats import AttemptBeats
from replaykit.runtime.beats import elapse as elapse_in

__all__ = ["elapse"]


def elapse(duration: timedelta | float) -> None:
    """Let `duration` (a timedelta or seconds) of virtual time pass inside the step
    body that calls it, as a body busy that long would; for fakes under `run()`.

    The clock moves for the whole simulated process, as it would while a real body
    works. An attempt that has not beaten for longer than its step's
    `heartbeat_timeout` by then has timed out: its next `heartbeat()` stops it, and
    whatever it returns is dropped; it fails with `HeartbeatTimeout`, as a stalled
    attempt does in production, at the virtual instant its heartbeats expired.
    Outside a step body, `step_context()`'s error; on the wall clock (an `Engine`
    of your own), `RuntimeError`.
    """
    seconds = as_seconds(duration, "testing.elapse(duration)")
    assert seconds is not None
    beats = attempt_beats(step_context())
    if not isinstance(beats, AttemptBeats):
        raise RuntimeError(
            "testing.elapse() moves the virtual time of a step body run by replaykit.testing; "
            "this step context has no engine behind it"
        )
    elapse_in(beats, seconds)
