"""Values and exceptions to and from the log's JSON-safe form.

One explicit cattrs `Converter` does the work. Encoding dispatches on the
runtime type of a value; decoding structures to a type hint when there is one
(a step function's return annotation, a workflow's parameter annotations) and
otherwise hands back the plain JSON data. Live results go through the same
encode -> decode as replayed ones, so both paths agree.

No pickle, no eval: an exception's class is found only by reading the
namespaces of modules that are already imported, never by an attribute lookup
that could import or run something.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import sys
import traceback as traceback_module
import types
import typing
import uuid
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any, Protocol, TypeVar, runtime_checkable

import attrs
import cattrs

from replaykit.errors import (
    LIVE_ONLY,
    CodecError,
    PayloadTooLarge,
    SerializationError,
    StepFailed,
)

__all__ = [
    "CODEC_KEY",
    "DEFAULT_MAX_PAYLOAD_BYTES",
    "ESCAPE_KEY",
    "ErrorInfo",
    "PayloadCodec",
    "canonical_json",
    "check_codec",
    "decode",
    "decode_error",
    "decode_error_info",
    "decode_error_info_and_text",
    "decode_payload",
    "describe_encoded",
    "digest",
    "digest_json",
    "dumps",
    "encode",
    "encode_error",
    "encode_error_info",
    "encode_payload",
    "encoded_by",
    "error_info_from_json",
    "error_info_to_json",
    "escape_error_info",
    "escape_payload",
    "is_encoded",
    "is_encoded_error",
    "is_escaped",
    "is_escaped_error",
    "loads",
    "register_type",
    "return_type_of",
    "unescape_error_info",
    "unescape_payload",
]

DEFAULT_MAX_PAYLOAD_BYTES = 2 * 1024 * 1024

T = TypeVar("T")


def _sorted_list(items: Iterable[Any]) -> list[Any]:
    # Set iteration order depends on hashing, which is salted per process;
    # sorting by canonical JSON keeps digests stable across processes.
    return sorted(items, key=canonical_json)


def _make_converter() -> cattrs.Converter:
    # Typed fields go through these overrides (tuple[int, ...] -> list,
    # frozenset[str] -> sorted list); values of unknown type through the hooks below.
    conv = cattrs.Converter(
        unstruct_collection_overrides={
            AbstractSet: _sorted_list,
            tuple: list,
            Sequence: list,
        }
    )

    conv.register_unstructure_hook(datetime, lambda v: v.isoformat())
    conv.register_structure_hook(datetime, lambda v, _: _parse(datetime, v))
    conv.register_unstructure_hook(date, lambda v: v.isoformat())
    conv.register_structure_hook(date, lambda v, _: _parse(date, v))
    conv.register_unstructure_hook(time, lambda v: v.isoformat())
    conv.register_structure_hook(time, lambda v, _: _parse(time, v))
    conv.register_unstructure_hook(timedelta, lambda v: v.total_seconds())
    conv.register_structure_hook(
        timedelta, lambda v, _: v if isinstance(v, timedelta) else timedelta(seconds=v)
    )
    conv.register_unstructure_hook(uuid.UUID, str)
    conv.register_structure_hook(
        uuid.UUID, lambda v, _: v if isinstance(v, uuid.UUID) else uuid.UUID(v)
    )
    conv.register_unstructure_hook(Decimal, str)
    conv.register_structure_hook(Decimal, lambda v, _: Decimal(v))
    conv.register_unstructure_hook(bytes, lambda v: base64.b64encode(v).decode("ascii"))
    conv.register_structure_hook(
        bytes, lambda v, _: v if isinstance(v, bytes) else base64.b64decode(v)
    )

    def unstructure_set(value: set[Any] | frozenset[Any]) -> list[Any]:
        return _sorted_list(conv.unstructure(item) for item in value)

    conv.register_unstructure_hook(set, unstructure_set)
    conv.register_unstructure_hook(frozenset, unstructure_set)
    conv.register_unstructure_hook(tuple, lambda v: [conv.unstructure(i) for i in v])
    return conv


def _parse(kind: type[Any], value: Any) -> Any:
    if isinstance(value, kind):
        return value
    return kind.fromisoformat(value)


# One converter for every engine in the process: a value's JSON form must not depend
# on which engine encodes it, or digests and replays would disagree. Private, so that
# what may be added to it goes through `register_type`, which says the rules.
_converter = _make_converter()


def register_type(
    cls: type[T], *, to_json: Callable[[T], Any], from_json: Callable[[Any], T]
) -> None:
    """Teach replaykit to store values of `cls` (a class it cannot encode itself).

    `to_json` turns a value into JSON data (dicts, lists, strings, numbers, booleans,
    None); `from_json` turns that data back into an equal value. Both must be pure and
    deterministic — the same value always gives the same data — because digests and
    replays compare what they give. Register before any engine encodes such a value,
    in every process that runs the workflows (next to the class is a good place); a
    registration holds for the whole process.
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_type() takes a class, got {cls!r}")
    _converter.register_unstructure_hook(cls, to_json)
    _converter.register_structure_hook(cls, lambda data, _type: from_json(data))


