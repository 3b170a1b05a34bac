"""One history event: an invocation or a completion of a client (or nemesis) operation.

Jepsen's convention (shared by Knossos and Porcupine's Jepsen logs):

- ``invoke``: a process starts an operation;
- ``ok``: the operation took effect, and ``value`` is what it observed;
- ``fail``: the operation definitely did not take effect;
- ``info``: the outcome is unknown; the operation may take effect at any later time, or
  never. A process whose operation ends in ``info`` never invokes again.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import attrs

OP_TYPES: frozenset[str] = frozenset({"invoke", "ok", "fail", "info"})

FINAL = "final"
"""The key of an op's value that marks the op part of the run's final phase (``true``):
the final read's polls (``{"from": N, "final": true}``), the final heal's stops, the final
``fetch-offsets``."""


@attrs.frozen(slots=True, eq=True)
class Op:
    """A single line of a history.

    ``value`` is JSON-shaped data (None, numbers, strings, lists, dicts), so an ``Op`` is
    compared by value but is not hashable when its value is a list or a dict; index ops by
    ``index`` instead.
    """

    index: int
    time: int
    process: int | str
    type: str = attrs.field(validator=attrs.validators.in_(OP_TYPES))
    f: str
    key: str | None = None
    value: Any = None
    run: str | None = None
    line: int | None = attrs.field(default=None, eq=False)
    """Line number in the source file (1-based), kept for error messages only."""

    @property
    def is_invoke(self) -> bool:
        return self.type == "invoke"

    @property
    def is_client(self) -> bool:
        """True for client operations; the nemesis logs its faults as ``info`` ops."""
        return self.process != "nemesis"


def freeze(value: Any) -> Hashable:
    """A JSON-shaped value as a hashable one, equal iff the values are (lists become tuples,
    dicts sorted tuples of their items), so an op's value can be a set member, a dict key
    or part of a model state."""
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), freeze(v)) for k, v in value.items()))
    return value


def is_final(value: Any) -> bool:
    """Whether an op's value is marked `FINAL` (``{"final": true}``)."""
    return isinstance(value, dict) and value.get(FINAL) is True
