"""What a report draws, read from a history: op spans, nemesis events, fault periods.

- A *span* is one client op from its invocation to its completion (``ok``, ``fail``,
  ``info``), or to nowhere (``pending``: never completed), per (run, process).
- An *event* is a line of a non-client process (the nemesis): a fault's invocation or
  completion, or an ``info`` marker.
- A *fault period* runs from the nemesis op that starts a fault to the one that stops it,
  paired by the fault vocabulary (``jepsen_py.fault_verbs.fault_kind``: ``start-X``/``stop-X``,
  ``kill``/``restart``, ``pause``/``resume``, Jepsen's bare ``start``/``stop``; ``heal``,
  ``heal-all`` and ``stop-all`` stop every open fault), by which the generator names them.
  A start while the fault is open (Jepsen logs a fault's invocation and completion both as
  ``info``) keeps the period's start and takes the newer value: the completion names the
  concrete targets. A period never stopped lasts to the end of the history.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import attrs

from jepsen_py.fault_verbs import EVERY_FAULT, fault_kind
from jepsen_py.history import Rejection, Rejections, read_history
from jepsen_py.history.op import Op


@attrs.frozen(slots=True)
class Span:
    process: int | str
    run: str | None
    f: str
    key: str | None
    start: int
    end: int | None
    """None: the op never completed."""
    type: str
    """ok | fail | info | pending"""
    invoke_value: Any
    value: Any
    line: int | None
    """The history line of the invocation (its place in the history when not from a file)."""
    end_line: int | None = None
    """The history line of the completion."""

    @property
    def latency(self) -> int | None:
        return None if self.end is None else self.end - self.start


@attrs.frozen(slots=True)
class Event:
    time: int
    process: int | str
    run: str | None
    type: str
    f: str
    value: Any


@attrs.frozen(slots=True)
class FaultPeriod:
    fault: str
    start: int
    end: int | None
    """None: never stopped (the period lasts to the end of the history)."""
    run: str | None
    value: Any


@attrs.frozen
class Collected:
    """A history as spans (by invocation time), events and fault periods (by start)."""

    source: str
    spans: list[Span]
    events: list[Event]
    faults: list[FaultPeriod]
    t_min: int
    t_max: int
    ops: int
    rejected: list[Rejection]

    @property
    def fault_names(self) -> list[str]:
        return sorted({p.fault for p in self.faults})


History = str | os.PathLike[str] | Iterable[Op] | Collected


def collect(history: History, *, source: str | None = None) -> Collected:
    """Read ``history`` (a path in any readable format, ops, or an already `Collected`).
    Malformed lines of a file (a torn last line after a crash) are skipped and listed in
    ``rejected``."""
    if isinstance(history, Collected):
        return history
    rejections: Rejections | None = None
    if isinstance(history, str | os.PathLike):
        name = source or str(history)
        rejections = Rejections(str(history))
        ops: Iterable[Op] = read_history(history, None, rejections)
    else:
        name = source or "history"
        ops = history
    pending: dict[tuple[str | None, Any], tuple[Op, int]] = {}
    spans: list[Span] = []
    events: list[Event] = []
    faults: list[FaultPeriod] = []
    open_: dict[tuple[str | None, str], FaultPeriod] = {}
    t_min: int | None = None
    t_max: int | None = None
    count = 0
    for op in ops:
        count += 1
        t_min = op.time if t_min is None else min(t_min, op.time)
        t_max = op.time if t_max is None else max(t_max, op.time)
        if not op.is_client:
            events.append(Event(op.time, op.process, op.run, op.type, op.f, op.value))
            _fault_edge(op, open_, faults)
            continue
        who = (op.run, op.process)
        line = op.line if op.line is not None else count
        if op.type == "invoke":
            earlier = pending.pop(who, None)
            if earlier is not None:  # malformed: a second invoke; the first never ends
                spans.append(_span(earlier[0], None, earlier[1], None))
            pending[who] = (op, line)
            continue
        invoked = pending.pop(who, None)
        if invoked is not None:
            spans.append(_span(invoked[0], op, invoked[1], line))
        else:
            spans.append(_span(op, op, line, line))
    spans.extend(_span(invoked, None, line, None) for invoked, line in pending.values())
    faults.extend(open_.values())
    spans.sort(key=lambda s: (s.start, s.end is None, s.end or 0))
    faults.sort(key=lambda p: (p.start, p.fault))
    rejected = list(rejections) if rejections is not None else []
    return Collected(name, spans, events, faults, t_min or 0, t_max or 0, count, rejected)


def _span(invoked: Op, completed: Op | None, line: int, end_line: int | None) -> Span:
    if completed is None:
        end, type_, value = None, "pending", None
    else:
        end, type_, value = completed.time, completed.type, completed.value
    invoke_value = invoked.value if invoked.type == "invoke" else None
    return Span(
        invoked.process,
        invoked.run,
        invoked.f,
        invoked.key,
        invoked.time,
        end,
        type_,
        invoke_value,
        value,
        line,
        end_line,
    )


def _fault_edge(
    op: Op, open_: dict[tuple[str | None, str], FaultPeriod], closed: list[FaultPeriod]
) -> None:
    kind = fault_kind(op.f)
    if kind is None:
        return
    fault, edge = kind
    if edge == "start":
        current = open_.get((op.run, fault))
        if current is None:
            open_[(op.run, fault)] = FaultPeriod(fault, op.time, None, op.run, op.value)
        elif op.value is not None:
            open_[(op.run, fault)] = attrs.evolve(current, value=op.value)
        return
    names = [k for k in open_ if k[0] == op.run] if fault == EVERY_FAULT else [(op.run, fault)]
    for name in sorted(names, key=lambda k: k[1]):
        period = open_.pop(name, None)
        if period is not None:
            closed.append(attrs.evolve(period, end=op.time))


__all__ = ["Collected", "Event", "FaultPeriod", "History", "Span", "collect"]
