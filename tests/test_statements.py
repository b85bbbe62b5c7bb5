"""The two SQL dialects answer one set of questions under one set of names, and the
memory store names its twin of each (procrastinate's queries with their in-memory
twin keyed by the same names are the model)."""

from __future__ import annotations

import inspect

import pytest

from replaykit.stores._statements import Statements
from replaykit.stores.base import Store
from replaykit.stores.memory import NO_TWIN, STATEMENT_TWINS, MemoryStore

POSTGRES = Statements("replaykit.stores.postgres", "statements.sql")
SQLITE = Statements("replaykit.stores.sqlite", "statements.sql")


def _shared(statements: Statements) -> set[str]:
    return set(statements) - set(statements.only)


def test_both_dialects_define_the_same_names() -> None:
    only_postgres = _shared(POSTGRES) - _shared(SQLITE)
    only_sqlite = _shared(SQLITE) - _shared(POSTGRES)
    assert not only_postgres, (
        f"{sorted(only_postgres)}: in postgres/statements.sql, not in sqlite/statements.sql; "
        "write its SQLite twin under the same name, or say '-- only: <why>' under its name"
    )
    assert not only_sqlite, (
        f"{sorted(only_sqlite)}: in sqlite/statements.sql, not in postgres/statements.sql; "
        "write its PostgreSQL twin under the same name, or say '-- only: <why>' under its name"
    )


@pytest.mark.parametrize("statements", [POSTGRES, SQLITE], ids=["postgres", "sqlite"])
def test_a_statement_one_dialect_keeps_to_itself_has_no_twin_in_the_other(
    statements: Statements,
) -> None:
    other = SQLITE if statements is POSTGRES else POSTGRES
    # Said to be the dialect's own, yet the other defines it too: one of them is wrong.
    assert not set(statements.only) & set(other), sorted(set(statements.only) & set(other))
    assert all(len(why) > 20 for why in statements.only.values()), statements.only


def test_the_memory_store_answers_every_shared_statement() -> None:
    shared = _shared(POSTGRES)
    answered = set(STATEMENT_TWINS) | set(NO_TWIN)
    assert not shared - answered, (
        f"{sorted(shared - answered)}: no twin in memory.STATEMENT_TWINS (nor a reason in "
        "NO_TWIN); name the MemoryStore method that answers the same question"
    )
    assert not answered - shared, f"{sorted(answered - shared)}: no such shared statement"
    assert not set(STATEMENT_TWINS) & set(NO_TWIN)


def test_each_twin_is_a_public_method_of_the_memory_store() -> None:
    protocol = {name for name, _ in inspect.getmembers(Store) if not name.startswith("_")}
    for statement, method in STATEMENT_TWINS.items():
        assert not method.startswith("_"), f"{statement}: {method!r} is private"
        assert callable(getattr(MemoryStore, method, None)), f"{statement}: {method!r}"
    # Nearly all are the protocol's own; a reader of a run's heartbeats and the batch
    # read of wake-ups (runtime/cold.py) are the exceptions.
    beside = {m for m in STATEMENT_TWINS.values() if m not in protocol}
    assert beside == {"read_heartbeats", "load_runs"}
