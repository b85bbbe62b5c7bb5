"""The benchmark suite's own arithmetic: medians, paired ratios, targets, CPU accounts.

The figures in docs/performance.md are only as good as this code, so it is
tested like the library. Nothing here times anything.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from bench.cases import CASES, case_named
from bench.measure import CpuReading, cpu_per, cpu_reading, per_step
from bench.report import summarize
from bench.worker import Worker
from conftest import require_postgres


def _entry(store: str, reps: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    return {
        "case": "sequential",
        "store": store,
        "systems": {
            system: {"reps": [{"rep": i, "metrics": m} for i, m in enumerate(metrics)]}
            for system, metrics in reps.items()
        },
    }


def test_checks_are_ratios_of_medians_judged_only_on_their_stores() -> None:
    reps = {
        "replaykit": [{"ms_per_step": 0.5}, {"ms_per_step": 0.7}, {"ms_per_step": 0.6}],
        "dbos": [{"ms_per_step": 3.0}, {"ms_per_step": 2.8}, {"ms_per_step": 3.6}],
        "floor": [{"ms_per_op": 0.3}, {"ms_per_op": 0.25}, {"ms_per_op": 0.35}],
    }
    postgres = _entry("postgres", reps)
    summarize(postgres)
    checks = {c["label"]: c for c in postgres["checks"]}
    to_floor = checks["replaykit step / floor insert"]
    assert to_floor["value"] == pytest.approx(0.6 / 0.3)
    assert to_floor["target"] == "<= 1.3x" and to_floor["met"] is False
    to_dbos = checks["DBOS step / replaykit step"]
    assert to_dbos["value"] == pytest.approx(3.0 / 0.6)
    assert to_dbos["met"] is True  # exactly 5x meets ">= 5x"
    # Within each repetition: 3.0/0.5, 2.8/0.7, 3.6/0.6 -> median 6.0.
    assert to_dbos["paired"] == pytest.approx(6.0)

    sqlite = _entry("sqlite", reps)
    summarize(sqlite)
    for check in sqlite["checks"]:
        assert check["target"] == "" and check["met"] is None  # targets name PostgreSQL only


def test_a_missing_system_leaves_its_checks_without_a_value() -> None:
    entry = _entry("postgres", {"replaykit": [{"ms_per_step": 0.5}]})
    summarize(entry)
    assert all(check["value"] is None and check["met"] is None for check in entry["checks"])


def test_every_row_and_check_names_a_system_the_case_runs() -> None:
    for case in CASES:
        for row in case.rows:
            assert set(row.metrics) <= set(case.systems), (case.name, row.label)
        for check in case.checks:
            assert check.num[0] in case.systems, (case.name, check.label)
            assert check.den is None or check.den[0] in case.systems, (case.name, check.label)
    assert case_named("concurrent").sizes == {"workflows": 100, "steps": 10}


def test_cpu_figures_per_step() -> None:
    figures = per_step(2.0, 200, 10, cpu=(0.5, 0.25))
    assert figures["ms_per_step"] == pytest.approx(1.0)
    assert figures["client_cpu_us_per_step"] == pytest.approx(250.0)
    assert figures["server_cpu_us_per_step"] == pytest.approx(125.0)
    assert "server_cpu_us_per_step" not in per_step(2.0, 200, 10, cpu=(0.5, None))
    assert cpu_per(None, 10, "op") == {}
    assert CpuReading(3.0, 7.0).since(CpuReading(1.0, 4.0)) == (2.0, 3.0)
    assert CpuReading(3.0, None).since(CpuReading(1.0, 4.0)) == (2.0, None)


def test_client_cpu_counts_work_and_not_sleep() -> None:
    before = cpu_reading(server=False)
    time.sleep(0.05)
    slept = cpu_reading(server=False).since(before)[0]
    before = cpu_reading(server=False)
    # Work for 0.05 s of this process's CPU, not of the wall clock: on a loaded
    # machine 0.05 s of wall time may hold much less CPU than that.
    start = time.process_time()
    while time.process_time() - start < 0.05:
        pass
    worked = cpu_reading(server=False).since(before)[0]
    assert slept < 0.03 < worked


def test_server_cpu_is_read_from_the_local_postgresql() -> None:
    require_postgres()
    reading = cpu_reading(server=True)
    assert reading.server is not None and reading.server > 0


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("postgresql://postgres@127.0.0.1:5432/test", True),
        ("postgresql://u@localhost/db", True),
        ("postgresql:///db?host=/var/run/postgresql", True),
        ("postgresql://u@db.example.com:5432/db", False),
        ("postgresql://u@127.0.0.1/db?host=db.example.com", False),
    ],
)
def test_server_cpu_is_read_only_for_a_server_on_this_machine(url: str, local: bool) -> None:
    spec = {"case": "floor", "store": "postgres", "sizes": {}, "target": {"url": url}}
    assert Worker(spec).local_server is local
    assert Worker({**spec, "store": "sqlite", "target": {"path": "x"}}).local_server is False


def test_runtime_bench_sizes_ratios_and_growth() -> None:
    from bench.bench_runtime import growth, parse_sizes, ratio, rounded

    assert parse_sizes("2000, 250,250") == [250, 2000]
    with pytest.raises(ValueError):
        parse_sizes("0,10")
    assert ratio(6.0, 2.0) == pytest.approx(3.0)
    assert ratio(None, 2.0) is None and ratio(1.0, 0.0) is None
    # 8x the size: 8x the time is linear (k = 1), 64x quadratic (k = 2).
    assert growth(250, 1.0, 2000, 8.0) == pytest.approx((8.0, 8.0, 1.0))
    assert growth(250, 0.5, 2000, 32.0)[2] == pytest.approx(2.0)
    with pytest.raises(ValueError):
        growth(500, 1.0, 250, 2.0)
    assert rounded({"a": [1234.5678, float("nan")], "b": 2}) == {"a": [1230.0, None], "b": 2}


def test_runtime_bench_skips_the_sizes_after_one_over_budget() -> None:
    from bench.bench_runtime import run_sizes

    took = {250: 10.0, 500: 130.0, 1000: 1.0}
    outcome = run_sizes([250, 500, 1000], lambda n: (took[n], n * 2), budget=120.0)
    assert outcome.results == {250: 500, 500: 1000}
    assert outcome.skipped == [1000] and "500" in outcome.why
    # The last size may overrun without anything to skip.
    assert run_sizes([250], lambda n: (500.0, n), budget=120.0).skipped == []

    def timeout_at_500(n: int) -> tuple[float, int]:
        if n == 500:
            raise TimeoutError("not finished after 600 s")
        return 1.0, n

    outcome = run_sizes([250, 500, 1000], timeout_at_500, budget=120.0)
    assert outcome.results == {250: 250}
    assert outcome.skipped == [500, 1000] and "600 s" in outcome.why


def test_runtime_bench_cache_variants_follow_the_engine_signature() -> None:
    from bench.bench_runtime import cache_variants

    class NoCache:
        def __init__(self, target: str, *, strict: bool = False) -> None: ...

    class BigCache:
        def __init__(self, target: str, *, max_cached_runs: int = 10_000) -> None: ...

    class SmallCache:
        def __init__(self, target: str, *, max_cached_runs: int = 100) -> None: ...

    assert cache_variants(NoCache, 2200) == [("no cache", {})]
    evicted, warm = cache_variants(BigCache, 2200)
    assert evicted[1] == {"max_cached_runs": 0} and warm[1] == {}
    assert cache_variants(SmallCache, 2200)[1][1] == {"max_cached_runs": 2200}


def test_updates_bench_at_a_tiny_size(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.bench_updates import main, percentile

    assert percentile([5.0, 1.0, 3.0, 2.0], 50) == 2.0
    assert percentile([5.0, 1.0, 3.0, 2.0], 99) == 5.0
    main(["--rounds", "3", "--warmup", "1", "--stores", "sqlite"])
    out = capsys.readouterr().out
    assert "sqlite: 3 round trips of each kind, run warm" in out
    assert "update / send + get_event: p50" in out


def test_partitions_bench_at_a_tiny_size(capsys: pytest.CaptureFixture[str]) -> None:
    require_postgres()
    from bench.bench_partitions import main

    main(["--count", "60", "--keys", "6", "--room", "5", "--claims", "2", "--backlog", "50"])
    out = capsys.readouterr().out
    assert "partition_concurrency=1:" in out and "x (target >= 0.7x)" in out
    # The plain queue claims the lone run after the whole backlog; a partitioned one at once.
    assert "no partitions:                           claimed in round 11" in out
    assert "partitioned:                             claimed in round 1" in out
    assert "claim_partitioned:" in out


def test_fleet_bench_at_a_tiny_size(capsys: pytest.CaptureFixture[str]) -> None:
    require_postgres()
    from bench import bench_fleet

    sizes = ["--runs", "20", "--steps", "2", "--engines", "1,2"]
    bench_fleet.main([*sizes, "--sleepers", "20", "--sleeper-engines", "1", "--sleep-margin", "4"])
    out = capsys.readouterr().out
    assert "2 process(es):" in out and "steps/s" in out
    assert "20 sleepers on 1 engine process(es)" in out
    assert "| woken after due, p50 (s) |" in out


def test_sleepers_bench_side_by_side_at_a_tiny_size(capsys: pytest.CaptureFixture[str]) -> None:
    require_postgres()
    from bench import bench_sleepers

    # This checkout as its own "before": the two columns and their ratios are printed.
    before = str(bench_sleepers.ROOT)
    bench_sleepers.main(
        ["--sleepers", "20", "--engines", "1", "--spread", "1", "--margin", "4", "--before", before]
    )
    out = capsys.readouterr().out
    assert "| | before | after | ratio |" in out
    assert "| per sleeper (B) |" in out and "| woken after due, p99 (s; target 1) |" in out


def test_retention_bench_at_a_tiny_size(capsys: pytest.CaptureFixture[str]) -> None:
    require_postgres()
    from bench import bench_retention

    bench_retention.main(["--runs", "30", "--records", "2"])
    out = capsys.readouterr().out
    assert "retention: 30 deleted in" in out
    assert "one DELETE (baseline): 30 deleted in" in out


def test_bulk_bench_at_a_tiny_size(capsys: pytest.CaptureFixture[str]) -> None:
    require_postgres()
    from bench import bench_bulk

    bench_bulk.main(["--runs", "40", "--window", "0.5", "--loops", "1", "--steps", "2"])
    out = capsys.readouterr().out
    assert "bulk cancel of 40 queued runs" in out and "0 left ENQUEUED" in out
    assert "cancelled 40 of 40 matching run(s); 0 skipped" in out
    assert "during the bulk cancel" in out and "during / before = " in out


def test_operating_bench_at_a_tiny_size(capsys: pytest.CaptureFixture[str]) -> None:
    require_postgres()
    from bench import bench_operating

    bench_operating.main(["--runs", "200", "--baseline", "20", "--repeat", "2"])
    out = capsys.readouterr().out
    assert "200 runs written in" in out
    assert "list: FAILED in one hour, 50" in out
    assert "UI: runs page" in out
