"""The floor: the raw driver doing one insert + commit per iteration.

And, for the concurrent case, the *batched ceiling*: the same rows written 100 per
statement and commit on one connection (PostgreSQL: `INSERT ... SELECT FROM unnest`;
SQLite: 100 inserts in one transaction), which is what a group commit can reach at best.

What a durable step cannot beat on one connection: a step's record is at least
one committed row. PostgreSQL: psycopg 3, one connection, autocommit inserts
(one round trip each, server-side prepared after psycopg's prepare threshold).
SQLite: sqlite3 with the pragmas `replaykit.stores.sqlite` sets on its writer
(WAL, synchronous=NORMAL) and its transaction form (BEGIN IMMEDIATE ... COMMIT).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from bench.measure import cpu_per, timed_cpu
from bench.worker import Worker

__all__ = ["Floor"]

# Roughly the shape of a step record: the run's id, a position, a small JSON outcome.
_CREATE = """
CREATE TABLE floor (
    workflow_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    PRIMARY KEY (workflow_id, position)
)
"""
_OUTCOME = '{"value": 1}'


class Floor(Worker):
    def __init__(self, spec: Mapping[str, Any]) -> None:
        super().__init__(spec)
        self._insert: Any = None
        self._insert_many: Any = None
        self._close: Any = None

    def setup(self) -> dict[str, Any]:
        info = self._open_postgres() if self.store == "postgres" else self._open_sqlite()
        self.warm_up()
        return info

    def _open_postgres(self) -> dict[str, Any]:
        import psycopg
        from psycopg import sql as pgsql

        conn = psycopg.connect(self.target["url"], autocommit=True)
        schema = pgsql.Identifier(self.target["schema"])
        conn.execute(pgsql.SQL("CREATE SCHEMA {}").format(schema))
        conn.execute(pgsql.SQL("SET search_path TO {}").format(schema))
        conn.execute(_CREATE)
        sql = "INSERT INTO floor (workflow_id, position, outcome) VALUES (%s, %s, %s)"

        def insert(key: str, position: int) -> None:
            conn.execute(sql, (key, position, _OUTCOME))

        many = (
            "INSERT INTO floor (workflow_id, position, outcome) "
            "SELECT * FROM unnest(%s::text[], %s::int[], %s::text[])"
        )

        def insert_many(key: str, positions: range) -> None:
            count = len(positions)
            conn.execute(many, ([key] * count, list(positions), [_OUTCOME] * count))

        self._insert, self._insert_many, self._close = insert, insert_many, conn.close
        return {"driver": f"psycopg {psycopg.__version__}", "server": conn.info.server_version}

    def _open_sqlite(self) -> dict[str, Any]:
        conn = sqlite3.connect(self.target["path"], isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(_CREATE)
        sql = "INSERT INTO floor (workflow_id, position, outcome) VALUES (?, ?, ?)"

        def insert(key: str, position: int) -> None:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(sql, (key, position, _OUTCOME))
            conn.execute("COMMIT")

        def insert_many(key: str, positions: range) -> None:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(sql, [(key, position, _OUTCOME) for position in positions])
            conn.execute("COMMIT")

        self._insert, self._insert_many, self._close = insert, insert_many, conn.close
        return {"driver": f"sqlite3 (SQLite {sqlite3.sqlite_version})"}

    def _inserts(self, tag: str, count: int) -> dict[str, Any]:
        insert = self._insert

        def go() -> None:
            for i in range(count):
                insert(tag, i)

        total, cpu, _ = timed_cpu(self.local_server, go)
        return {
            "metrics": {
                "ops": count,
                "total_s": total,
                "ms_per_op": total / count * 1000,
                "ops_per_s": count / total,
                **cpu_per(cpu, count, "op"),
            }
        }

    # The floor runs as many inserts as the case commits steps.

    def case_floor(self, tag: str, sizes: Mapping[str, int]) -> dict[str, Any]:
        return self._inserts(tag, sizes["ops"])

    def case_sequential(self, tag: str, sizes: Mapping[str, int]) -> dict[str, Any]:
        return self._inserts(tag, sizes["workflows"] * sizes["steps"])

    def case_concurrent(self, tag: str, sizes: Mapping[str, int]) -> dict[str, Any]:
        count = sizes["workflows"] * sizes["steps"]
        result = self._inserts(tag, count)
        insert_many = self._insert_many
        batch = 100

        def go() -> None:
            for first in range(0, count, batch):
                insert_many(f"{tag}-batched", range(first, min(first + batch, count)))

        total, _, _ = timed_cpu(self.local_server, go)
        result["metrics"]["batched_total_s"] = total
        result["metrics"]["batched_ops_per_s"] = count / total
        return result

    def teardown(self) -> None:
        if self._close is not None:
            self._close()
