"""Small Kafka histories with everything a consumer can do, and some misbehaviour: the
generated cases of the oracle test (model_tests/test_anomaly_oracle.py), which holds the
anomaly taxonomy (`anomalies`) to the brute-force oracle (`kafka_oracle`).

A seeded simulation of producers and consumers over ideal partition logs, as `histgen`
does for the log checker, but with Kafka's consumer side in full:

- sends end ``ok`` (acknowledged with their offset, or, as Jepsen's clients may report
  them, without one), ``fail`` or ``info`` (taking effect before the ``info``, later, or
  never; the client goes on as a new process);
- consumers ``assign`` or ``subscribe`` to a list of keys (or to none, ``null``), which
  keeps their position on the keys still listed; polls carry a ``from`` (the position, a
  seek back or forward, 0, anywhere) or none (continuing from the position, or, with none,
  from wherever the consumer starts); they return a contiguous run of records below the
  high watermark they report, which may be stale (a deposed leader's);
- a final phase (sometimes) reads every key back from offset 0 with ``final`` polls;
- with ``p_retention`` > 0, retention moves a key's log start up now and then: every poll
  then reports it (``log_start``), a poll from below it fails with OFFSET_OUT_OF_RANGE,
  and one continuing from a position below it starts there (``auto.offset.reset``);
- with probability ``p_fault`` per op that takes effect, the simulated cluster misbehaves
  in one of `FAULTS`: an acknowledged write that is not in the log, a failed one that is,
  a record appended twice, an acknowledgement with the wrong offset, a poll that skips or
  repeats records, starts past or below its position, or reads a wrong value.

Every value sent is unique. Same ``random.Random``, same history.
"""

from __future__ import annotations

import random
from typing import Any

import attrs

from jepsen_py.history.op import Op

FAULTS = (
    "ack-not-appended",
    "fail-appended",
    "append-twice",
    "ack-wrong-offset",
    "poll-drop-record",
    "poll-skip-ahead",
    "poll-repeat-record",
    "poll-rewind",
    "poll-wrong-value",
)


@attrs.frozen
class SmallWorkload:
    """What to generate: a few keys, producers and consumers, ``steps`` moves."""

    keys: int = 2
    producers: int = 2
    consumers: int = 2
    steps: int = 30
    p_fault: float = 0.05
    p_final: float = 0.3
    p_from: float = 0.6
    """A poll carries a ``from`` (else it continues from the consumer's position)."""
    p_no_offset: float = 0.2
    """An acknowledged send reports no offset."""
    p_stale: float = 0.15
    """A poll reports a high watermark below the log's end (and reads below it)."""
    p_reassign: float = 0.15
    max_records: int = 3
    p_retention: float = 0.0
    """Per step, retention moves a random key's log start up (0: no retention, and no
    ``log_start`` in the history)."""


@attrs.define
class _Client:
    process: int
    kind: str  # "producer" or "consumer"
    positions: dict[str, int] = attrs.field(factory=dict)
    op: dict[str, Any] | None = None


def generate_small(rng: random.Random, w: SmallWorkload | None = None) -> list[Op]:
    """One history (see the module docstring)."""
    w = w or SmallWorkload()
    keys = [f"k{i}" for i in range(w.keys)]
    logs: dict[str, list[Any]] = {k: [] for k in keys}
    starts: dict[str, int] | None = {k: 0 for k in keys} if w.p_retention > 0 else None
    clients = [_Client(i, "producer") for i in range(w.producers)]
    clients += [_Client(w.producers + i, "consumer") for i in range(w.consumers)]
    fresh = len(clients)
    value = 100
    late: list[tuple[str, Any]] = []
    out: list[Op] = []

    def emit(client: _Client, type_: str, f: str, key: str | None, v: Any) -> None:
        out.append(Op(len(out), len(out) * 1000, client.process, type_, f, key, v))

    def fault() -> str | None:
        return rng.choice(FAULTS) if rng.random() < w.p_fault else None

    for _ in range(w.steps):
        if late and rng.random() < 0.1:
            key, v = late.pop(rng.randrange(len(late)))
            logs[key].append(v)
        if starts is not None and rng.random() < w.p_retention:
            key = rng.choice(keys)
            starts[key] = min(len(logs[key]), starts[key] + rng.randint(1, 3))
        c = rng.choice(clients)
        if c.op is None:
            value += 1
            c.op = _invoke(rng, w, c, keys, logs, value)
            emit(c, "invoke", c.op["f"], c.op["key"], c.op["arg"])
        elif c.op["effect"]:
            c.op["effect"] = False
            _take_effect(rng, w, c, logs, fault(), starts=starts)
        else:
            op, c.op = c.op, None
            emit(c, op["type"], op["f"], op["key"], op["out"])
            if op["f"] == "send" and op["type"] == "info" and op.get("late"):
                late.append((op["key"], op["arg"]))
            if op["f"] in ("assign", "subscribe") and op["type"] in ("ok", "info"):
                kept = {str(k) for k in op["arg"] or ()}
                c.positions = {k: p for k, p in c.positions.items() if k in kept}
            if op["f"] == "poll" and op["type"] == "ok" and op["position"] is not None:
                c.positions[op["key"]] = op["position"]
            if op["type"] == "info":
                c.process, fresh = fresh, fresh + 1
                c.positions = {}
    if rng.random() < w.p_final:
        for key, v in late:
            if rng.random() < 0.5:
                logs[key].append(v)
        for key in keys:
            reader = _Client(fresh, "consumer")
            fresh += 1
            position = 0
            for _ in range(20):
                arg = {"from": position, "final": True}
                emit(reader, "invoke", "poll", key, arg)
                reader.op = {"f": "poll", "key": key, "arg": arg, "start": position,
                             "type": "ok"}  # fmt: skip
                _take_effect(rng, w, reader, logs, fault(), final=True, starts=starts)
                done = reader.op
                emit(reader, done["type"], "poll", key, done["out"])
                if done["type"] == "fail":
                    position = done["out"]["log_start"]  # retention: read on from there
                    continue
                if not done["out"]["records"]:
                    break
                position = done["out"]["records"][-1][0] + 1
    return out


