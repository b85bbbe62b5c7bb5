"""The store's notifications routed alone, to a fake scheduler, wake-ups and claims
that note what they are asked (runtime/notes.py)."""

from __future__ import annotations

from replaykit.runtime.host import Wake
from replaykit.runtime.notes import Notes


class Asked:
    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def allow(self, workflow_id: str) -> None:
        self.calls.append(("allow", workflow_id))

    def release(self, workflow_id: str) -> None:
        self.calls.append(("release", workflow_id))

    def drop_warm(self, workflow_id: str) -> None:
        self.calls.append(("drop_warm", workflow_id))

    def dispatch(self, workflow_id: str) -> None:
        self.calls.append(("dispatch", workflow_id))

    def forget_finished(self, workflow_id: str | None = None) -> None:
        self.calls.append(("forget_finished", workflow_id))

    def message_arrived(self, workflow_id: str) -> None:
        self.calls.append(("message_arrived", workflow_id))

    def forget_deadline(self, workflow_id: str) -> None:
        self.calls.append(("forget_deadline", workflow_id))

    def notify(self, wake: Wake) -> None:
        self.calls.append(("notify", wake))

    def sweep_soon(self) -> None:
        self.calls.append(("sweep_soon", None))

    def schedules_changed(self) -> None:
        self.calls.append(("schedules_changed", None))


def _heard(kind: str, key: str) -> list[tuple[str, object]]:
    asked = Asked()
    notes = Notes(
        asked,
        asked,
        claim=lambda queue: asked.calls.append(("claim", queue)),
        schedules_changed=asked.schedules_changed,
    )
    notes.heard(kind, key)
    return asked.calls


def test_an_enqueued_run_starts_a_claim_round_and_wakes_nobody() -> None:
    assert _heard("enqueued", "q") == [("claim", "q")]


def test_a_resumed_run_is_taken_back_whatever_was_known_of_it() -> None:
    assert _heard("resumed", "r") == [
        ("forget_finished", "r"),
        ("allow", "r"),
        ("release", "r"),
        ("drop_warm", "r"),
        ("dispatch", "r"),
    ]


def test_a_deleted_run_is_forgotten_before_its_waiters_wake() -> None:
    assert _heard("deleted", "d") == [
        ("forget_finished", "d"),
        ("drop_warm", "d"),
        ("notify", ("deleted", "d")),
    ]


def test_a_relisten_forgets_every_finished_run_and_looks_again_at_what_notes_tell() -> None:
    assert _heard("relisten", "") == [
        ("forget_finished", None),
        ("sweep_soon", None),
        ("schedules_changed", None),
        ("claim", None),
    ]


def test_a_schedule_changed_elsewhere_wakes_the_schedule_loop_only() -> None:
    assert _heard("schedule", "nightly") == [("schedules_changed", None)]


def test_a_run_finished_elsewhere_is_dropped_and_its_deadline_forgotten() -> None:
    assert _heard("finished", "f") == [
        ("drop_warm", "f"),
        ("forget_deadline", "f"),
        ("notify", ("finished", "f")),
    ]


def test_a_message_wakes_its_waiters_and_the_run() -> None:
    assert _heard("message", "m") == [("notify", ("message", "m")), ("message_arrived", "m")]
