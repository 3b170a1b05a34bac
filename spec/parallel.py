"""Breadth-first search on several cores, with the sequential search's exact results.

``spec.explore.check`` runs on one core. Here the work of a breadth-first level is split
across worker processes: each takes chunks of the frontier and does what costs, namely
generating successors, putting them in canonical form (symmetry), fingerprinting them,
and evaluating invariants, transition properties and "sometimes" properties on them. One
coordinator reads the workers' results *in frontier order* and does only what decides: which
successor is new (a fingerprint seen set, as in ``spec.fingerprints``), the counts, and the
first violation or witness. Because the coordinator consumes transitions in exactly the
order the sequential search generates them, every figure is the sequential search's: the
distinct states, transitions, depth, per-action coverage, the shortest counterexample (the
same one), the witnesses, and even the counts at the moment a violation stops the search.

A worker sends a state's body (pickled) only the first time it produces that fingerprint;
the coordinator forwards the bodies of new states, still pickled, as the next level's
frontier. Chunks go out in order through one queue, so each worker sees its chunks in
increasing order, and the first time the coordinator meets a fingerprint is always a time
the producing worker sent its body.

The workers are forked processes (``multiprocessing``, start method ``fork``): the spec is
inherited, never pickled. Results are deterministic: the same as with one worker. Counts
rely on 64-bit fingerprints, as ``spec.fingerprints`` explains (the collision probability
is reported).
"""

from __future__ import annotations

import multiprocessing as mp
import pickle
from array import array
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs

from spec.explore import (
    Canonical,
    CheckResult,
    ProgressFn,
    Stats,
    TraceStep,
    Violation,
    concretize,
    exhaustive_result,
    predicates,
)
from spec.fingerprints import (
    SeenSet,
    fingerprint,
    fingerprint_figures,
    parent_chain,
    rebuild_trace,
    replay_then,
)
from spec.framework import Spec

CHUNK = 1_000
"""Frontier states per task: large enough to amortise a message, small enough to balance."""

PARALLEL_FROM = 2_000
"""A level with fewer frontier states is expanded in the coordinator's own process (the
same code): small models and the first levels never pay for processes."""

NONE = -1


@attrs.frozen
class Chunk:
    """What a worker reports for one chunk of the frontier, transition by transition in the
    sequential search's order (``counts[i]`` transitions for the chunk's ``i``-th state)."""

    counts: array  # transitions per frontier state (0 when outside the bounds)
    fps: array  # each successor's fingerprint (canonical form)
    actions: array  # each transition's action index
    failed: array  # each transition's first failing transition property, or NONE
    witnesses: array  # each transition's bit set of transition "sometimes" properties
    bodies: dict[int, tuple[bytes, int, int, int]]
    """Per transition index whose successor this worker produced for the first time: the
    pickled canonical state, its first failing invariant (or NONE), its bit set of state
    "sometimes" properties, and its orbit size (0 without symmetry)."""


