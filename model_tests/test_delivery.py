"""The delivery checker (`jepsen_py.checker.delivery`) on hand-written group histories: each
anomaly, each explanation of a duplicate, and the near misses that are not anomalies, with
the verdict each ``--delivery`` mode gives them and the lines that witness them."""

from __future__ import annotations

from typing import Any

import pytest

from jepsen_py.checker.delivery import DeliveryKey, check_delivery
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.taxonomy import AT_LEAST_ONCE, AT_MOST_ONCE
from jepsen_py.history.op import Op

K = "t-0"


class History:
    """A history written op by op; ``line`` of each op is its 1-based place."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def add(self, process: Any, type_: str, f: str, value: Any = None, key: Any = None) -> int:
        n = len(self.ops)
        self.ops.append(Op(n, n, process, type_, f, key, value, None, n + 1))
        return n + 1

    def send(self, offset: int, value: int, process: int = 0, key: str = K) -> int:
        self.add(process, "invoke", "send", value, key)
        return self.add(process, "ok", "send", {"offset": offset, "value": value}, key)

    def assign(self, process: int, keys: list[str] | None) -> int:
        self.add(process, "invoke", "assign", keys)
        return self.add(process, "ok", "assign", keys)

    def fetch(self, process: int, result: int | None, key: str = K) -> tuple[int, int]:
        invoked = self.add(process, "invoke", "fetch-offsets", [key])
        return invoked, self.add(process, "ok", "fetch-offsets", {key: result})

    def process(self, process: int, offsets: list[int], key: str = K) -> int:
        return self.add(process, "ok", "process", [[o, 100 + o] for o in offsets], key)

    def commit(self, process: int, offset: int, type_: str = "ok", key: str = K) -> int:
        self.add(process, "invoke", "commit", {key: offset})
        return self.add(process, type_, "commit", {key: offset})

    def kill(self, process: int) -> int:
        return self.add("nemesis", "info", "kill-consumer", {"node": "c1", "process": process})


def one_key(history: History, delivery: str = AT_LEAST_ONCE) -> DeliveryKey:
    keys = check_delivery(history.ops, delivery)
    assert len(keys) == 1
    return keys[0]


def lines(key: DeliveryKey, name: str) -> list[list[int]]:
    return [[p + 1 for p in w] for w in key.anomalies.witnesses.get(name, ())]


def counts(key: DeliveryKey) -> dict[str, int]:
    return {n: c for n, c in key.anomalies.counts.items() if c}


def produced(n: int) -> History:
    h = History()
    for o in range(n):
        h.send(o, 100 + o)
    return h


def test_commit_before_process_then_a_kill_loses_the_records_the_commit_passed() -> None:
    h = produced(3)
    h.assign(1, [K])
    h.fetch(1, None)
    committed = h.commit(1, 2)  # commit the position after the poll, before processing
    h.kill(1)
    key = one_key(h)
    assert counts(key) == {"lost": 2}
    assert lines(key, "lost") == [[2, committed], [4, committed]]
    assert key.verdict.verdict is Verdict.ILLEGAL
    assert key.verdict.violations == ("lost",)
    at_most = one_key(h, AT_MOST_ONCE)
    assert at_most.verdict.verdict is Verdict.OK
    assert at_most.verdict.informational == ("lost",)


def test_a_final_fetch_that_passed_an_unprocessed_record_shows_it_lost() -> None:
    h = produced(2)
    h.assign(1, [K])
    h.process(1, [0])
    h.commit(1, 1)
    _, final = h.fetch(9, 2)  # the commit of 2 was acknowledged only to a dead consumer
    key = one_key(h)
    assert counts(key) == {"lost": 1}
    assert lines(key, "lost") == [[4, final]]


def test_a_record_above_the_committed_offset_not_yet_processed_is_not_lost() -> None:
    h = produced(3)
    h.assign(1, [K])
    h.process(1, [0, 1])
    h.commit(1, 2)
    h.fetch(9, 2)
    key = one_key(h)
    assert counts(key) == {}
    assert key.verdict.verdict is Verdict.OK


def test_an_unacknowledged_commit_passes_nothing() -> None:
    h = produced(2)
    h.assign(1, [K])
    h.add(1, "invoke", "commit", {K: 2})
    h.add(1, "fail", "commit", {K: 2, "error": "ILLEGAL_GENERATION"})
    h.add(2, "invoke", "commit", {K: 2})
    h.add(2, "info", "commit", {K: 2, "error": "REQUEST_TIMED_OUT"})
    key = one_key(h)
    assert counts(key) == {}
    assert key.verdict.verdict is Verdict.OK


def test_a_crash_after_processing_before_the_commit_explains_the_duplicate() -> None:
    h = produced(2)
    h.assign(1, [K])
    h.fetch(1, None)
    first = h.process(1, [0, 1])
    kill = h.kill(1)
    h.assign(2, [K])
    h.fetch(2, None)
    second = h.process(2, [0, 1])
    h.commit(2, 2)
    key = one_key(h)
    assert counts(key) == {"duplicated-crash": 2}
    assert lines(key, "duplicated-crash") == [[first, kill, second]] * 2
    assert key.verdict.verdict is Verdict.OK
    assert key.verdict.informational == ("duplicated-crash",)
    at_most = one_key(h, AT_MOST_ONCE)
    assert at_most.verdict.verdict is Verdict.ILLEGAL
    assert at_most.verdict.violations == ("duplicated-crash",)


def test_a_kill_after_the_commit_was_acknowledged_does_not_explain_a_duplicate() -> None:
    h = produced(1)
    h.assign(1, [K])
    h.process(1, [0])
    h.commit(1, 1)
    h.kill(1)
    h.assign(2, [K])
    h.fetch(2, 1)
    h.process(2, [0])  # started past 0 (fetched 1), yet processed 0 again
    key = one_key(h)
    assert counts(key) == {"duplicated-unexplained": 1}
    assert key.verdict.verdict is Verdict.ILLEGAL


def test_a_duplicate_after_a_rebalance_before_the_commit_was_acknowledged_is_explained() -> None:
    h = produced(1)
    h.assign(1, [K])
    first = h.process(1, [0])
    h.add(1, "invoke", "commit", {K: 1})
    moved = h.assign(2, [K])  # the partition moves while the commit is in flight
    fetched, _ = h.fetch(2, None)
    h.add(1, "ok", "commit", {K: 1})  # acknowledged after the new owner asked
    h.assign(1, None)
    second = h.process(2, [0])
    key = one_key(h)
    assert counts(key) == {"duplicated-rebalance": 1}
    assert lines(key, "duplicated-rebalance") == [[first, moved, fetched, second]]
    assert key.verdict.verdict is Verdict.OK


def test_a_fetch_concurrent_with_a_commit_is_not_a_regression() -> None:
    h = produced(2)
    h.assign(1, [K])
    h.process(1, [0, 1])
    h.add(1, "invoke", "commit", {K: 2})
    h.add(2, "invoke", "fetch-offsets", [K])
    h.add(1, "ok", "commit", {K: 2})
    h.add(2, "ok", "fetch-offsets", {K: None})
    assert counts(one_key(h)) == {}


def test_a_duplicate_after_a_rebalance_that_saw_the_acknowledged_commit_is_unexplained() -> None:
    h = produced(1)
    h.assign(1, [K])
    h.process(1, [0])
    covered = h.commit(1, 1)
    h.assign(1, None)
    h.assign(2, [K])
    h.fetch(2, 1)
    h.process(2, [0])
    key = one_key(h)
    assert counts(key) == {"duplicated-unexplained": 1}
    assert covered in lines(key, "duplicated-unexplained")[0]


def test_processing_twice_without_a_rebalance_or_a_crash_is_unexplained() -> None:
    h = produced(1)
    h.assign(1, [K])
    first = h.process(1, [0])
    h.assign(1, [K, "t-1"])  # a cooperative rebalance that keeps the partition
    second = h.process(1, [0])
    key = one_key(h)
    assert lines(key, "duplicated-unexplained") == [[first, second]]
    for delivery in (AT_LEAST_ONCE, AT_MOST_ONCE):
        assert one_key(h, delivery).verdict.verdict is Verdict.ILLEGAL


@pytest.mark.parametrize("returned", [0, None])
def test_a_fetch_below_an_acknowledged_commit_is_a_commit_regression(returned: Any) -> None:
    h = produced(2)
    h.assign(1, [K])
    h.process(1, [0, 1])
    committed = h.commit(1, 2)
    invoked, ok = h.fetch(2, returned)
    for delivery in (AT_LEAST_ONCE, AT_MOST_ONCE):
        key = one_key(h, delivery)
        assert counts(key) == {"commit-regression": 1}
        assert lines(key, "commit-regression") == [[committed, invoked, ok]]
        assert key.verdict.verdict is Verdict.ILLEGAL


def test_a_seek_makes_commit_regression_undecidable_on_its_key() -> None:
    h = produced(2)
    h.assign(1, [K])
    h.process(1, [0, 1])
    h.commit(1, 2)
    h.add(1, "invoke", "seek", {K: 0}, K)
    h.add(1, "ok", "seek", {K: 0}, K)
    h.fetch(2, 0)
    key = one_key(h)
    assert counts(key) == {}
    assert key.verdict.verdict is Verdict.UNKNOWN
    assert "commit-regression cannot be judged" in (key.verdict.explanation or "")


def seek(h: History, process: int, offset: int) -> int:
    invoked = h.add(process, "invoke", "seek", {K: offset}, K)
    h.add(process, "ok", "seek", {K: offset}, K)
    return invoked


def test_a_seek_back_to_the_committed_offset_explains_the_records_processed_again() -> None:
    """A processing failure after records 1 and 2 had their side effect: the application
    seeks back to its committed offset (1) and processes them again (at least once)."""
    h = produced(4)
    h.assign(1, [K])
    h.process(1, [0])
    h.commit(1, 1)
    first = h.process(1, [1, 2])  # then the handler failed on record 3
    back = seek(h, 1, 1)
    second = h.process(1, [1, 2, 3])
    h.commit(1, 4)
    h.fetch(9, 4)
    key = one_key(h)
    assert counts(key) == {"duplicated-seek": 2}
    assert lines(key, "duplicated-seek") == [[first, back, second]] * 2
    assert key.verdict.verdict is Verdict.OK
    assert key.verdict.informational == ("duplicated-seek",)
    assert one_key(h, AT_MOST_ONCE).verdict.violations == ("duplicated-seek",)


def test_a_seek_to_past_the_record_or_by_another_process_explains_nothing() -> None:
    h = produced(3)
    h.assign(1, [K])
    first = h.process(1, [0, 1])
    seek(h, 1, 2)  # a seek forward of the records processed again
    seek(h, 2, 0)  # another consumer's seek
    second = h.process(1, [0, 1])
    key = one_key(h)
    assert counts(key) == {"duplicated-unexplained": 2}
    assert lines(key, "duplicated-unexplained") == [[first, second]] * 2


def test_a_seek_forward_past_unprocessed_records_loses_them() -> None:
    """The consumer skips records 1 and 2 (a seek forward) and commits past them: the
    group's committed offset passed records nobody processed."""
    h = produced(4)
    h.assign(1, [K])
    h.process(1, [0])
    h.commit(1, 1)
    seek(h, 1, 3)
    h.process(1, [3])
    committed = h.commit(1, 4)
    key = one_key(h)
    assert counts(key) == {"lost": 2}
    assert lines(key, "lost") == [[4, committed], [6, committed]]
    assert key.verdict.verdict is Verdict.ILLEGAL


