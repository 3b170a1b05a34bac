"""``kmodel check SPEC --engine spark``: the breadth-first search of a spec as Spark jobs.

Each breadth-first level is a handful of Spark jobs over two partitioned datasets:

- the **frontier**, the level's new states (pickled), each with its *rank*: its position in
  the order the sequential search would have found it;
- the **seen table**, every state's fingerprint and its parent's, hash-partitioned by
  fingerprint across the executors, so no machine holds it all.

A level: the executors expand their part of the frontier (``spec.parallel.Expander``), each
transition tagged with the key ``(parent rank, successor index)``, which orders transitions
exactly as the sequential search generates them. Successors are grouped by fingerprint
keeping the smallest key (the transition that would have found the state first), those
already in the seen table are dropped, the rest are judged (invariants, "sometimes"
properties, orbit size), ranked by key, and become the next frontier. Because every decision
is a minimum over keys, the counts, per-action coverage, depth, first violation and its
(shortest) counterexample, and the witnesses are the sequential search's, as
``model_tests/test_spark_search.py`` checks against ``spec.explore.check``. A counterexample
is rebuilt on the driver from the chain of parent fingerprints (one small lookup per step).

Spark runs locally by default (``local[*]``) and on any cluster with ``--master``; the
``spec`` package is shipped to a cluster's executors with ``addPyFile``. Like
``--fingerprints``, the search relies on 64-bit fingerprints; the result reports the
collision probability. ``--max-states`` is not offered on this engine (it stops the
sequential search in the middle of a level).
"""

from __future__ import annotations

import pickle
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import spec as spec_package
from spec.explore import (
    Canonical,
    CheckResult,
    ProgressFn,
    Stats,
    TraceStep,
    Violation,
    concretize,
    exhaustive_result,
)
from spec.fingerprints import (
    fingerprint,
    fingerprint_figures,
    parent_chain,
    replay,
    replay_then,
)
from spec.framework import Spec
from spec.parallel import NONE, Expander

Key = tuple[int, int]
"""(rank of the parent in its level, index of the transition among the parent's)."""

Event = tuple[Key, int, int, int, int]
"""(key, parent fingerprint, transition index, fingerprint, which property)."""


def ship_spec(spark: Any) -> str | None:
    """Zip the ``spec`` package and add it to the job, so a cluster's executors import it
    (local executors import this process's)."""
    master = spark.sparkContext.master or "local"
    if master == "local" or master.startswith("local["):
        return None
    root = Path(spec_package.__file__).resolve().parent
    target = Path(tempfile.mkdtemp(prefix="kmodel-spec-")) / "spec.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*.py")):
            archive.write(path, Path("spec") / path.relative_to(root))
    spark.sparkContext.addPyFile(str(target))
    return str(target)


class SeenTable:
    """The seen table: ``(fingerprint, parent fingerprint)`` hash-partitioned across the
    executors; ``parent`` is one small lookup."""

    def __init__(self, rdd: Any, level: dict[int, int]) -> None:
        self.rdd = rdd
        self.level = level

    def parent(self, fp: int) -> int:
        if fp in self.level:
            return self.level[fp]
        found = self.rdd.lookup(fp)
        if not found:  # pragma: no cover - a state on a trace is always in the table
            raise AssertionError(f"fingerprint {fp} is not in the seen table")
        return int(found[0])


