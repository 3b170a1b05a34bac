"""Small consumer-group histories with everything the delivery checker judges: the generated
cases of the delivery oracle test (model_tests/test_delivery_oracle.py), which holds
`delivery` to the brute-force `delivery_oracle`.

A seeded simulation, in the history format of docs/history-format.md, of producers
appending to partition logs and a consumer group reading them:

- the group moves partitions between members (``assign`` ops: the old owner's new keys,
  the new owner's), and a member that gets a partition asks where to start
  (``fetch-offsets``, completed later: commits may complete in between);
- a member polls a batch from its position and either processes it then commits the
  position after it (commit after process), or commits first and processes later
  (commit before process); commits complete later, ``ok``, ``fail`` or ``info`` (taking
  effect or not; the process then goes on as a new one, as Jepsen's clients do);
- the nemesis kills members (``kill-consumer``: a new process takes its place, owning
  nothing until the next assignment), and, with probability ``p_fault``, the offsets store
  misbehaves (it forgets the last commit: an offsets topic that lost data) or a member
  misbehaves (processes an old batch again, or seeks back);
- at the end (sometimes) a final fetch-offsets of every key.

Nothing here decides what is an anomaly: the oracle and the checker do, from the history.
Every value sent is unique. Same ``random.Random``, same history.
"""

from __future__ import annotations

import random
from typing import Any

import attrs

from jepsen_py.history.op import Op


@attrs.frozen
class GroupWorkload:
    """What to generate: a few keys, producers and members, ``steps`` moves."""

    keys: int = 2
    producers: int = 1
    members: int = 2
    steps: int = 40
    p_fault: float = 0.05
    p_final: float = 0.7
    max_batch: int = 3


@attrs.define
class _Member:
    process: int
    owns: set[str] = attrs.field(factory=set)
    positions: dict[str, int] = attrs.field(factory=dict)
    pending: tuple[str, Any] | None = None  # (f, value) of the op in flight
    before: bool = False
    """Commits before processing (else after)."""
    unprocessed: list[tuple[str, list[list[Any]]]] = attrs.field(factory=list)
    done: list[tuple[str, list[list[Any]]]] = attrs.field(factory=list)


