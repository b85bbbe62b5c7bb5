"""Kill -9 a workflow process mid-step, start it again, and count step executions."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ORDER = ROOT / "examples" / "order.py"
STEPS = ["reserve-stock", "charge-card", "create-label", "notify-customer", "close-order"]


def run_order(url: str, side_file: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(ORDER), "--url", url, "--side-file", str(side_file), *extra],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=side_file.parent,
    )


@pytest.mark.slow
@pytest.mark.parametrize("crash_after", [1, 3, 5])
def test_order_survives_kill_9(store_url: str, tmp_path: Path, crash_after: int) -> None:
    if store_url.startswith("memory"):
        pytest.skip("a memory store does not survive its process")
    side = tmp_path / "steps.log"
    crashed = run_order(store_url, side, "--crash-after", str(crash_after))
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    ran_before = side.read_text().split()
    assert ran_before == STEPS[:crash_after]

    finished = run_order(store_url, side)
    assert finished.returncode == 0, finished.stderr
    assert "order-42: [" in finished.stdout

    runs = side.read_text().split()
    for index, name in enumerate(STEPS):
        count = runs.count(name)
        if index + 1 < crash_after:
            assert count == 1, f"{name} committed before the kill but ran {count} times"
        elif index + 1 == crash_after:
            assert 1 <= count <= 2, f"{name} was in flight at the kill; ran {count} times"
        else:
            assert count == 1, f"{name} ran {count} times after recovery"

    again = run_order(store_url, side)
    assert again.returncode == 0 and side.read_text().split() == runs  # nothing re-ran