class Expander:
    """Expands frontier states and judges their successors: what a worker process (or a
    Spark task, ``jepsen_py.spark_search``) does. With ``remember`` (a worker that sees its
    states in the search's order), a "sometimes" property it has already seen hold is not
    evaluated again; without it, every property is evaluated on every state."""

    def __init__(
        self,
        spec: Spec,
        invariants: Iterable[str] | None,
        symmetry: bool,
        *,
        remember: bool = True,
        orbits: bool = True,
    ) -> None:
        self.remember = remember
        self.orbits = symmetry and orbits
        selected = spec.select_invariants(invariants)
        self.spec = spec
        self.state_invs = [
            p for _, p in predicates(spec, [d for d in selected if not d.on_transition])
        ]
        self.trans_props = [
            p for _, p in predicates(spec, [d for d in selected if d.on_transition])
        ]
        sometimes = spec.applicable_sometimes()
        self.state_sometimes = [
            p for _, p in predicates(spec, [d for d in sometimes if not d.on_transition])
        ]
        self.trans_sometimes = [
            p for _, p in predicates(spec, [d for d in sometimes if d.on_transition])
        ]
        self.canon = Canonical(spec, symmetry)
        self.symmetry = symmetry
        self.actions = [
            (
                i,
                decl,
                getattr(spec, decl.method),
                getattr(spec, decl.domain) if decl.domain else None,
            )
            for i, decl in enumerate(spec.actions())
        ]
        self.produced: set[int] = set()
        self.state_done = 0  # bits of state "sometimes" already witnessed by this worker
        self.trans_done = 0

    def transitions(self, s: Any) -> Iterator[tuple[int, int, int, Any, int]]:
        """Every transition of ``s`` (within the bounds) in the search's order: its action's
        index, its first failing transition property (or NONE), its bit set of transition
        "sometimes" properties, and the successor's canonical form and fingerprint."""
        spec, canon = self.spec, self.canon
        if not spec.within_bounds(s):
            return
        for i, decl, fn, domain in self.actions:
            for args in domain(s) if domain is not None else ((),):
                t = fn(s, *args)
                if t is None:
                    continue
                first_failed = NONE
                bits = 0
                if self.trans_props or self.trans_sometimes:
                    step = spec.step_of(decl, args)
                    for k, prop in enumerate(self.trans_props):
                        if not prop(s, step, t):
                            first_failed = k
                            break
                    done = self.trans_done if self.remember else 0
                    for k, pred in enumerate(self.trans_sometimes):
                        if not done >> k & 1 and pred(s, step, t):
                            bits |= 1 << k
                    self.trans_done |= bits
                c = canon(t)
                yield i, first_failed, bits, c, fingerprint(c)

    def expand(self, states: list[bytes]) -> Chunk:
        counts, fps, acts = array("q"), array("q"), array("h")
        failed, witnesses = array("b"), array("q")
        bodies: dict[int, tuple[bytes, int, int, int]] = {}
        for blob in states:
            n = 0
            for i, first_failed, bits, c, fp in self.transitions(pickle.loads(blob)):
                n += 1
                fps.append(fp)
                acts.append(i)
                failed.append(first_failed)
                witnesses.append(bits)
                if fp not in self.produced:
                    self.produced.add(fp)
                    bodies[len(fps) - 1] = self.judge(c)
            counts.append(n)
        return Chunk(counts, fps, acts, failed, witnesses, bodies)

    def judge(self, c: Any) -> tuple[bytes, int, int, int]:
        bad = next((k for k, pred in enumerate(self.state_invs) if not pred(c)), NONE)
        bits = 0
        done = self.state_done if self.remember else 0
        for k, pred in enumerate(self.state_sometimes):
            if not done >> k & 1 and pred(c):
                bits |= 1 << k
        self.state_done |= bits
        orbit = self.canon.orbit_size(c) if self.orbits else 0
        return pickle.dumps(c, protocol=pickle.HIGHEST_PROTOCOL), bad, bits, orbit

    def serve(self, tasks: Any, results: Any) -> None:
        while True:
            task = tasks.get()
            if task is None:
                return
            index, states = task
            results.put((index, self.expand(states)))


def _serve(worker: Expander, tasks: Any, results: Any) -> None:
    worker.serve(tasks, results)


