"""Updates: a request delivered to a run and its recorded reply, on every store and face.

Also update-with-start and send-with-start (the run started and the request or message
delivered in one transaction), validators on both sides, and the refusals: an unknown
name, a finished run, a timeout, a second reply.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest

import replaykit
from conftest import ok, rk, wait_for
from replaykit import (
    AsyncEngine,
    Engine,
    Race,
    ReceiveUpdate,
    Recv,
    Reply,
    Send,
    SetEvent,
    Status,
    Step,
    UnknownUpdate,
    UpdateAlreadyAnswered,
    UpdateRequest,
    UpdateRunFinished,
    UpdateTimeout,
    WorkflowIdConflict,
    WorkflowNotFound,
    replying,
    workflow,
)
from replaykit.client import AsyncClient, Client
from replaykit.commands.updates import reply_key, request_topic
from replaykit.runtime import updates as updates_module
from replaykit.testing import Update, check_determinism
from replaykit.testing import run as kit_run

VERSION = "updates-v1"


class Refused(ValueError):
    """What the cart's validator raises."""


@workflow(name="upd-cart", updates=["add", "close"])
def cart(owner: str) -> Generator[Any, Any, dict[str, Any]]:
    items: list[str] = []
    while True:
        index, req = yield Race(ReceiveUpdate("add"), ReceiveUpdate("close"))
        if index == 1:
            yield Reply(req, len(items))
            return {"owner": owner, "items": items}
        sku = req.args[0]
        if sku == "broken":
            yield Reply(req, error=KeyError(f"no such item {sku!r}"))
            continue
        count = yield Step("add", lambda n: n + 1, len(items))
        items.append(sku)
        yield Reply(req, {"count": count, "qty": req.kwargs.get("qty", 1)})


@cart.validator("add")
def check_add(sku: str, qty: int = 1) -> None:
    if qty <= 0:
        raise Refused(f"add {sku!r}: a quantity of {qty} is not one to add")


@workflow(name="upd-silent", updates=["ask"])
def silent() -> Generator[Any, Any, str]:
    yield ReceiveUpdate("ask")  # takes it and never answers
    yield Recv("end")
    return "ended"


@workflow(name="upd-twice", updates=["ask"])
def twice() -> Generator[Any, Any, str]:
    req = yield ReceiveUpdate("ask")
    yield Reply(req, "first")
    try:
        yield Reply(req, "second")
    except UpdateAlreadyAnswered as exc:
        return str(exc)
    return "answered twice"


@workflow(name="upd-undeclared")
def undeclared() -> Generator[Any, Any, str]:
    try:
        yield ReceiveUpdate("ask")
    except UnknownUpdate as exc:
        return str(exc)
    return "received"


@workflow(name="upd-scoped", updates=["divide"])
def scoped() -> Generator[Any, Any, list[Any]]:
    answers: list[Any] = []
    for _ in range(2):
        req = yield ReceiveUpdate("divide")

        def body(req: UpdateRequest = req) -> Generator[Any, Any, float]:
            value = yield Step("divide", lambda a, b: a / b, *req.args)
            return value

        answers.append((yield from replying(req, body())))
    return answers


@workflow(name="upd-timed", updates=["ping"])
def timed() -> Generator[Any, Any, str]:
    req = yield ReceiveUpdate("ping", timeout=timedelta(seconds=0.3))
    if req is None:
        return "nobody asked"
    yield Reply(req, "pong")
    return "answered"


@workflow(name="upd-inbox")
def inbox(label: str) -> Generator[Any, Any, list[Any]]:
    first = yield Recv("go")
    second = yield Recv("go", timeout=0.5)
    return [label, first, second]


@pytest.fixture
def engine(store_url: str) -> Iterator[Engine]:
    with Engine(store_url, poll_interval=0.2, app_version=VERSION) as eng:
        yield eng


def kinds(engine: Engine, workflow_id: str) -> list[tuple[str, str]]:
    return [(r.kind, r.name) for r in engine.steps(workflow_id)]


# -- a request and its reply ------------------------------------------------------------


