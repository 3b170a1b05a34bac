"""The spec framework: how an executable specification is written.

A spec is a class whose instances are bound to one frozen parameter record. It declares, with
the decorators below:

- ``init()``: the initial states;
- actions: pure methods ``(state, *args) -> state | None`` (``None``: not enabled here), each
  with a *domain*, a method ``(state) -> iterable of argument tuples`` that enumerates every
  argument the action could take in that state, so the model checker can try them all;
- invariants: predicates that must hold in every reachable state;
- transition properties: predicates on ``(before, step, after)`` that must hold on every
  transition (for example "leader epochs only grow");
- "sometimes" properties: states (or transitions) that must be reachable, so that a model
  cannot pass by being vacuous (a leader change does happen, an ISR does shrink);
- liveness properties (``@eventually``): "whenever P, eventually Q" (TLA+'s ``P ~> Q``) or
  "always eventually Q" (``[]<>Q``), checked under the fairness the spec declares for its
  actions (``fairness()``: TLA+'s ``WF``/``SF``), by ``spec.liveness``;
- ``within_bounds(state)``: the state constraint. It is a *bound* on exploration (TLC's
  CONSTRAINT), kept apart from the invariants: a state outside the bounds is still checked
  but not expanded.

Actions carry a *kind*: ``protocol`` (what the system does by itself), ``fault`` (the
environment breaks something; faults are bounded by the spec, usually by a budget in the
state) and ``heal`` (recovery; never bounded, so that every fault can be undone).

Everything here is pure: no I/O, no clock, no randomness. The model checker lives in
``spec.explore``.
"""

from __future__ import annotations

import enum
import itertools
import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any, ClassVar, TypeVar

import attrs

State = TypeVar("State", bound=Hashable)


class Kind(enum.Enum):
    """What an action stands for; the model checker reports coverage per kind."""

    PROTOCOL = "protocol"
    FAULT = "fault"
    HEAL = "heal"


class SpecError(Exception):
    """A spec or its parameters are used wrongly (an unknown invariant name, bad bounds)."""


@attrs.frozen
class Step:
    """One transition's label: the action's name and its arguments, by name."""

    action: str
    args: tuple[tuple[str, Any], ...] = ()

    def describe(self) -> str:
        if not self.args:
            return self.action
        inner = ", ".join(f"{name}={_show(value)}" for name, value in self.args)
        return f"{self.action}({inner})"


def _show(value: Any) -> str:
    if isinstance(value, frozenset):
        return "{" + ",".join(str(v) for v in sorted(value)) + "}"
    if hasattr(value, "describe"):
        return str(value.describe())
    return str(value)


# --- declarations --------------------------------------------------------------------------


@attrs.frozen
class ActionDecl:
    name: str
    method: str
    domain: str | None
    params: tuple[str, ...]
    kind: Kind
    doc: str


@attrs.frozen
class PredicateDecl:
    name: str
    method: str
    doc: str
    on_transition: bool = False


@attrs.frozen
class LivenessDecl:
    """``premise ~> method``: whenever ``premise`` holds (every state when it is ``None``:
    ``[]<>method``), ``method`` holds then or later, on every fair behavior."""

    name: str
    method: str
    premise: str | None
    doc: str


@attrs.frozen
class Fair:
    """A fairness condition on an action (TLA+'s ``WF_vars(A)`` / ``SF_vars(A)``).

    Weak fairness: an action that stays enabled is eventually taken. Strong fairness: an
    action enabled infinitely often is eventually taken. With ``per_argument`` the condition
    holds separately for every argument tuple (``\\A f : WF_vars(Fetch(f))``: each follower
    keeps fetching), otherwise for the action as a whole (some argument is taken).
    """

    action: str
    strong: bool = False
    per_argument: bool = True


def _first_paragraph(fn: Callable[..., Any]) -> str:
    doc = (fn.__doc__ or "").strip()
    return " ".join(doc.split("\n\n")[0].split())