def check_parallel(
    spec: Spec,
    *,
    workers: int,
    invariants: Iterable[str] | None = None,
    symmetry: bool = False,
    max_states: int | None = None,
    max_depth: int | None = None,
    clock: Callable[[], float] | None = None,
    progress: ProgressFn | None = None,
    progress_every: int = 20_000,
    count_unreduced: bool = True,
) -> CheckResult:
    """``spec.explore.check``'s search on ``workers`` processes (see the module doc). With
    symmetry, ``count_unreduced=False`` skips every new state's orbit size (about a third of
    a symmetric search's time): ``stats.unreduced_states`` is then None."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    selected = spec.select_invariants(invariants)
    inv_decls = [d for d in selected if not d.on_transition]
    trans_decls = [d for d in selected if d.on_transition]
    state_some = [d for d in spec.applicable_sometimes() if not d.on_transition]
    trans_some = [d for d in spec.applicable_sometimes() if d.on_transition]
    witnessed: dict[str, tuple[TraceStep, ...] | None] = {
        d.name: None for d in spec.applicable_sometimes()
    }
    canon = Canonical(spec, symmetry)
    decls = list(spec.actions())
    fired = [0] * len(decls)
    found_new = [0] * len(decls)
    stats = Stats(unreduced_states=0 if symmetry and count_unreduced else None)
    start = clock() if clock else 0.0
    seen = SeenSet()
    state_pending = (1 << len(state_some)) - 1
    trans_pending = (1 << len(trans_some)) - 1

    def path_to(fp: int) -> list[TraceStep]:
        return rebuild_trace(spec, canon, seen, fp)

    def finish(complete: bool, violation: Violation | None) -> CheckResult:
        stats.seconds = (clock() - start) if clock else 0.0
        fingerprint_figures(stats, seen.nbytes, sum(fired))
        return exhaustive_result(
            spec,
            stats,
            names=[d.name for d in decls],
            fired=fired,
            found_new=found_new,
            complete=complete,
            violation=violation,
            witnessed=witnessed,
            checked=selected,
        )

    def transition_trace(parent_fp: int, nth: int) -> list[TraceStep]:
        return replay_then(spec, canon, parent_chain(seen, parent_fp), nth)

    # The initial states, here: few, and they seed the first level.
    judge = Expander(spec, invariants, symmetry, orbits=count_unreduced)
    frontier: list[tuple[int, bytes]] = []
    for s0 in spec.init():
        c0 = canon(s0)
        fp0 = fingerprint(c0)
        if fp0 in seen:
            continue
        seen.add(fp0, fp0)
        stats.distinct_states += 1
        blob, bad, bits, orbit = judge.judge(c0)
        if stats.unreduced_states is not None:
            stats.unreduced_states += orbit
        if bad != NONE:
            stats.depth = 1
            d = inv_decls[bad]
            return finish(
                False, Violation("invariant", d.name, d.doc, concretize(spec, canon, path_to(fp0)))
            )
        for k, d in enumerate(state_some):
            if state_pending >> k & 1 and bits >> k & 1:
                witnessed[d.name] = concretize(spec, canon, path_to(fp0))
                state_pending &= ~(1 << k)
        frontier.append((fp0, blob))
    seen.close_level()

    context = mp.get_context("fork")
    tasks: Any = None
    results: Any = None
    procs: list[Any] = []

    def start_workers() -> None:
        nonlocal tasks, results
        tasks, results = context.Queue(), context.Queue()
        for _ in range(workers):
            proc = context.Process(target=_serve, args=(judge, tasks, results), daemon=True)
            proc.start()
            procs.append(proc)

    next_report = progress_every
    depth = 1
    try:
        while frontier:
            stats.depth = depth
            if max_depth is not None and depth >= max_depth:
                return finish(False, None)
            chunks = [frontier[i : i + CHUNK] for i in range(0, len(frontier), CHUNK)]
            in_process = workers == 1 or len(frontier) < PARALLEL_FROM
            if not in_process:
                if not procs:
                    start_workers()
                for index, chunk in enumerate(chunks):
                    tasks.put((index, [blob for _, blob in chunk]))
            waiting: dict[int, Chunk] = {}
            next_frontier: list[tuple[int, bytes]] = []
            for index, chunk in enumerate(chunks):
                if in_process:
                    waiting[index] = judge.expand([blob for _, blob in chunk])
                while index not in waiting:
                    got, got_report = results.get()
                    waiting[got] = got_report
                report = waiting.pop(index)
                t = 0
                for (parent_fp, _), n in zip(chunk, report.counts, strict=True):
                    for nth in range(n):
                        i = report.actions[t]
                        fired[i] += 1
                        bad = report.failed[t]
                        if bad != NONE:
                            d = trans_decls[bad]
                            trace = concretize(spec, canon, transition_trace(parent_fp, nth))
                            stats.depth = depth + 1
                            return finish(False, Violation("transition", d.name, d.doc, trace))
                        bits = report.witnesses[t] & trans_pending
                        if bits:
                            trace_t = concretize(spec, canon, transition_trace(parent_fp, nth))
                            for k, d in enumerate(trans_some):
                                if bits >> k & 1:
                                    witnessed[d.name] = trace_t
                            trans_pending &= ~bits
                        fp = report.fps[t]
                        if fp in seen:
                            t += 1
                            continue
                        seen.add(fp, parent_fp)
                        stats.distinct_states += 1
                        found_new[i] += 1
                        blob, bad_inv, sbits, orbit = report.bodies[t]
                        if stats.unreduced_states is not None:
                            stats.unreduced_states += orbit
                        if bad_inv != NONE:
                            d = inv_decls[bad_inv]
                            stats.depth = depth + 1
                            trace = concretize(spec, canon, path_to(fp))
                            return finish(False, Violation("invariant", d.name, d.doc, trace))
                        sbits &= state_pending
                        if sbits:
                            trace_s = concretize(spec, canon, path_to(fp))
                            for k, d in enumerate(state_some):
                                if sbits >> k & 1:
                                    witnessed[d.name] = trace_s
                            state_pending &= ~sbits
                        next_frontier.append((fp, blob))
                        if max_states is not None and stats.distinct_states >= max_states:
                            return finish(False, None)
                        if progress is not None and stats.distinct_states >= next_report:
                            next_report += progress_every
                            stats.states_generated = sum(fired)
                            if clock:
                                stats.seconds = clock() - start
                            progress(stats)
                        t += 1
            seen.close_level()
            frontier = next_frontier
            if frontier:
                depth += 1
        return finish(True, None)
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.join()
        if procs:
            # Tasks may still sit in the queue's buffer with no worker left to read them:
            # do not let the interpreter wait at exit for its feeder thread to send them.
            tasks.cancel_join_thread()
            tasks.close()
            results.close()
