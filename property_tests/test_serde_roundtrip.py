"""Values round-trip through the log's JSON form, live and on replay alike.

Hypothesis draws a type (scalars, attrs classes, dataclasses, enums, aware
datetimes, dates, timedeltas, UUIDs, Decimals, bytes, tuples, sets, frozensets,
optionals, nested containers, and attrs/dataclass types made on the fly) with a
value of it. Then:

- `decode(encode(v), T)` and the same through JSON text give back `v` with the
  same types all the way down (a tuple stays a tuple, a frozenset a frozenset);
- a step annotated `-> T` that returns `v` hands the workflow an equal value of
  the same types on the live path and on replay of the exported log.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import uuid
from collections.abc import Callable, Generator
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any, Optional

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from replaykit import Step, serde, workflow
from replaykit import testing as rt


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@attrs.frozen
class Point:
    x: int
    y: int
    label: Optional[str] = None  # noqa: UP045 - exercises typing.Optional as written by users


@dataclasses.dataclass(frozen=True)
class Money:
    amount: Decimal
    currency: str


Typed = tuple[Any, st.SearchStrategy[Any]]

AWARE = st.datetimes(
    timezones=st.integers(-23 * 60, 23 * 60).map(lambda m: timezone(timedelta(minutes=m)))
)
# Timedeltas are stored as float seconds: exact to the microsecond within about a century.
# Wider spans lose microseconds: serde stores a timedelta as float seconds.
SPAN = timedelta(days=36_500)

HASHABLE: list[Typed] = [
    (int, st.integers()),
    (str, st.text(max_size=8)),
    (bytes, st.binary(max_size=8)),
    (uuid.UUID, st.uuids()),
    (date, st.dates()),
    (Color, st.sampled_from(Color)),
]

SCALARS: list[Typed] = [
    *HASHABLE,
    (bool, st.booleans()),
    (float, st.floats(allow_nan=False, allow_infinity=False)),
    (datetime, AWARE),
    (timedelta, st.timedeltas(min_value=-SPAN, max_value=SPAN)),
    (Decimal, st.decimals(allow_nan=False)),
    (Level, st.sampled_from(Level)),
    (Point, st.builds(Point, st.integers(), st.integers(), st.none() | st.text(max_size=5))),
    (
        Money,
        st.builds(Money, st.decimals(allow_nan=False, allow_infinity=False), st.text(max_size=3)),
    ),
]

_class_names = itertools.count()


def _attrs_class(fields: list[Typed]) -> Typed:
    name = f"Made{next(_class_names)}"
    cls = attrs.make_class(name, {f"f{i}": attrs.field(type=t) for i, (t, _) in enumerate(fields)})
    return cls, st.builds(cls, *(s for _, s in fields))


def _dataclass(fields: list[Typed]) -> Typed:
    name = f"Data{next(_class_names)}"
    cls = dataclasses.make_dataclass(name, [(f"f{i}", t) for i, (t, _) in enumerate(fields)])
    return cls, st.builds(cls, *(s for _, s in fields))


def _extend(inner: st.SearchStrategy[Typed]) -> st.SearchStrategy[Typed]:
    hashable = st.sampled_from(HASHABLE)
    return st.one_of(
        inner.map(lambda ts: (list[ts[0]], st.lists(ts[1], max_size=3))),
        inner.map(lambda ts: (tuple[ts[0], ...], st.lists(ts[1], max_size=3).map(tuple))),
        st.tuples(inner, inner).map(
            lambda pair: (tuple[pair[0][0], pair[1][0]], st.tuples(pair[0][1], pair[1][1]))
        ),
        inner.map(
            lambda ts: (dict[str, ts[0]], st.dictionaries(st.text(max_size=4), ts[1], max_size=3))
        ),
        inner.map(lambda ts: (dict[int, ts[0]], st.dictionaries(st.integers(), ts[1], max_size=3))),
        inner.map(lambda ts: (Optional[ts[0]], st.none() | ts[1])),  # noqa: UP045
        hashable.map(lambda ts: (set[ts[0]], st.sets(ts[1], max_size=4))),
        hashable.map(lambda ts: (frozenset[ts[0]], st.frozensets(ts[1], max_size=4))),
        st.lists(inner, min_size=1, max_size=3).map(_attrs_class),
        st.lists(inner, min_size=1, max_size=3).map(_dataclass),
    )


TYPED: st.SearchStrategy[Typed] = st.recursive(st.sampled_from(SCALARS), _extend, max_leaves=6)


@st.composite
def typed_values(draw: st.DrawFn) -> tuple[Any, Any]:
    hint, values = draw(TYPED)
    return hint, draw(values)


def assert_same(expected: Any, got: Any, where: str = "value") -> None:
    """Equal, and of the same type at every level (bool is not int, tuple is not list)."""
    assert type(got) is type(expected), f"{where}: {type(got)} is not {type(expected)}"
    if isinstance(expected, (list, tuple)):
        assert len(got) == len(expected), where
        for i, (e, g) in enumerate(zip(expected, got, strict=True)):
            assert_same(e, g, f"{where}[{i}]")
    elif isinstance(expected, dict):
        assert {(type(k), k) for k in got} == {(type(k), k) for k in expected}, where
        for key, value in expected.items():
            assert_same(value, got[key], f"{where}[{key!r}]")
    elif isinstance(expected, (set, frozenset)):
        assert {(type(v), v) for v in got} == {(type(v), v) for v in expected}, where
    elif attrs.has(type(expected)) or dataclasses.is_dataclass(expected):
        names = (
            [f.name for f in attrs.fields(type(expected))]
            if attrs.has(type(expected))
            else [f.name for f in dataclasses.fields(expected)]
        )
        for name in names:
            assert_same(getattr(expected, name), getattr(got, name), f"{where}.{name}")
    else:
        assert got == expected, f"{where}: {got!r} != {expected!r}"
        if isinstance(expected, datetime):
            assert got.utcoffset() == expected.utcoffset(), where


@settings(deadline=None)
@given(case=typed_values())
def test_decode_of_encode_gives_back_the_value_and_its_types(case: tuple[Any, Any]) -> None:
    hint, value = case
    data = serde.encode(value)
    assert_same(value, serde.decode(data, hint))
    # What a durable store holds is JSON text.
    assert_same(value, serde.decode(serde.loads(serde.dumps(data)), hint))


# -- the live path equals the replay path -----------------------------------------------------

_cases: dict[str, Callable[[str], Any]] = {}
_seen: list[Any] = []


@workflow(name="prop.serde_case")
def serde_case(case_id: str) -> Generator[Any, Any, None]:
    value = yield Step("make", _cases[case_id], case_id)
    _seen.append(value)


def _returning(hint: Any, value: Any) -> Callable[[str], Any]:
    def make(case_id: str) -> Any:
        return value

    make.__annotations__ = {"case_id": str, "return": hint}
    return make


_case_ids = itertools.count()


@settings(deadline=None)
@given(case=typed_values())
def test_a_step_result_is_the_same_live_and_on_replay(case: tuple[Any, Any]) -> None:
    hint, value = case
    case_id = f"case-{next(_case_ids)}"
    _cases[case_id] = _returning(hint, value)
    _seen.clear()
    try:
        result = rt.run(serde_case, case_id, real_steps=True)
        assert result.ok, result.error
        [live] = _seen
        assert_same(value, live, "live")
        _seen.clear()
        rt.replay(serde_case, result.log.to_json())
        [replayed] = _seen
        assert_same(value, replayed, "replayed")
    finally:
        del _cases[case_id]
