"""The shape of a sequential specification, as Porcupine has it (anishathalye/porcupine,
``model.go``), and the operations a linearizability check is about.

A `Model` is ``init()``, ``step(state, input, output) -> (ok, new_state)``, an optional
``partition`` (P-compositionality: independent parts of a history, such as the keys of a
key-value store, are checked apart), and ``describe_operation``/``describe_state`` for
reports. States must be hashable and compare by value: the search caches (linearized set,
state) pairs (Lowe, "Testing for linearizability", 2017).

Added to Porcupine's shape, because a Jepsen history is events, not calls:

- ``encode(invoke, completion, conventions)`` turns one invocation and its completion (None
  while indeterminate: ``info``, or still pending at the end) into the model's
  (input, output), or None when the operation constrains nothing (a read whose result is
  unknown). ``fail`` completions never reach it unless the `Conventions` say that ``fail``
  completed the operation (etcd's cas): a failed op had no effect and is left out.
- ``read_only(input, output)``: True when the operation never changes the state. The search
  uses it to cut equivalent orders: a read-only op that can be linearized now may be
  linearized first.

An `Operation` whose ``ret`` is None is indeterminate: it may take effect at any time after
its call, or never, so the search may linearize it anywhere after its call and need not
linearize it at all.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any

import attrs

from jepsen_py.history.op import Op
from jepsen_py.history.validate import NATIVE, Conventions, Rejections

UNKNOWN_STATE: Any = object()
"""`Model.sets` of an operation whose effect depends on the state before it."""


class ModelError(ValueError):
    """An op the model cannot interpret (wrong ``f`` or value shape); the message says what
    the model expects."""


@attrs.frozen(slots=True, eq=False)
class Operation:
    """One operation of a history as the checker sees it: call and return positions (event
    order), the model's input and output, and the events it came from (for reports)."""

    process: Any
    input: Hashable
    output: Hashable
    call: int
    ret: int | None
    """None: indeterminate (``info`` or never completed): may take effect any time after the
    call, or never."""
    read_only: bool
    invoke: Op | None = None
    complete: Op | None = None

    @property
    def key(self) -> Any:
        return self.invoke.key if self.invoke is not None else None


class Model:
    """A sequential specification, Porcupine-shaped. Subclasses override `init`, `step`
    and `encode`, and optionally the rest."""

    name = "model"

    def init(self) -> Hashable:
        raise NotImplementedError

    def step(self, state: Any, input: Any, output: Any) -> tuple[bool, Any]:
        raise NotImplementedError

    def encode(
        self, invoke: Op, complete: Op | None, conventions: Conventions
    ) -> tuple[Hashable, Hashable] | None:
        raise NotImplementedError

    def read_only(self, input: Any, output: Any) -> bool:
        return False

    prunes_by_growth = False
    """True when the model defines `grows`, `sets` and `growth_test`, so the search can drop
    a configuration from which the next read cannot be reached."""

    def grows(self, input: Any) -> bool:
        """True when the operation only extends the state (an append)."""
        return False

    def sets(self, input: Any) -> Any:
        """The state an operation sets whatever the state before (a put), or
        `UNKNOWN_STATE` when its effect depends on the state."""
        return UNKNOWN_STATE

    def growth_test(self, input: Any, output: Any) -> Callable[[Any], bool] | None:
        """For a read-only operation (input, output): a test of a state that is False only
        when no sequence of growing operations takes that state to one in which the
        operation is accepted; None when it cannot tell (every state passes)."""
        return None

    def partition(self, history: list[Operation]) -> list[list[Operation]]:
        """Independent parts of ``history`` (default: the whole of it)."""
        return [history]

    def describe_operation(self, input: Any, output: Any) -> str:
        return f"{input!r} -> {output!r}"

    def describe_state(self, state: Any) -> str:
        return repr(state)


def operations(
    ops: Iterable[Op],
    model: Model,
    conventions: Conventions = NATIVE,
    rejections: Rejections | None = None,
) -> list[Operation]:
    """Pair each invocation with its completion and encode the pair for ``model``.

    ``ops`` must be validated (`jepsen_py.history.validate`): one pending op per process.
    Positions are the order of events. Left out: non-client ops, ``fail`` ops (no effect)
    unless the conventions say their ``f`` completed, and whatever ``model.encode`` says
    constrains nothing. An op the model cannot interpret goes to ``rejections`` (or raises
    `ModelError` when none is given)."""
    pending: dict[tuple[Any, Any], tuple[int, Op]] = {}
    calls: list[tuple[int, Op, Op | None, int | None]] = []
    position = 0
    for op in ops:
        if not op.is_client:
            continue
        position += 1
        who = (op.run, op.process)
        if op.type == "invoke":
            pending[who] = (len(calls), op)
            calls.append((position, op, None, None))
            continue
        slot = pending.pop(who, None)
        if slot is None:  # not validated: ignore rather than guess
            continue
        i, invoke = slot
        if op.type == "info":
            continue  # indeterminate, like a call still pending at the end
        calls[i] = (calls[i][0], invoke, op, position)
    result: list[Operation] = []
    for call, invoke, complete, ret in calls:
        if (
            complete is not None
            and complete.type == "fail"
            and (invoke.f not in conventions.fail_completes)
        ):
            continue
        try:
            encoded = model.encode(invoke, complete, conventions)
        except ModelError as exc:
            if rejections is None:
                raise
            line = complete.line if complete is not None else invoke.line
            rejections.reject(line, str(exc), key=invoke.key, run=invoke.run)
            continue
        if encoded is None:
            continue
        input, output = encoded
        read_only = model.read_only(input, output)
        result.append(
            Operation(invoke.process, input, output, call, ret, read_only, invoke, complete)
        )
    return result
