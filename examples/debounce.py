"""Reindex a document once its edits settle: debounce per document.

    python examples/debounce.py

Every save of a document calls `engine.debounce(doc, period, reindex, doc, text)`. The
saves of one burst share one window: the document is reindexed once, a quiet period
after its last save, with the text of that save. `max_wait` keeps a document edited
without pause from waiting for ever: it is reindexed at most that long after the
burst's first save. Each call returns the id the reindex will run under.

The windows are durable: the engine is closed half-way through a burst here, and the
next engine on the same database reindexes the document once, with its last text.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import Any

from replaykit import Engine, Step, WorkflowNotFound, workflow

URL = "sqlite:///debounce.db"


def index_text(doc: str, text: str) -> str:
    print(f"  indexing {doc}: {text!r}")
    return f"{doc}: {len(text.split())} words indexed"


@workflow
def reindex(doc: str, text: str) -> Generator[Any, Any, str]:
    summary: str = yield Step("index", index_text, doc, text)
    return summary


def result_of(engine: Engine, workflow_id: str) -> str:
    """The reindex's result, once its window has closed and the run exists."""
    while True:
        try:
            return engine.handle(workflow_id).result(timeout=30)  # type: ignore[no-any-return]
        except WorkflowNotFound:
            time.sleep(0.05)


def main() -> None:
    with Engine(URL, poll_interval=0.1) as engine:
        print("a burst of three saves of notes.md:")
        for text in ("draft", "draft two", "draft two, final"):
            run_id = engine.debounce("notes.md", 0.5, reindex, "notes.md", text)
        print(" ", result_of(engine, run_id))

        print("saves every 0.2 s for 2 s, with max_wait=1:")
        windows = []
        for n in range(10):
            windows.append(
                engine.debounce("log.md", 0.5, reindex, "log.md", f"entry {n}", max_wait=1.0)
            )
            time.sleep(0.2)
        # The burst's first window ended at max_wait, while the saves still came.
        print(" ", result_of(engine, windows[0]), f"({len(set(windows))} windows)")

        print("two saves, then the engine stops before the quiet period ends:")
        for text in ("todo", "todo: ship it"):
            settled = engine.debounce("todo.md", 1.0, reindex, "todo.md", text)
    with Engine(URL, poll_interval=0.1) as engine:  # the next process picks the window up
        print(" ", result_of(engine, settled))


if __name__ == "__main__":
    main()