class _Sim:
    def __init__(self, rng: random.Random, w: GroupWorkload) -> None:
        self.rng = rng
        self.w = w
        self.keys = [f"t-{i}" for i in range(w.keys)]
        self.logs: dict[str, list[int]] = {k: [] for k in self.keys}
        self.store: dict[str, list[int]] = {k: [] for k in self.keys}  # committed values
        self.ops: list[Op] = []
        self.next_process = 100
        self.next_value = 0
        self.members = [self._member() for _ in range(w.members)]

    def _member(self) -> _Member:
        self.next_process += 1
        return _Member(self.next_process, before=self.rng.random() < 0.4)

    def emit(self, process: Any, type_: str, f: str, value: Any, key: str | None = None) -> None:
        n = len(self.ops)
        self.ops.append(Op(n, n * 1000, process, type_, f, key, value, None, n + 1))

    def send(self) -> None:
        key = self.rng.choice(self.keys)
        process = self.rng.randrange(self.w.producers)
        value = self.next_value
        self.next_value += 1
        self.emit(process, "invoke", "send", value, key)
        self.logs[key].append(value)
        self.emit(process, "ok", "send", {"offset": len(self.logs[key]) - 1, "value": value}, key)

    def complete(self, m: _Member) -> None:
        """Complete ``m``'s op in flight."""
        assert m.pending is not None
        f, value = m.pending
        m.pending = None
        roll = self.rng.random()
        if f == "fetch-offsets":
            answer = {k: (self.store[k][-1] if self.store[k] else None) for k in value}
            self.emit(m.process, "ok", f, answer)
            for k in value:
                if k in m.owns:
                    m.positions[k] = answer[k] or 0
            return
        if roll < 0.75:
            self.emit(m.process, "ok", f, value)
            for k, offset in value.items():
                self.store[k].append(offset)
        elif roll < 0.9:
            self.emit(m.process, "fail", f, {**value, "error": "ILLEGAL_GENERATION"})
            return
        else:
            self.emit(m.process, "info", f, value)
            if self.rng.random() < 0.5:  # it took effect (a timeout after the append)
                for k, offset in value.items():
                    self.store[k].append(offset)
            self._replace(m, kill=False)
            return
        if m.before and m.unprocessed:
            key, records = m.unprocessed.pop(0)
            self.emit(m.process, "ok", "process", records, key)
            m.done.append((key, records))

    def _replace(self, m: _Member, *, kill: bool) -> None:
        if kill:
            self.emit("nemesis", "info", "kill-consumer", {"node": "c", "process": m.process})
        fresh = self._member()
        self.members[self.members.index(m)] = fresh

    def reassign(self) -> None:
        key = self.rng.choice(self.keys)
        new = self.rng.choice([*self.members, None])
        for m in self.members:
            if (m is new) == (key in m.owns):
                continue
            if m.pending is not None:
                self.complete(m)
                if m not in self.members:
                    continue
            if m is new:
                m.owns.add(key)
            else:
                m.owns.discard(key)
                m.positions.pop(key, None)
            keys = sorted(m.owns) or None
            self.emit(m.process, "invoke", "assign", keys)
            self.emit(m.process, "ok", "assign", keys)

    def member_step(self, m: _Member) -> None:
        if m.pending is not None:
            self.complete(m)
            return
        unknown = sorted(k for k in m.owns if k not in m.positions)
        if unknown:
            m.pending = ("fetch-offsets", unknown)
            self.emit(m.process, "invoke", "fetch-offsets", unknown)
            return
        ready = [k for k in sorted(m.owns) if m.positions[k] < len(self.logs[k])]
        if not ready:
            return
        key = self.rng.choice(ready)
        start = m.positions[key]
        n = self.rng.randint(1, self.w.max_batch)
        records = [
            [o, self.logs[key][o]] for o in range(start, min(start + n, len(self.logs[key])))
        ]
        self.emit(m.process, "invoke", "poll", {}, key)
        self.emit(m.process, "ok", "poll", {"records": records, "hw": len(self.logs[key])}, key)
        m.positions[key] = records[-1][0] + 1
        if m.before:
            m.unprocessed.append((key, records))
        else:
            self.emit(m.process, "ok", "process", records, key)
            m.done.append((key, records))
        m.pending = ("commit", {key: m.positions[key]})
        self.emit(m.process, "invoke", "commit", {key: m.positions[key]})

    def fault(self) -> None:
        kind = self.rng.choice(["forget-commit", "process-again", "seek-back"])
        members = [m for m in self.members if m.pending is None]
        if kind == "forget-commit":
            key = self.rng.choice(self.keys)
            if self.store[key]:
                self.store[key].pop()
        elif kind == "process-again":
            done = [(m, d) for m in self.members for d in m.done]
            if done:
                m, (key, records) = self.rng.choice(done)
                self.emit(m.process, "ok", "process", records, key)
        elif members:
            m = self.rng.choice(members)
            owned = sorted(k for k in m.owns if m.positions.get(k))
            if owned:
                key = self.rng.choice(owned)
                m.positions[key] = 0
                self.emit(m.process, "invoke", "seek", {key: 0}, key)
                self.emit(m.process, "ok", "seek", {key: 0}, key)

    def run(self) -> list[Op]:
        for _ in range(self.w.steps):
            roll = self.rng.random()
            if roll < self.w.p_fault:
                self.fault()
            elif roll < 0.3:
                self.send()
            elif roll < 0.42:
                self.reassign()
            elif roll < 0.48:
                self._replace(self.rng.choice(self.members), kill=True)
            else:
                self.member_step(self.rng.choice(self.members))
        if self.rng.random() < self.w.p_final:
            answer = {k: (self.store[k][-1] if self.store[k] else None) for k in self.keys}
            self.emit("final", "invoke", "fetch-offsets", list(self.keys))
            self.emit("final", "ok", "fetch-offsets", answer)
        return self.ops


def generate_group(rng: random.Random, w: GroupWorkload | None = None) -> list[Op]:
    """One history (see the module docstring)."""
    return _Sim(rng, w or GroupWorkload()).run()
