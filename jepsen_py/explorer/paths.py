"""Paths through a spec's state graph, as the explorer addresses states.

A state is named by the path that reaches it: the index of an initial state (``init()``'s
order) and, for each step, the index of the chosen transition among ``successors(state)``
(the spec's fixed order: actions in declaration order, then each action's domain). The
server keeps no session: every request replays its path from the initial state, so a path
is also a URL that anyone can open (``#init=0&path=2,0,5``).

Counterexamples come from the model checker ``kmodel check`` runs (``spec.explore.check``,
breadth-first: the shortest trace; ``spec.liveness.check_liveness`` for a liveness
property's lasso), and trace files are the ones ``kmodel check --trace-json`` writes; both
are matched back, step by step, to a path.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import orjson

from spec.explore import TraceStep
from spec.explore import check as model_check
from spec.framework import ActionDecl, Spec
from spec.liveness import check_liveness
from spec.trace import trace_json

COUNTEREXAMPLE_BUDGET = 500_000
"""Distinct states the explorer's counterexample search may visit before it gives up (the
``--max-states`` of ``kmodel check``); ``kmodel explore --max-states`` changes it."""

CACHE_STATES = 20_000
"""States whose successors are remembered (replaying a long path stays cheap)."""


class PathError(ValueError):
    """A path or a trace that does not lead anywhere in this spec; the message says where."""


@attrs.frozen
class Transition:
    """One enabled step from a state: its index (what a path records), the action and its
    arguments as ``Step.describe`` prints them, the action's kind and docstring."""

    index: int
    action: str
    label: str
    kind: str
    doc: str


@attrs.frozen
class Counterexample:
    """What the model checker found for this spec: the property violated (``None`` when
    none was, with ``message`` saying how far it looked) and the path to the violation; a
    liveness violation's cycle starts after ``cycle_starts_after`` steps."""

    property: str | None
    kind: str | None
    doc: str
    init: int
    path: tuple[int, ...]
    message: str
    cycle_starts_after: int | None = None


@attrs.frozen
class LoadedTrace:
    """A trace file as a path: where it starts (``init``), the path, the property it says
    it violates, and, for a liveness lasso, the steps before its cycle."""

    init: int
    path: tuple[int, ...]
    violated: str | None
    cycle_starts_after: int | None = None


def _plain(value: Any) -> Any:
    """``value`` as JSON reads it back (tuples become lists, keys strings)."""
    return orjson.loads(orjson.dumps(value))


