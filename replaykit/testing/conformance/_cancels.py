"""`check_store`'s checks of cancel requests (`request_cancel`: the first kept, a note
to the run's engine) and parent close policies (`set_parent_close`), both gone with
the run."""

from __future__ import annotations

from datetime import timedelta

from replaykit.stores.base import CancelRequest, Store
from replaykit.testing.conformance._support import _T0, _equal, _Notes, _run

__all__ = ["check_cancel_requests_keep_the_first", "check_parent_close_policies"]


def _request(reason: str, grace_s: int = 60) -> CancelRequest:
    return CancelRequest(reason, _T0 + timedelta(seconds=grace_s), _T0)


def check_cancel_requests_keep_the_first(store: Store) -> None:
    store.create_workflow(_run("cr-1"))
    _equal("a run never asked to cancel", None, store.get_cancel_request("cr-1"))
    with _Notes(store) as notes:
        first = _request("customer asked")
        _equal("the first request is kept", first, store.request_cancel("cr-1", first))
        _equal("read back", first, store.get_cancel_request("cr-1"))
        _equal("asked again, the same (a retry)", first, store.request_cancel("cr-1", first))
        second = _request("again", 5)
        _equal("a second request finds the first", first, store.request_cancel("cr-1", second))
        notes.wait_for("a note for the first request", ("cancel", "cr-1"))
    store.clear_cancel_request("cr-1")
    _equal("cleared (a resume)", None, store.get_cancel_request("cr-1"))
    store.clear_cancel_request("cr-1")  # a second clear finds none
    _equal("asked after a clear", second, store.request_cancel("cr-1", second))
    store.delete_workflow("cr-1")
    _equal("gone with the run", None, store.get_cancel_request("cr-1"))


def check_parent_close_policies(store: Store) -> None:
    _equal("a run with no policy kept", None, store.get_parent_close("pc-1"))
    # Kept before the child exists, so no run of the id is needed yet.
    store.set_parent_close("pc-1", "abandon")
    _equal("kept", "abandon", store.get_parent_close("pc-1"))
    store.set_parent_close("pc-1", "abandon")
    _equal("written again, the same", "abandon", store.get_parent_close("pc-1"))
    store.set_parent_close("pc-1", "cancel")
    _equal("the latest kept", "cancel", store.get_parent_close("pc-1"))
    store.create_workflow(_run("pc-1"))
    _equal("other runs keep none", None, store.get_parent_close("pc-2"))
    store.delete_workflow("pc-1")
    _equal("gone with the run", None, store.get_parent_close("pc-1"))
