"""The broker and its replicas, one request at a time (``impl.broker``, ``impl.replica``,
``impl.isr``, ``impl.fetcher``): Kafka's leader and follower rules, checked directly on
the state machines with hand-built requests (no network, no controller)."""

from __future__ import annotations

import attrs
import pytest

from impl.broker import Broker, BrokerConfig
from impl.client import decode_records
from impl.fetcher import ExchangeDone, ExchangeFailed, TruncationExchange
from impl.isr import RemoteReplica, caught_up_candidates, out_of_sync, record_fetch
from impl.log import CorruptBatchError, EpochEntry, LeaderEpochCache, RecordBatch, decode
from impl.log.batch import read_header
from impl.protocol import (
    ANY_EPOCH,
    CONSUMER_ID,
    Acked,
    AlterPartition,
    AlterPartitionResponse,
    BrokerRegistrationResponse,
    Effects,
    Errors,
    Fetch,
    FetchResponse,
    LeaderAndIsr,
    OffsetsForLeaderEpoch,
    OffsetsForLeaderEpochResponse,
    Produce,
    ProduceFailed,
    ProduceResponse,
)
from impl.replica import Replica, ReplicaConfig
from impl.roles import (
    SERVES,
    TRANSITIONS,
    Role,
    RoleEvent,
    next_role,
    roles_to_markdown,
    roles_to_mermaid,
)
from impl.sim.clock import ms
from impl.sim.disk import SimDisk

T = "t"


def make_broker(
    broker_id: int = 1,
    *,
    truncation: str = "kip320",
    min_isr: int = 1,
    atomic: bool = True,
    disk: SimDisk | None = None,
    broker_epoch: int = 10,
) -> Broker:
    config = BrokerConfig(
        replica=ReplicaConfig(
            truncation=truncation,
            min_insync_replicas=min_isr,
            replica_lag_time_max_ns=ms(100),
            produce_timeout_ns=None if atomic else ms(1000),
        ),
        atomic=atomic,
        hw_checkpoint_interval_ns=None if atomic else ms(5000),
    )
    broker = Broker(broker_id, disk or SimDisk(f"b{broker_id}"), config, now=0)
    broker.start(0)
    broker.step("controller", BrokerRegistrationResponse(Errors.NONE, broker_epoch, 1), 0)
    return broker


def lai(
    leader: int,
    epoch: int,
    isr: tuple[int, ...] = (1, 2, 3),
    *,
    broker_epoch: int = 10,
    controller_epoch: int = 1,
    replicas: tuple[int, ...] = (1, 2, 3),
) -> LeaderAndIsr:
    return LeaderAndIsr(
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
        topic=T,
        partition=0,
        leader=leader,
        leader_epoch=epoch,
        isr=frozenset(isr),
        partition_epoch=epoch,
        replicas=replicas,
    )


def produce(acks: int = -1, value: bytes = b"v", request_id: int = 1) -> Produce:
    return Produce("p1", request_id, T, 0, acks, ((None, value),))


def fetch(replica: int, offset: int, epoch: int = ANY_EPOCH, fetch_id: int = 1) -> Fetch:
    return Fetch(replica, 10, T, 0, offset, epoch, 1 << 20, fetch_id)


def only(effects, kind):
    found = [m for _, m in effects.sends if isinstance(m, kind)]
    assert len(found) == 1, effects.sends
    return found[0]


def replica_of(broker: Broker) -> Replica:
    r = broker.replica(T, 0)
    assert r is not None
    return r


# --------------------------------------------------------------------------- life cycle


def test_role_table_never_leads_back_to_offline_and_draws_itself():
    assert all(t.target is not Role.OFFLINE for t in TRANSITIONS)
    assert next_role("x", Role.OFFLINE, RoleEvent.BECOME_LEADER) is Role.LEADER
    assert next_role("x", Role.LEADER, RoleEvent.BECOME_FOLLOWER) is Role.FOLLOWER
    assert "offline --> leader: become-leader" in roles_to_mermaid()
    assert roles_to_markdown().count("\n") == len(TRANSITIONS) + 2


