"""The replication spec's state and actions, encoded for z3 (and, identically, for Python).

The encoding is written once, against a small backend interface (``Ops``: ``And``, ``If``,
array ``select``/``store``, a bounded ``forall`` over an array's domain...), and interpreted
by two backends:

- ``PyOps``: plain Python values. Running the encoding on a concrete state of the spec must
  give exactly what the spec's Python action gives: same enabledness, same successor. The
  tests check that on every reachable state of small configurations
  (``model_tests/test_proofs_z3.py``): that is what makes the encoding trustworthy.
- ``Z3Ops``: z3 terms. The same code builds the transition relation the proofs use, and the
  tests also evaluate these terms on sampled concrete states (so the z3 reading of every
  operator is checked too, not only the Python one).

State (one partition, replicas ``1..N``):

- per replica: the log as two vectors of ``L`` integers (record epochs, record ids) and a
  length (the LEO, ``0..L``); entries at or past the length are junk, never read by the
  encoding where the spec does not read them; HW, leader epoch and believed leader as
  unbounded integers; its ISR as ``N`` booleans;
- the quorum state (epoch, leader, ISR);
- the LeaderAndIsr requests as arrays indexed by epoch: ``req_in[e]`` (a request with epoch
  ``e`` was sent), ``req_leader[e]``, ``req_isr[r][e]``. Every request the controller sends
  has a fresh epoch (``next_epoch``), so a request is determined by its epoch; the set is
  unbounded;
- ``next_epoch`` and ``next_id`` as unbounded integers;
- the extended model's acks ghost, as arrays indexed by record id (every write has a fresh
  id): ``pend_in/pend_leader/pend_offset`` (acks=all writes waiting in the purgatory) and
  ``acked_in/acked_offset`` (acknowledged writes).

The bounds of the explicit checker become optional: ``log_size`` may be symbolic (any value
``1..L``), and ``max_records``/``max_epoch`` may be absent (unbounded), so that one proof
covers every such configuration at once (their guards only ever disable actions).

What is not encoded: the extended model's crashes, restarts, flushes and unclean election
(``max_crashes > 0``, ``unclean``), and the ``reuse_epoch`` bug (two requests with one epoch
do not fit the by-epoch representation). ``Config.of`` refuses them with a reason.

Where the Python spec would raise (reading ``log[hw]`` of a leader whose HW is past its LEO,
a state ``HwBelowLeo`` excludes), the encoding disables the action instead; the cross-check
only ever compares states where the spec is defined.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import attrs
import z3

from spec.replication import (
    BUGS,
    NIL,
    NONE,
    TRUNCATIONS,
    ModelChoices,
    Params,
    Pending,
    Quorum,
    Replica,
    State,
    TruncationRule,
    Write,
)
from spec.replication.fencing import step_form

JUNK = -7
"""The default filler of log entries past a log's end in concrete states: reading one where
the spec does not would show up as a wrong record in the cross-check."""

ENCODED_BUGS = frozenset(BUGS) - {"reuse_epoch"}


class EncodingError(ValueError):
    """A configuration or a state the encoding does not represent (with the reason)."""


# --- backends ----------------------------------------------------------------------------


class PArray:
    """A total map from ints with finitely many entries off its default: the Python
    backend's stand-in for a z3 array. Immutable: ``set`` returns a new one."""

    __slots__ = ("default", "items")

    def __init__(self, default: Any, items: dict[int, Any] | None = None) -> None:
        self.default = default
        self.items: dict[int, Any] = dict(items or {})

    def get(self, key: int | None) -> Any:
        if key is None:  # the default, used by ``PyOps.lam``
            return self.default
        return self.items.get(key, self.default)

    def set(self, key: int, value: Any) -> PArray:
        items = dict(self.items)
        items[key] = value
        return PArray(self.default, items)

    def keys_where(self, value: Any = True) -> list[int]:
        return sorted(k for k, v in self.items.items() if v == value)

    def __repr__(self) -> str:
        return f"PArray({self.default!r}, {self.items!r})"


class PyOps:
    """The Python backend: values are ints, bools and ``PArray``s."""

    symbolic = False

    def And(self, *xs: Any) -> bool:
        return all(bool(x) for x in xs)

    def Or(self, *xs: Any) -> bool:
        return any(bool(x) for x in xs)

    def Not(self, x: Any) -> bool:
        return not x

    def Implies(self, a: Any, b: Any) -> bool:
        return (not a) or bool(b)

    def If(self, c: Any, a: Any, b: Any) -> Any:
        return a if c else b

    def lit(self, value: int | bool) -> Any:
        return value

    def select(self, arr: PArray, key: Any) -> Any:
        return arr.get(key)

    def store(self, arr: PArray, key: Any, value: Any) -> PArray:
        return arr.set(key, value)

    def array(self, arr: PArray, sort: str) -> PArray:
        return arr

    def forall(self, domain: PArray, body: Callable[[Any], Any]) -> bool:
        """``forall k. domain[k] => body(k)`` (``domain`` is a set: default False)."""
        assert domain.default is False
        return all(bool(body(k)) for k, v in domain.items.items() if v)

    def exists(self, domain: PArray, body: Callable[[Any], Any]) -> bool:
        assert domain.default is False
        return any(bool(body(k)) for k, v in domain.items.items() if v)

    def lam(self, body: Callable[[Any], Any], *sources: PArray) -> PArray:
        """The array ``k -> body(k)``; ``body`` may only read ``sources`` at ``k``."""
        keys: set[int] = set()
        for source in sources:
            keys.update(source.items)
        return PArray(body(None), {k: body(k) for k in keys})

    def count(self, bools: Sequence[Any]) -> int:
        return sum(1 for b in bools if b)


