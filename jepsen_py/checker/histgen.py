"""Synthetic Kafka-log histories: valid ones from a linearizable log, and mutators that
inject each anomaly of the taxonomy (and other faults) into them.

For tests and benchmarks of the checkers (and, later, the Spark benchmark): no cluster,
no simulator, just a seeded random interleaving of clients over an ideal partition log.
``generate(rng, workload)`` runs producers and consumers as concurrent processes; each op
is invoked, takes effect at a random later step (appends, or reads the log), and
completes later still, so windows overlap and a poll's high watermark often lags the log
when it completes (a stale poll). Sends fail (never take effect) or end in ``info``
(taking effect before the ``info``, after it, or never, and the process is replaced, as
in Jepsen); polls return fewer records than available (partial polls), sometimes seek
back, and optionally omit ``from`` (subscribed consumers). A final phase (on by default)
reads every partition back from offset 0, so a clean history has no unseen writes.
Everything is drawn from the ``random.Random`` passed in: same seed, same history.

Mutators take a history and a ``random.Random`` and return a new history, or None when
the history offers no place for that mutation. ``INJECTORS`` inject the named anomaly of
``anomalies.py`` (keyed by its name); ``PERTURBATIONS`` make other small changes (a high
watermark, an offset, a record's value, an op's window, an outcome) that may or may not
break linearizability: the tests let the brute-force oracle decide.
"""

from __future__ import annotations

import gc
import random
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from jepsen_py.checker.kafka_log import paired
from jepsen_py.history.op import Op, freeze, is_final

TIME_STEP = 1_000_000
"""Logical nanoseconds between two consecutive events of a generated history."""


@attrs.frozen
class LogWorkload:
    """What to generate. ``ops`` is the number of history lines of the main phase (the
    final read-back phase adds its polls)."""

    ops: int = 1000
    keys: int = 1
    producers: int = 3
    consumers: int = 2
    p_fail: float = 0.05
    """A send definitely fails: it never takes effect."""
    p_info: float = 0.05
    """A send ends in ``info``: it takes effect before it, after it, or never."""
    p_poll_info: float = 0.02
    """A poll ends in ``info`` (and its process is replaced) or ``fail``, half each."""
    max_records: int = 4
    """A poll returns between 0 and this many records (partial polls)."""
    p_seek: float = 0.05
    """A consumer seeks back to a random earlier offset before polling."""
    p_implicit: float = 0.0
    """A poll carries no ``from``: a subscribed consumer reading from its position."""
    p_linger: float = 0.3
    """An op that took effect waits another turn before completing (longer windows)."""
    final_reads: bool = True
    final_chunk: int = 64


class _Worker:
    """A client slot: runs one op at a time under its current process id."""

    __slots__ = ("arg", "effect", "key", "kind", "outcome", "positions", "process", "result")

    def __init__(self, process: int, kind: str) -> None:
        self.process = process
        self.kind = kind  # "send" or "poll"
        self.outcome: str | None = None  # ok | fail | info | info-late; None: idle
        self.effect = False  # the op has yet to take effect
        self.key = ""
        self.arg: Any = None
        self.result: Any = None  # a send's offset; a poll's (records, hw, next position)
        self.positions: dict[str, int] = {}


def generate(rng: random.Random, workload: LogWorkload | None = None) -> list[Op]:
    """A valid (linearizable, anomaly-free) history of ``workload``; see the module doc.

    Each step picks a client at random and moves its op one stage on: invoke, take
    effect (append, or read ``log[start:start+n]`` with ``hw = len(log)``), complete.
    """
    # The history holds millions of acyclic objects: without this, the cyclic garbage
    # collector rescans all of them over and over while they are built.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _generate(rng, workload or LogWorkload())
    finally:
        if collecting:
            gc.enable()


