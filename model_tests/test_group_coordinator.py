"""``impl.group.coordinator`` and ``impl.group.member``: the classic group protocol step by
step (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit), its fences and timers."""

from __future__ import annotations

import pytest

from impl.group.coordinator import Coordinator, CoordinatorConfig
from impl.group.member import Member, MemberConfig
from impl.group.messages import (
    ILLEGAL_GENERATION,
    NONE,
    NOT_COORDINATOR,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    CommitAccepted,
    FindCoordinatorResponse,
    GenerationCompleted,
    Heartbeat,
    HeartbeatResponse,
    JoinGroup,
    JoinGroupResponse,
    LeaveGroup,
    OffsetCommit,
    OffsetCommitResponse,
    SyncGroup,
    SyncGroupResponse,
)
from impl.sim.clock import ms
from spec.framework import SpecError
from spec.group.lifecycle import AWAITING_SYNC, COMPLETING, EMPTY, JOINING, PREPARING, STABLE

SESSION = ms(6_000)
REBALANCE = ms(20_000)


def join(c: Coordinator, client: str, member_id: str = "", now: int = 0) -> list:
    msg = JoinGroup("g", member_id, client, ("t",), SESSION, REBALANCE)
    return c.step(client, msg, now).sends


def hosted(check: bool = True) -> Coordinator:
    c = Coordinator("b1", CoordinatorConfig(check_generation=check))
    c.load("g", None, 0)
    return c


def form_group(c: Coordinator) -> tuple[str, str]:
    """c1 and c2 join; c1 (leader) syncs range's assignment: generation 1, Stable."""
    ((dst, r1),) = join(c, "c1")
    assert dst == "c1" and isinstance(r1, JoinGroupResponse) and r1.generation == 1
    m1 = r1.member_id
    sends = join(c, "c2", now=10)  # c2 joins: rebalance; c1 must rejoin
    assert sends == [("c1", SyncGroupResponse("g", REBALANCE_IN_PROGRESS))] or sends == []
    assert c.groups["g"].state == PREPARING
    sends = join(c, "c1", m1, now=20)
    responses = {dst: r for dst, r in sends}
    assert set(responses) == {"c1", "c2"}
    assert c.groups["g"].state == COMPLETING and c.groups["g"].generation == 2
    m2 = responses["c2"].member_id
    leader = responses["c1"].leader
    assert leader == m1 and responses["c1"].members and not responses["c2"].members
    assert c.step("c2", SyncGroup("g", m2, 2), 30).sends == []  # parked until the leader's
    assignment = ((m1, (("t", 0),)), (m2, (("t", 1),)))
    effects = c.step("c1", SyncGroup("g", m1, 2, assignment), 40)
    assert c.groups["g"].state == STABLE
    assert sorted(effects.sends) == [
        ("c1", SyncGroupResponse("g", NONE, 2, (("t", 0),))),
        ("c2", SyncGroupResponse("g", NONE, 2, (("t", 1),))),
    ]
    assert effects.notes == [GenerationCompleted("b1", "g", 2, assignment, 40)]
    return m1, m2


def test_join_sync_and_a_rebalance_on_a_new_member() -> None:
    c = hosted()
    form_group(c)
    assert c.stored["g"].generation == 2


def test_fences_in_kafkas_order() -> None:
    c = hosted()
    m1, _ = form_group(c)
    hb = c.step("c1", Heartbeat("g", m1, 2), 50).sends
    assert hb == [("c1", HeartbeatResponse("g", NONE, 2))]
    stale = c.step("c1", Heartbeat("g", m1, 1), 50).sends
    assert stale == [("c1", HeartbeatResponse("g", ILLEGAL_GENERATION, 2))]
    unknown = c.step("c9", Heartbeat("g", "nobody", 2), 50).sends
    assert unknown == [("c9", HeartbeatResponse("g", UNKNOWN_MEMBER_ID, 2))]
    commit = OffsetCommit("g", m1, 1, ((("t", 0), 5),))
    assert c.step("c1", commit, 60).sends == [
        ("c1", OffsetCommitResponse("g", ILLEGAL_GENERATION, 2, commit.offsets))
    ]
    join(c, "c3", now=70)  # a rebalance starts: heartbeats say so, the member rejoins
    assert c.step("c1", Heartbeat("g", m1, 2), 80).sends == [
        ("c1", HeartbeatResponse("g", REBALANCE_IN_PROGRESS, 2))
    ]
    # ... but first commits what it processed (onPartitionsRevoked): accepted from the
    # current generation during PreparingRebalance, as Kafka's handleCommitOffsets does.
    commit = OffsetCommit("g", m1, 2, ((("t", 0), 5),))
    assert c.step("c1", commit, 80).sends == [
        ("c1", OffsetCommitResponse("g", NONE, 2, commit.offsets))
    ]
    stale = OffsetCommit("g", m1, 1, ((("t", 0), 5),))
    assert c.step("c1", stale, 80).sends == [
        ("c1", OffsetCommitResponse("g", ILLEGAL_GENERATION, 2, stale.offsets))
    ]
    assert c.step("c1", SyncGroup("g", m1, 2), 80).sends == [
        ("c1", SyncGroupResponse("g", REBALANCE_IN_PROGRESS))
    ]


