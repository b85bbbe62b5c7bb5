"""A refund that waits for an approval service's webhook: Awakeable, Await, Client.complete.

    python examples/webhook_approval.py            # the approver clicks in time
    python examples/webhook_approval.py --late     # the deadline passes first

The workflow hands out a token (`yield Awakeable("approval")`), gives it to the
approval service in a step, and waits for it with a deadline
(`Race(Await(token), Sleep(...))`), holding no thread. The service calls back a webhook:
a small HTTP server here, which holds a `Client` (no workflow code) and answers from what
`client.complete(token, body)` says — 204 when delivered, 409 for a second click, 410
once the run is over, 404 for a token no run handed out. Each token is completed once,
whoever clicks and however often.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Generator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from replaykit import (
    AlreadyCompleted,
    Await,
    Awakeable,
    Client,
    Engine,
    Race,
    RunEnded,
    SetEvent,
    Sleep,
    Step,
    UnknownToken,
    workflow,
)

# Scaled down so the example finishes quickly; in production: timedelta(days=2).
DEADLINE = timedelta(seconds=2)
#: What the approval service was asked: request id -> the callback URL it will call.
ASKED: dict[str, str] = {}


def ask_approval_service(webhook: str, request_id: str, amount: int, token: str) -> None:
    ASKED[request_id] = f"{webhook}/approvals/{token}"
    print(f"  asked the approval service about {request_id} ({amount} EUR)")


def pay_refund(request_id: str, amount: int) -> str:
    time.sleep(0.5)  # the bank takes a moment: the run is still waiting on it
    print(f"  paid {amount} EUR back for {request_id}")
    return f"refund-{request_id}"


@workflow
def refund(webhook: str, request_id: str, amount: int) -> Generator[Any, Any, str]:
    token = yield Awakeable("approval")
    yield Step("ask", ask_approval_service, webhook, request_id, amount, token)
    yield SetEvent("stage", "waiting for approval")
    winner, decision = yield Race(Await(token), Sleep(DEADLINE))
    if winner == 1:
        yield SetEvent("stage", "expired")
        return "expired: nobody approved in time"
    if not decision["approved"]:
        return f"refused by {decision['by']}"
    receipt = yield Step("pay", pay_refund, request_id, amount)
    return f"approved by {decision['by']}: {receipt}"


def webhook_server(client: Client) -> ThreadingHTTPServer:
    """POST /approvals/<token> with a JSON body completes the token."""

    class Webhook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            token = self.path.removeprefix("/approvals/")
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            try:
                client.complete(token, body)
                status = 204
            except AlreadyCompleted:
                status = 409  # completed before: a second click, or a retried callback
            except RunEnded:
                status = 410  # the run is over; nobody waits for this any more
            except UnknownToken:
                status = 404
            self.send_response(status)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: the example prints what matters

    server = ThreadingHTTPServer(("127.0.0.1", 0), Webhook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def click(url: str, by: str, approved: bool = True) -> int:
    """The approver's click, as the approval service forwards it."""
    data = json.dumps({"approved": approved, "by": by}).encode()
    request = urllib.request.Request(url, data=data, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as refused:
        return refused.code


def main() -> None:
    late = "--late" in sys.argv
    request_id = "refund-17"
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'refunds.db'}"
        with Engine(url, poll_interval=0.1) as engine, Client(url) as client:
            server = webhook_server(client)
            webhook = f"http://127.0.0.1:{server.server_address[1]}"
            handle = engine.start(refund, webhook, request_id, 120, workflow_id=request_id)
            print("  stage:", engine.get_event(request_id, "stage", timeout=10))
            callback = ASKED[request_id]
            if late:
                time.sleep(DEADLINE.total_seconds() + 0.5)
            else:
                print(f"  maria clicks approve: HTTP {click(callback, 'maria')}")
                print(f"  maria clicks again:   HTTP {click(callback, 'maria')}")
            print(f"{request_id}: {handle.result(timeout=30)}")
            print(f"  a click after the end: HTTP {click(callback, 'tom')}")
            forged = callback.replace("@", "x@")
            print(f"  a forged token:        HTTP {click(forged, 'mallory')}")
            server.shutdown()


if __name__ == "__main__":
    main()
