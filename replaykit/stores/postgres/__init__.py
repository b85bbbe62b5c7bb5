"""The PostgreSQL store: `PostgresStore` (store.py) and the rooms it forwards to.

database.py     the pool, the kept connection, what a failure means
statements.sql  every fixed statement, by name (statements.py reads it once)
migrations.py   the schema's version and its migrations
notes.py        LISTEN/NOTIFY: the listener thread and the subscribers
holds.py        executor ids held by session advisory locks
claims.py       claims from queues, heartbeats, take-overs, releases
creates.py      creating runs, one or many, and the dedup check
reads.py        runs and logs read back (a listing's filter built at run time)
shapes.py       the two statements built per call's shape (a record, a finish with it)
single.py       one write, one statement, and why it wrote nothing
batches.py      group commit's batch writer
writes.py       the protocol's record and finish calls over single and batches
runs.py         status, family, deadline, next generation, delete
messages.py     inbox and events
schedules.py    schedule states
rows.py         values to parameters and rows back
"""

from __future__ import annotations

from replaykit.stores.postgres import database, single
from replaykit.stores.postgres.database import redact_url, schema_channel
from replaykit.stores.postgres.migrations import MIGRATIONS
from replaykit.stores.postgres.store import PostgresStore

__all__ = ["MIGRATIONS", "PostgresStore", "redact_url", "schema_channel"]

# Private names the tests reach for here: group commit's write items, the
# pool's own error, and what counts as an outage.
_Finish = single.Finish
_PlainRecord = single.PlainRecord
_PoolExhausted = database.PoolExhausted
_transient = database.transient
