"""The Kafka partition log as a Porcupine model, and a brute-force linearizability oracle.

``KAFKA_LOG_MODEL`` is the sequential specification that ``kafka_log.check_log`` decides
in polynomial time, written for the Wing-Gong-Lowe search (``wgl.py``, the `Model` shape
of ``model.py``), which explores linearizations one step at a time:

- the state is the tuple of values in the partition, oldest first (offset = position);
- ``send(v)`` appends ``v``; its ``ok`` must report the offset it got, ``len(state)``
  before the append, and echo ``v`` if it echoes a value; a send of unknown outcome
  (``info``, pending) may be linearized anywhere after its call (it appends) or never;
- ``poll(from)`` changes nothing; its ``ok`` must report ``hw == len(state)`` (in the
  abstract linearizable log every appended record is committed, so the high watermark at
  the poll's linearization point is the log length) and ``records`` that are a contiguous
  run of the log starting at ``from`` (anywhere, for a poll without ``from``), possibly
  shorter than what exists: ``records[i] == [from + i, state[from + i]]``. A poll of
  unknown outcome constrains nothing and is left out; so is a ``fail``ed op.

Encoded operations: input ``("send", v)`` with output ``(offset, echoed value)`` (offset
None when the ack carries none) or None (unknown); input ``("poll", from)`` with output
``(((offset, value), ...), hw)``.

``brute_force_check`` decides linearizability by trying every order of effect points
(every linearization consistent with real time), caching only identical (done set,
state) pairs, with its own pairing of events. It is exponential and meant for small
histories: the oracle that the polynomial checker and the WGL search are tested against.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from jepsen_py.checker.kafka_log import INF, paired
from jepsen_py.checker.model import Model, ModelError, Operation
from jepsen_py.checker.result import Verdict
from jepsen_py.history.op import Op, freeze
from jepsen_py.history.validate import NATIVE, Conventions

SEND, POLL = "send", "poll"

LogState = tuple[Any, ...]


class KafkaLogModel(Model):
    """One Kafka partition as a linearizable append-only log (see the module docstring)."""

    name = "log"

    def init(self) -> LogState:
        return ()

    def step(self, state: LogState, input: Any, output: Any) -> tuple[bool, LogState]:
        kind, arg = input
        if kind == SEND:
            if output is not None:
                offset, echo = output
                if echo != arg or (offset is not None and offset != len(state)):
                    return False, state
            return True, (*state, arg)
        records, hw = output
        if hw != len(state):
            return False, state
        expect = arg
        for offset, value in records:
            if expect is not None and offset != expect:
                return False, state
            if not 0 <= offset < hw or state[offset] != value:
                return False, state
            expect = offset + 1
        return True, state

    def encode(
        self, invoke: Op, complete: Op | None, conventions: Conventions = NATIVE
    ) -> tuple[Hashable, Hashable] | None:
        if invoke.f == SEND:
            value = freeze(invoke.value)
            if complete is None or complete.type != "ok":
                return (SEND, value), None
            out = complete.value
            offset = out.get("offset") if isinstance(out, dict) else None
            if not isinstance(out, dict) or not (offset is None or type(offset) is int):
                raise ModelError(
                    f"a send's ok value is {{'offset': o, 'value': v}}, got {out!r} "
                    f"(line {complete.line}); the log model needs the offset as an integer"
                )
            return (SEND, value), (offset, freeze(out["value"]) if "value" in out else value)
        if invoke.f == POLL:
            if complete is None or complete.type != "ok":
                return None  # a read with no result constrains nothing
            arg = invoke.value
            start = arg.get("from") if isinstance(arg, dict) else None
            out = complete.value
            records = out.get("records") if isinstance(out, dict) else None
            hw = out.get("hw") if isinstance(out, dict) else None
            if (
                not (start is None or type(start) is int)
                or not isinstance(records, list)
                or type(hw) is not int
                or not all(
                    isinstance(r, list | tuple) and len(r) == 2 and type(r[0]) is int
                    for r in records
                )
            ):
                raise ModelError(
                    f"a poll is invoked with {{'from': o}} and completes with "
                    f"{{'records': [[offset, value], ...], 'hw': H}}, got {arg!r} -> {out!r} "
                    f"(line {complete.line})"
                )
            return (POLL, start), (tuple((r[0], freeze(r[1])) for r in records), hw)
        raise ModelError(
            f"f {invoke.f!r} is not an operation of the log model (send, poll); choose the "
            "model that matches this history with --model"
        )

    def read_only(self, input: Any, output: Any) -> bool:
        return bool(input[0] == POLL)

    def partition(self, history: list[Operation]) -> list[list[Operation]]:
        """Split by (run, key): partitions of a topic are independent objects, so a history
        is linearizable iff each partition's operations are (locality)."""
        parts: dict[tuple[Any, Any], list[Operation]] = {}
        for op in history:
            run = op.invoke.run if op.invoke is not None else None
            parts.setdefault((run, op.key), []).append(op)
        return [parts[k] for k in sorted(parts, key=lambda k: (str(k[0]), str(k[1])))]

    def describe_operation(self, input: Any, output: Any) -> str:
        kind, arg = input
        if kind == SEND:
            if output is None:
                return f"send({arg!r}) -> ?"
            return f"send({arg!r}) -> offset {output[0]}"
        records = " ".join(f"{o}:{v!r}" for o, v in output[0])
        return f"poll(from={arg}) -> [{records}] hw={output[1]}"

    def describe_state(self, state: LogState) -> str:
        return "[" + " ".join(f"{o}:{v!r}" for o, v in enumerate(state)) + "]"


