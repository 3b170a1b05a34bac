"""The exact Kafka-log checker (``jepsen_py.checker.kafka_log``): each rule of the reduction
on a hand-written history, then generated valid histories at size."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jepsen_py.checker.histgen import LogWorkload, generate
from jepsen_py.checker.kafka_log import check_log
from jepsen_py.checker.result import Verdict
from jepsen_py.history.op import Op

OK, ILLEGAL, UNKNOWN = Verdict.OK, Verdict.ILLEGAL, Verdict.UNKNOWN


def history(*events: tuple[Any, ...], key: str = "k") -> list[Op]:
    """Ops from (process, type, f, value[, key]) rows, indexed in order."""
    ops = []
    for i, event in enumerate(events):
        process, type_, f, value = event[:4]
        ops.append(Op(i, i * 1000, process, type_, f, event[4] if len(event) > 4 else key, value))
    return ops


def send(p: Any, v: Any, key: str = "k") -> tuple[Any, ...]:
    return (p, "invoke", "send", v, key)


def acked(p: Any, v: Any, offset: Any, key: str = "k") -> tuple[Any, ...]:
    return (p, "ok", "send", {"offset": offset, "value": v}, key)


def poll(p: Any, start: Any = 0, key: str = "k") -> tuple[Any, ...]:
    return (p, "invoke", "poll", {"from": start}, key)


def polled(p: Any, records: list[list[Any]], hw: int, key: str = "k") -> tuple[Any, ...]:
    return (p, "ok", "poll", {"records": records, "hw": hw}, key)


def indices(result: Any) -> list[int]:
    return [op.index for op in result.witness]


def test_empty_history_is_linearizable() -> None:
    assert check_log([]).verdict is OK


def test_poll_after_acknowledged_send_sees_it() -> None:
    h = history(send(0, 10), acked(0, 10, 0), poll(1), polled(1, [[0, 10]], 1))
    result = check_log(h)
    assert result.verdict is OK
    assert (result.keys, result.ops, result.log_length) == (1, 4, 1)


def test_poll_that_read_a_record_before_its_send_was_invoked_is_illegal() -> None:
    h = history(poll(1), polled(1, [[0, 10]], 1), send(0, 10), acked(0, 10, 0))
    result = check_log(h)
    assert result.verdict is ILLEGAL
    assert indices(result) == [0, 1, 2, 3]
    assert "offset 0" in (result.explanation or "")


def test_poll_with_stale_high_watermark_after_send_completed_is_illegal() -> None:
    h = history(send(0, 10), acked(0, 10, 0), poll(1), polled(1, [], 0))
    result = check_log(h)
    assert result.verdict is ILLEGAL
    assert indices(result) == [0, 1, 2, 3]


def test_stale_high_watermark_is_legal_when_the_poll_overlaps_the_send() -> None:
    h = history(poll(1), send(0, 10), acked(0, 10, 0), polled(1, [], 0))
    assert check_log(h).verdict is OK


def test_info_send_observed_by_a_poll_took_effect() -> None:
    h = history(send(0, 10), (0, "info", "send", 10), poll(1), polled(1, [[0, 10]], 1))
    result = check_log(h)
    assert result.verdict is OK
    assert result.unknown_sends_applied == 1


def test_info_send_may_take_effect_after_its_info() -> None:
    h = history(
        send(0, 10),
        (0, "info", "send", 10),
        poll(1),
        polled(1, [], 0),
        poll(1),
        polled(1, [[0, 10]], 1),
    )
    assert check_log(h).verdict is OK


def test_pending_send_observed_by_a_poll_took_effect() -> None:
    assert check_log(history(send(0, 10), poll(1), polled(1, [[0, 10]], 1))).verdict is OK


def test_info_send_cannot_take_effect_before_its_invocation() -> None:
    h = history(poll(1), polled(1, [[0, 10]], 1), send(0, 10), (0, "info", "send", 10))
    assert check_log(h).verdict is ILLEGAL


def test_read_of_a_failed_send_is_illegal() -> None:
    h = history(send(0, 10), (0, "fail", "send", 10), poll(1), polled(1, [[0, 10]], 1))
    result = check_log(h)
    assert result.verdict is ILLEGAL
    assert "aborted read" in (result.explanation or "")
    assert indices(result) == [0, 1, 3]


def test_read_of_a_never_sent_value_is_illegal() -> None:
    h = history(send(0, 10), acked(0, 10, 0), poll(1), polled(1, [[0, 10], [1, 99]], 2))
    result = check_log(h)
    assert result.verdict is ILLEGAL
    assert "never-sent" in (result.explanation or "")
    assert indices(result) == [3]


def test_two_values_at_one_offset_is_illegal() -> None:
    h = history(send(0, 10), acked(0, 10, 0), send(0, 11), acked(0, 11, 0))
    result = check_log(h)
    assert result.verdict is ILLEGAL
    assert "inconsistent offsets" in (result.explanation or "")
    assert indices(result) == [1, 3]


def test_one_value_at_two_offsets_is_illegal() -> None:
    h = history(
        send(0, 10),
        send(2, 11),
        acked(2, 11, 0),
        acked(0, 10, 1),
        poll(1),
        polled(1, [[0, 11], [1, 10], [2, 11]], 3),
    )
    result = check_log(h)
    assert result.verdict is ILLEGAL
    assert "duplicate" in (result.explanation or "")
    assert indices(result) == [2, 5]


def test_record_at_or_above_the_high_watermark_is_illegal() -> None:
    h = history(send(0, 10), acked(0, 10, 0), poll(1), polled(1, [[0, 10]], 0))
    result = check_log(h)
    assert result.verdict is ILLEGAL
    assert "high watermark" in (result.explanation or "")


def test_negative_high_watermark_or_offset_is_illegal() -> None:
    h = history(send(0, 10), acked(0, 10, 0), poll(1), polled(1, [], -1))
    assert check_log(h).verdict is ILLEGAL
    assert check_log(history(poll(1), polled(1, [], -1))).verdict is ILLEGAL
    assert check_log(history(send(0, 10), acked(0, 10, -1))).verdict is ILLEGAL
    h = history(send(0, 10), acked(0, 10, 0), poll(1, -1), polled(1, [[-1, 10]], 1))
    assert check_log(h).verdict is ILLEGAL


def test_records_must_start_at_from_and_be_contiguous() -> None:
    base = [send(0, 10), acked(0, 10, 0), send(0, 11), acked(0, 11, 1)]
    starts_late = history(*base, poll(1, 0), polled(1, [[1, 11]], 2))
    gap = history(*base, send(0, 12), acked(0, 12, 2), poll(1, 0), polled(1, [[0, 10], [2, 12]], 3))
    assert check_log(starts_late).verdict is ILLEGAL
    assert check_log(gap).verdict is ILLEGAL
    assert check_log(history(*base, poll(1, 1), polled(1, [[1, 11]], 2))).verdict is OK


def test_poll_without_from_may_start_anywhere_but_stays_contiguous() -> None:
    base = [send(0, 10), acked(0, 10, 0), send(0, 11), acked(0, 11, 1), send(0, 12)]
    base += [acked(0, 12, 2), poll(1, None)]
    assert check_log(history(*base, polled(1, [[1, 11], [2, 12]], 3))).verdict is OK
    assert check_log(history(*base, polled(1, [[0, 10], [2, 12]], 3))).verdict is ILLEGAL


def test_empty_poll_from_beyond_the_end_says_nothing() -> None:
    h = history(send(0, 10), acked(0, 10, 0), poll(1, 5), polled(1, [], 1))
    assert check_log(h).verdict is OK


def test_unobserved_offset_is_filled_by_an_unseen_info_send() -> None:
    h = history(send(2, 9), (2, "info", "send", 9), send(0, 10), acked(0, 10, 1))
    result = check_log(h)
    assert result.verdict is OK
    assert result.log_length == 2
    assert result.unknown_sends_applied == 1


def test_unobserved_offset_with_no_send_to_fill_it_is_illegal() -> None:
    h = history(send(0, 10), acked(0, 10, 1))
    result = check_log(h)
    assert result.verdict is ILLEGAL
    assert "only 0 sends" in (result.explanation or "")


def test_filler_send_invoked_after_the_next_offset_was_acknowledged_is_illegal() -> None:
    h = history(send(0, 10), acked(0, 10, 1), send(2, 9), (2, "info", "send", 9))
    assert check_log(h).verdict is ILLEGAL


def test_fillers_go_to_gaps_in_invocation_order() -> None:
    # Offsets 0 and 2 are gaps. Only the early info send (invoked before 11 was
    # acknowledged at offset 1) can fill offset 0; a checker that tried them in another
    # order, or by value, would call this illegal.
    h = history(
        send(3, 50),
        (3, "info", "send", 50),
        send(0, 11),
        acked(0, 11, 1),
        send(4, 5),
        (4, "info", "send", 5),
        send(0, 12),
        acked(0, 12, 3),
    )
    result = check_log(h)
    assert result.verdict is OK
    assert result.unknown_sends_applied == 2


def test_high_watermark_beyond_every_send_is_illegal_without_allocating_it() -> None:
    h = history(send(0, 10), acked(0, 10, 0), poll(1), polled(1, [[0, 10]], 10**15))
    result = check_log(h)
    assert result.verdict is ILLEGAL
    assert indices(result) == [3]


def test_real_time_order_of_sends_fixes_their_offsets() -> None:
    h = history(send(0, 10), acked(0, 10, 1), send(0, 11), acked(0, 11, 0))
    assert check_log(h).verdict is ILLEGAL
    concurrent = history(send(0, 10), send(2, 11), acked(0, 10, 1), acked(2, 11, 0))
    assert check_log(concurrent).verdict is OK


def test_acknowledgement_of_another_value_is_illegal() -> None:
    h = history(send(0, 10), (0, "ok", "send", {"offset": 0, "value": 11}))
    assert check_log(h).verdict is ILLEGAL


def test_value_sent_twice_makes_the_key_unknown() -> None:
    h = history(send(0, 10), acked(0, 10, 0), send(0, 10), acked(0, 10, 1))
    result = check_log(h)
    assert result.verdict is UNKNOWN
    assert "sent twice" in (result.explanation or "")


def test_acknowledgement_without_offset_is_unknown_unless_a_poll_placed_it() -> None:
    h = history(send(0, 10), (0, "ok", "send", {"value": 10}))
    assert check_log(h).verdict is UNKNOWN
    placed = history(
        send(0, 10), (0, "ok", "send", {"value": 10}), poll(1), polled(1, [[0, 10]], 1)
    )
    assert check_log(placed).verdict is OK


def test_illegal_key_wins_over_unknown_key() -> None:
    h = history(
        send(0, 10, "a"),
        (0, "ok", "send", {"value": 10}, "a"),
        send(1, 20, "b"),
        acked(1, 20, 3, "b"),
    )
    result = check_log(h)
    assert result.verdict is ILLEGAL
    assert result.key == "b"


def test_malformed_histories_are_unknown_and_name_the_op() -> None:
    orphan = history(acked(0, 10, 0))
    twice = history(send(0, 10), send(0, 11))
    shape = history(poll(1), (1, "ok", "poll", [[0, 10]]))
    for h in (orphan, twice, shape):
        result = check_log(h)
        assert result.verdict is UNKNOWN
        assert "index" in (result.explanation or "")


def test_keys_are_independent() -> None:
    h = history(send(0, 10, "a"), acked(0, 10, 0, "a"), poll(1, 0, "b"), polled(1, [], 0, "b"))
    result = check_log(h)
    assert result.verdict is OK
    assert result.keys == 2
    bad = history(send(0, 10, "a"), acked(0, 10, 0, "a"), poll(1, 0, "a"), polled(1, [], 0, "a"))
    assert check_log(bad).verdict is ILLEGAL
    assert check_log(bad).key == "a"


def test_runs_are_independent() -> None:
    h = [
        Op(0, 0, 0, "invoke", "send", "k", 10, run="r1"),
        Op(1, 1, 0, "ok", "send", "k", {"offset": 0, "value": 10}, run="r1"),
        Op(2, 2, 0, "invoke", "send", "k", 10, run="r2"),
        Op(3, 3, 0, "ok", "send", "k", {"offset": 0, "value": 10}, run="r2"),
    ]
    assert check_log(h).verdict is OK


def test_nemesis_and_other_ops_are_ignored() -> None:
    h = history(
        send(0, 10),
        ("nemesis", "info", "start-partition", {"grudge": {}}),
        acked(0, 10, 0),
        (5, "invoke", "assign", ["k"]),
        (5, "ok", "assign", ["k"]),
    )
    assert check_log(h).verdict is OK


def test_result_serializes_verdict_and_witness_indices() -> None:
    h = history(send(0, 10), acked(0, 10, 0), poll(1), polled(1, [], 0))
    payload = check_log(h).to_json()
    assert payload["verdict"] == "illegal"
    assert payload["witness"] == [0, 1, 2, 3]


workloads = st.builds(
    LogWorkload,
    ops=st.integers(1, 600),
    keys=st.integers(1, 3),
    producers=st.integers(1, 5),
    consumers=st.integers(0, 4),
    p_fail=st.sampled_from([0.0, 0.1, 0.3]),
    p_info=st.sampled_from([0.0, 0.1, 0.4]),
    p_poll_info=st.sampled_from([0.0, 0.1]),
    max_records=st.integers(0, 6),
    p_seek=st.sampled_from([0.0, 0.2]),
    p_implicit=st.sampled_from([0.0, 0.3]),
    p_linger=st.sampled_from([0.0, 0.5, 0.9]),
    final_reads=st.booleans(),
    final_chunk=st.integers(1, 8),
)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), workload=workloads)
def test_generated_valid_histories_are_linearizable(seed: int, workload: LogWorkload) -> None:
    ops = generate(random.Random(seed), workload)
    result = check_log(ops)
    assert result.verdict is OK, result.explanation


def test_generator_is_deterministic_per_seed() -> None:
    workload = LogWorkload(ops=500, keys=2, p_implicit=0.2)
    assert generate(random.Random(7), workload) == generate(random.Random(7), workload)
    assert generate(random.Random(7), workload) != generate(random.Random(8), workload)


def test_generated_history_has_the_promised_variety() -> None:
    """The valid histories exercise what the checker must allow: info sends observed and
    not, failed sends, pending ops, stale and partial polls, unobserved offsets."""
    ops = generate(random.Random(3), LogWorkload(ops=20_000, keys=2, final_reads=False))
    types = {(op.f, op.type) for op in ops}
    assert {("send", "info"), ("send", "fail"), ("poll", "info"), ("poll", "fail")} <= types
    result = check_log(ops)
    assert result.verdict is OK
    assert result.unknown_sends_applied > 0
    last = {op.process: op.type for op in ops}
    assert "invoke" in last.values()  # some ops are still pending at the end
    stale = partial = 0
    acked_offset = -1  # the highest offset acknowledged so far
    starts = {}
    for op in ops:
        if op.f == "send" and op.type == "ok":
            acked_offset = max(acked_offset, op.value["offset"])
        elif op.f == "poll" and op.type == "invoke":
            starts[op.process] = op.value["from"]
        elif op.f == "poll" and op.type == "ok":
            hw, records = op.value["hw"], op.value["records"]
            stale += acked_offset >= hw  # a send beyond hw was acknowledged before it returned
            partial += 0 < len(records) < hw - starts[op.process]
    assert stale > 0
    assert partial > 0
