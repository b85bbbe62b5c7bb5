"""examples/fastapi_app.py with a slow payment provider, for tests/test_fastapi_example.py.

    uvicorn tests.apps.slow_checkout:app      (SLOW_CHARGE_SECONDS, default 3600)

The provider takes SLOW_CHARGE_SECONDS to answer, so the test can stop the
server while the charge step is running. The workflows are the example's own
(this module registers none), so the app version is the example's and a plain
`uvicorn examples.fastapi_app:app` started afterwards recovers the run.
"""

from __future__ import annotations

import asyncio
import os

import httpx

from examples import fastapi_app

DELAY = float(os.environ.get("SLOW_CHARGE_SECONDS", "3600"))
_answer = fastapi_app.payment_provider


async def slow_provider(request: httpx.Request) -> httpx.Response:
    await asyncio.sleep(DELAY)
    return await _answer(request)


fastapi_app.payment_provider = slow_provider  # read by the lifespan when the app starts
app = fastapi_app.app
