"""Starting runs and sending them messages, through the Client: `workflows start|send`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import click

from replaykit import _waiting
from replaykit._text import when_text
from replaykit.cli.arguments import call_arguments, json_argument
from replaykit.cli.echo import echo, echo_json
from replaykit.cli.errors import CliError, UsageError
from replaykit.cli.options import json_option, timedelta_option, url_option
from replaykit.cli.rows import pickup_note, row_json
from replaykit.cli.store import client_at, get_row
from replaykit.log import Status
from replaykit.runtime.overlaps import START_OVERLAPS

__all__ = ["send_command", "start_command"]

_JSON_EXAMPLE = '{"ok": true}'


@click.command("start")
@click.argument("name")
@click.argument("args_json", metavar="[ARGS_JSON]", required=False)
@url_option
@click.option("--kwargs", "kwargs_json", metavar="JSON", help="Keyword arguments, a JSON object.")
@click.option("--id", "workflow_id", help="The run's id (default: a new UUID); idempotent.")
@click.option("--queue", help="Put the run on this queue, for any engine draining it.")
@timedelta_option("--delay", help="With --queue: not claimed before this long (90s, 1h30m, 2d).")
@click.option(
    "--partition-key",
    metavar="KEY",
    help="With --queue: the run's partition key (a tenant, say); a partitioned queue "
    "serves its keys in turn and limits each.",
)
@click.option(
    "--concurrency-key",
    metavar="KEY",
    help="Without --queue: at most --concurrency-limit runs of KEY at once, across every "
    "engine; the others wait in order (any engine claims them).",
)
@click.option(
    "--concurrency-limit",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="With --concurrency-key: how many runs of the key may run at once.",
)
@click.option(
    "--overlap",
    type=click.Choice(START_OVERLAPS),
    default="allow",
    show_default=True,
    help="While a run of the key (--concurrency-key, or --partition-key on --queue) is "
    "live: start anyway, skip (answer with the live run), keep one waiting, or cancel it.",
)
@click.option(
    "--shard-key",
    metavar="KEY",
    help="The key that places the run's rows (and its children's) on one shard of a "
    "sharded database; default: the run's id (docs/storage.md, 'Past one server').",
)
@click.option(
    "--executor", help="Without --queue: the executor id of the engine to run it (it is told)."
)
@click.option(
    "--app-version",
    help="The version to stamp the run with: your engines' Engine(app_version=...); "
    "'latest': the version the running engines run (`workflows versions` lists them).",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Refuse the start when no running engine may run it (else: a warning).",
)
@json_option
def start_command(
    name: str,
    args_json: str | None,
    url: str,
    kwargs_json: str | None,
    workflow_id: str | None,
    queue: str | None,
    delay: timedelta | None,
    partition_key: str | None,
    concurrency_key: str | None,
    concurrency_limit: int,
    overlap: str,
    shard_key: str | None,
    executor: str | None,
    app_version: str | None,
    strict: bool,
    as_json: bool,
) -> None:
    """Start a run of the workflow registered as NAME, for your engines to run.

    ARGS_JSON is a JSON array of its positional arguments ('["o-1", 100]').
    Imports none of your code: the run is written to the store, ENQUEUED on
    --queue (the usual way: any engine draining that queue claims it) or
    PENDING for the engine --executor names. Engines run only runs of their
    own app version, which this command cannot compute: --app-version says it
    (`latest`: the one the running engines run). A start that no running engine
    may run warns; --strict refuses it. The same --id with the same workflow and
    arguments is the same run; anything else under a used id is refused.
    """
    args, kwargs = call_arguments(
        args_json,
        kwargs_json,
        of="the positional arguments",
        example='["o-1", 100]',
        object_example='[{"id": 1}]',
        kwargs_example='{"amount": 100}',
        json_example=_JSON_EXAMPLE,
    )
    if not app_version:
        raise UsageError(
            "--app-version is required: engines run only runs stamped with their own version, "
            "and this command, which imports no workflow code, cannot compute the default "
            "one. Pass the version your engines are given (Engine(app_version=...))"
        )
    _check_keys(queue, partition_key, concurrency_key, concurrency_limit, overlap)
    if queue is None and not executor and concurrency_key is None:
        raise UsageError(
            "no engine would run it: pass --queue Q (any engine draining Q claims it), "
            "--concurrency-key KEY (any engine claims it when KEY has a slot) or "
            "--executor ID (the engine with that executor id runs it)"
        )
    if delay is not None and queue is None:
        raise UsageError("--delay holds a run back on its queue: it needs --queue")
    if partition_key is not None and queue is None:
        raise UsageError("--partition-key names a partition of a queue: it needs --queue")
    if partition_key == "":
        raise UsageError("--partition-key needs a key: a non-empty string")
    if shard_key == "":
        raise UsageError("--shard-key needs a key: a non-empty string")
    with client_at(url, app_version=app_version, strict=strict) as client:
        if app_version == "latest":
            try:
                client.app_version = _waiting.latest_version(client.store)
            except _waiting.NoLatestVersion as exc:
                raise CliError(str(exc)) from None
        existed = workflow_id is not None and client.store.get_workflow(workflow_id) is not None
        asked_at = datetime.now(UTC)
        if queue is not None:
            handle = client.enqueue(
                queue,
                name,
                *args,
                workflow_id=workflow_id,
                delay=delay,
                partition_key=partition_key,
                overlap=overlap,
                shard_key=shard_key,
                **kwargs,
            )
        else:
            handle = client.start(
                name,
                *args,
                workflow_id=workflow_id,
                executor_id=executor,
                concurrency_key=concurrency_key,
                concurrency_limit=concurrency_limit,
                overlap=overlap,
                shard_key=shard_key,
                **kwargs,
            )
        row = handle.row()
    # skip and queue_one answer with a run of the key made before this call.
    live_of_key = row.created_at is not None and row.created_at < asked_at and not existed
    if as_json:
        echo_json({**row_json(row), "created": not (existed or live_of_key)})
        return
    verb = "exists already (same workflow and arguments):" if existed else "started:"
    if live_of_key:
        verb = f"not started again (overlap={overlap}): the key's live run is"
    if row.status is Status.ENQUEUED:
        where = (
            f"ENQUEUED on queue {row.queue!r}"
            + (f" (partition {row.partition_key!r})" if row.partition_key is not None else "")
            + ", for an engine of version {row.app_version!r} "
            "draining it to claim"
            + (f" from {when_text(row.wake_at)} UTC" if row.wake_at is not None else "")
        )
    else:
        where = f"{row.status.value}. " + pickup_note(row.executor_id, row.app_version)
    echo(f"{row.workflow_id} {verb} {name!r} {where}")


def _check_keys(
    queue: str | None,
    partition_key: str | None,
    concurrency_key: str | None,
    concurrency_limit: int,
    overlap: str,
) -> None:
    """The key options that go together, refused before anything is written."""
    if concurrency_key is not None and queue is not None:
        raise UsageError(
            "--concurrency-key puts the run on a queue of its key's own: it takes no --queue "
            "(to limit a queue's runs per key, use --partition-key on a queue declared with "
            "partition_concurrency)"
        )
    if concurrency_key == "":
        raise UsageError("--concurrency-key needs a key: a non-empty string")
    if concurrency_limit != 1 and concurrency_key is None:
        raise UsageError("--concurrency-limit limits the runs of a key: it needs --concurrency-key")
    if overlap != "allow" and concurrency_key is None and partition_key is None:
        raise UsageError(
            f"--overlap {overlap} applies to the live runs of a key: give --concurrency-key, "
            "or --queue with --partition-key"
        )


@click.command("send")
@click.argument("workflow_id", metavar="ID")
@click.argument("message_json", metavar="MESSAGE_JSON")
@url_option
@click.option("--topic", required=True, help="The topic the run's Recv(topic) waits on.")
@click.option(
    "--key",
    help="An idempotency key: a second send with it delivers nothing (safe to retry).",
)
@json_option
def send_command(
    workflow_id: str, message_json: str, url: str, topic: str, key: str | None, as_json: bool
) -> None:
    """Put MESSAGE_JSON in run ID's inbox under --topic (approve a step from a shell).

    The run's `Recv(topic)` takes it, once. Without --key every call delivers
    one message; with it, only the first call that uses the key does.
    """
    message = json_argument(message_json, "MESSAGE_JSON", _JSON_EXAMPLE)
    with client_at(url) as client:
        row = get_row(client.store, workflow_id)
        delivered = client.send(workflow_id, message, topic, idempotency_key=key)
    if as_json:
        echo_json(
            {
                "workflow_id": workflow_id,
                "name": row.name,
                "status": row.status.value,
                "topic": topic,
                "key": key,
                "delivered": delivered,
            }
        )
        return
    if not delivered:
        echo(
            f"not sent again: key {key!r} was used before for {workflow_id!r}, and that "
            "message was delivered then"
        )
        return
    note = ""
    if row.status.is_terminal:
        note = f" (the run is {row.status.value}: nothing will read it)"
    echo(f"sent to {workflow_id!r} ({row.name}) on topic {topic!r}{note}")