def check_spark(
    spec: Spec,
    spark: Any,
    *,
    invariants: Iterable[str] | None = None,
    symmetry: bool = False,
    partitions: int | None = None,
    clock: Callable[[], float] | None = None,
    progress: ProgressFn | None = None,
) -> CheckResult:
    """The sequential search's results, computed level by level on Spark (module doc)."""
    sc = spark.sparkContext
    ship_spec(spark)
    parts = partitions or max(2, 2 * sc.defaultParallelism)
    invariant_names = None if invariants is None else list(invariants)
    selected = spec.select_invariants(invariant_names)
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
    stats = Stats(unreduced_states=0 if symmetry else None)
    start = clock() if clock else 0.0

    def finish(complete: bool, violation: Violation | None, seen_count: int) -> CheckResult:
        stats.seconds = (clock() - start) if clock else 0.0
        fingerprint_figures(stats, 16 * seen_count, sum(fired))
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

    def trace_to(table: SeenTable, fp: int) -> list[TraceStep]:
        chain = parent_chain(table, fp)
        return _on_executor(sc, lambda: replay(spec, canon, chain))

    def transition_trace(table: SeenTable, parent_fp: int, nth: int) -> list[TraceStep]:
        chain = parent_chain(table, parent_fp)
        return _on_executor(sc, lambda: replay_then(spec, canon, chain, nth))

    # The initial states, judged on an executor: fingerprints are computed only there
    # (they hash strings, whose hash depends on the process's seed).
    roots: dict[int, int] = {}
    frontier_rows: list[tuple[int, int, bytes]] = []
    state_pending = (1 << len(state_some)) - 1
    trans_pending = (1 << len(trans_some)) - 1
    for fp0, (blob, bad, bits, orbit) in _on_executor(
        sc, lambda: _judge_initial(spec, invariant_names, symmetry)
    ):
        if fp0 in roots:
            continue
        roots[fp0] = fp0
        stats.distinct_states += 1
        if stats.unreduced_states is not None:
            stats.unreduced_states += orbit
        table = SeenTable(sc.emptyRDD(), roots)
        if bad != NONE:
            stats.depth = 1
            d = inv_decls[bad]
            trace = concretize(spec, canon, trace_to(table, fp0))
            return finish(False, Violation("invariant", d.name, d.doc, trace), len(roots))
        for k, d in enumerate(state_some):
            if state_pending >> k & 1 and bits >> k & 1:
                witnessed[d.name] = concretize(spec, canon, trace_to(table, fp0))
                state_pending &= ~(1 << k)
        frontier_rows.append((len(frontier_rows), fp0, blob))
    seen = sc.parallelize(list(roots.items()), parts).partitionBy(parts).persist()
    seen_count = len(roots)
    n_trans, n_state = len(trans_some), len(state_some)
    frontier = sc.parallelize(frontier_rows, parts)
    depth = 1
    while True:
        stats.depth = depth
        transitions = frontier.mapPartitions(
            _expander(spec, invariant_names, symmetry), preservesPartitioning=False
        ).persist()
        # One pass over the level's transitions for what the driver needs of them, one
        # over its new states: per-partition summaries, merged here.
        by_action, broken, trans_hits = _merge(
            transitions.mapPartitions(
                lambda rows, p=trans_pending, n=n_trans: _summarize_transitions(rows, p, n)
            ).collect()
        )
        first = transitions.map(_first_found).reduceByKey(min)
        new = first.subtractByKey(seen).map(_judged(spec, invariant_names, symmetry)).persist()
        new_by_action, bad_new, state_hits, orbits = _merge_new(
            new.mapPartitions(
                lambda rows, p=state_pending, n=n_state: _summarize_new(rows, p, n)
            ).collect()
        )
        new_count = sum(new_by_action.values())

        def table_with(extra: dict[int, int], rdd: Any = seen) -> SeenTable:
            return SeenTable(rdd, {**roots, **extra})

        # The first event of the level, in the sequential order: a failing transition
        # property comes before the invariants of the state its transition found.
        stop_key: Key | None = None
        violation: Violation | None = None
        if broken is not None and (bad_new is None or broken[0] <= bad_new[0]):
            key, parent_fp, nth, _fp, which = broken
            stop_key = key
            d = trans_decls[which]
            trace = transition_trace(table_with({}), parent_fp, nth)
            violation = Violation("transition", d.name, d.doc, concretize(spec, canon, trace))
        elif bad_new is not None:
            key, parent_fp, _nth, fp, which = bad_new
            stop_key = key
            d = inv_decls[which]
            trace = concretize(spec, canon, trace_to(table_with({fp: parent_fp}), fp))
            violation = Violation("invariant", d.name, d.doc, trace)
        # Witnesses found before the search stops.
        for k, (key, parent_fp, nth, _fp, _k) in sorted(trans_hits.items()):
            if trans_pending >> k & 1 and _before(key, stop_key, violation, transition=True):
                trace = transition_trace(table_with({}), parent_fp, nth)
                witnessed[trans_some[k].name] = concretize(spec, canon, trace)
                trans_pending &= ~(1 << k)
        for k, (key, parent_fp, _nth, fp, _k) in sorted(state_hits.items()):
            if state_pending >> k & 1 and _before(key, stop_key, violation, transition=False):
                trace = trace_to(table_with({fp: parent_fp}), fp)
                witnessed[state_some[k].name] = concretize(spec, canon, trace)
                state_pending &= ~(1 << k)
        if violation is not None and stop_key is not None:
            # The counts at the moment the sequential search stops.
            upto = stop_key
            fired_before = (
                transitions.filter(lambda row, u=upto: row[1][:2] <= u)
                .map(lambda row: row[1][2])
                .countByValue()
            )
            inclusive = violation.kind == "invariant"
            new_before = new.filter(
                lambda row, u=upto, inc=inclusive: row[1][0][:2] < u or (inc and row[1][0][:2] == u)
            )
            for i, n in fired_before.items():
                fired[i] += n
            for i, n in new_before.map(lambda row: row[1][0][2]).countByValue().items():
                found_new[i] += n
            stats.distinct_states += new_before.count()
            if stats.unreduced_states is not None:
                stats.unreduced_states += new_before.map(lambda row: row[1][4]).sum()
            stats.depth = depth + 1
            return finish(False, violation, seen_count + new_count)
        for i, n in by_action.items():
            fired[i] += n
        for i, n in new_by_action.items():
            found_new[i] += n
        stats.distinct_states += new_count
        if stats.unreduced_states is not None:
            stats.unreduced_states += orbits
        seen_count += new_count
        if progress is not None:
            stats.states_generated = sum(fired)
            if clock:
                stats.seconds = clock() - start
            progress(stats)
        if new_count == 0:
            transitions.unpersist()
            new.unpersist()
            return finish(True, None, seen_count)
        seen = (
            seen.union(new.map(lambda row: (row[0], row[1][0][3])).partitionBy(parts))
            .partitionBy(parts)
            .persist()
        )
        if depth % 8 == 0:
            seen.localCheckpoint()
        frontier = (
            new.sortBy(lambda row: row[1][0][:2], numPartitions=parts)
            .zipWithIndex()
            .map(lambda pair: (pair[1], pair[0][0], pair[0][1][1]))
            .repartition(parts)
            .persist()
        )
        transitions.unpersist()
        depth += 1


