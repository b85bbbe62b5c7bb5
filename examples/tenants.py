"""A multi-tenant queue: one noisy tenant does not starve the others.

    python examples/tenants.py

Every report is enqueued with its tenant as the partition key. The queue allows
one running report per tenant (`partition_concurrency=1`) and serves the tenants
in turn, so a tenant that enqueues twenty reports at once delays a tenant with
one by a single claim, not by twenty reports; and the busy tenant never has two
reports running at once, however many engines drain the queue.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator
from typing import Any

from replaykit import Engine, Queue, QueueItem, Step, workflow

reports = Queue("reports", partition_concurrency=1, worker_concurrency=3)

_lock = threading.Lock()
_running: dict[str, int] = {}
_peak: dict[str, int] = {}
_started: list[str] = []


def build_report(tenant: str, number: int) -> str:
    with _lock:
        _running[tenant] = _running.get(tenant, 0) + 1
        _peak[tenant] = max(_peak.get(tenant, 0), _running[tenant])
        _started.append(f"{tenant}#{number}")
    time.sleep(0.02)  # the report's work
    with _lock:
        _running[tenant] -= 1
    return f"{tenant}-report-{number}.pdf"


@workflow
def report(tenant: str, number: int) -> Generator[Any, Any, str]:
    return (yield Step("build", build_report, tenant, number))


def main() -> None:
    with Engine("memory://", queues=[]) as producer:
        store = producer.store
        # acme enqueues a backlog of twenty; globex and initech a report each, later.
        handles = producer.enqueue_many(
            reports, report, [("acme", n) for n in range(20)], partition_key="acme"
        )
        handles += producer.enqueue_many(
            reports,
            report,
            [
                QueueItem("globex", 0, partition_key="globex"),
                QueueItem("initech", 0, partition_key="initech"),
            ],
        )
        waiting = producer.list_workflows(queue="reports", partition_key="acme")
        print(f"acme has {len(waiting)} reports waiting; globex and initech one each")
    with Engine(store, queues=["reports"], recover=False) as worker:
        built = [worker.handle(h.workflow_id).result(timeout=30) for h in handles]
        done = worker.list_workflows(queue="reports")
    print("first six started:", ", ".join(_started[:6]))
    print(
        "globex and initech started within the first round:",
        {"globex#0", "initech#0"} <= set(_started[:3]),
    )
    print("most reports of one tenant running at once:", max(_peak.values()))
    print(f"{len(built)} reports built ({built[0]}, ...); {len(done)} runs listed")


if __name__ == "__main__":
    main()
