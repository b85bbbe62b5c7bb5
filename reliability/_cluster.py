"""A PostgreSQL cluster of the scenario's own, on a free port, removed at the end.

As root (this is how the CI machine runs), the Debian tools do it:
`pg_createcluster VERSION rk_chaos_<random> -p PORT` (owned by the `postgres`
user, trust authentication, started by hand only), `pg_ctlcluster ... stop -m
immediate` to crash it and `... start` to bring it back, `pg_dropcluster --stop`
at the end. As another user, `initdb` and `pg_ctl` from the same version make
one in the work directory. The shared server on 5432 is never touched: every
command names this cluster's version and name (or data directory).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path

__all__ = ["ClusterUnavailable", "PrivateCluster", "free_port", "installed_versions"]

_ETC = Path("/etc/postgresql")
_LIB = Path("/usr/lib/postgresql")


class ClusterUnavailable(RuntimeError):
    """The tools to make a private cluster are missing, or refused."""


def installed_versions() -> list[str]:
    """Server versions with binaries installed, newest first."""
    if not _LIB.is_dir():
        return []
    found = [p.name for p in _LIB.iterdir() if (p / "bin" / "postgres").exists()]
    return sorted(found, key=lambda v: [int(x) for x in v.split(".") if x.isdigit()], reverse=True)


def free_port() -> int:
    taken = set()
    if _ETC.is_dir():
        for conf in _ETC.glob("*/*/postgresql.conf"):
            for line in conf.read_text(errors="replace").splitlines():
                if line.strip().startswith("port"):
                    digits = "".join(ch for ch in line.split("=", 1)[-1] if ch.isdigit())
                    if digits:
                        taken.add(int(digits[:5]))
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port not in taken and port > 1024:
            return port


def _run(argv: list[str], timeout: float = 120) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise ClusterUnavailable(
            f"{' '.join(argv)} exited {done.returncode}: {(done.stderr or done.stdout).strip()}"
        )
    return done.stdout


class PrivateCluster:
    """create() it, then crash()/start() as often as you like; drop() in a finally."""

    def __init__(self, workdir: Path) -> None:
        versions = installed_versions()
        if not versions:
            raise ClusterUnavailable(f"no PostgreSQL server binaries under {_LIB}")
        self.version = versions[0]
        self.name = f"rk_chaos_{uuid.uuid4().hex[:8]}"
        self.port = free_port()
        self.root = os.geteuid() == 0
        self.datadir = workdir / "pgdata"
        self.logfile = workdir / "postgres.log"
        self.created = False
        self.crashes = 0
        if self.root and shutil.which("pg_createcluster") is None:
            raise ClusterUnavailable("pg_createcluster is not installed (postgresql-common)")

    @property
    def url(self) -> str:
        user = "postgres" if self.root else os.environ.get("USER", "postgres")
        return f"postgresql://{user}@127.0.0.1:{self.port}/postgres"

    def _bin(self, tool: str) -> str:
        return str(_LIB / self.version / "bin" / tool)

    def create(self) -> None:
        # pg_createcluster quotes values as it sees fit (not an address that looks
        # like a number): `localhost` needs no quoting anywhere.
        options = {
            "listen_addresses": "localhost",
            "fsync": "on",
            "max_connections": "100",
            "shared_buffers": "32MB",
            "log_min_messages": "warning",
        }
        if self.root:
            argv = ["pg_createcluster", self.version, self.name, "-p", str(self.port)]
            argv += ["--start-conf=manual", "-q"]
            for key, value in options.items():
                argv += ["-o", f"{key}={value}"]
            argv += ["--", "--auth-host=trust", "--auth-local=trust"]
            self.created = True  # even half-made, drop() cleans it up
            _run(argv)
        else:
            self.created = True
            _run(
                [
                    self._bin("initdb"),
                    "-D",
                    str(self.datadir),
                    "-A",
                    "trust",
                    "-U",
                    os.environ.get("USER", "postgres"),
                ]
            )
            with open(self.datadir / "postgresql.conf", "a") as conf:
                conf.write(f"port = {self.port}\nunix_socket_directories = '{self.datadir}'\n")
                conf.writelines(f"{key} = '{value}'\n" for key, value in options.items())
        self.start()

    def start(self) -> None:
        if self.root:
            _run(["pg_ctlcluster", self.version, self.name, "start"])
        else:
            _run(
                [
                    self._bin("pg_ctl"),
                    "-D",
                    str(self.datadir),
                    "-l",
                    str(self.logfile),
                    "-w",
                    "start",
                ]
            )
        self._wait_ready()

    def crash(self) -> None:
        """Stop at once, as a power cut would: no checkpoint, clients cut off."""
        if self.root:
            _run(["pg_ctlcluster", self.version, self.name, "stop", "-m", "immediate"])
        else:
            _run([self._bin("pg_ctl"), "-D", str(self.datadir), "-m", "immediate", "stop"])
        self.crashes += 1

    def _wait_ready(self, timeout: float = 60) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            try:
                psycopg.connect(self.url, connect_timeout=2).close()
                return
            except psycopg.Error as exc:
                if time.monotonic() > deadline:
                    raise ClusterUnavailable(f"the private cluster did not come up: {exc}") from exc
                time.sleep(0.1)

    def drop(self) -> None:
        if not self.created:
            return
        if self.root:
            subprocess.run(
                ["pg_dropcluster", "--stop", self.version, self.name],
                capture_output=True,
                timeout=120,
            )
        else:
            subprocess.run(
                [self._bin("pg_ctl"), "-D", str(self.datadir), "-m", "immediate", "stop"],
                capture_output=True,
                timeout=60,
            )
            shutil.rmtree(self.datadir, ignore_errors=True)
        self.created = False

    def __enter__(self) -> PrivateCluster:
        try:
            self.create()
        except BaseException:
            self.drop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.drop()
