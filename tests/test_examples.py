"""Every example runs, as a user would run it (order.py: tests/test_crash_recovery.py;
testing_example.py: tests/test_testing_kit.py; fastapi_app.py:
tests/test_fastapi_example.py, under a real uvicorn server)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_example(args: list[str], cwd: Path, timeout: float = 120) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("REPLAYKIT_URL", None)
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


def test_checkout_runs_on_the_sqlite_default_and_twice(tmp_path: Path) -> None:
    first = run_example([str(ROOT / "examples" / "checkout.py")], tmp_path)
    assert "charging 4200 for order-1" in first
    assert "order-1: shipped parcel-order-1 (confirmed by alice)" in first
    assert (tmp_path / "replaykit.db").exists()  # the embedded default
    second = run_example([str(ROOT / "examples" / "checkout.py")], tmp_path)
    assert "charging" not in second  # finished runs are not run again
    assert "order-1: shipped parcel-order-1 (confirmed by alice)" in second


@pytest.mark.parametrize(
    ("flag", "expected"), [([], "approved by maria"), (["--late"], "escalated")]
)
def test_approval(tmp_path: Path, flag: list[str], expected: str) -> None:
    out = run_example([str(ROOT / "examples" / "approval.py"), *flag], tmp_path)
    assert expected in out


def test_fanout(tmp_path: Path) -> None:
    out = run_example([str(ROOT / "examples" / "fanout.py")], tmp_path)
    assert "report-1: total 4500 from 10 regions" in out
    assert out.count("SUCCESS") == 3


def test_restock(tmp_path: Path) -> None:
    out = run_example([str(ROOT / "examples" / "restock.py")], tmp_path)
    assert "while three restocks wait: label for crate-9" in out
    assert "bolts: po-bolts-40x0.12 into slot-bolts" in out
    assert "nuts: po-nuts-40x0.05 into slot-nuts" in out
    assert "released slot-washers" in out and "washers: no quote in time" in out


def test_streams(tmp_path: Path) -> None:
    out = run_example([str(ROOT / "examples" / "streams.py")], tmp_path)
    lines = [line.strip() for line in out.splitlines() if "progress:" in line]
    assert lines == [
        f"progress: {p:3d}% ({rows} rows)"
        for p, rows in zip((20, 40, 60, 80, 100), (200, 410, 630, 860, 1100), strict=True)
    ]
    assert out.rstrip().endswith("batch-7: 1100 rows")


def test_deadlines(tmp_path: Path) -> None:
    out = run_example([str(ROOT / "examples" / "deadlines.py")], tmp_path)
    assert "report-fast: total 800 from 3 regions" in out
    assert "report-slow: workflow 'build_report' (id 'report-slow') was cancelled: it timed " in out
    assert "(timeout 1s)" in out
    assert "report-slow: CANCELLED; its 3 region runs: CANCELLED" in out


def test_poller_continues_as_new_with_a_bounded_log(tmp_path: Path) -> None:
    out = run_example([str(ROOT / "examples" / "poller.py")], tmp_path)
    assert "poller-1: forwarded 17 items in 50 polls" in out
    assert out.count("CONTINUED") == 4
    assert "poller-1 (generation 4): SUCCESS" in out


def test_worker_example_drains_through_replaykit_worker(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'queue.db'}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "replaykit",
            "worker",
            "examples.worker.workflows",
            "--url",
            url,
            "--queue",
            "thumbnails",
            "--poll-interval",
            "0.1",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        out = run_example(
            ["-m", "examples.worker.producer", "--url", url, "--count", "12", "--batch", "t"],
            ROOT,
        )
        assert "12 images done" in out and "by 1 worker process(es)" in out
    finally:
        worker.send_signal(signal.SIGTERM)
        output, _ = worker.communicate(timeout=60)
    assert worker.returncode == 0, output
