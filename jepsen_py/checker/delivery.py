"""A consumer group's delivery semantics, checked from its history (issue 19): records the
group lost, records it processed twice (and why), committed offsets that went backwards.

The history is docs/history-format.md's, with the group's ops: ``send`` (producers),
``assign`` (a member's partitions, per generation), ``process`` (the application finished
processing records: the side effect is done), ``commit`` (OffsetCommit: ``commitSync``,
``commitAsync`` or auto commit, ``enable.auto.commit``), ``fetch-offsets`` (OffsetFetch:
where a member that gets a partition starts, or an admin's read of the committed
offsets), and the nemesis's ``kill-consumer``, whose value names the history process of
the consumer that died. A committed offset is the offset of the next record to read: the
last processed + 1 (``KafkaConsumer`` Javadoc, "Offsets and Consumer Position").

What is found, per (run, key) -- a partition as the group consumes it:

- ``lost``: an acknowledged send at offset ``o`` that no ``process`` op contains, although
  the group's committed offset passed it: an ``ok`` commit of the key with a value above
  ``o``, or an ``ok`` fetch-offsets that returned one. That is what committing before
  processing does when the consumer dies in between (at most once);
- ``duplicated-*``: ``o`` in a second ``process`` op (every repeat counts once), explained
  by comparing it with the processing before it, in this order:

  - ``duplicated-crash``: the first processor was killed (a ``kill-consumer`` naming its
    process) after it processed ``o`` and before the second processing, and no
    acknowledged commit covering ``o`` (value above ``o``) had completed before the kill:
    committing after processing, a crash re-delivers (at least once);
  - ``duplicated-seek``: the second processor sought the key back (a ``seek`` invoked
    by its process between the two processings, to ``o`` or below): a consumer that
    rewinds on purpose (``KafkaConsumer.seek``, e.g. back to its committed offset after
    a processing failure) reads those records again;
  - ``duplicated-rebalance``: the partition changed owner between the two processings (an
    ``assign`` that took it from the first processor, or gave it to another process) and
    no acknowledged commit covering ``o`` had completed before the second processor's
    last fetch-offsets of the key was invoked (before its processing, if it fetched none):
    it started from an offset the group had committed before ``o``;
  - ``duplicated-unexplained``: anything else (a commit covering ``o`` was acknowledged
    before the second owner asked where to start: it should have started past ``o``);
- ``commit-regression``: an ``ok`` fetch-offsets returned ``c`` (or null: no committed
  offset) for the key although a commit of the key with a value above ``c`` had completed
  ``ok`` before the fetch was invoked. A consumer commits where it has read to, so
  without a seek back its commits never go backwards, and this is the offsets topic
  losing a commit (an unclean election of its partition, a coordinator that answered
  before loading it). A ``seek`` of the key before the fetch, to ``c`` or below (or to
  an unknown offset), could explain ``c``: that regression is then undecidable, and a
  `Problem` says so; a seek to above ``c`` (a rewind to an offset at or above what the
  fetch returned) leaves it judged.

Which of these is a violation is ``--delivery``'s (`taxonomy.DELIVERY_CLASSES`): at least
once forbids ``lost`` and unexplained duplicates, at most once every duplicate;
``commit-regression`` is always one. The verdict is `verdict.delivery_verdict`, the rule
every engine applies.

The check is built to be spread: `split_op` turns one op, on its own, into the facts of its
run (`Assign`, `Kill`: few, shared by every key) and events of its keys (a commit of three
partitions is three events); `check_key` judges one key from its events and its run's facts.
`check_delivery` does both over a list of ops (the local engine; ``kmodel test --workload
group`` is to call it); the Spark engine runs `split_op` on every line, broadcasts the facts
and groups the events by key.
Positions are whatever the caller numbers ops by, increasing in history order; witnesses
are sorted tuples of positions.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from itertools import pairwise
from typing import Any, TypeGuard

import attrs

from jepsen_py.checker.anomalies import KeyAnomalies, Problem
from jepsen_py.checker.taxonomy import DELIVERY_ANOMALIES
from jepsen_py.checker.verdict import DeliveryVerdict, delivery_verdict
from jepsen_py.history.op import Op

KILL_F = "kill-consumer"

ACK, PROCESS, COMMIT, FETCH, FETCHED, SEEK = "ack", "process", "commit", "fetch", "fetched", "seek"
Event = tuple[int, str, Any, Any]
"""(position, kind, process, data) of one key: ``ack`` (an ok send; data: (offset or None,
value)), ``process`` (data: the offsets processed), ``commit`` (an ok commit; data: the
offset committed), ``fetch`` (a fetch-offsets invoked), ``fetched`` (its ok; data: the
offset returned, or None), ``seek``."""

Witness = tuple[int, ...]


@attrs.frozen
class Assign:
    """A member's assignment changed: from ``pos`` on, ``process`` owns ``keys``."""

    pos: int
    process: Any
    keys: frozenset[str]


