"""replaykit/stores/_subscribers.py: the callbacks a store tells about its notifications."""

from __future__ import annotations

import logging

import pytest

from replaykit.stores._subscribers import Subscribers


def test_each_callback_hears_each_notification_until_it_is_removed() -> None:
    subscribers = Subscribers()
    first: list[tuple[str, str]] = []
    second: list[tuple[str, str]] = []
    remove_first = subscribers.add(lambda kind, key: first.append((kind, key)))
    subscribers.add(lambda kind, key: second.append((kind, key)))
    subscribers.deliver("queue", "mail")
    remove_first()
    remove_first()  # removing twice is harmless
    subscribers.deliver("message", "r-1")
    assert first == [("queue", "mail")]
    assert second == [("queue", "mail"), ("message", "r-1")]


def test_a_failing_callback_is_logged_and_the_others_still_hear(
    caplog: pytest.LogCaptureFixture,
) -> None:
    subscribers = Subscribers()
    heard: list[str] = []

    def broken(kind: str, key: str) -> None:
        raise RuntimeError("listener bug")

    subscribers.add(broken)
    subscribers.add(lambda kind, key: heard.append(key))
    with caplog.at_level(logging.ERROR, logger="replaykit.stores"):
        subscribers.deliver("queue", "mail")
    assert heard == ["mail"]
    assert "failed on queue:mail" in caplog.text and "listener bug" in caplog.text