def _generate(rng: random.Random, w: LogWorkload) -> list[Op]:
    keys = [f"t-{i}" for i in range(w.keys)]
    logs: dict[str, list[int]] = {k: [] for k in keys}
    workers = [_Worker(i, "send") for i in range(w.producers)]
    workers += [_Worker(w.producers + i, "poll") for i in range(w.consumers)]
    next_process = len(workers)
    next_value = 0
    limbo: list[tuple[str, int]] = []  # info sends that may still take effect
    out: list[Op] = []
    emit = out.append
    random_ = rng.random
    n_workers, n_keys = len(workers), len(keys)
    p_fail, p_unknown = w.p_fail, w.p_fail + w.p_info
    p_poll_info, p_poll_unknown = w.p_poll_info / 2, w.p_poll_info
    while len(out) < w.ops:
        if limbo and random_() < 0.02:
            late_key, late_value = limbo.pop(int(random_() * len(limbo)))
            logs[late_key].append(late_value)
        wk = workers[int(random_() * n_workers)]
        i = len(out)
        if wk.outcome is None:  # invoke
            wk.key = key = keys[int(random_() * n_keys)]
            r = random_()
            if wk.kind == "send":
                if r < p_fail:
                    wk.outcome, wk.effect = "fail", False
                elif r < p_unknown:  # takes effect before its info, or maybe after
                    wk.effect = random_() < 0.5
                    wk.outcome = "info" if wk.effect else "info-late"
                else:
                    wk.outcome, wk.effect = "ok", True
                wk.arg = next_value
                next_value += 1
                emit(Op(i, i * TIME_STEP, wk.process, "invoke", "send", key, wk.arg))
            else:
                wk.outcome = "info" if r < p_poll_info else "fail" if r < p_poll_unknown else "ok"
                wk.effect = wk.outcome == "ok"
                position = wk.positions.get(key, 0)
                if random_() < w.p_implicit:
                    wk.arg = None
                else:
                    if random_() < w.p_seek:
                        position = int(random_() * (position + 1))
                    wk.arg = position
                emit(Op(i, i * TIME_STEP, wk.process, "invoke", "poll", key, {"from": wk.arg}))
        elif wk.effect:  # take effect
            wk.effect = False
            log = logs[wk.key]
            if wk.kind == "send":
                wk.result = len(log)
                log.append(wk.arg)
            else:
                start = wk.positions.get(wk.key, 0) if wk.arg is None else wk.arg
                hw = len(log)
                n = min(hw - start, int(random_() * (w.max_records + 1)))
                wk.result = ([[o, log[o]] for o in range(start, start + n)], hw, start + n)
        elif wk.outcome in ("ok", "info") and random_() < w.p_linger:
            continue
        else:  # complete
            outcome = wk.outcome
            if wk.kind == "send":
                if outcome == "ok":
                    value: Any = {"offset": wk.result, "value": wk.arg}
                    emit(Op(i, i * TIME_STEP, wk.process, "ok", "send", wk.key, value))
                else:
                    kind = "fail" if outcome == "fail" else "info"
                    emit(Op(i, i * TIME_STEP, wk.process, kind, "send", wk.key, wk.arg))
                    if outcome == "info-late" and random_() < 0.5:
                        limbo.append((wk.key, wk.arg))
            elif outcome == "ok":
                records, hw, position = wk.result
                wk.positions[wk.key] = position
                value = {"records": records, "hw": hw}
                emit(Op(i, i * TIME_STEP, wk.process, "ok", "poll", wk.key, value))
            else:
                emit(Op(i, i * TIME_STEP, wk.process, outcome, "poll", wk.key, None))
            if outcome != "ok" and outcome != "fail":
                wk.process = next_process
                next_process += 1
                wk.positions = {}
            wk.outcome = None
    # The main phase ends with some ops in flight: they stay pending (never complete).
    if not w.final_reads:
        return out
    for late_key, late_value in limbo:
        if random_() < 0.5:
            logs[late_key].append(late_value)
    for key in keys:
        log, position = logs[key], 0
        process, next_process = next_process, next_process + 1
        while True:
            i = len(out)
            chunk = [[o, log[o]] for o in range(position, min(position + w.final_chunk, len(log)))]
            invoke = {"from": position, "final": True}
            emit(Op(i, i * TIME_STEP, process, "invoke", "poll", key, invoke))
            done = {"records": chunk, "hw": len(log)}
            emit(Op(i + 1, (i + 1) * TIME_STEP, process, "ok", "poll", key, done))
            if not chunk:
                break
            position += len(chunk)
    return out