def _expander(
    spec: Spec, invariants: list[str] | None, symmetry: bool
) -> Callable[[Iterator[tuple[int, int, bytes]]], Iterator[tuple[int, tuple[Any, ...]]]]:
    def expand(rows: Iterator[tuple[int, int, bytes]]) -> Iterator[tuple[int, tuple[Any, ...]]]:
        ex = Expander(spec, invariants, symmetry, remember=False)
        for rank, parent_fp, blob in rows:
            for nth, (i, failed, bits, c, fp) in enumerate(ex.transitions(pickle.loads(blob))):
                yield fp, (rank, nth, i, failed, bits, parent_fp, c)

    return expand


def _summarize_transitions(
    rows: Iterator[tuple[int, tuple[Any, ...]]], pending: int, n: int
) -> Iterator[tuple[dict[int, int], Event | None, dict[int, Event]]]:
    """A partition's transitions: how many per action, the first whose transition property
    fails, and per pending transition "sometimes" property the first that shows it."""
    counts: dict[int, int] = {}
    broken: Event | None = None
    hits: dict[int, Event] = {}
    for fp, (rank, nth, i, failed, bits, parent_fp, _c) in rows:
        counts[i] = counts.get(i, 0) + 1
        key = (rank, nth)
        if failed != NONE and (broken is None or key < broken[0]):
            broken = (key, parent_fp, nth, fp, failed)
        for k in range(n):
            if (bits & pending) >> k & 1 and (k not in hits or key < hits[k][0]):
                hits[k] = (key, parent_fp, nth, fp, k)
    yield counts, broken, hits