@attrs.frozen
class Kill:
    """The consumer whose history process is ``process`` was killed at ``pos``."""

    pos: int
    process: Any


@attrs.frozen
class Split:
    """What one op says: a run fact, events per key, or why it is malformed."""

    fact: Assign | Kill | None = None
    events: tuple[tuple[str, Event], ...] = ()
    """(key, event) pairs."""
    problem: str | None = None


_NOTHING = Split()


def _offset(value: Any) -> bool:
    return type(value) is int and value >= 0


def _key_name(key: Any) -> TypeGuard[str]:
    return isinstance(key, str) and bool(key)


def split_op(pos: int, op: Op) -> Split:
    """One op's part in the delivery check (see the module docstring); ``problem`` says,
    for a malformed group op, what is wrong and what was expected."""
    f, type_, value = op.f, op.type, op.value
    if not op.is_client:
        if f != KILL_F:
            return _NOTHING
        if not (isinstance(value, dict) and isinstance(value.get("process"), int | str)):
            return Split(
                problem=f"{KILL_F} value {_show(value)} does not name the consumer that died: "
                'expected {"node": ..., "process": P} with P its history process id'
            )
        if isinstance(value["process"], bool):
            return Split(problem=f"{KILL_F}: process {_show(value['process'])} is not a process id")
        return Split(fact=Kill(pos, value["process"]))
    if f == "assign" or f == "subscribe":
        if type_ not in ("ok", "info"):
            return _NOTHING
        if value is None:
            return Split(fact=Assign(pos, op.process, frozenset()))
        if isinstance(value, list) and all(_key_name(k) for k in value):
            return Split(fact=Assign(pos, op.process, frozenset(value)))
        return Split(problem=f"{f} value {_show(value)} is not a list of keys (or null)")
    if f == "send":
        if type_ != "ok" or op.key is None:
            return _NOTHING
        offset = value.get("offset") if isinstance(value, dict) else None
        sent = value.get("value") if isinstance(value, dict) else value
        if offset is not None and not _offset(offset):
            return Split(problem=f"send ok: offset {_show(offset)} is not a non-negative integer")
        return Split(events=((op.key, (pos, ACK, op.process, (offset, sent))),))
    if f == "process":
        if type_ != "ok":
            return Split(problem="a process op is logged once, ok, when processing finished")
        if not _key_name(op.key):
            return Split(problem='a process op needs the partition it processed, in "key"')
        if not isinstance(value, list) or not all(
            isinstance(r, list) and len(r) == 2 and _offset(r[0]) for r in value
        ):
            return Split(
                problem=f"process value {_show(value)} is not the records processed: "
                "[[offset, value], ...]"
            )
        offsets = tuple(r[0] for r in value)
        return Split(events=((op.key, (pos, PROCESS, op.process, offsets)),))
    if f == "commit":
        if not isinstance(value, dict) or not all(
            _key_name(k) and (_offset(v) or (k == "error" and type_ in ("fail", "info")))
            for k, v in value.items()
        ):
            return Split(
                problem=f"commit value {_show(value)} is not a map of key -> offset (the next "
                'offset to read), e.g. {"t-0": 12} (a fail or info may add "error": "NAME")'
            )
        if type_ != "ok":
            return _NOTHING
        return Split(events=tuple((k, (pos, COMMIT, op.process, v)) for k, v in value.items()))
    if f == "fetch-offsets":
        if type_ == "invoke":
            if not isinstance(value, list) or not all(_key_name(k) for k in value):
                return Split(
                    problem=f"fetch-offsets invoke value {_show(value)} is not a list of keys"
                )
            return Split(events=tuple((k, (pos, FETCH, op.process, None)) for k in value))
        if type_ != "ok":
            return _NOTHING
        if not isinstance(value, dict) or not all(
            _key_name(k) and (v is None or _offset(v)) for k, v in value.items()
        ):
            return Split(
                problem=f"fetch-offsets ok value {_show(value)} is not a map of key -> "
                "committed offset or null"
            )
        return Split(events=tuple((k, (pos, FETCHED, op.process, v)) for k, v in value.items()))
    if f == "seek" and type_ == "invoke":
        keys = [op.key] if op.key is not None else []
        targets = value if isinstance(value, dict) else {}
        keys += [k for k in targets if _key_name(k) and k != op.key]
        return Split(
            events=tuple(
                (k, (pos, SEEK, op.process, targets[k] if _offset(targets.get(k)) else None))
                for k in keys
            )
        )
    return _NOTHING


