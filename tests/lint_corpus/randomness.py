"""Randomness and random UUIDs in a workflow body."""

import os
import random
import secrets
import uuid
from random import choice
from uuid import uuid4 as new_id

from replaykit import Step, workflow


def record(value: object) -> None:
    pass


@workflow
def dice():
    a = random.random()  # expect: RK102
    b = random.randint(1, 6)  # expect: RK102
    c = choice(["a", "b"])  # expect: RK102
    d = os.urandom(8)  # expect: RK102
    e = secrets.token_hex(8)  # expect: RK102
    f = random.Random()  # expect: RK102
    g = random.SystemRandom(5)  # expect: RK102
    yield Step("record", record, [a, b, c, d, e, f, g])


@workflow
def ids():
    a = uuid.uuid4()  # expect: RK103
    b = new_id()  # expect: RK103
    c = uuid.uuid1()  # expect: RK103
    yield Step("record", record, [a, b, c])


@workflow
def deterministic(seed: int, name: str):
    # A generator seeded by the code and name-based UUIDs are deterministic.
    rng = random.Random(seed)
    value = rng.random()
    key = uuid.uuid5(uuid.NAMESPACE_URL, name)
    same = secrets.compare_digest(name, "x")
    yield Step("record", record, [value, key, same])
