"""The Kafka workload: unique sends, polls from a consumer's position, and the final
read-back (polls invoked with ``{"from": N, "final": true}``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from jepsen_py.generator.core import (
    EXHAUSTED,
    PENDING,
    Context,
    Gen,
    GeneratorError,
    Invocation,
    Process,
    Step,
    Thread,
)
from jepsen_py.history.op import Op

# --- the Kafka workload ---------------------------------------------------------------


def _keys(keys: Sequence[str], who: str) -> tuple[str, ...]:
    if isinstance(keys, str):
        raise GeneratorError(f"{who}: keys must be a list of keys, not the string {keys!r}")
    # A set's order is not part of the seed: sort it.
    out = tuple(sorted(keys)) if isinstance(keys, set | frozenset) else tuple(keys)
    if not out:
        raise GeneratorError(f"{who} needs at least one key, e.g. ['t-0']")
    return out


@attrs.frozen(slots=True)
class _Sends(Gen):
    keys: tuple[str, ...]
    next_value: int

    def op(self, ctx: Context) -> Step:
        thread = ctx.some_free()
        if thread is None:
            return PENDING, self
        key = self.keys[ctx.rng.randrange(len(self.keys))]
        inv = Invocation(ctx.time, thread, ctx.workers[thread], "send", key, self.next_value)
        return inv, _Sends(self.keys, self.next_value + 1)


def sends(keys: Sequence[str], values_from: int = 0) -> Gen:
    """Forever: send the next integer (``values_from``, then +1 each op) to a key chosen at
    random, so every value is unique, across keys too. One `sends` per run: a copy (under
    `each_thread`, `repeat`, `cycle`) counts on its own, so give copies disjoint
    ``values_from`` ranges."""
    return _Sends(_keys(keys, "sends"), values_from)


def _last_offset(value: Any) -> int | None:
    """The offset of the last record of an ``ok`` poll's value; None when it has none."""
    records = value.get("records") if isinstance(value, dict) else None
    if not isinstance(records, list) or not records:
        return None
    last = records[-1]
    if not isinstance(last, list | tuple) or not last or not isinstance(last[0], int):
        return None
    return last[0]


def _log_start(value: Any) -> int | None:
    """The log start offset a poll's answer reported (retention on), or None."""
    start = value.get("log_start") if isinstance(value, dict) else None
    return start if type(start) is int else None


@attrs.frozen(slots=True)
class _Polls(Gen):
    keys: tuple[str, ...]
    p_rewind: float
    positions: Mapping[tuple[Process, str], int]
    """(process, key) -> where its next poll of that key starts."""
    inflight: Mapping[Process, int]
    """process -> the ``from`` of its poll in flight."""

    def op(self, ctx: Context) -> Step:
        thread = ctx.some_free()
        if thread is None:
            return PENDING, self
        process = ctx.workers[thread]
        key = self.keys[ctx.rng.randrange(len(self.keys))]
        rewind = ctx.rng.random() < self.p_rewind
        start = 0 if rewind else self.positions.get((process, key), 0)
        inv = Invocation(ctx.time, thread, process, "poll", key, {"from": start})
        inflight = {**self.inflight, process: start}
        return inv, _Polls(self.keys, self.p_rewind, self.positions, inflight)

    def update(self, ctx: Context, event: Op) -> Gen:
        if event.f != "poll" or event.type == "invoke" or event.process not in self.inflight:
            return self
        inflight = dict(self.inflight)
        start = inflight.pop(event.process)
        positions = self.positions
        if event.type == "info":
            # The process is retired (its thread goes on as a new one): forget it, so the
            # map holds live processes only.
            positions = {pk: o for pk, o in positions.items() if pk[0] != event.process}
        elif event.type == "ok" and event.key is not None:
            last = _last_offset(event.value)
            positions = {
                **positions,
                (event.process, event.key): start if last is None else last + 1,
            }
        elif event.type == "fail" and event.key is not None:
            # Below the log start retention moved (OFFSET_OUT_OF_RANGE): go on from there,
            # as a consumer with auto.offset.reset=earliest does.
            log_start = _log_start(event.value)
            if log_start is not None and log_start > start:
                positions = {**positions, (event.process, event.key): log_start}
        return _Polls(self.keys, self.p_rewind, positions, inflight)