class RunFacts:
    """The facts of one run every key's check reads: assignments in history order, and
    the kills of each consumer process."""

    def __init__(self, facts: Iterable[Assign | Kill] = ()) -> None:
        ordered = sorted(facts, key=lambda fact: fact.pos)
        self.assigns = [f for f in ordered if isinstance(f, Assign)]
        self.assign_pos = [a.pos for a in self.assigns]
        self.kills: dict[Any, list[int]] = {}
        for fact in ordered:
            if isinstance(fact, Kill):
                self.kills.setdefault(fact.process, []).append(fact.pos)

    def killed(self, process: Any, after: int, before: int) -> int | None:
        """The first kill of ``process`` strictly between the two positions."""
        kills = self.kills.get(process)
        if not kills:
            return None
        i = bisect_right(kills, after)
        return kills[i] if i < len(kills) and kills[i] < before else None

    def owner_changed(self, key: str, owner: Any, after: int, before: int) -> int | None:
        """The first assignment strictly between the two positions that took ``key`` from
        ``owner`` or gave it to another process."""
        i = bisect_right(self.assign_pos, after)
        while i < len(self.assigns) and self.assigns[i].pos < before:
            a = self.assigns[i]
            if (a.process == owner) != (key in a.keys):
                return a.pos
            i += 1
        return None


class _Commits:
    """The increases of a running maximum of committed offsets: (positions, maxima)."""

    def __init__(self) -> None:
        self.pos: list[int] = []
        self.top: list[int] = []

    def add(self, pos: int, offset: int) -> None:
        if not self.top or offset > self.top[-1]:
            self.pos.append(pos)
            self.top.append(offset)

    def best(self) -> tuple[int, int] | None:
        """(highest offset so far, where it was first reached)."""
        return (self.top[-1], self.pos[-1]) if self.top else None

    def first_above(self, offset: int, before: int | None = None) -> int | None:
        """Where the maximum first rose above ``offset`` (only if before ``before``)."""
        i = bisect_right(self.top, offset)
        if i == len(self.top) or (before is not None and self.pos[i] >= before):
            return None
        return self.pos[i]


