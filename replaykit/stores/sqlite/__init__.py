"""The SQLite store: one database file in WAL mode, as a package of small rooms.

`store.py` holds `SqliteStore`, the face the rest of replaykit uses.
"""

# The tests reach for the migrations (to build old schemas) and `_Unchanged`
# (to drive the batch writer) under the names the single module had.
from replaykit.stores.sqlite.store import _MIGRATIONS as _MIGRATIONS
from replaykit.stores.sqlite.store import SqliteStore
from replaykit.stores.sqlite.store import _Unchanged as _Unchanged

__all__ = ["SqliteStore"]
