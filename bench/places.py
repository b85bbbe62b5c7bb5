"""Fresh places for each worker's data — a SQLite file, a PostgreSQL schema or database —
and their removal afterwards.

The orchestrator owns them (not the workers), so they are removed even when a
worker crashes or is killed.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, LiteralString
from urllib.parse import urlsplit, urlunsplit

__all__ = ["Places", "check_postgres"]

_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")


def check_postgres(url: str) -> tuple[str | None, str]:
    """(server version, "") if `url` answers, else (None, why not)."""
    try:
        import psycopg
    except ImportError:
        return None, "psycopg is not installed (pip install 'replaykit[postgres]')"
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            row = conn.execute("SHOW server_version").fetchone()
            return (str(row[0]) if row else "?"), ""
    except Exception as exc:
        return None, f"cannot connect to {url}: {exc}".strip()


def _admin(url: str, template: LiteralString, name: str) -> None:
    """Run `template` with `{}` standing for the identifier `name`, outside a transaction."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(sql.SQL(template).format(sql.Identifier(name)))


def _with_database(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{database}"))


class Places:
    def __init__(self, pg_url: str | None) -> None:
        self.pg_url = pg_url
        self.tmpdir = Path(tempfile.mkdtemp(prefix="replaykit-bench-"))
        self._cleanups: dict[str, Callable[[], None]] = {}

    def make(self, system: str, store: str, case: str) -> tuple[dict[str, Any], str]:
        """A new place for `system`'s data: (the worker's target, a key for `remove`)."""
        suffix = uuid.uuid4().hex[:8]
        name = f"rkbench_{system}_{case}_{suffix}"
        if not _NAME.match(name):
            raise ValueError(f"unsafe name {name!r}")
        if store == "sqlite":
            folder = self.tmpdir / name
            folder.mkdir()
            self._cleanups[name] = lambda: shutil.rmtree(folder, ignore_errors=True)
            return {"path": str(folder / "bench.db")}, name
        assert self.pg_url is not None
        pg_url = self.pg_url
        if system == "dbos":
            # DBOS wants a system database of its own; it creates it on launch.
            self._cleanups[name] = lambda: _admin(
                pg_url, "DROP DATABASE IF EXISTS {} WITH (FORCE)", name
            )
            return {"url": _with_database(pg_url, name)}, name
        self._cleanups[name] = lambda: _admin(pg_url, "DROP SCHEMA IF EXISTS {} CASCADE", name)
        return {"url": pg_url, "schema": name}, name

    def remove(self, key: str) -> None:
        cleanup = self._cleanups.pop(key, None)
        if cleanup is not None:
            try:
                cleanup()
            except Exception as exc:
                print(f"bench: could not remove {key}: {exc}", file=sys.stderr)

    def remove_all(self) -> None:
        for key in list(self._cleanups):
            self.remove(key)
        shutil.rmtree(self.tmpdir, ignore_errors=True)
