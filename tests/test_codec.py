"""Payload codecs: `Engine(codec=...)` keeps every payload encoded at rest.

What is checked: the at-rest form and its errors (replaykit.serde), `CodecStore`
against the store conformance suite, runs on the three stores that complete and
replay warm and cold with nothing of a secret left in clear in the database,
clear errors for a missing, another or a failing codec, plain rows written
before the codec still reading, the CLI and the UI showing payloads encoded
without the codec and decoded with it, the testing kit's `codec=`, and
examples/encrypted.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Generator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from conftest import rk, wait_for
from replaykit import (
    AsyncEngine,
    Call,
    Client,
    CloseStream,
    CodecError,
    Engine,
    PayloadCodec,
    Race,
    Recv,
    Send,
    SetEvent,
    Sleep,
    Status,
    Step,
    WriteStream,
    serde,
    workflow,
)
from replaykit.errors import DamagedData, TransactionUnsupported
from replaykit.log import Failure, Record, Value
from replaykit.serde import ErrorInfo
from replaykit.stores import MemoryStore
from replaykit.stores.base import (
    EventWrite,
    FinishWrite,
    OutgoingMessage,
    RecordWrite,
    Store,
    WorkflowFilter,
    WorkflowRow,
)
from replaykit.stores.codec import CodecStore, UndecodableRow, unwrapped_store_methods
from replaykit.stores.sqlite import SqliteStore
from replaykit.testing import Message, check_determinism, check_store, run
from replaykit.ui import create_app
from replaykit.ui._server import running

ROOT = Path(__file__).resolve().parent.parent
SECRET_INPUT = "input-secret-0451"
SECRET_STEP = "step-secret-1138"
SECRET_FAILURE = "failure-secret-2187"
SECRET_MESSAGE = "message-secret-7462"
SECRET_UNREAD = "unread-secret-3263"
SECRET_EVENT = "event-secret-9001"
SECRETS = [SECRET_INPUT, SECRET_STEP, SECRET_FAILURE, SECRET_MESSAGE, SECRET_UNREAD, SECRET_EVENT]


class Salted:
    """A codec that encodes one value differently each time, as encryption does."""

    def __init__(self, name: str = "salted", salt: bytes | None = None) -> None:
        self.name = name
        self._salt = salt
        self.encoded = 0
        self.decoded = 0

    def encode(self, data: bytes) -> bytes:
        self.encoded += 1
        salt = self._salt or os.urandom(4)
        return b"S" + salt + bytes(b ^ salt[i % 4] for i, b in enumerate(data))

    def decode(self, data: bytes) -> bytes:
        self.decoded += 1
        if data[:1] != b"S" or (self._salt is not None and data[1:5] != self._salt):
            raise ValueError("not this key's data")
        salt = data[1:5]
        return bytes(b ^ salt[i % 4] for i, b in enumerate(data[5:]))


class SecretFailure(Exception):
    pass


def reveal(text: str) -> dict[str, str]:
    return {"echo": text, "step": SECRET_STEP}


def fail_with_secret(text: str) -> None:
    raise SecretFailure(f"{SECRET_FAILURE} about {text}")


@workflow(name="codec-vault")
def vault_wf(text: str) -> Generator[Any, Any, dict[str, Any]]:
    shown = yield Step("reveal", reveal, text)
    try:
        yield Step("fail", fail_with_secret, text)
    except SecretFailure as exc:
        failure = str(exc)
    first = yield Recv("first")
    yield SetEvent("vault", {"event": SECRET_EVENT})
    second = yield Recv("second")
    return {"shown": shown, "failure": failure, "messages": [first, second]}


@workflow(name="codec-failing")
def failing_wf(text: str) -> Generator[Any, Any, None]:
    yield Step("fail", fail_with_secret, text)


@workflow(name="codec-waiter")
def waiter_wf(text: str) -> Generator[Any, Any, list[Any]]:
    got = yield Recv("go")
    return [text, got]


def waits_on(engine: Engine, workflow_id: str, topic: str) -> bool:
    log = engine.steps(workflow_id)
    return bool(log) and log[-1].is_pending and log[-1].name == topic


def vault_expected() -> dict[str, Any]:
    return {
        "shown": {"echo": SECRET_INPUT, "step": SECRET_STEP},
        "failure": f"{SECRET_FAILURE} about {SECRET_INPUT}",
        "messages": [SECRET_MESSAGE, SECRET_MESSAGE + "-2"],
    }


def run_the_vault(url: str, codec: PayloadCodec) -> None:
    """The vault run, its first message warm and its second after a restart (cold),
    a failed run, and a message left unread in a waiting run's inbox."""
    # memory:// is a new store per engine; one instance outlives its engines.
    target: str | Store = MemoryStore() if url == "memory://" else url
    with Engine(target, codec=codec, poll_interval=0.05) as engine:
        handle = engine.start(vault_wf, SECRET_INPUT, workflow_id="vault-1")
        wait_for(lambda: waits_on(engine, "vault-1", "first"), "the vault to wait")
        engine.send("vault-1", SECRET_MESSAGE, topic="first")  # resumes the warm run
        wait_for(lambda: waits_on(engine, "vault-1", "second"), "the second wait")
        with pytest.raises(SecretFailure, match=SECRET_FAILURE):
            engine.run(failing_wf, SECRET_INPUT, workflow_id="failing-1", timeout=20)
        engine.start(waiter_wf, "w", workflow_id="waiter-1")
        wait_for(lambda: waits_on(engine, "waiter-1", "go"), "the waiter to wait")
        engine.send("waiter-1", SECRET_UNREAD, topic="elsewhere")
        assert handle.status() is Status.PENDING
    # A new engine rebuilds the run by replaying its encoded log.
    with Engine(target, codec=codec, poll_interval=0.05) as engine:
        engine.send("vault-1", SECRET_MESSAGE + "-2", topic="second")
        assert engine.handle("vault-1").result(timeout=20) == vault_expected()
        assert engine.get_event("vault-1", "vault") == {"event": SECRET_EVENT}
        failed = engine.handle("failing-1").row()
        assert failed.status is Status.ERROR
        assert SECRET_FAILURE in failed.error  # decoded for whoever holds the codec
        assert isinstance(failed.result, Failure)
        assert SECRET_FAILURE in failed.result.error.message
        assert SECRET_FAILURE in failed.result.error.traceback
        log = engine.steps("vault-1")
        assert log[0].outcome == Value({"echo": SECRET_INPUT, "step": SECRET_STEP})