class Z3Ops:
    """The z3 backend: values are z3 terms."""

    symbolic = True

    def sort(self) -> Any:
        """The sort of integers (offsets, epochs, ids, replica ids)."""
        return z3.IntSort()

    def const(self, name: str) -> Any:
        return z3.Const(name, self.sort())

    def fresh_const(self, prefix: str) -> Any:
        return z3.FreshConst(self.sort(), prefix)

    def array_const(self, name: str, value: str) -> Any:
        """A fresh array from integers to ``value`` ("bool" or "int")."""
        target = z3.BoolSort() if value == "bool" else self.sort()
        return z3.Array(name, self.sort(), target)

    def empty(self, arr: Any) -> Any:
        return arr == z3.K(self.sort(), z3.BoolVal(False))

    def arrays_equal(self, a: Any, b: Any) -> Any:
        return a == b

    def And(self, *xs: Any) -> Any:
        return z3.And(*xs) if xs else z3.BoolVal(True)

    def Or(self, *xs: Any) -> Any:
        return z3.Or(*xs) if xs else z3.BoolVal(False)

    def Not(self, x: Any) -> Any:
        return z3.Not(x)

    def Implies(self, a: Any, b: Any) -> Any:
        return z3.Implies(a, b)

    def If(self, c: Any, a: Any, b: Any) -> Any:
        return z3.If(c, a, b)

    def lit(self, value: int | bool) -> Any:
        return z3.BoolVal(value) if isinstance(value, bool) else z3.IntVal(value)

    def select(self, arr: Any, key: Any) -> Any:
        return z3.Select(arr, key)

    def store(self, arr: Any, key: Any, value: Any) -> Any:
        return z3.Store(arr, key, value)

    def array(self, arr: PArray, sort: str) -> Any:
        """A concrete ``PArray`` as a z3 array term (a constant array plus stores)."""
        value_sort = z3.BoolSort() if sort == "bool" else self.sort()
        out = z3.K(self.sort(), self._val(arr.default, value_sort))
        for key in sorted(arr.items):
            out = z3.Store(out, self.lit(key), self._val(arr.items[key], value_sort))
        return out

    def _val(self, value: Any, sort: Any) -> Any:
        return z3.BoolVal(bool(value)) if sort == z3.BoolSort() else self.lit(int(value))

    def forall(self, domain: Any, body: Callable[[Any], Any]) -> Any:
        k = self.fresh_const("k")
        return z3.ForAll([k], z3.Implies(z3.Select(domain, k), body(k)))

    def exists(self, domain: Any, body: Callable[[Any], Any]) -> Any:
        k = self.fresh_const("k")
        return z3.Exists([k], z3.And(z3.Select(domain, k), body(k)))

    def lam(self, body: Callable[[Any], Any], *sources: Any) -> Any:
        k = self.fresh_const("i")
        return z3.Lambda([k], body(k))

    def count(self, bools: Sequence[Any]) -> Any:
        if not bools:
            return self.lit(0)
        return z3.Sum([z3.If(b, self.lit(1), self.lit(0)) for b in bools])


class BoundedZ3Ops(Z3Ops):
    """z3 terms over a finite instance: quantifiers over an array's domain are expanded over
    the keys ``lo..hi-1`` (epochs and record ids). Used to *find* counterexamples fast; a
    model found this way is only trusted after it is checked concretely (see
    ``obligations``)."""

    def __init__(self, lo: int, hi: int) -> None:
        self.lo = lo
        self.hi = hi

    def forall(self, domain: Any, body: Callable[[Any], Any]) -> Any:
        return z3.And(
            *[
                z3.Implies(z3.Select(domain, self.lit(k)), body(self.lit(k)))
                for k in range(self.lo, self.hi)
            ]
        )

    def exists(self, domain: Any, body: Callable[[Any], Any]) -> Any:
        return z3.Or(
            *[
                z3.And(z3.Select(domain, self.lit(k)), body(self.lit(k)))
                for k in range(self.lo, self.hi)
            ]
        )


class BitVecOps(Z3Ops):
    """z3 terms with integers as signed bit-vectors of ``width`` bits: exact as long as
    every value stays within the width, which bounded configurations guarantee (epochs,
    ids and offsets are a few units). Bit-blasted, bounded model checking is much faster
    than over unbounded integers. Never used for proofs over unbounded values."""

    def __init__(self, width: int = 8) -> None:
        self.width = width

    def sort(self) -> Any:
        return z3.BitVecSort(self.width)

    def lit(self, value: int | bool) -> Any:
        if isinstance(value, bool):
            return z3.BoolVal(value)
        return z3.BitVecVal(value, self.width)


class VecOps(BitVecOps):
    """Bit-vector terms with every array a vector over the finite keys ``lo..hi-1``: the
    request map (epochs) and the ghost maps (record ids) of a bounded configuration, where
    every key ever stored is inside the range (the epoch and record budgets guard every
    store). Quantifiers and lambdas become finite; BMC becomes propositional."""

    def __init__(self, lo: int, hi: int, width: int = 8) -> None:
        super().__init__(width)
        self.lo = lo
        self.hi = hi

    def keys(self) -> range:
        return range(self.lo, self.hi)

    def array_const(self, name: str, value: str) -> Any:
        if value == "bool":
            return tuple(z3.Bool(f"{name}[{k}]") for k in self.keys())
        return tuple(z3.BitVec(f"{name}[{k}]", self.width) for k in self.keys())

    def _default(self, arr: tuple[Any, ...]) -> Any:
        return z3.BoolVal(False) if z3.is_bool(arr[0]) else self.lit(JUNK)

    def select(self, arr: Any, key: Any) -> Any:
        if isinstance(key, int):
            return arr[key - self.lo] if self.lo <= key < self.hi else self._default(arr)
        out = self._default(arr)
        for k in reversed(self.keys()):
            out = z3.If(key == k, arr[k - self.lo], out)
        return out

    def store(self, arr: Any, key: Any, value: Any) -> Any:
        return tuple(z3.If(key == k, value, arr[k - self.lo]) for k in self.keys())

    def array(self, arr: PArray, sort: str) -> Any:
        return tuple(
            z3.BoolVal(bool(arr.get(k))) if sort == "bool" else self.lit(int(arr.get(k)))
            for k in self.keys()
        )

    def forall(self, domain: Any, body: Callable[[Any], Any]) -> Any:
        return z3.And(*[z3.Implies(domain[k - self.lo], body(self.lit(k))) for k in self.keys()])

    def exists(self, domain: Any, body: Callable[[Any], Any]) -> Any:
        return z3.Or(*[z3.And(domain[k - self.lo], body(self.lit(k))) for k in self.keys()])

    def lam(self, body: Callable[[Any], Any], *sources: Any) -> Any:
        return tuple(body(self.lit(k)) for k in self.keys())

    def empty(self, arr: Any) -> Any:
        return z3.And(*[z3.Not(x) for x in arr])

    def arrays_equal(self, a: Any, b: Any) -> Any:
        return z3.And(*[x == y for x, y in zip(a, b, strict=True)])


