"""The SQLite store's statements (statements.sql) by name, read once at import.

Each room binds the statements it runs to module constants when it is imported,
so a name missing from the file fails at import, and a write pays no lookup.
"""

from __future__ import annotations

import json
from collections.abc import Collection

from replaykit.stores._statements import Statements

__all__ = ["SQL", "id_set"]

SQL = Statements("replaykit.stores.sqlite", "statements.sql")


def id_set(ids: Collection[object]) -> str:
    """A set of ids as the one JSON array a statement reads with `json_each(?)`."""
    return json.dumps(list(ids))