def test_the_serves_table_decides_what_each_role_acts_on():
    follower = make_broker(2, atomic=False)  # follows at once, then runs its exchange
    follower.step("controller", lai(1, 0), 0)
    assert replica_of(follower).role is Role.FOLLOWER
    assert SERVES[Role.FOLLOWER] == {FetchResponse, Fetch}  # a consumer's fetch: KIP-392
    for request, answer in (
        (produce(), ProduceResponse),
        (fetch(3, 0), FetchResponse),  # a replica's fetch is the leader's to answer
        (OffsetsForLeaderEpoch(3, T, 0, 0, 0, 1), OffsetsForLeaderEpochResponse),
    ):
        assert only(follower.step("p1", request, 0), answer).error is (
            Errors.NOT_LEADER_OR_FOLLOWER
        )
    leader = make_broker(1)
    leader.step("controller", lai(1, 0), 0)
    stray = FetchResponse(T, 0, Errors.NONE, 0, 0, 0, 0, b"")
    assert not leader.step("b2", stray, 0).sends, "a leader drops a follower's answer"
    assert replica_of(leader).leo == 0


def test_a_leader_and_isr_for_another_incarnation_or_controller_is_ignored():
    broker = make_broker(1, broker_epoch=10)
    broker.step("controller", lai(1, 0, broker_epoch=9), 0)
    assert broker.replica(T, 0) is None, "STALE_BROKER_EPOCH: meant for a previous life"
    broker.step("controller", lai(1, 0, controller_epoch=2), 0)
    assert replica_of(broker).role is Role.LEADER
    broker.step("controller", lai(2, 1, controller_epoch=1), 0)
    assert replica_of(broker).role is Role.LEADER, "STALE_CONTROLLER_EPOCH"
    broker.step("controller", lai(2, 0, controller_epoch=2), 0)
    assert replica_of(broker).leader_epoch == 0, "an older leader epoch is ignored"


def test_becoming_leader_resets_remote_states_and_records_the_epoch_start():
    broker = make_broker(1)
    broker.step("controller", lai(1, 0), 0)
    broker.step("p1", produce(acks=1), 0)
    replica = replica_of(broker)
    replica.remotes[2].leo = 1
    broker.step("controller", lai(1, 3), ms(5))
    assert all(r.leo == -1 for r in replica.remotes.values())
    assert replica.epoch_start_offset() == 1
    assert replica.log.epoch_cache.entries[-1] == EpochEntry(3, 1)


# --------------------------------------------------------------------------- produce, HW


def test_acks_1_is_answered_on_append_and_acks_all_waits_for_the_hw():
    broker = make_broker(1)
    broker.step("controller", lai(1, 0), 0)
    out = broker.step("p1", produce(acks=1, request_id=1), 0)
    assert only(out, ProduceResponse).error is Errors.NONE
    assert [n.acks for n in out.notes if isinstance(n, Acked)] == [1]
    out = broker.step("p1", produce(acks=-1, request_id=2), 0)
    assert not [m for _, m in out.sends if isinstance(m, ProduceResponse)]
    replica = replica_of(broker)
    assert replica.hw == 0 and len(replica.purgatory) == 1
    for follower in (2, 3):
        broker.step(f"b{follower}", fetch(follower, 2), ms(1))
    assert replica.hw == 2
    assert replica.purgatory == []


def test_the_fetch_response_carries_the_hw_read_before_the_follower_is_recorded():
    """Kafka's order: a follower learns of the HW advance its own fetch caused one fetch
    later (the lag KIP-101's data loss needs)."""
    broker = make_broker(1)
    broker.step("controller", lai(1, 0, isr=(1, 2), replicas=(1, 2)), 0)
    broker.step("p1", produce(acks=-1), 0)
    first = only(broker.step("b2", fetch(2, 0, fetch_id=1), 0), FetchResponse)
    assert first.records and first.high_watermark == 0
    second = broker.step("b2", fetch(2, 1, fetch_id=2), 0)
    response = only(second, FetchResponse)
    assert response.high_watermark == 0, "read before the follower's LEO was recorded"
    assert replica_of(broker).hw == 1, "...which then advanced the HW"
    assert only(second, ProduceResponse).error is Errors.NONE


