"""Three deciders of Kafka-log linearizability must agree: the polynomial checker
(``kafka_log.check_log``), the brute-force oracle over every order of effect points
(``kafka_log_model.brute_force_check``) and the Wing-Gong-Lowe search on
``KAFKA_LOG_MODEL`` (``wgl``). The oracle comparison never skips."""

from __future__ import annotations

import importlib.util
import random
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from jepsen_py.checker.histgen import INJECTORS, PERTURBATIONS, LogWorkload, generate, mutate
from jepsen_py.checker.kafka_log import check_log
from jepsen_py.checker.kafka_log_model import KAFKA_LOG_MODEL, brute_force_check
from jepsen_py.checker.result import Verdict
from jepsen_py.history.op import Op

MUTATIONS = sorted([*INJECTORS, *PERTURBATIONS])

SMALL = LogWorkload(
    ops=12,
    producers=2,
    consumers=2,
    p_fail=0.15,
    p_info=0.25,
    p_poll_info=0.1,
    max_records=2,
    p_seek=0.2,
    p_implicit=0.2,
    final_chunk=2,
)
"""Histories small enough for the oracle: about six operations plus the final reads."""


SMALL_TWO_KEYS = attrs.evolve(SMALL, keys=2, ops=20)


def small_history(seed: int, keys: int = 1) -> list[Op]:
    return generate(random.Random(seed), SMALL if keys == 1 else SMALL_TWO_KEYS)


def oracle(ops: list[Op]) -> Verdict:
    return brute_force_check(ops, max_ops=18)


@st.composite
def arbitrary_histories(draw: st.DrawFn) -> list[Op]:
    """Tiny histories with no promise of validity: each operation on its own process,
    calls and returns interleaved at random, offsets, values and high watermarks drawn
    from small ranges so that they collide often."""
    n = draw(st.integers(1, 6))
    slots = draw(st.permutations(range(2 * n)))
    events: list[tuple[int, Op | None]] = []
    for i in range(n):
        call, ret = sorted(slots[2 * i : 2 * i + 2])
        if draw(st.booleans()):  # a send of value i
            outcome = draw(st.sampled_from(["ok", "ok", "ok", "info", "fail", "pending"]))
            events.append((call, Op(0, 0, i, "invoke", "send", "k", i)))
            if outcome == "ok":
                value: Any = {"offset": draw(st.integers(0, 3)), "value": i}
            else:
                value = i
            if outcome != "pending":
                events.append((ret, Op(0, 0, i, outcome, "send", "k", value)))
        else:
            start = draw(st.one_of(st.none(), st.integers(0, 2)))
            # records usually start at ``from``, as a fetch's must, but not always
            first = (
                start if start is not None and draw(st.integers(0, 3)) else draw(st.integers(0, 2))
            )
            length = draw(st.integers(0, 2))
            records = [[first + j, draw(st.integers(0, n))] for j in range(length)]
            hw = draw(st.integers(0, 4))
            events.append((call, Op(0, 0, i, "invoke", "poll", "k", {"from": start})))
            if draw(st.integers(0, 5)):
                done = {"records": records, "hw": hw}
                events.append((ret, Op(0, 0, i, "ok", "poll", "k", done)))
    events.sort(key=lambda event: event[0])
    return [
        Op(j, j * 1000, op.process, op.type, op.f, op.key, op.value)
        for j, (_, op) in enumerate(events)
        if op is not None
    ]


def test_oracle_can_say_illegal_and_ok() -> None:
    def h(*rows: tuple[Any, ...]) -> list[Op]:
        return [Op(i, i, p, t, f, "k", v) for i, (p, t, f, v) in enumerate(rows)]

    read_before_write = h(
        (1, "invoke", "poll", {"from": 0}),
        (1, "ok", "poll", {"records": [[0, 7]], "hw": 1}),
        (0, "invoke", "send", 7),
        (0, "ok", "send", {"offset": 0, "value": 7}),
    )
    overlapping = h(
        (1, "invoke", "poll", {"from": 0}),
        (0, "invoke", "send", 7),
        (1, "ok", "poll", {"records": [[0, 7]], "hw": 1}),
        (0, "ok", "send", {"offset": 0, "value": 7}),
    )
    assert brute_force_check(read_before_write) is Verdict.ILLEGAL
    assert brute_force_check(overlapping) is Verdict.OK
    assert check_log(read_before_write).verdict is Verdict.ILLEGAL
    assert check_log(overlapping).verdict is Verdict.OK


