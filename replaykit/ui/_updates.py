"""The run page's update form: an update sent to a run from the UI, and its reply.

The UI runs no workflow code, so the request goes unvalidated from here and the engine
running the run validates it before delivering it, as for a `Client` without the code
(docs/communication.md). The UI waits for the reply a bounded time and shows it, or the
error the run answered with; the request stays in the run's inbox if the wait ends
first, and the run still answers it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from replaykit import serde
from replaykit.runtime.updates import Updater
from replaykit.stores.base import Store

__all__ = ["UpdateForm", "UpdateOutcome", "parse_update_form", "send_update_form"]

#: How long the page waits for a reply by default, and at most (seconds).
DEFAULT_WAIT = 10.0
MAX_WAIT = 60.0
# Notes from the store are not subscribed to here: the wait reads the reply this often.
POLL_SECONDS = 0.2


class FormRefused(ValueError):
    """A field of the form that cannot be sent as it is; the message says which and why."""


@attrs.frozen
class UpdateForm:
    name: str
    args: tuple[Any, ...]
    wait: float


@attrs.frozen
class UpdateOutcome:
    """What the page shows: the reply as JSON, or the error the run answered with."""

    name: str
    reply: str | None
    error: str | None


def parse_update_form(form: Mapping[str, str]) -> UpdateForm:
    name = form.get("name", "").strip()
    if not name:
        raise FormRefused(
            "update: give the update's name, as the workflow's ReceiveUpdate(name) takes it"
        )
    text = form.get("args", "").strip() or "[]"
    try:
        args = json.loads(text)
    except ValueError as exc:
        raise FormRefused(
            f"arguments: not JSON ({exc}); type a JSON array of the update's arguments, such "
            'as ["pro"] or [{"sku": "a-1", "count": 2}], or leave it empty for none'
        ) from None
    if not isinstance(args, list):
        raise FormRefused(
            f"arguments: {text[:80]!r} is not a JSON array; wrap one argument in brackets, "
            'such as ["pro"]'
        )
    wait_text = form.get("wait", "").strip()
    try:
        wait = float(wait_text) if wait_text else DEFAULT_WAIT
    except ValueError:
        raise FormRefused(f"wait: {wait_text[:40]!r} is not a number of seconds") from None
    if not math.isfinite(wait) or not 0 < wait <= MAX_WAIT:
        raise FormRefused(
            f"wait: the seconds to wait for the reply, more than 0 and {MAX_WAIT:g} at most"
        )
    return UpdateForm(name, tuple(args), wait)


def _no_notes(wakes: Iterable[tuple[str, str]], callback: Callable[[], None]) -> Callable[[], None]:
    return lambda: None


def send_update_form(store: Store, workflow_id: str, form: UpdateForm) -> UpdateOutcome:
    """Send the update and wait for the run's answer (blocking: call it off the loop)."""
    updater = Updater(
        store,
        _no_notes,
        poll_interval=POLL_SECONDS,
        max_payload_bytes=serde.DEFAULT_MAX_PAYLOAD_BYTES,
        trace_context=lambda: None,
    )
    call = updater.call(workflow_id, form.name, form.args, {}, update_id=None, timeout=form.wait)
    try:
        reply = updater.update(call)
    except Exception as exc:  # the run's answer, a refusal or the wait's end: all are shown
        return UpdateOutcome(form.name, None, f"{type(exc).__name__}: {exc}")
    return UpdateOutcome(
        form.name, json.dumps(reply, indent=2, ensure_ascii=False, default=str), None
    )
