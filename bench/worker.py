"""One system on one store, in a process of its own, run by `bench.suite`.

    python -m bench.worker '<spec as JSON>'

The orchestrator writes `run <rep>` or `quit` lines to stdin; the worker answers
each with one line starting with `MARK` followed by JSON on stdout. Anything
else a library prints is passed through and ignored, so a chatty logger cannot
be mistaken for a reply.

A process per system keeps the systems apart: DBOS is a process-wide singleton,
each system's threads and pools are its own, and memory is read per process.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
import urllib.parse
from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["MARK", "System", "Worker", "main", "make_system", "scaled"]

MARK = "@@bench@@ "

#: Which class implements each system (imported only in that system's worker:
#: the DBOS worker is the only process that imports dbos).
_SYSTEM_CLASSES = {
    "floor": "bench.sys_floor:Floor",
    "replaykit": "bench.sys_replaykit:Replaykit",
    "dbos": "bench.sys_dbos:Dbos",
}


class System(Protocol):
    def setup(self) -> dict[str, Any]:
        """Connect, create what the case needs, warm up; returns facts for the report."""
        ...

    def run(self, rep: int) -> dict[str, Any]:
        """One timed repetition: {"metrics": {name: number}, optional "variant", "notes"}."""
        ...

    def teardown(self) -> None: ...


class Worker:
    """What every system shares: the spec, and dispatch from a case name to a method."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.spec = spec
        self.case: str = spec["case"]
        self.mode: str = spec.get("mode", "")
        self.store: str = spec["store"]
        self.sizes: dict[str, int] = dict(spec["sizes"])
        self.target: dict[str, Any] = dict(spec["target"])
        self.options: dict[str, Any] = dict(spec.get("options", {}))
        self.timeout: float = float(self.options.get("timeout", 600))

    @property
    def local_server(self) -> bool:
        """Whether the case's database is a PostgreSQL server on this machine (its CPU is read)."""
        if self.store != "postgres":
            return False
        parts = urllib.parse.urlsplit(self.target["url"])
        hosts = urllib.parse.parse_qs(parts.query).get("host", [parts.hostname or ""])
        return all(
            host in ("", "localhost", "127.0.0.1", "::1") or host.startswith("/") for host in hosts
        )

    def case_method(self) -> Any:
        method = getattr(self, f"case_{self.case}", None)
        if method is None:
            raise NotImplementedError(f"{type(self).__name__} does not run the {self.case!r} case")
        return method

    def warm_up(self) -> None:
        """Run the case once at a tenth of its size, untimed: imports, caches, pools, JITs."""
        if self.case == "sleepers":
            return  # the sleepers case warms up inside its one run
        self.case_method()("warm", scaled(self.sizes, 0.1))

    def run(self, rep: int) -> dict[str, Any]:
        result: dict[str, Any] = self.case_method()(f"r{rep}", self.sizes)
        return result


def scaled(sizes: Mapping[str, int], factor: float) -> dict[str, int]:
    """`sizes` shrunk by `factor`; per-workflow step counts keep their shape."""
    keep = {"steps"} if "workflows" in sizes else set()
    return {k: v if k in keep else max(1, int(v * factor)) for k, v in sizes.items()}


def _emit(kind: str, **payload: Any) -> None:
    sys.stdout.write(MARK + json.dumps({"kind": kind, **payload}, default=str) + "\n")
    sys.stdout.flush()


def make_system(spec: Mapping[str, Any]) -> System:
    module_name, _, class_name = _SYSTEM_CLASSES[spec["system"]].partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    system: System = cls(spec)
    return system


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    spec = json.loads(args[0])
    try:
        system = make_system(spec)
        info = system.setup()
    except Exception as exc:
        _emit("ready", ok=False, error=_describe(exc))
        sys.stdout.flush()
        os._exit(1)
    _emit("ready", ok=True, info=info)
    for line in sys.stdin:
        command = line.split()
        if not command or command[0] == "quit":
            break
        if command[0] == "run":
            try:
                result = system.run(int(command[1]))
            except Exception as exc:
                _emit("result", ok=False, error=_describe(exc))
            else:
                _emit("result", ok=True, **result)
    try:
        system.teardown()
    except Exception:
        traceback.print_exc()
    sys.stdout.flush()
    sys.stderr.flush()
    # Leave without joining threads: DBOS's sleeping workflows hold theirs for an
    # hour, and the orchestrator drops the database afterwards anyway.
    os._exit(0)


def _describe(exc: BaseException) -> str:
    traceback.print_exc()
    return f"{type(exc).__name__}: {exc}"


if __name__ == "__main__":
    main()