def test_model_steps_follow_the_abstract_log() -> None:
    model = KAFKA_LOG_MODEL
    state = model.init()
    ok, state = model.step(state, ("send", 7), (0, 7))
    assert ok and state == (7,)
    assert model.step(state, ("send", 8), (0, 8))[0] is False  # offset 0 is taken
    assert model.step(state, ("send", 8), (1, 9))[0] is False  # echoes another value
    assert model.step(state, ("send", 8), None) == (True, (7, 8))  # unknown outcome
    ok, state = model.step(state, ("send", 8), (None, 8))  # ack without offset
    assert ok and state == (7, 8)
    assert model.step(state, ("poll", 0), (((0, 7), (1, 8)), 2)) == (True, state)
    assert model.step(state, ("poll", 1), (((1, 8),), 2))[0] is True
    assert model.step(state, ("poll", 0), (((1, 8),), 2))[0] is False  # not from `from`
    assert model.step(state, ("poll", None), (((1, 8),), 2))[0] is True  # subscribed
    assert model.step(state, ("poll", 0), (((0, 7),), 1))[0] is False  # hw is the length
    assert model.step(state, ("poll", 0), (((0, 7), (1, 9)), 2))[0] is False  # another value
    assert model.step(state, ("poll", 5), ((), 2))[0] is True  # nothing there to see
    assert model.describe_state(state) == "[0:7 1:8]"


def test_oracle_refuses_histories_too_big_to_enumerate() -> None:
    ops = generate(random.Random(1), LogWorkload(ops=200))
    with pytest.raises(ValueError, match="max_ops"):
        brute_force_check(ops)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), keys=st.sampled_from([1, 1, 2]))
def test_small_valid_histories_are_linearizable_for_checker_and_oracle(
    seed: int, keys: int
) -> None:
    ops = small_history(seed, keys)
    assert check_log(ops).verdict is Verdict.OK
    assert oracle(ops) is Verdict.OK


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(seed=st.integers(0, 2**32 - 1), name=st.sampled_from(MUTATIONS), twice=st.booleans())
@example(seed=1180410, name="nonmonotonic-poll", twice=True)  # a final poll left without from
def test_checker_is_illegal_exactly_when_oracle_says_so_on_mutated_histories(
    seed: int, name: str, twice: bool
) -> None:
    rng = random.Random(seed)
    ops: list[Op] | None = small_history(seed)
    for mutation in [name, rng.choice(MUTATIONS)] if twice else [name]:
        ops = mutate(ops, rng, mutation) if ops is not None else None
    if ops is None:
        return  # the history offered no place for this mutation
    result = check_log(ops)
    assert result.verdict is oracle(ops), result.explanation
    if result.verdict is Verdict.ILLEGAL:
        assert result.witness, "an illegal verdict names the ops that witness it"


@settings(max_examples=600, deadline=None)
@given(ops=arbitrary_histories())
def test_checker_agrees_with_oracle_on_arbitrary_tiny_histories(ops: list[Op]) -> None:
    assert check_log(ops).verdict is oracle(ops)


def test_mutations_do_produce_illegal_histories() -> None:
    """The agreement above is not vacuous: across seeds, mutations break linearizability
    for both deciders, and leave it intact in other cases."""
    seen = set()
    for seed in range(300):
        rng = random.Random(seed)
        name = MUTATIONS[seed % len(MUTATIONS)]
        ops = mutate(small_history(seed), rng, name)
        if ops is not None:
            seen.add((name, oracle(ops)))
    illegal = {name for name, verdict in seen if verdict is Verdict.ILLEGAL}
    legal = {name for name, verdict in seen if verdict is Verdict.OK}
    assert {"aborted-read", "duplicate", "inconsistent-offsets", "nonmonotonic-send"} <= illegal
    assert {"hw", "record", "shrink-window", "ack-offset", "outcome"} <= illegal
    # a consumer that skips records from its position, a final read that ends before an
    # acknowledged write: not linearizable either; a consumer continuing below its position
    # (no `from`: the log model has no consumer position), a send nobody reads: linearizable
    assert "lost-write" in illegal and "poll-skip" not in legal
    assert {"unseen", "nonmonotonic-poll", "truncate"} <= legal


WGL_MISSING = importlib.util.find_spec("jepsen_py.checker.wgl") is None


@pytest.mark.skipif(WGL_MISSING, reason="jepsen_py.checker.wgl (the WGL engine) is not there yet")
@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    name=st.sampled_from([None, *MUTATIONS]),
    arbitrary=st.one_of(st.none(), arbitrary_histories()),
)
def test_wgl_search_on_the_log_model_agrees_with_checker_and_oracle(
    seed: int, name: str | None, arbitrary: list[Op] | None
) -> None:
    from jepsen_py.checker import wgl
    from jepsen_py.checker.model import operations

    ops: list[Op] | None = arbitrary if arbitrary is not None else small_history(seed)
    if name is not None and arbitrary is None and ops is not None:
        ops = mutate(ops, random.Random(seed), name)
    if ops is None:
        return
    searched = wgl.check_operations(KAFKA_LOG_MODEL, operations(ops, KAFKA_LOG_MODEL)).verdict
    assert searched is oracle(ops)
    assert searched is check_log(ops).verdict