def test_no_generation_check_accepts_a_stale_commit() -> None:
    c = hosted(check=False)
    m1, _ = form_group(c)
    effects = c.step("c1", OffsetCommit("g", m1, 1, ((("t", 1), 5),)), 60)
    assert effects.sends == [("c1", OffsetCommitResponse("g", NONE, 2, ((("t", 1), 5),)))]
    (note,) = effects.notes
    assert isinstance(note, CommitAccepted) and note.generation == 1 and note.owned == (("t", 0),)


def test_session_expiry_and_rebalance_timeout_remove_members() -> None:
    c = hosted()
    m1, m2 = form_group(c)
    c.step("c1", Heartbeat("g", m1, 2), SESSION - 1)
    effects = c.tick(40 + SESSION)  # c2 last heard at its sync (30)... and the leader's (40)
    assert [n.member_id for n in effects.notes] == [m2]
    assert c.groups["g"].state == PREPARING
    # c1 does not rejoin: the rebalance timeout removes it too, and the group is Empty.
    effects = c.tick(40 + SESSION + REBALANCE)
    assert c.groups["g"].state == EMPTY and not c.groups["g"].members


def test_leave_and_unload() -> None:
    c = hosted()
    m1, m2 = form_group(c)
    assert c.step("c2", LeaveGroup("g", m2), 50).sends[-1][1].error == NONE
    assert c.groups["g"].state == PREPARING
    join(c, "c1", m1, 60)
    assert c.groups["g"].state == COMPLETING and c.groups["g"].generation == 3
    c.unload("g")
    assert c.step("c1", Heartbeat("g", m1, 3), 70).sends == [
        ("c1", HeartbeatResponse("g", NOT_COORDINATOR, -1))
    ]
    c2 = Coordinator("b2")
    c2.load("g", c.stored["g"], 80)  # the new leader loads generation 2 (3 was not stored)
    assert c2.groups["g"].generation == 2 and c2.groups["g"].state == STABLE
    assert c2.step("c1", SyncGroup("g", m1, 3), 90).sends == [
        ("c1", SyncGroupResponse("g", ILLEGAL_GENERATION))
    ]


def test_a_rejoin_with_an_unknown_member_id_is_refused() -> None:
    c = hosted()
    ((_, r),) = join(c, "c1", "stale-id")
    assert r.error == UNKNOWN_MEMBER_ID


def member(name: str = "c1", process: int = 1) -> Member:
    return Member(
        name,
        MemberConfig(session_timeout_ns=SESSION, max_poll_interval_ns=REBALANCE),
        bootstrap=lambda: "b1",
        metadata=lambda: {"t": 2},
        process=process,
    )


def test_member_joins_syncs_and_calls_its_listener() -> None:
    c = hosted()
    m = member()
    m.subscribe(("t",), 0)
    (find,) = m.poll(0).sends
    assert find[0] == "b1"
    m.step("b1", FindCoordinatorResponse("g", NONE, "b1", find[1].correlation), 1)
    ((coordinator, join_req),) = m.poll(2).sends
    assert coordinator == "b1"
    ((_, join_resp),) = c.step("c1", join_req, 3).sends
    ((_, sync_req),) = m.step("b1", join_resp, 4).sends
    assert sync_req.assignment == ((join_resp.member_id, (("t", 0), ("t", 1))),)
    ((_, sync_resp),) = c.step("c1", sync_req, 5).sends
    m.step("b1", sync_resp, 6)
    assert m.owned == (("t", 0), ("t", 1)) and m.listener == [("assigned", m.owned)]
    assert [op["f"] for op in m.history] == ["subscribe", "subscribe", "assign", "assign"]
    assert m.history[-1]["generation"] == 1 and m.history[-1]["value"] == ["t-0", "t-1"]
    # a heartbeat answered REBALANCE_IN_PROGRESS: revoke first (eager), then rejoin
    ((_, heartbeat),) = m.tick(ms(3_000)).sends
    answer = HeartbeatResponse("g", REBALANCE_IN_PROGRESS, 1, heartbeat.correlation)
    m.step("b1", answer, ms(3_000) + 1)
    assert m.listener[-1] == ("revoked", (("t", 0), ("t", 1))) and m.owned == ()
    ((_, rejoin),) = m.poll(ms(3_000) + 2).sends
    assert isinstance(rejoin, JoinGroup) and rejoin.member_id == join_resp.member_id


