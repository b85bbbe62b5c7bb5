"""Progress of a long run, read by the caller as it happens: WriteStream and read_stream.

    python examples/streams.py

The workflow imports a batch of records, one chunk per step, and writes its
progress to the stream "progress" after each chunk; the caller prints each value
as it comes and stops when the workflow closes the stream. Each value is a
record of the run's own log: a restart in the middle replays the values already
written (writing none of them twice) and carries on from the next chunk.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from replaykit import CloseStream, Engine, Step, WriteStream, workflow

CHUNKS = 5


def import_chunk(batch: str, chunk: int) -> int:
    # A real import would load a file's slice into a database here.
    return 200 + chunk * 10


def notify_owner(batch: str, rows: int) -> str:
    # A real one would send a mail; printing here would race the caller's prints.
    return f"told the owner: {batch} imported {rows} rows"


@workflow
def import_batch(batch: str) -> Generator[Any, Any, int]:
    imported = 0
    for chunk in range(CHUNKS):
        imported += yield Step("import-chunk", import_chunk, batch, chunk)
        yield WriteStream("progress", {"chunk": chunk + 1, "of": CHUNKS, "rows": imported})
    yield CloseStream("progress")
    yield Step("notify", notify_owner, batch, imported)
    return imported


def main() -> None:
    with Engine("memory://") as engine:
        handle = engine.start(import_batch, "batch-7", workflow_id="batch-7")
        for update in engine.read_stream("batch-7", "progress", timeout=30):
            done = update["chunk"] * 100 // update["of"]
            print(f"  progress: {done:3d}% ({update['rows']} rows)")
        print(f"batch-7: {handle.result(timeout=30)} rows")


if __name__ == "__main__":
    main()
