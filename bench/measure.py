"""Clocks and memory readings shared by the workers."""

from __future__ import annotations

import ctypes
import gc
import os
import threading
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CpuReading",
    "MemoryReading",
    "cpu_per",
    "cpu_reading",
    "measure_sleepers",
    "per_step",
    "read_memory",
    "rss_bytes",
    "timed",
    "timed_cpu",
    "wait_until",
]

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

try:  # glibc keeps freed memory in its arenas; malloc_trim hands it back so RSS means "held".
    _malloc_trim: Callable[[int], int] | None = ctypes.CDLL("libc.so.6").malloc_trim
except (OSError, AttributeError):
    _malloc_trim = None


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


@dataclass(frozen=True)
class CpuReading:
    """CPU seconds used so far: by this process, and by the local PostgreSQL server (or None)."""

    client: float
    server: float | None

    def since(self, earlier: CpuReading) -> tuple[float, float | None]:
        server = (
            None if self.server is None or earlier.server is None else self.server - earlier.server
        )
        return self.client - earlier.client, server


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _postgres_cpu() -> float | None:
    """CPU seconds of every process named `postgres` on this machine (Linux /proc).

    The postmaster's children-time fields hold what exited backends used, so
    the sum stays right when connections come and go. None where /proc is not
    there or no such process is visible (the server is elsewhere).
    """
    total, seen = 0, False
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        if name != "postgres":
            continue
        # Fields after the name: utime, stime, cutime, cstime are the 12th-15th.
        fields = stat[stat.rfind(")") + 2 :].split()
        total += sum(int(value) for value in fields[11:15])
        seen = True
    return total / _TICKS if seen else None


def cpu_reading(server: bool) -> CpuReading:
    """Read the CPU clocks; `server` says whether the database server is a local PostgreSQL."""
    return CpuReading(time.process_time(), _postgres_cpu() if server else None)


def rss_bytes() -> int:
    """Resident set size of this process (Linux /proc; 0 where unavailable)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except OSError:
        return 0


@dataclass(frozen=True)
class MemoryReading:
    python_heap: int  # bytes traced by tracemalloc (0 if it is not tracing)
    rss: int
    threads: int


def read_memory() -> MemoryReading:
    # Collect first so garbage left from starting the workflows is not counted as held.
    gc.collect()
    if _malloc_trim is not None:
        _malloc_trim(0)
    heap = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
    return MemoryReading(heap, rss_bytes(), threading.active_count())


def wait_until(
    predicate: Callable[[], bool], timeout: float, what: str, poll: float = 0.05
) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(poll)


def per_step(
    total: float, workflows: int, steps: int, cpu: tuple[float, float | None] | None = None
) -> dict[str, float]:
    """The figures of a run of `workflows` workflows of `steps` steps that took `total` s.

    `cpu`, if measured: (this process's CPU seconds, the local PostgreSQL
    server's or None) over the same run.
    """
    figures = {
        "workflows": workflows,
        "steps": workflows * steps,
        "total_s": total,
        "ms_per_step": total / (workflows * steps) * 1000,
        "ms_per_workflow": total / workflows * 1000,
        "steps_per_s": workflows * steps / total,
    }
    figures.update(cpu_per(cpu, workflows * steps, "step"))
    return figures


def cpu_per(cpu: tuple[float, float | None] | None, count: int, unit: str) -> dict[str, float]:
    """CPU microseconds per `unit`: `client_cpu_us_per_<unit>`, `server_cpu_us_per_<unit>`."""
    if cpu is None:
        return {}
    client, server = cpu
    figures = {f"client_cpu_us_per_{unit}": client / count * 1e6}
    if server is not None:
        figures[f"server_cpu_us_per_{unit}"] = server / count * 1e6
    return figures


def timed_cpu(server: bool, fn: Callable[[], Any]) -> tuple[float, tuple[float, float | None], Any]:
    """`fn()` timed on the wall clock and on the CPU clocks of `cpu_reading`."""
    before = cpu_reading(server)
    total, value = timed(fn)
    return total, cpu_reading(server).since(before), value


def measure_sleepers(
    start: Callable[[str, int], float], sleepers: int, warm: int, mode: str
) -> dict[str, float]:
    """What sleeping workflows hold, from the growth between memory readings.

    `start(prefix, count)` starts `count` sleepers with ids from `prefix`, returns
    once all of them are asleep, and says how long that took. `warm` sleepers go
    first, so pools, connections and caches exist before the first reading.

    mode "rss" (no tracing): two batches of `sleepers / 2`; the growth of RSS
    and of the thread count over the second batch, divided by its size, is the
    marginal cost of a sleeper: bounded costs that the first batch may still
    have been paying (a thread pool reaching its size, SQLite's page cache
    filling) are not. The growth over both batches is kept as `..._all`.
    mode "traced": the worker traced allocations since before the engine
    existed; the traced growth over one batch, divided by its size, is what
    Python objects a sleeper holds. (A process of its own, because tracemalloc's
    bookkeeping, tens of bytes per live block, would otherwise count as RSS.)
    """
    start("warm", warm)
    base = read_memory()
    if mode == "traced":
        if not tracemalloc.is_tracing():
            raise RuntimeError("mode 'traced' needs tracemalloc started before the engine")
        start("t", sleepers)
        after = read_memory()
        return {
            "traced_sleepers": sleepers,
            "bytes_per_sleeper_py": (after.python_heap - base.python_heap) / sleepers,
            "total_started": warm + sleepers,
        }
    half = sleepers // 2
    first_s = start("a", half)
    mid = read_memory()
    second_s = start("b", sleepers - half)
    full = read_memory()
    return {
        "sleepers": sleepers,
        "bytes_per_sleeper_rss": (full.rss - mid.rss) / (sleepers - half),
        "bytes_per_sleeper_rss_all": (full.rss - base.rss) / sleepers,
        "threads_base": base.threads,
        "threads_mid": mid.threads,
        "threads_full": full.threads,
        "threads_per_sleeper": (full.threads - mid.threads) / (sleepers - half),
        "threads_per_sleeper_all": (full.threads - base.threads) / sleepers,
        "ms_per_start": (first_s + second_s) / sleepers * 1000,
        "rss_total_mib": full.rss / 2**20,
        "total_started": warm + sleepers,
    }
