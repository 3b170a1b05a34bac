"""Message values: small frozen classes, validated when built, described stably for traces.

Every value that crosses the simulated network (a fetch request, a LeaderAndIsr, a produce
response) is a frozen ``attrs`` class declared with ``@message``: it cannot change after it
is sent, two equal messages compare and hash equal, and a malformed one fails where it is
built, not three hops later in a broker. ``describe()`` renders any such value the same way
in every process (sets and dicts sorted, no memory addresses), so traces can be diffed and
digests of a run compared across processes and ``PYTHONHASHSEED`` values.

    @message
    class Heartbeat(Message):
        broker: str = attrs.field(validator=non_empty_str)
        epoch: int = attrs.field(validator=int_at_least(0))

Cross-field rules go in ``__attrs_post_init__`` and raise ``ValueError``.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast, dataclass_transform

import attrs

__all__ = [
    "Message",
    "describe",
    "frozenset_of",
    "int_at_least",
    "message",
    "non_empty_str",
    "tuple_of",
]

M = TypeVar("M", bound="type[Message]")

_BYTES_SHOWN = 16
"""Byte strings up to this length are shown in full; longer ones by length and hash."""


class Message:
    """Base of all message values; use with the ``@message`` decorator."""

    __slots__ = ()

    def describe(self) -> str:
        """A one-line rendering, identical in every process: ``Fetch(replica='b2', ...)``."""
        return _describe_attrs(self)


@dataclass_transform(frozen_default=True, field_specifiers=(attrs.field,))
def message(cls: M) -> M:
    """Make ``cls`` a frozen, slotted, hashable ``attrs`` class whose validators run in init."""
    if not (isinstance(cls, type) and issubclass(cls, Message)):
        raise TypeError(f"@message decorates a subclass of Message, not {cls!r}")
    return attrs.frozen(cls, slots=True, eq=True, hash=True)


def describe(value: Any) -> str:
    """A canonical one-line rendering of a message value (or of any field's value).

    Equal values give equal strings in every process: frozensets and dicts are sorted by
    their elements' descriptions, enums print as ``Class.NAME``, attrs classes as
    ``Class(field=value, ...)``, long byte strings as their length and a blake2b hash.
    Raises ``TypeError`` for a value with no stable rendering (one whose repr is an address).
    """
    if value is None or isinstance(value, bool | int | float | str):
        return repr(value)
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, bytes | bytearray):
        if len(value) <= _BYTES_SHOWN:
            return repr(bytes(value))
        return f"<{len(value)} bytes blake2b:{hashlib.blake2b(value, digest_size=8).hexdigest()}>"
    if isinstance(value, Message):
        return value.describe()
    if attrs.has(type(value)):
        return _describe_attrs(value)
    if isinstance(value, tuple):
        inside = ", ".join(describe(v) for v in value)
        return f"({inside},)" if len(value) == 1 else f"({inside})"
    if isinstance(value, list):
        return "[" + ", ".join(describe(v) for v in value) + "]"
    if isinstance(value, frozenset | set):
        if not value:
            return f"{type(value).__name__}()"
        return "{" + ", ".join(sorted(describe(v) for v in value)) + "}"
    if isinstance(value, Mapping):
        items = sorted(f"{describe(k)}: {describe(v)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    text = repr(value)
    if " at 0x" in text:
        raise TypeError(
            f"a {type(value).__name__} has no stable description (its repr is a memory "
            "address); carry a frozen @message class, a tuple, or a primitive instead"
        )
    return text


def _describe_attrs(value: Any) -> str:
    fields = attrs.fields(type(value))
    inside = ", ".join(f"{f.name}={describe(getattr(value, f.name))}" for f in fields)
    return f"{type(value).__name__}({inside})"


# Validators (attrs signature: instance, attribute, value) --------------------------------

Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def _where(instance: Any, attribute: attrs.Attribute[Any]) -> str:
    return f"{type(instance).__name__}.{attribute.name}"


def int_at_least(minimum: int) -> Validator:
    """An int (not a bool) >= ``minimum``: offsets, epochs, ids."""

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(
                f"{_where(instance, attribute)} must be an int, got "
                f"{type(value).__name__}: {value!r}"
            )
        if value < minimum:
            raise ValueError(f"{_where(instance, attribute)} must be >= {minimum}, got {value}")

    return check


def non_empty_str(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A non-empty str: node names, topics, group ids."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{_where(instance, attribute)} must be a non-empty str, got {value!r}")


def tuple_of(element: type | tuple[type, ...]) -> Validator:
    """A tuple whose every element is an instance of ``element``."""
    return _collection_of(tuple, element)


def frozenset_of(element: type | tuple[type, ...]) -> Validator:
    """A frozenset whose every element is an instance of ``element``: an ISR, a replica set."""
    return _collection_of(frozenset, element)


def _collection_of(kind: type, element: type | tuple[type, ...]) -> Validator:
    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, kind):
            raise TypeError(
                f"{_where(instance, attribute)} must be a {kind.__name__} (immutable), got "
                f"{type(value).__name__}: {value!r}"
            )
        wrong = [v for v in cast(Iterable[Any], value) if not isinstance(v, element)]
        if wrong:
            names = (
                element.__name__
                if isinstance(element, type)
                else " or ".join(t.__name__ for t in element)
            )
            shown = ", ".join(sorted(f"{v!r} ({type(v).__name__})" for v in wrong))
            raise TypeError(f"{_where(instance, attribute)} may hold only {names}, not {shown}")

    return check
