"""replaykit/_operator.py: opening a store for an operator's tool (the CLI, the web UI).

An operator's typo must be refused, never turned into an empty new store.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from replaykit._operator import (
    BadCodecSpec,
    StoreRefused,
    decoding,
    load_codec,
    open_for_operator,
    require_schema,
    schema_status,
)
from replaykit.stores.codec import CodecStore
from replaykit.stores.memory import MemoryStore

CODEC_MODULE = """
class Reverse:
    name = "reverse"

    def encode(self, data):
        return data[::-1]

    def decode(self, data):
        return data[::-1]


codec = Reverse()


def make():
    return Reverse()


def broken():
    raise RuntimeError("no key in the environment")


class Nameless:
    def encode(self, data):
        return data

    def decode(self, data):
        return data
"""


@pytest.fixture
def codecs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    (tmp_path / "op_codecs.py").write_text(CODEC_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "op_codecs"
    sys.modules.pop("op_codecs", None)


def test_a_missing_sqlite_file_is_refused_unless_asked_to_create(tmp_path: Path) -> None:
    path = tmp_path / "typo.db"
    with pytest.raises(StoreRefused, match=r"no SQLite database at .*typo\.db.*db migrate"):
        open_for_operator(f"sqlite:///{path}", create=False)
    assert not path.exists()
    open_for_operator(f"sqlite:///{path}", create=True).close()
    assert path.exists()
    open_for_operator(f"sqlite:///{path}", create=False).close()


class _Schema:
    def __init__(self, status: Any) -> None:
        self._status = status

    def schema_status(self) -> Any:
        return self._status


def test_the_schema_status_is_read_where_a_store_has_one() -> None:
    assert schema_status(MemoryStore()) == (None, None)
    assert schema_status(_Schema((3, 4))) == (3, 4)  # type: ignore[arg-type]


def test_a_schema_other_than_this_replaykits_is_refused_saying_what_to_do() -> None:
    url = "postgresql://app:pw@db/x?schema=shop"
    require_schema(_Schema((4, 4)), url)  # type: ignore[arg-type]
    require_schema(MemoryStore(), url)
    with pytest.raises(StoreRefused, match=r"no replaykit schema at postgresql://app:\*\*\*@"):
        require_schema(_Schema((0, 4)), url)  # type: ignore[arg-type]
    with pytest.raises(StoreRefused, match="at version 3, this replaykit needs 4"):
        require_schema(_Schema((3, 4)), url)  # type: ignore[arg-type]
    with pytest.raises(StoreRefused, match="newer than this replaykit knows"):
        require_schema(_Schema((5, 4)), url)  # type: ignore[arg-type]


def test_a_codec_is_an_object_or_what_makes_one(codecs: str) -> None:
    assert load_codec(f"{codecs}:codec").name == "reverse"
    assert load_codec(f"{codecs}:make").name == "reverse"
    assert load_codec(f"{codecs}:Reverse").name == "reverse"


@pytest.mark.parametrize(
    ("attr", "message"),
    [
        ("nothing", "has no attribute 'nothing'"),
        ("broken", "calling broken\\(\\) to make the codec failed: RuntimeError"),
        ("Nameless", "lacks a name: str"),
    ],
)
def test_a_codec_spec_that_names_nothing_usable_says_why(
    codecs: str, attr: str, message: str
) -> None:
    with pytest.raises(BadCodecSpec, match=message):
        load_codec(f"{codecs}:{attr}")


@pytest.mark.parametrize("spec", ["no-colon", "a b:c", "mod:", "mod:1x"])
def test_a_codec_spec_not_of_the_form_module_attribute_is_refused(spec: str) -> None:
    with pytest.raises(BadCodecSpec, match="takes MODULE:ATTRIBUTE"):
        load_codec(spec)


def test_a_missing_codec_module_says_where_to_run_from() -> None:
    with pytest.raises(BadCodecSpec, match=r"cannot import 'no_such_codec_mod'.*PYTHONPATH"):
        load_codec("no_such_codec_mod:codec")


def test_decoding_wraps_a_store_once() -> None:
    store = MemoryStore()
    wrapped = decoding(store, None)
    assert isinstance(wrapped, CodecStore)
    assert decoding(wrapped, None) is wrapped