def _invoke(
    rng: random.Random,
    w: SmallWorkload,
    c: _Client,
    keys: list[str],
    logs: dict[str, list[Any]],
    value: int,
) -> dict[str, Any]:
    if c.kind == "producer":
        key = rng.choice(keys)
        r = rng.random()
        kind = "ok" if r < 0.7 else "fail" if r < 0.8 else "info"
        return {"f": "send", "key": key, "arg": value, "type": kind, "effect": kind != "fail",
                "out": value}  # fmt: skip
    r = rng.random()
    if r < w.p_reassign:
        chosen = [k for k in keys if rng.random() < 0.6]
        arg: Any = None if rng.random() < 0.1 else chosen
        t = rng.random()
        kind = "ok" if t < 0.85 else "fail" if t < 0.95 else "info"
        f = "assign" if rng.random() < 0.6 else "subscribe"
        return {"f": f, "key": None, "arg": arg, "type": kind, "effect": False, "out": arg}
    key = rng.choice(keys)
    position = c.positions.get(key)
    size = len(logs[key])
    if rng.random() < w.p_from:
        choices = [0, rng.randrange(size + 2)]
        if position is not None:
            choices += [position, position, max(0, position - rng.randint(1, 2)),
                        position + rng.randint(1, 2)]  # fmt: skip
        start: int | None = rng.choice(choices)
        arg = {"from": start}
    else:
        start = None
        arg = {} if rng.random() < 0.5 else None
    t = rng.random()
    kind = "ok" if t < 0.88 else "fail" if t < 0.96 else "info"
    return {"f": "poll", "key": key, "arg": arg, "type": kind, "effect": kind == "ok",
            "start": start, "out": None, "position": None}  # fmt: skip


def _take_effect(
    rng: random.Random,
    w: SmallWorkload,
    c: _Client,
    logs: dict[str, list[Any]],
    fault: str | None,
    *,
    final: bool = False,
    starts: dict[str, int] | None = None,
) -> None:
    op = c.op
    assert op is not None
    log = logs[op["key"]]
    if op["f"] == "send":
        v = op["arg"]
        if op["type"] == "info" and rng.random() < 0.5:
            op["late"] = rng.random() < 0.5  # maybe later, maybe never
            return
        offset = len(log)
        if fault == "ack-not-appended" and op["type"] == "ok":
            pass
        else:
            log.append(v)
        if fault == "append-twice":
            log.append(v)
        if fault == "ack-wrong-offset":
            offset = max(0, offset + rng.choice((-1, 1)))
        if fault == "fail-appended" and op["type"] == "ok":
            op["type"], op["out"] = "fail", v
            return
        if op["type"] == "ok":
            ack: dict[str, Any] = {"value": v}
            if rng.random() >= w.p_no_offset:
                ack["offset"] = offset
            op["out"] = ack
        return
    # a poll
    log_start = 0 if starts is None else starts[op["key"]]
    start = op["start"]
    if start is not None and start < log_start:
        # a fetch below the log start: OFFSET_OUT_OF_RANGE, which reports the log start
        op["type"], op["out"] = "fail", {"error": "OFFSET_OUT_OF_RANGE", "log_start": log_start}
        op["position"] = None
        return
    if start is None:
        start = c.positions.get(op["key"])
        if start is not None and start < log_start:
            start = log_start  # the consumer's auto.offset.reset=earliest
    if start is None:
        start = rng.randrange(log_start, len(log) + 1)  # a consumer may start anywhere
    hw = len(log)
    if not final and rng.random() < w.p_stale:
        hw = rng.randrange(hw + 1)
    n = rng.randint(0, w.max_records) if not final else rng.randint(1, w.max_records + 1)
    if fault == "poll-skip-ahead":
        start += rng.randint(1, 2)
    records = [[o, log[o]] for o in range(start, min(start + n, hw))]
    if fault == "poll-drop-record" and len(records) >= 3:
        del records[rng.randrange(1, len(records) - 1)]  # from the middle
    elif fault == "poll-drop-record" and records:
        del records[0]
    elif fault == "poll-repeat-record" and records:
        i = rng.randrange(len(records))
        records.insert(i, list(records[i]))
    elif fault == "poll-rewind" and start > 0 and start - 1 < hw:
        records = [[start - 1, log[start - 1]], *records]
    elif fault == "poll-wrong-value" and records:
        i = rng.randrange(len(records))
        others = [v for k in logs for v in logs[k] if v != records[i][1]]
        if others:
            records[i] = [records[i][0], rng.choice(others)]
    op["out"] = {"records": records, "hw": hw}
    if starts is not None:
        op["out"]["log_start"] = log_start
    if records:
        op["position"] = records[-1][0] + 1
    elif op["start"] is not None or c.positions.get(op["key"]) is not None:
        op["position"] = start
    else:
        op["position"] = None