# --- mutators ------------------------------------------------------------------------


Mutator = Callable[[list[Op], random.Random], list[Op] | None]


class _View:
    """A history's operations by kind, as (invoke, completion) positions, for mutators."""

    def __init__(self, ops: Sequence[Op]) -> None:
        self.ops = ops
        self.pairs = paired(ops)
        self.sends = [(i, c) for i, c in self.pairs if ops[i].f == "send"]
        self.acked = [(i, c) for i, c in self.sends if c >= 0 and ops[c].type == "ok"]
        self.polls = [
            (i, c)
            for i, c in self.pairs
            if ops[i].f == "poll" and c >= 0 and ops[c].type == "ok" and _is_poll_ok(ops[c])
        ]
        self.at: dict[tuple[Any, int], Any] = {}  # (key, offset) -> value
        self.observers: dict[tuple[Any, int], set[int]] = {}  # (key, offset) -> positions
        for i, c in self.acked:
            offset = ops[c].value.get("offset") if isinstance(ops[c].value, dict) else None
            if type(offset) is int:
                self._see(ops[i].key, offset, ops[i].value, c)
        for i, c in self.polls:
            for offset, value in ops[c].value["records"]:
                self._see(ops[i].key, offset, value, c)

    def _see(self, key: Any, offset: int, value: Any, pos: int) -> None:
        self.at.setdefault((key, offset), value)
        self.observers.setdefault((key, offset), set()).add(pos)

    def length(self, key: Any) -> int:
        """How long the history proves the log of ``key`` to be."""
        hws = [self.ops[c].value["hw"] for i, c in self.polls if self.ops[i].key == key]
        offsets = [o + 1 for (k, o) in self.at if k == key]
        return max([0, *hws, *offsets])

    def fresh_value(self) -> int:
        values = [op.value for op in self.ops if op.f == "send" and type(op.value) is int]
        return max(values, default=0) + 1_000_000


def _is_poll_ok(op: Op) -> bool:
    return (
        isinstance(op.value, dict)
        and isinstance(op.value.get("records"), list)
        and type(op.value.get("hw")) is int
    )


def renumber(ops: Sequence[Op]) -> list[Op]:
    """Indices and times in list order (after ops were moved, inserted or removed)."""
    return [attrs.evolve(op, index=i, time=i * TIME_STEP, line=None) for i, op in enumerate(ops)]


def _append(ops: list[Op], *new: tuple[Any, str, str, Any, Any]) -> list[Op]:
    out = list(ops)
    for process, type_, f, key, value in new:
        out.append(Op(len(out), len(out) * TIME_STEP, process, type_, f, key, value))
    return out


def _new_process(ops: Sequence[Op]) -> int:
    return max([-1, *(op.process for op in ops if type(op.process) is int)]) + 1


def _with_records(op: Op, records: list[list[Any]], hw: int | None = None) -> Op:
    value = {"records": records, "hw": op.value["hw"] if hw is None else hw}
    return attrs.evolve(op, value=value)


def _set_from(op: Op, start: int | None) -> Op:
    return attrs.evolve(op, value={**(op.value or {}), "from": start})


def inject_inconsistent_offsets(ops: list[Op], rng: random.Random) -> list[Op] | None:
    """A poll reads, at an offset others saw holding ``v``, a different value: the value of
    an unobserved send when there is one (an info send), else a never-sent value."""
    view = _View(ops)
    candidates = [
        (c, j)
        for i, c in view.polls
        for j, (offset, _) in enumerate(ops[c].value["records"])
        if len(view.observers[(ops[i].key, offset)]) > 1
    ]
    if not candidates:
        return None
    c, j = rng.choice(candidates)
    key = ops[c].key
    seen = {freeze(v) for (k, _), v in view.at.items() if k == key}
    unobserved = [
        ops[i].value for i, _ in view.sends if ops[i].key == key and ops[i].value not in seen
    ]
    other = rng.choice(unobserved) if unobserved else view.fresh_value()
    records = [list(r) for r in ops[c].value["records"]]
    records[j][1] = other
    out = list(ops)
    out[c] = _with_records(ops[c], records)
    return out