def error_info_to_json(info: ErrorInfo) -> Any:
    """A recorded exception's description as JSON data (a record's failure outcome)."""
    return _converter.unstructure(info)


def error_info_from_json(data: Any) -> ErrorInfo:
    return _converter.structure(data, ErrorInfo)


# One encoder each, made once: `json.dumps` with options other than its defaults
# builds a new `JSONEncoder` per call, a third of the cost of encoding a step's
# small outcome. An encoder keeps no state between calls, so threads share it.
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode
# NaN and Infinity are not JSON; PostgreSQL's json type refuses them, so
# every store refuses them here, early and alike.
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def canonical_json(data: Any) -> str:
    return _CANONICAL(data)


def dumps(data: Any) -> str:
    return _COMPACT(data)


def loads(text: str) -> Any:
    return json.loads(text)


def _first_unencodable(data: Any, path: str = "value") -> tuple[str, Any] | None:
    if isinstance(data, float) and not math.isfinite(data):
        return (path, data)
    if data is None or isinstance(data, (str, int, float, bool)):
        return None
    if isinstance(data, list):
        for i, item in enumerate(data):
            found = _first_unencodable(item, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(data, dict):
        for key, item in data.items():
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                return (f"{path} key {key!r}", key)
            found = _first_unencodable(item, f"{path}[{key!r}]")
            if found:
                return found
        return None
    return (path, data)


def encode(value: Any, *, what: str = "value", max_bytes: int | None = None) -> Any:
    """Turn `value` into JSON-safe data, or raise `SerializationError` saying why.

    `what` names the value in errors ("the result of step 'charge'").
    """
    kind = type(value)
    if value is None or kind is int or kind is bool:
        return value  # the hot path of trivial steps: nothing to convert or check
    if kind is str and (max_bytes is None or len(value) * 4 <= max_bytes):
        return value
    try:
        data = _converter.unstructure(value)
    except Exception as exc:  # cattrs raises many kinds; all mean "cannot encode"
        raise SerializationError(
            f"cannot encode {what} of type {type(value).__qualname__}: {exc}"
        ) from exc
    bad = _first_unencodable(data)
    if bad is not None:
        where, obj = bad
        if isinstance(obj, float):
            raise SerializationError(
                f"cannot encode {what}: {where} is {obj!r}, which JSON cannot hold; "
                "return None or a string instead"
            )
        raise SerializationError(
            f"cannot encode {what}: {where} is a {type(obj).__module__}.{type(obj).__qualname__}, "
            "which has no JSON form. Return plain data, an attrs class, a dataclass, or "
            "register it with replaykit.serde.register_type(cls, to_json=..., from_json=...)"
        )
    if max_bytes is not None:
        size = len(dumps(data).encode())
        if size > max_bytes:
            raise PayloadTooLarge(
                f"{what} is {size} bytes encoded, over the limit of {max_bytes}; "
                "store large data elsewhere and pass a reference, or raise the limit "
                "with Engine(max_payload_bytes=...)"
            )
    return data


def decode(data: Any, type_hint: Any = None, *, what: str = "value") -> Any:
    """Structure JSON data to `type_hint`; without a usable hint, return the data as is."""
    if type_hint is None or type_hint is Any or type_hint is type(None) or type_hint is object:
        return data
    if isinstance(type_hint, typing.TypeVar):
        return data
    try:
        return _converter.structure(data, type_hint)
    except Exception as exc:
        raise SerializationError(
            f"cannot decode {what} as {getattr(type_hint, '__qualname__', type_hint)!s}: {exc}"
        ) from exc


def digest(data: Any) -> str:
    return digest_json(canonical_json(data))


def digest_json(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def return_type_of(fn: Callable[..., Any]) -> Any:
    """The return annotation of `fn`, resolved; `None` when it has none or it cannot resolve."""
    target = fn
    if not (callable(target) and hasattr(target, "__annotations__")):
        target = getattr(fn, "__call__", fn)  # noqa: B004 - callable objects
    try:
        hints = typing.get_type_hints(target)
    except Exception:
        return None
    return hints.get("return")


@attrs.frozen
class ErrorInfo:
    """A recorded exception: enough to re-raise the same class with the same args."""

    module: str
    qualname: str
    message: str
    args: list[Any] = attrs.field(factory=list)
    traceback: str = ""

    @property
    def type_name(self) -> str:
        return f"{self.module}.{self.qualname}" if self.module != "builtins" else self.qualname


def encode_error(exc: BaseException, *, with_traceback: bool = True) -> ErrorInfo:
    cls = type(exc)
    args: list[Any] = []
    for arg in exc.args:
        try:
            args.append(encode(arg))
        except SerializationError:
            # An argument with no JSON form keeps its repr: the message stays exact.
            args.append(_text(arg, repr))
    tb = ""
    if with_traceback and exc.__traceback__ is not None:
        tb = "".join(traceback_module.format_exception(exc)[-20:])
    return ErrorInfo(cls.__module__, cls.__qualname__, _text(exc, str), args, tb)


def _text(obj: object, show: Callable[[object], str]) -> str:
    # An object that cannot print is still recorded, under a placeholder as the
    # traceback module does: a step's failure must reach the log, or its run is stuck.
    try:
        return show(obj)
    except Exception:
        return f"<{type(obj).__qualname__} object: {show.__name__}() failed>"


# The namespaces of a module and of a class, read without asking the object:
# `getattr` and `vars()` would run a module's `__getattr__` (lazy imports such as
# `concurrent.futures.ProcessPoolExecutor`), a metaclass's `__getattr__`, or a lazy
# module's loader, and stored data must never make this process import or run code.
_MODULE_DICT: Any = vars(types.ModuleType)["__dict__"]
_CLASS_DICT: Any = vars(type)["__dict__"]


def _find_loaded_class(module: str, qualname: str) -> type[Exception] | None:
    """The exception class `module.qualname` names, if it is already loaded.

    Only dictionaries are read: the module's namespace, then for a nested
    qualname each enclosing class's own `__dict__`. Anything else (a missing
    name, something that is not a class, a class that is not an `Exception`)
    is None. Not any `BaseException`: a rebuilt `SystemExit`, `KeyboardInterrupt`
    or `ControlSignal` thrown into a workflow would end far more than the workflow.
    """
    mod = sys.modules.get(module)
    if not issubclass(type(mod), types.ModuleType):
        return None  # sys.modules may hold stand-ins whose attributes are code
    namespace: Any = _MODULE_DICT.__get__(mod)
    obj: Any = None
    for part in qualname.split("."):
        if namespace is None or part == "<locals>":
            return None
        obj = namespace.get(part)
        # type(obj), not isinstance(): isinstance() falls back to reading `__class__`,
        # which a proxy object answers by running code.
        namespace = _CLASS_DICT.__get__(obj) if issubclass(type(obj), type) else None
    if issubclass(type(obj), type) and issubclass(obj, Exception):
        return typing.cast(type[Exception], obj)
    return None


def decode_error(info: ErrorInfo) -> BaseException:
    """Rebuild a recorded exception, or stand a `StepFailed` in for it.

    The class comes back, with the recorded args, when it is already loaded, is
    not one of `errors.LIVE_ONLY` (which would pass for a live signal), and the
    rebuilt exception prints (`str` and `repr`). Otherwise `StepFailed` carries
    the recorded type name and message.
    """
    cls = _find_loaded_class(info.module, info.qualname)
    if cls is None or issubclass(cls, LIVE_ONLY):
        return StepFailed(info.type_name, info.message)
    if cls is StepFailed:
        # A stand-in that was recorded again: its message is "type_name: message".
        type_name, sep, message = info.message.partition(": ")
        return StepFailed(type_name, message) if sep else StepFailed(info.type_name, info.message)
    exc = _rebuild(cls, info)
    if exc is None or not _prints(exc):
        return StepFailed(info.type_name, info.message)
    return exc


def _rebuild(cls: type[Exception], info: ErrorInfo) -> Exception | None:
    try:
        exc = cls(*info.args)
        if str(exc) == info.message:
            return exc
    except Exception:
        pass
    # Classes whose __init__ does not take their own args back still get
    # rebuilt, with the recorded args and message preserved; whether what
    # __init__ would have set is needed to print it, `_prints` finds out.
    try:
        exc = cls.__new__(cls)
        exc.args = tuple(info.args) if info.args else (info.message,)
    except Exception:
        return None
    return exc


def _prints(exc: BaseException) -> bool:
    """Whether `str` and `repr` work: a log line or a traceback must not raise."""
    try:
        str(exc)
        repr(exc)
    except Exception:
        return False
    return True


def utc(dt: datetime) -> datetime:
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)


# -- the payload codec: payloads at rest --------------------------------------------------
#
# A codec (encryption, compression) turns a payload's JSON bytes into other bytes.
# The at-rest form of an encoded payload is itself JSON-safe, so every store keeps
# it where it keeps a plain payload, in the same columns:
#
#     {"replaykit.codec": "<the codec's name>", "data": "<base64 of codec.encode(json)>"}
#
# A payload without that form is plain: written before a codec was configured, or
# by a process without one; it reads as it is.

#: The key of an encoded payload that holds the name of the codec that encoded it.
CODEC_KEY = "replaykit.codec"
_CODEC_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:+/-]{0,99}$")