def test_an_update_is_answered_and_its_reply_recorded(engine: Engine) -> None:
    handle = engine.start(cart, "ada", workflow_id="cart-1")
    assert handle.update("add", "apple", update_id="u-1", timeout=20) == {"count": 1, "qty": 1}
    assert engine.update("cart-1", "add", "pear", qty=2, timeout=20) == {"count": 2, "qty": 2}
    race = ("race", "receive_update:add|receive_update:close")
    assert kinds(engine, "cart-1")[:3] == [race, ("step", "add"), ("reply", "add")]
    # A caller that lost its answer asks again with the same id: the same reply, no new request.
    assert engine.wait_idle(timeout=20)  # the run waits at its next Race, recorded
    logged = len(engine.steps("cart-1"))
    assert handle.update("add", "apple", update_id="u-1", timeout=20) == {"count": 1, "qty": 1}
    assert handle.update("add", "something else", update_id="u-1") == {"count": 1, "qty": 1}
    assert len(engine.steps("cart-1")) == logged
    assert engine.store.peek_message("cart-1", request_topic("add")) is None
    assert handle.update("close", timeout=20) == 2
    assert handle.result(timeout=20) == {"owner": "ada", "items": ["apple", "pear"]}
    # The reply is kept with the run: asked again after the run ended, the same answer.
    assert handle.update("add", "apple", update_id="u-1") == {"count": 1, "qty": 1}


def test_an_error_replied_is_raised_as_itself_with_a_note(engine: Engine) -> None:
    handle = engine.start(cart, "bo", workflow_id="cart-err")
    with pytest.raises(KeyError, match="no such item 'broken'") as raised:
        handle.update("add", "broken", update_id="bad-1", timeout=20)
    assert any("'bad-1'" in note and "cart-err" in note for note in raised.value.__notes__)
    with pytest.raises(KeyError):  # and again, from the stored reply
        handle.update("add", "broken", update_id="bad-1", timeout=20)
    assert handle.update("add", "ok", timeout=20) == {"count": 1, "qty": 1}


def test_a_validator_refuses_a_request_with_no_trace_in_the_run(engine: Engine) -> None:
    handle = engine.start(cart, "cy", workflow_id="cart-v")
    assert handle.update("add", "apple", timeout=20) == {"count": 1, "qty": 1}
    assert engine.wait_idle(timeout=20)
    before = engine.steps("cart-v")
    with pytest.raises(Refused, match="a quantity of 0") as raised:
        handle.update("add", "pear", qty=0, update_id="zero", timeout=20)
    assert "refused by its validator; nothing was sent" in raised.value.__notes__[-1]
    assert engine.steps("cart-v") == before
    assert engine.store.peek_message("cart-v", request_topic("add")) is None
    assert engine.store.get_event("cart-v", reply_key("zero")) == (False, None)
    # The same id, now with good arguments, is a request like any other.
    assert handle.update("add", "pear", qty=3, update_id="zero", timeout=20) == {
        "count": 2,
        "qty": 3,
    }