def sqlite_text(path: Path) -> str:
    """All the database holds, read without replaykit: its files' bytes and every row."""
    raw = b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*") if p.is_file())
    with sqlite3.connect(path) as conn:
        tables = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        rows = [repr(r) for t in tables for r in conn.execute(f'SELECT * FROM "{t}"')]
    return raw.decode("utf-8", "replace") + "\n".join(rows)


def postgres_text(url: str, schema: str) -> str:
    import psycopg
    from psycopg import sql

    with psycopg.connect(url) as conn:
        tables = [
            name
            for (name,) in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (schema,),
            )
        ]
        rows = [
            repr(row)
            for table in tables
            for row in conn.execute(
                sql.SQL("SELECT * FROM {}.{}").format(sql.Identifier(schema), sql.Identifier(table))
            )
        ]
    assert any("workflows" in t for t in tables), tables
    return "\n".join(rows)


# -- the at-rest form ------------------------------------------------------------------------


def test_a_payload_round_trips_and_its_at_rest_form_is_json() -> None:
    codec = Salted()
    value = {"b": [1, 2.5, None, "é\ud800"], "a": True}
    at_rest = serde.encode_payload(value, codec)
    assert set(at_rest) == {serde.CODEC_KEY, "data"} and at_rest[serde.CODEC_KEY] == "salted"
    assert json.loads(serde.dumps(at_rest)) == at_rest
    decoded = serde.decode_payload(at_rest, codec)
    assert decoded == value and list(decoded) == ["b", "a"]  # key order kept
    assert serde.encode_payload(value, codec) != at_rest  # a salted codec differs each time
    assert serde.decode_payload({"plain": 1}, codec) == {"plain": 1}
    assert serde.decode_payload({"plain": 1}, None) == {"plain": 1}
    size = len(codec.encode(serde.canonical_json(value).encode("utf-8", "surrogatepass")))
    assert serde.describe_encoded(at_rest) == f"<encoded by salted, {size} bytes>"


def test_a_payload_is_refused_without_its_codec_with_another_or_a_failing_one() -> None:
    at_rest = serde.encode_payload("x", Salted(salt=b"key1"))
    with pytest.raises(CodecError) as missing:
        serde.decode_payload(at_rest, None, what="the inputs", workflow_id="run-7")
    assert isinstance(missing.value, DamagedData)
    assert missing.value.codec_name == "salted" and missing.value.workflow_id == "run-7"
    assert "'run-7'" in str(missing.value) and "codec=" in str(missing.value)
    assert "--codec" in str(missing.value)
    with pytest.raises(CodecError, match=r"'salted'.*'zlib'"):
        serde.decode_payload(at_rest, Salted(name="zlib"))
    with pytest.raises(CodecError, match=r"could not decode.*not this key's data"):
        serde.decode_payload(at_rest, Salted(salt=b"key2"))


