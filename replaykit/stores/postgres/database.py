"""The PostgreSQL store's connections: the pool, the group commit's kept connection, and
what a failure of either means (an outage to retry, or a refusal to raise once).

Every other room of the store works through one `Database`: it hands out
connections, holds the store's statements with its schema filled in, and tells
this process's subscribers what was committed.
"""

from __future__ import annotations

import hashlib
import re
import urllib.parse
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import pq, sql
from psycopg.types.json import set_json_loads
from psycopg_pool import ConnectionPool, PoolTimeout

from replaykit.errors import StoreError, StoreUnavailable
from replaykit.stores._held import HeldConnection
from replaykit.stores._subscribers import Subscribers
from replaykit.stores.postgres.rows import load_json
from replaykit.stores.postgres.shards import ShardKeys
from replaykit.stores.postgres.statements import SQL, for_schema

__all__ = [
    "DEFAULT_SCHEMA",
    "NOTIFY_MAX_KEY",
    "PLAN_EACH_TIME",
    "READ_ONLY",
    "Database",
    "PoolExhausted",
    "redact_url",
    "schema_channel",
    "transient",
    "validate_schema",
]

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
DEFAULT_SCHEMA = "replaykit"

# pg_notify refuses payloads of 8000 bytes or more; such a notification is
# skipped (waiters poll anyway) rather than failing the write. statements.sql
# writes it as 7900.
NOTIFY_MAX_KEY = 7900

# The `prepare` argument of statements that search runs by queue, status or
# executor: planned each time (statements.sql's header says why).
PLAN_EACH_TIME = False


def schema_channel(schema: str) -> str:
    """The LISTEN/NOTIFY channel a store on `schema` uses."""
    return f"replaykit_{schema}"[:63]


def validate_schema(schema: str) -> str:
    if not isinstance(schema, str) or not _SCHEMA_NAME.match(schema):
        raise ValueError(
            f"invalid PostgreSQL schema name {schema!r}: use 1 to 63 characters of lowercase "
            f"letters, digits and underscores, not starting with a digit (e.g. {DEFAULT_SCHEMA!r})"
        )
    if schema == "information_schema" or schema.startswith("pg_"):
        # PostgreSQL keeps these for its catalogs; a superuser may still create
        # tables there, and replaykit once did.
        raise ValueError(
            f"schema {schema!r} is PostgreSQL's own (information_schema and every pg_* name "
            f"are kept for its catalogs); replaykit needs a schema of its own: leave the "
            f"default {DEFAULT_SCHEMA!r}, or pick another name, e.g. ?schema=replaykit_orders "
            "in the URL or PostgresStore(url, schema='replaykit_orders')"
        )
    if schema == "public":
        # Everyone's default search_path: replaykit's tables would sit among the
        # application's, where a migration or a DROP of either can hit the other.
        raise ValueError(
            f"schema 'public' is the database's shared default schema; replaykit keeps its "
            f"tables in a schema of its own, and the default is {DEFAULT_SCHEMA!r}. Leave "
            "out ?schema= (or the schema argument), or choose another name with "
            "?schema=NAME in the URL or PostgresStore(url, schema='NAME')"
        )
    return schema


# What may succeed if tried again: the connection or the server went away
# (class 08, shutdowns, idle_session_timeout), the server ran short of something
# an operator can give it (class 53, io_error), or another transaction was in
# the way (class 40, lock_not_available, object_in_use, query_canceled by
# statement_timeout). psycopg files most of these under OperationalError, but
# also program_limit_exceeded (54000: a value too large to index), which fails
# again every time: retrying it as an outage had kept runs waiting forever.
_TRANSIENT_CLASSES = frozenset({"08", "40", "53"})
_TRANSIENT_STATES = frozenset(
    {"57P01", "57P02", "57P03", "57P05", "57014", "55P03", "55006", "58030"}
)


# A server that takes no writes (25006): a standby, or a primary an HA manager is
# demoting. The primary is elsewhere for now: an outage, on a new connection (libpq's
# target_session_attrs=read-write finds the primary; see docs/storage.md, "Failover").
READ_ONLY = "25006"