def test_acks_all_is_refused_below_min_insync_replicas():
    broker = make_broker(1, min_isr=2)
    broker.step("controller", lai(1, 0, isr=(1,)), 0)
    out = broker.step("p1", produce(acks=-1), 0)
    assert only(out, ProduceResponse).error is Errors.NOT_ENOUGH_REPLICAS
    assert replica_of(broker).leo == 0, "nothing appended"


def test_an_isr_shrinking_below_min_insync_fails_waiting_writes_after_append():
    broker = make_broker(1, min_isr=2)
    broker.step("controller", lai(1, 0, isr=(1, 2), replicas=(1, 2)), 0)
    broker.step("b2", fetch(2, 0), 0)
    broker.step("p1", produce(acks=-1), 0)
    replica = replica_of(broker)
    proposed = Effects()
    replica.propose_isr_change(ms(500), proposed)
    change = only(proposed, AlterPartition)
    assert change.new_isr == frozenset({1})
    out = broker.step(
        "controller",
        AlterPartitionResponse(T, 0, Errors.NONE, change.request_id, 1, 0, frozenset({1}), 1),
        ms(500),
    )
    assert replica.hw == 1, "the ISR of one has everything"
    assert only(out, ProduceResponse).error is Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    assert not [n for n in out.notes if isinstance(n, Acked)]


def test_a_leader_that_stops_leading_fails_its_purgatory():
    broker = make_broker(1)
    broker.step("controller", lai(1, 0), 0)
    broker.step("p1", produce(acks=-1), 0)
    broker.step("b2", fetch(2, 0), 0)  # the new leader holds the record
    out = broker.step("controller", lai(2, 1, isr=(1, 2)), 0)
    # The epoch exchange goes to b2 first (atomic mode): nothing changed yet.
    assert replica_of(broker).role is Role.LEADER
    request = only(out, OffsetsForLeaderEpoch)
    answer = OffsetsForLeaderEpochResponse(T, 0, Errors.NONE, request.request_id, 0, 1)
    out = broker.step("b2", answer, 0)
    assert replica_of(broker).role is Role.FOLLOWER
    assert only(out, ProduceResponse).error is Errors.NOT_LEADER_OR_FOLLOWER
    assert any(isinstance(n, ProduceFailed) for n in out.notes)


# --------------------------------------------------------------------------- fetch errors


def test_kip320_fetches_in_another_epoch_are_fenced_and_change_nothing():
    broker = make_broker(1)
    broker.step("controller", lai(1, 4), 0)
    broker.step("p1", produce(acks=-1), 0)
    replica = replica_of(broker)
    old = only(broker.step("b2", fetch(2, 1, epoch=3), 0), FetchResponse)
    new = only(broker.step("b2", fetch(2, 1, epoch=5), 0), FetchResponse)
    assert old.error is Errors.FENCED_LEADER_EPOCH
    assert new.error is Errors.UNKNOWN_LEADER_EPOCH
    assert replica.remotes[2].leo == -1 and replica.hw == 0
    ok = only(broker.step("b2", fetch(2, 1, epoch=4), 0), FetchResponse)
    assert ok.error is Errors.NONE and replica.remotes[2].leo == 1


def test_a_fetch_past_the_log_end_is_out_of_range_and_not_recorded():
    broker = make_broker(1)
    broker.step("controller", lai(1, 0), 0)
    response = only(broker.step("b2", fetch(2, 3), 0), FetchResponse)
    assert response.error is Errors.OFFSET_OUT_OF_RANGE
    assert replica_of(broker).remotes[2].leo == -1


def test_a_follower_sets_its_hw_to_the_leaders_capped_at_its_own_leo():
    leader = make_broker(1)
    leader.step("controller", lai(1, 0, isr=(1,)), 0)
    for i in range(3):
        leader.step("p1", produce(acks=1, request_id=i), 0)
    assert replica_of(leader).hw == 3
    follower = make_broker(2, truncation="high_watermark")
    follower.step("controller", lai(1, 0, isr=(1,)), 0)
    request = follower.build_fetch(T, 0, 0)
    assert request is not None and request.max_bytes == 1, "one record per fetch (atomic)"
    response = only(leader.step("b2", request, 0), FetchResponse)
    follower.step("b1", response, 0)
    assert replica_of(follower).leo == 1 and replica_of(follower).hw == 1


