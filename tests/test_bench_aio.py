"""bench/bench_aio.py at tiny sizes: every case produces its figures (none is judged here)."""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.bench_aio import (
    aio_throughput,
    idle_lag,
    lag_beside_sync,
    percentiles,
    sleepers_child,
    sync_throughput,
)
from conftest import PG_URL, require_postgres

ROOT = Path(__file__).resolve().parent.parent


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(100, 0, -1)]  # 1..100, unsorted
    assert percentiles(values) == {"count": 100, "p50": 50.0, "p99": 99.0, "max": 100.0}
    assert percentiles([3.0]) == {"count": 1, "p50": 3.0, "p99": 3.0, "max": 3.0}
    empty = percentiles([])
    assert empty["count"] == 0 and math.isnan(empty["p99"])


def test_the_ticker_records_lags_in_milliseconds() -> None:
    lag = asyncio.run(idle_lag(0.05))
    assert lag["count"] > 5
    assert 0.0 <= lag["p50"] <= lag["p99"] <= lag["max"]


def test_throughput_figures_on_postgres(pg_schema: str) -> None:
    url = f"{PG_URL}?schema={pg_schema}"
    for body in ("async", "sync"):
        figures = asyncio.run(aio_throughput(url, body, 4, 2, timeout=60, lag=True))
        assert figures["steps"] == 8 and figures["steps_per_s"] > 0
        assert "p99" in figures["lag_ms"]
    assert sync_throughput(url, 4, 2, timeout=60)["steps_per_s"] > 0
    beside = asyncio.run(lag_beside_sync(url, 4, 2, timeout=60))
    assert beside["steps"] == 8 and "p99" in beside["lag_ms"]


@pytest.mark.parametrize("wait", ["sleep", "recv"])
def test_sleepers_figures_on_sqlite(tmp_path: Path, wait: str) -> None:
    spec = {
        "url": f"sqlite:///{tmp_path / 'sleepers.db'}",
        "mode": "rss",
        "wait": wait,
        "sleepers": 20,
        "timeout": 60,
    }
    figures = sleepers_child(spec)
    assert figures["sleepers"] == 20 and "bytes_per_sleeper_rss" in figures
    counts = figures["counts"]
    assert {"before_engine", "engine_open", "after_warm", "before_a", "after_b"} <= set(counts)
    assert counts["after_b"]["tasks"] == counts["before_a"]["tasks"]
    assert (figures["warm_runs"] > 0) == (wait == "recv")


def test_the_script_prints_every_figure() -> None:
    """The whole script at tiny sizes, DBOS included when it is installed."""
    require_postgres()
    pytest.importorskip("dbos")
    tiny = "--n 4 --steps 2 --sleepers 20 --repeat 1 --idle 0.1 --stores sqlite --waits sleep"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.bench_aio", *tiny.split(), "--timeout", "60", "--pg", PG_URL],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "failed" not in out, out
    for label in ("AsyncEngine, async def bodies", "sync Engine", "DBOS async API"):
        assert any(label in line and "steps/s" in line for line in out.splitlines()), label
    assert "/ DBOS:" in out and "idle loop (baseline)" in out and "p99" in out
    assert "asyncio tasks" in out and "KiB per sleeper" in out
    assert '"throughput"' in out.splitlines()[-1]