def test_an_error_keeps_its_class_clear_and_the_rest_encoded() -> None:
    codec = Salted()
    info = ErrorInfo("builtins", "ValueError", "secret", ["secret", 3], "Traceback: secret")
    at_rest = serde.encode_error_info(info, codec)
    assert (at_rest.module, at_rest.qualname) == ("builtins", "ValueError")
    assert "secret" not in serde.dumps(serde.error_info_to_json(at_rest))
    assert at_rest.message.startswith("<encoded by salted, ")
    assert serde.is_encoded_error(at_rest) and not serde.is_encoded_error(info)
    assert serde.decode_error_info(at_rest, codec) == info
    assert serde.decode_error_info(info, None) == info


@pytest.mark.parametrize(
    ("codec", "why"),
    [
        (object(), "lacks a callable encode"),
        (type("NoName", (), {"encode": len, "decode": len})(), "lacks a name: str"),
        (Salted(name=""), "cannot be stored"),
        (Salted(name="has space"), "cannot be stored"),
    ],
)
def test_an_unusable_codec_is_refused_when_given(codec: Any, why: str) -> None:
    with pytest.raises((TypeError, ValueError), match=why):
        Engine("memory://", codec=codec)


# -- the store wrapper -------------------------------------------------------------------------


def test_codec_store_implements_every_store_method() -> None:
    assert unwrapped_store_methods() == [], (
        "Store methods CodecStore does not encode yet; add them to replaykit/stores/codec.py"
    )
    assert isinstance(CodecStore(MemoryStore(), Salted()), Store)


def test_codec_store_on_memory_conforms() -> None:
    check_store(lambda: CodecStore(MemoryStore(), Salted()))


def test_codec_store_without_a_codec_conforms() -> None:
    check_store(lambda: CodecStore(MemoryStore(), None))


def test_codec_store_on_sqlite_conforms(tmp_path: Path) -> None:
    paths = (tmp_path / f"store-{i}.db" for i in range(1000))
    check_store(lambda: CodecStore(SqliteStore(next(paths)), Salted()))


def test_a_listing_shows_a_run_it_cannot_decode_as_damaged() -> None:
    memory = MemoryStore()
    CodecStore(memory, Salted()).create_workflow(
        WorkflowRow("r1", "codec-waiter", Status.PENDING, inputs={"args": ["x"], "kwargs": {}})
    )
    plain = CodecStore(memory, None)
    [listed] = plain.list_workflows(WorkflowFilter())
    assert listed.inputs is None and "encoded by the payload codec 'salted'" in listed.damaged
    with pytest.raises(UndecodableRow) as refused:
        plain.get_workflow("r1")
    assert refused.value.row is not None and refused.value.row.workflow_id == "r1"
    assert isinstance(refused.value, CodecError)


# -- runs on the three stores ---------------------------------------------------------------


def test_a_run_with_a_codec_completes_and_replays_on_every_store(store_url: str) -> None:
    codec = Salted()
    run_the_vault(store_url, codec)
    assert codec.encoded and codec.decoded


def test_sqlite_holds_no_plaintext(tmp_path: Path) -> None:
    db = tmp_path / "vault.db"
    run_the_vault(f"sqlite:///{db}", Salted())
    text = sqlite_text(db)
    assert [secret for secret in SECRETS if secret in text] == []
    assert "salted" in text  # the codec's name is stored in clear, with each payload


def test_postgres_holds_no_plaintext(pg_url: str, pg_schema: str) -> None:
    run_the_vault(f"{pg_url}?schema={pg_schema}", Salted())
    text = postgres_text(pg_url, pg_schema)
    assert [secret for secret in SECRETS if secret in text] == []
    assert "salted" in text


