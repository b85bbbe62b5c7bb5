"""Every example runs, as a user would run it (order.py's crash and recovery on each
store: tests/test_crash_recovery.py; testing_example.py: tests/test_testing_kit.py;
fastapi_app.py: tests/test_fastapi_example.py, under a real uvicorn server)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PG_URL, require_postgres
from replaykit import Client, Status

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
    assert "order-2: failed: card declined for order-2" in first
    assert "order-3: expired, refunded re_ch_order-3" in first
    assert "order-4: PENDING, waiting up to a day for a confirmation" in first
    assert (tmp_path / "replaykit.db").exists()  # the embedded default
    second = run_example([str(ROOT / "examples" / "checkout.py")], tmp_path)
    assert "charging" not in second  # finished runs are not run again
    assert "order-1: shipped parcel-order-1 (confirmed by alice)" in second
    assert "order-4: PENDING, waiting" in second


def test_checkout_leaves_runs_of_each_shape_for_the_cli_and_the_ui(tmp_path: Path) -> None:
    # README: `python examples/checkout.py`, then `replaykit ui` on the same store.
    run_example([str(ROOT / "examples" / "checkout.py")], tmp_path)
    with Client(f"sqlite:///{tmp_path / 'replaykit.db'}") as client:
        runs = {row.workflow_id: row for row in client.list_workflows()}
        statuses = {workflow_id: row.status for workflow_id, row in runs.items()}
        assert statuses == {
            "order-1": Status.SUCCESS,
            "order-2": Status.ERROR,
            "order-3": Status.SUCCESS,
            "order-4": Status.PENDING,
        }
        assert runs["order-2"].error is not None and "card declined" in str(runs["order-2"].error)
        # Waiting for its confirmation: charged, and its Race under way.
        waiting = client.steps("order-4")
        assert [(r.kind, r.outcome is None) for r in waiting] == [("step", False), ("race", True)]
    listed = run_cli(["workflows", "list", "--url", f"sqlite:///{tmp_path / 'replaykit.db'}"])
    for shown in ("order-1", "order-2", "order-3", "order-4", "SUCCESS", "ERROR", "PENDING"):
        assert shown in listed


def run_cli(args: list[str]) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "replaykit", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_order_writes_nothing_where_it_is_run_from(tmp_path: Path) -> None:
    # From the root of a checkout (here a copy of what the example needs), as its
    # docstring says: the crash, then the recovery, leave no file in that directory.
    checkout = tmp_path / "repo"
    shutil.copytree(ROOT / "examples", checkout / "examples")
    before = sorted(p.relative_to(checkout) for p in checkout.rglob("*"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path / "tmp")}
    env.pop("REPLAYKIT_URL", None)
    (tmp_path / "tmp").mkdir()
    script = ["examples/order.py"]
    crashed = subprocess.run(
        [sys.executable, *script, "--crash-after", "3"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.stdout + crashed.stderr
    recovered = subprocess.run(
        [sys.executable, *script], cwd=checkout, env=env, capture_output=True, text=True, timeout=60
    )
    assert recovered.returncode == 0, recovered.stdout + recovered.stderr
    assert "order-42: ['reserve-stock:ok'" in recovered.stdout
    assert sorted(p.relative_to(checkout) for p in checkout.rglob("*")) == before
    demo = tmp_path / "tmp" / "replaykit-order-example"
    assert (demo / "replaykit.db").exists()
    ran = (demo / "order-steps.log").read_text().split()
    # The step that was running at the kill ran again; the ones before it did not.
    assert ran == [
        "reserve-stock",
        "charge-card",
        "create-label",
        "create-label",
        "notify-customer",
        "close-order",
    ]


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
    assert "(timeout 3s)" in out
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


def test_heartbeats(tmp_path: Path) -> None:
    out = run_example([str(ROOT / "examples" / "heartbeats.py")], tmp_path)
    assert re.search(r"import-big: running, \d+ of 4000 rows by its last heartbeat", out), out
    # The stalled first attempt was abandoned; the retry went on from its last beat.
    assert "big.csv: attempt 2 goes on from row 2000" in out
    assert "big.csv: 4000 rows imported" in out
    assert "import-big: 2 attempts; its last heartbeat said 4000 rows, on attempt 2" in out
    assert re.search(
        r"import-other: CANCELLED; the body stopped at a heartbeat \(Cancelled\), \d+ rows",
        out,
    ), out


def test_saga(tmp_path: Path) -> None:
    out = run_example([str(ROOT / "examples" / "saga.py")], tmp_path)
    assert "trip-1: booked flight-trip-1, hotel-trip-1, car-trip-1" in out
    # A failed booking, and a cancel: the compensations run newest first, recorded.
    assert "trip-2: failed (no car left for trip-2); undone: cancel hotel-trip-2, " in out
    assert "was cancelled: the traveller changed plans" in out
    assert "trip-3: undone: cancel car-trip-3, cancel hotel-trip-3, cancel flight-trip-3" in out
    assert "trip-3: CANCELLED" in out
    assert (
        "trip-3 ledger: booked flight for trip-3; booked hotel for trip-3; booked car for "
        "trip-3; cancelled car-trip-3; cancelled hotel-trip-3; cancelled flight-trip-3"
    ) in out


def test_preempted(tmp_path: Path) -> None:
    out = run_example([str(ROOT / "examples" / "preempted.py")], tmp_path)
    assert "nightly-1: CANCELLED; position 0 'reindex' recorded StepPreempted" in out
    assert (
        "nightly-1 resumed: products marked stale for tomorrow; the reindex body ran 1 time(s)"
        in out
    )


@pytest.mark.parametrize("late", [False, True])
def test_webhook_approval(tmp_path: Path, late: bool) -> None:
    out = run_example(
        [str(ROOT / "examples" / "webhook_approval.py"), *(["--late"] if late else [])], tmp_path
    )
    if late:
        assert "refund-17: expired: nobody approved in time" in out
        assert "maria clicks" not in out
    else:
        assert "maria clicks approve: HTTP 204" in out
        assert "maria clicks again:   HTTP 409" in out
        assert "refund-17: approved by maria: refund-refund-17" in out
    assert "a click after the end: HTTP 410" in out
    assert "a forged token:        HTTP 404" in out
    assert list(tmp_path.iterdir()) == []  # the store lived in a temporary folder


def test_purchase(tmp_path: Path) -> None:
    out = run_example([str(ROOT / "examples" / "purchase.py")], tmp_path)
    for order in ("order-1", "order-2", "order-3"):
        assert f"{order}: reserve attempt 1 rate limited; the service asked for 0.3s" in out
        assert f"{order}: reserve attempt 2 reserved the stock" in out
    assert (
        "order-1: took acme's offer at 90 (ch-order-1-90); 2 negotiations cancelled; "
        "run order-1#0, generation 0, attempt 0"
    ) in out
    assert "order-2: cancelled by the customer; 2 negotiations cancelled" in out
    assert "order-3: failed: card declined for order-3 after 1 attempt(s)" in out
    assert "negotiations of order-1: acme CANCELLED, globex CANCELLED" in out


def test_cart_answers_its_callers(tmp_path: Path) -> None:
    out = run_example([str(ROOT / "examples" / "cart.py")], tmp_path)
    assert "add apple: {'items': {'apple': 1}, 'total': 40}" in out
    assert out.count("{'items': {'apple': 1, 'pear': 2}, 'total': 150}") == 3
    assert "refused: add 'fig': a quantity of 0 is not one to add" in out
    assert "checkout failed: ada's card declines 630 cents" in out
    assert "cart-ada: receipt-ada-150" in out
    assert "log: 6 replies recorded; the refused add left none" in out


def test_cart_in_the_testing_kit() -> None:
    from examples.cart import cart
    from replaykit.testing import Update, run

    result = run(
        cart,
        "kit",
        updates=[
            Update("add", "fig", qty=5),
            Update("checkout", at=10, update_id="too-much"),
            Update("add", "kiwi", at=20),
            Update("remove", "fig", at=30),
            Update("checkout", at=40, update_id="empty"),
        ],
        real_steps=True,
    )
    assert "declines 600 cents" in str(result.replies["too-much"].error)
    assert isinstance(result.replies["update-2"].error, KeyError)  # its validator
    assert str(result.replies["empty"].error) == "the cart is empty"
    assert result.result == "abandoned with 0 item(s)"  # nothing more came: idle


def test_tenants_serves_each_tenant_in_turn(tmp_path: Path) -> None:
    out = run_example([str(ROOT / "examples" / "tenants.py")], tmp_path)
    assert "acme has 20 reports waiting" in out
    assert "globex and initech started within the first round: True" in out
    assert "most reports of one tenant running at once: 1" in out
    assert "22 reports built (acme-report-0.pdf, ...); 22 runs listed" in out


def test_debounce(tmp_path: Path) -> None:
    out = run_example([str(ROOT / "examples" / "debounce.py")], tmp_path)
    assert out.count("indexing notes.md") == 1
    assert "indexing notes.md: 'draft two, final'" in out
    # Saves every 0.2 s never leave 0.5 s of quiet: max_wait=1 ends each window.
    assert out.count("indexing log.md") >= 2
    assert "(1 windows)" not in out
    # Two saves, then the engine closed: the next one indexes the last save, once.
    assert out.count("indexing todo.md") == 1
    assert "indexing todo.md: 'todo: ship it'" in out
    assert "todo.md: 3 words indexed" in out


def test_rewind(tmp_path: Path) -> None:
    out = run_example([str(ROOT / "examples" / "rewind.py")], tmp_path)
    assert "order-7 failed: amount 1999 read as euros, not cents" in out
    assert "order-7 rewound: stock held for order-7; invoice INV-2 for order-7; charged" in out
    assert "steps run: reserve, invoice, charge, charge" in out
    assert "its history keeps the failed attempt: amount 1999 read as euros" in out
    # Run again on the same database: a fresh order each time.
    assert "steps run: reserve, invoice, charge, charge" in run_example(
        [str(ROOT / "examples" / "rewind.py")], tmp_path
    )


def test_keyed_starts(tmp_path: Path) -> None:
    out = run_example([str(ROOT / "examples" / "keyed_starts.py")], tmp_path)
    synced = [line for line in out.splitlines() if line.endswith("synced")]
    assert [line for line in synced if line.startswith("customer-42")] == [
        f"customer-42 batch {batch} synced" for batch in range(3)
    ]
    assert len(synced) == 6
    assert "most syncs of one customer at once: 1" in out
    assert "second start answered with the live run: True" in out
    assert "spec.md v2 rendered" in out
    assert "the older preview: CANCELLED" in out


def test_shard_keys(tmp_path: Path) -> None:
    out = run_example([str(ROOT / "examples" / "shard_keys.py")], tmp_path)
    assert "tenant-a: quote 600" in out and "tenant-b: quote 400" in out
    assert (
        "each tenant's family under its own key: "
        "{'tenant-a': {'tenant-a'}, 'tenant-b': {'tenant-b'}}" in out
    )
    assert "a run started without a key is its own: True" in out


def test_shard_keys_on_a_partitioned_postgres_schema(tmp_path: Path) -> None:
    require_postgres()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REPLAYKIT_URL": PG_URL}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "shard_keys.py"), "--partitions", "4"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    placed = re.findall(r"records of shard key '(tenant-[ab])': (\d+) in records_p\d", done.stdout)
    assert sorted(placed) == [("tenant-a", "4"), ("tenant-b", "2")], done.stdout


def test_attributes(tmp_path: Path) -> None:
    out = run_example([str(ROOT / "examples" / "attributes.py")], tmp_path)
    assert "customer 42's failed orders: ['order-2']" in out
    assert "pro plan by status: {'ERROR': 1, 'SUCCESS': 1}" in out
    assert "charged before 11:00 UTC: ['order-1']" in out
    assert "'customer': '42', 'plan': 'pro', 'stage': 'charged'" in out
    # Run again on the same database: the same answers, from fresh runs.
    assert "customer 42's failed orders: ['order-2']" in run_example(
        [str(ROOT / "examples" / "attributes.py")], tmp_path
    )