def test_a_seek_above_what_a_fetch_returned_leaves_its_regression_judged() -> None:
    """Only a seek to the fetched offset or below can explain a committed offset going
    back there; a rewind to offset 1 cannot explain a fetch of 0."""
    h = produced(2)
    h.assign(1, [K])
    h.process(1, [0, 1])
    committed = h.commit(1, 2)
    seek(h, 1, 1)
    invoked, ok = h.fetch(2, 0)
    key = one_key(h)
    assert counts(key) == {"commit-regression": 1}
    assert lines(key, "commit-regression") == [[committed, invoked, ok]]
    assert not key.anomalies.problems


@pytest.mark.parametrize(
    ("f", "type_", "value", "reason"),
    [
        ("commit", "ok", {K: "12"}, "not a map of key -> offset"),
        ("commit", "ok", [K, 12], "not a map of key -> offset"),
        ("process", "ok", None, "not the records processed"),
        ("process", "ok", [[0]], "not the records processed"),
        ("fetch-offsets", "invoke", K, "not a list of keys"),
    ],
)
def test_a_malformed_group_op_leaves_the_run_unknown_and_names_its_line(
    f: str, type_: str, value: Any, reason: str
) -> None:
    h = produced(1)
    h.assign(1, [K])
    bad = h.add(1, type_, f, value, K if f == "process" else None)
    key = one_key(h)
    assert key.verdict.verdict is Verdict.UNKNOWN
    assert f"line {bad}: " in (key.verdict.explanation or "")
    assert reason in (key.verdict.explanation or "")


def test_a_violation_still_decides_beside_a_malformed_op() -> None:
    h = produced(1)
    h.assign(1, [K])
    h.commit(1, 1)
    h.add("nemesis", "info", "kill-consumer", {"node": "c1"})
    key = one_key(h)
    assert key.verdict.verdict is Verdict.ILLEGAL
    assert [p.reason for p in key.anomalies.problems] == [
        "line 7: kill-consumer value {'node': 'c1'} does not name the consumer that died: "
        'expected {"node": ..., "process": P} with P its history process id'
    ]