def test_a_follower_serves_a_consumer_up_to_its_own_hw_and_checks_its_epoch():
    # KIP-392: a consumer fetching from a follower reads what the follower has below its
    # own high watermark, which trails the leader's by a fetch.
    leader = make_broker(1)
    leader.step("controller", lai(1, 0, isr=(1,)), 0)
    for i in range(3):
        leader.step("p1", produce(acks=1, value=b"v%d" % i, request_id=i), 0)
    follower = make_broker(2, truncation="high_watermark")
    follower.step("controller", lai(1, 0, isr=(1,)), 0)
    for _ in range(2):
        request = follower.build_fetch(T, 0, replica_of(follower).leo)
        assert request is not None
        follower.step("b1", only(leader.step("b2", request, 0), FetchResponse), 0)
    assert replica_of(follower).hw == 2 and replica_of(leader).hw == 3
    read = only(follower.step("c1", fetch(CONSUMER_ID, 0, epoch=0), 0), FetchResponse)
    assert read.error is Errors.NONE and read.high_watermark == 2
    assert [v for _, v in decode_records(read.records)] == [b"v0", b"v1"]
    ahead = only(follower.step("c1", fetch(CONSUMER_ID, 0, epoch=1), 0), FetchResponse)
    assert ahead.error is Errors.UNKNOWN_LEADER_EPOCH, "KIP-320: the follower is behind"
    beyond = only(follower.step("c1", fetch(CONSUMER_ID, 9, epoch=0), 0), FetchResponse)
    assert beyond.error is Errors.OFFSET_OUT_OF_RANGE
    old = only(follower.step("c1", fetch(CONSUMER_ID, 0), 0), FetchResponse)
    assert old.error is Errors.NOT_LEADER_OR_FOLLOWER, "no epoch: a client before Fetch v11"
    assert replica_of(follower).leo == 2, "a read changes nothing"


def test_a_stale_fetch_response_is_discarded():
    follower = make_broker(2, truncation="high_watermark")
    follower.step("controller", lai(1, 0, isr=(1, 2)), 0)
    request = follower.build_fetch(T, 0, 0)
    assert request is not None
    stale = FetchResponse(T, 0, Errors.NONE, request.fetch_id + 7, 0, 5, 5, b"")
    follower.step("b1", stale, 0)
    assert replica_of(follower).hw == 0


def test_a_fetch_response_from_a_former_leader_is_dropped_whatever_its_fetch_id():
    # b2 followed b1 in epoch 0, then b3 in epoch 1. A response b1 still sends (a zombie
    # leader taking writes in its old epoch), with the id and offset of the fetch now in
    # flight to b3, is dropped: only the leader the fetcher fetches from answers it
    # (Kafka's fetcher thread per source broker). The same response from b3 is applied.
    old_leader = make_broker(1)
    old_leader.step("controller", lai(1, 0, isr=(1,)), 0)
    old_leader.step("p1", produce(acks=1), 0)
    follower = make_broker(2, truncation="high_watermark")
    follower.step("controller", lai(1, 0, isr=(1, 2)), 0)
    first = follower.build_fetch(T, 0, 0)
    assert first is not None
    follower.step("controller", lai(3, 1, isr=(2, 3)), 0)
    request = follower.build_fetch(T, 0, 0)
    assert request is not None and request.fetch_id != first.fetch_id, "ids go on"
    answer = only(old_leader.step("b2", fetch(2, 0, fetch_id=first.fetch_id), 0), FetchResponse)
    assert answer.records, "the old leader's record"
    leftover = attrs.evolve(answer, fetch_id=request.fetch_id)
    follower.step("b1", leftover, 0)
    assert replica_of(follower).leo == 0, "not from the leader it follows: dropped"
    follower.step("b3", leftover, 0)
    assert replica_of(follower).leo == 1


# --------------------------------------------------------------------------- ISR