def test_an_engine_without_the_codec_parks_the_run_and_says_what_to_pass(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'park.db'}"
    codec = Salted()
    with Engine(url, codec=codec, poll_interval=0.05) as engine:
        engine.start(waiter_wf, SECRET_INPUT, workflow_id="parked-1")
        wait_for(lambda: waits_on(engine, "parked-1", "go"), "the run to wait")
    # An engine without it recovers the run, cannot read it, and parks it.
    with Engine(url, poll_interval=0.05) as keyless, Client(url, codec=codec) as client:
        wait_for(
            lambda: client.handle("parked-1").status() is Status.PARKED, "the run to be parked"
        )
        with pytest.raises(CodecError, match=r"'parked-1'.*'salted'.*codec="):
            keyless.handle("parked-1").status()
        row = client.store.get_workflow("parked-1")
        assert row is not None and "encoded by the payload codec 'salted'" in row.error
    with Engine(url, codec=codec, poll_interval=0.05) as engine:
        engine.resume("parked-1")
        engine.send("parked-1", "go!", topic="go")
        assert engine.handle("parked-1").result(timeout=20) == [SECRET_INPUT, "go!"]


def test_another_codec_name_or_key_fails_clearly(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'other.db'}"
    with Engine(url, codec=Salted(salt=b"key1")) as engine, pytest.raises(SecretFailure):
        engine.run(failing_wf, "x", workflow_id="f-1", timeout=20)
    with Client(url, codec=Salted(name="other")) as client, pytest.raises(CodecError) as named:
        client.handle("f-1").result()
    assert "'salted'" in str(named.value) and "'other'" in str(named.value)
    with Client(url, codec=Salted(salt=b"key2")) as client, pytest.raises(CodecError) as keyed:
        client.handle("f-1").result()
    assert "could not decode" in str(keyed.value) and "'f-1'" in str(keyed.value)


def test_plain_rows_written_before_the_codec_still_read(tmp_path: Path) -> None:
    db = tmp_path / "upgrade.db"
    url = f"sqlite:///{db}"
    with Engine(url, poll_interval=0.05) as engine:
        engine.start(waiter_wf, "plain-input-1", workflow_id="old-1")
        wait_for(lambda: waits_on(engine, "old-1", "go"), "the run to wait")
    codec = Salted()
    with Engine(url, codec=codec, poll_interval=0.05) as engine:
        engine.send("old-1", "new-message-1", topic="go")
        assert engine.handle("old-1").result(timeout=20) == ["plain-input-1", "new-message-1"]
    text = sqlite_text(db)
    assert "plain-input-1" in text  # written before the codec: kept as it was
    assert "new-message-1" not in text  # the outcome and the result written since: encoded


def test_client_and_asyncengine_take_the_codec(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'faces.db'}"
    codec = Salted()

    async def main() -> Any:
        async with AsyncEngine(url, codec=codec, poll_interval=0.05, app_version="v1") as engine:
            with Client(url, codec=codec, app_version="v1", executor_id="local") as client:
                client.start("codec-waiter", SECRET_INPUT, workflow_id="c-1")
                client.send("c-1", SECRET_MESSAGE, topic="go")
            return await (engine.handle("c-1")).result(timeout=20)

    assert asyncio.run(main()) == [SECRET_INPUT, SECRET_MESSAGE]
    assert SECRET_MESSAGE not in sqlite_text(tmp_path / "faces.db")


# -- the CLI and the UI -----------------------------------------------------------------------


@pytest.fixture
def fernet_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A database written with examples/encrypted.py's Fernet codec, its key in the env."""
    from cryptography.fernet import Fernet

    from examples.encrypted import codec_from_env

    monkeypatch.setenv("REPLAYKIT_FERNET_KEY", Fernet.generate_key().decode())
    monkeypatch.chdir(ROOT)  # where `--codec examples.encrypted:...` is imported from
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    with Engine(url, codec=codec_from_env()) as engine:
        with pytest.raises(SecretFailure):
            engine.run(failing_wf, SECRET_INPUT, workflow_id="cli-fail", timeout=20)
        engine.start(waiter_wf, SECRET_INPUT, workflow_id="cli-wait")
        wait_for(lambda: waits_on(engine, "cli-wait", "go"), "the run to wait")
        engine.send("cli-wait", SECRET_UNREAD, topic="elsewhere")
    yield url


CODEC_SPEC = "examples.encrypted:codec_from_env"


def test_the_cli_shows_payloads_encoded_without_the_codec(fernet_db: str) -> None:
    shown = rk("workflows", "show", "cli-fail", "--traceback", "--url", fernet_db)
    assert shown.exit_code == 0, shown.output
    assert "<encoded by fernet, " in shown.output
    assert SECRET_FAILURE not in shown.output and SECRET_INPUT not in shown.output
    listed = rk("workflows", "list", "--url", fernet_db)
    assert listed.exit_code == 0 and "SecretFailure: <encoded by fernet" in listed.output
    assert SECRET_FAILURE not in listed.output