def check_key(
    run: Any,
    key: str,
    events: Sequence[Event],
    facts: RunFacts,
    max_witnesses: int | None = None,
) -> KeyAnomalies:
    """The delivery anomalies of one key (see the module docstring) from its events, in
    history order, and its run's facts."""
    found: dict[str, list[Witness]] = {name: [] for name in DELIVERY_ANOMALIES}
    problems: list[Problem] = []
    acked: dict[int, int] = {}  # offset -> its acknowledgement
    unplaced: list[tuple[int, Any]] = []  # acknowledgements without an offset
    processed: dict[int, list[tuple[int, Any]]] = {}  # offset -> (process op, process)
    commits, fetched = _Commits(), _Commits()
    pending: dict[Any, tuple[int, tuple[int, int] | None]] = {}  # process -> fetch invoked
    fetches: dict[Any, list[int]] = {}  # process -> its fetch invocations
    regressions: list[tuple[Witness, int | None, int]] = []  # (witness, fetched, where)
    seeks: list[tuple[int, Any, int | None]] = []  # (position, process, target)
    for pos, kind, process, data in events:
        if kind == ACK:
            if data[0] is None:
                unplaced.append((pos, data[1]))
            else:
                acked.setdefault(data[0], pos)
        elif kind == PROCESS:
            for offset in data:
                processed.setdefault(offset, []).append((pos, process))
        elif kind == COMMIT:
            commits.add(pos, data)
        elif kind == FETCH:
            pending[process] = (pos, commits.best())
            fetches.setdefault(process, []).append(pos)
        elif kind == FETCHED:
            invoked = pending.pop(process, None)
            if invoked is None:
                continue  # completes nothing (the validator rejects such a line)
            if data is not None:
                fetched.add(pos, data)
            best = invoked[1]
            if best is not None and (data is None or best[0] > data):
                regressions.append((tuple(sorted((best[1], invoked[0], pos))), data, pos))
        elif kind == SEEK:
            seeks.append((pos, process, data))
    for witness, returned, where in regressions:
        seek = _seek_to(seeks, where, returned)
        if seek is None:
            found["commit-regression"].append(witness)
        else:
            problems.append(
                Problem(
                    f"a seek on key {key!r} to {_show(seek[2])} before an OffsetFetch that "
                    f"returned {_show(returned)}, below a commit already acknowledged: a "
                    "consumer that sought back may commit less on purpose, so this "
                    "commit-regression cannot be judged",
                    (*witness, seek[0]),
                )
            )
    for pos, value in unplaced:
        problems.append(
            Problem(
                f"the acknowledgement of {_show(value)} on key {key!r} carries no offset: "
                'cannot tell whether a committed offset passed it; log {"offset": o, ...}',
                (pos,),
            )
        )
    for offset, ack in acked.items():
        if offset in processed:
            continue
        passed = [commits.first_above(offset), fetched.first_above(offset)]
        seen = min((p for p in passed if p is not None), default=None)
        if seen is not None:
            found["lost"].append(tuple(sorted((ack, seen))))
    for offset, runs in processed.items():
        for (p1, first), (p2, second) in pairwise(runs):
            _explain(found, key, offset, p1, first, p2, second, facts, commits, fetches, seeks)
    cap = max_witnesses
    witnesses = {
        name: tuple(sorted(ws)[:cap] if cap is not None else sorted(ws))
        for name, ws in found.items()
        if ws
    }
    counts = {name: len(found[name]) for name in DELIVERY_ANOMALIES}
    return KeyAnomalies(run, key, counts, witnesses, tuple(problems))


def _explain(
    found: dict[str, list[Witness]],
    key: str,
    offset: int,
    p1: int,
    first: Any,
    p2: int,
    second: Any,
    facts: RunFacts,
    commits: _Commits,
    fetches: dict[Any, list[int]],
    seeks: Sequence[tuple[int, Any, int | None]],
) -> None:
    """Class one repeat of ``offset``'s processing: crash, seek, rebalance or unexplained."""
    kill = facts.killed(first, p1, p2)
    if kill is not None and commits.first_above(offset, before=kill) is None:
        found["duplicated-crash"].append((p1, kill, p2))
        return
    back = next(
        (
            pos
            for pos, process, target in seeks
            if p1 < pos < p2 and process == second and target is not None and target <= offset
        ),
        None,
    )
    if back is not None:
        found["duplicated-seek"].append((p1, back, p2))
        return
    change = facts.owner_changed(key, first, p1, p2)
    if change is None:
        found["duplicated-unexplained"].append((p1, p2) if p1 < p2 else (p1,))
        return
    mine = fetches.get(second, [])
    i = bisect_left(mine, p2)
    started = mine[i - 1] if i > 0 else p2
    covered = commits.first_above(offset, before=started)
    if covered is None:
        found["duplicated-rebalance"].append(tuple(sorted({p1, change, started, p2})))
    else:
        found["duplicated-unexplained"].append(tuple(sorted({p1, change, covered, started, p2})))