Ops = PyOps | Z3Ops

# --- configuration -----------------------------------------------------------------------


@attrs.frozen
class Config(ModelChoices):
    """Which protocol is encoded, and its bounds. What the model, truncation and
    clamp_truncation fields choose (``extended``, ``fenced``, ``clamps``...) is derived as
    the spec's ``Params`` derives it (``ModelChoices``).

    ``log_bound`` (L) is the length of the log vectors; ``log_size`` (the spec's
    ``LOG_SIZE``) is at most L, or None for "any value 1..L" (symbolic). ``max_records`` and
    ``max_epoch`` None mean unbounded: their guards are dropped, which only adds behaviours,
    so what is proved without them holds for every value of them."""

    replicas: int = 3
    log_bound: int = 3
    truncation: str = "kip320"
    model: str = "published-2018"
    acks: str = "all"
    min_isr: int = 1
    log_size: int | None = None
    max_records: int | None = None
    max_epoch: int | None = None
    clamp_truncation: bool | None = None
    bugs: frozenset[str] = frozenset()

    def __attrs_post_init__(self) -> None:
        problems = []
        if not 1 <= self.replicas <= 4:
            problems.append(f"replicas must be 1..4, got {self.replicas}")
        if self.log_bound < 1:
            problems.append(f"the log bound must be >= 1, got {self.log_bound}")
        if self.log_size is not None and not 1 <= self.log_size <= self.log_bound:
            problems.append(f"log_size {self.log_size} is not within 1..{self.log_bound}")
        if self.truncation not in TRUNCATIONS:
            problems.append(f"truncation {self.truncation!r} is not one of {TRUNCATIONS}")
        unknown = sorted(set(self.bugs) - ENCODED_BUGS)
        if unknown:
            problems.append(
                f"bug(s) {unknown} are not encoded (reuse_epoch makes two requests share an "
                "epoch, which the by-epoch request map cannot hold)"
            )
        if not 1 <= self.min_isr <= self.replicas:
            problems.append(f"min_isr must be 1..{self.replicas}, got {self.min_isr}")
        if problems:
            raise EncodingError("; ".join(problems))

    @classmethod
    def of(cls, params: Params, log_bound: int | None = None, *, bounded: bool = True) -> Config:
        """The encoding of a spec configuration. ``bounded=False`` drops the explicit
        checker's bounds (log size symbolic up to ``log_bound``, records and epochs
        unbounded): the configuration the proofs use."""
        if params.extended and (params.max_crashes or params.unclean):
            raise EncodingError(
                "crashes, restarts, flushes and unclean election (--max-crashes > 0, "
                "--unclean) are not encoded; use --max-crashes 0 without --unclean"
            )
        if params.views:
            raise EncodingError(
                "the extended model's leader view (follower LEOs learnt from fetches) is not "
                "encoded; use the extended model with leader_view=False"
            )
        bound = log_bound if log_bound is not None else params.log_size
        return cls(
            replicas=params.replicas,
            log_bound=bound,
            truncation=params.truncation,
            model=params.model,
            acks=params.acks,
            min_isr=params.min_isr,
            log_size=params.log_size if bounded else None,
            max_records=params.max_records if bounded else None,
            max_epoch=params.max_epoch if bounded else None,
            clamp_truncation=params.clamps,
            bugs=params.bugs,
        )

    @property
    def acked_kind(self) -> str:
        """The ``acks`` every acknowledged write of this configuration carries."""
        return "all" if self.acks == "all" else "1"

    def describe(self) -> str:
        bounds = [
            f"L={self.log_bound}",
            f"log_size={'1..L' if self.log_size is None else self.log_size}",
            f"records={'unbounded' if self.max_records is None else self.max_records}",
            f"epochs={'unbounded' if self.max_epoch is None else f'0..{self.max_epoch}'}",
        ]
        model = self.model
        if self.extended:
            model += f" acks={self.acks} min_isr={self.min_isr}"
        bugs = f" bugs={sorted(self.bugs)}" if self.bugs else ""
        return f"{model}, {self.truncation}, {self.replicas} replicas, {', '.join(bounds)}{bugs}"


# --- the state ---------------------------------------------------------------------------


@attrs.frozen(eq=False)
class SymReplica:
    leo: Any
    hw: Any
    epoch: Any
    leader: Any
    isr: tuple[Any, ...]
    log_ep: tuple[Any, ...]
    log_id: tuple[Any, ...]


@attrs.frozen(eq=False)
class SymState:
    reps: tuple[SymReplica, ...]
    q_epoch: Any
    q_leader: Any
    q_isr: tuple[Any, ...]
    req_in: Any
    req_leader: Any
    req_isr: tuple[Any, ...]
    next_epoch: Any
    next_id: Any
    pend_in: Any
    pend_leader: Any
    pend_offset: Any
    acked_in: Any
    acked_offset: Any