@runtime_checkable
class PayloadCodec(Protocol):
    """What `Engine(codec=...)` takes: bytes to bytes, both ways, synchronously.

    `name` is stored, in clear, with every payload the codec encodes, and a
    payload is decoded only by a codec of the same name: keep it as long as
    payloads it encoded are stored (put a key id in it, "fernet:2024", to tell
    keys apart). `decode(encode(b)) == b` for all bytes `b`; `decode` raises
    on data it cannot decode (a wrong key). Both may be called from any of the
    engine's threads at once.
    """

    @property
    def name(self) -> str: ...

    def encode(self, data: bytes) -> bytes: ...

    def decode(self, data: bytes) -> bytes: ...


def check_codec(codec: Any) -> PayloadCodec:
    """`codec`, if it is a usable `PayloadCodec`; otherwise `TypeError` saying what it lacks."""
    missing = [attr for attr in ("encode", "decode") if not callable(getattr(codec, attr, None))]
    name = getattr(codec, "name", None)
    if missing or not isinstance(name, str):
        lacks = ", ".join([f"a callable {m}(data: bytes) -> bytes" for m in missing])
        if not isinstance(name, str):
            lacks = ", ".join(filter(None, [lacks, "a name: str"]))
        raise TypeError(
            f"codec= takes a payload codec (an object with a name: str, encode(data: bytes) "
            f"-> bytes and decode(data: bytes) -> bytes); {codec!r} lacks {lacks}"
        )
    if not _CODEC_NAME.match(name):
        raise ValueError(
            f"codec name {name!r} cannot be stored: a codec's name is 1 to 100 characters of "
            "letters, digits and . _ : + / -, starting with a letter or digit"
        )
    return typing.cast(PayloadCodec, codec)


