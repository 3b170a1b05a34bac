"""The Wing-Gong-Lowe search: models, indeterminate ops, timeouts, parallel partitions,
counterexamples, the HTML report, and agreement with a brute-force oracle on generated
histories (sequential executions stretched into overlapping windows, and mutations)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jepsen_py.checker import wgl
from jepsen_py.checker.model import Model, Operation, operations
from jepsen_py.checker.models import (
    APPEND,
    CAS,
    GET,
    PUT,
    READ,
    WRITE,
    CasRegisterModel,
    KeyValueModel,
    RegisterModel,
)
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.wgl import check_operations, check_partition, check_partitions
from jepsen_py.history import Op, Rejections, validate


def _op(call: int, ret: int | None, input: Any, output: Any, read_only: bool = False) -> Operation:
    return Operation(0, input, output, call, ret, read_only)


def _read(call: int, ret: int | None, value: Any) -> Operation:
    return _op(call, ret, (READ, None), value, True)


def _write(call: int, ret: int | None, value: Any) -> Operation:
    return _op(call, ret, (WRITE, value), None)


def test_porcupine_register_examples() -> None:
    # Porcupine's TestRegisterModel (from the MIT 6.824 2017 quiz): put 100 overlapping two
    # gets, one sees 100 and a later one sees 0 (initial): linearizable when the gets overlap
    model = RegisterModel(initial=0)
    ok = [_write(0, 100, 100), _read(25, 75, 100), _read(30, 60, 0)]
    assert check_partition(model, ok).verdict is Verdict.OK
    bad = [_write(0, 100, 200), _read(10, 30, 200), _read(40, 90, 0)]
    result = check_partition(model, bad)
    assert result.verdict is Verdict.ILLEGAL
    assert result.blocked == 2  # the later get of 0 cannot be placed after the get of 200


def test_indeterminate_write_may_take_effect_late_or_never() -> None:
    model = RegisterModel()
    info = _write(0, None, 1)
    assert check_partition(model, [info, _read(5, 6, 1)]).verdict is Verdict.OK
    assert check_partition(model, [info, _read(5, 6, None)]).verdict is Verdict.OK
    # ... but not before its invocation
    assert check_partition(model, [_read(0, 1, 1), _write(2, None, 1)]).verdict is Verdict.ILLEGAL
    # and once visible it cannot be unseen
    later = [info, _read(5, 6, 1), _read(7, 8, None)]
    assert check_partition(model, later).verdict is Verdict.ILLEGAL


def test_cas_outcomes() -> None:
    model = CasRegisterModel(initial=0)
    applied = _op(2, 3, (CAS, (0, 1)), True)
    refused = _op(2, 3, (CAS, (0, 1)), False, True)
    assert check_partition(model, [applied, _read(4, 5, 1)]).verdict is Verdict.OK
    assert check_partition(model, [refused, _read(4, 5, 0)]).verdict is Verdict.ILLEGAL
    assert check_partition(model, [_write(0, 1, 5), refused]).verdict is Verdict.OK
    unknown = _op(2, None, (CAS, (0, 1)), None)
    assert check_partition(model, [unknown, _read(4, 5, 1)]).verdict is Verdict.OK
    assert check_partition(model, [unknown, _read(4, 5, 0)]).verdict is Verdict.OK


def test_kv_model_partitions_per_key_and_concatenates() -> None:
    model = KeyValueModel()
    invoke = [Op(i, i, i, "invoke", "append", k, v) for i, (k, v) in enumerate(["ax", "by", "az"])]
    pairs = [x for i, o in enumerate(invoke) for x in (o, Op(10 + i, 0, i, "ok", o.f, o.key))]
    gets = [Op(30, 0, 9, "invoke", "get", "a"), Op(31, 0, 9, "ok", "get", "a", "xz")]
    ops = operations(pairs + gets, model)
    assert [len(p) for p in model.partition(ops)] == [3, 1]
    assert check_operations(model, ops).verdict is Verdict.OK
    gets[1] = Op(31, 0, 9, "ok", "get", "a", "xy")  # y went to key b
    assert check_operations(model, operations(pairs + gets, model)).verdict is Verdict.ILLEGAL


def _hard_history(n: int) -> list[Operation]:
    # n concurrent writes of distinct values then reads that no order explains: the search
    # must try every order of the writes before it can say ILLEGAL
    ops = [_write(0, 1000, v) for v in range(n)]
    ops += [_read(1001 + 2 * v, 1002 + 2 * v, (v * 7) % n) for v in range(n)]
    ops.append(_read(3000, 3001, n + 1))
    return ops


def test_a_deadline_gives_unknown_never_a_guess() -> None:
    result = check_partition(RegisterModel(), _hard_history(12), deadline=0.0)
    assert result.verdict is Verdict.UNKNOWN
    assert "timed out" in (result.explanation or "")
    # a small instance of the same shape is decided
    assert check_partition(RegisterModel(), _hard_history(3)).verdict is Verdict.ILLEGAL


def test_a_cheap_illegal_partition_is_found_while_a_costly_one_searches() -> None:
    cheap = [_write(0, 1, 1), _read(2, 3, 2)]
    result = check_partitions(RegisterModel(), [_hard_history(12), cheap], parallel=False)
    assert result.verdict is Verdict.ILLEGAL
    assert result.results[1] is not None and result.results[1].verdict is Verdict.ILLEGAL
    assert result.results[0] is None  # stopped before finishing the costly one


def test_parallel_and_sequential_paths_agree() -> None:
    model = KeyValueModel()
    parts_ok = [[_op(0, 1, (1, "v"), None), _op(2, 3, (0, None), "v", True)] for _ in range(6)]
    parts_bad = [*parts_ok, [_op(0, 1, (0, None), "nope", True)]]
    for parts, verdict in ((parts_ok, Verdict.OK), (parts_bad, Verdict.ILLEGAL)):
        for parallel in (False, True):
            assert check_partitions(model, parts, parallel=parallel).verdict is verdict


def test_counterexample_names_the_linearization_the_blocked_op_and_the_state() -> None:
    model = CasRegisterModel()
    ops = [_write(0, 1, 1), _op(2, 3, (CAS, (1, 2)), True), _read(4, 5, 1)]
    result = check_partition(model, ops)
    assert result.verdict is Verdict.ILLEGAL
    assert result.linearization == [0, 1]
    assert result.blocked == 2 and result.state == 2
    text = result.describe(model)
    assert "in state 2" in text and "read() -> 1" in text


def test_html_report_is_self_contained_and_marks_the_failure(tmp_path: Any) -> None:
    from jepsen_py.checker.engine import KeyResult
    from jepsen_py.checker.report_html import render_key_report

    model = CasRegisterModel()
    ops = [_write(0, 1, 1), _op(2, 3, (CAS, (1, 2)), True), _read(4, 5, 1)]
    result = check_partition(model, ops)
    key = KeyResult(None, "k", 3, result.verdict, 0.1, result.describe(model), checked=[result])
    page = render_key_report("h.jsonl", key, model, [])
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert "src=" not in page and "<link" not in page  # nothing to fetch
    assert page.count('class="blocked"') == 1 and page.count('class="linearized"') == 2
    assert "Longest partial linearization (2 of 3)" in page


# --- generated histories against a brute-force oracle ---------------------------------


def oracle(model: Model, ops: Sequence[Operation]) -> bool:
    """Linearizable? By trying every order that respects real time, with every subset of
    the indeterminate ops taking effect. Exponential: small histories only."""
    required = [i for i, o in enumerate(ops) if o.ret is not None]

    def search(state: Any, used: frozenset[int]) -> bool:
        if all(i in used for i in required):
            return True
        for i, o in enumerate(ops):
            if i in used:
                continue
            # every op that returned before this call must already be linearized
            if any(
                j not in used and p.ret is not None and p.ret < o.call for j, p in enumerate(ops)
            ):
                continue
            ok, new = model.step(state, o.input, o.output)
            if ok and search(new, used | {i}):
                return True
        return False

    return search(model.init(), frozenset())


VALUES = st.sampled_from([None, 0, 1, 2])


@st.composite
def executions(draw: st.DrawFn) -> tuple[list[Op], int]:
    """A sequential cas-register execution, each op stretched into a window around its
    linearization point; some writes/cas end info (and took effect or not). Returns the
    events as a history and the number of ops."""
    n = draw(st.integers(1, 6))
    state = None
    windows = []
    for i in range(n):
        f = draw(st.sampled_from(["read", "write", "cas"]))
        info = f != "read" and draw(st.booleans())
        applied = not info or draw(st.booleans())
        if f == "read":
            value, out, out_type = None, state, "ok"
        elif f == "write":
            value = draw(VALUES.filter(lambda v: v is not None))
            out, out_type = value, "ok"
            if applied:
                state = value
        else:
            value = [draw(VALUES), draw(VALUES.filter(lambda v: v is not None))]
            hit = state == value[0]
            out, out_type = value, "ok" if hit else "fail"
            if hit and applied:
                state = value[1]
            if not hit and info:
                applied = False
        point = 100 * i + 50
        call = point - draw(st.integers(0, 160))
        ret = point + draw(st.integers(0, 160))
        windows.append((call, 0, i, f, value, None))
        if not info:
            windows.append((ret, 1, i, f, out, out_type))
        elif draw(st.booleans()):
            windows.append((ret, 1, i, f, value, "info"))
    windows.sort()
    history = []
    for index, (time, kind, i, f, value, out_type) in enumerate(windows):
        history.append(Op(index, time, i, "invoke" if kind == 0 else out_type, f, None, value))
    return history, n


def _etcd_ops(history: list[Op]) -> list[Operation]:
    from jepsen_py.history import ETCD

    rejections = Rejections("generated")
    ops = operations(validate(history, rejections), CasRegisterModel(), ETCD, rejections)
    assert not rejections.items
    return ops


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(executions())
def test_histories_of_a_sequential_execution_are_linearizable(case: tuple[list[Op], int]) -> None:
    history, _ = case
    ops = _etcd_ops(history)
    model = CasRegisterModel()
    assert check_partition(model, ops).verdict is Verdict.OK
    assert oracle(model, ops)


@st.composite
def mutated(draw: st.DrawFn) -> list[Operation]:
    history, _ = draw(executions())
    ops = _etcd_ops(history)
    if not ops:
        return ops
    i = draw(st.integers(0, len(ops) - 1))
    op = ops[i]
    kind = op.input[0]  # type: ignore[index]
    if kind == READ:
        new = Operation(op.process, op.input, draw(VALUES), op.call, op.ret, True)
    elif kind == CAS and op.output is not None:
        flipped = not op.output
        new = Operation(op.process, op.input, flipped, op.call, op.ret, not flipped)
    else:
        new = Operation(op.process, (WRITE, draw(VALUES)), None, op.call, op.ret, False)
    return [*ops[:i], new, *ops[i + 1 :]]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_wgl_agrees_with_the_brute_force_oracle_on_mutated_histories(
    ops: list[Operation],
) -> None:
    model = CasRegisterModel()
    expected = Verdict.OK if oracle(model, ops) else Verdict.ILLEGAL
    assert check_partition(model, ops).verdict is expected


def test_the_generator_and_the_oracle_can_see_illegal_histories() -> None:
    # the mutation test above is not vacuous: a mutation the oracle rejects exists
    model = CasRegisterModel()
    ops = [_write(0, 1, 1), _read(2, 3, 2)]
    assert not oracle(model, ops)
    assert check_partition(model, ops).verdict is Verdict.ILLEGAL


def test_oracle_matches_wgl_exhaustively_on_tiny_register_histories() -> None:
    model = RegisterModel()
    shapes = [(0, 3), (1, 4), (5, 6), (2, None)]
    seen = {Verdict.OK: 0, Verdict.ILLEGAL: 0}
    for values in itertools.product([None, 1, 2], repeat=3):
        ops = [
            _write(*shapes[0], 1),
            _read(*shapes[1], values[0]),
            _read(*shapes[2], values[1]),
            _write(*shapes[3], 2),
            _read(7, 8, values[2]),
        ]
        verdict = check_partition(model, ops).verdict
        assert (verdict is Verdict.OK) == oracle(model, ops), values
        seen[verdict] += 1
    assert seen[Verdict.OK] and seen[Verdict.ILLEGAL]


def test_search_slices_are_small_enough_to_interleave() -> None:
    assert 256 <= wgl.SLICE_STEPS <= 1 << 16


# --- the pruning of indeterminate operations (no-op and twin rules) ----------------------

SMALL = st.sampled_from([None, 0, 1])


@st.composite
def windows_with_indeterminate_twins(draw: st.DrawFn) -> list[Operation]:
    """Cas-register operations in arbitrary (not necessarily linearizable) windows, over two
    values, with many indeterminate writes and cas: equal inputs are common, as in the etcd
    logs, so the twin and no-op rules of the search are exercised."""
    model = CasRegisterModel()
    ops = []
    for _ in range(draw(st.integers(1, 7))):
        call = draw(st.integers(0, 12))
        ret: int | None = call + draw(st.integers(1, 6))
        kind = draw(st.sampled_from([READ, WRITE, WRITE, CAS]))
        if kind == READ:
            input: Any = (READ, None)
            output: Any = draw(SMALL)
        elif kind == WRITE:
            input, output = (WRITE, draw(st.sampled_from([0, 1]))), None
            if draw(st.booleans()):
                ret = None
        else:
            input = (CAS, (draw(SMALL), draw(st.sampled_from([0, 1]))))
            output = draw(st.sampled_from([True, False, None]))
            if output is None:
                ret = None
        ops.append(_op(call, ret, input, output, model.read_only(input, output)))
    return ops


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(windows_with_indeterminate_twins())
def test_pruned_search_agrees_with_the_oracle_on_indeterminate_twins(
    ops: list[Operation],
) -> None:
    model = CasRegisterModel()
    expected = Verdict.OK if oracle(model, ops) else Verdict.ILLEGAL
    assert check_partition(model, ops).verdict is expected


def test_a_later_twin_can_stand_in_once_the_earlier_one_is_linearized() -> None:
    # two timed-out writes of 1; the reads see 1, then 2, then 1 again: both writes must
    # take effect, the second only after the write of 2
    ops = [
        _write(0, None, 1),
        _read(1, 2, 1),
        _write(3, 4, 2),
        _read(5, 6, 2),
        _write(7, None, 1),
        _read(8, 9, 1),
    ]
    assert oracle(RegisterModel(), ops)
    assert check_partition(RegisterModel(), ops).verdict is Verdict.OK
    # without the second write of 1 the last read cannot be explained
    assert check_partition(RegisterModel(), ops[:4] + ops[5:]).verdict is Verdict.ILLEGAL


def test_an_indeterminate_write_of_the_current_value_is_not_tried() -> None:
    # the pending write of 0 onto 0 changes nothing: the search does not linearize it (it
    # would first, in event order, without the rule)
    ops = [_write(0, 1, 0), _write(2, None, 0), _write(3, 4, 1), _read(5, 6, 1)]
    result = check_partition(RegisterModel(), ops)
    assert result.verdict is Verdict.OK
    assert result.linearization == [0, 2, 3]


# --- the growth pruning of the kv model (appends only lengthen a value) -------------------


@st.composite
def kv_windows(draw: st.DrawFn) -> list[Operation]:
    """One key's get/put/append operations in arbitrary windows, over short strings (so
    one append's value can be another's prefix: "a", "ab"), some indeterminate: the
    growth pruning meets gets that saw a prefix, a put that resets, and pending ops."""
    model = KeyValueModel()
    ops = []
    for _ in range(draw(st.integers(1, 7))):
        call = draw(st.integers(0, 12))
        ret: int | None = call + draw(st.integers(1, 6))
        kind = draw(st.sampled_from([GET, GET, PUT, APPEND, APPEND]))
        output: Any = None
        if kind == GET:
            input: Any = (GET, None)
            output = draw(st.sampled_from(["", "a", "b", "ab", "ba", "aab", "bab"]))
        else:
            input = (kind, draw(st.sampled_from(["a", "b", "ab"])))
            if draw(st.integers(0, 3)) == 0:
                ret = None
        ops.append(_op(call, ret, input, output, model.read_only(input, output)))
    return ops


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kv_windows())
def test_growth_pruned_kv_search_agrees_with_the_oracle(ops: list[Operation]) -> None:
    model = KeyValueModel()
    expected = Verdict.OK if oracle(model, ops) else Verdict.ILLEGAL
    assert check_partition(model, ops).verdict is expected


def test_a_get_that_no_append_order_explains_stops_the_search_early() -> None:
    # five concurrent appends, then gets that fix their order: without the pruning the
    # search tries orders of all five before the first get returns; with it, an order is
    # dropped as soon as its value is no prefix of what the next get saw
    values = ["x1", "x2", "x3", "x4", "x5"]
    appends = [_op(i, 20, (APPEND, v), None) for i, v in enumerate(values)]
    seen = "x5x4x3x2x1"
    gets = [_op(21 + 2 * k, 22 + 2 * k, (GET, None), seen, True) for k in range(3)]
    pruned = check_partition(KeyValueModel(), appends + gets)
    assert pruned.verdict is Verdict.OK

    class Unpruned(KeyValueModel):
        prunes_by_growth = False

    unpruned = check_partition(Unpruned(), appends + gets)
    assert unpruned.verdict is Verdict.OK
    assert pruned.steps * 5 < unpruned.steps, (pruned.steps, unpruned.steps)
    # and a put called before the get's return may reset the value: no pruning through it
    reset = [*appends, _op(3, 19, (PUT, "x5"), None), *gets]
    assert check_partition(KeyValueModel(), reset).verdict is Verdict.OK
