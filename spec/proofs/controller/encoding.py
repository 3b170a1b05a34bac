"""The controller spec's state and actions, encoded once against ``spec.proofs.controller.ops``.

State (brokers ``1..N``, partitions ``0..P-1``), every integer unbounded:

- the store: ``sess[b]`` (a live session, i.e. ``/brokers/ids/b``), ``ctl`` (``/controller``
  or NONE), ``cepoch``/``cver`` (``/controller_epoch`` and its version), and per partition
  its state znode (leader, leader epoch, ISR as N Booleans);
- per broker: ``ce`` (the controller epoch it last applied), per partition the leader epoch
  and leader it applied, and its controller role: ``act`` (its controller epoch, 0 when not
  controller), ``ver`` (the version its writes expect) and its context (one partition state
  per partition; junk while ``act`` is 0, never read then);
- the requests sent, as sets keyed by their fields: ``um`` (UpdateMetadata: controller
  epoch), ``lai[p]`` (LeaderAndIsr: controller epoch, leader epoch, leader), ``sr[p][b]``
  (StopReplica to ``b``: controller epoch, leader epoch);
- the ghost of successful writes, ``wrote[b]`` (the controller epochs in which ``b``'s
  writes landed), and the session expiry count;
- ``hist[p]``, a history variable of the proof only (not in the spec): the leader each
  write gave leader epoch ``e`` of partition ``p``. It is written by writes and read by
  no guard; the invariants use it to say that every LeaderAndIsr and every broker agrees
  with the one write that created its leader epoch.

The explicit checker's bounds (controller and leader epochs, the expiry budget) are dropped:
they only disable actions, so what is proved without them holds for every value of them.
Requests a broker applies are symbolic keys ``(ce, le, leader)`` of a set: every request
ever sent is covered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from spec.controller import (
    BUGS,
    LEADER_AND_ISR,
    MODES,
    NIL,
    NO_EPOCH,
    NONE,
    STOP_REPLICA,
    UPDATE_METADATA,
    ZOOKEEPER_ONLY_BUGS,
    Broker,
    Controller,
    LocalReplica,
    Params,
    PartitionState,
    Request,
    State,
    Store,
)
from spec.proofs.controller.ops import JUNK, PyOps, Z3Ops, key_space

BIG = 10**6
"""Spec bounds large enough never to disable a step the encoding takes."""


class EncodingError(ValueError):
    """A configuration or a state the encoding does not represent (with the reason)."""


@attrs.frozen
class Config:
    brokers: int = 2
    partitions: int = 1
    mode: str = "zookeeper"
    bugs: frozenset[str] = frozenset()
    window: int = 4
    """The finite window searched for counterexamples: epochs 0..window."""

    def __attrs_post_init__(self) -> None:
        problems = []
        if not 2 <= self.brokers <= 3:
            problems.append(f"brokers must be 2 or 3 for the proofs, got {self.brokers}")
        if not 1 <= self.partitions <= 2:
            problems.append(f"partitions must be 1 or 2, got {self.partitions}")
        if self.mode not in MODES:
            problems.append(f"mode {self.mode!r} is not one of {', '.join(MODES)}")
        unknown = sorted(set(self.bugs) - set(BUGS))
        if unknown:
            problems.append(f"unknown bug flag(s) {unknown}")
        if self.mode == "kraft" and self.bugs & ZOOKEEPER_ONLY_BUGS:
            problems.append("these bugs exist only in --mode zookeeper")
        if self.window < 3:
            problems.append(f"the window must be >= 3, got {self.window}")
        if problems:
            raise EncodingError("; ".join(problems))

    @classmethod
    def of(cls, params: Params) -> Config:
        return cls(params.brokers, params.partitions, params.mode, params.bugs)

    def params(self) -> Params:
        """The spec parameters concrete states are replayed with: bounds never reached."""
        return Params(
            brokers=self.brokers,
            partitions=self.partitions,
            max_controller_epoch=BIG,
            max_leader_epoch=BIG,
            max_expiries=None,
            mode=self.mode,
            bugs=self.bugs,
        )

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(range(1, self.brokers + 1))

    def describe(self) -> str:
        bugs = f", bugs={sorted(self.bugs)}" if self.bugs else ""
        return (
            f"controller ({self.mode}), {self.brokers} brokers, {self.partitions} "
            f"partition{'s' if self.partitions > 1 else ''}, controller and leader epochs "
            f"unbounded, any number of session expiries and requests{bugs}"
        )


# --- the state -----------------------------------------------------------------------------


@attrs.frozen(eq=False)
class SymPart:
    leader: Any
    le: Any
    isr: tuple[Any, ...]


@attrs.frozen(eq=False)
class SymRep:
    le: Any
    leader: Any


@attrs.frozen(eq=False)
class SymBroker:
    ce: Any
    act: Any
    ver: Any
    reps: tuple[SymRep, ...]
    ctx: tuple[SymPart, ...]


@attrs.frozen(eq=False)
class SymState:
    sess: tuple[Any, ...]
    ctl: Any
    cepoch: Any
    cver: Any
    parts: tuple[SymPart, ...]
    brokers: tuple[SymBroker, ...]
    um: Any
    lai: tuple[Any, ...]
    sr: tuple[tuple[Any, ...], ...]
    """``sr[p][b - 1]``: StopReplica requests for partition ``p`` addressed to ``b``."""
    wrote: tuple[Any, ...]
    hist: tuple[Any, ...]
    expiries: Any

    def broker(self, b: int) -> SymBroker:
        return self.brokers[b - 1]


def _replace(items: tuple[Any, ...], i: int, value: Any) -> tuple[Any, ...]:
    out = list(items)
    out[i] = value
    return tuple(out)


@attrs.frozen
class ActionEnc:
    """One instance of a spec action: its concrete broker/partition arguments, and for an
    action taking a request, the request's kind and partition (its key is symbolic)."""

    name: str
    args: tuple[tuple[str, int], ...]
    kind: str | None = None
    partition: int = NONE

    @property
    def arity(self) -> int:
        """How many symbolic key components the request argument has."""
        return {None: 0, UPDATE_METADATA: 1, STOP_REPLICA: 2, LEADER_AND_ISR: 3}[self.kind]

    def arg(self, name: str) -> int:
        return dict(self.args)[name]

    def label(self) -> str:
        parts = [f"{k}={v}" for k, v in self.args]
        if self.kind is not None:
            parts.append(f"m={self.kind}" + (f" p{self.partition}" if self.partition >= 0 else ""))
        return f"{self.name}({', '.join(parts)})"


