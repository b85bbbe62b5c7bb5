"""Payloads encrypted at rest: `Engine(codec=...)` with Fernet (`pip install 'replaykit[crypto]'`).

    REPLAYKIT_FERNET_KEY=... python examples/encrypted.py

A patient's intake runs on SQLite in a temporary directory, with every payload
(the run's inputs and result, each step's outcome, the message it receives, the
event it sets) encrypted by a Fernet codec. Then the example reads the database
file and its tables directly, as anyone holding a copy of it could, and shows
that none of the patient's data is there in clear, while the engine reads it
all back. Without REPLAYKIT_FERNET_KEY it makes a key for the demo and says so:
a real deployment keeps its key in a secret store, as payloads it encrypted
can only be read with it.

The codec's name ("fernet") is stored, in clear, with each payload; names
(ids, step names, topics, event keys) stay clear too, as the stores index them.
`replaykit --codec examples.encrypted:codec_from_env workflows show ID` shows a
run's payloads decoded; without `--codec` they show as `<encoded by fernet, N bytes>`.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet

from replaykit import CodecError, Engine, Recv, SetEvent, Step, workflow

KEY_VARIABLE = "REPLAYKIT_FERNET_KEY"


class FernetCodec:
    """A `replaykit.PayloadCodec`: authenticated encryption of each payload's JSON bytes."""

    name = "fernet"

    def __init__(self, key: bytes | str) -> None:
        self._fernet = Fernet(key)

    def encode(self, data: bytes) -> bytes:
        return self._fernet.encrypt(data)

    def decode(self, data: bytes) -> bytes:
        # Raises cryptography.fernet.InvalidToken for another key or altered data;
        # replaykit reports it as a CodecError naming the run.
        return self._fernet.decrypt(data)


def codec_from_env() -> FernetCodec:
    """The codec of the key in REPLAYKIT_FERNET_KEY (what `replaykit --codec` calls)."""
    key = os.environ.get(KEY_VARIABLE)
    if not key:
        raise RuntimeError(f"set {KEY_VARIABLE} to the Fernet key the payloads were written with")
    return FernetCodec(key)


# The patient's data: none of these strings may appear in the database.
PATIENT = {"name": "Ada Quartermaine", "condition": "arrhythmia-7731"}
NOTE = "allergic to penicillin-4411"


def triage(patient: dict[str, str]) -> dict[str, str]:
    return {"ward": "cardiology", "reason": patient["condition"]}


def book_bed(ward: str, patient_name: str) -> str:
    return f"bed 12 in {ward} for {patient_name}"


@workflow
def intake(patient: dict[str, str]) -> Generator[Any, Any, dict[str, str]]:
    plan = yield Step("triage", triage, patient)
    note = yield Recv("nurse-note")
    bed = yield Step("book-bed", book_bed, plan["ward"], patient["name"])
    yield SetEvent("admitted", {"bed": bed, "note": note})
    return {"bed": bed, "note": note}


def stored_text(db: Path) -> str:
    """Everything the database holds, as read without replaykit: the file and every row."""
    # The database, its write-ahead log and shared memory (not the engines' lock folder).
    raw = b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*") if p.is_file())
    with sqlite3.connect(db) as conn:
        tables = [
            name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        ]
        rows = [repr(row) for table in tables for row in conn.execute(f'SELECT * FROM "{table}"')]
    return raw.decode("utf-8", "replace") + "\n".join(rows)


def main() -> None:
    key = os.environ.get(KEY_VARIABLE)
    if not key:
        key = Fernet.generate_key().decode("ascii")
        print(
            f"warning: {KEY_VARIABLE} is not set; using a key made for this demo. Payloads "
            "written with it cannot be read once it is lost: keep real keys in a secret store",
            file=sys.stderr,
        )
    codec = FernetCodec(key)
    with tempfile.TemporaryDirectory() as where:
        db = Path(where) / "clinic.db"
        url = f"sqlite:///{db}"
        with Engine(url, codec=codec) as engine:
            handle = engine.start(intake, PATIENT, workflow_id="intake-1")
            engine.send("intake-1", NOTE, topic="nurse-note")
            result = handle.result(timeout=30)
            print("result, read back by the engine:", result)
            print("event 'admitted':", engine.get_event("intake-1", "admitted"))
        text = stored_text(db)
        secrets = [PATIENT["name"], PATIENT["condition"], NOTE, "cardiology"]
        leaked = [secret for secret in secrets if secret in text]
        if leaked:
            raise SystemExit(f"plaintext found in the database: {leaked}")
        print(f"the database ({len(text)} characters read raw) holds none of {secrets}")
        # Another process with the key reads the run; one without it is told what to do.
        with Engine(url, codec=FernetCodec(key), executor_id="reader") as reader:
            print("read by a second engine:", reader.handle("intake-1").result(timeout=10))
        with Engine(url, executor_id="keyless") as keyless:
            try:
                keyless.handle("intake-1").result(timeout=10)
            except CodecError as exc:
                print("an engine without the codec:", exc)


if __name__ == "__main__":
    main()
