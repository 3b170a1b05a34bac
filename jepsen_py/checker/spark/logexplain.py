"""The words of the Spark SQL log checker (`logsql`): explanations and result columns
written by the local checker itself, from the handful of ops SQL found.

SQL finds where a key fails; these functions say why, with `kafka_log`'s own words: a
problem of the reading pass is replayed through `check_log` on the ops that witness it
(`replay`), a gap or the ordering condition is worded by `kafka_log.explain_order`, and the
key's result columns come from the one verdict function every engine calls
(`verdict.key_verdict`), shaped as the per-key path shapes them (`keycheck.log_fields`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jepsen_py.checker.anomalies import KeyAnomalies
from jepsen_py.checker.kafka_log import check_log, explain_order, show, where
from jepsen_py.checker.records import KeyResult
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.spark.keycheck import JobSpec, file_of, line_of, log_fields
from jepsen_py.checker.verdict import key_verdict
from jepsen_py.history.op import Op, freeze


def explain_bad_read(
    detail: dict[str, Any], ops_at: dict[int, Op]
) -> tuple[Verdict, str | None, list[int]]:
    """`check_log`'s words for a read of a value never sent, or of a failed send."""
    seen = ops_at[detail["seen"]]
    if seen.f == "poll":
        value = seen.value["records"][detail["index"]][1]
    else:
        value = ops_at[detail["inv"]].value if detail["inv"] is not None else seen.value
    value = value if type(value) is int else freeze(value)
    offset = detail["offset"]
    if detail["inv"] is None:
        text = (
            f"read of a never-sent value: {show(value)} at offset {offset} (seen at "
            f"{where(seen)}) was never sent to this key"
        )
        return Verdict.ILLEGAL, text, [detail["seen"]]
    text = (
        f"aborted read: {show(value)} at offset {offset} (seen at {where(seen)}) comes from "
        f"a send that failed at {where(ops_at[detail['fail']])}"
    )
    return Verdict.ILLEGAL, text, sorted({detail["inv"], detail["fail"], detail["seen"]})


def _with_partners(refs: Sequence[int], ops_at: dict[int, Op]) -> list[int]:
    """``refs`` and the invocation of each completion among them (sorted positions)."""
    chosen = set(refs)
    by_process: dict[Any, list[int]] = {}
    for pos in sorted(ops_at):
        known = ops_at[pos]
        by_process.setdefault((known.run, known.process), []).append(pos)
    for pos in list(chosen):
        op = ops_at.get(pos)
        if op is None:
            continue
        stream = by_process[(op.run, op.process)]
        i = stream.index(pos)
        if op.type != "invoke" and i > 0 and ops_at[stream[i - 1]].type == "invoke":
            chosen.add(stream[i - 1])
        if op.type == "invoke" and i + 1 < len(stream) and ops_at[stream[i + 1]].type != "invoke":
            chosen.add(stream[i + 1])
    return sorted(p for p in chosen if p in ops_at)


def replay(
    refs: Sequence[int], ops_at: dict[int, Op], expected: Verdict
) -> tuple[Verdict, str | None, list[int]]:
    """`check_log` run on the ops at ``refs`` (with their partners, none after the last of
    them): its verdict, words and witness (positions), which reproduce the problem SQL
    found; should it not (never expected), ``expected`` with what `check_log` said."""
    positions = _with_partners(refs, ops_at)
    last = max(refs) if refs else -1
    positions = [p for p in positions if p <= last]
    sub = [ops_at[p] for p in positions]
    result = check_log(sub)
    position_of = {id(op): p for p, op in zip(positions, sub, strict=True)}
    witness = [position_of[id(op)] for op in result.witness if id(op) in position_of]
    if result.verdict is not expected:
        # never expected: the problem did not reproduce; say what SQL found, plainly
        return expected, f"{result.explanation or 'see the witness'}", sorted(refs)
    return result.verdict, result.explanation, witness


def explain_fillers(
    detail: dict[str, Any], ops_at: dict[int, Op]
) -> tuple[Verdict, str | None, list[int]]:
    length, gaps, fillers = detail["length"], detail["gaps"], detail["fillers"]
    proof = ops_at[detail["proof"]]  # the first observer of the last offset, or the poll
    if detail["observed"]:
        why = f"offset {length - 1} was observed at {where(proof)}"
    else:
        why = f"a poll saw high watermark {length} at {where(proof)}"
    text = (
        f"{why}, so offsets 0..{length - 1} exist, but {gaps} of them were never "
        f"observed and only {fillers} sends of unknown outcome could fill them"
    )
    return Verdict.ILLEGAL, text, [detail["proof"]]


def explain_scan(
    detail: dict[str, Any], ops_at: dict[int, Op]
) -> tuple[Verdict, str | None, list[int]]:
    """`kafka_log.explain_order` itself, on the four ops it names and the two facts of the
    log it looks up (the value at the offset, the offset of the late value)."""
    positions = sorted(
        p
        for p in {detail["latest"], detail["late_done"], detail["due_call"], detail["deadline"]}
        if p >= 0
    )
    sub = [ops_at[p] for p in positions]
    index = {p: i for i, p in enumerate(positions)}
    offset = detail["offset"]
    value_at: dict[int, Any] = {}
    offset_of: dict[Any, int] = {}
    if "value_send" in detail:
        value = ops_at[detail["value_send"]].value
        value_at[offset] = value if type(value) is int else freeze(value)
    late = ops_at[detail["latest"]]
    if late.f == "send" and "late_offset" in detail:
        value = late.value if type(late.value) is int else freeze(late.value)
        offset_of[value] = detail["late_offset"]
    verdict, explanation, found = explain_order(
        sub,
        offset,
        index[detail["latest"]],
        index[detail["deadline"]],
        value_at=value_at,
        offset_of=offset_of,
    )
    witness = [positions[i] for i in sorted({i for i in found if i >= 0})]
    return verdict, explanation, witness


def key_fields(
    linearizable: Verdict,
    explanation: str | None,
    witness: list[int],
    found: KeyAnomalies,
    ops_at: dict[int, Op],
    spec: JobSpec,
) -> dict[str, Any]:
    """A big key's result columns, as the per-key path makes them (`keycheck.log_fields`
    of a `records.KeyResult`): the same verdict function, the same shapes."""

    def line(pos: int) -> int | None:
        op = ops_at.get(pos)
        return op.line if op is not None else line_of(pos)

    verdict = key_verdict(linearizable, explanation, witness, found, spec.consistency, line)
    result = KeyResult(
        run=found.run,
        key=found.key,
        ops=0,
        verdict=verdict.verdict,
        seconds=0.0,
        explanation=verdict.explanation,
        witness=[ops_at[p] for p in verdict.witness if p in ops_at],
        consistency=verdict.consistency,
        kafka=verdict.kafka,
        linearizable=verdict.linearizable,
        violations=verdict.violations,
        counts={n: c for n, c in verdict.counts.items() if c},
        anomalies={
            name: [[ops_at[p] for p in w if p in ops_at] for w in witnesses]
            for name, witnesses in found.witnesses.items()
        },
    )
    position_of = {id(op): pos for pos, op in ops_at.items()}

    def file_name(op: Op) -> str | None:
        pos = position_of.get(id(op))
        return spec.files[file_of(pos)] if pos is not None else None

    fields = log_fields(result, file_name)
    del fields["ops"], fields["seconds"]
    return fields