def _summarize_new(
    rows: Iterator[tuple[int, tuple[Any, ...]]], pending: int, n: int
) -> Iterator[tuple[dict[int, int], Event | None, dict[int, Event], int]]:
    """A partition's new states: how many per action that found them, the first that breaks
    an invariant, per pending state "sometimes" property the first that shows it, and the
    sum of their orbit sizes."""
    counts: dict[int, int] = {}
    bad: Event | None = None
    hits: dict[int, Event] = {}
    orbits = 0
    for fp, ((rank, nth, i, parent_fp), _blob, which, bits, orbit) in rows:
        counts[i] = counts.get(i, 0) + 1
        orbits += orbit
        key = (rank, nth)
        if which != NONE and (bad is None or key < bad[0]):
            bad = (key, parent_fp, nth, fp, which)
        for k in range(n):
            if (bits & pending) >> k & 1 and (k not in hits or key < hits[k][0]):
                hits[k] = (key, parent_fp, nth, fp, k)
    yield counts, bad, hits, orbits


def _earliest(a: Event | None, b: Event | None) -> Event | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if a[0] <= b[0] else b


def _merge(
    parts: list[tuple[dict[int, int], Event | None, dict[int, Event]]],
) -> tuple[dict[int, int], Event | None, dict[int, Event]]:
    counts: dict[int, int] = {}
    first: Event | None = None
    hits: dict[int, Event] = {}
    for part_counts, part_first, part_hits in parts:
        for i, c in part_counts.items():
            counts[i] = counts.get(i, 0) + c
        first = _earliest(first, part_first)
        for k, event in part_hits.items():
            hits[k] = _earliest(hits.get(k), event) or event
    return counts, first, hits


def _merge_new(
    parts: list[tuple[dict[int, int], Event | None, dict[int, Event], int]],
) -> tuple[dict[int, int], Event | None, dict[int, Event], int]:
    counts, first, hits = _merge([(c, f, h) for c, f, h, _ in parts])
    return counts, first, hits, sum(o for *_, o in parts)


def _first_found(row: tuple[int, tuple[Any, ...]]) -> tuple[int, tuple[Any, ...]]:
    fp, (rank, nth, i, _failed, _bits, parent_fp, c) = row
    return fp, (rank, nth, i, parent_fp, c)


def _judged(
    spec: Spec, invariants: list[str] | None, symmetry: bool
) -> Callable[[tuple[int, tuple[Any, ...]]], tuple[int, tuple[Any, ...]]]:
    holder: dict[str, Expander] = {}

    def judged(row: tuple[int, tuple[Any, ...]]) -> tuple[int, tuple[Any, ...]]:
        ex = holder.get("ex")
        if ex is None:
            ex = holder["ex"] = Expander(spec, invariants, symmetry, remember=False)
        fp, (rank, nth, i, parent_fp, c) = row
        blob, bad, bits, orbit = ex.judge(c)
        return fp, ((rank, nth, i, parent_fp), blob, bad, bits, orbit)

    return judged


def _before(key: Key, stop: Key | None, violation: Violation | None, *, transition: bool) -> bool:
    """Whether a witness at ``key`` is recorded before the search stops at ``stop``: the
    sequential search evaluates a transition's "sometimes" properties after its transition
    properties, and a new state's after its invariants."""
    if stop is None or key < stop:
        return True
    return key == stop and transition and violation is not None and violation.kind == "invariant"


def _judge_initial(
    spec: Spec, invariants: list[str] | None, symmetry: bool
) -> list[tuple[int, tuple[bytes, int, int, int]]]:
    ex = Expander(spec, invariants, symmetry, remember=False)
    out = []
    for s0 in spec.init():
        c0 = ex.canon(s0)
        out.append((fingerprint(c0), ex.judge(c0)))
    return out


def _on_executor(sc: Any, work: Callable[[], Any]) -> Any:
    """Run ``work`` in one Spark task and return its result (fingerprints are only ever
    computed where the search's other fingerprints are: on the executors)."""
    return sc.parallelize([0], 1).map(lambda _: work()).collect()[0]


def _check_hash_seeds(sc: Any, parts: int) -> None:
    """Every executor must hash strings alike, or fingerprints would not match across them."""
    seeds = (
        sc.parallelize(range(4 * parts), 4 * parts)
        .map(lambda _: hash("kmodel fingerprint probe"))
        .distinct()
        .count()
    )
    if seeds != 1:
        raise RuntimeError(
            "Spark's Python workers hash strings differently, so their fingerprints cannot "
            "be compared: set spark.executorEnv.PYTHONHASHSEED=0 (kmodel check does this "
            "when it starts Spark)"
        )
