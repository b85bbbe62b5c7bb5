"""Feed the thumbnails queue, then wait for the workers to drain it.

    python -m examples.worker.producer --url postgresql://postgres@127.0.0.1/test --count 200

Run one or more workers in other terminals first (or after: items wait as ENQUEUED):

    replaykit worker examples.worker.workflows --url postgresql://... --queue thumbnails
"""

from __future__ import annotations

import argparse
import time

from examples.worker.workflows import make_thumbnails, thumbnails
from replaykit import Engine, QueueItem


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default=None)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--batch", default=str(int(time.time())))
    args = parser.parse_args()
    # This engine only produces: it listens to no queue, so it runs nothing.
    with Engine(args.url, queues=[]) as engine:
        # One statement and one commit for the whole batch. Ids make a re-run of
        # this producer idempotent: items already enqueued answer with their run.
        handles = engine.enqueue_many(
            thumbnails,
            make_thumbnails,
            [
                QueueItem(
                    f"img-{args.batch}-{i}",
                    workflow_id=f"thumbs-{args.batch}-{i}",
                    # The same image twice in flight is pointless: deduplicate by image.
                    dedup_id=f"img-{args.batch}-{i}",
                )
                for i in range(args.count)
            ],
        )
        started = time.monotonic()
        results = [h.result(timeout=600) for h in handles]
        took = time.monotonic() - started
        workers = {r[0].rsplit("pid ", 1)[1] for r in results}
        print(f"{len(results)} images done in {took:.1f}s by {len(workers)} worker process(es)")


if __name__ == "__main__":
    main()