def _tag(role: str, **meta: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        if not (fn.__doc__ or "").strip():
            raise SpecError(
                f"{fn.__qualname__} has no docstring: every {role} must say which Kafka "
                "mechanism, config or KIP it models"
            )
        fn.__spec_role__ = (role, meta)  # type: ignore[attr-defined]
        return fn

    return mark


def action(
    *, domain: str | None = None, kind: Kind = Kind.PROTOCOL
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare an action. ``domain`` names the method enumerating its argument tuples; an
    action without arguments has no domain."""
    return _tag("action", domain=domain, kind=kind)


def invariant(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Declare a state invariant ``(state) -> bool``."""
    return _tag("invariant")(fn)


def transition_property(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Declare a transition property ``(before, step, after) -> bool``."""
    return _tag("transition_property")(fn)


def sometimes(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Declare a state that must be reachable ``(state) -> bool``."""
    return _tag("sometimes", on_transition=False)(fn)


def sometimes_transition(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Declare a transition that must be possible ``(before, step, after) -> bool``."""
    return _tag("sometimes", on_transition=True)(fn)


def eventually(*, after: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a liveness property ``(state) -> bool`` that must eventually hold: after every
    state where the method named ``after`` holds (``P ~> Q``), or, without ``after``,
    infinitely often on every fair behavior (``[]<>Q``)."""
    return _tag("eventually", after=after)


def _spec_name(method: str) -> str:
    """``strong_isr`` -> ``StrongIsr``: the names invariants are known by (as in TLA+)."""
    return "".join(part.capitalize() if part.islower() else part for part in method.split("_"))


# --- the base class ------------------------------------------------------------------------


class Spec:
    """Base class of every executable spec. Subclasses set ``name`` and use the decorators."""

    name: ClassVar[str] = "spec"
    _actions: ClassVar[tuple[ActionDecl, ...]] = ()
    _invariants: ClassVar[tuple[PredicateDecl, ...]] = ()
    _transition_properties: ClassVar[tuple[PredicateDecl, ...]] = ()
    _sometimes: ClassVar[tuple[PredicateDecl, ...]] = ()
    _liveness: ClassVar[tuple[LivenessDecl, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        actions: list[ActionDecl] = []
        invariants: list[PredicateDecl] = []
        transitions: list[PredicateDecl] = []
        sometimes_: list[PredicateDecl] = []
        liveness: list[LivenessDecl] = []
        seen: set[str] = set()
        for klass in reversed(cls.__mro__):
            for attr, fn in vars(klass).items():
                role = getattr(fn, "__spec_role__", None)
                if role is None or attr in seen:
                    continue
                seen.add(attr)
                kind, meta = role
                doc = _first_paragraph(fn)
                if kind == "action":
                    code = fn.__code__
                    params = code.co_varnames[2 : code.co_argcount]
                    if params and meta["domain"] is None:
                        raise SpecError(f"action {attr} takes {params} but declares no domain")
                    actions.append(
                        ActionDecl(attr, attr, meta["domain"], params, meta["kind"], doc)
                    )
                elif kind == "invariant":
                    invariants.append(PredicateDecl(_spec_name(attr), attr, doc))
                elif kind == "transition_property":
                    transitions.append(PredicateDecl(_spec_name(attr), attr, doc, True))
                elif kind == "eventually":
                    liveness.append(LivenessDecl(_spec_name(attr), attr, meta["after"], doc))
                else:
                    sometimes_.append(
                        PredicateDecl(_spec_name(attr), attr, doc, meta["on_transition"])
                    )
        cls._actions = tuple(actions)
        cls._invariants = tuple(invariants)
        cls._transition_properties = tuple(transitions)
        cls._sometimes = tuple(sometimes_)
        cls._liveness = tuple(liveness)

    # What a subclass provides -------------------------------------------------------------

    def init(self) -> Iterable[Any]:
        raise NotImplementedError

    def within_bounds(self, state: Any) -> bool:
        """The state constraint: states outside it are checked but not expanded."""
        return True

    def enabled_actions(self) -> tuple[ActionDecl, ...]:
        """The actions this configuration uses (a variant may switch some off)."""
        return self._actions

    def applicable_sometimes(self) -> tuple[PredicateDecl, ...]:
        """The "sometimes" properties that make sense for these parameters."""
        return self._sometimes

    def applicable_liveness(self) -> tuple[LivenessDecl, ...]:
        """The liveness properties that make sense for these parameters."""
        return self._liveness

    def fairness(self) -> tuple[Fair, ...]:
        """The fairness conditions of this configuration: which actions, once enabled,
        eventually happen. None by default: then a behavior may stop anywhere."""
        return ()

    def select_liveness(self, names: Iterable[str] | None) -> tuple[LivenessDecl, ...]:
        """The liveness properties to check; all applicable ones by default."""
        known = {decl.name: decl for decl in self.applicable_liveness()}
        if names is None:
            return tuple(known.values())
        chosen: list[LivenessDecl] = []
        for name in names:
            if name not in known:
                raise SpecError(
                    f"unknown liveness property {name!r} for spec {self.name}; accepted: "
                    + (", ".join(sorted(known)) or "none")
                )
            chosen.append(known[name])
        return tuple(chosen)

    # Symmetry (optional): interchangeable replicas -----------------------------------------

    def symmetry_permutations(self) -> Sequence[tuple[int, ...]]:
        """Permutations of the interchangeable ids; empty when the spec has no symmetry."""
        return ()

    def permute(self, state: Any, perm: tuple[int, ...]) -> Any:
        raise SpecError(f"{self.name} declares no symmetry")

    def sort_key(self, state: Any) -> Any:
        """A total order on states, used to pick the canonical member of a symmetry orbit."""
        raise SpecError(f"{self.name} declares no symmetry")

    def canonical(self, state: Any) -> Any:
        """The canonical member of ``state``'s orbit: by default the least image under every
        permutation. A spec may override it with something faster, as long as it returns
        the same member for every state of an orbit, and a member of that orbit."""
        images = {self.permute(state, p) for p in self.symmetry_permutations()}
        return min(images, key=self.sort_key)

    def orbit_size(self, state: Any) -> int:
        """How many distinct states the permutations map ``state`` to."""
        return len({self.permute(state, p) for p in self.symmetry_permutations()})

    # Rendering (optional) -----------------------------------------------------------------

    def columns(self, state: Any) -> list[tuple[str, str, str]]:
        """(group, column, value) cells describing a state: one row of a trace table."""
        return [("state", "state", repr(state))]

    def to_json(self, state: Any) -> Any:
        return repr(state)

    def short(self, state: Any) -> str:
        """A one-line description, for DOT graphs."""
        return repr(state)

    # Used by the model checker ------------------------------------------------------------

    def actions(self) -> tuple[ActionDecl, ...]:
        return self.enabled_actions()

    def invariants(self) -> tuple[PredicateDecl, ...]:
        return self._invariants

    def transition_properties(self) -> tuple[PredicateDecl, ...]:
        return self._transition_properties

    def select_invariants(self, names: Iterable[str] | None) -> tuple[PredicateDecl, ...]:
        """The invariants and transition properties to check; all of them by default."""
        everything = self._invariants + self._transition_properties
        if names is None:
            return everything
        known = {decl.name: decl for decl in everything}
        chosen: list[PredicateDecl] = []
        for name in names:
            if name not in known:
                raise SpecError(
                    f"unknown invariant {name!r} for spec {self.name}; accepted: "
                    + ", ".join(sorted(known))
                )
            chosen.append(known[name])
        return tuple(chosen)

    def successors(self, state: Any) -> Iterator[tuple[ActionDecl, tuple[Any, ...], Any]]:
        """Every enabled (action, args, next state) from ``state``, in a fixed order."""
        for decl in self.actions():
            fn = getattr(self, decl.method)
            if decl.domain is None:
                nxt = fn(state)
                if nxt is not None:
                    yield decl, (), nxt
                continue
            for args in getattr(self, decl.domain)(state):
                nxt = fn(state, *args)
                if nxt is not None:
                    yield decl, args, nxt

    def step_of(self, decl: ActionDecl, args: tuple[Any, ...]) -> Step:
        return Step(decl.name, tuple(zip(decl.params, args, strict=True)))


class SignatureSymmetry(Spec):
    """A symmetry whose canonical form is found fast: each id gets a signature
    (``symmetry_signature``, a summary of the state that a renaming carries along with the
    id), and only the renamings that sort the ids by signature are tried, several only where
    signatures tie. The set of sorted images is the same for every state of an orbit, so its
    least member (by ``sort_key``) is a canonical form."""

    ids: tuple[int, ...]

    def symmetry_signature(self, state: Any, i: int) -> Any:
        """What the state says about id ``i``, in terms that do not name other ids."""
        raise SpecError(f"{self.name} declares no symmetry signature")

    def sorting_permutations(self, state: Any) -> list[tuple[int, ...]]:
        """The permutations that sort the ids by signature (several only on ties)."""
        signed = sorted((self.symmetry_signature(state, i), i) for i in self.ids)
        groups: list[list[int]] = []
        previous = None
        for sig, i in signed:
            if groups and sig == previous:
                groups[-1].append(i)
            else:
                groups.append([i])
            previous = sig
        orders: list[list[int]] = [[]]
        for group in groups:
            if len(group) == 1:
                for order in orders:
                    order.append(group[0])
                continue
            orders = [order + list(p) for order in orders for p in itertools.permutations(group)]
        perms = []
        for order in orders:
            perm = [0] * len(self.ids)
            for position, old in enumerate(order):
                perm[old - 1] = position + 1
            perms.append(tuple(perm))
        return perms

    def canonical(self, state: Any) -> Any:
        """The least signature-sorted image of ``state``."""
        perms = self.sorting_permutations(state)
        if len(perms) == 1:
            perm = perms[0]
            return state if perm == tuple(self.ids) else self.permute(state, perm)
        return min((self.permute(state, p) for p in perms), key=self.sort_key)

    def orbit_size(self, state: Any) -> int:
        """n! over the number of renamings that fix ``state``; only renamings within groups
        of equal signatures can fix it."""
        perms = self.sorting_permutations(state)
        base = self.permute(state, perms[0])
        fixing = sum(1 for p in perms if self.permute(state, p) == base)
        return math.factorial(len(self.ids)) // fixing


def all_permutations(ids: Sequence[int]) -> list[tuple[int, ...]]:
    """Every permutation of ``ids``, as mappings ``perm[i] = image of ids[i]``."""
    return list(itertools.permutations(ids))