def request_of(action: ActionEnc, key: Sequence[int]) -> Request:
    """The spec's request an instance's concrete key stands for."""
    b = action.arg("b")
    if action.kind == UPDATE_METADATA:
        return Request(UPDATE_METADATA, key[0])
    if action.kind == LEADER_AND_ISR:
        return Request(LEADER_AND_ISR, key[0], action.partition, key[2], key[1])
    return Request(STOP_REPLICA, key[0], action.partition, NONE, key[1], b)


def key_of(m: Request) -> tuple[int, ...]:
    if m.kind == UPDATE_METADATA:
        return (m.controller_epoch,)
    if m.kind == LEADER_AND_ISR:
        return (m.controller_epoch, m.leader_epoch, m.leader)
    return (m.controller_epoch, m.leader_epoch)


class Encoding:
    """The encoding of one configuration over one backend."""

    def __init__(self, config: Config, ops: PyOps | Z3Ops) -> None:
        self.c = config
        self.ops = ops
        self.ids = config.ids
        self.parts = tuple(range(config.partitions))
        self.bugs = config.bugs
        w = config.window
        self.ce_values = tuple(range(0, w + 1))
        self.le_values = tuple(range(-1, w + 1))
        self.leader_values = (NONE, *self.ids)
        self.um_space = key_space(self.ce_values)
        self.lai_space = key_space(self.ce_values, self.le_values, self.leader_values)
        self.sr_space = key_space(self.ce_values, self.le_values)
        self.wrote_space = key_space(self.ce_values)

    # --- building states -------------------------------------------------------------------

    def fresh(self, prefix: str) -> SymState:
        """A state of fresh z3 constants."""
        ops = self.ops
        assert isinstance(ops, Z3Ops)
        n = len(self.ids)

        def part(name: str) -> SymPart:
            return SymPart(
                ops.int_const(f"{name}.leader"),
                ops.int_const(f"{name}.le"),
                tuple(ops.bool_const(f"{name}.isr{b}") for b in self.ids),
            )

        brokers = []
        for b in self.ids:
            name = f"{prefix}b{b}"
            brokers.append(
                SymBroker(
                    ops.int_const(f"{name}.ce"),
                    ops.int_const(f"{name}.act"),
                    ops.int_const(f"{name}.ver"),
                    tuple(
                        SymRep(ops.int_const(f"{name}.p{p}.le"), ops.int_const(f"{name}.p{p}.l"))
                        for p in self.parts
                    ),
                    tuple(part(f"{name}.ctx{p}") for p in self.parts),
                )
            )
        return SymState(
            sess=tuple(ops.bool_const(f"{prefix}sess{b}") for b in self.ids),
            ctl=ops.int_const(f"{prefix}ctl"),
            cepoch=ops.int_const(f"{prefix}cepoch"),
            cver=ops.int_const(f"{prefix}cver"),
            parts=tuple(part(f"{prefix}part{p}") for p in self.parts),
            brokers=tuple(brokers),
            um=ops.set_const(f"{prefix}um", 1, self.um_space),
            lai=tuple(ops.set_const(f"{prefix}lai{p}", 3, self.lai_space) for p in self.parts),
            sr=tuple(
                tuple(ops.set_const(f"{prefix}sr{p}.{b}", 2, self.sr_space) for b in range(n))
                for p in self.parts
            ),
            wrote=tuple(ops.set_const(f"{prefix}wrote{b}", 1, self.wrote_space) for b in self.ids),
            hist=tuple(ops.map_const(f"{prefix}hist{p}", self.le_values) for p in self.parts),
            expiries=ops.int_const(f"{prefix}expiries"),
        )

    def from_state(self, s: State, hist: Sequence[dict[int, int]] | None = None) -> SymState:
        """A spec state as a concrete encoded state. ``hist`` (the proof's history) is
        taken from the requests and the store when not given; an inactive broker's
        context is junk."""
        ops = self.ops
        if hist is None:
            hist = self.history_of(s)

        def part(ps: PartitionState) -> SymPart:
            return SymPart(
                ops.lit(ps.leader),
                ops.lit(ps.leader_epoch),
                tuple(ops.lit(b in ps.isr) for b in self.ids),
            )

        junk = PartitionState(JUNK, JUNK, frozenset())
        brokers = []
        for broker in s.brokers:
            ctx = broker.context if broker.active else tuple(junk for _ in self.parts)
            brokers.append(
                SymBroker(
                    ops.lit(broker.controller_epoch),
                    ops.lit(broker.active_epoch),
                    ops.lit(broker.epoch_version),
                    tuple(
                        SymRep(ops.lit(r.leader_epoch), ops.lit(r.leader)) for r in broker.replicas
                    ),
                    tuple(part(ps) for ps in ctx),
                )
            )
        by_kind: dict[str, list[Request]] = {}
        for m in s.requests:
            by_kind.setdefault(m.kind, []).append(m)

        def members(kind: str, **match: int) -> frozenset[tuple[int, ...]]:
            return frozenset(
                key_of(m)
                for m in by_kind.get(kind, [])
                if all(getattr(m, k) == v for k, v in match.items())
            )

        store = s.store
        return SymState(
            sess=tuple(ops.lit(b in store.sessions) for b in self.ids),
            ctl=ops.lit(store.controller),
            cepoch=ops.lit(store.controller_epoch),
            cver=ops.lit(store.epoch_version),
            parts=tuple(part(ps) for ps in store.partitions),
            brokers=tuple(brokers),
            um=self._set(members(UPDATE_METADATA), 1, self.um_space),
            lai=tuple(
                self._set(members(LEADER_AND_ISR, partition=p), 3, self.lai_space)
                for p in self.parts
            ),
            sr=tuple(
                tuple(
                    self._set(members(STOP_REPLICA, partition=p, broker=b), 2, self.sr_space)
                    for b in self.ids
                )
                for p in self.parts
            ),
            wrote=tuple(
                self._set(frozenset((e,) for e, w in s.writes if w == b), 1, self.wrote_space)
                for b in self.ids
            ),
            hist=tuple(self._map(h) for h in hist),
            expiries=ops.lit(s.expiries),
        )

    def _set(self, members: frozenset[tuple[int, ...]], arity: int, space: Any) -> Any:
        ops = self.ops
        if isinstance(ops, Z3Ops):
            return ops.set_value(members, arity, space)
        return members

    def _map(self, m: dict[int, int]) -> Any:
        ops = self.ops
        if isinstance(ops, Z3Ops):
            return ops.map_value(m, self.le_values)
        return dict(m)

    def history_of(self, s: State) -> list[dict[int, int]]:
        """The leader each leader epoch was written with, as the requests and the store
        tell it (the proof's history variable of a reachable state)."""
        hist: list[dict[int, int]] = [{} for _ in self.parts]
        for m in sorted(s.requests, key=Request.key):
            if m.kind == LEADER_AND_ISR:
                hist[m.partition][m.leader_epoch] = m.leader
        for p, ps in enumerate(s.store.partitions):
            if ps.leader_epoch != NIL:
                hist[p][ps.leader_epoch] = ps.leader
        return hist

    def to_state(self, st: SymState) -> State:
        """The spec state of a concrete (Python-valued) encoded state."""

        def part(sp: SymPart) -> PartitionState:
            isr = frozenset(b for b, inside in zip(self.ids, sp.isr, strict=True) if inside)
            return PartitionState(int(sp.leader), int(sp.le), isr)

        brokers = []
        for sb in st.brokers:
            reps = tuple(LocalReplica(int(r.le), int(r.leader)) for r in sb.reps)
            if int(sb.act) == NO_EPOCH:
                brokers.append(Broker(int(sb.ce), reps, NO_EPOCH, int(sb.ver), ()))
            else:
                brokers.append(
                    Broker(
                        int(sb.ce),
                        reps,
                        int(sb.act),
                        int(sb.ver),
                        tuple(part(c) for c in sb.ctx),
                    )
                )
        requests: set[Request] = set()
        for (ce,) in st.um:
            requests.add(Request(UPDATE_METADATA, ce))
        for p in self.parts:
            for ce, le, leader in st.lai[p]:
                requests.add(Request(LEADER_AND_ISR, ce, p, leader, le))
            for b in self.ids:
                for ce, le in st.sr[p][b - 1]:
                    requests.add(Request(STOP_REPLICA, ce, p, NONE, le, b))
        writes = frozenset((e, b) for b in self.ids for (e,) in st.wrote[b - 1])
        sessions = frozenset(b for b, live in zip(self.ids, st.sess, strict=True) if live)
        store = Store(
            sessions,
            int(st.ctl),
            int(st.cepoch),
            int(st.cver),
            tuple(part(sp) for sp in st.parts),
        )
        return State(store, tuple(brokers), frozenset(requests), writes, int(st.expiries))

    def init(self) -> SymState:
        return self.from_state(next(iter(Controller(self.c.params()).init())))

    def window_bounds(self, st: SymState, key: Sequence[Any] = ()) -> list[Any]:
        """Keep a pre-state inside the window so that its successor is too (every epoch an
        action computes is one more than one it reads)."""
        top = self.c.window - 1
        out = [st.cepoch >= 0, st.cepoch <= top, st.cver >= 0, st.cver <= top]
        for ps in st.parts:
            out += [ps.le >= NIL, ps.le <= top]
        for sb in st.brokers:
            out += [sb.ce >= 0, sb.ce <= top + 1, sb.act >= 0, sb.act <= top]
            out += [sb.ver >= 0, sb.ver <= top]
            for r in sb.reps:
                out += [r.le >= NIL, r.le <= top + 1]
            for c in sb.ctx:
                out += [c.le >= NIL, c.le <= top]
        return out

    # --- the actions -----------------------------------------------------------------------

    def actions(self) -> list[ActionEnc]:
        out: list[ActionEnc] = []
        for name in ("session_expires", "reconnect", "elect_controller", "resign"):
            out += [ActionEnc(name, (("b", b),)) for b in self.ids]
        for b in self.ids:
            for p in self.parts:
                out += [ActionEnc("elect_leader", (("b", b), ("p", p), ("n", n))) for n in self.ids]
        for b in self.ids:
            for p in self.parts:
                out += [ActionEnc("shrink_isr", (("b", b), ("p", p), ("r", r))) for r in self.ids]
        if not self.bugs & {"unconditional_write", "partition_version_only"}:
            out += [
                ActionEnc("write_refused", (("b", b), ("p", p)))
                for b in self.ids
                for p in self.parts
            ]
        if self.bugs & {"partition_version_only", "epoch_not_persisted"}:
            out += [
                ActionEnc("partition_version_conflict", (("b", b), ("p", p)))
                for b in self.ids
                for p in self.parts
            ]
        for b in self.ids:
            for p in self.parts:
                out.append(ActionEnc("apply_leader_and_isr", (("b", b),), LEADER_AND_ISR, p))
        for b in self.ids:
            for p in self.parts:
                out.append(ActionEnc("apply_stop_replica", (("b", b),), STOP_REPLICA, p))
        out += [ActionEnc("apply_update_metadata", (("b", b),), UPDATE_METADATA) for b in self.ids]
        if "accept_stale_controller_epoch" not in self.bugs:
            for b in self.ids:
                for p in self.parts:
                    out.append(ActionEnc("reject_stale_request", (("b", b),), LEADER_AND_ISR, p))
                    out.append(ActionEnc("reject_stale_request", (("b", b),), STOP_REPLICA, p))
                out.append(ActionEnc("reject_stale_request", (("b", b),), UPDATE_METADATA))
        return out

    def step(self, st: SymState, a: ActionEnc, key: Sequence[Any] = ()) -> tuple[Any, SymState]:
        """(guard, successor) of instance ``a`` with request key ``key``."""
        fn = getattr(self, "_" + a.name)
        return fn(st, a, tuple(key))

    def _live(self, st: SymState, x: Any) -> Any:
        ops = self.ops
        return ops.Or(*[ops.And(x == b, st.sess[b - 1]) for b in self.ids])

    def _session_expires(self, st: SymState, a: ActionEnc, key: tuple[Any, ...]) -> Any:
        ops = self.ops
        b = a.arg("b")
        post = attrs.evolve(
            st,
            sess=_replace(st.sess, b - 1, ops.lit(False)),
            ctl=ops.If(st.ctl == b, ops.lit(NONE), st.ctl),
            expiries=st.expiries + 1,
        )
        return st.sess[b - 1], post

    def _reconnect(self, st: SymState, a: ActionEnc, key: tuple[Any, ...]) -> Any:
        ops = self.ops
        b = a.arg("b")
        post = attrs.evolve(st, sess=_replace(st.sess, b - 1, ops.lit(True)))
        return ops.Not(st.sess[b - 1]), post

    def _elect_controller(self, st: SymState, a: ActionEnc, key: tuple[Any, ...]) -> Any:
        ops = self.ops
        b = a.arg("b")
        sb = st.broker(b)
        if "epoch_not_persisted" in self.bugs:
            epoch, version = ops.lit(1), ops.lit(1)
        else:
            epoch, version = st.cepoch + 1, st.cver + 1
        guard = ops.And(st.sess[b - 1], st.ctl == NONE, sb.act == NO_EPOCH)
        lai = tuple(
            ops.If(ps.le != NIL, ops.add(st.lai[p], (epoch, ps.le, ps.leader)), st.lai[p])
            for p, ps in enumerate(st.parts)
        )
        new_broker = SymBroker(sb.ce, epoch, version, sb.reps, st.parts)
        post = attrs.evolve(
            st,
            ctl=ops.lit(b),
            cepoch=epoch,
            cver=version,
            brokers=_replace(st.brokers, b - 1, new_broker),
            um=ops.add(st.um, (epoch,)),
            lai=lai,
        )
        return guard, post

    def _resigned(self, st: SymState, b: int) -> SymState:
        ops = self.ops
        sb = st.broker(b)
        new = SymBroker(sb.ce, ops.lit(NO_EPOCH), ops.lit(0), sb.reps, sb.ctx)
        return attrs.evolve(st, brokers=_replace(st.brokers, b - 1, new))

    def _resign(self, st: SymState, a: ActionEnc, key: tuple[Any, ...]) -> Any:
        ops = self.ops
        b = a.arg("b")
        guard = ops.And(st.broker(b).act != NO_EPOCH, st.ctl != b)
        return guard, self._resigned(st, b)

    # decisions and writes

    def decisions(self, st: SymState, b: int, p: int) -> dict[str, Any]:
        """Which decisions controller ``b``'s context allows for partition ``p``, as in
        ``Controller.decisions``: ``elect[n]``/``shrink[r]`` (enabled?), ``elect_new[n]``/
        ``shrink_new[r]`` (the new partition state) and ``any``."""
        ops = self.ops
        ctx = st.broker(b).ctx[p]
        epoch = ctx.le + 1
        live_isr = tuple(ops.And(ctx.isr[i], st.sess[i]) for i in range(len(self.ids)))
        any_live = ops.Or(*live_isr)
        leader_gone = ops.Or(ctx.leader == NONE, ops.Not(self._live(st, ctx.leader)))
        size = ops.count(list(ctx.isr))
        no_election = ops.Not(ops.And(leader_gone, any_live))
        elect = {n: ops.And(leader_gone, live_isr[n - 1]) for n in self.ids}
        elect_new = {n: SymPart(ops.lit(n), epoch, live_isr) for n in self.ids}
        shrink = {}
        shrink_new = {}
        for r in self.ids:
            is_leader = ctx.leader == r
            shrink[r] = ops.And(
                ctx.isr[r - 1],
                ops.Not(st.sess[r - 1]),
                no_election,
                ops.Or(is_leader, size > 1),
            )
            without = tuple(
                ctx.isr[i] if i != r - 1 else ops.lit(False) for i in range(len(self.ids))
            )
            last = size == 1
            isr = tuple(
                ops.If(is_leader, ops.If(last, ctx.isr[i], without[i]), without[i])
                for i in range(len(self.ids))
            )
            shrink_new[r] = SymPart(ops.If(is_leader, ops.lit(NONE), ctx.leader), epoch, isr)
        any_decision = ops.Or(ops.And(leader_gone, any_live), *shrink.values())
        return {
            "elect": elect,
            "elect_new": elect_new,
            "shrink": shrink,
            "shrink_new": shrink_new,
            "any": any_decision,
        }

    def outcome(self, st: SymState, b: int, p: int) -> tuple[Any, Any, Any]:
        """(ok, moved, conflict), as in ``Controller.write_outcome``."""
        ops = self.ops
        if "unconditional_write" in self.bugs:
            return ops.lit(True), ops.lit(False), ops.lit(False)
        sb = st.broker(b)
        if "partition_version_only" in self.bugs:
            moved = ops.lit(False)
        else:
            moved = st.cver != sb.ver
        conflict = ops.And(ops.Not(moved), st.parts[p].le != sb.ctx[p].le)
        return ops.And(ops.Not(moved), ops.Not(conflict)), moved, conflict

    def _write(self, st: SymState, b: int, p: int, new: SymPart, stopped: int) -> SymState:
        ops = self.ops
        sb = st.broker(b)
        ce = sb.act
        sr = st.sr
        if stopped != NONE:
            row = _replace(sr[p], stopped - 1, ops.add(sr[p][stopped - 1], (ce, new.le)))
            sr = _replace(sr, p, row)
        new_broker = SymBroker(sb.ce, sb.act, sb.ver, sb.reps, _replace(sb.ctx, p, new))
        return attrs.evolve(
            st,
            parts=_replace(st.parts, p, new),
            brokers=_replace(st.brokers, b - 1, new_broker),
            lai=_replace(st.lai, p, ops.add(st.lai[p], (ce, new.le, new.leader))),
            sr=sr,
            wrote=_replace(st.wrote, b - 1, ops.add(st.wrote[b - 1], (st.cepoch,))),
            hist=_replace(st.hist, p, ops.put(st.hist[p], new.le, new.leader)),
        )

    def _elect_leader(self, st: SymState, a: ActionEnc, key: tuple[Any, ...]) -> Any:
        ops = self.ops
        b, p, n = a.arg("b"), a.arg("p"), a.arg("n")
        d = self.decisions(st, b, p)
        ok, _, _ = self.outcome(st, b, p)
        guard = ops.And(st.broker(b).act != NO_EPOCH, d["elect"][n], ok)
        return guard, self._write(st, b, p, d["elect_new"][n], NONE)

    def _shrink_isr(self, st: SymState, a: ActionEnc, key: tuple[Any, ...]) -> Any:
        ops = self.ops
        b, p, r = a.arg("b"), a.arg("p"), a.arg("r")
        d = self.decisions(st, b, p)
        ok, _, _ = self.outcome(st, b, p)
        guard = ops.And(st.broker(b).act != NO_EPOCH, d["shrink"][r], ok)
        return guard, self._write(st, b, p, d["shrink_new"][r], r)

    def _write_refused(self, st: SymState, a: ActionEnc, key: tuple[Any, ...]) -> Any:
        ops = self.ops
        b, p = a.arg("b"), a.arg("p")
        _, moved, _ = self.outcome(st, b, p)
        guard = ops.And(st.broker(b).act != NO_EPOCH, self.decisions(st, b, p)["any"], moved)
        return guard, self._resigned(st, b)

    def _partition_version_conflict(self, st: SymState, a: ActionEnc, key: tuple[Any, ...]) -> Any:
        ops = self.ops
        b, p = a.arg("b"), a.arg("p")
        sb = st.broker(b)
        _, _, conflict = self.outcome(st, b, p)
        guard = ops.And(sb.act != NO_EPOCH, self.decisions(st, b, p)["any"], conflict)
        new_broker = SymBroker(sb.ce, sb.act, sb.ver, sb.reps, _replace(sb.ctx, p, st.parts[p]))
        return guard, attrs.evolve(st, brokers=_replace(st.brokers, b - 1, new_broker))

    # brokers

    def accepts(self, sb: SymBroker, ce: Any) -> Any:
        if "accept_stale_controller_epoch" in self.bugs:
            return self.ops.lit(True)
        return ce >= sb.ce

    def _with_broker(self, st: SymState, b: int, ce: Any, reps: tuple[SymRep, ...]) -> SymState:
        sb = st.broker(b)
        new = SymBroker(ce, sb.act, sb.ver, reps, sb.ctx)
        return attrs.evolve(st, brokers=_replace(st.brokers, b - 1, new))

    def _apply_leader_and_isr(self, st: SymState, a: ActionEnc, key: tuple[Any, ...]) -> Any:
        ops = self.ops
        b, p = a.arg("b"), a.partition
        ce, le, leader = key
        sb = st.broker(b)
        rep = sb.reps[p]
        newer = le > rep.le
        guard = ops.And(
            ops.member(st.lai[p], key), self.accepts(sb, ce), ops.Or(ce != sb.ce, newer)
        )
        new_rep = SymRep(ops.If(newer, le, rep.le), ops.If(newer, leader, rep.leader))
        return guard, self._with_broker(st, b, ce, _replace(sb.reps, p, new_rep))

    def _apply_stop_replica(self, st: SymState, a: ActionEnc, key: tuple[Any, ...]) -> Any:
        ops = self.ops
        b, p = a.arg("b"), a.partition
        ce, le = key
        sb = st.broker(b)
        rep = sb.reps[p]
        newer = le > rep.le
        changed = ops.Or(ce != sb.ce, ops.And(newer, rep.leader != NONE))
        guard = ops.And(ops.member(st.sr[p][b - 1], key), self.accepts(sb, ce), changed)
        new_rep = SymRep(rep.le, ops.If(newer, ops.lit(NONE), rep.leader))
        return guard, self._with_broker(st, b, ce, _replace(sb.reps, p, new_rep))

    def _apply_update_metadata(self, st: SymState, a: ActionEnc, key: tuple[Any, ...]) -> Any:
        ops = self.ops
        b = a.arg("b")
        (ce,) = key
        sb = st.broker(b)
        guard = ops.And(ops.member(st.um, key), self.accepts(sb, ce), ce != sb.ce)
        return guard, self._with_broker(st, b, ce, sb.reps)

    def _reject_stale_request(self, st: SymState, a: ActionEnc, key: tuple[Any, ...]) -> Any:
        ops = self.ops
        b = a.arg("b")
        sb = st.broker(b)
        if a.kind == UPDATE_METADATA:
            sent = ops.member(st.um, key)
        elif a.kind == LEADER_AND_ISR:
            sent = ops.member(st.lai[a.partition], key)
        else:
            sent = ops.member(st.sr[a.partition][b - 1], key)
        return ops.And(sent, ops.Not(self.accepts(sb, key[0]))), st

    # --- spec correspondence ----------------------------------------------------------------

    def spec_args(self, a: ActionEnc, key: Sequence[int]) -> tuple[Any, ...]:
        """The spec action's arguments for this instance and concrete key."""
        values = tuple(v for _, v in a.args)
        if a.kind is None:
            return values
        return (a.arg("b"), request_of(a, key))

    def instances_of(self, name: str, args: tuple[Any, ...]) -> tuple[ActionEnc, tuple[int, ...]]:
        """The instance and key standing for the spec action ``name`` with ``args``."""
        for a in self.actions():
            if a.name != name:
                continue
            if a.kind is None:
                if tuple(v for _, v in a.args) == args:
                    return a, ()
                continue
            b, m = args
            if a.arg("b") != b or a.kind != m.kind:
                continue
            if m.kind != UPDATE_METADATA and a.partition != m.partition:
                continue
            if m.kind == STOP_REPLICA and m.broker != b:
                continue
            return a, key_of(m)
        raise EncodingError(f"no encoded instance of {name}{args}")