def test_every_lagging_follower_leaves_the_isr_at_once_after_the_lag_time():
    remotes = {2: RemoteReplica.reset(0, True), 3: RemoteReplica.reset(0, True)}
    record_fetch(remotes[2], 0, 0, ms(10))  # caught up at 10ms
    assert (
        out_of_sync(
            leader=1,
            isr={1, 2, 3},
            remotes=remotes,
            leader_leo=1,
            now=ms(100),
            lag_time_max_ns=ms(100),
        )
        == frozenset()
    )
    assert out_of_sync(
        leader=1, isr={1, 2, 3}, remotes=remotes, leader_leo=1, now=ms(111), lag_time_max_ns=ms(100)
    ) == frozenset({2, 3})
    # A follower at the leader's LEO is never out of sync, however long ago it fetched.
    record_fetch(remotes[3], 1, 1, ms(5))
    assert 3 not in out_of_sync(
        leader=1, isr={1, 2, 3}, remotes=remotes, leader_leo=1, now=ms(900), lag_time_max_ns=ms(100)
    )


def test_a_follower_rejoins_at_the_hw_and_with_kip320_at_the_epoch_start():
    remotes = {2: RemoteReplica(leo=3)}

    def candidates(hw: int, start: int | None) -> list[int]:
        return caught_up_candidates(
            leader=1,
            isr={1},
            replicas=[2],
            remotes=remotes,
            high_watermark=hw,
            epoch_start_offset=start,
        )

    assert candidates(3, None) == [2]
    assert candidates(4, None) == []
    assert candidates(3, 5) == [], "KIP-320: not yet at the start of the leader's epoch"


# --------------------------------------------------------------------------- truncation


def exchange(truncation, follower_entries, leo, hw, leader_cache, leader_leo, current=5):
    ex = TruncationExchange(
        truncation=truncation,
        replica_id=2,
        topic=T,
        partition=0,
        entries=tuple(EpochEntry(*e) for e in follower_entries),
        log_end_offset=leo,
        high_watermark=hw,
        current_leader_epoch=current,
        first_request_id=0,
    )
    cache = LeaderEpochCache(None, [EpochEntry(*e) for e in leader_cache])
    result: OffsetsForLeaderEpoch | ExchangeDone | ExchangeFailed = ex.start()
    asked = []
    while isinstance(result, OffsetsForLeaderEpoch):
        asked.append(result.leader_epoch)
        found = cache.end_offset_for(result.leader_epoch, leader_leo)
        result = ex.on_response(
            OffsetsForLeaderEpochResponse(
                T, 0, Errors.NONE, result.request_id, found.leader_epoch, found.end_offset
            )
        )
    return result, asked


def test_kip279_repeats_the_exchange_until_both_sides_name_the_same_epoch():
    """KIP-279's fast failover: the follower's log is epochs [0,0,1,1,3], the leader's
    [0,0,2,2,2] (+ its current epoch 4). Asking for epoch 3 gets (2, 5); the follower knows
    no epoch 2, cuts to where its epoch 1 ends (5... its LEO) and asks for 1: (0, 2)."""
    follower = [(0, 0), (1, 2), (3, 4)]
    leader = [(0, 0), (2, 2), (4, 5)]
    result, asked = exchange("kip279", follower, 5, 0, leader, 5)
    assert asked == [3, 1]
    assert result == ExchangeDone(2, 2)
    # KIP-101 takes the first answer's end offset: too far, the logs stay diverged.
    result, asked = exchange("kip101", follower, 5, 0, leader, 5)
    assert asked == [3] and result.offset == 5


def test_high_watermark_truncation_needs_no_exchange():
    result, asked = exchange("high_watermark", [(0, 0)], 4, 2, [(0, 0)], 9)
    assert asked == [] and result == ExchangeDone(2, 0)


def test_kip320_validates_the_leader_even_with_an_empty_log():
    result, asked = exchange("kip320", [], 0, 0, [(4, 0)], 0)
    assert asked == [-1] and result.offset == 0
    ex = TruncationExchange(
        truncation="kip320",
        replica_id=2,
        topic=T,
        partition=0,
        entries=(),
        log_end_offset=0,
        high_watermark=0,
        current_leader_epoch=5,
        first_request_id=0,
    )
    request = ex.start()
    assert isinstance(request, OffsetsForLeaderEpoch) and request.current_leader_epoch == 5
    fenced = OffsetsForLeaderEpochResponse(T, 0, Errors.FENCED_LEADER_EPOCH, 0, -1, -1)
    assert ex.on_response(fenced) == ExchangeFailed(Errors.FENCED_LEADER_EPOCH)


