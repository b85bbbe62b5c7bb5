"""replaykit/stores/_holds.py: one live engine per executor id and version.

The holds the memory store (`LocalHolds`) and SQLite (`FileHolds`) keep, asked
directly; a killed process's hold and PostgreSQL's advisory locks are in
tests/test_executor_holds.py.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from replaykit.stores._holds import FileHolds, LocalHolds


@pytest.fixture(params=["local", "file"])
def holds(request: pytest.FixtureRequest, tmp_path: Path) -> LocalHolds | FileHolds:
    return LocalHolds() if request.param == "local" else FileHolds(str(tmp_path / "app.db"))


def test_an_id_is_held_once_per_version_until_released(holds: LocalHolds | FileHolds) -> None:
    hold = holds.hold("worker", "v1")
    assert hold is not None and hold.keep()
    assert holds.hold("worker", "v1") is None
    other_version = holds.hold("worker", "v2")  # a rolling deploy: both run
    assert other_version is not None
    hold.release()
    hold.release()  # idempotent
    assert not hold.keep()
    again = holds.hold("worker", "v1")
    assert again is not None
    again.release()
    other_version.release()


def test_the_holder_says_where_it_runs_and_only_while_it_holds(
    holds: LocalHolds | FileHolds,
) -> None:
    assert holds.holder("worker", "v1") == ""
    hold = holds.hold("worker", "v1")
    assert hold is not None
    described = holds.holder("worker", "v1")
    assert f"host {socket.gethostname()}, pid {os.getpid()}, since " in described
    hold.release()
    assert holds.holder("worker", "v1") == ""


def test_a_probe_holds_a_dead_engines_id_for_the_takeover_only(
    holds: LocalHolds | FileHolds,
) -> None:
    free = holds.probe("dead", "v1")
    assert free is not None
    assert holds.hold("dead", "v1") is None  # held by the takeover meanwhile
    free()
    hold = holds.hold("dead", "v1")
    assert hold is not None
    assert holds.probe("dead", "v1") is None  # a live engine's id is never taken
    hold.release()


def test_file_holds_live_beside_the_database_with_safe_names(tmp_path: Path) -> None:
    holds = FileHolds(str(tmp_path / "app.db"))
    hold = holds.hold("../../etc/passwd\x00", "v1")
    assert hold is not None
    files = list((tmp_path / "app.db.executors").iterdir())
    assert len(files) == 1 and files[0].name.endswith(".lock") and len(files[0].name) == 37
    # Two FileHolds on one database (two engines of one process) exclude each other.
    assert FileHolds(str(tmp_path / "app.db")).hold("../../etc/passwd\x00", "v1") is None
    hold.release()
