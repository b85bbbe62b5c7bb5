"""Set iteration, id()/hash(), and module globals changed from a workflow body."""

from replaykit import Step, workflow

SEEN: list[str] = []
COUNTS: dict[str, int] = {}
total = 0


def record(value: object) -> None:
    pass


@workflow
def over_sets(names: list[str]):
    for name in set(names):  # expect: RK108
        yield Step("record", record, name)
    for name in {"a", "b"}:  # expect: RK108
        yield Step("record", record, name)
    unique = {n.lower() for n in names}
    firsts = [n[0] for n in unique]  # expect: RK108
    for index, name in enumerate(list(unique | {"z"})):  # expect: RK108
        yield Step("record", record, (index, name))
    yield Step("record", record, firsts)


@workflow
def sorted_sets_are_fine(names: list[str]):
    unique = set(names)
    for name in sorted(unique):
        yield Step("record", record, name)
    if "a" in unique:
        yield Step("record", record, len(unique))


@workflow
def identities(value: object):
    key = id(value)  # expect: RK109
    bucket = hash(str(value)) % 8  # expect: RK109
    yield Step("record", record, (key, bucket))


@workflow
def globals_changed(name: str):
    global total
    total += 1  # expect: RK110
    SEEN.append(name)  # expect: RK110
    COUNTS[name] = 1  # expect: RK110
    yield Step("record", record, total)


@workflow
def reading_globals_is_fine(name: str):
    count = COUNTS.get(name, 0) + len(SEEN) + total
    yield Step("record", record, count)