def test_the_leader_answers_offsets_for_leader_epoch_only_in_its_own_epoch():
    broker = make_broker(1)
    broker.step("controller", lai(1, 2), 0)

    def answer(ask: OffsetsForLeaderEpoch) -> OffsetsForLeaderEpochResponse:
        return only(broker.step("b2", ask, 0), OffsetsForLeaderEpochResponse)

    assert answer(OffsetsForLeaderEpoch(2, T, 0, 1, 0, 1)).error is Errors.FENCED_LEADER_EPOCH
    assert answer(OffsetsForLeaderEpoch(2, T, 0, 3, 0, 1)).error is Errors.UNKNOWN_LEADER_EPOCH
    ok = answer(OffsetsForLeaderEpoch(2, T, 0, 2, 2, 1))
    assert (ok.error, ok.leader_epoch, ok.end_offset) == (Errors.NONE, 2, 0)


def test_an_atomic_follower_transition_changes_nothing_when_the_exchange_fails():
    broker = make_broker(2)
    broker.step("controller", lai(2, 0), 0)
    broker.step("p1", produce(acks=1), 0)
    replica = replica_of(broker)
    out = broker.step("controller", lai(1, 1), 0)
    request = only(out, OffsetsForLeaderEpoch)
    broker.step(
        "b1",
        OffsetsForLeaderEpochResponse(
            T, 0, Errors.UNKNOWN_LEADER_EPOCH, request.request_id, -1, -1
        ),
        0,
    )
    assert replica.role is Role.LEADER and replica.leader_epoch == 0 and replica.leo == 1
    # The same request delivered again is honoured.
    out = broker.step("controller", lai(1, 1), 0)
    request = only(out, OffsetsForLeaderEpoch)
    broker.step(
        "b1", OffsetsForLeaderEpochResponse(T, 0, Errors.NONE, request.request_id, -1, 0), 0
    )
    assert replica.role is Role.FOLLOWER and replica.leo == 0 and replica.leader_epoch == 1


# --------------------------------------------------------------------------- restart


def test_a_restart_recovers_the_log_and_clamps_the_checkpointed_hw():
    disk = SimDisk("b1")
    broker = make_broker(1, disk=disk)
    broker.step("controller", lai(1, 0, isr=(1,)), 0)
    for i in range(3):
        broker.step("p1", produce(acks=1, request_id=i), 0)
    replica = replica_of(broker)
    assert replica.hw == 3
    # Nothing was fsynced; power fails after write-back of the first two batches.
    path = replica.log.active_segment.log_path
    first = read_header(disk.read(path))
    assert first is not None
    disk.crash(torn={path: 2 * first.size})
    again = Broker(1, disk, broker.config, now=0, incarnation=1)
    recovered = replica_of(again)
    assert recovered.leo == 2 and recovered.hw == 2, "HW checkpoint 3, clamped to the log"
    assert recovered.log.recovery_point == 2
    assert recovered.role is Role.OFFLINE and recovered.leader_epoch == -1


def test_a_zombie_leader_cannot_append_an_older_epoch_than_its_log_holds():
    """Unfenced variants only: a replica that fetched epoch-5 records and then is made
    leader of epoch 4 refuses produce (KAFKA_STORAGE_ERROR) instead of breaking its log."""
    broker = make_broker(2, truncation="kip279")
    broker.step("controller", lai(1, 3), 0)
    replica = replica_of(broker)
    data = RecordBatch.of(b"x").with_placement(0, 5).encode()
    replica.log.append_as_follower(data)
    broker.step("controller", lai(2, 4), 0)
    assert replica.role is Role.LEADER
    out = broker.step("p1", produce(acks=1), 0)
    assert only(out, ProduceResponse).error is Errors.KAFKA_STORAGE_ERROR
    assert replica.leo == 1


@pytest.mark.parametrize("acks", [0, 1])
def test_acks_0_gets_no_answer_unless_it_fails(acks):
    broker = make_broker(1)
    broker.step("controller", lai(1, 0), 0)
    out = broker.step("p1", produce(acks=acks), 0)
    responses = [m for _, m in out.sends if isinstance(m, ProduceResponse)]
    assert len(responses) == (0 if acks == 0 else 1)
    follower = make_broker(2)
    out = follower.step("p1", produce(acks=acks), 0)
    assert only(out, ProduceResponse).error is Errors.NOT_LEADER_OR_FOLLOWER


