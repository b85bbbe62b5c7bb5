"""What every scenario shares: the ledger, the verdict, arguments, PostgreSQL, processes.

The ledger is the scenario's witness outside the store: an append-only file of
JSON lines, one per event (a step body starting or ending, a worker launching),
each written with one `write(2)` on an `O_APPEND` descriptor, so lines from many
processes never interleave and a `kill -9` loses at most the line being written.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

__all__ = [
    "APP_VERSION",
    "EXIT_BROKEN",
    "EXIT_OK",
    "EXIT_SETUP",
    "EXIT_SKIPPED",
    "IN_CI",
    "LEDGER_ENV",
    "PG_URL",
    "ROOT",
    "Ledger",
    "Processes",
    "Report",
    "Scenario",
    "Verdict",
    "drop_schema",
    "fresh_schema",
    "postgres_problem",
    "postgres_schema",
    "schema_url",
    "wait_until",
    "worker_argv",
]

ROOT = Path(__file__).resolve().parent.parent
PG_URL = os.environ.get("REPLAYKIT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
LEDGER_ENV = "RELIABILITY_LEDGER"
# Every process of a scenario stamps and looks for this version: the driver,
# which imports less than a worker, would otherwise derive another one.
APP_VERSION = "reliability-v1"

EXIT_OK = 0  # every invariant held
EXIT_BROKEN = 1  # an invariant broke
EXIT_SETUP = 2  # the scenario could not run (in CI: no PostgreSQL)
EXIT_SKIPPED = 3  # parts needing PostgreSQL were skipped (not in CI); the rest held


# -- the ledger ----------------------------------------------------------------------------


class Ledger:
    """An append-only JSON-lines file outside the store; safe from many processes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._fd: int | None = None
        self._fd_pid = 0

    def write(self, **fields: Any) -> None:
        fields.setdefault("t", time.time())
        fields.setdefault("pid", os.getpid())
        line = (json.dumps(fields, separators=(",", ":")) + "\n").encode()
        if self._fd is None or self._fd_pid != os.getpid():
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            self._fd_pid = os.getpid()
        os.write(self._fd, line)  # one write(2) per line: O_APPEND keeps lines whole

    def read(self) -> list[dict[str, Any]]:
        """Every whole line; a torn last line (its writer was killed mid-write) is left out."""
        if not self.path.exists():
            return []
        lines: list[dict[str, Any]] = []
        for raw in self.path.read_bytes().splitlines():
            try:
                lines.append(json.loads(raw))
            except ValueError:
                continue
        return lines


# -- verdicts ------------------------------------------------------------------------------


class Verdict:
    """One part of a scenario (a store, a phase): its figures and its invariants."""

    def __init__(self, part: str) -> None:
        self.part = part
        self.figures: dict[str, Any] = {}
        self.held: dict[str, int] = {}
        self.broken: dict[str, list[str]] = {}
        self.notes: list[str] = []
        self.skipped: str | None = None

    def figure(self, name: str, value: Any) -> None:
        self.figures[name] = value

    def check(self, ok: bool, invariant: str, detail: str = "") -> bool:
        """Count one check of `invariant`; on failure keep `detail` (what broke, where)."""
        if ok:
            self.held[invariant] = self.held.get(invariant, 0) + 1
        else:
            self.broken.setdefault(invariant, []).append(detail)
        return ok

    def note(self, text: str) -> None:
        self.notes.append(text)

    def skip(self, why: str) -> None:
        self.skipped = why

    @property
    def ok(self) -> bool:
        return not self.broken

    def print(self, out: Any = None) -> None:
        out = out or sys.stdout
        if self.skipped is not None:
            print(f"-- {self.part}: SKIPPED ({self.skipped})", file=out)
            return
        print(f"-- {self.part}", file=out)
        width = max((len(name) for name in self.figures), default=0)
        for name, value in self.figures.items():
            shown = f"{value:.2f}" if isinstance(value, float) else str(value)
            print(f"   {name.ljust(width)}  {shown}", file=out)
        for invariant, count in self.held.items():
            if invariant not in self.broken:
                print(f"   held    {invariant} ({count} checks)", file=out)
        for invariant, details in self.broken.items():
            print(f"   BROKEN  {invariant} ({len(details)} times)", file=out)
            for detail in details[:12]:
                print(f"           - {detail}", file=out)
            if len(details) > 12:
                print(f"           - ... and {len(details) - 12} more", file=out)
        for text in self.notes:
            print(f"   note    {text}", file=out)


