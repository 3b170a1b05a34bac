"""Kafka's guarantees as named anomalies (``jepsen_py.checker.anomalies``) and the one
verdict function over them (``jepsen_py.checker.verdict``): each anomaly on a hand-written
history with its exact witness, the position rules (seeks, reassignment, offsets nobody
saw, polls without ``from``), the final-read rule, and each anomaly injected into
generated histories, which have none of their own. The definitions are docs/checking.md's;
the oracle test (test_anomaly_oracle.py) holds them to a brute-force decision."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jepsen_py.checker.anomalies import find_anomalies, observe, summarize
from jepsen_py.checker.histgen import INJECTORS, LogWorkload, generate
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.taxonomy import (
    ANOMALIES,
    CLASSES,
    KAFKA,
    LINEARIZABLE,
    NONLINEARIZABLE,
    VIOLATIONS,
)
from jepsen_py.checker.verdict import check_keys
from jepsen_py.history.op import Op


def history(*events: tuple[Any, ...]) -> list[Op]:
    """Ops from (process, type, f, value[, key]) rows, indexed in order."""
    return [
        Op(i, i * 1000, e[0], e[1], e[2], e[4] if len(e) > 4 else "k", e[3])
        for i, e in enumerate(events)
    ]


def sent(p: Any, v: Any, offset: int | None, key: str = "k") -> list[tuple[Any, ...]]:
    ack = {"offset": offset, "value": v} if offset is not None else {"value": v}
    return [(p, "invoke", "send", v, key), (p, "ok", "send", ack, key)]


def polled(
    p: Any, start: Any, records: list[list[Any]], hw: int, key: str = "k", final: bool = False
) -> list[tuple[Any, ...]]:
    arg: dict[str, Any] = {} if start is None else {"from": start}
    if final:
        arg["final"] = True
    return [
        (p, "invoke", "poll", arg, key),
        (p, "ok", "poll", {"records": records, "hw": hw}, key),
    ]


def found(ops: list[Op]) -> dict[str, list[list[int]]]:
    """The anomalies found, as witnesses of op indices."""
    return {n: [[op.index for op in w] for w in ws] for n, ws in find_anomalies(ops).items() if ws}


def verdict(ops: list[Op], consistency: str = KAFKA) -> Any:
    (checked,) = check_keys(ops, consistency)
    return checked.verdict


LOG = [[0, 10], [1, 11], [2, 12], [3, 13]]
WRITES = sent(0, 10, 0) + sent(0, 11, 1) + sent(0, 12, 2) + sent(0, 13, 3)  # indices 0..7


def test_every_anomaly_has_a_class_and_the_violations_are_named() -> None:
    assert set(CLASSES) == set(ANOMALIES)
    assert set(CLASSES.values()) == {"violation", "informational"}
    assert {n for n, c in CLASSES.items() if c == "violation"} == VIOLATIONS
    assert {"unseen", "deleted-by-retention", "stale-read"} == set(ANOMALIES) - VIOLATIONS


def test_inconsistent_offsets_names_the_first_witness_of_each_value() -> None:
    h = history(*sent(0, 10, 0), *sent(1, 11, 0), *polled(2, 0, [[0, 10]], 1))
    assert found(h)["inconsistent-offsets"] == [[1, 3]]
    assert "inconsistent-offsets" not in found(history(*WRITES, *polled(2, 0, LOG, 4)))


def test_duplicate_names_the_first_witness_at_each_offset() -> None:
    h = history(*sent(0, 10, 0), *polled(2, 0, [[0, 10], [1, 10]], 2))
    assert found(h)["duplicate"] == [[1, 3]]


def test_aborted_read_is_a_read_of_a_failed_send() -> None:
    h = history((0, "invoke", "send", 10), (0, "fail", "send", 10), *polled(1, 0, [[0, 10]], 1))
    assert found(h)["aborted-read"] == [[0, 1, 3]]
    info = history((0, "invoke", "send", 10), (0, "info", "send", 10), *polled(1, 0, [[0, 10]], 1))
    assert "aborted-read" not in found(info)


def test_a_write_no_poll_covered_is_unseen_not_lost() -> None:
    # the consumer started past offsets 0 and 1 with an explicit from: it never covered
    # them, so nothing says their writes are gone (the false alarm of a max-read rule)
    h = history(*WRITES, *polled(2, 2, [[2, 12], [3, 13]], 4))
    assert found(h) == {"unseen": [[0, 1], [2, 3]]}
    assert verdict(h).verdict is Verdict.OK


def test_a_write_a_poll_covered_and_nobody_read_is_lost() -> None:
    # a poll from 0 (or from a position at 0) that returns offset 2 first covered 0 and 1
    h = history(*WRITES, *polled(2, 0, [[2, 12], [3, 13]], 4))
    assert found(h)["lost-write"] == [[0, 1, 9], [2, 3, 9]]
    assert verdict(h).verdict is Verdict.ILLEGAL
    assert verdict(h).violations == ("lost-write", "poll-skip")


def test_a_complete_final_read_that_misses_an_acknowledged_write_loses_it() -> None:
    final = [*polled(3, 0, [[0, 10], [1, 11]], 2, final=True), *polled(3, 2, [], 2, final=True)]
    h = history(*WRITES, *final)
    assert found(h)["lost-write"] == [[4, 5, 11], [6, 7, 11]]
    # a record read earlier (its send indeterminate) and gone from the final read: lost too
    h = history(
        (0, "invoke", "send", 10),
        (0, "info", "send", 10),
        *polled(1, 0, [[0, 10]], 1),
        *polled(3, 0, [], 0, final=True),
    )
    assert found(h)["lost-write"] == [[0, 3, 5]]


def test_a_final_read_that_never_reached_the_end_proves_nothing() -> None:
    h = history(*WRITES, *polled(3, 0, [[0, 10], [1, 11]], 4, final=True))
    assert "lost-write" not in found(h) and found(h)["unseen"] == [[4, 5], [6, 7]]
    result = verdict(h)
    assert result.verdict is Verdict.UNKNOWN and result.final_read.unfinished
    assert "final read" in (result.explanation or "")


def test_a_forward_seek_is_not_a_skip_but_a_continuing_poll_that_jumps_is() -> None:
    h = history(*WRITES, *polled(2, 0, [[0, 10]], 4), *polled(2, 2, [[2, 12]], 4))
    assert "poll-skip" not in found(h)
    h = history(*WRITES, *polled(2, 0, [[0, 10]], 4), *polled(2, None, [[2, 12]], 4))
    # the previous poll, the op that shows offset 1 exists, the poll
    assert found(h)["poll-skip"] == [[3, 9, 10, 11]]
    # a poll with a from whose first record lies past it skips too
    h = history(*WRITES, *polled(2, 0, [[1, 11]], 4))
    assert found(h)["poll-skip"] == [[1, 8, 9]]


def test_skipping_offsets_nobody_saw_is_not_a_skip() -> None:
    # Offset 1 holds no known record (a transaction marker, a compacted record).
    h = history(
        *sent(0, 10, 0),
        *sent(0, 12, 2),
        *polled(2, 0, [[0, 10]], 3),
        *polled(2, None, [[2, 12]], 3),
    )
    assert "poll-skip" not in found(h)


def test_nonmonotonic_poll_is_a_continuing_poll_that_goes_back_not_a_seek() -> None:
    h = history(*WRITES, *polled(2, 0, [[0, 10], [1, 11]], 4), *polled(2, None, [[1, 11]], 4))
    assert found(h)["nonmonotonic-poll"] == [[9, 10, 11]]
    h = history(*WRITES, *polled(2, 0, [[0, 10], [1, 11]], 4), *polled(2, 0, [[0, 10]], 4))
    assert "nonmonotonic-poll" not in found(h)


def test_internal_skips_and_regressions_are_within_one_poll() -> None:
    h = history(*WRITES, *polled(2, 0, [[0, 10], [2, 12]], 4))
    assert found(h)["int-poll-skip"] == [[3, 8, 9]]
    h = history(*WRITES, *polled(2, 0, [[0, 10], [1, 11], [1, 11], [0, 10]], 4))
    assert found(h)["int-nonmonotonic-poll"] == [[8, 9], [8, 9]]


def test_assign_keeps_the_positions_of_the_keys_it_lists_and_forgets_the_rest() -> None:
    base = [*WRITES, *polled(2, 0, [[0, 10]], 4)]
    keep = history(*base, (2, "invoke", "assign", ["k", "j"]), (2, "ok", "assign", ["k", "j"]),
                   *polled(2, None, [[2, 12]], 4))  # fmt: skip
    assert found(keep)["poll-skip"]
    drop = history(*base, (2, "invoke", "subscribe", ["j"]), (2, "ok", "subscribe", ["j"]),
                   *polled(2, None, [[2, 12]], 4))  # fmt: skip
    assert "poll-skip" not in found(drop)
    failed = history(*base, (2, "invoke", "assign", ["j"]), (2, "fail", "assign", ["j"]),
                     *polled(2, None, [[2, 12]], 4))  # fmt: skip
    assert found(failed)["poll-skip"]


def test_positions_are_per_key_and_per_process() -> None:
    h = history(
        *WRITES,
        *sent(0, 20, 0, "j"),
        *polled(2, 0, [[0, 10], [1, 11]], 4),
        *polled(2, 0, [[0, 20]], 1, "j"),
        *polled(2, None, [[2, 12]], 4),
        *polled(3, None, [[3, 13]], 4),  # a new consumer may start anywhere
    )
    assert not set(found(h)) & VIOLATIONS


def test_nonmonotonic_send_takes_offsets_from_acks_or_from_reads() -> None:
    h = history(*sent(0, 10, 1), *sent(0, 11, 0))
    assert found(h)["nonmonotonic-send"] == [[1, 3]]
    assert "nonmonotonic-send" not in found(history(*sent(0, 10, 1), *sent(1, 11, 0)))
    # acknowledged without offsets (as Jepsen's clients may): the reads place them
    h = history(*sent(0, 10, None), *sent(0, 11, None), *polled(1, 0, [[0, 11], [1, 10]], 2))
    assert found(h)["nonmonotonic-send"] == [[1, 3]]
    # an assign of the producer's process that leaves the key out ends the comparison
    h = history(*sent(0, 10, 1), (0, "invoke", "assign", []), (0, "ok", "assign", []),
                *sent(0, 11, 0))  # fmt: skip
    assert "nonmonotonic-send" not in found(h)


def test_a_stale_read_is_informational_under_kafka_and_decides_under_linearizable() -> None:
    h = history(*sent(0, 10, 0), *polled(1, 0, [], 0), *polled(1, 0, [[0, 10]], 1))
    assert found(h) == {"stale-read": [[1, 2, 3]]}
    kafka = verdict(h)
    assert kafka.verdict is Verdict.OK and kafka.linearizable is Verdict.ILLEGAL
    assert kafka.informational == ("stale-read",)
    strict = verdict(h, LINEARIZABLE)
    assert strict.verdict is Verdict.ILLEGAL and strict.violations == (NONLINEARIZABLE,)
    assert strict.witness


def test_a_violation_decides_even_when_linearizability_is_unknown() -> None:
    # the send acknowledged without an offset that nobody read leaves the log checker
    # undecided; the continuing poll that skips offset 1 decides under kafka
    h = history(*WRITES, *sent(4, 20, None), *polled(2, 0, [[0, 10]], 5),
                *polled(2, None, [[2, 12]], 5))  # fmt: skip
    result = verdict(h)
    assert result.linearizable is Verdict.UNKNOWN
    assert result.verdict is Verdict.ILLEGAL
    assert result.violations == ("lost-write", "poll-skip")  # 11 at offset 1: skipped, lost
    assert "linearizable: unknown" in (result.explanation or "")


def test_a_value_sent_twice_leaves_the_key_unknown_whatever_was_found() -> None:
    h = history(*sent(0, 10, 0), *sent(1, 10, 1))
    result = verdict(h)
    assert found(h)["duplicate"]  # meaningless: two sends of 10
    assert result.kafka is Verdict.UNKNOWN and not result.violations
    assert "sent twice" in (result.explanation or "")


def test_malformed_ops_are_problems_and_leave_no_position() -> None:
    h = history(
        *WRITES,
        *polled(2, 0, [[0, 10]], 4),
        (2, "invoke", "poll", {}),
        (2, "ok", "poll", {"records": "oops", "hw": 4}),
        *polled(2, None, [[3, 13]], 4),
    )
    (key,) = observe(h)
    assert key.problems and "line" not in key.problems[0].reason  # named by index here
    assert not set(key.found()) & VIOLATIONS
    assert verdict(h).verdict is Verdict.UNKNOWN


def test_summarize_counts_every_anomaly_and_the_violations() -> None:
    h = history(*sent(0, 10, 1), *sent(0, 11, 0), *polled(1, 0, [[0, 11], [1, 12]], 2))
    summary = summarize(find_anomalies(h), examples=1)
    assert set(summary["counts"]) == set(ANOMALIES)
    assert summary["examples"]["nonmonotonic-send"] == [[1, 3]]
    assert summary["violations"] == summary["total"] - summary["counts"]["unseen"]


def test_nemesis_ops_and_stray_completions_are_passed_over() -> None:
    h = history(
        ("nemesis", "info", "kill", None),
        (0, "ok", "send", {"offset": 0, "value": 1}),  # completes nothing
        *sent(1, 10, 0),
        *polled(2, 0, [[0, 10]], 1),
    )
    assert found(h) == {}


clean_workloads = st.builds(
    LogWorkload,
    ops=st.integers(1, 400),
    keys=st.integers(1, 3),
    producers=st.integers(1, 4),
    consumers=st.integers(1, 3),
    p_seek=st.sampled_from([0.0, 0.2]),
    p_implicit=st.sampled_from([0.0, 0.3]),
    max_records=st.integers(0, 5),
    final_chunk=st.integers(1, 10),
)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), workload=clean_workloads)
def test_clean_generated_histories_have_no_violations(seed: int, workload: LogWorkload) -> None:
    ops = generate(random.Random(seed), workload)
    assert not set(found(ops)) & VIOLATIONS, found(ops)
    assert all(c.verdict.verdict is not Verdict.ILLEGAL for c in check_keys(ops))


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    name=st.sampled_from(sorted(INJECTORS)),
    workload=clean_workloads,
)
def test_each_injected_anomaly_is_found_where_it_was_put(
    seed: int, name: str, workload: LogWorkload
) -> None:
    clean = generate(random.Random(seed), workload)
    mutated = INJECTORS[name](clean, random.Random(seed))
    if mutated is None:
        return  # this history offers no place for the anomaly
    assert name not in found(clean)
    witnesses = find_anomalies(mutated)[name]
    assert witnesses
    if name in ("lost-write", "unseen"):
        return  # the change is a read that is no longer there (or a final read taken away)
    changed = {i for i, (a, b) in enumerate(zip(clean, mutated, strict=False)) if a != b}
    changed |= set(range(len(clean), len(mutated)))
    assert any(op.index in changed for w in witnesses for op in w), "witness shows the change"


def test_injectors_apply_to_ordinary_histories() -> None:
    """The property above is not vacuous: on a run of ordinary size, every injector finds
    a place for its anomaly."""
    clean = generate(random.Random(5), LogWorkload(ops=400, p_implicit=0.2))
    for name, inject in INJECTORS.items():
        mutated = inject(clean, random.Random(5))
        assert mutated is not None, name
        assert find_anomalies(mutated)[name], name


def test_an_illegal_verdict_always_names_a_violation_and_its_witnesses() -> None:
    from jepsen_py.checker.kafkagen import SmallWorkload, generate_small

    illegal = 0
    for seed in range(300):
        rng = random.Random(seed)
        ops = generate_small(rng, SmallWorkload(keys=2, steps=40, p_fault=0.2, p_final=0.5))
        for consistency in (KAFKA, LINEARIZABLE):
            for checked in check_keys(ops, consistency):
                result = checked.verdict
                if result.verdict is Verdict.ILLEGAL:
                    illegal += 1
                    assert result.violations and result.witness, (seed, result)
                    assert all(v in (result.explanation or "") for v in result.violations)
                else:
                    assert not result.violations
                if consistency == KAFKA and result.verdict is Verdict.ILLEGAL:
                    assert set(result.violations) <= VIOLATIONS  # never stale-read or unseen
    assert illegal > 50


def polled_with_start(
    p: Any, start: Any, records: list[list[Any]], hw: int, log_start: int, final: bool = False
) -> list[tuple[Any, ...]]:
    """A poll whose answer reports the log start (retention on)."""
    invoke, ok = polled(p, start, records, hw, final=final)
    return [invoke, (ok[0], ok[1], ok[2], {**ok[3], "log_start": log_start}, ok[4])]


def test_a_final_read_from_the_log_start_deletes_by_retention_what_is_below_it() -> None:
    final = [
        (3, "invoke", "poll", {"from": 0, "final": True}, "k"),
        (3, "fail", "poll", {"error": "OFFSET_OUT_OF_RANGE", "log_start": 2}, "k"),
        *polled_with_start(3, 2, [[2, 12], [3, 13]], 4, 2, final=True),
        *polled_with_start(3, 4, [], 4, 2, final=True),
    ]
    h = history(*WRITES, *final)
    assert found(h) == {"deleted-by-retention": [[0, 1, 13], [2, 3, 13]]}
    assert verdict(h).verdict is Verdict.OK
    # the same final read without a log start is incomplete (it never covered 0 and 1)
    plain = history(*WRITES, *polled(3, 2, [[2, 12], [3, 13]], 4, final=True))
    assert verdict(plain).verdict is Verdict.UNKNOWN
    # and a write at or above the log start the final read missed is still lost
    missing = [
        *polled_with_start(3, 2, [[2, 12]], 4, 2, final=True),
        *polled_with_start(3, 3, [], 3, 2, final=True),
    ]
    assert found(history(*WRITES, *missing))["lost-write"] == [[6, 7, 11]]


def test_a_consumer_reset_to_the_log_start_does_not_skip() -> None:
    # the consumer read 0 and 1 then, without a from, read on at 3: retention moved the
    # log start to 3 meanwhile, so 2 is deleted, not skipped
    reads = [
        *polled(2, 0, [[0, 10], [1, 11]], 4),
        *polled_with_start(2, None, [[3, 13]], 4, 3),
    ]
    h = history(*WRITES, *reads)
    assert found(h) == {"deleted-by-retention": [[4, 5]]}
    # without the log start it is a poll-skip, and 2 a lost write (the poll covered it)
    skipped = history(*WRITES, *polled(2, 0, [[0, 10], [1, 11]], 4), *polled(2, None, [[3, 13]], 4))
    assert {"poll-skip", "lost-write"} <= set(found(skipped))