# --------------------------------------------------------------------------- idempotence


PID = 7


def iproduce(
    seq: int, *, epoch: int = 0, pid: int = PID, acks: int = -1, request_id: int | None = None
) -> Produce:
    """An idempotent producer's one-record batch (KIP-98): producer id, epoch, sequence."""
    rid = request_id if request_id is not None else 100 + seq
    return Produce("p1", rid, T, 0, acks, ((None, f"s{seq}".encode()),), pid, epoch, seq)


def follow(follower: Broker, leader: Broker, request: LeaderAndIsr) -> None:
    """Deliver ``request`` (naming ``leader``) to ``follower`` and route its epoch exchange."""
    out = follower.step("controller", request, 0)
    for _ in range(10):
        asks = [m for _, m in out.sends if isinstance(m, OffsetsForLeaderEpoch)]
        if not asks:
            break
        answer = only(leader.step(follower.node, asks[0], 0), OffsetsForLeaderEpochResponse)
        out = follower.step(leader.node, answer, 0)
    assert replica_of(follower).role is Role.FOLLOWER


def catch_up(follower: Broker, leader: Broker, now: int = 0) -> None:
    """Atomic-mode replica fetches (one record each) until the follower has the leader's log."""
    for _ in range(100):
        request = follower.build_fetch(T, 0, now)
        assert request is not None
        if request.fetch_offset == replica_of(leader).leo:
            leader.step(follower.node, request, now)  # records the follower's LEO: HW moves
            return
        follower.step(
            leader.node, only(leader.step(follower.node, request, now), FetchResponse), now
        )
    raise AssertionError("the follower never caught up")


def test_an_idempotent_retry_is_answered_with_the_original_offset_and_not_appended():
    broker = make_broker(1)
    broker.step("controller", lai(1, 0, isr=(1,)), 0)
    assert only(broker.step("p1", iproduce(0), 0), ProduceResponse).base_offset == 0
    assert only(broker.step("p1", iproduce(1), 0), ProduceResponse).base_offset == 1
    retry = only(broker.step("p1", iproduce(0, request_id=555), 0), ProduceResponse)
    assert (retry.error, retry.base_offset, retry.request_id) == (Errors.NONE, 0, 555)
    replica = replica_of(broker)
    assert replica.leo == 2, "the duplicate was not appended again"
    [first, second] = replica.log.read_batches(0)
    assert (first.producer_id, first.producer_epoch, first.base_sequence) == (PID, 0, 0)
    assert second.base_sequence == 1


def test_a_duplicate_of_an_uncommitted_batch_waits_for_the_hw_like_the_original():
    broker = make_broker(1)
    broker.step("controller", lai(1, 0, isr=(1, 2), replicas=(1, 2)), 0)
    assert not broker.step("p1", iproduce(0, request_id=1), 0).sends
    out = broker.step("p1", iproduce(0, request_id=2), 0)
    assert not [m for _, m in out.sends if isinstance(m, ProduceResponse)], "acks=all waits"
    out = broker.step("b2", fetch(2, 1), 0)
    answers = sorted(
        (m.request_id, m.error, m.base_offset)
        for _, m in out.sends
        if isinstance(m, ProduceResponse)
    )
    assert answers == [(1, Errors.NONE, 0), (2, Errors.NONE, 0)]
    assert replica_of(broker).leo == 1


def test_a_sequence_gap_or_a_stale_producer_epoch_is_refused_and_nothing_appended():
    broker = make_broker(1)
    broker.step("controller", lai(1, 0, isr=(1,)), 0)
    broker.step("p1", iproduce(0), 0)
    broker.step("p1", iproduce(1), 0)

    def answer(request: Produce) -> Errors:
        return only(broker.step("p1", request, 0), ProduceResponse).error

    assert answer(iproduce(3)) is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, "2 is missing"
    assert answer(iproduce(5, epoch=1)) is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, "a new epoch"
    assert replica_of(broker).leo == 2
    assert answer(iproduce(0, epoch=1)) is Errors.NONE, "a new epoch starts at 0 (KIP-360)"
    assert answer(iproduce(2, epoch=0)) is Errors.INVALID_PRODUCER_EPOCH, "a zombie request"
    assert answer(iproduce(1, epoch=1)) is Errors.NONE
    assert answer(iproduce(42, pid=9)) is Errors.NONE, "no state for that producer: any start"
    assert replica_of(broker).leo == 5
    assert replica_of(broker).producer_state.describe() == {
        PID: (1, [(0, 0, 2, 2), (1, 1, 3, 3)]),
        9: (0, [(42, 42, 4, 4)]),
    }