def transient(exc: psycopg.Error) -> bool:
    """Whether `exc` says the store is unavailable for now, rather than refusing the call."""
    if exc.sqlstate == READ_ONLY:
        return True
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    if state is None:
        # Raised by libpq, not the server: the connection failed or was lost.
        return True
    return state[:2] in _TRANSIENT_CLASSES or state in _TRANSIENT_STATES


def redact_url(url: str) -> str:
    """`url` with any password replaced by `***`, for messages and logs."""
    if "://" not in url:  # a libpq "key=value" string
        return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", url)
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "<unparseable PostgreSQL URL>"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        netloc = f"{userinfo}@{hostport}"
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    cleaned = [(k, "***" if k.lower() == "password" else v) for k, v in query]
    return urllib.parse.urlunsplit(
        (parts.scheme, netloc, parts.path, urllib.parse.urlencode(cleaned), parts.fragment)
    )


class PoolExhausted(StoreUnavailable):
    """No pooled connection came free within connect_timeout.

    Group commit hands this to every writer of the batch instead of letting
    each wait for a connection again on the one-write path.
    """


class Database:
    """The pool of autocommit connections to one schema, and what every room shares."""

    def __init__(
        self, url: str, schema: str, pool_min: int, pool_max: int, connect_timeout: float
    ) -> None:
        self.url = url
        self.safe_url = redact_url(url)
        self.schema = schema
        self.connect_timeout = connect_timeout
        self.channel = schema_channel(schema)
        # Notifications carry their sender's origin, so the listener can skip
        # the ones this instance sent: it told its own subscribers at commit.
        self.origin = uuid.uuid4().hex[:12] + ":"
        self.s = sql.Identifier(schema).as_string(None)
        self.sql = for_schema(self.s)
        self.name = f"PostgresStore({self.safe_url!r}, schema={schema!r})"
        self.subscribers = Subscribers()
        self.closed = False
        # Connection failures seen so far: an executor hold asks the server again
        # before the next write once this moves (holds.py, `ServerHold.check`), since
        # the outage may have been a failover that took its session lock with it.
        self.outages = 0
        self.pool = ConnectionPool(
            url,
            min_size=pool_min,
            max_size=pool_max,
            kwargs={"autocommit": True},
            configure=self._configure,
            open=False,
            timeout=connect_timeout,
            name=f"replaykit-{schema}",
        )
        self.held = HeldConnection(self.pool, connect_timeout)
        self.shards = ShardKeys(self.sql["shard_of"], self.sql["shards_of"])

    def open(self) -> None:
        try:
            self.pool.open(wait=True, timeout=self.connect_timeout)
        except PoolTimeout as exc:
            self.pool.close()
            raise self.unreachable(exc) from exc

    def close(self) -> None:
        self.held.drop()
        self.pool.close()

    def unreachable(self, exc: Exception) -> StoreUnavailable:
        """No connection came within connect_timeout: why, and what to check."""
        return StoreUnavailable(
            f"cannot connect to PostgreSQL at {self.safe_url} within {self.connect_timeout}s "
            f"({self._why_unreachable() or exc}); is the server running, and are the host, "
            "port and credentials right?"
        )

    def _why_unreachable(self) -> str:
        """The server's own reason for refusing a connection; the pool only says it timed out."""
        try:
            psycopg.connect(self.url, connect_timeout=max(int(self.connect_timeout), 1)).close()
        except psycopg.Error as exc:
            return str(exc).strip().replace(self.url, self.safe_url)
        return ""

    @staticmethod
    def _configure(conn: psycopg.Connection[Any]) -> None:
        conn.execute(SQL["configure_session"])
        set_json_loads(load_json, conn)

    def check_open(self) -> None:
        if self.closed:
            raise StoreError(f"{self.name} is closed")

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled autocommit connection.

        Connection trouble becomes `StoreUnavailable`, which callers retry; an
        error the server would raise again (`transient` says which) becomes
        `StoreError`, raised once.
        """
        self.check_open()
        try:
            if self.held.mine():
                conn = self.held.get()
                try:
                    yield conn
                except BaseException as exc:
                    if (
                        conn.broken
                        or conn.info.transaction_status != pq.TransactionStatus.IDLE
                        or _read_only(exc)
                    ):
                        self.held.drop()
                    raise
            else:
                with self.pool.connection() as conn:
                    try:
                        yield conn
                    except psycopg.Error as exc:
                        if _read_only(exc):
                            conn.close()  # the pool drops it: the next one finds the primary
                        raise
        except PoolTimeout as exc:
            self.outages += 1
            raise PoolExhausted(
                f"no connection to PostgreSQL at {self.safe_url} within "
                f"{self.connect_timeout}s ({exc})"
            ) from exc
        except psycopg.DatabaseError as exc:
            if transient(exc):
                self.outages += 1
                hint = (
                    "; the server takes no writes (a standby, or a primary being demoted): "
                    "give every host with target_session_attrs=read-write (docs/storage.md)"
                    if _read_only(exc)
                    else ""
                )
                raise StoreUnavailable(
                    f"PostgreSQL at {self.safe_url} failed: {exc}{hint}"
                ) from exc
            raise StoreError(
                f"PostgreSQL at {self.safe_url} refused the operation "
                f"({type(exc).__name__}, SQLSTATE {exc.sqlstate or 'none'}): {exc}. This is "
                "not an outage, so replaykit does not retry it; the server's message says "
                "what it refused"
            ) from exc

    def one(self, query: str, params: Any = None) -> Any:
        with self.connection() as conn:
            return conn.execute(query, params).fetchone()

    def all(self, query: str, params: Any = None, *, prepare: bool | None = None) -> list[Any]:
        with self.connection() as conn:
            return conn.execute(query, params, prepare=prepare).fetchall()

    def shard(self, workflow_id: str) -> str:
        """The run's shard key (ShardKeys.of), from what this process kept or the directory."""
        key = self.shards.known(workflow_id)
        if key is None:
            with self.connection() as conn:
                key = self.shards.of(conn, workflow_id)
        return key

    def about(
        self, query: str, workflow_id: str, *rest: Any, many: bool = False, recheck: bool = True
    ) -> Any:
        """`query` about one run, its parameters (shard key, id, *rest): its first row, or
        all its rows if `many`. With `recheck`, for a query that finds nothing only when
        the run is missing, a kept key that finds nothing is asked for again once: the
        run may have been deleted and started again under another key."""
        for fresh in (False, True):
            with self.connection() as conn:
                key = self.shards.of(conn, workflow_id, fresh=fresh)
                cur = conn.execute(query, (key, workflow_id, *rest))
                found = cur.fetchall() if many else cur.fetchone()
                if found or fresh or not recheck:
                    return found
                if self.shards.of(conn, workflow_id, fresh=True) == key:
                    return found
        return found

    def q(self, template: str) -> str:
        """`template` with `{s}` filled in: for statements built at run time."""
        return template.replace("{s}", self.s)

    def key(self, purpose: str) -> int:
        """An advisory-lock key for `purpose` in this schema."""
        digest = hashlib.sha256(f"replaykit\x00{self.schema}\x00{purpose}".encode()).digest()
        return int.from_bytes(digest[:8], "big", signed=True)

    def notify(self, conn: psycopg.Connection[Any], notes: Sequence[tuple[str, str]]) -> None:
        """Send `notes` (kind, key) to every listener, in a statement of their own: at the
        commit of `conn`'s transaction, or at once in autocommit (docs/storage.md, "Past
        one server": a sharded database sends a note from the node that runs it)."""
        payloads = [
            f"{self.origin}{kind}:{key}"
            for kind, key in notes
            if len(key.encode()) < NOTIFY_MAX_KEY
        ]
        if payloads:
            conn.execute(self.sql["notify_many"], (self.channel, payloads))

    def telling(
        self,
        conn: psycopg.Connection[Any],
        query: str,
        params: Any,
        notes: Sequence[tuple[str, str]],
    ) -> Any:
        """A write's statement and its notes, sent in one round trip (pipelined): the
        write's first row. A write that turns out refused has told listeners of nothing
        new; they look again only to find that."""
        if not notes:
            return conn.execute(query, params).fetchone()
        with conn.pipeline():
            cur = conn.execute(query, params)
            self.notify(conn, notes)
        return cur.fetchone()

    def tell(self, notes: Sequence[tuple[str, str]]) -> None:
        """Tell this process's subscribers what was committed (others hear by NOTIFY)."""
        for kind, key in notes:
            self.subscribers.deliver(kind, key)


def _read_only(exc: BaseException) -> bool:
    return isinstance(exc, psycopg.Error) and exc.sqlstate == READ_ONLY