def _payload_bytes(data: Any) -> bytes:
    # Key order is kept, not sorted: a dict a step returned must iterate alike
    # on a live run (which never reads the store) and on a replay.
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.encode("utf-8", "surrogatepass")


def is_encoded(data: Any) -> bool:
    """Whether `data` is a payload's at-rest form written by a codec."""
    return (
        type(data) is dict
        and len(data) == 2
        and isinstance(data.get(CODEC_KEY), str)
        and isinstance(data.get("data"), str)
    )


# A plain payload that has the at-rest form of an encoded one (a webhook body
# that happens to be `{"replaykit.codec": ..., "data": ...}`) would be read back
# as encoded: refused by a process without the codec, or decoded into nonsense.
# Such a value, and a value that has the escape's own form, is stored wrapped
# in an escape, `{"replaykit.plain": value}`, and unwrapped on the way out, so
# what is stored reads back as what was written whatever it holds. Every other
# value is stored as it is: rows written before the escape existed read alike.

#: The only key of an escaped plain payload (`escape_payload`).
ESCAPE_KEY = "replaykit.plain"


def is_escaped(data: Any) -> bool:
    """Whether `data` is a plain payload at rest in its escape (`escape_payload`)."""
    return type(data) is dict and len(data) == 1 and ESCAPE_KEY in data