def test_member_leaves_when_its_poll_loop_stalls() -> None:
    m = member()
    m.subscribe(("t",), 0)
    m.member_id, m.coordinator = "c1-b1-1", "b1"
    sends = m.tick(REBALANCE + 1).sends
    assert sends == [("b1", LeaveGroup("g", "c1-b1-1"))] and m.member_id == ""


def test_the_member_table_refuses_an_illegal_move() -> None:
    m = member()
    from spec.group.lifecycle import MEMBER_STABLE, member_transition

    with pytest.raises(SpecError, match="illegal member transition"):
        member_transition(m.state, MEMBER_STABLE)
    with pytest.raises(ValueError, match=r"partition\.assignment\.strategy"):
        MemberConfig(assignor="sticky-ish")


def test_an_answer_on_a_connection_given_up_on_is_dropped() -> None:
    """A JoinGroup unanswered for its timeout (the rebalance timeout plus 5 s, as Kafka's
    consumer gives it) closes its connection; the answer
    the coordinator still sends for it is never read (Kafka's ``NetworkClient`` matches a
    response to its request by correlation id, on the connection it went out on). Taken, it
    would make the member the member id that request created, and the next SyncGroup answer
    of that id's generation its assignment (``impl.group.run``, cooperative-sticky, seed 46:
    a zombie's commit accepted)."""
    c = hosted()
    m = member()
    m.subscribe(("t",), 0)
    ((_, find),) = m.poll(0).sends
    m.step("b1", FindCoordinatorResponse("g", NONE, "b1", find.correlation), 1)
    ((_, first),) = m.poll(2).sends
    ((_, late),) = c.step("c1", first, 3).sends  # generation 1 for c1-b1-1, slow to arrive
    m.tick(2 + m.config.request_timeout_ns)
    assert "join" in m.in_flight, "a JoinGroup outlasts request.timeout.ms"
    now = 2 + m.timeout_ns("join")
    m.tick(now)
    assert "join" not in m.in_flight and m.coordinator == "" and m.connection == 1
    ((_, find),) = m.poll(now).sends
    m.step("b1", FindCoordinatorResponse("g", NONE, "b1", find.correlation), now)
    ((_, second),) = m.poll(now).sends
    assert second.member_id == "" and second.correlation != first.correlation
    m.step("b1", late, now + 1)  # the closed connection's answer
    assert m.state == JOINING and m.member_id == "" and "join" in m.in_flight
    assert c.step("c1", second, now + 2).sends == []  # a second member: a rebalance
    answers = c.tick(now + 2 + REBALANCE).sends  # c1-b1-1 never rejoined: removed
    (answer,) = [r for _, r in answers if isinstance(r, JoinGroupResponse) and r.error == NONE]
    ((_, sync),) = m.step("b1", answer, now + 3).sends
    assert m.member_id == answer.member_id != late.member_id and m.state == AWAITING_SYNC
    stale = SyncGroupResponse("g", NONE, answer.generation, (("t", 0),), sync.correlation - 1)
    m.step("b1", stale, now + 4)  # not the answer to this SyncGroup: dropped too
    assert m.state == AWAITING_SYNC and m.owned == ()


def joining(m: Member, now: int) -> JoinGroup:
    """``m`` subscribes, finds the coordinator b1 and sends its JoinGroup (returned)."""
    m.subscribe(("t",), now)
    ((_, find),) = m.poll(now).sends
    m.step("b1", FindCoordinatorResponse("g", NONE, "b1", find.correlation), now)
    ((_, request),) = m.poll(now).sends
    return request


def test_a_restarted_consumer_drops_the_answer_to_its_predecessors_parked_join() -> None:
    """Consumer c3's JoinGroup is parked (c1 and c2 must rejoin first) when its process is
    killed; the restarted process joins too. When the rebalance completes the coordinator
    answers both parked JoinGroups to c3: the new process takes only its own, though both
    are its first JoinGroup (in Kafka the first answer goes down a connection that died with
    the old process)."""
    c = hosted()
    m1, m2 = form_group(c)
    assert c.step("c3", joining(member("c3", process=3), 50), 50).sends == []
    new = member("c3", process=103)  # the old process is killed; c3 starts again
    request = joining(new, 60)
    before = set(c.groups["g"].members)
    assert c.step("c3", request, 60).sends == []
    (new_id,) = set(c.groups["g"].members) - before
    join(c, "c1", m1, 70)
    answers = [r for dst, r in join(c, "c2", m2, 80) if dst == "c3"]
    assert len(answers) == 2 and c.groups["g"].state == COMPLETING
    for answer in answers:
        new.step("b1", answer, 90)
    assert new.member_id == new_id and new.state == AWAITING_SYNC