def inject_duplicate(ops: list[Op], rng: random.Random) -> list[Op] | None:
    """A new poll reads an already-written value again at the next offset of the log."""
    view = _View(ops)
    if not view.at:
        return None
    (key, _offset), value = rng.choice(sorted(view.at.items(), key=repr))
    end = view.length(key)
    process = _new_process(ops)
    return _append(
        ops,
        (process, "invoke", "poll", key, {"from": end}),
        (process, "ok", "poll", key, {"records": [[end, value]], "hw": end + 1}),
    )


def inject_lost_write(ops: list[Op], rng: random.Random) -> list[Op] | None:
    """The final read of a key ends just before an acknowledged write: from there on the
    final polls return nothing, the high watermark they report is that offset, and the
    read stops. The write, and every one after it, was lost by the log (the history stays
    well formed; it is no longer linearizable)."""
    view = _View(ops)
    finals = [(i, c) for i, c in view.polls if is_final(ops[i].value)]
    acked = sorted(
        {
            (ops[i].key, ops[c].value["offset"])
            for i, c in view.acked
            if isinstance(ops[c].value, dict) and type(ops[c].value.get("offset")) is int
        },
        key=repr,
    )
    rng.shuffle(acked)
    for key, offset in acked[:20]:
        mine = [(i, c) for i, c in finals if ops[i].key == key]
        cut = next(
            (
                (i, c)
                for i, c in mine
                # a poll that says where it read from (another mutation may have made
                # it a subscribed poll, without ``from``: its start is not known)
                if type(ops[i].value.get("from", 0)) is int
                and ops[i].value.get("from", 0) <= offset
                and any(r[0] >= offset for r in ops[c].value["records"])
            ),
            None,
        )
        if cut is None:
            continue
        i, c = cut
        out = list(ops)
        kept = [r for r in ops[c].value["records"] if r[0] < offset]
        out[c] = _with_records(ops[c], kept, hw=offset)
        drop = {  # every final poll of the key after the cut, finished or not
            p
            for ii, cc in paired(ops)
            if ii > c and ops[ii].key == key and is_final(ops[ii].value)
            for p in (ii, cc)
            if p >= 0
        }
        out = [op for p, op in enumerate(out) if p not in drop]
        if kept:  # the read goes on from the cut, and finds the end there
            process = ops[i].process
            out += [
                Op(0, 0, process, "invoke", "poll", key, {"from": offset, "final": True}),
                Op(0, 0, process, "ok", "poll", key, {"records": [], "hw": offset}),
            ]
        return renumber(out)
    return None


def inject_unseen(ops: list[Op], rng: random.Random) -> list[Op] | None:
    """A new send, acknowledged at the end of the log, that no poll reads; its key's
    final read is taken away (with it, the send would be a lost write)."""
    view = _View(ops)
    keys = sorted({op.key for op in ops if op.f in ("send", "poll")}, key=repr) or ["t-0"]
    key = rng.choice(keys)
    process = _new_process(ops)
    value = view.fresh_value()
    plain = [
        attrs.evolve(op, value={k: v for k, v in op.value.items() if k != "final"})
        if op.key == key and op.f == "poll" and isinstance(op.value, dict)
        else op
        for op in ops
    ]
    return _append(
        plain,
        (process, "invoke", "send", key, value),
        (process, "ok", "send", key, {"offset": view.length(key), "value": value}),
    )


