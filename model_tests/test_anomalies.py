"""The Jepsen Kafka anomaly taxonomy (``jepsen_py.checker.anomalies``): each anomaly on a
hand-written history with its exact witness, the position rules (seeks, reassignment,
offsets nobody saw), and injected into generated histories, which have none of their own."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jepsen_py.checker.anomalies import (
    ANOMALIES,
    aborted_read,
    duplicate,
    find_anomalies,
    inconsistent_offsets,
    lost_write,
    nonmonotonic_poll,
    nonmonotonic_send,
    observe,
    poll_skip,
    summarize,
    unseen,
)
from jepsen_py.checker.histgen import INJECTORS, LogWorkload, generate
from jepsen_py.history.op import Op


def history(*events: tuple[Any, ...]) -> list[Op]:
    """Ops from (process, type, f, value[, key]) rows, indexed in order."""
    return [
        Op(i, i * 1000, e[0], e[1], e[2], e[4] if len(e) > 4 else "k", e[3])
        for i, e in enumerate(events)
    ]


def sent(p: Any, v: Any, offset: int, key: str = "k") -> list[tuple[Any, ...]]:
    return [(p, "invoke", "send", v, key), (p, "ok", "send", {"offset": offset, "value": v}, key)]


def polled(
    p: Any, start: Any, records: list[list[Any]], hw: int, key: str = "k"
) -> list[tuple[Any, ...]]:
    return [
        (p, "invoke", "poll", {"from": start}, key),
        (p, "ok", "poll", {"records": records, "hw": hw}, key),
    ]


def indices(witnesses: list[list[Op]]) -> list[list[int]]:
    return [[op.index for op in w] for w in witnesses]


LOG = [[0, 10], [1, 11], [2, 12], [3, 13]]
WRITES = sent(0, 10, 0) + sent(0, 11, 1) + sent(0, 12, 2) + sent(0, 13, 3)  # indices 0..7


def test_inconsistent_offsets_names_the_first_witness_of_each_value() -> None:
    h = history(*sent(0, 10, 0), *sent(1, 11, 0), *polled(2, 0, [[0, 10]], 1))
    assert indices(inconsistent_offsets(h)) == [[1, 3]]
    assert inconsistent_offsets(history(*WRITES, *polled(2, 0, LOG, 4))) == []


def test_duplicate_names_the_first_witness_at_each_offset() -> None:
    h = history(*sent(0, 10, 0), *polled(2, 0, [[0, 10], [1, 10]], 2))
    assert indices(duplicate(h)) == [[1, 3]]
    assert duplicate(history(*WRITES, *polled(2, 0, LOG, 4))) == []


def test_lost_write_is_an_acked_send_below_the_highest_offset_read_never_read() -> None:
    h = history(*WRITES, *polled(2, 0, [[0, 10]], 4), *polled(2, 2, [[2, 12], [3, 13]], 4))
    assert indices(lost_write(h)) == [[2, 3, 11]]  # 11 at offset 1; the poll that read 3
    assert unseen(h) == []


def test_unseen_is_an_acked_send_never_read_at_or_above_the_highest_offset_read() -> None:
    h = history(*WRITES, *polled(2, 0, [[0, 10], [1, 11]], 4))
    assert indices(unseen(h)) == [[4, 5], [6, 7]]
    assert lost_write(h) == []
    # with no polls at all, every acknowledged send is unseen, none lost
    assert len(unseen(history(*WRITES))) == 4
    assert lost_write(history(*WRITES)) == []


def test_unacknowledged_sends_are_neither_lost_nor_unseen() -> None:
    h = history(
        (0, "invoke", "send", 10),
        (0, "info", "send", 10),
        (1, "invoke", "send", 11),
        (1, "fail", "send", 11),
        (2, "invoke", "send", 12),
        *polled(3, 0, [], 0),
    )
    assert lost_write(h) == [] and unseen(h) == []


def test_aborted_read_is_a_read_of_a_failed_send() -> None:
    h = history((0, "invoke", "send", 10), (0, "fail", "send", 10), *polled(1, 0, [[0, 10]], 1))
    assert indices(aborted_read(h)) == [[0, 1, 3]]
    info = history((0, "invoke", "send", 10), (0, "info", "send", 10), *polled(1, 0, [[0, 10]], 1))
    assert aborted_read(info) == []


def test_nonmonotonic_send_is_a_producer_going_back() -> None:
    h = history(*sent(0, 10, 1), *sent(0, 11, 0))
    assert indices(nonmonotonic_send(h)) == [[1, 3]]
    assert nonmonotonic_send(history(*WRITES)) == []
    # different producers, or different keys, do not compare
    assert nonmonotonic_send(history(*sent(0, 10, 1), *sent(1, 11, 0))) == []
    assert nonmonotonic_send(history(*sent(0, 10, 1, "a"), *sent(0, 11, 0, "b"))) == []


def test_poll_skip_is_a_consumer_jumping_over_existing_offsets() -> None:
    h = history(*WRITES, *polled(2, 0, [[0, 10]], 4), *polled(2, 2, [[2, 12]], 4))
    assert indices(poll_skip(h)) == [[9, 10, 11]]
    assert nonmonotonic_poll(h) == []


def test_poll_skip_within_one_poll_not_starting_at_its_from() -> None:
    h = history(*WRITES, *polled(2, 0, [[1, 11]], 4))
    assert indices(poll_skip(h)) == [[8, 9]]


def test_skipping_offsets_nobody_saw_is_not_a_skip() -> None:
    # Offset 1 holds no known record (a transaction marker, a compacted record): jumping
    # from 1 to 2 skips nothing anyone can name.
    h = history(
        *sent(0, 10, 0), *sent(0, 12, 2), *polled(2, 0, [[0, 10]], 3), *polled(2, 2, [[2, 12]], 3)
    )
    assert poll_skip(h) == []


def test_nonmonotonic_poll_is_a_subscribed_consumer_going_back() -> None:
    h = history(*WRITES, *polled(2, 0, [[0, 10], [1, 11]], 4), *polled(2, None, [[1, 11]], 4))
    assert indices(nonmonotonic_poll(h)) == [[9, 10, 11]]
    assert poll_skip(h) == []


def test_nonmonotonic_poll_within_one_poll() -> None:
    h = history(*WRITES, *polled(2, None, [[1, 11], [0, 10]], 4))
    assert indices(nonmonotonic_poll(h)) == [[8, 9]]


def test_explicit_from_below_the_position_is_a_deliberate_seek() -> None:
    h = history(*WRITES, *polled(2, 0, [[0, 10], [1, 11]], 4), *polled(2, 0, [[0, 10]], 4))
    assert nonmonotonic_poll(h) == [] and poll_skip(h) == []
    # after the seek the position is the seek's: skipping from there is a skip
    h = history(
        *WRITES,
        *polled(2, 0, [[0, 10], [1, 11], [2, 12]], 4),
        *polled(2, 0, [[0, 10]], 4),
        *polled(2, 3, [[3, 13]], 4),
    )
    assert indices(poll_skip(h)) == [[11, 12, 13]]
    # a seek that itself returns records past its from is judged on its own
    h = history(*WRITES, *polled(2, 0, [[0, 10], [1, 11]], 4), *polled(2, 0, [[1, 11]], 4))
    assert indices(poll_skip(h)) == [[10, 11]]


def test_reassignment_and_new_processes_forget_positions() -> None:
    h = history(
        *WRITES,
        *polled(2, 0, [[0, 10]], 4),
        (2, "invoke", "assign", ["k"]),
        (2, "ok", "assign", ["k"]),
        *polled(2, 3, [[3, 13]], 4),
        *polled(3, 2, [[2, 12]], 4),
    )
    assert poll_skip(h) == [] and nonmonotonic_poll(h) == []


def test_positions_are_per_key() -> None:
    h = history(
        *WRITES,
        *sent(0, 20, 0, "j"),
        *polled(2, 0, [[0, 10], [1, 11]], 4),
        *polled(2, 0, [[0, 20]], 1, "j"),
        *polled(2, 2, [[2, 12]], 4),
    )
    assert poll_skip(h) == [] and nonmonotonic_poll(h) == []


def test_find_anomalies_reports_every_name_and_summarize_counts_them() -> None:
    h = history(*sent(0, 10, 1), *sent(0, 11, 0), *polled(1, 0, [[0, 11], [1, 12]], 2))
    found = find_anomalies(h)
    assert list(found) == list(ANOMALIES)
    assert {name for name, ws in found.items() if ws} == {
        "inconsistent-offsets",
        "nonmonotonic-send",
        "unseen",  # 10 was acknowledged at offset 1, the highest read: not below it
    }
    summary = summarize(found, examples=1)
    assert summary["counts"]["nonmonotonic-send"] == 1
    assert summary["examples"]["nonmonotonic-send"] == [[1, 3]]
    assert summary["total"] == 3
    assert summary["violations"] == 2  # unseen alone is not a violation
    assert "duplicate" not in summary["examples"]


def test_observations_are_shared_between_finders() -> None:
    h = history(*WRITES, *polled(2, 0, [[0, 10]], 4), *polled(2, 2, [[2, 12]], 4))
    obs = observe(h)
    assert poll_skip(obs) == poll_skip(h)
    assert find_anomalies(obs)["lost-write"] == lost_write(h)


def test_nemesis_and_malformed_lines_are_passed_over() -> None:
    h = history(
        ("nemesis", "info", "kill", None),
        (0, "ok", "send", {"offset": 0, "value": 1}),  # completes nothing
        *sent(1, 10, 0),
        *polled(2, 0, [[0, 10], "junk"], 1),
    )
    assert summarize(find_anomalies(h))["total"] == 0


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
def test_clean_generated_histories_have_no_anomalies(seed: int, workload: LogWorkload) -> None:
    found = find_anomalies(generate(random.Random(seed), workload))
    assert summarize(found)["total"] == 0, summarize(found)


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    name=st.sampled_from(sorted(INJECTORS)),
    workload=clean_workloads,
)
def test_each_anomaly_finder_finds_its_injected_anomaly(
    seed: int, name: str, workload: LogWorkload
) -> None:
    clean = generate(random.Random(seed), workload)
    mutated = INJECTORS[name](clean, random.Random(seed))
    if mutated is None:
        return  # this history offers no place for the anomaly
    assert find_anomalies(clean)[name] == []
    witnesses = find_anomalies(mutated)[name]
    assert witnesses
    if name == "lost-write":  # the change is a read that is no longer there
        read = {
            v for op in clean if op.f == "poll" and op.type == "ok" for _, v in op.value["records"]
        }
        assert any(w[0].value in read for w in witnesses)
        return
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
