"""Linearizability checking by the Wing-Gong-Lowe search (Wing and Gong, 1993; Lowe,
"Testing for linearizability", 2017), as Porcupine implements it (``checker.go``).

The history is a doubly linked list of call and return entries in event order, preallocated
as integer arrays. The search walks the list: at a call whose operation the model accepts in
the current state, it linearizes the operation (lifts its call and return out of the list)
and starts again from the head; at a return, every operation that could have been
linearized before it has been tried, so it backtracks. Lowe's cache of (linearized set,
state) pairs, the set a Python int used as a bitset, stops it from exploring the same
configuration twice. The history is linearizable when every completed operation is
linearized.

Beyond Porcupine:

- indeterminate operations (``info``, or pending at the end) have no return entry: their
  return is at +infinity and they need not be linearized at all (they may never have taken
  effect);
- read-only operations (reads, a cas that did not apply) that the model accepts are
  linearized greedily: an order that works can always be rearranged to put such an
  operation first (it changes no state, and no operation returned before its call is left
  unlinearized), so when that subtree fails, the whole configuration fails and the search
  backtracks one level further;
- indeterminate operations are only linearized where they change the state (where they
  do not, the configuration is the one being explored, with one more optional operation
  done: it can reach nothing more), and indeterminate operations with equal inputs and outputs are
  linearized in call order (once both are called they are interchangeable: whatever order
  works with one first works with the other first). On Porcupine's etcd logs, where about a
  quarter of the operations time out and five values are written over and over, these two
  cut the model steps of the corpus five-fold (1,031,026 to 189,807);
- growth pruning, for models whose writes mostly only extend the state (kv: append): the
  read not yet linearized that returns first must see a state reached from this one by
  the operations called before its return; when none of those resets the state (a put
  whose value could lead there) and no growth of this state is what the read saw (for kv:
  the state is not a prefix of it), the configuration is dead at once, instead of after
  every order of the operations in between. On Porcupine's c50-ok kv history it cuts the
  model steps from 706,424 to 21,094;
- partitions (P-compositionality) are checked in two worker processes at once when there are
  enough operations to pay for the start-up, sequentially otherwise; the check stops at the
  first illegal partition;
- a deadline gives UNKNOWN, never a guess.

A failed check keeps the longest partial linearization it found, the operation that could
not be placed after it (the first one whose return closes its window), and the model state
there: the counterexample of `report_html` and of the CLI.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Generator, Sequence
from typing import Any

import attrs

from jepsen_py.checker.model import UNKNOWN_STATE, Model, Operation
from jepsen_py.checker.result import Verdict

PARALLEL_MIN_OPERATIONS = 4000
"""Below this many operations in all, starting worker processes costs more than it saves."""

WORKERS = 2
SLICE_STEPS = 4096
"""Model steps a partition's search takes before it yields to the next partition (and the
scheduler looks at the clock): partitions advance round-robin, as Porcupine's goroutines
do, so a cheap illegal partition is found even when another would search for hours."""

FIRST_SLICE_STEPS = 256
"""The first slice of each partition; each later one is twice the one before, up to
`SLICE_STEPS`: a cheap illegal partition is found before the others have taken more than
a few hundred steps each (on Porcupine's c50-bad kv history, 1,171 model steps in all
instead of 4,709 with slices of `SLICE_STEPS` from the start)."""

MAX_CONFIGURATIONS = 4_000_000
"""Cached configurations per partition before the search gives up (UNKNOWN, "budget
exhausted"): a bound on memory, about a gigabyte at this size."""


@attrs.frozen(eq=False)
class PartitionResult:
    """The outcome of the search on one partition."""

    verdict: Verdict
    operations: list[Operation]
    linearization: list[int]
    """Indices into ``operations``: a full linearization when OK, the longest partial one
    found otherwise."""
    blocked: int | None
    """The operation that could not be placed after ``linearization`` (ILLEGAL only)."""
    state: Any
    """The model state after ``linearization``."""
    seconds: float
    steps: int
    """Model steps taken: the search's work."""
    explanation: str | None = None

    def describe(self, model: Model) -> str:
        """The counterexample in words: what was linearized, what could not be placed."""
        if self.verdict is Verdict.OK:
            return f"linearizable: {len(self.linearization)} operations linearized"
        if self.verdict is Verdict.UNKNOWN:
            return self.explanation or "unknown"
        lines = [
            f"not linearizable: after {len(self.linearization)} operations linearized, "
            f"in state {model.describe_state(self.state)}, no order places"
        ]
        if self.blocked is not None:
            op = self.operations[self.blocked]
            lines[0] += f" {_describe(model, op)}"
        else:
            lines[0] += " the remaining operations"
        tail = self.linearization[-5:]
        if tail:
            lines.append(
                "last linearized: " + "; ".join(_describe(model, self.operations[i]) for i in tail)
            )
        return "\n".join(lines)


def _describe(model: Model, op: Operation) -> str:
    where = f" [line {op.invoke.line}]" if op.invoke is not None and op.invoke.line else ""
    return f"process {op.process}: {model.describe_operation(op.input, op.output)}{where}"


def check_partition(
    model: Model, ops: Sequence[Operation], deadline: float | None = None
) -> PartitionResult:
    """Search for a linearization of ``ops`` (one partition). ``deadline`` is a
    ``time.monotonic()`` value past which the result is UNKNOWN."""
    results: list[PartitionResult] = []

    def emit(i: int, result: PartitionResult) -> bool:
        results.append(result)
        return True

    _round_robin(model, {0: list(ops)}, deadline, emit)
    return results[0]


def _result(
    ops: list[Operation], outcome: Outcome | None, seconds: float, steps: int
) -> PartitionResult:
    if outcome is None:
        return PartitionResult(
            Verdict.UNKNOWN,
            ops,
            [],
            None,
            None,
            seconds,
            steps,
            f"timed out after {steps} model steps ({seconds:.1f} s) on {len(ops)} operations; "
            "raise --timeout to search longer",
        )
    verdict, linearization, blocked, state, steps = outcome
    explanation = None
    if verdict is Verdict.UNKNOWN:
        explanation = (
            f"search budget exhausted: {MAX_CONFIGURATIONS} configurations cached after "
            f"{steps} model steps on {len(ops)} operations; split the history (per key, per "
            "run) or check it in parts"
        )
    return PartitionResult(verdict, ops, linearization, blocked, state, seconds, steps, explanation)


def _round_robin(
    model: Model,
    parts: dict[int, list[Operation]],
    deadline: float | None,
    emit: Callable[[int, PartitionResult], bool],
) -> None:
    """Advance the searches of ``parts`` in turn, a slice of model steps each, and ``emit``
    each result as soon as it is decided, until ``emit`` returns False. At the deadline the
    undecided partitions are emitted as UNKNOWN."""
    searches = {i: _search(model, ops) for i, ops in parts.items()}
    seconds = dict.fromkeys(parts, 0.0)
    steps = dict.fromkeys(parts, 0)
    slices = 1  # of FIRST_SLICE_STEPS: doubles each round, up to SLICE_STEPS
    while searches:
        for i in list(searches):
            started = time.perf_counter()
            try:
                for _ in range(slices):
                    steps[i] += FIRST_SLICE_STEPS
                    next(searches[i])
            except StopIteration as stop:
                seconds[i] += time.perf_counter() - started
                del searches[i]
                if not emit(i, _result(parts[i], stop.value, seconds[i], 0)):
                    return
                continue
            seconds[i] += time.perf_counter() - started
            if deadline is not None and time.monotonic() > deadline:
                for j in list(searches):
                    searches.pop(j).close()
                    if not emit(j, _result(parts[j], None, seconds[j], steps[j])):
                        return
                return
        slices = min(2 * slices, SLICE_STEPS // FIRST_SLICE_STEPS)


Outcome = tuple[Verdict, list[int], int | None, Any, int]
"""(verdict, linearization, blocked op, state, model steps) of one partition's search."""


def _search(model: Model, ops: list[Operation]) -> Generator[None, None, Outcome]:
    """The search as a generator: it yields every `FIRST_SLICE_STEPS` model steps, and returns
    its `Outcome` (UNKNOWN when the cache outgrows `MAX_CONFIGURATIONS`)."""
    events: list[tuple[int, int, int]] = []
    for i, op in enumerate(ops):
        if op.ret is None:
            if op.read_only:
                continue  # changes nothing and need not happen: nothing to decide
        elif op.ret < op.call:
            raise ValueError(f"operation {i} returns ({op.ret}) before its call ({op.call})")
        else:
            events.append((op.ret, 1, i))
        events.append((op.call, 0, i))
    events.sort()
    m = len(events)
    tail = m + 1
    # node 0 is the head, nodes 1..m the entries, node m+1 a tail that acts as a return
    nxt = [*range(1, m + 2), tail]
    prv = [0, *range(0, m + 1)]
    op_of = [-1] * (m + 2)
    ret_of = [-1] * (m + 2)  # call: its return node, or 0 when it has none; -1: not a call
    return_node: dict[int, int] = {}
    for node, (_, kind, i) in enumerate(events, start=1):
        op_of[node] = i
        if kind == 1:
            return_node[i] = node
    for node, (_, kind, i) in enumerate(events, start=1):
        if kind == 0:
            ret_of[node] = return_node.get(i, 0)

    inputs = [op.input for op in ops]
    outputs = [op.output for op in ops]
    read_only = [op.read_only for op in ops]
    # Indeterminate operations with the same input and output are interchangeable once
    # both are called: each is linearized only after the one called before it (its twin).
    twin = [-1] * len(ops)
    last_of: dict[tuple[Any, Any], int] = {}
    for _, kind, i in events:
        if kind == 0 and i not in return_node:
            same = (inputs[i], outputs[i])
            twin[i] = last_of.get(same, -1)
            last_of[same] = i
    done = bytearray(len(ops))  # operations linearized
    remaining = len(return_node)
    state = model.init()
    if remaining == 0:
        return Verdict.OK, [], None, state, 0
    step = model.step
    # Growth pruning (models whose writes mostly extend the state, as kv's appends do): the
    # read with the earliest return not linearized yet is linearized after this state, by
    # then only operations called before its return can have been linearized; when all of
    # them that change the state only grow it, and no growth reaches what the read saw,
    # the configuration is dead now rather than after every order of the ops in between.
    reads: list[int] = []
    reach: list[Callable[[Any], bool]] = []  # of each read: can growth from a state reach it?
    reset_to: list[Any] = []
    if model.prunes_by_growth:
        for _, i in sorted((ops[i].ret, i) for i in return_node if read_only[i]):
            test = model.growth_test(inputs[i], outputs[i])
            if test is not None:
                reads.append(i)
                reach.append(test)
        for i in range(len(ops)):
            if read_only[i] or model.grows(inputs[i]):
                reset_to.append(False)
            else:
                to = model.sets(inputs[i])
                reset_to.append(None if to is UNKNOWN_STATE else (to,))
    nreads = len(reads)
    rp = 0  # reads[rp]: the unlinearized read that returns first
    # Lowe's cache of explored configurations: (bitset of linearized ops, state)
    linearized = 0
    cache: set[tuple[int, Any]] = set()
    stack: list[tuple[int, Any, int, int]] = []
    best: list[int] = []
    best_state: Any = state
    blocked: int | None = None
    steps = 0
    e = 0
    fresh = True  # a configuration not scanned yet: look for a read-only op to force first
    while True:
        if fresh:
            fresh = False
            e = nxt[0]
            dead = False
            if nreads:
                while rp < nreads and done[reads[rp]]:
                    rp += 1
                if rp < nreads:
                    test = reach[rp]
                    if not test(state):
                        x = nxt[0]
                        end = return_node[reads[rp]]
                        while x != end:
                            if ret_of[x] >= 0:
                                to = reset_to[op_of[x]]
                                if to is None or (to and test(to[0])):
                                    break
                            x = nxt[x]
                        if x == end:  # dead: no order of what may come first reaches it
                            dead = True
                            e = tail
            while ret_of[e] >= 0:
                i = op_of[e]
                if read_only[i]:
                    steps += 1
                    if step(state, inputs[i], outputs[i])[0]:
                        break
                e = nxt[e]
            r = ret_of[e]
            if r >= 0:
                # forced: linearize this read-only op now, or fail here if that was tried
                new_linearized = linearized | (1 << i)
                key = (new_linearized, state)
                if key in cache:
                    e = tail  # explored and failed: so does this configuration
                else:
                    cache.add(key)
                    stack.append((e, state, linearized, rp))
                    linearized = new_linearized
                    done[i] = 1
                    p = prv[e]
                    q = nxt[e]
                    nxt[p] = q
                    prv[q] = p
                    p = prv[r]
                    q = nxt[r]
                    nxt[p] = q
                    prv[q] = p
                    remaining -= 1
                    if not remaining:
                        return Verdict.OK, [op_of[x[0]] for x in stack], None, state, steps
                    fresh = True
                    continue
            elif not dead:
                e = nxt[0]
        r = ret_of[e]
        if r >= 0:
            i = op_of[e]
            if read_only[i] or (not r and twin[i] >= 0 and not done[twin[i]]):
                # read-only: tried in this state by the forcing scan above; a twin
                # called before it and not linearized yet: tried in its place
                e = nxt[e]
                continue
            steps += 1
            if not steps % FIRST_SLICE_STEPS:
                if len(cache) > MAX_CONFIGURATIONS:
                    return Verdict.UNKNOWN, [op_of[x[0]] for x in stack], None, state, steps
                yield
            ok, new_state = step(state, inputs[i], outputs[i])
            if ok and (r or new_state != state):
                new_linearized = linearized | (1 << i)
                key = (new_linearized, new_state)
                if key not in cache:
                    cache.add(key)
                    stack.append((e, state, linearized, rp))
                    state = new_state
                    linearized = new_linearized
                    done[i] = 1
                    p = prv[e]
                    q = nxt[e]
                    nxt[p] = q
                    prv[q] = p
                    if r:
                        p = prv[r]
                        q = nxt[r]
                        nxt[p] = q
                        prv[q] = p
                        remaining -= 1
                        if not remaining:
                            return Verdict.OK, [op_of[x[0]] for x in stack], None, state, steps
                    fresh = True
                    continue
            e = nxt[e]
            continue
        # backtrack: no operation called before this return can be linearized next
        if len(stack) > len(best):
            best = [op_of[x[0]] for x in stack]
            best_state = state
            x = nxt[0]
            while ret_of[x] >= 0:
                x = nxt[x]
            blocked = op_of[x] if x != tail else None
        while True:
            if not stack:
                return Verdict.ILLEGAL, best, blocked, best_state, steps
            e, state, linearized, rp = stack.pop()
            r = ret_of[e]
            done[op_of[e]] = 0
            if r:
                p = prv[r]
                q = nxt[r]
                nxt[p] = r
                prv[q] = r
                remaining += 1
            p = prv[e]
            q = nxt[e]
            nxt[p] = e
            prv[q] = e
            if not read_only[op_of[e]]:
                break  # forced ops have no alternative: their configuration failed as well
        e = nxt[e]


@attrs.frozen(eq=False)
class SearchResult:
    """The Wing-Gong-Lowe search over a history's partitions: the verdict over all of them,
    and each partition's result (None: not checked, because the search stopped at the
    first illegal partition)."""

    verdict: Verdict
    partitions: list[list[Operation]]
    results: list[PartitionResult | None]
    seconds: float

    @property
    def failing(self) -> PartitionResult | None:
        for result in self.results:
            if result is not None and result.verdict is Verdict.ILLEGAL:
                return result
        return None


def check_operations(
    model: Model,
    history: Sequence[Operation],
    *,
    timeout: float | None = None,
    parallel: bool | None = None,
) -> SearchResult:
    """Check ``history`` against ``model``, split by ``model.partition``. ``timeout`` is in
    seconds for the whole check; ``parallel`` None decides by size."""
    return check_partitions(
        model, model.partition(list(history)), timeout=timeout, parallel=parallel
    )


def check_partitions(
    model: Model,
    partitions: Sequence[Sequence[Operation]],
    *,
    timeout: float | None = None,
    parallel: bool | None = None,
    stop_at_first_illegal: bool = True,
) -> SearchResult:
    """Check each partition; all must be linearizable. ``parallel`` None: in `WORKERS`
    processes when there are several partitions and `PARALLEL_MIN_OPERATIONS` operations,
    else in this process. Either way the partitions advance round-robin, and the check
    stops at the first illegal one (the others stay None) unless told otherwise."""
    started = time.perf_counter()
    parts = [list(p) for p in partitions]
    deadline = time.monotonic() + timeout if timeout is not None else None
    if parallel is None:
        parallel = len(parts) > 1 and sum(len(p) for p in parts) >= PARALLEL_MIN_OPERATIONS
    results: list[PartitionResult | None] = [None] * len(parts)

    def emit(i: int, result: PartitionResult) -> bool:
        results[i] = result
        return not (stop_at_first_illegal and result.verdict is Verdict.ILLEGAL)

    workers = min(WORKERS, len(parts), os.cpu_count() or 1)
    if parallel and workers > 1:
        _check_in_workers(model, parts, workers, deadline, emit)
    else:
        _round_robin(model, dict(enumerate(parts)), deadline, emit)
    verdicts = [r.verdict if r is not None else Verdict.UNKNOWN for r in results]
    return SearchResult(Verdict.combine(verdicts), parts, results, time.perf_counter() - started)


def _worker(
    model: Model,
    parts: dict[int, list[Operation]],
    deadline: float | None,
    queue: Any,
) -> None:
    def emit(i: int, result: PartitionResult) -> bool:
        # the parent has the operations: send back the rest only
        queue.put((i, attrs.evolve(result, operations=[])))
        return True

    _round_robin(model, parts, deadline, emit)


def _check_in_workers(
    model: Model,
    parts: list[list[Operation]],
    workers: int,
    deadline: float | None,
    emit: Callable[[int, PartitionResult], bool],
) -> None:
    # Balance the operations over the workers, largest partitions first. fork shares the
    # partitions with the workers without pickling them.
    shares: list[dict[int, list[Operation]]] = [{} for _ in range(workers)]
    loads = [0] * workers
    for i in sorted(range(len(parts)), key=lambda i: -len(parts[i])):
        w = loads.index(min(loads))
        shares[w][i] = parts[i]
        loads[w] += len(parts[i])
    # here: a check small enough for one process never needs them (queue brings threading)
    import multiprocessing
    import queue as queue_module

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context: Any = multiprocessing.get_context(method)
    queue = context.Queue()
    processes = [
        context.Process(target=_worker, args=(model, share, deadline, queue), daemon=True)
        for share in shares
    ]
    for process in processes:
        process.start()
    pending = set(range(len(parts)))
    try:
        while pending:
            try:
                i, result = queue.get(timeout=0.5)
            except queue_module.Empty:
                if any(p.is_alive() for p in processes):
                    continue
                for i in sorted(pending):  # a worker died (killed, out of memory)
                    emit(i, _lost(parts[i]))
                return
            pending.discard(i)
            if not emit(i, attrs.evolve(result, operations=parts[i])):
                return
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join()
        queue.close()


def _lost(ops: list[Operation]) -> PartitionResult:
    return PartitionResult(
        Verdict.UNKNOWN,
        ops,
        [],
        None,
        None,
        0.0,
        0,
        "the worker process checking this partition died (out of memory?); "
        "check it alone, or with a smaller --timeout",
    )
