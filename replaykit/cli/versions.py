"""`replaykit workflows versions`: the app versions engines run, and the runs left to each."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import click

from replaykit import _waiting
from replaykit.cli.echo import echo_json
from replaykit.cli.fit import Fit
from replaykit.cli.options import json_option, url_option
from replaykit.cli.printer import Printer
from replaykit.cli.store import store_at

__all__ = ["versions_command"]


@click.command("versions")
@url_option
@json_option
def versions_command(url: str, as_json: bool) -> None:
    """The app versions engines run now, and the unfinished runs stamped with each.

    An engine counts as running when it beat its heartbeat in the last 30 seconds.
    WORKFLOWS and QUEUES: the workflows that version's engines registered and the
    queues they listen to, as they record them with their heartbeats ("?": an
    engine of an older replaykit, which records none). A version whose runs wait
    with no engine running lists none: start one of it, or move its runs
    (`workflows list --stranded`, docs/versioning.md).
    """
    with store_at(url) as store:
        loads, readable, partial = _waiting.version_loads(store)
    if as_json:
        echo_json([load.to_json() for load in loads])
        return
    if not loads:
        click.echo("no engine is running and no run is unfinished")
        return
    Printer().table(
        ["VERSION", "ENGINES", "PENDING", "ENQUEUED", "PARKED", "WORKFLOWS", "QUEUES"],
        [
            [
                load.app_version,
                ", ".join(e.executor_id for e in load.engines) or "none running",
                str(load.pending),
                str(load.enqueued),
                str(load.parked),
                _engines_run(load.engines, _waiting.workflows_text),
                _engines_run(load.engines, _waiting.queues_text),
            ]
            for load in loads
        ],
        [{} if load.engines else {1: "yellow"} for load in loads],
        fit={
            0: Fit(12, weight=2),
            1: Fit(12, weight=3),
            5: Fit(12, weight=4),
            6: Fit(8, weight=2),
        },
    )
    if partial:
        click.echo(f"(counts from the first {_waiting.MAX_SCAN} unfinished runs)", err=True)
    if not readable:
        click.echo("(this store keeps no heartbeats the command can read: no engine is shown)")


def _engines_run(
    engines: Sequence[_waiting.LiveEngine], names: Callable[[Sequence[_waiting.LiveEngine]], str]
) -> str:
    """A `versions` cell: what the engines said they run; "?" where one said nothing."""
    if not engines:
        return ""
    said = names(engines)
    if all(engine.registered is not None for engine in engines):
        return said
    # An engine of an older replaykit records no names: the list may be short.
    return "?" if said == "none" else f"{said}, ?"