def _seek_to(
    seeks: Sequence[tuple[int, Any, int | None]], before: int, returned: int | None
) -> tuple[int, Any, int | None] | None:
    """The first seek before ``before`` that can explain a committed offset of
    ``returned``: one to ``returned`` or below (or to an unknown offset; any, when the
    fetch found no committed offset). A consumer commits only where it has read to, and
    after a seek to ``T`` it reads from ``T``: without such a seek nobody could have
    committed ``returned`` after a higher commit."""
    for seek in seeks:
        pos, _, target = seek
        if pos >= before:
            return None
        if target is None or returned is None or target <= returned:
            return seek
    return None


@attrs.frozen
class DeliveryKey:
    """One key's delivery checked: its anomalies, and the verdict under ``delivery``."""

    run: Any
    key: str
    ops: int
    """The key's group events (acknowledged sends, processings, commits, fetches)."""
    anomalies: KeyAnomalies
    verdict: DeliveryVerdict


def key_order(ident: tuple[Any, Any]) -> tuple[str, str]:
    """The order keys are listed in (by run, then key), on every engine."""
    return (str(ident[0]), str(ident[1]))


def check_delivery(
    ops: Sequence[Op],
    delivery: str,
    *,
    line_of: Callable[[int], int | None] | None = None,
    max_witnesses: int | None = None,
) -> list[DeliveryKey]:
    """The delivery anomalies and verdict (under ``delivery``: ``at-least-once`` or
    ``at-most-once``) of every (run, key) of ``ops``, a history in order, nemesis ops
    included (kills). Positions are indices into ``ops``; ``line_of`` names their lines
    (default: the op's ``line``, else its index + 1). A malformed group op is left out and
    leaves its key (a keyless one: every key of its run) UNKNOWN, with the reason."""
    lines = line_of or (lambda p: ops[p].line if ops[p].line is not None else p + 1)
    facts: dict[Any, list[Assign | Kill]] = {}
    events: dict[tuple[Any, str], list[Event]] = {}
    keyed: list[tuple[Any, str, Problem]] = []
    keyless: list[tuple[Any, Problem]] = []
    for pos, op in enumerate(ops):
        split = split_op(pos, op)
        if split.problem is not None:
            where = f"line {op.line}" if op.line is not None else f"index {op.index}"
            problem = Problem(f"{where}: {split.problem}", (pos,))
            if op.key is not None and op.f in ("process", "send"):
                keyed.append((op.run, op.key, problem))
            else:
                keyless.append((op.run, problem))
            continue
        if split.fact is not None:
            facts.setdefault(op.run, []).append(split.fact)
        for key, event in split.events:
            events.setdefault((op.run, key), []).append(event)
    for run, key, _ in keyed:
        events.setdefault((run, key), [])
    per_run = {run: RunFacts(fs) for run, fs in facts.items()}
    out = []
    for ident in sorted(events, key=key_order):
        run, key = ident
        found = check_key(run, key, events[ident], per_run.get(run) or RunFacts(), max_witnesses)
        extra = [p for r, k, p in keyed if (r, k) == ident] + [p for r, p in keyless if r == run]
        if extra:
            found = attrs.evolve(found, problems=(*found.problems, *extra))
        out.append(judge(found, len(events[ident]), delivery, lines))
    return out


def judge(
    found: KeyAnomalies, events: int, delivery: str, line_of: Callable[[int], int | None]
) -> DeliveryKey:
    """A key's anomalies with their verdict under ``delivery`` (every engine's step)."""
    verdict = delivery_verdict(found, delivery, line_of)
    return DeliveryKey(found.run, found.key, events, found, verdict)


def _show(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
