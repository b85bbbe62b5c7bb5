"""`engine.serve()`: a plain process stops on SIGTERM as gracefully as `replaykit worker`
(torture report, issue 13, fault 7): running steps, an All's children included, finish
and commit before it exits, and nothing runs again after the restart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from replaykit import Engine

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "tests" / "apps" / "serve_app.py"


def _ledger(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split() if path.exists() else []


def _wait_for(predicate: object, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.mark.parametrize("stop_during", ["alone", "all"])
def test_sigterm_lets_running_steps_finish_and_commit(tmp_path: Path, stop_during: str) -> None:
    url = f"sqlite:///{tmp_path / 'serve.db'}"
    ledger = tmp_path / "ledger"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LEDGER": str(ledger)}
    app = subprocess.Popen(
        [sys.executable, str(APP), url, "start"], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert app.stdout is not None and app.stdout.readline().strip() == "started"
        if stop_during == "all":
            _wait_for(lambda: _ledger(ledger) == ["alone"], "the first step did not finish")
        time.sleep(0.4)  # well inside the second's sleep of what runs now
        app.send_signal(signal.SIGTERM)
        assert app.wait(timeout=30) == 0
    finally:
        app.kill()
        if app.stdout is not None:
            app.stdout.close()
    ran = _ledger(ledger)
    expected = ["alone"] if stop_during == "alone" else ["alone", "a", "b", "c"]
    assert sorted(ran) == sorted(expected)  # what ran at SIGTERM finished
    with Engine(url, recover=False) as engine:
        kinds = [record.kind for record in engine.steps("served")]
    assert kinds == (["step"] if stop_during == "alone" else ["step", "all"])  # and committed
    finish = subprocess.run(
        [sys.executable, str(APP), url, "finish"], env=env, capture_output=True, text=True
    )
    assert finish.returncode == 0, finish.stderr
    assert finish.stdout.strip() == "['alone', 'a', 'b', 'c']"
    assert sorted(_ledger(ledger)) == ["a", "alone", "b", "c"]  # none ran twice


def test_serve_from_another_thread_needs_a_stop_event(tmp_path: Path) -> None:
    with Engine("memory://") as engine:
        failure: list[BaseException] = []

        def serve_here() -> None:
            try:
                engine.serve()
            except RuntimeError as exc:
                failure.append(exc)

        thread = threading.Thread(target=serve_here)
        thread.start()
        thread.join(10)
        assert failure and "stop=threading.Event()" in str(failure[0])
        stop = threading.Event()
        stop.set()
        served = threading.Thread(target=lambda: engine.serve(stop=stop))
        served.start()
        served.join(10)
        assert engine.closed
