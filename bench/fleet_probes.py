"""What the fleet benchmarks read of a running fleet from outside it: finished runs,
sleeping runs (each a query on a connection of its own) and a process's resident set.
Shared by bench_fleet and bench_sleepers, which must not import each other."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def finished_runs(pg: str, schema: str) -> Iterator[Callable[[], int]]:
    """A probe of how many runs finished: one COUNT on a connection of its own."""
    import psycopg
    from psycopg import sql

    query = sql.SQL("SELECT count(*) FROM {}.workflows WHERE status = 'SUCCESS'").format(
        sql.Identifier(schema)
    )
    with psycopg.connect(pg, autocommit=True) as conn:

        def count() -> int:
            row = conn.execute(query).fetchone()
            return int(row[0]) if row else 0

        yield count


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def sleeping(pg: str, schema: str) -> int:
    """How many runs have recorded their sleep (position 1 of the log)."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(pg, autocommit=True) as conn:
        found = conn.execute(
            sql.SQL(
                "SELECT count(*) FROM {}.workflows w WHERE status = 'PENDING' AND EXISTS "
                "(SELECT 1 FROM {}.records r WHERE r.workflow_id = w.workflow_id "
                "AND r.position = 1)"
            ).format(sql.Identifier(schema), sql.Identifier(schema))
        ).fetchone()
        return int(found[0]) if found else 0