def _successive_polls(view: _View) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Pairs of ok polls by one process on one key with nothing of that process between."""
    ops = view.ops
    last: dict[tuple[Any, Any], tuple[int, int]] = {}
    out = []
    for i, c in sorted(view.polls, key=lambda pair: pair[1]):
        track = (ops[i].process, ops[i].key)
        if track in last:
            out.append((last[track], (i, c)))
        last[track] = (i, c)
    return out


def inject_poll_skip(ops: list[Op], rng: random.Random) -> list[Op] | None:
    """A consumer's next poll, from where its previous poll left it, returns records from
    one offset later (dropping the first), over an offset that other ops saw."""
    view = _View(ops)
    candidates = []
    for (_, c1), (i2, c2) in _successive_polls(view):
        records = ops[c2].value["records"]
        start = ops[i2].value.get("from") if isinstance(ops[i2].value, dict) else None
        before = ops[c1].value["records"]
        position = before[-1][0] + 1 if before else None
        if (
            len(records) >= 2
            and start is not None
            and start == position == records[0][0]
            and len(view.observers[(ops[i2].key, start)]) > 1
        ):
            candidates.append((i2, c2))
    if not candidates:
        return None
    _, c2 = rng.choice(candidates)
    out = list(ops)
    out[c2] = _with_records(ops[c2], ops[c2].value["records"][1:])
    return out


def inject_nonmonotonic_poll(ops: list[Op], rng: random.Random) -> list[Op] | None:
    """A consumer's next poll (made a subscribed poll, without ``from``) re-reads the last
    record its previous poll returned."""
    view = _View(ops)
    candidates = []
    for (_, c1), (i2, c2) in _successive_polls(view):
        before = ops[c1].value["records"]
        if before and ops[c2].value["hw"] > before[-1][0]:
            candidates.append((before[-1], i2, c2))
    if not candidates:
        return None
    record, i2, c2 = rng.choice(candidates)
    out = list(ops)
    out[i2] = _set_from(ops[i2], None)
    out[c2] = _with_records(ops[c2], [list(record)])
    return out


def inject_nonmonotonic_send(ops: list[Op], rng: random.Random) -> list[Op] | None:
    """Swap the offsets of a producer's two successive acknowledged sends to a key, in the
    acknowledgements and in every record read (the later send now sits first)."""
    view = _View(ops)
    last: dict[tuple[Any, Any], tuple[int, int]] = {}
    candidates = []
    for i, c in sorted(view.acked, key=lambda pair: pair[1]):
        if type(ops[c].value.get("offset")) is not int:
            continue
        track = (ops[i].process, ops[i].key)
        if track in last:
            candidates.append((last[track], (i, c)))
        last[track] = (i, c)
    if not candidates:
        return None
    (i1, c1), (i2, c2) = rng.choice(candidates)
    key = ops[i1].key
    o1, o2 = ops[c1].value["offset"], ops[c2].value["offset"]
    swap = {o1: o2, o2: o1}
    out = list(ops)
    out[c1] = attrs.evolve(ops[c1], value={**ops[c1].value, "offset": o2})
    out[c2] = attrs.evolve(ops[c2], value={**ops[c2].value, "offset": o1})
    values = {o1: ops[i2].value, o2: ops[i1].value}  # after the swap
    for i, c in view.polls:
        if ops[i].key == key and any(r[0] in swap for r in ops[c].value["records"]):
            records = [[o, values.get(o, v)] for o, v in ops[c].value["records"]]
            out[c] = _with_records(ops[c], records)
    return out


def inject_aborted_read(ops: list[Op], rng: random.Random) -> list[Op] | None:
    """Turn the ok of a send that some poll read into a fail."""
    view = _View(ops)
    read = {(ops[i].key, freeze(v)) for i, c in view.polls for _, v in ops[c].value["records"]}
    candidates = [(i, c) for i, c in view.acked if (ops[i].key, freeze(ops[i].value)) in read]
    if not candidates:
        return None
    i, c = rng.choice(candidates)
    out = list(ops)
    out[c] = attrs.evolve(ops[c], type="fail", value=ops[i].value)
    return out


INJECTORS: dict[str, Mutator] = {
    "inconsistent-offsets": inject_inconsistent_offsets,
    "duplicate": inject_duplicate,
    "lost-write": inject_lost_write,
    "unseen": inject_unseen,
    "poll-skip": inject_poll_skip,
    "nonmonotonic-poll": inject_nonmonotonic_poll,
    "nonmonotonic-send": inject_nonmonotonic_send,
    "aborted-read": inject_aborted_read,
}


def perturb_hw(ops: list[Op], rng: random.Random) -> list[Op] | None:
    """A poll reports a high watermark one or two off (lower: maybe below its records)."""
    view = _View(ops)
    if not view.polls:
        return None
    _, c = rng.choice(view.polls)
    hw = max(0, ops[c].value["hw"] + rng.choice((-2, -1, 1, 2)))
    out = list(ops)
    out[c] = _with_records(ops[c], ops[c].value["records"], hw)
    return out


def perturb_ack_offset(ops: list[Op], rng: random.Random) -> list[Op] | None:
    """A send is acknowledged with its offset one or two off."""
    view = _View(ops)
    acked = [(i, c) for i, c in view.acked if isinstance(ops[c].value, dict)]
    if not acked:
        return None
    _, c = rng.choice(acked)
    offset = max(0, ops[c].value["offset"] + rng.choice((-2, -1, 1, 2)))
    out = list(ops)
    out[c] = attrs.evolve(ops[c], value={**ops[c].value, "offset": offset})
    return out


def perturb_record(ops: list[Op], rng: random.Random) -> list[Op] | None:
    """A record read carries another value: another send's (maybe a failed or an info
    one), or one never sent."""
    view = _View(ops)
    candidates = [(c, j) for _, c in view.polls for j in range(len(ops[c].value["records"]))]
    if not candidates:
        return None
    c, j = rng.choice(candidates)
    sent = [ops[i].value for i, _ in view.sends if ops[i].key == ops[c].key]
    records = [list(r) for r in ops[c].value["records"]]
    records[j][1] = rng.choice(sent) if sent and rng.random() < 0.7 else view.fresh_value()
    out = list(ops)
    out[c] = _with_records(ops[c], records)
    return out


def shrink_window(ops: list[Op], rng: random.Random) -> list[Op] | None:
    """Move an op's completion up to right after its invocation, or its invocation down to
    right before its completion: real-time order gains constraints."""
    pairs = [(i, c) for i, c in paired(ops) if c > i + 1]
    if not pairs:
        return None
    i, c = rng.choice(pairs)
    out = list(ops)
    if rng.random() < 0.5:
        out.insert(i + 1, out.pop(c))
    else:
        out.insert(c - 1, out.pop(i))
    return renumber(out)


def change_outcome(ops: list[Op], rng: random.Random) -> list[Op] | None:
    """A send's outcome changes: ok to info or fail, info to fail, or its completion is
    dropped (pending). After an info or a drop, the client goes on as a new process (a
    process whose op is indeterminate never invokes again)."""
    sends = [(i, c) for i, c in paired(ops) if c >= 0 and ops[i].f == "send"]
    if not sends:
        return None
    i, c = rng.choice(sends)
    out = list(ops)
    choice = rng.random()
    kind = "info" if choice < 0.6 and ops[c].type == "ok" else "fail"
    out[c] = attrs.evolve(ops[c], type=kind, value=ops[i].value)
    if kind == "info" or choice < 0.25:
        process = ops[c].process
        fresh = _new_process(ops)
        for j in range(c + 1, len(out)):
            if out[j].process == process and out[j].run == ops[c].run:
                out[j] = attrs.evolve(out[j], process=fresh)
    if choice < 0.25:
        del out[c]
        return renumber(out)
    return out


def truncate(ops: list[Op], rng: random.Random) -> list[Op] | None:
    """Keep a prefix of the history (ops in flight at the cut become pending)."""
    if len(ops) < 2:
        return None
    return ops[: rng.randrange(1, len(ops))]


PERTURBATIONS: dict[str, Mutator] = {
    "hw": perturb_hw,
    "ack-offset": perturb_ack_offset,
    "record": perturb_record,
    "shrink-window": shrink_window,
    "outcome": change_outcome,
    "truncate": truncate,
}


def mutate(ops: list[Op], rng: random.Random, name: str) -> list[Op] | None:
    """Apply the injector or perturbation called ``name``."""
    mutator = INJECTORS.get(name) or PERTURBATIONS.get(name)
    if mutator is None:
        known = ", ".join([*INJECTORS, *PERTURBATIONS])
        raise ValueError(f"unknown mutation {name!r}; known: {known}")
    return mutator(ops, rng)
