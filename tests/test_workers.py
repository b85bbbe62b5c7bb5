"""The scale-out proof: three `replaykit worker` processes drain one queue on PostgreSQL.

A fourth process samples how many runs are PENDING and never sees more than the
queue's concurrency; one worker is SIGKILLed mid-run; every run completes, and
the side table shows no recorded step ran twice except those in flight at the kill.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import drop_schema

ROOT = Path(__file__).resolve().parent.parent
TOTAL = 2000
K = 6

SAMPLER = """
import os, sys, time, psycopg
from psycopg import sql
url, schema, stop_file = sys.argv[1], sys.argv[2], sys.argv[3]
peak = 0
with psycopg.connect(url, autocommit=True) as conn:
    query = sql.SQL(
        "SELECT count(*) FROM {}.workflows WHERE queue = 'proof' AND status = 'PENDING'"
    ).format(sql.Identifier(schema))
    while not os.path.exists(stop_file):
        try:
            peak = max(peak, conn.execute(query).fetchone()[0])
        except psycopg.errors.UndefinedTable:
            pass
        time.sleep(0.005)
print(peak)
"""


@pytest.fixture
def side_schema(pg_url: str) -> Iterator[str]:
    """A schema of this run's own holding the side table `ran`, dropped afterwards.

    A fixed name would let two suite runs on one server share (and drop) one table.
    """
    import psycopg
    from psycopg import sql

    schema = f"proof_side_{uuid.uuid4().hex[:12]}"
    try:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
            conn.execute(
                sql.SQL("CREATE TABLE {}.ran (workflow_id text, step text, pid int)").format(
                    sql.Identifier(schema)
                )
            )
        yield schema
    finally:
        drop_schema(schema)


def spawn_worker(url: str, env: dict[str, str], name: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "replaykit",
            "worker",
            "tests.apps.proof_app",
            "--url",
            url,
            "--queue",
            "proof",
            "--executor-id",
            name,
            "--lease-seconds",
            "2",
            "--poll-interval",
            "0.2",
            "--app-version",
            "proof-v1",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.mark.slow
@pytest.mark.xdist_group("chaos")
def test_three_workers_drain_a_queue_through_a_sigkill(
    pg_url: str,
    pg_schema: str,
    side_schema: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import psycopg
    from psycopg import sql

    from replaykit import Engine, Status

    url = f"{pg_url}?schema={pg_schema}"
    # The step bodies (and so PROOF_PG and PROOF_SCHEMA) run only in the workers.
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PROOF_PG": pg_url,
        "PROOF_SCHEMA": side_schema,
        "PROOF_CONCURRENCY": str(K),
    }
    # This process imports the app too; its queue is built at import from
    # PROOF_CONCURRENCY, so set it here for the test's duration only.
    monkeypatch.setenv("PROOF_CONCURRENCY", str(K))
    from tests.apps.proof_app import proof, proof_item

    stop_file = tmp_path / "stop"
    sampler = subprocess.Popen(
        [sys.executable, "-c", SAMPLER, pg_url, pg_schema, str(stop_file)],
        stdout=subprocess.PIPE,
        text=True,
    )
    workers: list[subprocess.Popen[str]] = []
    try:
        # The producer imports more workflows than a worker (the whole test
        # suite), so pin the version both sides stamp and claim by.
        with Engine(url, queues=[], executor_id="producer", app_version="proof-v1") as producer:
            for i in range(TOTAL):
                producer.enqueue(proof, proof_item, i, workflow_id=f"item-{i}")
            workers = [spawn_worker(url, env, f"worker-{n}") for n in range(3)]
            deadline = time.monotonic() + 120
            # Let the drain get going, then kill one worker without warning.
            while len(producer.list_workflows(status=Status.SUCCESS, limit=TOTAL)) < TOTAL // 4:
                assert time.monotonic() < deadline, "workers did not start draining"
                time.sleep(0.05)
            workers[0].send_signal(signal.SIGKILL)
            while len(producer.list_workflows(status=Status.SUCCESS, limit=TOTAL)) < TOTAL:
                assert time.monotonic() < deadline, "the queue was not drained in time"
                time.sleep(0.1)
            results = {producer.handle(f"item-{i}").result(timeout=10) for i in range(TOTAL)}
            assert results == set(range(TOTAL))
    finally:
        stop_file.touch()
        for worker in workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
        outputs = [w.communicate(timeout=30)[0] for w in workers]
        peak_out, _ = sampler.communicate(timeout=30)
    assert workers[0].returncode == -signal.SIGKILL
    assert all(w.returncode == 0 for w in workers[1:]), outputs[1:]
    assert 0 < int(peak_out.strip()) <= K, f"peak PENDING {peak_out.strip()} > concurrency {K}"

    with psycopg.connect(pg_url, autocommit=True) as conn:
        rows: list[Any] = conn.execute(
            sql.SQL(
                "SELECT workflow_id, step, count(*), array_agg(pid) FROM {}.ran "
                "GROUP BY workflow_id, step"
            ).format(sql.Identifier(side_schema))
        ).fetchall()
    counts = {(w, s): (c, pids) for w, s, c, pids in rows}
    assert len(counts) == TOTAL * 2  # every step of every run ran
    killed_pid = workers[0].pid
    repeated = {key: v for key, v in counts.items() if v[0] > 1}
    # Only steps in flight in the killed worker may have run twice, and then once in it.
    for (workflow_id, step), (count, pids) in repeated.items():
        assert count == 2 and pids.count(killed_pid) == 1, (workflow_id, step, pids)
    assert len(repeated) <= K
