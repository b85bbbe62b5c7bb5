"""`replaykit worker`: the one command that runs workflow code (the application's)."""

from __future__ import annotations

import logging
import sys
from datetime import timedelta
from typing import Any

import click

from replaykit.cli.errors import CliError
from replaykit.cli.options import timedelta_option, url_option

__all__ = ["worker_command"]


@click.command("worker")
@click.argument("module")
@url_option
@click.option(
    "-q",
    "--queue",
    "queues",
    multiple=True,
    help="A queue to drain (repeat for several; default: every registered queue).",
)
@click.option("--executor-id", help="This process's executor id (default: host-pid-random).")
@click.option("--app-version", help="Pin the app version (default: derived from the code).")
@click.option("--max-workers", type=click.IntRange(min=1), default=64, show_default=True)
@click.option("--poll-interval", type=click.FloatRange(min=0.01), default=1.0, show_default=True)
@click.option(
    "--lease-seconds",
    type=click.FloatRange(min=0.1),
    help="Heartbeat lease: a worker silent this long is dead and its runs move (default 30).",
)
@timedelta_option(
    "--retention",
    help="Keep finished runs this long (30d, 12h, ...), then delete them in the background "
    "(default: keep them).",
)
def worker_command(
    module: str,
    url: str,
    queues: tuple[str, ...],
    executor_id: str | None,
    app_version: str | None,
    max_workers: int,
    poll_interval: float,
    lease_seconds: float | None,
    retention: timedelta | None,
) -> None:
    """Import MODULE (your workflows and queues) and run them until SIGTERM or Ctrl-C.

    Unlike every other command this one runs workflow code: the application's,
    from the module the operator names.
    """
    from replaykit.runtime.worker import run_worker

    options: dict[str, Any] = {}
    if lease_seconds is not None:
        options["lease_seconds"] = lease_seconds
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        code = run_worker(
            module,
            url=url,
            queues=queues,
            executor_id=executor_id,
            app_version=app_version,
            max_workers=max_workers,
            poll_interval=poll_interval,
            retention=retention,
            **options,
        )
    except ModuleNotFoundError as exc:
        if exc.name is None or not module.startswith(exc.name):
            raise  # the module exists but one of its own imports is missing
        raise CliError(
            f"cannot import {module!r}: {exc}; run from your project's directory or set PYTHONPATH"
        ) from exc
    if code:
        sys.exit(code)