def escape_payload(data: Any) -> Any:
    """The at-rest form of the plain payload `data`: itself, unless a reader would take
    it for an encoded or an escaped payload; then wrapped in an escape."""
    return {ESCAPE_KEY: data} if is_encoded(data) or is_escaped(data) else data


def unescape_payload(data: Any) -> Any:
    """The plain payload whose at-rest form is `data` (`escape_payload` undone)."""
    return data[ESCAPE_KEY] if is_escaped(data) else data


def escape_error_info(info: ErrorInfo) -> ErrorInfo:
    """A plain recorded exception at rest: its one argument escaped when a reader
    would take the exception for an encoded one (`is_encoded_error`) or an escaped one."""
    if len(info.args) == 1 and (is_encoded_error(info) or is_escaped(info.args[0])):
        return attrs.evolve(info, args=[{ESCAPE_KEY: info.args[0]}])
    return info


def is_escaped_error(info: ErrorInfo) -> bool:
    """Whether `info` is a plain recorded exception at rest with its argument escaped."""
    return len(info.args) == 1 and is_escaped(info.args[0])


def unescape_error_info(info: ErrorInfo) -> ErrorInfo:
    """The plain recorded exception whose at-rest form is `info` (`escape_error_info` undone)."""
    if is_escaped_error(info):
        return attrs.evolve(info, args=[info.args[0][ESCAPE_KEY]])
    return info


def encoded_by(data: Any) -> str | None:
    """The name of the codec that encoded `data`; None for a plain payload."""
    return typing.cast(str, data[CODEC_KEY]) if is_encoded(data) else None


def encode_payload(data: Any, codec: PayloadCodec) -> dict[str, str]:
    """The at-rest form of the JSON-safe payload `data`, encoded by `codec`."""
    encoded = codec.encode(_payload_bytes(data))
    if not isinstance(encoded, (bytes, bytearray, memoryview)):
        raise TypeError(
            f"codec {codec.name!r}: encode() returned a {type(encoded).__name__}, not bytes"
        )
    return {CODEC_KEY: codec.name, "data": base64.b64encode(encoded).decode("ascii")}


def _whose(what: str, workflow_id: str) -> str:
    return f"{what} of workflow id {workflow_id!r}" if workflow_id else what


