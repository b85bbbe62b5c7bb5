"""The PostgreSQL store as a package of rooms; `PostgresStore` is its face."""

from __future__ import annotations

# The private names are re-exported for the tests that reach into the store
# (group commit's write items, the pool's own error, what counts as transient).
from replaykit.stores.postgres.store import (
    MIGRATIONS,
    PostgresStore,
    redact_url,
    schema_channel,
)
from replaykit.stores.postgres.store import _Finish as _Finish
from replaykit.stores.postgres.store import _PlainRecord as _PlainRecord
from replaykit.stores.postgres.store import _PoolExhausted as _PoolExhausted
from replaykit.stores.postgres.store import _transient as _transient

__all__ = ["MIGRATIONS", "PostgresStore", "redact_url", "schema_channel"]
