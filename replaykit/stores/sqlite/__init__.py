"""The SQLite store: one database file in WAL mode, as a package of small rooms.

`store.py` holds `SqliteStore`, the face the rest of replaykit uses; its module
docstring says which room holds what.
"""

from replaykit.stores.sqlite.migrations import MIGRATIONS
from replaykit.stores.sqlite.store import SqliteStore
from replaykit.stores.sqlite.writer import Unchanged

__all__ = ["SqliteStore"]

# The tests reach for the migrations (to build old schemas) and `Unchanged` (to
# drive the batch writer) under the names they had in the single module.
_MIGRATIONS = MIGRATIONS
_Unchanged = Unchanged
