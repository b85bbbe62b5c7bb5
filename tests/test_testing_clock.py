"""replaykit/testing/_clock.py: the kit's virtual clock, which also delivers the test's
scripted messages when their time comes; arrivals win ties with timers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from replaykit.testing._clock import KitClock

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _clock(*due: tuple[float, int]) -> tuple[KitClock, list[tuple[int, datetime]]]:
    delivered: list[tuple[int, datetime]] = []
    clock = KitClock(T0)
    clock.attach([(at(s), i) for s, i in due], lambda index, when: delivered.append((index, when)))
    return clock, delivered


def test_a_jump_past_a_message_stops_at_it_and_delivers_it_first() -> None:
    clock, delivered = _clock((10, 0), (20, 1))
    clock.jump_to(at(60))  # the engine's next timer is a minute away
    assert delivered == [(0, at(10))] and clock.now() == at(10)
    clock.jump_to(at(60))
    assert delivered == [(0, at(10)), (1, at(20))] and clock.now() == at(20)
    clock.jump_to(at(60))  # nothing left: the jump goes all the way
    assert clock.now() == at(60)


def test_a_timer_due_with_a_message_waits_until_the_message_arrived() -> None:
    clock, delivered = _clock((30, 0))
    clock.advance(30)
    assert not clock.passed(at(30))  # the message due at 30 s is not in yet
    assert clock.passed(at(29))  # a timer due before the message fires first
    clock.deliver_due()
    assert delivered == [(0, at(30))] and clock.passed(at(30))


def test_messages_arrive_one_at_a_time_in_arrival_order() -> None:
    clock, delivered = _clock((5, 2), (5, 1), (1, 0))
    assert clock.deliver_next() and clock.deliver_next() and clock.deliver_next()
    assert [index for index, _ in delivered] == [0, 1, 2]
    assert not clock.deliver_next()


def test_a_completion_added_later_is_delivered_in_its_turn() -> None:
    clock, delivered = _clock((50, 0))
    clock.add(at(5), 7)
    clock.jump_to(at(100))
    assert delivered == [(7, at(5))]


def test_a_dead_process_cannot_move_time_and_a_crash_spends_lost_time_again() -> None:
    clock, delivered = _clock((10, 0))
    clock.autojump = False
    clock.jump_to(at(60))
    assert clock.now() == T0 and delivered == []
    clock.autojump = True
    clock.move_to(at(40))
    clock.rewind(at(20))
    assert clock.now() == at(20)
    clock.rewind(at(30))  # a rewind never moves forward
    assert clock.now() == at(20)
