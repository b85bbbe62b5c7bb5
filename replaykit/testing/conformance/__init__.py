"""`check_store`: the conformance suite every `Store` implementation must pass.

Run it against your own store the way trio's `check_one_way_stream` is run
against a stream::

    from replaykit.testing import check_store

    def test_my_store(tmp_path):
        check_store(lambda: MyStore(tmp_path / "db"))

Each check gets a fresh, empty store from `make_store()` and closes it
afterwards. Every check runs, and one `AssertionError` then names each check
that failed with what it expected and what it got. The checks follow the
guarantees written in `replaykit.stores.base`; a check failing here means the
runtime would misbehave on top of the store.

The checks live in modules by area (`_lifecycle`, `_records`, `_messages`, `_queues`,
...), the helpers they share in `_support`, and their order and the runner in
`_suite`; this module only re-exports.
"""

from replaykit.testing.conformance._suite import STORE_CHECKS, check_store
from replaykit.testing.conformance._suite import StoreCheck as StoreCheck  # the checks' type

__all__ = ["STORE_CHECKS", "check_store"]
