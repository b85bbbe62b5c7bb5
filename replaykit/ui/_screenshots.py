"""Screenshots of the UI's main pages for the docs, taken in headless Chromium.

    python -m replaykit.ui._screenshots docs/images

Fills a temporary SQLite store with a small shop's runs (finished, failed,
waiting, with children, queued), serves the UI on a free loopback port and
has Debian's chromium (through /usr/bin/chromedriver, driven by selenium)
save runs.png, run.png, run-children.png, queues.png, schedules.png and
workers.png. Needs `replaykit[test]` and `apt-get install chromium chromium-driver`.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from collections.abc import Generator
from datetime import timedelta
from pathlib import Path
from typing import Any

from replaykit import All, Call, Engine, Queue, Race, Recv, SetEvent, Sleep, Step, workflow
from replaykit.runtime.schedules import Schedule

__all__ = ["main", "populate"]


class CarrierUnavailable(Exception):
    pass


def charge_card(order_id: str, amount: int) -> dict[str, Any]:
    time.sleep(0.04)
    return {"charge": f"ch_{order_id}", "amount": amount}


def reserve_stock(order_id: str) -> list[str]:
    time.sleep(0.02)
    return [f"sku-{order_id[-2:]}-a", f"sku-{order_id[-2:]}-b"]


def book_carrier(order_id: str) -> str:
    time.sleep(0.03)
    if order_id.endswith("3"):
        raise CarrierUnavailable(f"carrier API answered 503 for {order_id}; try again later")
    return f"parcel-{order_id}"


def pack(item: str) -> str:
    time.sleep(0.02)
    return f"box({item})"


def notify(text: str) -> None:
    time.sleep(0.01)


@workflow(name="checkout")
def checkout(order_id: str, amount: int) -> Generator[Any, Any, str]:
    charge = yield Step("charge", charge_card, order_id, amount)
    yield SetEvent("stage", "charged")
    yield Step("reserve", reserve_stock, order_id)
    winner, _ = yield Race(Recv("confirm"), Sleep(timedelta(days=1)))
    if winner == 1:
        return "expired"
    yield SetEvent("stage", "confirmed")
    parcel = yield Step("ship", book_carrier, order_id)
    return f"{parcel} for {charge['charge']}"


@workflow(name="pack-item")
def pack_item(item: str) -> Generator[Any, Any, str]:
    box: str = yield Step("pack", pack, item)
    return box


@workflow(name="fulfil-batch")
def fulfil_batch(items: list[str]) -> Generator[Any, Any, list[str]]:
    boxes = yield All(*(Call(pack_item, item) for item in items))
    yield Step("notify", notify, f"{len(boxes)} boxes ready")
    return list(boxes)


@workflow(name="send-receipt")
def send_receipt(order_id: str) -> Generator[Any, Any, None]:
    yield Step("send", notify, order_id)


@workflow(name="await-pickup")
def await_pickup(order_id: str) -> Generator[Any, Any, None]:
    yield Step("label", notify, order_id)
    yield Sleep(timedelta(hours=6))


@workflow(name="nightly-report")
def nightly_report(tick: Any) -> Generator[Any, Any, None]:
    yield Step("report", notify, str(tick))


SHIPPING = Queue("shipping", concurrency=3)


def _until(check: Any, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _waiting(engine: Engine, workflow_id: str) -> bool:
    """Whether the run has come to rest at an unfinished (waiting) record."""
    log = engine.steps(workflow_id)
    return bool(log) and log[-1].is_pending


def populate(engine: Engine) -> dict[str, str]:
    """Runs of every kind through `engine`; the ids worth a screenshot.

    The engine drains the shipping queue only, so the other queues keep their
    runs waiting; keep it open while looking, or its shipping runs go back to
    their queue when it closes.
    """
    for number in range(2001, 2006):
        engine.enqueue("emails", send_receipt, f"order-{number}", workflow_id=f"receipt-{number}")
    for number in range(3001, 3003):
        engine.enqueue(
            "exports", send_receipt, f"report-{number}", workflow_id=f"export-{number}", delay=3600
        )
    for number in range(4001, 4004):
        engine.enqueue("shipping", await_pickup, f"order-{number}", workflow_id=f"pickup-{number}")
    orders = []
    for number, amount in ((1001, 4200), (1002, 1999), (1003, 8650), (1004, 1250)):
        orders.append(
            engine.start(
                checkout,
                f"order-{number}",
                amount,
                workflow_id=f"order-{number}",
                attributes={
                    "customer": str(number % 3 + 40),
                    "plan": "pro" if amount > 2000 else "free",
                },
            )
        )
    _until(lambda: all(_waiting(engine, h.workflow_id) for h in orders), "the checkouts to wait")
    for order in ("order-1001", "order-1003"):
        engine.send(order, {"confirmed_by": "customer"}, topic="confirm")
    engine.send("order-1002", {"note": "gift wrap, please"}, topic="gift")
    engine.start(fulfil_batch, ["mug", "tee", "poster"], workflow_id="batch-17").result(timeout=20)
    engine.handle("order-1001").result(timeout=20)
    with contextlib.suppress(CarrierUnavailable):  # the failure the run page is to show
        engine.handle("order-1003").result(timeout=20)
    engine.cancel("order-1004")
    _until(
        lambda: all(_waiting(engine, f"pickup-{n}") for n in range(4001, 4004)),
        "the shipping queue's runs to sleep",
    )
    engine.schedules.add(
        Schedule("0 2 * * *", nightly_report, "nightly-report", tz="Europe/Berlin")
    )
    engine.schedules.add(Schedule("*/15 * * * *", send_receipt, "quarter-hourly-receipts"))
    _until(lambda: len(engine.store.schedule_states()) == 2, "the schedules to be stored")
    engine.schedules.trigger("nightly-report")
    engine.schedules.pause("quarter-hourly-receipts")
    return {"failed": "order-1003", "waiting": "order-1002", "parent": "batch-17"}


def _shoot(driver: Any, url: str, path: Path, *, full: bool = False) -> None:
    driver.get(url)
    if full:
        # The window's size includes what headless Chromium keeps for its frame.
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(1360, min(int(height) + 160, 4000))
    driver.save_screenshot(str(path))
    driver.set_window_size(1360, 900)


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else "docs/images")
    out.mkdir(parents=True, exist_ok=True)
    from replaykit.ui._app import create_app
    from replaykit.ui._browser import browser
    from replaykit.ui._server import running

    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/shop.db"
        with (
            browser() as driver,
            Engine(url, queues=["shipping"], poll_interval=0.05) as engine,
        ):
            ids = populate(engine)
            app = create_app(engine.store, store_label="sqlite:///shop.db")
            with running(app) as base:
                run = f"{base}/run?id="
                _shoot(driver, f"{base}/runs", out / "runs.png")
                _shoot(driver, run + ids["failed"], out / "run.png", full=True)
                _shoot(driver, run + ids["parent"], out / "run-children.png", full=True)
                _shoot(driver, f"{base}/queues", out / "queues.png")
                _shoot(driver, f"{base}/schedules", out / "schedules.png")
                _shoot(driver, f"{base}/workers", out / "workers.png")
                _shoot(driver, f"{base}/runs/cancel?queue=emails", out / "bulk-cancel.png")
    for name in ("runs", "run", "run-children", "queues", "schedules", "workers", "bulk-cancel"):
        print(out / f"{name}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