def test_the_cli_shows_payloads_decoded_with_the_codec(fernet_db: str) -> None:
    shown = rk("--codec", CODEC_SPEC, "workflows", "show", "cli-fail", "--url", fernet_db)
    assert shown.exit_code == 0, shown.output
    assert SECRET_FAILURE in shown.output and "<encoded" not in shown.output
    exported = rk("--codec", CODEC_SPEC, "workflows", "export", "cli-wait", "--url", fernet_db)
    assert exported.exit_code == 0 and SECRET_INPUT in exported.output
    sent = rk(
        "--codec", CODEC_SPEC, "workflows", "send", "cli-wait", '"go!"', "--topic", "go",
        "--url", fernet_db,
    )  # fmt: skip
    assert sent.exit_code == 0, sent.output
    raw = json.dumps(rk("workflows", "export", "cli-wait", "--url", fernet_db).output)
    assert "go!" not in raw  # what the CLI sent with the codec is stored encoded


def test_a_bad_codec_spec_is_refused_with_a_clear_message(fernet_db: str) -> None:
    for spec, why in [
        ("no-colon", "--codec takes MODULE:ATTRIBUTE"),
        ("no_such_module_here:codec", "cannot import 'no_such_module_here'"),
        ("examples.encrypted:missing", "has no attribute 'missing'"),
        ("examples.encrypted:PATIENT", "lacks a callable encode"),
    ]:
        result = rk("--codec", spec, "workflows", "list", "--url", fernet_db)
        assert result.exit_code == 2, (spec, result.output)
        assert why in result.output, (spec, result.output)
        assert "Traceback" not in result.output


def test_the_cli_replay_refuses_an_encoded_run_without_the_codec(fernet_db: str) -> None:
    result = rk("replay", f"{__name__}:waiter_wf", "--id", "cli-wait", "--url", fernet_db)
    assert result.exit_code == 1, result.output
    assert "encoded by the payload codec 'fernet'" in result.output
    assert "--codec" in result.output


def test_the_ui_shows_payloads_encoded_without_the_codec_and_decoded_with_it(
    fernet_db: str,
) -> None:
    from examples.encrypted import codec_from_env

    store = SqliteStore(fernet_db.removeprefix("sqlite:///"))
    try:
        with running(create_app(store)) as base, httpx.Client(base_url=base) as client:
            page = client.get("/run", params={"id": "cli-wait", "topic": "elsewhere"}).text
            assert "&lt;encoded by fernet, " in page
            assert SECRET_INPUT not in page and SECRET_UNREAD not in page
        decoding = CodecStore(store, codec_from_env())
        with running(create_app(decoding)) as base, httpx.Client(base_url=base) as client:
            page = client.get("/run", params={"id": "cli-wait", "topic": "elsewhere"}).text
            assert SECRET_INPUT in page and SECRET_UNREAD in page
            assert "encoded by" not in page
    finally:
        store.close()


# -- the testing kit ----------------------------------------------------------------------------


@workflow(name="codec-kit")
def kit_wf(text: str) -> Generator[Any, Any, list[Any]]:
    shown = yield Step("reveal", reveal, text)
    yield Sleep(30 * 86400)
    got = yield Recv("go")
    return [shown["echo"], got]


def test_the_testing_kit_runs_a_codec_on_virtual_time() -> None:
    codec = Salted()
    result = run(
        kit_wf,
        SECRET_INPUT,
        messages=[Message("go", SECRET_MESSAGE, at=31 * 86400)],
        codec=codec,
        real_steps=True,
    )
    assert result.unwrap() == [SECRET_INPUT, SECRET_MESSAGE]
    assert result.elapsed.days == 31
    assert codec.encoded and codec.decoded
    assert result.stored_log is not None
    stored = result.stored_log.to_json()
    assert [s for s in (SECRET_INPUT, SECRET_STEP, SECRET_MESSAGE) if s in stored] == []
    assert SECRET_STEP in result.log.to_json()
    report = check_determinism(
        kit_wf,
        SECRET_INPUT,
        messages=[Message("go", SECRET_MESSAGE, at=31 * 86400)],
        codec=codec,
        real_steps=True,
    )
    assert report.crash_runs > 0


def test_the_testing_kit_reports_a_codec_that_cannot_decode() -> None:
    class Forgetful(Salted):
        def decode(self, data: bytes) -> bytes:
            raise ValueError("lost key")

    with pytest.raises(CodecError, match=r"codec 'salted' could not decode.*lost key"):
        run(kit_wf, "x", messages=[Message("go", "m", at=31 * 86400)], codec=Forgetful())


