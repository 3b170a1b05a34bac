"""``spec.offsets``: the coordinator's OffsetCommit checks in Kafka's order, the consumer's
loop, and parameters that are refused with a message that says what is wrong."""

from __future__ import annotations

import attrs
import pytest

from spec.framework import SpecError
from spec.group.lifecycle import COMPLETING, MEMBER_STABLE, PREPARING, STABLE
from spec.offsets import Offsets, Params
from spec.offsets.commits import (
    COORDINATOR_LOAD_IN_PROGRESS,
    Commit,
    Consumer,
    State,
)


def _stable(spec: Offsets) -> State:
    """Consumer 1 (member 1a) owns the partition in generation 1 of a Stable group."""
    (s,) = spec.init()
    s = spec.join_group(s, 1)
    s = spec.complete_join(s)
    s = spec.sync_group(s, (1, 1))
    assert s is not None and s.group.state == STABLE
    return s


def test_commit_checks_follow_the_coordinators_order() -> None:
    spec = Offsets()
    s = _stable(spec)
    ok = Commit(1, (1, 1), 1, 0, 1)
    assert spec.commit_outcome(s, ok) == "NONE"
    assert spec.commit_outcome(s, attrs.evolve(ok, coordinator=1)) == "NOT_COORDINATOR"
    assert spec.commit_outcome(s, attrs.evolve(ok, member_id=(1, 2))) == "UNKNOWN_MEMBER_ID"
    assert spec.commit_outcome(s, attrs.evolve(ok, generation=0)) == "ILLEGAL_GENERATION"
    completing = attrs.evolve(s, group=attrs.evolve(s.group, state=COMPLETING))
    assert spec.commit_outcome(completing, ok) == "REBALANCE_IN_PROGRESS"
    preparing = attrs.evolve(s, group=attrs.evolve(s.group, state=PREPARING))
    assert spec.commit_outcome(preparing, ok) == "NONE", "onPartitionsRevoked commits"
    loading = attrs.evolve(s, group=attrs.evolve(s.group, loading=True))
    assert spec.commit_outcome(loading, ok) == COORDINATOR_LOAD_IN_PROGRESS
    broken = Offsets(Params(bugs=frozenset({"stale_generation_commit"})))
    assert broken.commit_outcome(s, attrs.evolve(ok, generation=0)) == "NONE"


def test_committed_offset_is_last_processed_plus_one() -> None:
    spec = Offsets()
    s = spec.fetch_offset(_stable(spec), 1)
    assert s is not None and s.consumer(1).position == 0
    s = spec.poll(s, 1)
    assert s is not None and spec.send_commit(s, 1) is None, "after-process: process first"
    s = spec.process(s, 1)
    s = spec.send_commit(s, 1)
    assert s is not None
    (r,) = s.inflight
    assert r.offset == 1
    s = spec.handle_commit(s, r)
    assert s.stored.committed == 1 and s.consumer(1).acked == 1 and s.processed == {0}


def test_before_process_commits_first_and_a_crash_loses_the_record() -> None:
    spec = Offsets(Params(commit="before-process"))
    s = spec.poll(spec.fetch_offset(_stable(spec), 1), 1)
    assert spec.process(s, 1) is None, "before-process: the commit comes first"
    s = spec.send_commit(s, 1)
    (r,) = s.inflight
    s = spec.handle_commit(s, r)
    assert spec.at_least_once(s), "held by a consumer about to process it"
    crashed = spec.crash(s, 1)
    assert crashed is not None and crashed.consumer(1) == Consumer()
    assert not spec.at_least_once(crashed)


def test_a_new_coordinator_answers_offset_fetch_only_once_loaded() -> None:
    spec = Offsets()
    s = spec.send_commit(spec.process(spec.poll(spec.fetch_offset(_stable(spec), 1), 1), 1), 1)
    (r,) = s.inflight
    s = spec.handle_commit(s, r)
    assert s.stored.committed == 1
    # The owner must fetch its position again (as after a rebalance that kept it the owner).
    s = attrs.evolve(s, consumers=(Consumer(MEMBER_STABLE, (1, 1), 1, owns=True), Consumer()))
    moved = spec.coordinator_moves(s)
    assert moved is not None and moved.group.loading and moved.stored.committed == 1
    assert spec.fetch_offset(moved, 1) is None, "COORDINATOR_LOAD_IN_PROGRESS"
    early = Offsets(Params(bugs=frozenset({"fetch_before_load"}))).fetch_offset(moved, 1)
    assert early is not None and early.consumer(1).position == 0, "no committed offset seen"
    fetched = spec.fetch_offset(spec.load_offsets(moved), 1)
    assert fetched is not None and fetched.consumer(1).position == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"commit": "sometimes"}, "commit 'sometimes' is not one of"),
        ({"reset": "none"}, "reset 'none' is not one of"),
        ({"records": 0}, "records must be 1..4"),
        ({"max_crashes": -1}, "max_crashes must be >= 0"),
        ({"bugs": frozenset({"nope"})}, "unknown bug flag"),
    ],
)
def test_bad_parameters_say_what_is_wrong(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        Params(**kwargs)  # type: ignore[arg-type]