class Report:
    """A scenario's verdicts, printed at the end; the exit code follows from them."""

    def __init__(self, scenario: str, seed: int, size: str) -> None:
        self.scenario = scenario
        self.seed = seed
        self.size = size
        self.parts: list[Verdict] = []
        self.setup_error: str | None = None
        self.started = time.monotonic()

    def part(self, name: str) -> Verdict:
        verdict = Verdict(name)
        self.parts.append(verdict)
        return verdict

    def exit_code(self) -> int:
        if any(not part.ok for part in self.parts):
            return EXIT_BROKEN
        if self.setup_error is not None:
            return EXIT_SETUP
        if any(part.skipped for part in self.parts):
            return EXIT_SKIPPED
        return EXIT_OK

    def finish(self) -> int:
        for part in self.parts:
            part.print()
        code = self.exit_code()
        verdict = {
            EXIT_OK: "every invariant held",
            EXIT_BROKEN: "INVARIANTS BROKEN",
            EXIT_SETUP: f"COULD NOT RUN: {self.setup_error}",
            EXIT_SKIPPED: "held, but parts were skipped",
        }[code]
        seconds = time.monotonic() - self.started
        print(
            f"== {self.scenario} ({self.size}, seed {self.seed}, {seconds:.1f}s): {verdict}; "
            f"exit {code}"
        )
        sys.stdout.flush()
        return code


# -- arguments and the run's directory -----------------------------------------------------