def decode_payload(
    data: Any, codec: PayloadCodec | None, *, what: str = "a payload", workflow_id: str = ""
) -> Any:
    """The JSON-safe payload whose at-rest form is `data`; a plain payload as it is
    (out of its escape, `escape_payload`).

    Raises `CodecError` for a payload encoded by a codec of another name, or
    by one when `codec` is None, or that the codec's `decode` refuses.
    """
    if not is_encoded(data):
        return unescape_payload(data)
    name: str = data[CODEC_KEY]
    whose = _whose(what, workflow_id)

    def refused(why: str) -> CodecError:
        return CodecError(why, codec_name=name, workflow_id=workflow_id, what=what)

    if codec is None:
        raise refused(
            f"{whose}: encoded by the payload codec {name!r}, and this process was given "
            f"no codec. Pass the codec named {name!r} that wrote it (Engine(codec=...), "
            "Client(codec=...), or `replaykit --codec module:attribute` on the command line)"
        )
    if codec.name != name:
        raise refused(
            f"{whose}: encoded by the payload codec {name!r}, and this process was given "
            f"the codec {codec.name!r}. Pass the codec named {name!r} that wrote it; a "
            "codec's name is stored with each payload, so keep it while such payloads exist"
        )
    try:
        raw = base64.b64decode(data["data"], validate=True)
    except ValueError as exc:
        raise refused(f"{whose}: encoded by the codec {name!r}, and damaged ({exc})") from None
    try:
        plain = codec.decode(raw)
    except Exception as exc:
        raise refused(
            f"the codec {name!r} could not decode {whose} ({type(exc).__name__}: {exc}); "
            "pass the codec as it was when the payload was written (the same key)"
        ) from exc
    if not isinstance(plain, (bytes, bytearray, memoryview)):
        raise refused(
            f"codec {name!r}: decode() returned a {type(plain).__name__}, not bytes, for {whose}"
        )
    try:
        return json.loads(bytes(plain).decode("utf-8", "surrogatepass"))
    except ValueError as exc:
        raise refused(
            f"the codec {name!r} decoded {whose} to bytes that are not JSON ({exc}); "
            "pass the codec as it was when the payload was written"
        ) from None


def describe_encoded(data: Any) -> str:
    """An encoded payload in words, '<encoded by fernet, 212 bytes>' (its encoded size)."""
    text: str = data["data"]
    size = len(text) * 3 // 4 - (len(text) - len(text.rstrip("=")))
    return f"<encoded by {data[CODEC_KEY]}, {size} bytes>"


def encode_error_info(
    info: ErrorInfo, codec: PayloadCodec, *, run_error: str | None = None
) -> ErrorInfo:
    """A recorded exception at rest: its message, args and traceback encoded, its class clear.

    The class stays readable (an operator sorts failures by type without the
    codec); what the exception says is user data. The message shows what the
    payload is, so any reader without the codec prints something true.
    `run_error`, a failed run's short error text (its failure's message, cut),
    is encoded along with it, for `decode_error_info_and_text` to give back.
    """
    payload: dict[str, Any] = {
        "message": info.message,
        "args": info.args,
        "traceback": info.traceback,
    }
    if run_error is not None:
        payload["run_error"] = run_error
    envelope = encode_payload(payload, codec)
    return ErrorInfo(info.module, info.qualname, describe_encoded(envelope), [envelope], "")


def is_encoded_error(info: ErrorInfo) -> bool:
    """Whether `info` is the at-rest form `encode_error_info` writes."""
    return (
        len(info.args) == 1
        and is_encoded(info.args[0])
        and not info.traceback
        and info.message == describe_encoded(info.args[0])
    )


def decode_error_info(
    info: ErrorInfo,
    codec: PayloadCodec | None,
    *,
    what: str = "a failure",
    workflow_id: str = "",
) -> ErrorInfo:
    """The recorded exception whose at-rest form is `info`; a plain one as written."""
    return decode_error_info_and_text(info, codec, what=what, workflow_id=workflow_id)[0]


def decode_error_info_and_text(
    info: ErrorInfo,
    codec: PayloadCodec | None,
    *,
    what: str = "a failure",
    workflow_id: str = "",
) -> tuple[ErrorInfo, str | None]:
    """`decode_error_info`, with the `run_error` text encoded along (None if none was)."""
    if not is_encoded_error(info):
        return unescape_error_info(info), None
    data = decode_payload(info.args[0], codec, what=what, workflow_id=workflow_id)
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("message"), str)
        or not isinstance(data.get("args"), list)
        or not isinstance(data.get("traceback"), str)
        or not isinstance(data.get("run_error", ""), str)
    ):
        raise CodecError(
            f"{_whose(what, workflow_id)} decoded to something that is not a recorded "
            "exception (a message, args and a traceback)",
            codec_name=info.args[0][CODEC_KEY],
            workflow_id=workflow_id,
            what=what,
        )
    decoded = ErrorInfo(
        info.module, info.qualname, data["message"], data["args"], data["traceback"]
    )
    return decoded, data.get("run_error")
