"""External completion: `Awakeable` hands out a token, `Await` waits for `complete(token, ...)`.

On every store: the value and the failure reach the workflow; a token is completed once
(a second completion, even a concurrent one, is refused); an unknown token, a guessed
one and a finished run's are refused with the reason and write nothing; the waiting run
wakes; a completion that comes before the `Await`, or after a `Race` the `Await` lost,
waits for it; a token outlives a `ContinueAsNew`; the four faces and the CLI agree.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from conftest import ok, rk, wait_for
from replaykit import (
    AlreadyCompleted,
    AsyncClient,
    AsyncEngine,
    Await,
    Awakeable,
    AwakeableFailed,
    Client,
    CompletionRefused,
    ContinueAsNew,
    Engine,
    Race,
    Recv,
    RunEnded,
    SetEvent,
    Sleep,
    Status,
    UnknownToken,
    workflow,
)
from replaykit.commands import AwakeableToken
from replaykit.errors import CodecError, PayloadTooLarge
from replaykit.log import Value


class Declined(Exception):
    """A failure the caller of `fail(token, exc)` chose; the workflow catches it by class."""


@workflow(name="awakeables.approval")
def approval(order: str):
    token = yield Awakeable("approval")
    yield SetEvent("token", token)
    try:
        decision = yield Await(token)
    except AwakeableFailed as exc:
        return f"failed: {exc}"
    except Declined as exc:
        return f"declined: {exc}"
    return {"order": order, "decision": decision}


@workflow(name="awakeables.deadline")
def with_deadline(seconds: float):
    token = yield Awakeable("approval")
    yield SetEvent("token", token)
    winner, value = yield Race(Await(token), Sleep(seconds))
    if winner == 1:
        yield SetEvent("stage", "expired")
        yield Recv("again")
        # The completion that came after the race waits in the inbox for this Await.
        return ["late", (yield Await(token))]
    return ["in time", value]


@workflow(name="awakeables.early")
def early():
    token = yield Awakeable("approval")
    yield SetEvent("token", token)
    yield Recv("go")
    return (yield Await(token, timeout=30))


@workflow(name="awakeables.generations")
def across_generations(token: str | None = None):
    if token is None:
        token = yield Awakeable("approval")
        yield SetEvent("token", token)
        yield ContinueAsNew(token)
    return (yield Await(token))


def _token(engine: Engine, workflow_id: str) -> str:
    token = engine.get_event(workflow_id, "token", timeout=30)
    assert isinstance(token, str), f"run {workflow_id!r} published no token"
    return token


def _client_target(engine: Engine, store_url: str) -> Any:
    # A memory store lives in its engine: a client shares the object there (and must
    # not close it); on the other stores it opens its own, as an application's would.
    return engine.store if store_url == "memory://" else store_url


@contextlib.contextmanager
def _client(engine: Engine, store_url: str) -> Iterator[Client]:
    client = Client(_client_target(engine, store_url))
    yield client
    if store_url != "memory://":
        client.close()


def test_complete_gives_the_workflow_the_value(engine: Engine) -> None:
    handle = engine.start(approval, "o-1", workflow_id="aw-ok")
    token = _token(engine, "aw-ok")
    parts = AwakeableToken.parse(token)
    assert parts is not None
    assert (parts.workflow_id, parts.generation, parts.position) == ("aw-ok", 0, 0)
    engine.complete(token, {"by": "maria", "ok": True})
    assert handle.result(timeout=30) == {"order": "o-1", "decision": {"by": "maria", "ok": True}}
    log = engine.steps("aw-ok")
    assert [(r.kind, r.name) for r in log] == [
        ("awakeable", "approval"),
        ("set_event", "token"),
        ("await", parts.local),
    ]
    assert log[2].outcome == Value({"by": "maria", "ok": True})


def test_fail_with_a_message_raises_awakeable_failed_in_the_workflow(engine: Engine) -> None:
    handle = engine.start(approval, "o-2", workflow_id="aw-fail")
    engine.fail(_token(engine, "aw-fail"), "card declined")
    assert handle.result(timeout=30) == "failed: card declined"
    failure = engine.steps("aw-fail")[2].outcome
    assert failure is not None and not isinstance(failure, Value)
    assert failure.error.type_name == "replaykit.errors.AwakeableFailed"


def test_fail_with_an_exception_raises_that_class(engine: Engine) -> None:
    handle = engine.start(approval, "o-3", workflow_id="aw-exc")
    engine.fail(_token(engine, "aw-exc"), Declined("over the limit"))
    assert handle.result(timeout=30) == "declined: over the limit"


def test_a_token_is_completed_once(engine: Engine) -> None:
    # The run waits at Recv("go") before its Await: it is alive throughout.
    handle = engine.start(early, workflow_id="aw-once")
    token = _token(engine, "aw-once")
    engine.complete(token, "first")
    with pytest.raises(AlreadyCompleted, match="completed before"):
        engine.complete(token, "second")
    with pytest.raises(AlreadyCompleted):
        engine.fail(token, "too late")
    engine.send("aw-once", None, topic="go")
    assert handle.result(timeout=30) == "first"
    # Once the run ended, that comes first, whether or not the token was completed.
    with pytest.raises(RunEnded):
        engine.complete(token, "third")


def test_concurrent_completions_deliver_exactly_one(engine: Engine) -> None:
    handle = engine.start(early, workflow_id="aw-race")
    token = _token(engine, "aw-race")
    answers: list[str] = []
    lock = threading.Lock()
    go = threading.Barrier(6)

    def complete(n: int) -> None:
        go.wait()
        try:
            engine.complete(token, n)
            answer = f"delivered {n}"
        except AlreadyCompleted:
            answer = "refused"
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=complete, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    delivered = [a for a in answers if a.startswith("delivered")]
    assert len(delivered) == 1 and answers.count("refused") == 5, answers
    engine.send("aw-race", None, topic="go")
    assert f"delivered {handle.result(timeout=30)}" == delivered[0]


def test_unknown_tokens_are_refused_naming_the_token(engine: Engine) -> None:
    handle = engine.start(approval, "o-6", workflow_id="aw-unknown")
    token = _token(engine, "aw-unknown")
    parts = AwakeableToken.parse(token)
    assert parts is not None
    guessed = str(AwakeableToken("aw-unknown", 0, 0, "0" * 32))
    at_a_step = str(AwakeableToken("aw-unknown", 0, 1, parts.secret))
    no_run = str(AwakeableToken("aw-nobody", 0, 0, parts.secret))
    later = str(AwakeableToken("aw-unknown", 3, 0, parts.secret))
    cases = {
        "not-a-token": "is not an awakeable token",
        token + "x": "no workflow run has the id",
        guessed: "handed out no such token at position 0",
        at_a_step: r"its log holds set_event 'token'",
        no_run: "no workflow run has the id 'aw-nobody'",
        later: "names generation 3",
    }
    for bad, why in cases.items():
        with pytest.raises(UnknownToken, match=why) as caught:
            engine.complete(bad, 1)
        assert repr(bad) in str(caught.value)
        assert isinstance(caught.value, CompletionRefused) and isinstance(caught.value, LookupError)
    # Nothing was written: the real token is still completed once.
    engine.complete(token, "after the refusals")
    assert handle.result(timeout=30)["decision"] == "after the refusals"


def test_a_finished_runs_token_is_refused(engine: Engine) -> None:
    handle = engine.start(approval, "o-7", workflow_id="aw-done")
    token = _token(engine, "aw-done")
    engine.complete(token, "yes")
    handle.result(timeout=30)
    with pytest.raises(RunEnded, match="is SUCCESS, so nothing waits"):
        engine.complete(token, "again")
    cancelled = engine.start(approval, "o-8", workflow_id="aw-cancelled")
    other = _token(engine, "aw-cancelled")
    engine.terminate("aw-cancelled")  # the hard stop: a resume goes on from the log
    wait_for(lambda: cancelled.status() is Status.CANCELLED, "the terminate")
    with pytest.raises(RunEnded, match="resume the run first"):
        engine.fail(other, "no")
    # Resumed, it waits again and takes a completion.
    engine.resume("aw-cancelled")
    engine.complete(other, "after the resume")
    assert cancelled.result(timeout=30)["decision"] == "after the resume"


def test_an_oversized_value_is_refused_and_nothing_is_sent(store_url: str) -> None:
    with Engine(store_url, poll_interval=0.1, max_payload_bytes=200) as engine:
        handle = engine.start(approval, "o-9", workflow_id="aw-big")
        token = _token(engine, "aw-big")
        with pytest.raises(PayloadTooLarge, match="completion of awakeable token"):
            engine.complete(token, "x" * 500)
        with pytest.raises(PayloadTooLarge, match="failure of awakeable token"):
            engine.fail(token, "x" * 500)
        with pytest.raises(TypeError, match="a message \\(str\\) or an Exception"):
            engine.fail(token, 42)  # type: ignore[arg-type]
        engine.complete(token, "small")
        assert handle.result(timeout=30)["decision"] == "small"


def test_await_in_a_race_with_a_timer(engine: Engine) -> None:
    in_time = engine.start(with_deadline, 3600, workflow_id="aw-in-time")
    engine.complete(_token(engine, "aw-in-time"), "ok")
    assert in_time.result(timeout=30) == ["in time", "ok"]

    late = engine.start(with_deadline, 0.2, workflow_id="aw-late")
    token = _token(engine, "aw-late")
    assert engine.get_event("aw-late", "stage", timeout=30) == "expired"
    # The race is over, but the run has not ended: the completion is taken later.
    engine.complete(token, "late value")
    engine.send("aw-late", None, topic="again")
    assert late.result(timeout=30) == ["late", "late value"]


def test_a_completion_before_the_await_waits_for_it(engine: Engine) -> None:
    handle = engine.start(early, workflow_id="aw-early")
    engine.complete(_token(engine, "aw-early"), "ahead")
    engine.send("aw-early", None, topic="go")
    assert handle.result(timeout=30) == "ahead"


def test_a_token_outlives_continue_as_new(engine: Engine) -> None:
    handle = engine.start(across_generations, workflow_id="aw-gen")
    token = _token(engine, "aw-gen")
    wait_for(lambda: engine.handle("aw-gen").row().generation == 1, "the next generation")
    engine.complete(token, "carried")
    assert handle.result(timeout=30) == "carried"
    with pytest.raises(RunEnded):
        engine.complete(token, "again")


def test_a_fork_cannot_await_its_sources_token(engine: Engine) -> None:
    source = engine.start(approval, "o-10", workflow_id="aw-source")
    token = _token(engine, "aw-source")
    fork = engine.fork("aw-source", 2, workflow_id="aw-fork")
    with pytest.raises(ValueError, match="belongs to run 'aw-source'"):
        fork.result(timeout=30)
    engine.complete(token, "the source's")
    assert source.result(timeout=30)["decision"] == "the source's"


def test_the_client_completes_and_fails(store_url: str) -> None:
    with Engine(store_url, poll_interval=0.1) as engine:
        first = engine.start(early, workflow_id="aw-client-1")  # alive until "go"
        second = engine.start(approval, "o-12", workflow_id="aw-client-2")
        tokens = [_token(engine, "aw-client-1"), _token(engine, "aw-client-2")]
        with _client(engine, store_url) as client:
            client.complete(tokens[0], "from a client")
            with pytest.raises(AlreadyCompleted):
                client.complete(tokens[0], "again")
            client.fail(tokens[1], "no")
            with pytest.raises(UnknownToken):
                client.fail("0.0." + "f" * 32 + "@aw-nobody", "no")
        engine.send("aw-client-1", None, topic="go")
        assert first.result(timeout=30) == "from a client"
        assert second.result(timeout=30) == "failed: no"


def test_the_async_faces_complete_and_fail(store_url: str) -> None:
    async def main() -> Any:
        async with AsyncEngine(store_url, poll_interval=0.1) as engine:
            first = await engine.start(approval, "o-13", workflow_id="aw-async-1")
            # This one waits at Recv("go") before its Await: alive while it is refused.
            second = await engine.start(early, workflow_id="aw-async-2")
            one = await engine.get_event("aw-async-1", "token", timeout=30)
            two = await engine.get_event("aw-async-2", "token", timeout=30)
            await engine.complete(one, "async engine")
            assert (await first.result(timeout=30))["decision"] == "async engine"
            with pytest.raises(RunEnded):
                await engine.complete(one, "again")
            async with AsyncClient(_client_target(engine.engine, store_url)) as client:
                await client.fail(two, Declined("async client"))
                with pytest.raises(AlreadyCompleted):
                    await client.complete(two, "after the failure")
                with pytest.raises(UnknownToken):
                    await client.complete("nope", None)
            await engine.send("aw-async-2", None, topic="go")
            with pytest.raises(Declined, match="async client"):
                await second.result(timeout=30)

    asyncio.run(main())


def test_the_cli_completes_and_fails(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    with Engine(url, poll_interval=0.1) as engine:
        first = engine.start(early, workflow_id="aw-cli-1")  # alive until "go"
        second = engine.start(approval, "o-16", workflow_id="aw-cli-2")
        one, two = _token(engine, "aw-cli-1"), _token(engine, "aw-cli-2")
        said = ok(rk("workflows", "complete", one, '{"ok": true}', "--url", url))
        assert "completed the awakeable at position 0 of 'aw-cli-1'" in said
        again = rk("workflows", "complete", one, "1", "--url", url)
        assert again.exit_code == 1 and "completed before" in again.output
        bad = rk("workflows", "complete", one, "not json", "--url", url)
        assert bad.exit_code == 2 and "VALUE_JSON is not JSON" in bad.output
        unknown = rk("workflows", "fail", "nope", "x", "--url", url)
        assert unknown.exit_code == 1 and "'nope' is not an awakeable token" in unknown.output
        said = ok(rk("workflows", "fail", two, "declined by shell", "--url", url, "--json"))
        assert '"failed": true' in said and '"workflow_id": "aw-cli-2"' in said
        engine.send("aw-cli-1", None, topic="go")
        assert first.result(timeout=30) == {"ok": True}
        assert second.result(timeout=30) == "failed: declined by shell"


class _Reverse:
    """A payload codec that reverses bytes: encoded records are unreadable without it."""

    name = "reverse"

    def encode(self, data: bytes) -> bytes:
        return data[::-1]

    def decode(self, data: bytes) -> bytes:
        return data[::-1]


def test_a_codec_encoded_token_needs_the_codec(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'codec.db'}"
    with Engine(url, poll_interval=0.1, codec=_Reverse()) as engine:
        handle = engine.start(approval, "o-17", workflow_id="aw-codec")
        token = _token(engine, "aw-codec")
        with Client(url) as client, pytest.raises(CodecError):
            client.complete(token, "without the codec")
        shell = rk("workflows", "complete", token, "1", "--url", url)
        assert shell.exit_code == 1 and "encoded by codec 'reverse'" in shell.output
        with Client(url, codec=_Reverse()) as client:
            client.complete(token, "with the codec")
        assert handle.result(timeout=30)["decision"] == "with the codec"


def test_commands_refuse_what_cannot_run() -> None:
    with pytest.raises(TypeError, match="non-empty str"):
        Awakeable("")
    with pytest.raises(ValueError, match="not an awakeable token"):
        Await("order-1")
    with pytest.raises(ValueError, match="not an awakeable token"):
        Await("0.1.abc@order-1")
    with pytest.raises(TypeError, match="cannot hold Awakeable"):
        Race(Awakeable("a"), Sleep(1))
    token = "2.7." + "a" * 32 + "@order@1.x"
    parts = AwakeableToken.parse(token)
    assert parts == AwakeableToken("order@1.x", 2, 7, "a" * 32)
    assert str(parts) == token
    assert Await(token, timeout=timedelta(minutes=1)).timeout == 60.0
    assert Await(token).name == "2.7." + "a" * 32
    for bad in ["", "@x", "0.0." + "A" * 32 + "@x", "01.0." + "a" * 32 + "@x", "0.0." + "a" * 32]:
        assert AwakeableToken.parse(bad) is None, bad


def test_the_completion_topics_are_replaykits_own(engine: Engine) -> None:
    from replaykit import Send

    topic = "replaykit.awakeable:0.0." + "a" * 32
    with pytest.raises(ValueError, match="keeps for external completions"):
        Send("someone", "forged", topic=topic)
    with pytest.raises(ValueError, match="keeps for external completions"):
        Recv(topic)
    with pytest.raises(ValueError, match="keeps for external completions"):
        SetEvent(topic, 1)
    engine.start(early, workflow_id="aw-reserved")
    _token(engine, "aw-reserved")
    with pytest.raises(ValueError, match="keeps for external completions"):
        engine.send("aw-reserved", "forged", topic=topic)
