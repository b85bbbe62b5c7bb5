"""The benchmark suite: replaykit against DBOS Transact and the raw driver, same run.

    python -m bench --all                      # every case, SQLite and PostgreSQL
    python -m bench --quick --all              # smaller sizes, fewer repetitions
    python -m bench --cases sequential,long --stores postgres --repeat 3

For each case and store, every system gets a worker process of its own on a
fresh SQLite file or PostgreSQL schema/database (removed afterwards). The
repetitions alternate between the systems, rotating who goes first, so a noisy
neighbour or a warming disk affects them alike. The table shows medians and
ratios of medians; bench/results/latest.json keeps every repetition.

Nothing is installed here: DBOS comes from the optional `bench` extra
(pip install -e '.[bench]'); without it the DBOS columns say so and the rest runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import queue
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from bench.cases import CASES, STORES, SYSTEMS, Case, case_named
from bench.places import Places, check_postgres
from bench.report import header, render, summarize
from bench.worker import MARK

__all__ = ["main"]

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"
DEFAULT_REPEAT = 3
QUICK_REPEAT = 2


class WorkerDied(Exception):
    pass


class WorkerProcess:
    """A `bench.worker` subprocess and the replies it sends back."""

    def __init__(self, spec: dict[str, Any], log: IO[str]) -> None:
        self.label = f"{spec['case']}/{spec['store']}/{spec['system']}"
        log.write(f"\n===== {self.label} {datetime.now().isoformat(timespec='seconds')}\n")
        log.flush()
        self._log = log
        self._replies: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.worker", json.dumps(spec)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            bufsize=1,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(MARK):
                self._replies.put(json.loads(line[len(MARK) :]))
            else:
                self._log.write(line)
        self._replies.put(None)

    def receive(self, timeout: float) -> dict[str, Any]:
        try:
            reply = self._replies.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            raise WorkerDied(f"no answer within {timeout:.0f}s (killed)") from None
        if reply is None:
            raise WorkerDied(f"the worker exited (code {self.proc.wait()}); see {self._log.name}")
        return reply

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise WorkerDied(f"the worker is gone: {exc}") from None

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send("quit")
                self.proc.wait(timeout=60)
            except (WorkerDied, subprocess.TimeoutExpired):
                self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Suite:
    def __init__(self, args: argparse.Namespace, log: IO[str]) -> None:
        self.args = args
        self.log = log
        self.places = Places(args.pg)
        self.unavailable: dict[str, str] = {}  # system or store -> why it cannot run

    # -- one case on one store ----------------------------------------------------------

    def sizes(self, case: Case) -> dict[str, int]:
        return dict(case.quick_sizes if self.args.quick else case.sizes)

    def repeat(self, case: Case) -> int:
        if self.args.repeat:
            return int(self.args.repeat)
        if self.args.quick:
            return case.quick_repeat or QUICK_REPEAT
        return case.repeat or DEFAULT_REPEAT

    def spec(
        self, case: Case, store: str, system: str, target: dict[str, Any], mode: str = ""
    ) -> dict[str, Any]:
        return {
            "mode": mode,
            "case": case.name,
            "store": store,
            "system": system,
            "sizes": self.sizes(case),
            "target": target,
            "options": {"timeout": self.args.timeout, "dbos_queue_poll": self.args.dbos_queue_poll},
        }

    def start(
        self, case: Case, store: str, system: str, mode: str = ""
    ) -> tuple[WorkerProcess, str, dict[str, Any]]:
        """A worker on a fresh place, set up and warmed up: (worker, place key, its info)."""
        target, key = self.places.make(system, store, case.name)
        worker = WorkerProcess(self.spec(case, store, system, target, mode), self.log)
        try:
            ready = worker.receive(self.args.timeout)
        except WorkerDied:
            self.places.remove(key)
            raise
        if not ready.get("ok"):
            worker.kill()
            self.places.remove(key)
            raise WorkerDied(ready.get("error", "setup failed"))
        return worker, key, ready.get("info", {})

    def run_case(self, case: Case, store: str) -> dict[str, Any]:
        systems = [s for s in case.systems if s in self.args.systems]
        entry: dict[str, Any] = {
            "case": case.name,
            "title": case.title,
            "store": store,
            "sizes": self.sizes(case),
            "repeat": self.repeat(case),
            "systems": {s: {"reps": [], "error": None, "info": {}} for s in systems},
        }
        results = entry["systems"]
        for system in systems:
            why = self.unavailable.get(system) or self.unavailable.get(store)
            if why:
                results[system]["error"] = why
                results[system]["short_error"] = (
                    "not installed" if "not installed" in why else "unavailable"
                )
        active = [s for s in systems if not results[s]["error"]]
        workers: dict[str, tuple[WorkerProcess, str]] = {}

        def fail(system: str, exc: Exception) -> None:
            results[system]["error"] = str(exc)
            self.progress(f"  {system}: {exc}")
            if system in active:
                active.remove(system)

        try:
            if not case.process_modes:
                for system in list(active):
                    self.progress(f"{case.name}/{store}: starting {system}")
                    try:
                        worker, key, info = self.start(case, store, system)
                    except WorkerDied as exc:
                        fail(system, exc)
                        continue
                    workers[system] = (worker, key)
                    results[system]["info"] = info
            for rep in range(entry["repeat"]):
                # Rotate who goes first, so no system always runs on a cold (or warm) machine.
                order = active[rep % len(active) :] + active[: rep % len(active)] if active else []
                for system in order:
                    self.run_once(case, store, system, rep, entry, workers, fail)
        finally:
            for worker, key in workers.values():
                worker.close()
                self.places.remove(key)
        summarize(entry)
        return entry

    def run_once(
        self,
        case: Case,
        store: str,
        system: str,
        rep: int,
        entry: dict[str, Any],
        workers: dict[str, tuple[WorkerProcess, str]],
        fail: Callable[[str, Exception], None],
    ) -> None:
        results = entry["systems"][system]
        started = time.perf_counter()
        try:
            if case.process_modes:
                # A new process (and a new database) for each mode of each repetition.
                reply: dict[str, Any] = {"metrics": {}, "ok": True}
                for mode in case.process_modes:
                    worker, key, info = self.start(case, store, system, mode)
                    results["info"] = info
                    try:
                        worker.send(f"run {rep}")
                        part = worker.receive(self.args.timeout)
                    finally:
                        worker.close()
                        self.places.remove(key)
                    if not part.get("ok"):
                        reply = part
                        break
                    reply["metrics"].update(part.get("metrics", {}))
                    reply.setdefault("notes", []).extend(part.get("notes", []))
            else:
                worker, key = workers[system]
                worker.send(f"run {rep}")
                reply = worker.receive(self.args.timeout)
        except WorkerDied as exc:
            fail(system, exc)
            return
        if not reply.get("ok"):
            fail(system, WorkerDied(reply.get("error", "run failed")))
            return
        reply.pop("ok", None)
        reply.pop("kind", None)
        reply["rep"] = rep  # pairs it with the other systems' figures of this repetition
        results["reps"].append(reply)
        if reply.get("variant"):
            results["variant"] = reply["variant"]
        if reply.get("variant_note"):
            # A stand-in measurement (say, a feature the library lacks); the table marks it.
            results["variant_note"] = reply["variant_note"]
        self.progress(
            f"{case.name}/{store} rep {rep + 1}/{entry['repeat']} {system}: "
            f"{time.perf_counter() - started:.1f}s"
        )

    def progress(self, text: str) -> None:
        if not self.args.silent:
            print(text, file=sys.stderr, flush=True)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="replaykit's benchmark suite (see docs/performance.md).",
    )
    parser.add_argument("--all", action="store_true", help="run every case")
    parser.add_argument(
        "--cases", help=f"comma-separated cases: {', '.join(c.name for c in CASES)}"
    )
    parser.add_argument("--stores", default=",".join(STORES), help="sqlite,postgres (default both)")
    parser.add_argument(
        "--systems", default=",".join(SYSTEMS), help="replaykit,dbos,floor (default all)"
    )
    parser.add_argument(
        "--repeat", type=int, help="repetitions per case (default 3; floor 5, sleepers 2)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="smaller sizes, 2 repetitions (a smoke run)"
    )
    parser.add_argument(
        "--pg",
        default=os.environ.get("REPLAYKIT_BENCH_PG")
        or os.environ.get("REPLAYKIT_TEST_PG")
        or DEFAULT_PG,
        help="PostgreSQL server URL (default $REPLAYKIT_BENCH_PG, $REPLAYKIT_TEST_PG, or "
        f"{DEFAULT_PG}); each system gets a fresh schema or database there",
    )
    parser.add_argument(
        "--json", default=str(RESULTS / "latest.json"), help="where to write results"
    )
    parser.add_argument("--markdown", help="also write the tables as Markdown to this file")
    parser.add_argument(
        "--dbos-queue-poll",
        type=float,
        default=1.0,
        help="DBOS queue polling interval in seconds (default DBOS's own, 1.0)",
    )
    parser.add_argument("--timeout", type=float, default=600, help="seconds per repetition")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--silent", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args(argv)
    if args.list:
        for case in CASES:
            print(f"{case.name:12} {case.title}")
        raise SystemExit(0)
    if not args.all and not args.cases:
        parser.error("say --all, or pick cases with --cases (see --list)")
    names = [c.name for c in CASES] if args.all else args.cases.split(",")
    for name in names:
        try:
            case_named(name)
        except KeyError:
            parser.error(f"no case {name!r}; the cases are {', '.join(c.name for c in CASES)}")
    args.case_names = names
    args.stores = [s for s in args.stores.split(",") if s]
    args.systems = [s for s in args.systems.split(",") if s]
    for store in args.stores:
        if store not in STORES:
            parser.error(f"no store {store!r}; the stores are {', '.join(STORES)}")
    for system in args.systems:
        if system not in SYSTEMS:
            parser.error(f"no system {system!r}; the systems are {', '.join(SYSTEMS)}")
    return args


def _versions(pg_version: str | None) -> dict[str, Any]:
    import sqlite3

    def dist(name: str) -> str | None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version(name)
        except PackageNotFoundError:
            return None

    def git(*cmd: str) -> str:
        try:
            return subprocess.run(
                ["git", *cmd], cwd=ROOT, capture_output=True, text=True, timeout=10
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    return {
        "replaykit": dist("replaykit"),
        "replaykit_commit": git("rev-parse", "--short", "HEAD")
        + ("+changes" if git("status", "--porcelain", "--", "replaykit") else ""),
        "dbos": dist("dbos"),
        "psycopg": dist("psycopg"),
        "sqlite": sqlite3.sqlite_version,
        "postgresql": pg_version,
        "python": platform.python_version(),
    }


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def main(argv: Sequence[str] | None = None) -> None:
    args = _parse(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    log_path = RESULTS / "workers.log"
    began = time.perf_counter()
    load_before = _load()
    if load_before is not None and load_before > 0.5 * (os.cpu_count() or 1):
        print(
            f"bench: the machine is busy (load average {load_before:.1f} on {os.cpu_count()} "
            "CPUs): figures will be noisy and absolute times inflated",
            file=sys.stderr,
        )
    with open(log_path, "w") as log:
        suite = Suite(args, log)
        pg_version = None
        if "postgres" in args.stores:
            pg_version, why = check_postgres(args.pg)
            if pg_version is None:
                suite.unavailable["postgres"] = why
                print(f"bench: PostgreSQL cases will be skipped: {why}", file=sys.stderr)
        if "dbos" in args.systems and importlib.util.find_spec("dbos") is None:
            suite.unavailable["dbos"] = (
                "DBOS is not installed: pip install -e '.[bench]' to compare with it"
            )
            print(f"bench: {suite.unavailable['dbos']}", file=sys.stderr)
        entries = []
        try:
            for name in args.case_names:
                case = case_named(name)
                for store in args.stores:
                    entries.append(suite.run_case(case, store))
        finally:
            suite.places.remove_all()
    command = "python -m bench " + " ".join(
        shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv)
    )
    data: dict[str, Any] = {
        "meta": {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": command.strip(),
            "seconds": round(time.perf_counter() - began, 1),
            "machine": {
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
                "processor": platform.processor() or platform.machine(),
                # Other work on the machine skews every figure; this says how much there was.
                "load_average_before": load_before,
                "load_average_after": _load(),
            },
            "versions": _versions(pg_version),
            "settings": {
                "quick": args.quick,
                "repeat": args.repeat,
                "dbos_queue_poll": args.dbos_queue_poll,
                "pg": args.pg,
            },
        },
        "results": entries,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(data, f, indent=1, default=str)
    print(header(data))
    print(render(data))
    print(f"\nresults: {args.json}   worker logs: {log_path}")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(render(data, markdown=True) + "\n")
