"""The offsets spec (``spec.offsets.commits``) as z3 terms.

State, for consumer slots ``1..N``, member ids ``(slot, k)`` with ``k <= max_member_ids``
(numbered ``(slot - 1) * K + k``; 0 is NOBODY) and offsets ``0..records-1``:

- per consumer: its state (0 unjoined, 1 joining, 2 awaiting-sync, 3 stable), member id,
  generation (an unbounded integer), ``owns``, ``waiting``, and position / pending / acked
  each as (present, integer);
- ``issued``: member ids handed out per consumer (the spec's ``ids_issued``);
- the group at its coordinator: state (0 Empty, 1 PreparingRebalance, 2 CompletingRebalance,
  3 Stable, 4 Dead), generation, membership and joined bits per member id, owner, coordinator
  number (unbounded), ``loading``, the offsets cache;
- ``__consumer_offsets``: committed offset, generation, members, owner;
- ``processed`` (a bit per offset) and ``commit_generation`` (history variables);
- the OffsetCommits in the network as a *predicate* over commits (slot, member id,
  generation, coordinator, offset): the set is unbounded (a consumer that rejoins while its
  commit is in flight, or crashes, leaves it there under its old member id and generation,
  and sends another in its next generation), so it is not a fixed number of slots. An
  invariant about in-flight commits is universal ("every commit in flight ..."); its
  obligations are discharged for an arbitrary commit (a fresh z3 witness), which proves it
  for every one.

The fault budgets (expiries, crashes, coordinator moves) and ``max_generation`` are dropped:
a budget only disables actions, so what holds without it holds with it; the proof covers any
number of faults and rebalances. ``max_member_ids`` is kept: it is a guard of ``join_group``
(ids are a finite set). One encoding serves both uses: with fresh z3 constants it is proved;
with a concrete state's values substituted and simplified, it is compared with the spec's
own successors (``cross_check``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import attrs
import z3

from spec.group.classic import NOBODY, MemberId
from spec.group.lifecycle import (
    AWAITING_SYNC,
    COMPLETING,
    DEAD,
    EMPTY,
    JOINING,
    MEMBER_STABLE,
    PREPARING,
    STABLE,
    UNJOINED,
)
from spec.offsets.commits import Commit, Consumer, Group, Offsets, State, Stored
from spec.offsets.params import Params

MEMBER_STATES = (UNJOINED, JOINING, AWAITING_SYNC, MEMBER_STABLE)
GROUP_STATES = (EMPTY, PREPARING, COMPLETING, STABLE, DEAD)
C_UNJOINED, C_JOINING, C_AWAITING, C_STABLE = range(4)
G_EMPTY, G_PREPARING, G_COMPLETING, G_STABLE, G_DEAD = range(5)

PER_SLOT = ("join_group", "fetch_offset", "poll", "process", "send_commit", "handle_commit")
PER_MEMBER = ("sync_group", "expire")
FAULT_PER_SLOT = ("crash",)
GLOBAL = ("complete_join", "coordinator_moves", "load_offsets")
ACTIONS = (
    "join_group",
    "complete_join",
    "sync_group",
    "fetch_offset",
    "poll",
    "process",
    "send_commit",
    "handle_commit",
    "expire",
    "crash",
    "coordinator_moves",
    "load_offsets",
)

BIG = 10**6
Vec = tuple[Any, ...]


@attrs.frozen
class CSym:
    """An OffsetCommit as z3 terms."""

    slot: Any
    mid: Any
    gen: Any
    coord: Any
    off: Any

    def terms(self) -> tuple[Any, ...]:
        return (self.slot, self.mid, self.gen, self.coord, self.off)


Flight = Callable[[CSym], Any]


@attrs.frozen
class Sym:
    # consumers
    cst: Vec
    cmid: Vec
    cgen: Vec
    owns: Vec
    pos_h: Vec
    pos: Vec
    pen_h: Vec
    pen: Vec
    ack_h: Vec
    ack: Vec
    waiting: Vec
    issued: Vec
    # the group at its coordinator
    gst: Any
    ggen: Any
    gmem: Vec
    gjoin: Vec
    gowner: Any
    gcoord: Any
    loading: Any
    cache_h: Any
    cache: Any
    # __consumer_offsets
    scom_h: Any
    scom: Any
    sgen: Any
    smem: Vec
    sowner: Any
    # history variables
    proc: Vec
    cgen_hist: Any
    inflight: Flight


def _set(vec: Vec, i: int, value: Any) -> Vec:
    return tuple(value if j == i else x for j, x in enumerate(vec))


def _any(bits: Vec) -> Any:
    return z3.Or(*bits) if bits else z3.BoolVal(False)


def _all(bits: Vec) -> Any:
    return z3.And(*bits) if bits else z3.BoolVal(True)


def covered(has: Any, value: Any) -> Any:
    """An offset as a count of records covered (no offset covers none): ``_covered``."""
    return z3.If(has, value, 0)


class Encoding:
    def __init__(self, params: Params) -> None:
        self.p = params
        self.n = params.members
        self.k = params.max_member_ids
        self.r = params.records
        self.bugs = params.bugs
        self.after = params.commit == "after-process"
        self.ids = tuple(range(1, self.n * self.k + 1))
        """Every member id's number."""
        self.spec = Offsets(
            attrs.evolve(
                params, max_generation=BIG, max_expiries=BIG, max_crashes=BIG, max_failovers=BIG
            )
        )
        """The spec without its budgets: the encoding drops them."""

    # --- member ids ------------------------------------------------------------------------

    def mid_number(self, mid: MemberId) -> int:
        return 0 if mid == NOBODY else (mid[0] - 1) * self.k + mid[1]

    def mid_of(self, number: int) -> MemberId:
        return NOBODY if number == 0 else ((number - 1) // self.k + 1, (number - 1) % self.k + 1)

    def ids_of(self, slot: int) -> tuple[int, ...]:
        """The numbers of consumer ``slot``'s member ids (1-based slot)."""
        return tuple((slot - 1) * self.k + j for j in range(1, self.k + 1))

    def member(self, bits: Vec, mid: Any) -> Any:
        """``mid in members`` for a member id term."""
        return _any(tuple(z3.And(mid == i, bits[i - 1]) for i in self.ids))

    def select(self, vec: Vec, slot: Any) -> Any:
        """``vec[slot - 1]`` for a slot term."""
        out = vec[-1]
        for i in range(self.n - 2, -1, -1):
            out = z3.If(slot == i + 1, vec[i], out)
        return out

    def processed(self, s: Sym, o: Any) -> Any:
        return _any(tuple(z3.And(o == j, s.proc[j]) for j in range(self.r)))

    # --- states ----------------------------------------------------------------------------

    def fresh(self, prefix: str) -> Sym:
        n = range(self.n)

        def ints(name: str) -> Vec:
            return tuple(z3.Int(f"{prefix}{name}_{c + 1}") for c in n)

        def bools(name: str) -> Vec:
            return tuple(z3.Bool(f"{prefix}{name}_{c + 1}") for c in n)

        def id_bits(name: str) -> Vec:
            return tuple(z3.Bool(f"{prefix}{name}_{i}") for i in self.ids)

        flight = z3.Function(f"{prefix}inflight", *([z3.IntSort()] * 5), z3.BoolSort())
        return Sym(
            cst=ints("cst"),
            cmid=ints("cmid"),
            cgen=ints("cgen"),
            owns=bools("owns"),
            pos_h=bools("pos_h"),
            pos=ints("pos"),
            pen_h=bools("pen_h"),
            pen=ints("pen"),
            ack_h=bools("ack_h"),
            ack=ints("ack"),
            waiting=bools("waiting"),
            issued=ints("issued"),
            gst=z3.Int(f"{prefix}gst"),
            ggen=z3.Int(f"{prefix}ggen"),
            gmem=id_bits("gmem"),
            gjoin=id_bits("gjoin"),
            gowner=z3.Int(f"{prefix}gowner"),
            gcoord=z3.Int(f"{prefix}gcoord"),
            loading=z3.Bool(f"{prefix}loading"),
            cache_h=z3.Bool(f"{prefix}cache_h"),
            cache=z3.Int(f"{prefix}cache"),
            scom_h=z3.Bool(f"{prefix}scom_h"),
            scom=z3.Int(f"{prefix}scom"),
            sgen=z3.Int(f"{prefix}sgen"),
            smem=id_bits("smem"),
            sowner=z3.Int(f"{prefix}sowner"),
            proc=tuple(z3.Bool(f"{prefix}proc_{o}") for o in range(self.r)),
            cgen_hist=z3.Int(f"{prefix}commit_generation"),
            inflight=lambda q: flight(*q.terms()),
        )

    def fresh_commit(self, prefix: str, slot: int | None = None) -> CSym:
        return CSym(
            z3.IntVal(slot) if slot is not None else z3.Int(f"{prefix}slot"),
            z3.Int(f"{prefix}mid"),
            z3.Int(f"{prefix}gen"),
            z3.Int(f"{prefix}coord"),
            z3.Int(f"{prefix}off"),
        )

    def of_commit(self, r: Commit) -> CSym:
        return CSym(
            z3.IntVal(r.slot),
            z3.IntVal(self.mid_number(r.member_id)),
            z3.IntVal(r.generation),
            z3.IntVal(r.coordinator),
            z3.IntVal(r.offset),
        )

    def of_state(self, s: State) -> Sym:
        """A concrete spec state as z3 constants."""

        def opt(values: list[int | None]) -> tuple[Vec, Vec]:
            return (
                tuple(z3.BoolVal(v is not None) for v in values),
                tuple(z3.IntVal(0 if v is None else v) for v in values),
            )

        cs = s.consumers
        pos_h, pos = opt([c.position for c in cs])
        pen_h, pen = opt([c.pending for c in cs])
        ack_h, ack = opt([c.acked for c in cs])
        g, st = s.group, s.stored
        commits = [self.of_commit(r) for r in sorted(s.inflight, key=Commit.key)]

        def flight(q: CSym) -> Any:
            return _any(
                tuple(
                    _all(tuple(a == b for a, b in zip(q.terms(), r.terms(), strict=True)))
                    for r in commits
                )
            )

        def id_bits(mids: frozenset[MemberId]) -> Vec:
            numbers = {self.mid_number(m) for m in mids}
            return tuple(z3.BoolVal(i in numbers) for i in self.ids)

        return Sym(
            cst=tuple(z3.IntVal(MEMBER_STATES.index(c.state)) for c in cs),
            cmid=tuple(z3.IntVal(self.mid_number(c.member_id)) for c in cs),
            cgen=tuple(z3.IntVal(c.generation) for c in cs),
            owns=tuple(z3.BoolVal(c.owns) for c in cs),
            pos_h=pos_h,
            pos=pos,
            pen_h=pen_h,
            pen=pen,
            ack_h=ack_h,
            ack=ack,
            waiting=tuple(z3.BoolVal(c.waiting) for c in cs),
            issued=tuple(z3.IntVal(n) for n in s.ids_issued),
            gst=z3.IntVal(GROUP_STATES.index(g.state)),
            ggen=z3.IntVal(g.generation),
            gmem=id_bits(g.members),
            gjoin=id_bits(g.joined),
            gowner=z3.IntVal(self.mid_number(g.owner)),
            gcoord=z3.IntVal(g.coordinator),
            loading=z3.BoolVal(g.loading),
            cache_h=z3.BoolVal(g.cache is not None),
            cache=z3.IntVal(0 if g.cache is None else g.cache),
            scom_h=z3.BoolVal(st.committed is not None),
            scom=z3.IntVal(0 if st.committed is None else st.committed),
            sgen=z3.IntVal(st.generation),
            smem=id_bits(st.members),
            sowner=z3.IntVal(self.mid_number(st.owner)),
            proc=tuple(z3.BoolVal(o in s.processed) for o in range(self.r)),
            cgen_hist=z3.IntVal(s.commit_generation),
            inflight=flight,
        )

    def read(self, sym: Sym, value: Any, candidates: list[CSym]) -> State:
        """A state whose terms ``value`` evaluates (a model's ``eval``, or ``simplify``).
        The commits in flight are those of ``candidates`` the state's predicate holds for
        (a counterexample's pre-state shows the commits its obligation is about)."""

        def b(t: Any) -> bool:
            return bool(z3.is_true(value(t)))

        def i(t: Any) -> int:
            return int(value(t).as_long())

        def opt(h: Any, v: Any) -> int | None:
            return i(v) if b(h) else None

        def mids(bits: Vec) -> frozenset[MemberId]:
            return frozenset(
                self.mid_of(n) for n, bit in zip(self.ids, bits, strict=True) if b(bit)
            )

        def enum(names: tuple[str, ...], t: Any) -> str:
            n = i(t)
            return names[n] if 0 <= n < len(names) else f"?{n}"

        consumers = tuple(
            Consumer(
                state=enum(MEMBER_STATES, sym.cst[c]),
                member_id=self.mid_of(i(sym.cmid[c])),
                generation=i(sym.cgen[c]),
                owns=b(sym.owns[c]),
                position=opt(sym.pos_h[c], sym.pos[c]),
                pending=opt(sym.pen_h[c], sym.pen[c]),
                acked=opt(sym.ack_h[c], sym.ack[c]),
                waiting=b(sym.waiting[c]),
            )
            for c in range(self.n)
        )
        inflight = frozenset(
            Commit(i(q.slot), self.mid_of(i(q.mid)), i(q.gen), i(q.coord), i(q.off))
            for q in candidates
            if b(sym.inflight(q))
        )
        return State(
            group=Group(
                enum(GROUP_STATES, sym.gst),
                i(sym.ggen),
                mids(sym.gmem),
                mids(sym.gjoin),
                self.mid_of(i(sym.gowner)),
                i(sym.gcoord),
                b(sym.loading),
                opt(sym.cache_h, sym.cache),
            ),
            stored=Stored(
                opt(sym.scom_h, sym.scom), i(sym.sgen), mids(sym.smem), self.mid_of(i(sym.sowner))
            ),
            consumers=consumers,
            inflight=inflight,
            processed=frozenset(o for o in range(self.r) if b(sym.proc[o])),
            commit_generation=i(sym.cgen_hist),
            ids_issued=tuple(i(n) for n in sym.issued),
        )

    # --- the coordinator's answer to an OffsetCommit -----------------------------------------

    def outcome(self, s: Sym, r: CSym) -> dict[str, Any]:
        """``Offsets.commit_outcome`` as one Boolean per answer, in its order."""
        not_coordinator = r.coord != s.gcoord
        load = z3.And(z3.Not(not_coordinator), s.loading)
        past = z3.And(z3.Not(not_coordinator), z3.Not(s.loading))
        if "stale_generation_commit" in self.bugs:
            no = z3.BoolVal(False)
            return {
                "not_coordinator": not_coordinator,
                "load": load,
                "rebalance": no,
                "unknown": no,
                "illegal": no,
                "ok": past,
            }
        rebalance = z3.And(past, s.gst == G_COMPLETING)
        unknown = z3.And(past, s.gst != G_COMPLETING, z3.Not(self.member(s.gmem, r.mid)))
        illegal = z3.And(past, s.gst != G_COMPLETING, self.member(s.gmem, r.mid), r.gen != s.ggen)
        ok = z3.And(past, s.gst != G_COMPLETING, self.member(s.gmem, r.mid), r.gen == s.ggen)
        return {
            "not_coordinator": not_coordinator,
            "load": load,
            "rebalance": rebalance,
            "unknown": unknown,
            "illegal": illegal,
            "ok": ok,
        }

    # --- the actions --------------------------------------------------------------------------

    @staticmethod
    def _unjoined(member_id: Any) -> dict[str, Any]:
        """The fields of ``Consumer(UNJOINED, member_id)``: nothing owned, held or
        waited for (a fresh process has member id 0, ``NOBODY``)."""
        false, zero = z3.BoolVal(False), z3.IntVal(0)
        return {
            "cst": z3.IntVal(C_UNJOINED),
            "cmid": member_id,
            "cgen": zero,
            "owns": false,
            "pos_h": false,
            "pos": zero,
            "pen_h": false,
            "pen": zero,
            "ack_h": false,
            "ack": zero,
            "waiting": false,
        }

    def _consumer(self, s: Sym, c: int, **fields: Any) -> Sym:
        """``s`` with consumer ``c`` (0-based) replaced: fields not given take
        ``Consumer()``'s defaults."""
        defaults = self._unjoined(z3.IntVal(0))
        defaults.update(fields)
        changes: dict[str, Any] = {
            name: _set(getattr(s, name), c, value) for name, value in defaults.items()
        }
        return attrs.evolve(s, **changes)

    def _keep(self, s: Sym, c: int) -> dict[str, Any]:
        """Consumer ``c``'s fields, to evolve some of them."""
        names = ("cst", "cmid", "cgen", "owns", "pos_h", "pos", "pen_h", "pen", "ack_h", "ack")
        out = {name: getattr(s, name)[c] for name in names}
        out["waiting"] = s.waiting[c]
        return out

    def step(self, s: Sym, action: str, arg: int, r: CSym | None = None) -> tuple[Any, Sym]:
        """(guard, successor) of an action instance: ``arg`` is the 1-based slot of a
        per-slot action, the member id number of ``sync_group`` / ``expire``, ignored
        otherwise; ``r`` is the commit ``handle_commit`` handles (its slot is ``arg``)."""
        false, true = z3.BoolVal(False), z3.BoolVal(True)
        no_ids = tuple(false for _ in self.ids)
        c = arg - 1
        if action == "join_group":
            member = self.member(s.gmem, s.cmid[c])
            current = z3.And(s.cst[c] != C_UNJOINED, member, s.cgen[c] == s.ggen)
            guard = z3.And(
                z3.Not(s.loading),
                s.gst != G_DEAD,
                z3.Not(s.pen_h[c]),
                z3.Not(z3.And(s.cst[c] == C_JOINING, member)),
                z3.Not(
                    z3.And(
                        current,
                        z3.Or(s.gst != G_PREPARING, self.member(s.gjoin, s.cmid[c])),
                    )
                ),
                z3.Or(member, s.issued[c] < self.k),
            )
            mid = z3.If(member, s.cmid[c], c * self.k + s.issued[c] + 1)
            issued = _set(s.issued, c, z3.If(member, s.issued[c], s.issued[c] + 1))
            prep = s.gst == G_PREPARING
            joined = tuple(z3.Or(z3.And(prep, s.gjoin[i - 1]), mid == i) for i in self.ids)
            members = tuple(z3.Or(s.gmem[i - 1], mid == i) for i in self.ids)
            post = attrs.evolve(
                s, gst=z3.IntVal(G_PREPARING), gmem=members, gjoin=joined, issued=issued
            )
            return guard, self._consumer(
                post, c, cst=z3.IntVal(C_JOINING), cmid=mid, cgen=s.cgen[c]
            )
        if action == "complete_join":
            guard = z3.And(
                s.gst == G_PREPARING,
                _any(s.gmem),
                _all(tuple(s.gjoin[i - 1] == s.gmem[i - 1] for i in self.ids)),
            )
            gen = s.ggen + 1
            moved = [
                z3.And(s.cst[o] == C_JOINING, self.member(s.gmem, s.cmid[o])) for o in range(self.n)
            ]
            post = attrs.evolve(
                s,
                cst=tuple(z3.If(moved[o], C_AWAITING, s.cst[o]) for o in range(self.n)),
                cgen=tuple(z3.If(moved[o], gen, s.cgen[o]) for o in range(self.n)),
                gst=z3.IntVal(G_COMPLETING),
                ggen=gen,
                gjoin=no_ids,
                gowner=z3.IntVal(0),
            )
            return guard, post
        if action == "sync_group":
            owner = arg
            guard = z3.And(s.gmem[owner - 1], s.gst == G_COMPLETING)
            synced = [
                z3.And(
                    s.cst[o] == C_AWAITING,
                    self.member(s.gmem, s.cmid[o]),
                    s.cgen[o] == s.ggen,
                )
                for o in range(self.n)
            ]
            post = s
            for o in range(self.n):
                kept = self._keep(s, o)
                stable = {
                    "cst": z3.IntVal(C_STABLE),
                    "cmid": s.cmid[o],
                    "cgen": s.cgen[o],
                    "owns": s.cmid[o] == owner,
                    "pos_h": false,
                    "pos": z3.IntVal(0),
                    "pen_h": false,
                    "pen": z3.IntVal(0),
                    "ack_h": false,
                    "ack": z3.IntVal(0),
                    "waiting": false,
                }
                post = self._consumer(
                    post, o, **{k: z3.If(synced[o], stable[k], kept[k]) for k in stable}
                )
            post = attrs.evolve(
                post,
                gst=z3.IntVal(G_STABLE),
                gowner=z3.IntVal(owner),
                sgen=s.ggen,
                smem=s.gmem,
                sowner=z3.IntVal(owner),
            )
            return guard, post
        if action == "fetch_offset":
            guard = z3.And(s.cst[c] == C_STABLE, s.owns[c], z3.Not(s.pos_h[c]))
            if "fetch_before_load" not in self.bugs:
                guard = z3.And(guard, z3.Not(s.loading))
            reset = 0 if self.p.reset == "earliest" else self.r
            kept = self._keep(s, c)
            kept.update(
                pos_h=true,
                pos=z3.If(s.cache_h, s.cache, reset),
                ack_h=s.cache_h,
                ack=z3.If(s.cache_h, s.cache, 0),
            )
            return guard, self._consumer(s, c, **kept)
        if action == "poll":
            guard = z3.And(s.owns[c], s.pos_h[c], z3.Not(s.pen_h[c]), s.pos[c] < self.r)
            kept = self._keep(s, c)
            kept.update(pen_h=true, pen=s.pos[c], pos=s.pos[c] + 1)
            return guard, self._consumer(s, c, **kept)
        if action == "process":
            guard = s.pen_h[c]
            if not self.after:
                guard = z3.And(guard, covered(s.ack_h[c], s.ack[c]) > s.pen[c])
            kept = self._keep(s, c)
            kept.update(pen_h=false, pen=z3.IntVal(0))
            proc = tuple(z3.Or(s.proc[o], s.pen[c] == o) for o in range(self.r))
            return guard, attrs.evolve(self._consumer(s, c, **kept), proc=proc)
        if action == "send_commit":
            guard = z3.And(
                s.cst[c] == C_STABLE,
                s.owns[c],
                z3.Not(s.waiting[c]),
                s.pos_h[c],
                s.pos[c] > covered(s.ack_h[c], s.ack[c]),
                z3.Not(s.pen_h[c]) if self.after else s.pen_h[c],
            )
            new = self.sent(s, c)
            kept = self._keep(s, c)
            kept.update(waiting=true)
            old = s.inflight

            def flight(q: CSym) -> Any:
                return z3.Or(old(q), same(q, new))

            return guard, attrs.evolve(self._consumer(s, c, **kept), inflight=flight)
        if action == "handle_commit":
            if r is None:
                raise ValueError("handle_commit needs the commit it handles")
            out = self.outcome(s, r)
            ok = out["ok"]
            retriable = z3.Or(out["not_coordinator"], out["load"])
            given_up = retriable if "commit_given_up" in self.bugs else false
            matches = z3.And(s.waiting[c], s.cmid[c] == r.mid, s.cgen[c] == r.gen)
            kept = self._keep(s, c)
            answered = dict(kept)
            answered.update(
                waiting=false,
                ack_h=z3.If(z3.Or(ok, given_up), true, kept["ack_h"]),
                ack=z3.If(z3.Or(ok, given_up), r.off, kept["ack"]),
            )
            fenced = self._unjoined(z3.If(out["unknown"], z3.IntVal(0), s.cmid[c]))
            is_fenced = z3.Not(z3.Or(ok, retriable))
            fields = {
                k: z3.If(matches, z3.If(is_fenced, fenced[k], answered[k]), kept[k]) for k in kept
            }
            post = self._consumer(s, c, **fields)
            old = s.inflight

            def rest(q: CSym) -> Any:
                return z3.And(old(q), z3.Not(same(q, r)))

            post = attrs.evolve(
                post,
                cache_h=z3.Or(ok, s.cache_h),
                cache=z3.If(ok, r.off, s.cache),
                scom_h=z3.Or(ok, s.scom_h),
                scom=z3.If(ok, r.off, s.scom),
                cgen_hist=z3.If(ok, r.gen, s.cgen_hist),
                inflight=rest,
            )
            return z3.And(s.inflight(r), r.slot == arg), post
        if action == "expire":
            mid = arg
            guard = z3.And(z3.Not(s.loading), s.gmem[mid - 1])
            members = _set(s.gmem, mid - 1, false)
            left = _any(members)
            prep = s.gst == G_PREPARING
            joined = tuple(z3.And(left, prep, s.gjoin[i - 1], i != mid) for i in self.ids)
            post = attrs.evolve(
                s,
                gst=z3.If(left, G_PREPARING, G_EMPTY),
                gmem=members,
                gjoin=joined,
                smem=tuple(z3.And(left, b) for b in s.smem),
                sowner=z3.If(left, s.sowner, 0),
            )
            return guard, post
        if action == "crash":
            return s.owns[c], self._consumer(s, c)
        if action == "coordinator_moves":
            post = s
            for o in range(self.n):
                kept = self._keep(s, o)
                unjoined = self._unjoined(s.cmid[o])
                joining = s.cst[o] == C_JOINING
                post = self._consumer(
                    post, o, **{k: z3.If(joining, unjoined[k], kept[k]) for k in kept}
                )
            post = attrs.evolve(
                post,
                gst=z3.IntVal(G_DEAD),
                gmem=no_ids,
                gjoin=no_ids,
                gowner=z3.IntVal(0),
                gcoord=s.gcoord + 1,
                loading=true,
                cache_h=false,
                cache=z3.IntVal(0),
            )
            return z3.Not(s.loading), post
        if action == "load_offsets":
            post = attrs.evolve(
                s,
                gst=z3.If(_any(s.smem), G_STABLE, G_EMPTY),
                ggen=s.sgen,
                gmem=s.smem,
                gjoin=no_ids,
                gowner=s.sowner,
                loading=false,
                cache_h=s.scom_h,
                cache=s.scom,
            )
            return s.loading, post
        raise KeyError(f"unknown action {action!r}; known: {', '.join(ACTIONS)}")

    def sent(self, s: Sym, c: int) -> CSym:
        """The OffsetCommit consumer ``c`` (0-based) sends in ``send_commit``."""
        return CSym(z3.IntVal(c + 1), s.cmid[c], s.cgen[c], s.gcoord, s.pos[c])

    def instances(self) -> Iterator[tuple[str, int]]:
        """Every action instance: (action, argument)."""
        for action in ACTIONS:
            if action in PER_SLOT or action in FAULT_PER_SLOT:
                for slot in range(1, self.n + 1):
                    yield action, slot
            elif action in PER_MEMBER:
                for mid in self.ids:
                    yield action, mid
            else:
                yield action, 0

    def label(self, action: str, arg: int) -> str:
        if action in PER_SLOT or action in FAULT_PER_SLOT:
            return f"{action}({arg})"
        if action in PER_MEMBER:
            mid = self.mid_of(arg)
            return f"{action}({mid[0]}{'abcdefgh'[mid[1] - 1]})"
        return action

    def init(self) -> State:
        return next(iter(self.spec.init()))


def same(a: CSym, b: CSym) -> Any:
    return _all(tuple(x == y for x, y in zip(a.terms(), b.terms(), strict=True)))


def _key(s: State) -> tuple[Any, ...]:
    """What the encoding holds of a state (the fault budgets are not encoded)."""
    return (
        s.group,
        s.stored,
        s.consumers,
        s.inflight,
        s.processed,
        s.commit_generation,
        s.ids_issued,
    )


def cross_check(enc: Encoding, states: list[State]) -> list[str]:
    """Compare the encoding's successors with the spec's on concrete states: the problems
    found (empty: they agree). The budgets are not in the encoding: the spec used is the
    one without them (``Encoding.spec``)."""
    spec = enc.spec
    problems = []
    for s in states:
        sym = enc.of_state(s)
        for action, arg in enc.instances():
            fn = getattr(spec, action)
            calls: list[tuple[Any, CSym | None]] = []
            if action == "handle_commit":
                for commit in sorted(s.inflight, key=Commit.key):
                    if commit.slot == arg:
                        calls.append((commit, enc.of_commit(commit)))
            else:
                calls.append((None, None))
            for concrete, r in calls:
                if action == "handle_commit":
                    theirs = fn(s, concrete)
                elif action in PER_MEMBER:
                    mid = enc.mid_of(arg)
                    theirs = fn(s, mid) if mid in s.group.members else None
                elif action in GLOBAL:
                    theirs = fn(s)
                else:
                    theirs = fn(s, arg)
                guard, post = enc.step(sym, action, arg, r)
                enabled = z3.is_true(z3.simplify(guard))
                candidates = [enc.of_commit(q) for q in sorted(s.inflight, key=Commit.key)]
                if action == "send_commit" and enabled:
                    candidates.append(enc.sent(sym, arg - 1))
                ours = enc.read(post, z3.simplify, candidates) if enabled else None
                label = enc.label(action, arg) + (f" {concrete.describe()}" if concrete else "")
                if (theirs is None) != (ours is None):
                    problems.append(
                        f"{label} from {spec.short(s)}: spec enabled {theirs is not None}, "
                        f"encoding {ours is not None}"
                    )
                elif theirs is not None and ours is not None and _key(ours) != _key(theirs):
                    problems.append(f"{label} from {spec.short(s)}: {ours} != {theirs}")
    return problems
