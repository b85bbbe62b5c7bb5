"""Encoding values and exceptions for the log."""

from __future__ import annotations

import dataclasses
import enum
import uuid
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import attrs
import pytest

from replaykit import StepFailed, serde
from replaykit.errors import PayloadTooLarge, SerializationError


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Line:
    sku: str
    qty: int


@attrs.frozen
class Order:
    order_id: uuid.UUID
    lines: tuple[Line, ...]
    total: Decimal
    placed: datetime
    tags: frozenset[str]
    color: Color
    raw: bytes


def test_nested_value_round_trips_to_its_type() -> None:
    order = Order(
        uuid.uuid4(),
        (Line("a", 1), Line("b", 2)),
        Decimal("10.50"),
        datetime(2030, 1, 1, 12, tzinfo=UTC),
        frozenset({"x", "y"}),
        Color.RED,
        b"\x00\xff",
    )
    data = serde.encode(order)
    assert serde.loads(serde.dumps(data)) == data  # JSON-safe
    assert serde.decode(data, Order) == order


def test_without_a_type_hint_the_json_data_is_returned() -> None:
    assert serde.decode(serde.encode((1, 2)), None) == [1, 2]
    assert serde.decode(serde.encode(date(2030, 1, 2)), None) == "2030-01-02"
    assert serde.decode(serde.encode(timedelta(seconds=3)), timedelta) == timedelta(seconds=3)


def test_sets_encode_in_a_stable_order() -> None:
    assert serde.encode({"b", "a", "c"}) == ["a", "b", "c"]
    assert serde.digest(serde.encode({3, 1, 2})) == serde.digest([1, 2, 3])


def test_unencodable_value_names_what_and_type() -> None:
    with pytest.raises(SerializationError) as info:
        serde.encode({"conn": object()}, what="the result of step 'load'")
    message = str(info.value)
    assert "step 'load'" in message and "builtins.object" in message and "['conn']" in message


def test_size_limit_says_how_to_change_it() -> None:
    with pytest.raises(PayloadTooLarge, match="max_payload_bytes"):
        serde.encode("x" * 100, what="the message", max_bytes=10)


def test_exceptions_round_trip_by_class_args_and_message() -> None:
    info = serde.encode_error(KeyError("missing"))
    again = serde.decode_error(info)
    assert type(again) is KeyError and again.args == ("missing",)


class NeedsTwo(Exception):
    def __init__(self, code: int, reason: str) -> None:
        super().__init__(f"{code}: {reason}")
        self.code = code


def test_exception_whose_init_differs_keeps_message() -> None:
    info = serde.encode_error(NeedsTwo(404, "gone"))
    again = serde.decode_error(info)
    assert type(again) is NeedsTwo
    assert str(again) == "404: gone"


def test_unknown_exception_class_is_never_imported() -> None:
    info = serde.ErrorInfo("json.decoder_not_imported_xyz", "Boom", "bad", ["bad"])
    again = serde.decode_error(info)
    assert isinstance(again, StepFailed) and again.type_name.endswith("Boom")


def test_non_exception_names_are_refused() -> None:
    # A stored name pointing at a non-exception callable must not be called.
    info = serde.ErrorInfo("os", "system", "rm -rf", ["echo pwned"])
    assert isinstance(serde.decode_error(info), StepFailed)


def test_return_type_of_reads_annotations() -> None:
    def f() -> Order:
        raise NotImplementedError

    async def g() -> int:
        return 1

    assert serde.return_type_of(f) is Order
    assert serde.return_type_of(g) is int
    assert serde.return_type_of(lambda: 1) is None


def test_nan_and_infinity_are_refused_early_on_every_store() -> None:
    with pytest.raises(SerializationError, match="nan"):
        serde.encode(float("nan"), what="the result of step 's'")
    with pytest.raises(SerializationError, match="inf"):
        serde.encode({"x": [float("inf")]})


class _Money:
    def __init__(self, cents: int) -> None:
        self.cents = cents

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Money) and other.cents == self.cents

    def __hash__(self) -> int:
        return hash(self.cents)


def test_a_class_of_ones_own_is_taught_with_register_type() -> None:
    with pytest.raises(SerializationError, match=r"serde\.register_type\(cls"):
        serde.encode(_Money(1), what="a price")
    serde.register_type(
        _Money, to_json=lambda m: f"{m.cents}c", from_json=lambda s: _Money(int(s[:-1]))
    )
    data = serde.encode(_Money(250), what="a price")
    assert data == "250c"
    assert serde.decode(data, _Money) == _Money(250)


def test_register_type_takes_a_class() -> None:
    with pytest.raises(TypeError, match="takes a class"):
        serde.register_type("Money", to_json=str, from_json=str)  # type: ignore[arg-type]