@attrs.frozen
class ActionEnc:
    """One action of the spec, as encoded. ``params`` are the spec's parameter names;
    ``replicas`` the replica arguments enumerated concretely (the spec's, plus a hidden
    ``_leader`` where the spec reads a leader out of a request or a replica's state, so
    that every replica index in the formula is concrete); ``request`` says whether the
    action takes a request (its epoch is a symbolic argument ``q``)."""

    name: str
    params: tuple[str, ...]
    replicas: tuple[str, ...]
    request: bool
    method: str


class Encoding:
    """The encoding of one configuration over one backend."""

    def __init__(self, config: Config, ops: Ops) -> None:
        self.c = config
        self.ops = ops
        self.ids = config.ids
        self.n = config.replicas
        self.L = config.log_bound
        self.log_size: Any
        if config.log_size is not None:
            self.log_size = ops.lit(config.log_size)
        elif isinstance(ops, Z3Ops):
            self.log_size = ops.const("log_size")
        else:
            raise EncodingError("the Python backend needs a concrete log_size")

    def assumptions(self) -> list[Any]:
        """Side conditions on the symbolic parameters."""
        if self.c.log_size is None and self.ops.symbolic:
            return [self.log_size >= 1, self.log_size <= self.L]
        return []

    # --- building states -------------------------------------------------------------------

    def fresh(self, prefix: str) -> SymState:
        """A state of fresh z3 constants named ``prefix...``."""
        assert isinstance(self.ops, Z3Ops)
        ops = self.ops

        def i(name: str) -> Any:
            return ops.const(f"{prefix}{name}")

        def b(name: str) -> Any:
            return z3.Bool(f"{prefix}{name}")

        reps = tuple(
            SymReplica(
                leo=i(f"leo{r}"),
                hw=i(f"hw{r}"),
                epoch=i(f"ep{r}"),
                leader=i(f"ld{r}"),
                isr=tuple(b(f"isr{r}_{m}") for m in self.ids),
                log_ep=tuple(i(f"log{r}_{k}_ep") for k in range(self.L)),
                log_id=tuple(i(f"log{r}_{k}_id") for k in range(self.L)),
            )
            for r in self.ids
        )
        return SymState(
            reps=reps,
            q_epoch=i("q_ep"),
            q_leader=i("q_ld"),
            q_isr=tuple(b(f"q_isr{m}") for m in self.ids),
            req_in=ops.array_const(f"{prefix}req_in", "bool"),
            req_leader=ops.array_const(f"{prefix}req_ld", "int"),
            req_isr=tuple(ops.array_const(f"{prefix}req_isr{m}", "bool") for m in self.ids),
            next_epoch=i("next_epoch"),
            next_id=i("next_id"),
            pend_in=ops.array_const(f"{prefix}pend_in", "bool"),
            pend_leader=ops.array_const(f"{prefix}pend_ld", "int"),
            pend_offset=ops.array_const(f"{prefix}pend_off", "int"),
            acked_in=ops.array_const(f"{prefix}acked_in", "bool"),
            acked_offset=ops.array_const(f"{prefix}acked_off", "int"),
        )

    def from_state(self, s: State, junk: int = JUNK) -> SymState:
        """A concrete spec state in this backend (Python values, or z3 numerals). Log
        entries past a log's end are filled with ``junk``."""
        ops = self.ops
        lit = ops.lit
        if len(s.replicas) != self.n:
            raise EncodingError(f"state has {len(s.replicas)} replicas, encoding {self.n}")
        reps = []
        for rep in s.replicas:
            if not rep.alive or rep.fence != NIL or rep.flushed != 0:
                raise EncodingError("crashes and flushes are not encoded")
            if getattr(rep, "remote", ()):
                raise EncodingError("the leader view (remote LEOs) is not encoded")
            if rep.leo > self.L:
                raise EncodingError(f"a log of {rep.leo} records exceeds the bound {self.L}")
            pad = self.L - rep.leo
            reps.append(
                SymReplica(
                    leo=lit(rep.leo),
                    hw=lit(rep.hw),
                    epoch=lit(rep.epoch),
                    leader=lit(rep.leader),
                    isr=tuple(lit(m in rep.isr) for m in self.ids),
                    log_ep=tuple(lit(e) for e, _ in rep.log) + (lit(junk),) * pad,
                    log_id=tuple(lit(i) for _, i in rep.log) + (lit(junk - 1),) * pad,
                )
            )
        epochs = [q.epoch for q in s.requests]
        if len(set(epochs)) != len(epochs):
            raise EncodingError("two requests share an epoch (the reuse_epoch bug)")
        req_in = PArray(False, {q.epoch: True for q in s.requests})
        req_leader = PArray(junk, {q.epoch: q.leader for q in s.requests})
        req_isr = tuple(PArray(False, {q.epoch: m in q.isr for q in s.requests}) for m in self.ids)
        if len({w.id for w in s.pending}) != len(s.pending) or len({w.id for w in s.acked}) != len(
            s.acked
        ):
            raise EncodingError("two ghost writes share a record id")
        if any(w.acks != self.c.acked_kind for w in s.acked):
            raise EncodingError(f"an acknowledged write is not acks={self.c.acked_kind}")
        pend_in = PArray(False, {w.id: True for w in s.pending})
        pend_leader = PArray(junk, {w.id: w.leader for w in s.pending})
        pend_offset = PArray(junk, {w.id: w.offset for w in s.pending})
        acked_in = PArray(False, {w.id: True for w in s.acked})
        acked_offset = PArray(junk, {w.id: w.offset for w in s.acked})
        return SymState(
            reps=tuple(reps),
            q_epoch=lit(s.quorum.epoch),
            q_leader=lit(s.quorum.leader),
            q_isr=tuple(lit(m in s.quorum.isr) for m in self.ids),
            req_in=ops.array(req_in, "bool"),
            req_leader=ops.array(req_leader, "int"),
            req_isr=tuple(ops.array(a, "bool") for a in req_isr),
            next_epoch=lit(s.next_epoch),
            next_id=lit(s.next_record_id),
            pend_in=ops.array(pend_in, "bool"),
            pend_leader=ops.array(pend_leader, "int"),
            pend_offset=ops.array(pend_offset, "int"),
            acked_in=ops.array(acked_in, "bool"),
            acked_offset=ops.array(acked_offset, "int"),
        )

    def to_state(self, st: SymState) -> State:
        """A Python-backend state as the spec's ``State``."""
        assert not self.ops.symbolic
        reps = []
        for rep in st.reps:
            log = tuple(zip(rep.log_ep[: rep.leo], rep.log_id[: rep.leo], strict=True))
            isr = frozenset(m for m, inside in zip(self.ids, rep.isr, strict=True) if inside)
            reps.append(Replica(log, rep.hw, rep.epoch, rep.leader, isr))
        requests = frozenset(
            Quorum(e, st.req_leader.get(e), self._members(st.req_isr, e))
            for e in st.req_in.keys_where(True)
        )
        pending = frozenset(
            Pending(st.pend_leader.get(i), st.pend_offset.get(i), i)
            for i in st.pend_in.keys_where(True)
        )
        acked = frozenset(
            Write(st.acked_offset.get(i), i, self.c.acked_kind)
            for i in st.acked_in.keys_where(True)
        )
        return State(
            replicas=tuple(reps),
            quorum=Quorum(
                st.q_epoch,
                st.q_leader,
                frozenset(m for m, inside in zip(self.ids, st.q_isr, strict=True) if inside),
            ),
            requests=requests,
            next_record_id=st.next_id,
            next_epoch=st.next_epoch,
            acked=acked,
            pending=pending,
        )

    def _members(self, req_isr: tuple[PArray, ...], e: int) -> frozenset[int]:
        return frozenset(m for m, arr in zip(self.ids, req_isr, strict=True) if arr.get(e))

    # --- vocabulary ------------------------------------------------------------------------

    def rep(self, st: SymState, r: int) -> SymReplica:
        return st.reps[r - 1]

    def pick(self, who: Any, f: Callable[[int], Any]) -> Any:
        """``f(who)`` for a replica id that may be symbolic (an If over the ids; for a value
        that is no replica, the last id's: callers guard against that)."""
        if not self.ops.symbolic:
            return f(who if who in self.ids else self.ids[-1])
        out = f(self.ids[-1])
        for r in reversed(self.ids[:-1]):
            out = self.ops.If(who == r, f(r), out)
        return out

    def is_replica(self, who: Any) -> Any:
        return self.ops.Or(*[who == r for r in self.ids])

    def rec_ep(self, rep: SymReplica, k: Any) -> Any:
        return self._at(rep.log_ep, k)

    def rec_id(self, rep: SymReplica, k: Any) -> Any:
        return self._at(rep.log_id, k)

    def _at(self, vec: tuple[Any, ...], k: Any) -> Any:
        if isinstance(k, int):
            return vec[k] if 0 <= k < self.L else self.ops.lit(JUNK)
        out = vec[-1]
        for j in reversed(range(self.L - 1)):
            out = self.ops.If(k == j, vec[j], out)
        return out

    def same_record(self, a: SymReplica, b: SymReplica, k: int) -> Any:
        return self.ops.And(a.log_ep[k] == b.log_ep[k], a.log_id[k] == b.log_id[k])

    def agree(self, a: SymReplica, b: SymReplica, upto: Any) -> Any:
        """Both logs hold at least ``upto`` records and the same ones below ``upto``."""
        ops = self.ops
        return ops.And(
            a.leo >= upto,
            b.leo >= upto,
            *[ops.Implies(k < upto, self.same_record(a, b, k)) for k in range(self.L)],
        )

    def prefix_of(self, a: SymReplica, b: SymReplica) -> Any:
        """``a``'s log is a prefix of ``b``'s."""
        return self.agree(a, b, a.leo)

    def isr_count(self, isr: tuple[Any, ...]) -> Any:
        return self.ops.count(isr)

    def isr_without(self, isr: tuple[Any, ...], r: int) -> tuple[Any, ...]:
        return tuple(
            self.ops.lit(False) if m == r else x for m, x in zip(self.ids, isr, strict=True)
        )

    def isr_with(self, isr: tuple[Any, ...], r: int) -> tuple[Any, ...]:
        return tuple(
            self.ops.lit(True) if m == r else x for m, x in zip(self.ids, isr, strict=True)
        )

    def isr_is(self, isr: tuple[Any, ...], members: Iterable[int]) -> Any:
        want = set(members)
        ops = self.ops
        return ops.And(
            *[x if m in want else ops.Not(x) for m, x in zip(self.ids, isr, strict=True)]
        )

    def req_isr_at(self, st: SymState, e: Any) -> tuple[Any, ...]:
        return tuple(self.ops.select(arr, e) for arr in st.req_isr)

    def presumes(self, st: SymState, r: int) -> Any:
        return self.rep(st, r).leader == r

    def true_leader(self, st: SymState, r: int) -> Any:
        rep = self.rep(st, r)
        return self.ops.And(st.q_leader == r, rep.leader == r, rep.epoch == st.q_epoch)

    def following(self, st: SymState, leader: int, f: int) -> Any:
        """KIP-320: ``f`` fetches from ``leader`` in ``leader``'s current epoch."""
        lrep, frep = self.rep(st, leader), self.rep(st, f)
        return self.ops.And(lrep.leader == leader, frep.leader == leader, frep.epoch == lrep.epoch)

    def caught_up(self, st: SymState, leader: int, f: int, end: Any) -> Any:
        lrep, frep = self.rep(st, leader), self.rep(st, f)
        ops = self.ops
        return ops.And(
            frep.leader == leader, ops.Or(end == 0, ops.And(lrep.leo >= end, frep.leo >= end))
        )

    def accepts(self, rep: SymReplica, e: Any) -> Any:
        if "accept_stale_epoch" in self.c.bugs:
            return e != rep.epoch
        return e > rep.epoch

    def epoch_budget(self, st: SymState) -> Any:
        if self.c.max_epoch is None:
            return self.ops.lit(True)
        return st.next_epoch <= self.c.max_epoch

    def min(self, a: Any, b: Any) -> Any:
        return self.ops.If(a <= b, a, b)

    # --- state updates ---------------------------------------------------------------------

    def with_rep(self, st: SymState, r: int, new: SymReplica, **changes: Any) -> SymState:
        reps = list(st.reps)
        reps[r - 1] = new
        return attrs.evolve(st, reps=tuple(reps), **changes)

    def append(self, rep: SymReplica, ep: Any, rid: Any) -> SymReplica:
        ops = self.ops
        return attrs.evolve(
            rep,
            leo=rep.leo + 1,
            log_ep=tuple(ops.If(rep.leo == k, ep, rep.log_ep[k]) for k in range(self.L)),
            log_id=tuple(ops.If(rep.leo == k, rid, rep.log_id[k]) for k in range(self.L)),
        )

    def drop_pending(self, st: SymState, r: int) -> Any:
        """A replica that stops leading fails its purgatory (NOT_LEADER_OR_FOLLOWER)."""
        if not self.c.extended:
            return st.pend_in
        ops = self.ops
        return ops.lam(
            lambda i: ops.And(ops.select(st.pend_in, i), ops.select(st.pend_leader, i) != r),
            st.pend_in,
            st.pend_leader,
        )

    def controller_update(self, st: SymState, leader: Any, isr: tuple[Any, ...]) -> SymState:
        ops = self.ops
        e = st.next_epoch
        return attrs.evolve(
            st,
            q_epoch=e,
            q_leader=leader,
            q_isr=isr,
            req_in=ops.store(st.req_in, e, ops.lit(True)),
            req_leader=ops.store(st.req_leader, e, leader),
            req_isr=tuple(ops.store(arr, e, x) for arr, x in zip(st.req_isr, isr, strict=True)),
            next_epoch=e + 1,
        )

    def quorum_isr_update(
        self, st: SymState, leader: int, isr: tuple[Any, ...]
    ) -> tuple[Any, SymState]:
        rep = self.rep(st, leader)
        post = self.with_rep(
            st, leader, attrs.evolve(rep, isr=isr), q_leader=self.ops.lit(leader), q_isr=isr
        )
        return self.true_leader(st, leader), post

    def advance_hw(self, st: SymState, leader: int) -> SymState:
        ops = self.ops
        rep = self.rep(st, leader)
        hw = rep.hw + 1
        changes: dict[str, Any] = {}
        if self.c.extended:
            ok = self.isr_count(rep.isr) >= self.c.min_isr

            def done(i: Any) -> Any:
                return ops.And(
                    ops.select(st.pend_in, i),
                    ops.select(st.pend_leader, i) == leader,
                    ops.select(st.pend_offset, i) < hw,
                )

            sources = (st.pend_in, st.pend_leader, st.pend_offset, st.acked_in, st.acked_offset)
            changes = {
                "pend_in": ops.lam(
                    lambda i: ops.And(ops.select(st.pend_in, i), ops.Not(done(i))), *sources
                ),
                "acked_in": ops.lam(
                    lambda i: ops.Or(ops.select(st.acked_in, i), ops.And(ok, done(i))), *sources
                ),
                "acked_offset": ops.lam(
                    lambda i: ops.If(
                        ops.And(ok, done(i)),
                        ops.select(st.pend_offset, i),
                        ops.select(st.acked_offset, i),
                    ),
                    *sources,
                ),
            }
        return self.with_rep(st, leader, attrs.evolve(rep, hw=hw), **changes)

    def replicate(self, st: SymState, leader: int, f: int) -> tuple[Any, SymState]:
        """The follower appends the leader's record at its LEO; HW = min(leader HW, LEO)."""
        ops = self.ops
        lrep, frep = self.rep(st, leader), self.rep(st, f)
        guard = ops.And(lrep.leader == leader, lrep.leo > frep.leo)
        new = self.append(frep, self.rec_ep(lrep, frep.leo), self.rec_id(lrep, frep.leo))
        if "follower_hw_unclamped" in self.c.bugs:
            hw = lrep.hw
        else:
            hw = self.min(lrep.hw, frep.leo + 1)
        return guard, self.with_rep(st, f, attrs.evolve(new, hw=hw))

    def truncation_offset(self, st: SymState, r: int, leader: int) -> Any:
        """The spec's ``truncation_offset`` (see its docstring), as a term."""
        ops = self.ops
        rrep, lrep = self.rep(st, r), self.rep(st, leader)
        rule = self.c.variant.truncation
        if rule is TruncationRule.HIGH_WATERMARK:
            return rrep.hw
        if rule is TruncationRule.EPOCH_END:
            last_epoch = self.rec_ep(rrep, rrep.leo - 1)
            first_above = rrep.hw
            for k in reversed(range(self.L)):
                first_above = ops.If(
                    ops.And(k < lrep.leo, lrep.log_ep[k] > last_epoch), k, first_above
                )
            return ops.If(
                rrep.leo == 0,
                ops.lit(0),
                ops.If(
                    lrep.leo == 0,
                    rrep.hw,
                    ops.If(self.rec_ep(lrep, lrep.leo - 1) == last_epoch, lrep.leo, first_above),
                ),
            )
        # COMMON_PREFIX: one past the last offset where both logs hold the same record.
        out: Any = ops.lit(0)
        for k in range(self.L):
            out = ops.If(
                ops.And(k < rrep.leo, k < lrep.leo, self.same_record(rrep, lrep, k)), k + 1, out
            )
        return out

    def become_follower_effect(
        self, st: SymState, q: Any, r: int, leader: int
    ) -> tuple[Any, SymState]:
        ops = self.ops
        rep = self.rep(st, r)
        offset = self.truncation_offset(st, r, leader)
        if self.c.clamps:
            guard: Any = ops.lit(True)
            leo = self.min(offset, rep.leo)
        else:
            guard = offset <= rep.leo
            leo = offset
        new = attrs.evolve(
            rep,
            leo=leo,
            hw=self.min(offset, rep.hw),
            epoch=q,
            leader=ops.lit(leader),
            isr=self.req_isr_at(st, q),
        )
        return guard, self.with_rep(st, r, new, pend_in=self.drop_pending(st, r))

    # --- the actions -----------------------------------------------------------------------

    def actions(self) -> tuple[ActionEnc, ...]:
        """The actions of this configuration, named as ``spec.replication`` names them."""
        common: tuple[ActionEnc, ...] = (
            ActionEnc("controller_elect", ("n",), ("n",), False, "a_controller_elect"),
            ActionEnc("controller_shrink_isr", ("r",), ("r",), False, "a_controller_shrink_isr"),
            ActionEnc("become_leader", ("q",), ("_leader",), True, "a_become_leader"),
            ActionEnc("leader_write", ("r",), ("r",), False, "a_leader_write"),
        )
        if self.c.extended:
            common += (
                ActionEnc(
                    "controller_failover",
                    ("failed", "n"),
                    ("failed", "n"),
                    False,
                    "a_controller_failover",
                ),
            )

        def name(step: str) -> str:
            return step_form(step, self.c.fenced)

        protocol = (
            ActionEnc(
                name("leader_shrink_isr"),
                ("leader", "f"),
                ("leader", "f"),
                False,
                "a_leader_shrink_isr",
            ),
            ActionEnc(
                name("leader_expand_isr"),
                ("leader", "f"),
                ("leader", "f"),
                False,
                "a_leader_expand_isr",
            ),
            ActionEnc(
                name("leader_advance_hw"), ("leader",), ("leader",), False, "a_leader_advance_hw"
            ),
            ActionEnc(name("follower_fetch"), ("f",), ("f", "_leader"), False, "a_follower_fetch"),
            ActionEnc(
                name("become_follower"), ("q", "r"), ("r", "_leader"), True, "a_become_follower"
            ),
        )
        return common + protocol

    def action(self, name: str) -> ActionEnc:
        for a in self.actions():
            if a.name == name:
                return a
        known = ", ".join(a.name for a in self.actions())
        raise EncodingError(f"no action {name!r} in this configuration; known: {known}")

    def instances(self, a: ActionEnc) -> Iterator[dict[str, int]]:
        """Every assignment of concrete replicas to the action's replica arguments."""
        for combo in itertools.product(self.ids, repeat=len(a.replicas)):
            yield dict(zip(a.replicas, combo, strict=True))

    def step(self, st: SymState, a: ActionEnc, args: dict[str, Any]) -> tuple[Any, SymState]:
        """(guard, successor) of action ``a`` with ``args`` (replicas, and ``q``: an epoch)."""
        guard, post = getattr(self, a.method)(st, args)
        return guard, post

    def a_controller_elect(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        """The controller elects ``n`` from the ISR, bumping the leader epoch."""
        ops = self.ops
        n = a["n"]
        if "elect_outside_isr" in self.c.bugs:
            guard = ops.And(st.q_leader != n, self.epoch_budget(st))
        else:
            guard = ops.And(st.q_isr[n - 1], st.q_leader != n, self.epoch_budget(st))
        return guard, self.controller_update(st, ops.lit(n), st.q_isr)

    def a_controller_shrink_isr(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        """The controller removes a broker it believes failed; a removed leader leaves the
        partition leaderless; the ISR {r} of a leader r is kept."""
        ops = self.ops
        r = a["r"]
        is_leader = st.q_leader == r
        without = self.isr_without(st.q_isr, r)
        keep = ops.And(is_leader, self.isr_is(st.q_isr, {r}))
        isr = tuple(ops.If(keep, old, new) for old, new in zip(st.q_isr, without, strict=True))
        leader = ops.If(is_leader, NONE, st.q_leader)
        guard = ops.And(self.epoch_budget(st), ops.Or(is_leader, st.q_isr[r - 1]))
        return guard, self.controller_update(st, leader, isr)

    def a_controller_failover(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        """Extended model: the controller takes the failed leader out of the ISR and elects
        a live ISR member in its place, in one metadata write."""
        ops = self.ops
        failed, n = a["failed"], a["n"]
        if n == failed:
            return ops.lit(False), st
        guard = ops.And(st.q_leader == failed, st.q_isr[n - 1], self.epoch_budget(st))
        return guard, self.controller_update(st, ops.lit(n), self.isr_without(st.q_isr, failed))

    def a_become_leader(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        """A broker named leader by a newer request takes its epoch and ISR; HW kept."""
        ops = self.ops
        q, leader = a["q"], a["_leader"]
        rep = self.rep(st, leader)
        guard = ops.And(
            ops.select(st.req_in, q), ops.select(st.req_leader, q) == leader, self.accepts(rep, q)
        )
        new = attrs.evolve(rep, epoch=q, leader=ops.lit(leader), isr=self.req_isr_at(st, q))
        return guard, self.with_rep(st, leader, new, pend_in=self.drop_pending(st, leader))

    def a_leader_write(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        """A replica presuming leadership appends (its epoch, the next id)."""
        ops = self.ops
        r = a["r"]
        rep = self.rep(st, r)
        guards = [rep.leader == r, rep.leo < self.log_size]
        if self.c.max_records is not None:
            guards.append(st.next_id < self.c.max_records)
        rid = st.next_id
        changes: dict[str, Any] = {"next_id": rid + 1}
        if self.c.extended:
            if self.c.acks == "all":
                guards.append(self.isr_count(rep.isr) >= self.c.min_isr)
                if "ack_before_hw" in self.c.bugs:
                    changes["acked_in"] = ops.store(st.acked_in, rid, ops.lit(True))
                    changes["acked_offset"] = ops.store(st.acked_offset, rid, rep.leo)
                else:
                    changes["pend_in"] = ops.store(st.pend_in, rid, ops.lit(True))
                    changes["pend_leader"] = ops.store(st.pend_leader, rid, ops.lit(r))
                    changes["pend_offset"] = ops.store(st.pend_offset, rid, rep.leo)
            elif self.c.acks == "1":
                changes["acked_in"] = ops.store(st.acked_in, rid, ops.lit(True))
                changes["acked_offset"] = ops.store(st.acked_offset, rid, rep.leo)
        new = self.append(rep, rep.epoch, rid)
        return ops.And(*guards), self.with_rep(st, r, new, **changes)

    def a_leader_shrink_isr(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        """The leader drops a lagging follower from the ISR (through the controller)."""
        ops = self.ops
        leader, f = a["leader"], a["f"]
        lrep = self.rep(st, leader)
        if f == leader:  # not in the spec's argument domain
            return ops.lit(False), st
        if self.c.fenced:
            lagging = ops.Not(
                ops.And(self.following(st, leader, f), self.rep(st, f).leo >= lrep.leo)
            )
        else:
            lagging = ops.Not(self.caught_up(st, leader, f, lrep.leo))
        ok, post = self.quorum_isr_update(st, leader, self.isr_without(lrep.isr, f))
        return ops.And(lrep.leader == leader, lrep.isr[f - 1], lagging, ok), post

    def a_leader_expand_isr(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        """The leader adds a caught-up follower to the ISR (through the controller)."""
        ops = self.ops
        leader, f = a["leader"], a["f"]
        lrep = self.rep(st, leader)
        if self.c.fenced:
            hw = lrep.hw
            ready = ops.And(
                self.following(st, leader, f),
                ops.Or(hw == 0, self.rep(st, f).leo >= hw),
                ops.Or(
                    hw == lrep.leo,
                    ops.And(hw < lrep.leo, self.rec_ep(lrep, hw) == lrep.epoch),
                ),
            )
        else:
            ready = self.caught_up(st, leader, f, lrep.hw)
        ok, post = self.quorum_isr_update(st, leader, self.isr_with(lrep.isr, f))
        return ops.And(lrep.leader == leader, ops.Not(lrep.isr[f - 1]), ready, ok), post

    def a_leader_advance_hw(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        """The leader's HW passes ``hw`` once every ISR member holds a record there."""
        ops = self.ops
        leader = a["leader"]
        lrep = self.rep(st, leader)
        hw = lrep.hw
        if self.c.fenced:
            room = lrep.leo > hw
            member_ok = [
                ops.Implies(
                    lrep.isr[f - 1],
                    ops.And(self.following(st, leader, f), self.rep(st, f).leo > hw),
                )
                for f in self.ids
            ]
        else:
            room = hw < self.log_size
            member_ok = [
                ops.Implies(
                    lrep.isr[f - 1],
                    ops.And(self.rep(st, f).leader == leader, self.rep(st, f).leo > hw),
                )
                for f in self.ids
            ]
        guard = ops.And(lrep.leader == leader, room, *member_ok)
        return guard, self.advance_hw(st, leader)

    def a_follower_fetch(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        """A follower fetches the record at its LEO from the replica it believes leads."""
        ops = self.ops
        f, leader = a["f"], a["_leader"]
        if f == leader:
            return ops.lit(False), st
        ok, post = self.replicate(st, leader, f)
        guard = ops.And(self.rep(st, f).leader == leader, ok)
        if self.c.fenced:
            guard = ops.And(guard, self.following(st, leader, f))
        return guard, post

    def a_become_follower(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        """A broker named follower by a newer request truncates by the variant's rule."""
        ops = self.ops
        q, r, leader = a["q"], a["r"], a["_leader"]
        if r == leader:
            return ops.lit(False), st
        rep = self.rep(st, r)
        guards = [
            ops.select(st.req_in, q),
            ops.select(st.req_leader, q) == leader,
            self.accepts(rep, q),
        ]
        if self.c.fenced:
            lrep = self.rep(st, leader)
            guards += [lrep.leader == leader, lrep.epoch == q]
        ok, post = self.become_follower_effect(st, q, r, leader)
        return ops.And(*guards, ok), post

    # --- the initial state -----------------------------------------------------------------

    def init(self, st: SymState) -> Any:
        """``st`` is the initial state (up to junk): empty logs, no leader, every replica
        in the quorum's ISR, no request, both counters 0, no ghost write."""
        ops = self.ops
        parts = [
            st.q_epoch == NIL,
            st.q_leader == NONE,
            *st.q_isr,
            st.next_epoch == 0,
            st.next_id == 0,
            self.empty(st.req_in),
            self.empty(st.pend_in),
            self.empty(st.acked_in),
        ]
        for rep in st.reps:
            parts += [rep.leo == 0, rep.hw == 0, rep.epoch == NIL, rep.leader == NONE]
            parts += [ops.Not(x) for x in rep.isr]
        return ops.And(*parts)

    def empty(self, arr: Any) -> Any:
        if not self.ops.symbolic:
            return not arr.keys_where(True) and arr.default is False
        assert isinstance(self.ops, Z3Ops)
        return self.ops.empty(arr)


def python_args(
    enc: Encoding, a: ActionEnc, s: State, spec_args: tuple[Any, ...]
) -> dict[str, Any]:
    """The encoding's arguments for a call of the spec's action with ``spec_args`` (the
    request becomes its epoch; the hidden ``_leader`` is read as the spec reads it)."""
    named = dict(zip(a.params, spec_args, strict=True))
    out: dict[str, Any] = {}
    for name, value in named.items():
        if name == "q":
            out["q"] = value.epoch
        else:
            out[name] = value
    if "_leader" in a.replicas:
        if a.request:
            out["_leader"] = named["q"].leader
        else:
            out["_leader"] = s.rep(named["f"]).leader
    return out