KAFKA_LOG_MODEL = KafkaLogModel()


def brute_force_check(
    ops: Sequence[Op], model: KafkaLogModel = KAFKA_LOG_MODEL, max_ops: int = 16
) -> Verdict:
    """Linearizability by exhaustive search over effect-point orders, per (run, key).

    A linearization is a sequence of distinct operations that contains every ``ok`` one,
    any subset of those of unknown outcome, and no ``fail`` one; that puts ``a`` before
    ``b`` whenever ``a`` completed before ``b`` was invoked (exactly when effect points can
    be chosen inside the windows); and that the model accepts step by step. Each partition
    needs one. Raises ``ValueError`` for a partition of more than ``max_ops`` operations
    (the search is exponential) and ``ModelError`` for an op the model cannot read.
    """
    parts: dict[tuple[Any, Any], list[tuple[int, int, Any, Any, bool]]] = {}
    for inv, comp in paired(ops):
        completion = ops[comp] if comp >= 0 else None
        if completion is not None and completion.type == "fail":
            continue  # did not happen
        encoded = model.encode(ops[inv], completion)
        if encoded is None:
            continue
        known = completion is not None and completion.type == "ok"
        parts.setdefault((ops[inv].run, ops[inv].key), []).append(
            (inv, comp if known else INF, encoded[0], encoded[1], known)
        )
    verdicts = []
    for operations in parts.values():
        if len(operations) > max_ops:
            raise ValueError(
                f"brute_force_check: a partition has {len(operations)} operations, more than "
                f"max_ops={max_ops}; the search is exponential, use check_log or the WGL search"
            )
        verdicts.append(Verdict.OK if _search(model, operations) else Verdict.ILLEGAL)
    return Verdict.combine(verdicts)


def _search(model: KafkaLogModel, operations: list[tuple[int, int, Any, Any, bool]]) -> bool:
    required = 0
    for i, (_, _, _, _, known) in enumerate(operations):
        if known:
            required |= 1 << i
    failed: set[tuple[int, LogState]] = set()

    def extend(done: int, state: LogState) -> bool:
        if done & required == required:
            return True
        if (done, state) in failed:
            return False
        # An op may go next only if every op that completed before its invocation is done:
        # its invocation precedes the earliest completion among the ops not yet done.
        horizon = min(comp for i, (_, comp, _, _, _) in enumerate(operations) if not done >> i & 1)
        for i, (inv, _, input, output, _) in enumerate(operations):
            if done >> i & 1 or inv > horizon:
                continue
            ok, after = model.step(state, input, output)
            if ok and extend(done | 1 << i, after):
                return True
        failed.add((done, state))
        return False

    return extend(0, model.init())
