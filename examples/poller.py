"""A poller that runs for ever with a bounded log: ContinueAsNew.

    python examples/poller.py

The poller checks a feed once a minute and hands new items on. Each generation
polls ten times, then continues as new with its cursor: the workflow id stays,
the log starts empty again, and nothing grows however long it runs. Here it stops
after 50 polls, on a virtual clock that jumps over the minutes, so the example
takes a moment; a real one would run on the system clock and never return.
"""

from __future__ import annotations

from collections.abc import Generator
from datetime import timedelta
from typing import Any

from replaykit import ContinueAsNew, Engine, Sleep, Step, VirtualClock, workflow
from replaykit.stores.base import WorkflowFilter

POLLS_PER_GENERATION = 10


def fetch_new_items(cursor: int) -> list[int]:
    """A feed that publishes one item every three minutes (items are numbered)."""
    return [cursor] if cursor % 3 == 0 else []


def forward(items: list[int]) -> int:
    return len(items)


@workflow
def feed_poller(
    cursor: int = 0, forwarded: int = 0, stop_after: int = 50
) -> Generator[Any, Any, int]:
    for _ in range(POLLS_PER_GENERATION):
        items = yield Step("poll", fetch_new_items, cursor)
        if items:
            forwarded += yield Step("forward", forward, items)
        cursor += 1
        if cursor >= stop_after:
            return forwarded
        yield Sleep(timedelta(minutes=1))
    # What the next generation needs, and nothing of this one's log.
    yield ContinueAsNew(cursor, forwarded, stop_after)


def main() -> None:
    with Engine("memory://", clock=VirtualClock(autojump=True)) as engine:
        forwarded = engine.run(feed_poller, workflow_id="poller-1", timeout=60)
        print(f"poller-1: forwarded {forwarded} items in 50 polls")
        generations = engine.store.list_workflows(WorkflowFilter(continued_as="poller-1"))
        for generation in sorted(generations, key=lambda row: row.generation):
            steps = engine.steps(generation.workflow_id)
            print(
                f"  {generation.workflow_id}: {generation.status.value}, {len(steps)} records, "
                f"called with {generation.inputs['args']}"
            )
        live = engine.store.get_workflow("poller-1")
        assert live is not None
        print(
            f"  poller-1 (generation {live.generation}): {live.status.value}, "
            f"{len(engine.steps('poller-1'))} records"
        )


if __name__ == "__main__":
    main()
