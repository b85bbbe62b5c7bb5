"""A high-availability PostgreSQL cluster of the scenario's own, on loopback: a
pg_auto_failover monitor, a primary and a standby (Debian's
`postgresql-NN-auto-failover`, whose `pg_autoctl` drives them), removed at the end.

Everything lives in a temporary directory and on free ports; the shared server on
5432 is never touched. `pg_autoctl` refuses to run as root, so as root every
command runs as the `postgres` user (`runuser`), with HOME and the XDG folders in
the temporary directory so nothing is left in that user's home.

Each node runs under a keeper (`pg_autoctl run`), which restarts its postmaster
when it dies: a kill -9 of the postmaster alone is a crash-restart, not a
failover. `kill_primary()` is the death of the primary's machine: the keeper's
process group and the postmaster get SIGKILL, the monitor finds the node gone
and promotes the standby; `revive()` starts the dead node's keeper again, and it
rejoins as the new standby (pg_rewind). The monitor's health checks are made
quick (a second, not pg_auto_failover's 20 s and 30 s defaults) so a smoke fits
in CI.

Synchronous replication is pg_auto_failover's default for two nodes
(`synchronous_standby_names = 'ANY 1 (...)'`); `synchronous=False` sets both
nodes' replication quorum off, which makes replication asynchronous.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reliability._cluster import ClusterUnavailable, free_port, installed_versions

__all__ = ["HACluster", "Node", "install_hint"]

# The monitor's checks, in ms: a dead node is seen in about 2 s and, its keeper being
# dead too, the standby promoted about 3 s later (pg_auto_failover's defaults: 20 s, 30 s).
_MONITOR_SETTINGS = {
    "pgautofailover.health_check_period": "1000",
    "pgautofailover.health_check_timeout": "1000",
    "pgautofailover.health_check_max_retries": "1",
    "pgautofailover.health_check_retry_delay": "500",
    "pgautofailover.node_considered_unhealthy_timeout": "2000",
    "pgautofailover.primary_demote_timeout": "3000",
}


# Whether a node refuses writes: a standby, or a promoted one kept read-only for now.
_READ_ONLY = "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only')::bool"


def install_hint() -> str:
    return "apt-get install -y postgresql-15-auto-failover (pg_auto_failover's pg_autoctl)"


@dataclass
class Node:
    name: str
    port: int
    pgdata: Path
    keeper: subprocess.Popen[bytes] | None = None


class HACluster:
    """create() it, then kill_primary()/wait_promoted()/revive() as often as you like;
    drop() in a finally."""

    def __init__(self, *, synchronous: bool = True) -> None:
        if shutil.which("pg_autoctl") is None:
            raise ClusterUnavailable(f"pg_autoctl is not installed: {install_hint()}")
        versions = installed_versions()
        if not versions:
            raise ClusterUnavailable("no PostgreSQL server binaries under /usr/lib/postgresql")
        self.version = versions[0]
        self.synchronous = synchronous
        self.root = os.geteuid() == 0
        self.user = "postgres" if self.root else os.environ.get("USER", "postgres")
        self.dir: Path | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None
        self.monitor = Node("monitor", 0, Path())
        self.nodes: list[Node] = []
        self.kills = 0

    # -- the URL engines use ---------------------------------------------------------

    @property
    def url(self) -> str:
        """A multi-host URL: libpq tries each host and keeps the one that takes writes."""
        hosts = ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)
        return f"postgresql://{self.user}@{hosts}/postgres?target_session_attrs=read-write"

    def node_url(self, node: Node) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{node.port}/postgres"

    # -- making and removing it ------------------------------------------------------

    def create(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="rk_ha_"))
        if self.root:
            shutil.chown(self.dir, user="postgres", group="postgres")
        self._watchdog = self._watch()
        taken: set[int] = set()
        ports = []
        while len(ports) < 3:
            port = free_port()
            if port not in taken:
                taken.add(port)
                ports.append(port)
        self.monitor = Node("monitor", ports[0], self.dir / "monitor")
        self._autoctl(
            "create monitor",
            ["create", "monitor", "--pgdata", str(self.monitor.pgdata)],
            ["--pgport", str(self.monitor.port), "--hostname", "127.0.0.1"],
            ["--auth", "trust", "--no-ssl"],
        )
        self._run_keeper(self.monitor)
        self._wait_sql(self.monitor, "SELECT 1", "pg_auto_failover")
        for key, value in _MONITOR_SETTINGS.items():
            self._sql(self.monitor, f"ALTER SYSTEM SET {key} = {value}", "pg_auto_failover")
        self._sql(self.monitor, "SELECT pg_reload_conf()", "pg_auto_failover")
        monitor_uri = (
            f"postgres://autoctl_node@127.0.0.1:{self.monitor.port}/pg_auto_failover"
            "?sslmode=disable"
        )
        for n, port in enumerate(ports[1:], start=1):
            node = Node(f"n{n}", port, self.dir / f"n{n}")
            self.nodes.append(node)
            self._autoctl(
                f"create node {node.name}",
                ["create", "postgres", "--pgdata", str(node.pgdata), "--name", node.name],
                ["--pgport", str(port), "--hostname", "127.0.0.1", "--dbname", "postgres"],
                ["--auth", "trust", "--no-ssl", "--monitor", monitor_uri],
            )
            self._run_keeper(node)
            self.wait_state(timeout=90)
        if not self.synchronous:
            for node in self.nodes:
                self._autoctl(
                    f"asynchronous replication on {node.name}",
                    ["set", "node", "replication-quorum", "false", "--pgdata", str(node.pgdata)],
                )
            self.wait_state(timeout=60)
        wanted = "" if not self.synchronous else "ANY 1"
        primary = self.primary()
        names = self._sql(primary, "SHOW synchronous_standby_names").strip()
        if not names.startswith(wanted) or (not wanted and names):
            raise ClusterUnavailable(
                f"synchronous_standby_names is {names!r} on the primary; wanted {wanted!r}"
            )

    def drop(self) -> None:
        """SIGKILL every keeper's process group (postmasters with them) and remove it all."""
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.kill()
            watchdog.wait()
        for node in [*self.nodes, self.monitor]:
            self._kill_keeper(node)
            pid = _postmaster_pid(node.pgdata)
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self) -> HACluster:
        try:
            self.create()
        except BaseException:
            self.drop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.drop()

    # -- failing over ----------------------------------------------------------------

    def state(self) -> list[dict[str, Any]]:
        """The monitor's view: each node's reported and assigned state."""
        out = self._autoctl(
            "show state", ["show", "state", "--pgdata", str(self.monitor.pgdata), "--json"]
        )
        found: list[dict[str, Any]] = json.loads(out)
        return found

    def wait_state(self, timeout: float) -> None:
        """Until the monitor has one primary and every node is at its assigned state, with
        the standby a secondary (or, while alone, a single node or a waiting primary)."""
        deadline = time.monotonic() + timeout
        last: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            try:
                last = self.state()
            except ClusterUnavailable:
                last = []
            settled = [n["current_group_state"] == n["assigned_group_state"] for n in last]
            states = sorted(n["current_group_state"] for n in last)
            full = bool(last) and all(settled) and len(last) == len(self.nodes)
            if full and states in (["single"], ["primary", "secondary"]):
                return
            time.sleep(0.3)
        raise ClusterUnavailable(f"the HA cluster did not settle within {timeout}s: {last}")

    def primary(self) -> Node:
        """The node that takes writes now (asked of each node, not of the monitor)."""
        import psycopg

        for node in self.nodes:
            try:
                with psycopg.connect(self.node_url(node), connect_timeout=2) as conn:
                    row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
            except psycopg.Error:
                continue
            if row is not None and not row[0]:
                return node
        raise ClusterUnavailable("no node of the HA cluster takes writes")

    def kill_primary(self) -> Node:
        """kill -9 the primary's keeper and postmaster (its machine died); the dead node."""
        node = self.primary()
        self._kill_keeper(node)
        pid = _postmaster_pid(node.pgdata)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.kills += 1
        return node

    def wait_promoted(self, dead: Node, timeout: float) -> Node:
        """Until another node than `dead` takes writes: the new primary.

        Promoted is not enough: pg_auto_failover keeps the promoted standby read-only
        (`default_transaction_read_only`) until the old primary is known demoted or its
        demote timeout passed, so that two primaries never take writes at once; libpq's
        `target_session_attrs=read-write` finds it only then, and so do the engines."""
        import psycopg

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for node in self.nodes:
                if node is dead:
                    continue
                try:
                    with psycopg.connect(self.node_url(node), connect_timeout=1) as conn:
                        row = conn.execute(_READ_ONLY).fetchone()
                except psycopg.Error:
                    continue
                if row is not None and not row[0]:
                    return node
            time.sleep(0.05)
        raise ClusterUnavailable(f"no standby was promoted within {timeout}s: {self.state()}")

    def revive(self, node: Node, timeout: float = 120) -> None:
        """Start a dead node's keeper: it rejoins as the standby (pg_rewind if needed)."""
        self._run_keeper(node)
        self.wait_state(timeout)

    def replication(self) -> dict[str, Any]:
        """The primary's replication view: its WAL position and the standby's."""
        primary = self.primary()
        out = self._sql(
            primary,
            "SELECT pg_current_wal_lsn(), coalesce(max(flush_lsn)::text, ''), "
            "current_setting('synchronous_standby_names') FROM pg_stat_replication",
        )
        wal, flushed, names = ([*out.strip().split("|"), "", "", ""])[:3]
        return {"node": primary.name, "wal": wal, "standby_flushed": flushed, "sync": names}

    # -- plumbing --------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        assert self.dir is not None
        folder = str(self.dir)
        return {
            "HOME": folder,
            "XDG_CONFIG_HOME": f"{folder}/config",
            "XDG_DATA_HOME": f"{folder}/data",
            "XDG_RUNTIME_DIR": f"{folder}/run",
            "PATH": f"/usr/lib/postgresql/{self.version}/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "LANG": "C.UTF-8",
        }

    def _argv(self, argv: list[str]) -> list[str]:
        if self.root:
            # runuser keeps the environment given (env -i empties it, then the folders).
            env = [f"{k}={v}" for k, v in self._env().items()]
            return ["/usr/sbin/runuser", "-u", "postgres", "--", "env", "-i", *env, *argv]
        return argv

    def _autoctl(self, what: str, *parts: list[str], timeout: float = 120) -> str:
        argv = self._argv(["pg_autoctl", *[p for part in parts for p in part]])
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                errors="replace",  # its messages are not always valid UTF-8
                timeout=timeout,
                env=self._env(),
                cwd=self.dir,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ClusterUnavailable(f"pg_autoctl {what}: {exc}") from exc
        if done.returncode != 0:
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-6:])
            raise ClusterUnavailable(f"pg_autoctl {what} exited {done.returncode}: {tail}")
        return done.stdout

    def _watch(self) -> subprocess.Popen[bytes]:
        """A process that outlives this one and removes the cluster if this one dies
        without `drop()` (a SIGKILL, a test's timeout): the keepers live in sessions of
        their own, so nothing else would stop them. `drop()` stops it first."""
        assert self.dir is not None
        folder = str(self.dir)
        script = (
            'while kill -0 "$1" 2>/dev/null; do sleep 1; done; '
            'for f in "$2"/*.pgid; do [ -f "$f" ] && kill -9 -"$(cat "$f")"; done; '
            'for f in "$2"/*/postmaster.pid; do [ -f "$f" ] && kill -9 "$(head -1 "$f")"; done; '
            'rm -rf "$2"'
        )
        return subprocess.Popen(
            ["/bin/sh", "-c", script, "rk-ha-watchdog", str(os.getpid()), folder],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def _run_keeper(self, node: Node) -> None:
        assert self.dir is not None
        log = open(self.dir / f"{node.name}.log", "ab")  # noqa: SIM115 - the keeper's for life
        try:
            node.keeper = subprocess.Popen(
                self._argv(["pg_autoctl", "run", "--pgdata", str(node.pgdata)]),
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self._env(),
                cwd=self.dir,
                # A group of its own: SIGKILL to the group is the machine's death.
                start_new_session=True,
            )
        finally:
            log.close()
        # For the watchdog: the group to kill if this process dies without drop().
        (self.dir / f"{node.name}.pgid").write_text(str(node.keeper.pid))

    def _kill_keeper(self, node: Node) -> None:
        keeper, node.keeper = node.keeper, None
        if keeper is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(keeper.pid, signal.SIGKILL)
        keeper.wait()

    def _sql(self, node: Node, statement: str, dbname: str = "postgres") -> str:
        import psycopg

        url = f"postgresql://{self.user}@127.0.0.1:{node.port}/{dbname}"
        try:
            with psycopg.connect(url, connect_timeout=3, autocommit=True) as conn:
                cur = conn.execute(statement)
                rows = cur.fetchall() if cur.description else []
        except psycopg.Error as exc:
            raise ClusterUnavailable(f"{node.name}: {statement}: {exc}") from exc
        return "\n".join("|".join(str(v) for v in row) for row in rows)

    def _wait_sql(self, node: Node, statement: str, dbname: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._sql(node, statement, dbname)
                return
            except ClusterUnavailable:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


def _postmaster_pid(pgdata: Path) -> int | None:
    try:
        first = (pgdata / "postmaster.pid").read_text().splitlines()[0]
        return int(first)
    except (OSError, ValueError, IndexError):
        return None