def test_without_the_code_the_engine_validates_before_delivery(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle = engine.start(cart, "di", workflow_id="cart-nocode")
    assert handle.update("add", "apple", timeout=20) == {"count": 1, "qty": 1}
    assert engine.wait_idle(timeout=20)
    before = engine.steps("cart-nocode")
    # A caller that has not imported the workflow's module: it cannot validate.
    monkeypatch.setattr(updates_module, "registered_workflow", lambda name: None)
    with pytest.raises(Refused, match="a quantity of -1"):
        handle.update("add", "pear", qty=-1, update_id="neg", timeout=20)
    assert engine.steps("cart-nocode") == before
    assert engine.store.peek_message("cart-nocode", request_topic("add")) is None
    assert handle.update("add", "pear", timeout=20) == {"count": 2, "qty": 1}
    # A name the workflow does not declare is not caught up front without the code:
    # the request waits in the inbox, and the timeout says so.
    with pytest.raises(UpdateTimeout):
        handle.update("nope", timeout=0.3)


def test_an_unknown_update_name_is_refused_before_anything_is_sent(engine: Engine) -> None:
    engine.start(cart, "ed", workflow_id="cart-unknown")
    with pytest.raises(
        UnknownUpdate, match=r"has no update 'remove' \(it declares: 'add', 'close'\)"
    ):
        engine.update("cart-unknown", "remove", "apple")
    assert engine.store.peek_message("cart-unknown", request_topic("remove")) is None


def test_receiving_an_update_the_workflow_does_not_declare_fails_at_the_yield(
    engine: Engine,
) -> None:
    text = engine.start(undeclared, workflow_id="undeclared").result(timeout=20)
    assert "has no update 'ask'" in text and "ReceiveUpdate at position 0" in text
    assert kinds(engine, "undeclared") == [("receive_update", "ask")]


def test_a_second_reply_to_one_request_is_refused_in_the_workflow(engine: Engine) -> None:
    handle = engine.start(twice, workflow_id="twice")
    assert handle.update("ask", timeout=20) == "first"
    text = handle.result(timeout=20)
    assert "has its answer already" in text and "position 2" in text


def test_replying_answers_with_the_value_or_the_error_and_the_run_goes_on(engine: Engine) -> None:
    handle = engine.start(scoped, workflow_id="scoped")
    with pytest.raises(ZeroDivisionError):
        handle.update("divide", 1, 0, timeout=20)
    assert handle.update("divide", 6, 3, timeout=20) == 2.0
    assert handle.result(timeout=20) == [None, 2.0]


# -- refusals -----------------------------------------------------------------------------


def test_an_update_to_a_finished_run_fails_clearly(engine: Engine) -> None:
    handle = engine.start(cart, "fi", workflow_id="cart-done")
    handle.update("close", timeout=20)
    handle.result(timeout=20)
    with pytest.raises(UpdateRunFinished, match=r"\(id 'cart-done'\) is SUCCESS and holds no"):
        handle.update("add", "late", timeout=20)
    with pytest.raises(WorkflowNotFound, match="no-such-run"):
        engine.update("no-such-run", "add", "x")


def test_an_update_not_answered_in_time_names_the_run_the_update_and_its_id(
    engine: Engine,
) -> None:
    handle = engine.start(silent, workflow_id="silent")
    with pytest.raises(UpdateTimeout) as raised:
        handle.update("ask", update_id="q-1", timeout=0.4)
    text = str(raised.value)
    assert "update 'ask' (id 'q-1')" in text and "'upd-silent' (id 'silent')" in text
    assert "update_id='q-1'" in text  # what to do: ask again with the same id
    # The run took the request and ends without answering: the caller hears so.
    engine.send("silent", "now", "end")
    assert handle.result(timeout=20) == "ended"
    with pytest.raises(UpdateRunFinished, match="is SUCCESS and holds no reply to update 'ask'"):
        handle.update("ask", update_id="q-1", timeout=20)


def test_a_timed_receive_update_gives_none() -> None:
    result = kit_run(timed)
    assert result.result == "nobody asked"


def test_update_arguments_are_checked_before_anything_is_read(engine: Engine) -> None:
    with pytest.raises(TypeError, match="update name must be a non-empty str"):
        engine.update("any", "")
    with pytest.raises(TypeError, match="update id must be a non-empty str"):
        engine.update("any", "add", update_id="")
    with pytest.raises(ValueError, match="timeout"):
        engine.update("any", "add", timeout=-1)
    with pytest.raises(replaykit.SerializationError):
        engine.update("any", "add", object())


def test_update_names_are_replaykit_s_own() -> None:
    with pytest.raises(ValueError, match="keeps for updates"):
        Send("x", 1, topic="replaykit.update:add")
    with pytest.raises(ValueError, match="keeps for updates"):
        Recv("replaykit.update:add")
    with pytest.raises(ValueError, match="keeps for updates"):
        SetEvent("replaykit.update:u-1", 1)
    with Engine("memory://") as engine:
        engine.start(inbox, "x", workflow_id="inbox-r")
        with pytest.raises(ValueError, match="keeps for updates"):
            engine.send("inbox-r", 1, "replaykit.update:add")
    with pytest.raises(TypeError, match="a list of update names"):
        workflow(name="upd-bad-decl", updates="add")(lambda: (yield))  # type: ignore[arg-type]


# -- update-with-start and send-with-start ------------------------------------------------------


def test_update_with_start_starts_the_run_and_delivers_in_one_go(engine: Engine) -> None:
    reply = engine.update_with_start(cart.bind("fo"), "add", "apple", workflow_id="cart-ws")
    assert reply == {"count": 1, "qty": 1}
    # The run exists: the same start again delivers to it.
    reply = engine.update_with_start(
        cart.bind("fo"), "add", "fig", workflow_id="cart-ws", update_id="w-2", timeout=20
    )
    assert reply == {"count": 2, "qty": 1}
    assert engine.update_with_start(
        cart.bind("fo"), "add", "other", workflow_id="cart-ws", update_id="w-2"
    ) == {"count": 2, "qty": 1}
    with pytest.raises(WorkflowIdConflict):
        engine.update_with_start(cart.bind("someone else"), "add", "x", workflow_id="cart-ws")
    with pytest.raises(Refused):
        engine.update_with_start(cart.bind("fo"), "add", "x", qty=0, workflow_id="cart-ws-new")
    assert engine.store.get_workflow("cart-ws-new") is None
    assert engine.update_with_start(cart.bind("fo"), "close", workflow_id="cart-ws") == 2
    engine.handle("cart-ws").result(timeout=20)
    with pytest.raises(UpdateRunFinished):
        engine.update_with_start(cart.bind("fo"), "add", "late", workflow_id="cart-ws")
    # A finished run's reply is still found by its id.
    assert engine.update_with_start(
        cart.bind("fo"), "add", "other", workflow_id="cart-ws", update_id="w-2"
    ) == {"count": 2, "qty": 1}


def test_send_with_start_starts_the_run_with_its_message(engine: Engine) -> None:
    handle = engine.send_with_start(inbox.bind("a"), {"n": 1}, "go", workflow_id="in-1")
    again = engine.send_with_start(
        inbox.bind("a"), {"n": 2}, "go", workflow_id="in-1", idempotency_key="k"
    )
    # The key was used: nothing more is delivered.
    engine.send_with_start(inbox.bind("a"), {"n": 3}, "go", workflow_id="in-1", idempotency_key="k")
    assert again.workflow_id == "in-1"
    assert handle.result(timeout=20) == ["a", {"n": 1}, {"n": 2}]
    assert engine.store.peek_message("in-1", "go") is None
    with pytest.raises(WorkflowIdConflict):
        engine.send_with_start(inbox.bind("b"), {"n": 9}, "go", workflow_id="in-1")
    assert engine.store.peek_message("in-1", "go") is None  # refused: nothing delivered


def test_async_engine_updates(store_url: str) -> None:
    async def main() -> None:
        async with AsyncEngine(store_url, poll_interval=0.2, app_version=VERSION) as engine:
            handle = await engine.start(cart, "gi", workflow_id="cart-async")
            assert await handle.update("add", "apple", timeout=20) == {"count": 1, "qty": 1}
            assert await engine.update("cart-async", "add", "fig", timeout=20) == {
                "count": 2,
                "qty": 1,
            }
            with pytest.raises(Refused):
                await engine.update("cart-async", "add", "fig", qty=0)
            assert await engine.update_with_start(
                cart.bind("gi"), "add", "kiwi", workflow_id="cart-async-2"
            ) == {"count": 1, "qty": 1}
            sent = await engine.send_with_start(inbox.bind("s"), 1, "go", workflow_id="in-async")
            await engine.send("in-async", 2, "go")
            assert await sent.result(timeout=20) == ["s", 1, 2]

    asyncio.run(main())


# -- the clients --------------------------------------------------------------------------------


@contextmanager
def engine_thread(target: Any, **options: Any) -> Iterator[Engine]:
    """An engine serving in another thread until the block ends (as a worker would)."""
    engine = Engine(target, app_version=VERSION, poll_interval=0.05, **options)
    stop = threading.Event()
    thread = threading.Thread(target=lambda: engine.serve(stop=stop), daemon=True)
    thread.start()
    try:
        yield engine
    finally:
        stop.set()
        thread.join(timeout=20)


def test_clients_send_updates_and_start_with_them(
    shared: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        engine_thread(shared, executor_id="upd-worker"),
        Client(shared, app_version=VERSION, executor_id="upd-worker", poll_interval=0.05) as client,
    ):
        reply = client.update_with_start(
            "upd-cart", "add", "apple", workflow_id="cart-c", start_args=["hu"], timeout=20
        )
        assert reply == {"count": 1, "qty": 1}
        handle = client.handle("cart-c")
        assert handle.update("add", "fig", update_id="c-2", timeout=20) == {"count": 2, "qty": 1}
        with pytest.raises(Refused):  # validated here: the workflow is imported
            client.update("cart-c", "add", "x", qty=0)
        monkeypatch.setattr(updates_module, "registered_workflow", lambda name: None)
        with pytest.raises(Refused):  # validated by the engine: no code here
            client.update("cart-c", "add", "x", qty=0, timeout=20)
        sent = client.send_with_start("upd-inbox", "m", "go", workflow_id="in-c", start_args=["c"])
        client.send("in-c", "n", "go")
        assert sent.result(timeout=20) == ["c", "m", "n"]
        assert client.update("cart-c", "close", timeout=20) == 2

        async def from_a_coroutine() -> None:
            async with AsyncClient(
                shared, app_version=VERSION, executor_id="upd-worker", poll_interval=0.05
            ) as aclient:
                assert await aclient.update_with_start(
                    "upd-cart", "add", "plum", workflow_id="cart-ac", start_args=["iv"]
                ) == {"count": 1, "qty": 1}
                ahandle = aclient.handle("cart-ac")
                assert await ahandle.update("close", timeout=20) == 1
                with pytest.raises(UpdateRunFinished):
                    await aclient.update("cart-ac", "add", "late")
                asent = await aclient.send_with_start(
                    "upd-inbox", "x", "go", workflow_id="in-ac", start_args=["a"]
                )
                await aclient.send("in-ac", "y", "go")
                assert await asent.result(timeout=20) == ["a", "x", "y"]

        asyncio.run(from_a_coroutine())


# -- warm and replayed runs agree ----------------------------------------------------------------


def test_updates_answered_by_a_run_rebuilt_by_replay_at_every_wake(store_url: str) -> None:
    with Engine(store_url, poll_interval=0.2, max_cached_runs=0) as engine:
        handle = engine.start(cart, "jo", workflow_id="cart-cold")
        for n, sku in enumerate(["a", "b", "c"], start=1):
            assert handle.update("add", sku, timeout=20) == {"count": n, "qty": 1}
        assert handle.update("close", timeout=20) == 3
        assert handle.result(timeout=20)["items"] == ["a", "b", "c"]
        assert handle.status() is Status.SUCCESS


def test_an_engine_restart_keeps_requests_and_replies(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'restart.db'}"
    with Engine(url, poll_interval=0.1, executor_id="r") as engine:
        engine.start(cart, "ka", workflow_id="cart-r")
        assert engine.update("cart-r", "add", "a", update_id="r-1", timeout=20)["count"] == 1
    with Engine(url, poll_interval=0.1, executor_id="r") as engine:
        assert engine.update("cart-r", "add", "a", update_id="r-1") == {"count": 1, "qty": 1}
        assert engine.update("cart-r", "add", "b", timeout=20) == {"count": 2, "qty": 1}


@workflow(name="upd-late", updates=["ask"])
def late() -> Generator[Any, Any, str]:
    yield Recv("open")
    req = yield ReceiveUpdate("ask")
    yield Reply(req, f"answered {req.args[0]}")
    return "done"


def test_a_request_outlives_its_timeout_and_a_retry_gets_the_answer(engine: Engine) -> None:
    handle = engine.start(late, workflow_id="late")
    with pytest.raises(UpdateTimeout):
        handle.update("ask", 1, update_id="late-1", timeout=0.3)
    engine.send("late", None, "open")
    assert handle.update("ask", 1, update_id="late-1", timeout=20) == "answered 1"
    assert handle.result(timeout=20) == "done"


def test_a_caller_waiting_hears_the_run_end_without_answering(engine: Engine) -> None:
    handle = engine.start(silent, workflow_id="silent-2")
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            handle.update("ask", update_id="w-1", timeout=30)
        except BaseException as exc:
            errors.append(exc)

    caller = threading.Thread(target=ask)
    caller.start()
    wait_for(
        lambda: (
            engine.store.get_workflow("silent-2") is not None and len(engine.steps("silent-2")) >= 2
        ),
        "the run to take the request",
    )
    engine.send("silent-2", "now", "end")
    caller.join(timeout=30)
    assert len(errors) == 1 and isinstance(errors[0], UpdateRunFinished)
    assert "ended SUCCESS without answering update 'ask' (id 'w-1')" in str(errors[0])


def test_updates_through_a_payload_codec() -> None:
    codec = Salted()
    store = replaykit.MemoryStore()
    with Engine(store, codec=codec, poll_interval=0.1) as engine:
        handle = engine.start(cart, "co", workflow_id="cart-codec")
        assert handle.update("add", "apple", update_id="cc-1", timeout=20) == {
            "count": 1,
            "qty": 1,
        }
        assert engine.update_with_start(
            cart.bind("co"), "add", "fig", workflow_id="cart-codec", timeout=20
        ) == {"count": 2, "qty": 1}
    found, stored = store.get_event("cart-codec", reply_key("cc-1"))
    assert found and "replaykit.codec" in stored  # the reply is encoded at rest


class Salted:
    """A codec that encodes one value differently each time, as encryption does."""

    name = "salted-updates"

    def encode(self, data: bytes) -> bytes:
        return b"S" + bytes(b ^ 0x5A for b in data)

    def decode(self, data: bytes) -> bytes:
        return bytes(b ^ 0x5A for b in data[1:])


# -- the command line -----------------------------------------------------------------------------


def test_the_command_line_sends_an_update_and_prints_the_reply(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    with engine_thread(url, executor_id="cli-worker") as engine:
        engine.start(cart, "cli", workflow_id="cart-cli")
        out = ok(rk("workflows", "update", "cart-cli", "add", '["apple"]', "--url", url))
        assert json.loads(out) == {"count": 1, "qty": 1}
        out = ok(
            rk(
                "workflows",
                "update",
                "cart-cli",
                "add",
                '["fig"]',
                "--kwargs",
                '{"qty": 2}',
                "--update-id",
                "cli-2",
                "--json",
                "--url",
                url,
            )
        )
        assert json.loads(out)["reply"] == {"count": 2, "qty": 2}
        refused = rk(
            "workflows",
            "update",
            "cart-cli",
            "add",
            '["x"]',
            "--kwargs",
            '{"qty": 0}',
            "--url",
            url,
        )
        assert refused.exit_code == 1
        assert "Refused" in refused.stderr and "a quantity of 0" in refused.stderr
        answered = rk("workflows", "update", "cart-cli", "add", '["broken"]', "--url", url)
        assert answered.exit_code == 1 and "KeyError" in answered.stderr
        unknown = rk("workflows", "update", "cart-cli", "remove", "--url", url)
        assert unknown.exit_code == 1 and "has no update 'remove'" in unknown.stderr
        bad = rk("workflows", "update", "cart-cli", "add", '{"not": "a list"}', "--url", url)
        assert bad.exit_code == 2 and "JSON array" in bad.stderr
        timed_out = rk("workflows", "update", "cart-cli", "close", "--timeout", "0s", "--url", url)
        assert timed_out.exit_code in (0, 1)


# -- the testing kit ------------------------------------------------------------------------------


def test_the_testing_kit_sends_updates_at_virtual_times() -> None:
    result = kit_run(
        cart,
        "kit",
        updates=[
            Update("add", "apple"),
            Update("add", "pear", qty=0, at=60),
            Update("add", "broken", at=timedelta(minutes=2)),
            Update("remove", "x", at=90),
            Update("close", at=timedelta(days=3), update_id="closing"),
            Update("add", "late", at=timedelta(days=4)),
        ],
        real_steps=True,
    )
    assert result.result == {"owner": "kit", "items": ["apple"]}
    assert result.elapsed == timedelta(days=3)
    replies = result.replies
    assert replies["update-0"].unwrap() == {"count": 1, "qty": 1}
    assert isinstance(replies["update-1"].error, Refused)
    assert isinstance(replies["update-2"].error, KeyError)
    assert isinstance(replies["update-3"].error, UnknownUpdate)
    assert replies["closing"].value == 1
    # Due after the run ended: the kit stops with the run, so it is never delivered.
    assert not replies["update-5"].answered
    # The refused ones left no trace: a Race, a step and a reply per add; two more answers.
    assert [kind for kind, _ in result.commands].count("reply") == 3


def test_the_testing_kit_reports_an_update_nobody_answered() -> None:
    result = kit_run(silent, updates=[Update("ask", update_id="never")])
    reply = result.replies["never"]
    assert not reply.answered
    with pytest.raises(AssertionError, match="was not answered by the end of the run"):
        reply.unwrap()


def test_the_testing_kit_refuses_bad_updates() -> None:
    with pytest.raises(ValueError, match="more than once"):
        kit_run(
            cart, "x", updates=[Update("add", "a", update_id="u"), Update("close", update_id="u")]
        )
    with pytest.raises(TypeError, match=r"updates= takes replaykit\.testing\.Update"):
        kit_run(cart, "x", updates=["add"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="before the run started"):
        Update("add", at=-1)


def test_check_determinism_with_updates() -> None:
    report = check_determinism(
        cart,
        "det",
        updates=[Update("add", "a"), Update("add", "b", at=5), Update("close", at=10)],
        real_steps=True,
    )
    assert report.reference.result == {"owner": "det", "items": ["a", "b"]}
    assert report.crash_runs > 5