class Scenario:
    """A scenario's command line, random generator, work directory and report."""

    def __init__(
        self,
        name: str,
        doc: str,
        *,
        add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
        argv: Sequence[str] | None = None,
    ) -> None:
        parser = argparse.ArgumentParser(
            prog=f"python -m reliability.{name}",
            description=doc,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        parser.add_argument("--smoke", action="store_true", help="small and fast (CI)")
        parser.add_argument("--seed", type=int, help="random seed (default: a fresh one)")
        parser.add_argument("--keep", action="store_true", help="keep the work directory")
        parser.add_argument(
            "--discard",
            action="store_true",
            help="remove the work directory even when an invariant broke",
        )
        if add_arguments is not None:
            add_arguments(parser)
        self.args = parser.parse_args(argv)
        self.name = name
        self.smoke: bool = self.args.smoke
        self.seed: int = self.args.seed if self.args.seed is not None else random.randrange(1 << 30)
        self.rng = random.Random(self.seed)
        self.report = Report(name, self.seed, "smoke" if self.smoke else "full")
        self.workdir = Path(tempfile.mkdtemp(prefix=f"rk-reliability-{name}-"))
        print(f"== {name} ({self.report.size}, seed {self.seed}), work directory {self.workdir}")
        sys.stdout.flush()

    def size(self, smoke: Any, full: Any) -> Any:
        return smoke if self.smoke else full

    def finish(self) -> int:
        code = self.report.finish()
        if self.args.keep or (code == EXIT_BROKEN and not self.args.discard):
            print(f"   (work directory kept: {self.workdir})")
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return code

    def need_postgres(self, verdict: Verdict, url: str = PG_URL) -> bool:
        """True if PostgreSQL answers; else the part is skipped, or in CI the run fails."""
        problem = postgres_problem(url)
        if problem is None:
            return True
        if IN_CI:
            self.report.setup_error = f"CI needs PostgreSQL: {problem}"
            verdict.check(False, "PostgreSQL is reachable (CI)", problem)
        else:
            verdict.skip(problem)
        return False


# -- PostgreSQL ----------------------------------------------------------------------------


def postgres_problem(url: str = PG_URL) -> str | None:
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (pip install 'replaykit[postgres]')"
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        return f"PostgreSQL at {url} is unreachable: {str(exc).strip()}"
    return None


def fresh_schema(hint: str) -> str:
    safe = re.sub(r"[^a-z0-9_]", "_", hint.lower())[:24]
    return f"rk_rel_{safe}_{uuid.uuid4().hex[:8]}"


def schema_url(schema: str, base: str = PG_URL) -> str:
    return f"{base}{'&' if '?' in base else '?'}schema={schema}"


def drop_schema(schema: str, url: str = PG_URL) -> None:
    import psycopg
    from psycopg import sql

    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
    except psycopg.Error as exc:
        print(f"   (could not drop schema {schema}: {exc})")


# -- processes -----------------------------------------------------------------------------


def worker_argv(
    *,
    url: str,
    executor_id: str,
    plan: Path | None = None,
    until_done: bool = False,
    go: Path | None = None,
    queues: Sequence[str] | None = None,
    poll_interval: float = 0.2,
    lease_seconds: float = 30.0,
    recover: bool = True,
    executor_wait: float | None = None,
    asyncio: bool = False,
) -> list[str]:
    """The command line of a `reliability._worker` process."""
    argv = [
        sys.executable,
        "-m",
        "reliability._worker",
        "--url",
        url,
        "--executor-id",
        executor_id,
        "--poll-interval",
        str(poll_interval),
        "--lease-seconds",
        str(lease_seconds),
    ]
    if plan is not None:
        argv += ["--plan", str(plan)]
    if until_done:
        argv.append("--until-done")
    if asyncio:
        argv.append("--asyncio")
    if go is not None:
        argv += ["--go", str(go)]
    if queues is not None:
        argv += ["--queues", ",".join(queues)]
    if not recover:
        argv.append("--no-recover")
    if executor_wait is not None:
        argv += ["--executor-wait", str(executor_wait)]
    return argv


class Processes:
    """The subprocesses a scenario started; whatever still runs is killed, by pid, at the end."""

    def __init__(self, workdir: Path, env: dict[str, str] | None = None) -> None:
        self.workdir = workdir
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
        self.started: list[subprocess.Popen[bytes]] = []
        self.logs: dict[int, Path] = {}

    def spawn(self, argv: Sequence[str], *, name: str, env: dict[str, str] | None = None) -> Any:
        log_path = self.workdir / f"{name}.log"
        with open(log_path, "ab") as log_file:
            proc = subprocess.Popen(
                list(argv),
                cwd=ROOT,
                env={**self.env, **(env or {})},
                stdout=log_file,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        self.started.append(proc)
        self.logs[proc.pid] = log_path
        return proc

    def log_tail(self, proc: subprocess.Popen[bytes], lines: int = 15) -> str:
        path = self.logs.get(proc.pid)
        if path is None or not path.exists():
            return ""
        text = path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def kill(self, proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
        if proc.poll() is None:
            proc.send_signal(sig)

    def close(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                proc.kill()
        for proc in self.started:
            with suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)

    def __enter__(self) -> Processes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def wait_until(predicate: Callable[[], Any], timeout: float, interval: float = 0.05) -> Any:
    """Poll `predicate` until it is truthy (returned) or `timeout` passes (None)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval)


@contextmanager
def postgres_schema(hint: str, base: str = PG_URL) -> Iterator[str]:
    """A fresh schema's URL, dropped afterwards."""
    schema = fresh_schema(hint)
    try:
        yield schema_url(schema, base)
    finally:
        drop_schema(schema, base)
