"""Each line of a big key as the columns the Spark SQL log checker (`logsql`) works on.

`line_fields` is the only Python of the SQL path that sees every line: a UDF that parses one
line with the local readers' parser (`keycheck.decode_record`) and says, in plain columns
(`LINE_COLUMNS`), what `kafka_log.check_log` and the anomaly finders would read from that
op: a send's value and how its ack reads (`ACK_*`), a poll's ``from`` (`FROM_*`), how its
``ok`` reads (`POLL_*`) and, per record, the first check the record fails (`REC_*`). No
line needs another: there is no per-key state, so Spark spreads the lines freely.

Values are compared as text (`canon`): two values share a text exactly when `check_log`
finds them equal.
"""

from __future__ import annotations

from typing import Any

import orjson

from jepsen_py.checker.engine import refusal
from jepsen_py.checker.spark.keycheck import (
    JobSpec,
    LineError,
    decode_record,
    file_of,
    line_of,
    process_id,
    process_repr,
)
from jepsen_py.history.op import is_final

LIMIT = 1 << 62
"""Offsets, high watermarks and ``from`` must stay below this (in a long, with room)."""


# How `check_log` reads a send's ``ok`` (column ``ack_kind``).
ACK_OK, ACK_NOT_DICT, ACK_NO_OFFSET, ACK_NOT_INT, ACK_NEGATIVE, ACK_HUGE = range(6)
# How it reads a poll's ``ok`` (``poll_kind``).
POLL_OK, POLL_MALFORMED, POLL_NEGATIVE_HW, POLL_HUGE = range(4)
# The first check a record of a poll fails (``records[i].problem``).
REC_OK, REC_UNPACK, REC_NOT_INT, REC_GAP, REC_NEGATIVE, REC_ABOVE_HW, REC_HUGE = range(7)
# What a poll's ``from`` is (``from_kind``).
FROM_NONE, FROM_INT, FROM_OTHER = range(3)
LINE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("accepted", "boolean"),  # the line is an op (else ``reason`` says why not)
    ("reason", "string"),  # why the line was rejected
    ("rejected_key", "string"),  # the key a rejected line names, if any
    ("run", "string"),
    ("op_key", "string"),  # the op's key, as the parser reads it
    ("process", "string"),  # the process, as text (the window's partition)
    ("process_id", "long"),  # the process, as the pair table numbers it
    ("client", "boolean"),  # a client op (not the nemesis's)
    ("refused", "string"),  # why every engine refuses this client op (`engine.refusal`)
    ("type", "string"),
    ("f", "string"),
    ("no_index", "boolean"),  # the op had no ``index``: numbered by its ordinal
    ("value", "string"),  # a send's value (`canon`)
    ("ack_kind", "int"),  # a send ok: ACK_*
    ("offset", "long"),  # a send ok: its offset, when ACK_OK
    ("echoed_value", "string"),  # a send ok: the value it echoes (`canon`), if any
    ("anomaly_offset", "long"),  # a send ok: its offset as the anomaly finders read it
    ("from_kind", "int"),  # a poll invoke: FROM_*
    ("from_offset", "long"),  # a poll invoke: ``from`` as an int, when FROM_INT
    ("from_int", "long"),  # a poll invoke: ``from`` when it is an int proper
    ("final", "boolean"),  # a poll invoke: the final read
    ("poll_kind", "int"),  # a poll ok: POLL_*
    ("poll_is_dict", "boolean"),  # a poll ok: its value is a dict
    ("hw", "long"),  # a poll ok: its high watermark, when POLL_OK
    (
        "records",  # a poll ok: its records, each with the first check it fails (REC_*)
        "array<struct<index:int, offset:long, value:string, problem:int, well_formed:boolean>>",
    ),
    ("first_problem", "int"),  # the index of the first record with a problem, or -1
    ("goes_back", "boolean"),  # a well-formed record's offset below the previous one's
    ("gaps", "array<struct<low:long, high:long>>"),  # offsets skipped between records
    ("first_well_formed", "long"),  # the offset of the first well-formed record
    ("last_well_formed", "long"),  # the offset of the last well-formed record
)
"""The columns `line_fields` makes of a line: what `check_log` and the anomaly finders
would read from it, each line alone."""

LINE_DDL = ", ".join(f"{name} {kind}" for name, kind in LINE_COLUMNS)
"""`LINE_COLUMNS` as Spark's DDL (the UDF's return type)."""

_LINE_NAMES = tuple(name for name, _ in LINE_COLUMNS)


def canon(value: Any) -> str:
    """A text that two JSON values share iff `jepsen_py.history.op.freeze` makes them equal (Python
    equality: 1 == 1.0 == True; a dict equals its sorted item pairs)."""
    kind = type(value)
    if kind is int:
        return str(value)
    if kind is bool:
        return "1" if value else "0"
    if kind is float:
        return str(int(value)) if value.is_integer() else repr(value)
    if kind is str:
        return orjson.dumps(value).decode()
    if value is None:
        return "null"
    if kind is list or kind is tuple:
        return "[" + ",".join(canon(v) for v in value) + "]"
    if kind is dict:
        items = sorted(value.items(), key=lambda item: item[0])
        return "[" + ",".join(f"[{canon(k)},{canon(v)}]" for k, v in items) + "]"
    return "?" + repr(value)


