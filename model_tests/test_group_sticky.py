"""``impl.group.sticky``: the sticky assignors keep partitions where they were as balance
allows; the cooperative one withholds a partition another member still owns (KIP-429),
and a cooperative member revokes only what moves."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from impl.group.member import Member, MemberConfig, Request
from impl.group.messages import NONE, SyncGroupResponse
from impl.group.run import GroupRun, GroupRunConfig
from impl.group.sticky import cooperative_assign, sticky_assign

T = {"t": 6}


def tps(*ps: int) -> list[tuple[str, int]]:
    return [("t", p) for p in ps]


def test_a_new_member_takes_only_what_balance_requires() -> None:
    owned = {"a": tps(0, 1, 2), "b": tps(3, 4, 5)}
    subs = {"a": ["t"], "b": ["t"], "c": ["t"]}
    result = sticky_assign(T, subs, owned)
    assert result == {"a": tps(0, 1), "b": tps(3, 4), "c": tps(2, 5)}
    # cooperatively, c gets nothing yet: a and b still own 2 and 5 and must revoke first
    assert cooperative_assign(T, subs, owned) == {"a": tps(0, 1), "b": tps(3, 4), "c": []}
    # and once they have, the next rebalance hands them over
    after = {"a": tps(0, 1), "b": tps(3, 4), "c": []}
    assert cooperative_assign(T, subs, after) == result


@settings(max_examples=200, deadline=None)
@given(
    members=st.integers(1, 4),
    partitions=st.integers(0, 9),
    owned=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 9)), max_size=12),
)
def test_sticky_is_a_balanced_partition_of_the_topic(
    members: int, partitions: int, owned: list[tuple[int, int]]
) -> None:
    subs = {f"m{i}": ["t"] for i in range(members)}
    claims: dict[str, list[tuple[str, int]]] = {}
    for m, p in owned:
        claims.setdefault(f"m{m}", []).append(("t", p))
    result = sticky_assign({"t": partitions}, subs, claims)
    assigned = sorted(tp for ps in result.values() for tp in ps)
    assert assigned == tps(*range(partitions))  # every partition exactly once
    sizes = [len(ps) for ps in result.values()]
    assert max(sizes) - min(sizes) <= 1
    coop = cooperative_assign({"t": partitions}, subs, claims)
    assert all(set(coop[m]) <= set(result[m]) for m in subs)


def test_a_cooperative_member_revokes_only_what_moves_and_rejoins() -> None:
    m = Member(
        "c1",
        MemberConfig(assignor="cooperative-sticky"),
        bootstrap=lambda: "b1",
        metadata=lambda: T,
        process=1,
    )
    m.subscribe(("t",), 0)
    m.coordinator, m.member_id, m.generation, m.state = "b1", "c1-b1-1", 1, "awaiting-sync"
    m.in_flight["sync"] = Request("b1", 0, correlation=1)
    m.step("b1", SyncGroupResponse("g", NONE, 1, (("t", 0), ("t", 1), ("t", 2)), 1), 1)
    assert m.owned == (("t", 0), ("t", 1), ("t", 2)) and m.state == "stable"
    m.state, m.generation = "awaiting-sync", 2
    m.in_flight["sync"] = Request("b1", 2, correlation=2)
    m.step("b1", SyncGroupResponse("g", NONE, 2, (("t", 0), ("t", 1)), 2), 3)
    assert m.listener[-2:] == [("revoked", (("t", 2),)), ("assigned", ())]
    assert m.owned == (("t", 0), ("t", 1)) and m.state == "unjoined"  # rejoins to hand over
    ((_, join),) = m.poll(4).sends
    assert join.owned == (("t", 0), ("t", 1)) and join.member_id == "c1-b1-1"


@pytest.mark.parametrize("assignor", ["roundrobin", "sticky", "cooperative-sticky"])
def test_the_group_run_holds_with_every_assignor(assignor: str) -> None:
    for seed in (1, 2, 3):
        outcome = GroupRun(GroupRunConfig(assignor=assignor), seed).run()
        assert outcome.ok, (seed, outcome.violations)
    if assignor == "cooperative-sticky":
        assert outcome.withheld > 0  # partitions did move in two rebalances


def test_a_consumer_takes_no_answer_meant_for_its_earlier_member_id() -> None:
    """Seed 46, cooperative-sticky: c1's JoinGroups timed out twice, and the coordinator
    made a member of each; the answers of the closed connections (the JoinGroup of one id,
    the SyncGroup of the other) arrived together. Taken, they made c1 commit one id's
    partitions as the other (a zombie's commit accepted). Dropped, as Kafka's client drops a
    closed connection's answers, the run holds."""
    outcome = GroupRun(GroupRunConfig(assignor="cooperative-sticky"), 46).run()
    assert outcome.ok, outcome.violations


@pytest.mark.slow
@pytest.mark.parametrize("assignor", ["roundrobin", "sticky", "cooperative-sticky"])
def test_fifty_seeds_with_every_assignor(assignor: str) -> None:
    bad = [s for s in range(1, 51) if not GroupRun(GroupRunConfig(assignor=assignor), s).run().ok]
    assert bad == []
