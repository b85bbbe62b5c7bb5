"""Shard keys from the faces: `shard_key=` on every start and enqueue (Engine, AsyncEngine,
Client, AsyncClient and `replaykit workflows start --shard-key`), a family under its
root's key, on the three stores (docs/storage.md, "Past one server")."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

import pytest

from conftest import ok, rk
from replaykit import AsyncClient, AsyncEngine, Call, Client, Engine, Queue, Step, workflow

QUEUE = Queue("sk-q")  # declared: engines claim from it


def double(n: int) -> int:
    return n * 2


@workflow(name="shard-leaf")
def leaf(n: int) -> Generator[Any, Any, int]:
    return (yield Step("double", double, n))


@workflow(name="shard-tree")
def tree(n: int) -> Generator[Any, Any, int]:
    left = yield Call(leaf, n)
    right = yield Call(leaf, n + 1)
    return left + right


def test_a_run_started_with_a_key_keeps_it_and_its_children_take_it(engine: Engine) -> None:
    keyed = engine.start(tree, 1, workflow_id="sk-tree", shard_key="tenant-7")
    plain = engine.start(tree, 2, workflow_id="sk-plain")
    assert keyed.result(timeout=30) == 2 + 4
    assert plain.result(timeout=30) == 4 + 6
    keys = {row.workflow_id: row.shard_key for row in engine.list_workflows()}
    children = {wid: key for wid, key in keys.items() if wid not in ("sk-tree", "sk-plain")}
    assert keys["sk-tree"] == "tenant-7"
    assert keys["sk-plain"] == "sk-plain"  # no key given: its own id
    assert sorted(children.values()) == ["sk-plain", "sk-plain", "tenant-7", "tenant-7"]


def test_enqueue_takes_a_key_and_the_claim_keeps_it(engine: Engine) -> None:
    handle = engine.enqueue("sk-q", tree, 3, workflow_id="sk-queued", shard_key="tenant-9")
    engine.claim_now()
    assert handle.result(timeout=30) == 6 + 8
    assert handle.row().shard_key == "tenant-9"


@pytest.mark.parametrize(
    ("key", "said"),
    [("", "shard_key must be a non-empty string"), (7, "shard_key must be a non-empty string")],
)
def test_a_bad_key_is_refused_naming_the_run(engine: Engine, key: Any, said: str) -> None:
    with pytest.raises(ValueError, match=f"workflow id 'sk-bad': {said}"):
        engine.start(tree, 1, workflow_id="sk-bad", shard_key=key)
    assert engine.list_workflows() == []


def test_the_async_faces_and_the_clients_take_a_key(shared: Any) -> None:
    async def main() -> None:
        async with AsyncEngine(shared, poll_interval=0.05) as aio:
            done = await aio.start(leaf, 5, workflow_id="sk-aio-1", shard_key="k-aio")
            assert await done.result(timeout=20) == 10
            await aio.enqueue("sk-q", leaf, 6, workflow_id="sk-aio-2", shard_key="k-aio-q")
        async with AsyncClient(shared, app_version="v1") as client:
            await client.enqueue("sk-q", "shard-leaf", 7, workflow_id="sk-ac", shard_key="k-ac")

    asyncio.run(main())
    with Client(shared, app_version="v1", executor_id="nobody") as client:
        client.start("shard-leaf", 8, workflow_id="sk-c", shard_key="k-c")
        keys = {r.workflow_id: r.shard_key for r in client.list_workflows()}
    assert keys == {
        "sk-aio-1": "k-aio",
        "sk-aio-2": "k-aio-q",
        "sk-ac": "k-ac",
        "sk-c": "k-c",
    }


def test_the_command_line_starts_a_run_under_a_key(created_url: str) -> None:
    out = ok(
        rk(
            "workflows",
            "start",
            "shard-leaf",
            "[4]",
            "--url",
            created_url,
            "--queue",
            "sk-q",
            "--id",
            "sk-cli",
            "--shard-key",
            "tenant-cli",
            "--app-version",
            "v1",
            "--json",
        )
    )
    assert '"workflow_id": "sk-cli"' in out
    with Client(created_url) as client:
        assert client.handle("sk-cli").row().shard_key == "tenant-cli"
    refused = rk(
        "workflows",
        "start",
        "shard-leaf",
        "[4]",
        "--url",
        created_url,
        "--queue",
        "sk-q",
        "--shard-key",
        "",
        "--app-version",
        "v1",
    )
    assert refused.exit_code != 0 and "--shard-key needs a key" in refused.output