def _int(value: Any) -> int | None:
    """``value`` as an int when `check_log` compares it equal to one, else None."""
    if type(value) is int or type(value) is bool:
        return int(value)
    if type(value) is float and value.is_integer():
        return int(value)
    return None


def line_fields(spec: JobSpec, pos: int, text: str) -> tuple[Any, ...]:
    """One line as the SQL checker's columns (`LINE_COLUMNS`): what `check_log` and the
    anomaly finders would read from this op, each line alone."""
    file_id, line = file_of(pos), line_of(pos)
    out: dict[str, Any] = {"accepted": False}
    try:
        op, defaulted = decode_record(
            spec.formats[file_id], text, spec.ordinal(file_id, line), line
        )
    except LineError as exc:
        out["reason"] = exc.reason
        out["rejected_key"] = (
            exc.key if isinstance(exc.key, str) or exc.key is None else str(exc.key)
        )
        return _row(out)
    if op is None:
        return _row(out)
    out.update(
        accepted=True,
        run=op.run,
        op_key=op.key,
        process=process_repr(op.process),
        process_id=process_id(op.process),
        client=op.is_client,
        refused=refusal(op) if op.is_client else None,
        type=op.type,
        f=op.f,
        no_index=defaulted,
    )
    if op.f == "send":
        if op.type == "invoke":
            out["value"] = canon(op.value)
        elif op.type == "ok":
            _send_ok(op.value, out)
    elif op.f == "poll":
        if op.type == "invoke":
            _poll_invoke(op.value, out)
        elif op.type == "ok":
            _poll_ok(op.value, out)
    return _row(out)


def _row(out: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(out.get(name) for name in _LINE_NAMES)


def _send_ok(value: Any, out: dict[str, Any]) -> None:
    if not isinstance(value, dict):
        out["ack_kind"] = ACK_NOT_DICT
        return
    if "value" in value:
        out["echoed_value"] = canon(value["value"])
    offset = value.get("offset")
    if type(offset) is int and -LIMIT < offset < LIMIT:
        out["anomaly_offset"] = offset
    if offset is None:
        out["ack_kind"] = ACK_NO_OFFSET
    elif type(offset) is not int:
        out["ack_kind"] = ACK_NOT_INT
    elif offset < 0:
        out["ack_kind"] = ACK_NEGATIVE
    elif offset >= LIMIT:
        out["ack_kind"] = ACK_HUGE
    else:
        out["ack_kind"], out["offset"] = ACK_OK, offset


def _poll_invoke(value: Any, out: dict[str, Any]) -> None:
    start = value.get("from") if isinstance(value, dict) else None
    out["final"] = is_final(value)
    if type(start) is int and -LIMIT < start < LIMIT:
        out["from_int"] = start
    if start is None:
        out["from_kind"] = FROM_NONE
        return
    number = _int(start)
    if number is not None and -LIMIT < number < LIMIT:
        out["from_kind"], out["from_offset"] = FROM_INT, number
    else:
        out["from_kind"] = FROM_OTHER


def _poll_ok(value: Any, out: dict[str, Any]) -> None:
    out["poll_is_dict"] = isinstance(value, dict)
    records = value.get("records") if isinstance(value, dict) else None
    hw = value.get("hw") if isinstance(value, dict) else None
    if not isinstance(records, list) or type(hw) is not int:
        out["poll_kind"] = POLL_MALFORMED
    elif hw < 0:
        out["poll_kind"] = POLL_NEGATIVE_HW
    elif hw >= LIMIT:
        out["poll_kind"] = POLL_HUGE
    else:
        out["poll_kind"], out["hw"] = POLL_OK, hw
    if not isinstance(records, list):
        return
    parsed: list[tuple[Any, ...]] = []
    first_problem = -1
    previous: int | None = None
    wf_previous: int | None = None
    gaps: list[tuple[int, int]] = []
    back = False
    first_wf: int | None = None
    for k, record in enumerate(records):
        wf = isinstance(record, list | tuple) and len(record) == 2 and type(record[0]) is int
        try:
            offset, item = record
        except (TypeError, ValueError):
            parsed.append((k, None, None, REC_UNPACK, False))
            first_problem = k if first_problem < 0 else first_problem
            continue
        fits = type(offset) is int and -LIMIT < offset < LIMIT
        val = canon(item)
        bad = REC_OK
        if type(offset) is not int:
            bad = REC_NOT_INT
        elif not fits:
            bad = REC_HUGE
        elif k > 0 and previous is not None and offset != previous + 1:
            bad = REC_GAP
        elif offset < 0:
            bad = REC_NEGATIVE
        elif out.get("hw") is not None and offset >= out["hw"]:
            bad = REC_ABOVE_HW
        parsed.append((k, offset if fits else None, val, bad, wf and fits))
        if bad != REC_OK and first_problem < 0:
            first_problem = k
        previous = offset if fits and bad in (REC_OK, REC_NEGATIVE, REC_ABOVE_HW) else None
        if wf and fits:
            if wf_previous is not None:
                if offset < wf_previous + 1:
                    back = True
                elif offset > wf_previous + 1:
                    gaps.append((wf_previous + 1, offset))
            else:
                first_wf = offset
            wf_previous = offset
    out.update(
        records=parsed,
        first_problem=first_problem,
        goes_back=back,
        gaps=gaps,
        first_well_formed=first_wf,
        last_well_formed=wf_previous,
    )
