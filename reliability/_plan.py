"""Random work for the scenarios: scripts of steps, sleeps and `All`s; ping-pong pairs;
inboxes fed from outside. A plan is JSON, so a worker process reads the same one."""

from __future__ import annotations

import random
from typing import Any

__all__ = ["mix", "random_script"]


def random_script(
    rng: random.Random, length: int, step_seconds: tuple[float, float], sleep_seconds: float
) -> list[Any]:
    items: list[Any] = []
    for pos in range(length):
        roll = rng.random()
        if roll < 0.6:
            items.append(["step", f"k{pos}", round(rng.uniform(*step_seconds), 3)])
        elif roll < 0.8:
            items.append(["sleep", round(rng.uniform(0.0, sleep_seconds), 3)])
        else:
            children = rng.randint(2, 3)
            items.append(
                [
                    "all",
                    [
                        [f"k{pos}.{i}", round(rng.uniform(*step_seconds), 3)]
                        for i in range(children)
                    ],
                ]
            )
    return items


def mix(
    rng: random.Random,
    prefix: str,
    *,
    scripts: int,
    length: int,
    pairs: int = 0,
    rounds: int = 0,
    inboxes: int = 0,
    messages: int = 0,
    keyed: bool = True,
    step_seconds: tuple[float, float] = (0.01, 0.1),
    sleep_seconds: float = 0.3,
) -> dict[str, list[dict[str, Any]]]:
    """A plan: runs to start (pongers before their pingers) and messages to send."""
    start: list[dict[str, Any]] = []
    send: list[dict[str, Any]] = []
    for i in range(scripts):
        items = random_script(rng, length, step_seconds, sleep_seconds)
        start.append({"wf": "rel-script", "id": f"{prefix}script-{i}", "args": [items]})
    for i in range(pairs):
        ping, pong = f"{prefix}ping-{i}", f"{prefix}pong-{i}"
        expect = [{"seq": n, "from": ping} for n in range(rounds)]
        start.append({"wf": "rel-ponger", "id": pong, "args": [rounds, ping], "expect": expect})
        seconds = round(rng.uniform(*step_seconds), 3)
        start.append(
            {
                "wf": "rel-pinger",
                "id": ping,
                "args": [rounds, pong, seconds],
                "expect": list(range(rounds)),
            }
        )
    for i in range(inboxes):
        wid = f"{prefix}inbox-{i}"
        start.append(
            {
                "wf": "rel-inbox",
                "id": wid,
                "args": [messages, "ext"],
                "expect": [{"n": n} for n in range(messages)],
            }
        )
        for n in range(messages):
            key = f"{wid}:{n}" if keyed else None
            send.append({"to": wid, "message": {"n": n}, "topic": "ext", "key": key})
    return {"start": start, "send": send}
