"""Client and AsyncClient: start, message, read and operate runs from outside, by name.

A client opens a store and nothing else. It imports no workflow code (a run is
named by its registered workflow name, its arguments are plain values), runs
no workflow, holds no executor id, beats no heartbeat, claims no queue work
and takes no run over. What it starts is run by engines:

- with `queue=`, the run is ENQUEUED; any engine listening to that queue,
  of the version the run is stamped with, claims it;
- without a queue, the run is PENDING for the engine whose executor id the
  client names (`executor_id=`, here or on `Client(...)`), which is told at
  once, as a resume tells it ("resumed"), and recovers it at launch if it is
  down. A start that names neither is refused: no engine would ever run it.

Every run is stamped with an application version, and engines pick only
their own version's runs. A client cannot compute the default version (a
digest of the workflows' source, which it does not import), so it stamps
the version it is given (`app_version=`, here or on `Client(...)`) and
refuses to start without one. docs/client.md says why, and what an
`Engine(queues=[])` producer runs instead.

`Client` blocks its caller (`_blocking.py`); `AsyncClient` is its twin for a
coroutine (`_asyncio.py`), each method the same, awaited.
"""

from replaykit.client._asyncio import AsyncClient, AsyncClientHandle, AsyncResumedHandle
from replaykit.client._blocking import Client, ClientHandle, ResumedHandle

__all__ = [
    "AsyncClient",
    "AsyncClientHandle",
    "AsyncResumedHandle",
    "Client",
    "ClientHandle",
    "ResumedHandle",
]