class Explorer:
    """Replays paths through ``spec`` and renders the states they reach.

    ``params`` are the spec's parameters as ``kmodel check --json`` reports them: a trace
    file written with other parameters is refused, since its steps would not match.
    """

    def __init__(
        self,
        spec: Spec,
        params: dict[str, Any],
        *,
        max_states: int = COUNTEREXAMPLE_BUDGET,
    ) -> None:
        self.spec = spec
        self.params = _plain(params)
        self.max_states = max_states
        self.inits: tuple[Any, ...] = tuple(spec.init())
        if not self.inits:
            raise PathError(f"spec {spec.name} has no initial state with these parameters")
        self._successors: OrderedDict[Any, list[tuple[ActionDecl, tuple[Any, ...], Any]]] = (
            OrderedDict()
        )
        self._cache_lock = threading.Lock()  # the server answers requests in threads
        self._counterexample: Counterexample | None = None

    # --- paths -----------------------------------------------------------------------------

    def successors(self, state: Any) -> list[tuple[ActionDecl, tuple[Any, ...], Any]]:
        """``spec.successors(state)`` as a list, remembered for the latest states."""
        with self._cache_lock:
            found = self._successors.get(state)
            if found is not None:
                self._successors.move_to_end(state)
                return found
        found = list(self.spec.successors(state))
        with self._cache_lock:
            self._successors[state] = found
            if len(self._successors) > CACHE_STATES:
                self._successors.popitem(last=False)
        return found

    def replay(self, init: int, path: Sequence[int]) -> list[TraceStep]:
        """The states along ``path`` from initial state ``init``, as a trace."""
        if not 0 <= init < len(self.inits):
            raise PathError(
                f"initial state {init} does not exist: spec {self.spec.name} has "
                f"{len(self.inits)} (0 to {len(self.inits) - 1})"
            )
        trace = [TraceStep(None, self.inits[init])]
        for position, choice in enumerate(path):
            enabled = self.successors(trace[-1].state)
            if not 0 <= choice < len(enabled):
                raise PathError(
                    f"step {position + 1} of the path chooses transition {choice}, but only "
                    f"{len(enabled)} are enabled there (0 to {len(enabled) - 1}); the path was "
                    "made with other parameters or another version of the spec"
                )
            decl, args, nxt = enabled[choice]
            trace.append(TraceStep(self.spec.step_of(decl, args), nxt))
        return trace

    def transitions(self, state: Any) -> list[Transition]:
        return [
            Transition(
                index,
                decl.name,
                self.spec.step_of(decl, args).describe(),
                decl.kind.value,
                decl.doc,
            )
            for index, (decl, args, _) in enumerate(self.successors(state))
        ]

    # --- rendering -------------------------------------------------------------------------

    def view(self, init: int, path: Sequence[int]) -> dict[str, Any]:
        """Everything the page shows for the state ``path`` reaches: its cells (the trace
        table's columns, grouped), its JSON, the invariants that hold or fail there, the
        transition properties of the last step, the path so far, and the enabled steps."""
        trace = self.replay(init, path)
        state = trace[-1].state
        spec = self.spec
        groups: list[dict[str, Any]] = []
        for group, column, value in spec.columns(state):
            if not groups or groups[-1]["group"] != group:
                groups.append({"group": group, "cells": []})
            groups[-1]["cells"].append([column, value])
        invariants = [
            {"name": decl.name, "holds": bool(getattr(spec, decl.method)(state)), "doc": decl.doc}
            for decl in spec.invariants()
        ]
        transition = []
        if len(trace) > 1:
            before, last = trace[-2].state, trace[-1]
            transition = [
                {
                    "name": decl.name,
                    "holds": bool(getattr(spec, decl.method)(before, last.step, state)),
                    "doc": decl.doc,
                }
                for decl in spec.transition_properties()
            ]
        return {
            "spec": spec.name,
            "init": init,
            "path": list(path),
            "trail": [
                {"label": "Init" if step.step is None else step.step.describe()} for step in trace
            ],
            "state": {"groups": groups, "json": _plain(spec.to_json(state))},
            "within_bounds": bool(spec.within_bounds(state)),
            "invariants": invariants,
            "transition_properties": transition,
            "enabled": [attrs.asdict(t) for t in self.transitions(state)],
        }

    def describe(self) -> dict[str, Any]:
        """The spec, its parameters, its actions and its properties."""
        spec = self.spec
        return {
            "spec": spec.name,
            "params": self.params,
            "initial_states": len(self.inits),
            "actions": [
                {"name": d.name, "kind": d.kind.value, "doc": d.doc} for d in spec.actions()
            ],
            "invariants": [{"name": d.name, "doc": d.doc} for d in spec.invariants()],
            "liveness": [{"name": d.name, "doc": d.doc} for d in spec.applicable_liveness()],
        }

    # --- counterexamples and trace files ---------------------------------------------------

    def match(
        self,
        trace: Sequence[Any],
        same_init: Callable[[Any, Any], bool],
        same_step: Callable[[Any, ActionDecl, tuple[Any, ...], Any], bool],
    ) -> tuple[int, tuple[int, ...]]:
        """The path that follows ``trace``: the initial state ``same_init`` accepts, then at
        each step the first enabled transition ``same_step`` accepts."""
        if not trace:
            raise PathError("the trace has no step")
        starts = [i for i, state in enumerate(self.inits) if same_init(trace[0], state)]
        if not starts:
            raise PathError("the trace's first state is not an initial state of this spec")
        init = starts[0]
        state = self.inits[init]
        path: list[int] = []
        for position, wanted in enumerate(trace[1:], start=2):
            for index, (decl, args, nxt) in enumerate(self.successors(state)):
                if same_step(wanted, decl, args, nxt):
                    path.append(index)
                    state = nxt
                    break
            else:
                raise PathError(
                    f"step {position} of the trace ({describe_wanted(wanted)}) is not enabled "
                    "where the trace has come to: was it written with other parameters?"
                )
        return init, tuple(path)

    def path_of_trace_steps(self, trace: Sequence[TraceStep]) -> tuple[int, tuple[int, ...]]:
        """The path of a trace the model checker found in this process (states compared
        as values)."""
        spec = self.spec
        return self.match(
            trace,
            lambda wanted, state: wanted.state == state,
            lambda wanted, decl, args, nxt: (
                spec.step_of(decl, args) == wanted.step and nxt == wanted.state
            ),
        )

    def path_of_trace_file(self, payload: Any) -> LoadedTrace:
        """The path of a trace file ``kmodel check --trace-json`` wrote (its parsed JSON):
        each step's action, arguments and state JSON must match. The file's parameters must
        be this explorer's. A liveness lasso's ``cycle_starts_after`` counts the states of
        its prefix; the path's counts steps, one fewer."""
        if not isinstance(payload, dict) or not isinstance(payload.get("trace"), list):
            raise PathError(
                "not a trace file: expected the JSON object kmodel check --trace-json writes, "
                'with a "trace" list of steps'
            )
        params = payload.get("params")
        if params is not None and _plain(params) != self.params:
            differ = sorted(
                key
                for key in set(params) | set(self.params)
                if params.get(key) != self.params.get(key)
            )
            raise PathError(
                f"the trace was written with other parameters ({', '.join(differ)}: "
                f"{ {k: params.get(k) for k in differ} }); restart kmodel explore "
                f"{self.spec.name} with the flags that wrote it"
            )
        steps = payload["trace"]
        for number, step in enumerate(steps, start=1):
            if not isinstance(step, dict) or "state" not in step:
                raise PathError(f'trace step {number} is not an object with a "state"')
        spec = self.spec

        def same_init(wanted: dict[str, Any], state: Any) -> bool:
            return _plain(spec.to_json(state)) == wanted["state"]

        def same_step(wanted: dict[str, Any], decl: ActionDecl, args: Any, nxt: Any) -> bool:
            if decl.name != wanted.get("action"):
                return False
            step_json = trace_json(spec, [TraceStep(spec.step_of(decl, args), nxt)])[0]
            return bool(
                _plain(step_json["args"]) == wanted.get("args", {})
                and _plain(step_json["state"]) == wanted["state"]
            )

        init, path = self.match(steps, same_init, same_step)
        violated = payload.get("violated")
        prefix_states = payload.get("cycle_starts_after")
        return LoadedTrace(
            init,
            path,
            violated if isinstance(violated, str) else None,
            prefix_states - 1 if isinstance(prefix_states, int) and prefix_states > 0 else None,
        )

    def counterexample(self) -> Counterexample:
        """The shortest violation of an invariant or transition property (breadth-first),
        else, when the search was complete, a liveness property's lasso; computed once."""
        if self._counterexample is None:
            self._counterexample = self._find_counterexample()
        return self._counterexample

    def _find_counterexample(self) -> Counterexample:
        spec = self.spec
        result = model_check(spec, max_states=self.max_states)
        violation = result.violation
        if violation is not None:
            init, path = self.path_of_trace_steps(violation.trace)
            what = "invariant" if violation.kind == "invariant" else "transition property"
            return Counterexample(
                violation.name,
                violation.kind,
                violation.doc,
                init,
                path,
                f"{what} {violation.name} is violated after {len(path)} steps (the shortest "
                "counterexample: the search is breadth-first)",
            )
        searched = f"{result.stats.distinct_states:,} distinct states"
        if not result.complete:
            return Counterexample(
                None,
                None,
                "",
                0,
                (),
                f"no violation in the first {searched} (the budget, --max-states "
                f"{self.max_states:,}, ran out first)",
            )
        if spec.applicable_liveness():
            live = check_liveness(spec, max_states=self.max_states)
            if live.violation is not None:
                lasso = live.violation.lasso
                init, path = self.path_of_trace_steps(lasso.prefix + lasso.cycle)
                return Counterexample(
                    live.violation.name,
                    "liveness",
                    live.violation.doc,
                    init,
                    path,
                    f"liveness property {live.violation.name} is violated: a fair behavior "
                    f"along which it never holds; after step {len(lasso.prefix) - 1} it "
                    f"repeats the last {len(lasso.cycle)} steps forever",
                    cycle_starts_after=len(lasso.prefix) - 1,
                )
        return Counterexample(
            None, None, "", 0, (), f"no violation: all {searched} within the bounds were checked"
        )


def describe_wanted(wanted: Any) -> str:
    """A trace step, as an error message names it."""
    if isinstance(wanted, TraceStep):
        return "Init" if wanted.step is None else wanted.step.describe()
    if isinstance(wanted, dict):
        return str(wanted.get("action"))
    return repr(wanted)
