"""No anomaly classed as a violation ever fires on a history that keeps Kafka's guarantees.

The ground truth is the brute-force oracle (``jepsen_py.checker.kafka_oracle``): a history
keeps Kafka's guarantees when some partition log explains it (docs/checking.md). The
histories are small and generated (``jepsen_py.checker.kafkagen``): concurrent producers
and consumers, sends acknowledged with and without offsets, failed and indeterminate
sends, polls from arbitrary offsets, seeks both ways, polls without ``from``, stale high
watermarks, ``assign``/``subscribe`` with and without keys, final reads, and a simulated
cluster that sometimes misbehaves, so that both sides of the property are exercised.

The default suite checks a quick sample; ``-m slow`` checks 10,000 histories and prints the
figures. A second property ties the taxonomy to linearizability: on histories whose polls
all carry a ``from`` and that have no final read, a history the brute-force
linearizability search accepts fires no violation either.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from typing import Any

import attrs
import pytest

from jepsen_py.checker.anomalies import observe
from jepsen_py.checker.kafka_log_model import brute_force_check
from jepsen_py.checker.kafka_oracle import kafka_consistent
from jepsen_py.checker.kafkagen import SmallWorkload, generate_small
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.taxonomy import ANOMALIES, VIOLATIONS
from jepsen_py.history.op import Op

QUICK = 1000
FULL = 10_000
RETENTION_QUICK = 300
"""Histories with retention (``log_start`` in polls), on seeds after the others."""


def workload(rng: random.Random) -> SmallWorkload:
    """A workload drawn from ``rng``: sizes, fault rate and habits vary per history."""
    return SmallWorkload(
        keys=rng.choice((1, 1, 2)),
        producers=rng.randint(1, 3),
        consumers=rng.randint(1, 3),
        steps=rng.choice((12, 20, 30, 40)),
        p_fault=rng.choice((0.0, 0.0, 0.05, 0.15, 0.3)),
        p_final=rng.choice((0.0, 0.3, 0.6)),
        p_from=rng.choice((0.3, 0.6, 1.0)),
        p_no_offset=rng.choice((0.0, 0.2, 0.4)),
        p_stale=rng.choice((0.0, 0.15, 0.4)),
        p_reassign=rng.choice((0.0, 0.15, 0.3)),
        max_records=rng.randint(1, 5),
    )


def violations_of(ops: list[Op]) -> set[str]:
    return {n for key in observe(ops) for n in key.found() if n in VIOLATIONS}


@attrs.define
class Tally:
    histories: int = 0
    accepted: int = 0
    rejected: int = 0
    caught: int = 0
    """Rejected histories on which some violation fired."""
    fired: Counter[tuple[str, bool]] = attrs.field(factory=Counter)
    """(anomaly, oracle accepted) -> histories it fired on."""
    false_alarms: list[tuple[int, set[str]]] = attrs.field(factory=list)
    """(seed, violations) of accepted histories on which a violation fired."""
    seconds: float = 0.0


def run_oracle(n: int, first_seed: int = 0, tally: Tally | None = None, *,
               retention: bool = False) -> Tally:  # fmt: skip
    """``n`` histories from ``first_seed`` on; ``retention``: each with a log start that
    moves (``SmallWorkload.p_retention``)."""
    tally = tally if tally is not None else Tally()
    started = time.perf_counter()
    for seed in range(first_seed, first_seed + n):
        rng = random.Random(seed)
        w = workload(rng)
        if retention:
            w = attrs.evolve(w, p_retention=rng.choice((0.05, 0.15, 0.3)))
        ops = generate_small(rng, w)
        accepted = kafka_consistent(ops).ok
        found = {n for key in observe(ops) for n in key.found()}
        broken = found & VIOLATIONS
        tally.histories += 1
        tally.fired.update((name, accepted) for name in found)
        if accepted:
            tally.accepted += 1
            if broken:
                tally.false_alarms.append((seed, broken))
        else:
            tally.rejected += 1
            tally.caught += bool(broken)
    tally.seconds += time.perf_counter() - started
    return tally


def _report(tally: Tally) -> str:
    return (
        f"{tally.histories} histories in {tally.seconds:.1f} s: {tally.accepted} keep Kafka's "
        f"guarantees (the oracle), {tally.rejected} do not ({tally.caught} of them caught by "
        f"a violation); violations on accepted histories: {len(tally.false_alarms)}"
    )


def _assert_sound_and_not_vacuous(tally: Tally) -> None:
    print(_report(tally))
    assert not tally.false_alarms, tally.false_alarms[:10]
    # not vacuous: both sides occur, and every anomaly of the taxonomy fires somewhere
    assert tally.accepted >= tally.histories // 2
    assert tally.rejected >= tally.histories // 20
    assert {name for name, _ in tally.fired} == set(ANOMALIES), tally.fired
    assert all(tally.fired[(name, True)] for name in set(ANOMALIES) - VIOLATIONS)
    assert tally.caught >= 0.9 * tally.rejected


def test_no_violation_fires_on_a_history_the_oracle_accepts_quick_sample() -> None:
    tally = run_oracle(QUICK)
    _assert_sound_and_not_vacuous(
        run_oracle(RETENTION_QUICK, first_seed=QUICK, tally=tally, retention=True)
    )


@pytest.mark.slow
def test_no_violation_fires_on_a_history_the_oracle_accepts_10000_histories() -> None:
    tally = run_oracle(FULL)
    _assert_sound_and_not_vacuous(
        run_oracle(FULL // 5, first_seed=FULL, tally=tally, retention=True)
    )


def test_retention_histories_are_judged_by_the_log_start_they_report() -> None:
    """With retention, records below the log start are deleted-by-retention (never a
    violation) on histories the oracle accepts, and the oracle rejects some histories
    whose faults the taxonomy still catches: the property is not vacuous there either."""
    tally = run_oracle(RETENTION_QUICK, first_seed=QUICK, retention=True)
    print(_report(tally))
    assert not tally.false_alarms, tally.false_alarms[:10]
    assert tally.fired[("deleted-by-retention", True)] > 0
    assert tally.rejected and tally.caught >= 0.9 * tally.rejected


def _max_read_lost_write(ops: list[Op]) -> bool:
    """The rule this taxonomy replaced: an acknowledged send below the highest offset any
    poll returned, never read, is lost (whether or not a poll covered it)."""
    acked: dict[Any, int] = {}
    read: set[Any] = set()
    top = -1
    pending: dict[Any, Op] = {}
    for op in ops:
        if op.type == "invoke":
            pending[op.process] = op
            continue
        inv = pending.pop(op.process, None)
        if inv is None or op.type != "ok":
            continue
        if op.f == "send" and type((op.value or {}).get("offset")) is int:
            acked[inv.value] = op.value["offset"]
        if op.f == "poll":
            for offset, value in op.value["records"]:
                read.add(value)
                top = max(top, offset)
    return any(v not in read and o < top for v, o in acked.items())


def test_the_oracle_test_catches_the_rule_it_replaced() -> None:
    """The property can fail: the old lost-write rule (below the highest offset read)
    fires on histories the oracle accepts, in this very sample."""
    alarms = 0
    for seed in range(QUICK):
        rng = random.Random(seed)
        ops = generate_small(rng, workload(rng))
        if kafka_consistent(ops).ok and _max_read_lost_write(ops):
            alarms += 1
    assert alarms > 0


def test_on_histories_with_from_on_every_poll_linearizable_implies_no_violation() -> None:
    checked = linearizable = 0
    for seed in range(300):
        rng = random.Random(seed)
        w = attrs.evolve(workload(rng), p_from=1.0, p_final=0.0, steps=rng.choice((12, 20)))
        ops = generate_small(rng, w)
        try:
            verdict = brute_force_check(ops)
        except ValueError:
            continue  # a partition too big for the exponential search
        checked += 1
        if verdict is Verdict.OK:
            linearizable += 1
            assert not violations_of(ops), (seed, violations_of(ops))
    assert checked >= 250 and 0 < linearizable < checked