# -- the example -----------------------------------------------------------------------------------


def test_the_encrypted_example_runs_and_leaves_no_plaintext(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("REPLAYKIT_FERNET_KEY", None)
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "encrypted.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning: REPLAYKIT_FERNET_KEY is not set" in done.stderr
    assert "holds none of" in done.stdout
    assert "an engine without the codec: the inputs of workflow id 'intake-1'" in done.stdout


def test_a_record_read_back_through_the_codec_equals_the_one_written() -> None:
    store = CodecStore(MemoryStore(), Salted())
    store.create_workflow(WorkflowRow("r", "codec-waiter", Status.PENDING))
    record = Record(0, "step", "s", Failure(ErrorInfo("builtins", "KeyError", "'k'", ["k"])))
    assert store.record("r", record) is record
    assert store.load_log("r") == [record]


@pytest.mark.parametrize("kind", ["step", "now", "race", "all", "write_stream", "close_stream"])
def test_every_record_kind_is_encoded_at_rest(kind: str) -> None:
    memory = MemoryStore()
    store = CodecStore(memory, Salted())
    store.create_workflow(WorkflowRow("r", "codec-waiter", Status.PENDING))
    record = Record(0, kind, "k", Value({"value": SECRET_STEP}))
    store.record("r", record)
    assert store.load_log("r") == [record]
    [held] = memory.load_log("r")
    assert isinstance(held.outcome, Value) and serde.is_encoded(held.outcome.data)
    assert SECRET_STEP not in serde.dumps(held.to_json())


def test_replaykit_ui_refuses_a_bad_codec_spec() -> None:
    from replaykit.ui.cli import ui as ui_command

    result = CliRunner().invoke(ui_command, ["--codec", "examples.encrypted:nothing"])
    assert result.exit_code == 2
    assert "has no attribute 'nothing'" in result.output


# -- plain payloads shaped like encoded ones ---------------------------------------------------
#
# A webhook body that happens to have the at-rest form of an encoded payload is the
# user's data: stored escaped, it reads back as it was written, with a codec or
# without one, and a run holding it is never parked for want of a codec.

LOOKALIKE = {"replaykit.codec": "gzip", "data": "H4sIAAAAAAAAA6tWKkktLlGyUlAqS8wpTVWqBQA="}
LOOKALIKES: list[Any] = [
    LOOKALIKE,
    {"replaykit.plain": LOOKALIKE},  # the escape's own form
    {"replaykit.plain": 1},
    {"replaykit.codec": "gzip", "data": "x", "more": 1},  # not the form: stored as it is
]
# Recorded exceptions a reader could take for encoded (or escaped) ones.
LOOKALIKE_ERRORS = [
    ErrorInfo("builtins", "ValueError", serde.describe_encoded(LOOKALIKE), [LOOKALIKE], ""),
    ErrorInfo("builtins", "ValueError", "escaped?", [{"replaykit.plain": 1}], ""),
]


def open_url(url: str) -> Store:
    from replaykit.stores import open_store

    return open_store(url)


@pytest.mark.parametrize("codec_name", ["no codec", "salted"])
def test_a_lookalike_payload_reads_back_equal_through_every_write_path(
    store_url: str, codec_name: str
) -> None:
    inner = open_url(store_url)
    store = CodecStore(inner, None if codec_name == "no codec" else Salted())
    try:
        for n, value in enumerate(LOOKALIKES):
            check_every_write_path(store, f"w{n}", value)
        for n, info in enumerate(LOOKALIKE_ERRORS):
            wid = f"failed-{n}"
            store.create_workflow(WorkflowRow(wid, "wf", Status.PENDING, inputs=None))
            failure = Failure(info)
            store.record(wid, Record(0, "step", "s", failure))
            store.finish_workflow(wid, Status.ERROR, failure, error=info.message)
            row = store.get_workflow(wid)
            assert row is not None and row.result == failure
            assert store.load_log(wid)[0].outcome == failure
        # A process without the codec reads the plain ones (and refuses only what a codec
        # encoded); one with it reads them all.
        if codec_name == "no codec":
            for other in (CodecStore(inner, Salted()), CodecStore(inner, None)):
                assert other.get_workflow("w0-c") is not None
                assert other.get_workflow("w0-c").inputs == LOOKALIKE  # type: ignore[union-attr]
    finally:
        inner.close()


def check_every_write_path(store: CodecStore, prefix: str, value: Any) -> None:
    inputs = {"args": [value], "kwargs": {"body": value}}
    wid, other, batch, fork = (f"{prefix}-{s}" for s in ("a", "b", "c", "f"))
    store.create_workflow(WorkflowRow(wid, "wf", Status.PENDING, inputs=value))
    store.create_workflow(WorkflowRow(other, "wf", Status.PENDING, inputs=inputs))
    store.create_workflows([WorkflowRow(batch, "wf", Status.PENDING, inputs=value)])
    store.create_workflow(
        WorkflowRow(fork, "wf", Status.PENDING, inputs=value, forked_from=wid, fork_position=1),
        records=[Record(0, "step", "s", Value(value))],
        fork_of=wid,
    )
    store.record(
        wid,
        Record(0, "step", "s", Value(value)),
        send=OutgoingMessage(other, "sent", value),
        event=EventWrite("ev", value),
    )
    [answer] = store.record_many(
        [
            RecordWrite(
                other,
                Record(0, "step", "s", Value(value)),
                send=OutgoingMessage(wid, "sent", value),
                event=EventWrite("ev", value),
            )
        ]
    )
    assert isinstance(answer, Record) and answer.outcome == Value(value)
    # A composite's record and a stream's value are records' outcomes too.
    race = {"index": 0, "outcome": {"value": value}}
    store.record(wid, Record(1, "race", "race", Value(race)))
    store.record(wid, Record(2, "write_stream", "out", Value(value)))
    store.send_message(wid, "inbox", value)
    store.set_deadline(batch, None, None)
    # Read back: every one equal to what was written.
    assert [r.outcome for r in store.load_log(wid)] == [Value(value), Value(race), Value(value)]
    assert store.load_log(fork)[0].outcome == Value(value)
    assert store.get_workflow(wid).inputs == value  # type: ignore[union-attr]
    assert store.get_workflow(other).inputs == inputs  # type: ignore[union-attr]
    assert store.get_workflow(batch).inputs == value  # type: ignore[union-attr]
    listed = {r.workflow_id: r for r in store.list_workflows(WorkflowFilter())}
    assert listed[wid].inputs == value and not listed[wid].damaged
    assert store.get_event(wid, "ev") == (True, value)
    assert store.get_events(other) == {"ev": value}
    for target, topic in ((other, "sent"), (wid, "sent"), (wid, "inbox")):
        message = store.peek_message(target, topic)
        assert message is not None and message.payload == value, (target, topic)
    # The run's result, with its last record, and a continued generation's inputs.
    store.finish_workflow(
        batch, Status.SUCCESS, Value(value), record=Record(0, "step", "s", Value(value))
    )
    assert store.get_workflow(batch).result == Value(value)  # type: ignore[union-attr]
    [finished] = store.finish_many(
        [FinishWrite(fork, Status.SUCCESS, Value(value), record=Record(1, "step", "t", Value(1)))]
    )
    assert finished is True and store.get_workflow(fork).result == Value(value)  # type: ignore[union-attr]
    continued = store.continue_workflow(
        other, value, generation=0, executor_id=None, now=datetime.now(UTC)
    )
    assert continued.inputs == value
    assert store.get_workflow(other).inputs == value  # type: ignore[union-attr]
    holder = store.create_workflow(WorkflowRow(f"{prefix}-t", "wf", Status.PENDING))[0]
    try:
        written = store.record_transaction(
            holder.workflow_id, 0, lambda _conn: Record(0, "transaction", "t", Value(value))
        )
    except TransactionUnsupported:
        return
    assert written.outcome == Value(value)
    assert store.load_log(holder.workflow_id)[0].outcome == Value(value)


@workflow(name="codec-lookalike-child")
def lookalike_child(value: Any) -> Generator[Any, Any, Any]:
    return (yield Step("child-echo", echo, value))


def echo(value: Any) -> Any:
    return value


@workflow(name="codec-lookalike")
def lookalike_wf(value: Any) -> Generator[Any, Any, dict[str, Any]]:
    stepped = yield Step("echo", echo, value)
    _, raced = yield Race(Step("race-echo", echo, value), Sleep(3600))
    called = yield Call(lookalike_child, value, workflow_id="lookalike-child")
    yield Send("lookalike-peer", value, topic="peer")
    yield SetEvent("ev", value)
    yield WriteStream("out", value)
    yield CloseStream("out")
    got = yield Recv("in")
    return {"step": stepped, "race": raced, "call": called, "recv": got, "input": value}


@workflow(name="codec-lookalike-peer")
def lookalike_peer() -> Generator[Any, Any, Any]:
    return (yield Recv("peer"))


@pytest.mark.parametrize("with_codec", [False, True])
def test_a_run_holding_lookalike_payloads_completes_warm_and_cold(
    store_url: str, with_codec: bool
) -> None:
    codec = Salted() if with_codec else None
    target: str | Store = MemoryStore() if store_url == "memory://" else store_url
    expected = {"step": LOOKALIKE, "race": LOOKALIKE, "call": LOOKALIKE, "recv": LOOKALIKE}
    with Engine(target, codec=codec, poll_interval=0.05) as engine:
        engine.start(lookalike_peer, workflow_id="lookalike-peer")
        engine.start(lookalike_wf, LOOKALIKE, workflow_id="lookalike-1")
        wait_for(lambda: waits_on(engine, "lookalike-1", "in"), "the run to wait")
        assert engine.handle("lookalike-peer").result(timeout=20) == LOOKALIKE
        assert engine.get_event("lookalike-1", "ev") == LOOKALIKE
        assert list(engine.read_stream("lookalike-1", "out", timeout=20)) == [LOOKALIKE]
    # Another engine replays the whole log cold before it takes the message.
    with Engine(target, codec=codec, poll_interval=0.05) as engine:
        engine.send("lookalike-1", LOOKALIKE, topic="in")
        assert engine.handle("lookalike-1").result(timeout=20) == {**expected, "input": LOOKALIKE}
        assert engine.handle("lookalike-1").status() is Status.SUCCESS


def test_payloads_written_by_earlier_versions_read_back_the_same() -> None:
    """Rows as an earlier replaykit wrote them (no escape): plain ones and encoded ones."""
    codec = Salted()
    memory = MemoryStore()
    plain = {"args": [{"a": 1}, "x"], "kwargs": {}}
    encoded = serde.encode_payload(plain, codec)
    memory.create_workflow(WorkflowRow("old-plain", "wf", Status.PENDING, inputs=plain))
    memory.create_workflow(WorkflowRow("old-coded", "wf", Status.PENDING, inputs=encoded))
    memory.record("old-plain", Record(0, "step", "s", Value([1, {"k": "v"}])))
    memory.record("old-coded", Record(0, "step", "s", Value(serde.encode_payload("v", codec))))
    info = ErrorInfo("builtins", "ValueError", "boom", ["boom"], "tb")
    memory.record("old-plain", Record(1, "step", "f", Failure(info)))
    coded_info = serde.encode_error_info(info, codec)
    memory.record("old-coded", Record(1, "step", "f", Failure(coded_info)))
    memory.send_message("old-plain", "t", {"hook": True})
    memory.send_message("old-coded", "t", serde.encode_payload({"hook": True}, codec))
    for reader in (CodecStore(memory, codec), CodecStore(memory, None)):
        assert reader.get_workflow("old-plain").inputs == plain  # type: ignore[union-attr]
        assert [r.outcome for r in reader.load_log("old-plain")] == [
            Value([1, {"k": "v"}]),
            Failure(info),
        ]
        assert reader.peek_message("old-plain", "t").payload == {"hook": True}  # type: ignore[union-attr]
    with_codec = CodecStore(memory, codec)
    assert with_codec.get_workflow("old-coded").inputs == plain  # type: ignore[union-attr]
    assert [r.outcome for r in with_codec.load_log("old-coded")] == [Value("v"), Failure(info)]
    assert with_codec.peek_message("old-coded", "t").payload == {"hook": True}  # type: ignore[union-attr]
    shown = CodecStore(memory, None, pass_encoded=True)
    assert shown.get_workflow("old-coded").inputs == encoded  # type: ignore[union-attr]


def test_a_lookalike_is_stored_escaped_and_shown_as_written() -> None:
    memory = MemoryStore()
    memory.create_workflow(WorkflowRow("r", "wf", Status.PENDING))
    CodecStore(memory, None).send_message("r", "t", LOOKALIKE)
    assert memory.peek_message("r", "t").payload == {serde.ESCAPE_KEY: LOOKALIKE}  # type: ignore[union-attr]
    shown = CodecStore(memory, None, pass_encoded=True)
    assert shown.peek_message("r", "t").payload == LOOKALIKE  # type: ignore[union-attr]
    assert serde.escape_payload({"a": 1}) == {"a": 1}  # anything else is stored as it is
