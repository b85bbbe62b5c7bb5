"""The local web UI: runs, timelines, children, inboxes, events, queues; cancel,
resume and fork with a confirmation step.

    python -m replaykit.ui --url sqlite:///app.db        # http://127.0.0.1:8700/

`serve(url, host, port, token)` runs it; `create_app(store)` gives the ASGI
application, to mount in an application of one's own. It reads and acts
through the store protocol and `replaykit.runtime.admin` only, and runs no
workflow code. Needs `pip install 'replaykit[ui]'`.
"""

try:
    import jinja2 as _jinja2  # noqa: F401
    import starlette as _starlette  # noqa: F401
    import uvicorn as _uvicorn  # noqa: F401
except ImportError as _missing:  # pragma: no cover - depends on the installation
    raise ImportError(
        f"the replaykit UI needs starlette, uvicorn and jinja2 ({_missing}): "
        "pip install 'replaykit[ui]'"
    ) from _missing

from replaykit.ui._app import create_app
from replaykit.ui._server import serve

__all__ = ["create_app", "serve"]
