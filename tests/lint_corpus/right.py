"""Workflows that do it right: nothing here may be reported."""

import datetime
import os
import random
import time
import uuid
from collections.abc import Generator
from datetime import timedelta
from typing import Any

import replaykit as rk
from replaykit import All, Now, Race, Random, Recv, Sleep, Step, Uuid, logger, workflow

LIMITS = {"gold": 100}


def charge_card(order_id: str, amount: int) -> str:
    # Step bodies do I/O, read clocks and the environment: they run once per record.
    with open(os.environ.get("LEDGER", "/dev/null"), "a") as ledger:
        ledger.write(f"{time.time()} {order_id} {amount} {uuid.uuid4()}\n")
    return f"ch_{order_id}"


def ship(order_id: str) -> str:
    return f"parcel-{order_id}-{random.random()}"


@workflow
def checkout(order_id: str, amount: int, tier: str) -> Generator[Any, Any, str]:
    limit = LIMITS.get(tier, 10)
    if amount > limit:
        return "refused"
    charge = yield Step("charge", charge_card, order_id, amount)
    logger.info("charged %s", charge)
    started = yield Now()
    deadline = started + timedelta(days=1)
    winner, message = yield Race(Recv("confirm"), Sleep(timedelta(days=1)))
    if winner == 1:
        return f"expired at {deadline.isoformat()}"
    time = yield Now()  # a local named like the module shadows it
    stamp = time.isoformat()
    parcels = yield All(*(Step(f"ship-{i}", ship, order_id) for i in range(2)))
    return f"{parcels} {message} {stamp}"


@rk.workflow(name="right.draws")
def draws(names: list[str]):
    value = yield Random()
    key = yield Uuid()
    rng = random.Random(int(value * 1000))
    picked = rng.choice(sorted(set(names)))
    when = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
    return picked, key, when


@workflow
def uses_its_own_state(items: list[str]):
    seen: list[str] = []
    counts: dict[str, int] = {}
    for item in items:
        seen.append(item)
        counts[item] = counts.get(item, 0) + 1
    for item in sorted({i.upper() for i in items}):
        yield rk.Step("ship", ship, item)
    return seen, counts