def polls(keys: Sequence[str], *, p_rewind: float = 0.1) -> Gen:
    """Forever: poll a key chosen at random from the polling process's position on it (one
    past the last offset its previous ``ok`` poll returned; 0 for a new process), or with
    probability ``p_rewind`` from the beginning. Positions come from completions
    (``update``)."""
    if not 0.0 <= p_rewind <= 1.0:
        raise GeneratorError(f"polls: p_rewind {p_rewind} must be a probability in [0, 1]")
    return _Polls(_keys(keys, "polls"), p_rewind, {}, {})


@attrs.frozen(slots=True)
class KeyRead:
    """Where the final read-back of one key stands."""

    position: int = 0
    owner: Thread | None = None
    """The thread that reads this key: one consumer per key, so its polls are successive
    polls of one process (a position handed between processes would look like a skip)."""
    inflight: Process | None = None
    strikes: int = 0
    """Polls in a row that made no progress (failed, or empty below the high watermark)."""
    done: bool = False


@attrs.frozen(slots=True)
class _FinalReads(Gen):
    keys: tuple[str, ...]
    max_strikes: int
    reads: Mapping[str, KeyRead]
    replica: int | None = None
    """Read from this replica (`replica_reads`) instead of the leader."""

    def op(self, ctx: Context) -> Step:
        if all(r.done for r in self.reads.values()):
            return EXHAUSTED, self
        for key in self.keys:
            read = self.reads[key]
            if read.done or read.inflight is not None:
                continue
            if read.owner is None:
                thread = ctx.first_free()
            else:
                thread = read.owner if read.owner in ctx.free else None
            if thread is None:
                continue
            process = ctx.workers[thread]
            value: dict[str, Any] = {"from": read.position, "final": True}
            if self.replica is not None:
                value = {"from": read.position, "replica": self.replica}
            inv = Invocation(ctx.time, thread, process, "poll", key, value)
            reads = {**self.reads, key: attrs.evolve(read, owner=thread, inflight=process)}
            return inv, _FinalReads(self.keys, self.max_strikes, reads, self.replica)
        return PENDING, self

    def update(self, ctx: Context, event: Op) -> Gen:
        read = self.reads.get(event.key) if event.key is not None else None
        if (
            event.f != "poll"
            or event.type == "invoke"
            or read is None
            or read.inflight != event.process
        ):
            return self
        assert event.key is not None
        last = _last_offset(event.value) if event.type == "ok" else None
        log_start = _log_start(event.value)
        if last is not None and last >= read.position:
            new = attrs.evolve(read, position=last + 1, inflight=None, strikes=0)
        elif event.type == "fail" and log_start is not None and log_start > read.position:
            # retention deleted what is below the log start: the read-back starts there
            new = attrs.evolve(read, position=log_start, inflight=None, strikes=0)
        else:
            hw = event.value.get("hw") if isinstance(event.value, dict) else None
            caught_up = event.type == "ok" and (not isinstance(hw, int) or read.position >= hw)
            strikes = read.strikes + 1
            done = caught_up or strikes > self.max_strikes
            new = attrs.evolve(read, inflight=None, strikes=strikes, done=done)
        return _FinalReads(
            self.keys, self.max_strikes, {**self.reads, event.key: new}, self.replica
        )


def final_reads(keys: Sequence[str], *, max_strikes: int = 5) -> Gen:
    """Read every key back from offset 0 with polls invoked with ``{"from": N, "final":
    true}`` (the checker's final-read convention), each key by one thread, continuing from
    one past the last record returned while polls return records (or from the log start a
    failed poll reports, when retention deleted what is below it); a key is done at an
    empty poll at or past the high watermark it reports (or with no ``hw``). A key gives
    up after ``max_strikes`` polls in a row without progress (failed, or empty below
    ``hw``), so a broken cluster cannot keep the phase running forever."""
    ks = _keys(keys, "final_reads")
    return _FinalReads(ks, max_strikes, {k: KeyRead() for k in ks})


def replica_reads(keys: Sequence[str], replica: int, *, max_strikes: int = 5) -> Gen:
    """`final_reads` from broker ``replica``'s copy of every key instead of the leader's,
    with polls invoked with ``{"from": N, "replica": B}``: a consumer fetching from a
    follower (KIP-392), which returns records up to the follower's own high watermark.
    Not the final read: a follower may trail the leader. Read after the final read, the
    replicas show what the leader's read cannot: a follower whose log diverged below the
    high watermark (KIP-279's fast failover) returns other records at offsets the leader
    returned, and the checker sees one offset with two values."""
    ks = _keys(keys, "replica_reads")
    return _FinalReads(ks, max_strikes, {k: KeyRead() for k in ks}, replica)