def test_the_leader_remembers_the_last_five_batches_of_a_producer():
    broker = make_broker(1)
    broker.step("controller", lai(1, 0, isr=(1,)), 0)
    for seq in range(7):
        broker.step("p1", iproduce(seq), 0)
    assert only(broker.step("p1", iproduce(2), 0), ProduceResponse).base_offset == 2
    # Sequence 1 is older than the five retained batches: not a known duplicate, not next.
    late = only(broker.step("p1", iproduce(1), 0), ProduceResponse)
    assert late.error is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert replica_of(broker).leo == 7


def test_producer_fields_are_in_the_batch_header_under_the_crc():
    batch = attrs.evolve(RecordBatch.of(b"x"), producer_id=PID, producer_epoch=3, base_sequence=9)
    data = batch.with_placement(0, 0).encode()
    decoded, _ = decode(data)
    assert (decoded.producer_id, decoded.producer_epoch, decoded.base_sequence) == (PID, 3, 9)
    for byte in (27, 35, 37):  # producer id, producer epoch, base sequence
        flipped = bytearray(data)
        flipped[byte + 1] ^= 0x01
        with pytest.raises(CorruptBatchError, match="CRC"):
            decode(bytes(flipped))


def test_a_new_leader_answers_retries_from_the_state_it_replicated():
    leader, follower = make_broker(1), make_broker(2)
    leader.step("controller", lai(1, 0, isr=(1, 2), replicas=(1, 2)), 0)
    follow(follower, leader, lai(1, 0, isr=(1, 2), replicas=(1, 2)))
    for seq in range(3):
        leader.step("p1", iproduce(seq), 0)
    catch_up(follower, leader)
    assert replica_of(follower).producer_state.last_sequence(PID) == (0, 2)
    # Failover: b2 leads epoch 1. A retry of sequence 2 (its answer was lost with b1) is
    # a duplicate there too; sequence 3 is next; a gap is still a gap.
    follower.step("controller", lai(2, 1, isr=(2,), replicas=(1, 2)), 0)
    assert replica_of(follower).role is Role.LEADER
    retry = only(follower.step("p1", iproduce(2), 0), ProduceResponse)
    assert (retry.error, retry.base_offset) == (Errors.NONE, 2)
    assert only(follower.step("p1", iproduce(3), 0), ProduceResponse).base_offset == 3
    gap = only(follower.step("p1", iproduce(5), 0), ProduceResponse)
    assert gap.error is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert replica_of(follower).leo == 4


def test_truncation_and_restart_rebuild_producer_state_from_the_log():
    disk = SimDisk("b2")
    leader, follower = make_broker(1), make_broker(2, disk=disk)
    leader.step("controller", lai(1, 0, isr=(1, 2), replicas=(1, 2, 3)), 0)
    follow(follower, leader, lai(1, 0, isr=(1, 2), replicas=(1, 2, 3)))
    for seq in range(3):
        leader.step("p1", iproduce(seq), 0)
    catch_up(follower, leader)
    # b3 leads epoch 1 holding only offset 0: b2 truncates to 1 (KIP-101 exchange).
    out = follower.step("controller", lai(3, 1, isr=(2, 3), replicas=(1, 2, 3)), 0)
    request = only(out, OffsetsForLeaderEpoch)
    follower.step(
        "b3", OffsetsForLeaderEpochResponse(T, 0, Errors.NONE, request.request_id, 0, 1), 0
    )
    replica = replica_of(follower)
    assert replica.leo == 1
    assert replica.producer_state.last_sequence(PID) == (0, 0), "sequences 1, 2 went too"
    replica.log.flush()
    disk.crash()
    again = Broker(2, disk, follower.config, now=0, incarnation=1)
    assert replica_of(again).producer_state.describe() == {PID: (0, [(0, 0, 0, 0)])}
