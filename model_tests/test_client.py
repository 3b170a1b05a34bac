"""Clients (``impl.client``): the producer's partitioner, acks, retries and timeouts, and
the consumer reading up to the high watermark; as state machines and in a cluster."""

from __future__ import annotations

import pytest

from impl.client import AttemptEnd, Consumer, ConsumerConfig, Producer, ProducerConfig, acks_value
from impl.cluster import Cluster, ClusterConfig
from impl.log import RecordBatch
from impl.partitioner import partition_for_key
from impl.protocol import (
    Errors,
    Fetch,
    FetchResponse,
    InitProducerId,
    InitProducerIdResponse,
    MetadataRequest,
    MetadataResponse,
    PartitionMetadata,
    Produce,
    ProduceResponse,
)
from impl.sim.clock import ms, seconds
from impl.sim.network import NetworkConfig
from impl.sim.rng import SimRandom


def producer(acks=-1, partitions=4, **config) -> Producer:
    return Producer(
        "p1", "t", partitions, ProducerConfig(acks=acks, **config), SimRandom(1, "node/p1")
    )


def metadata(*leaders: int) -> MetadataResponse:
    return MetadataResponse(
        "t",
        1,
        tuple(
            PartitionMetadata(p, leader, 0, frozenset({leader})) for p, leader in enumerate(leaders)
        ),
    )


def sends(effects, kind):
    return [(dst, m) for dst, m in effects.sends if isinstance(m, kind)]


def test_acks_names():
    assert [acks_value(a) for a in ("0", "1", "all", -1)] == [0, 1, -1, -1]
    with pytest.raises(ValueError, match="acks"):
        acks_value("2")


def test_keyed_records_follow_murmur2_and_keyless_ones_round_robin():
    p = producer(partitions=4, max_in_flight=100)
    p.step("controller", metadata(1, 2, 3, 1), 0)
    for key in (b"alpha", b"beta", b"gamma"):
        p.send(key, b"v", 0)
    keyed = [s.partition for s in p.queue]
    assert keyed == [partition_for_key(k, 4) for k in (b"alpha", b"beta", b"gamma")]
    for _ in range(4):
        p.send(None, b"v", 0)
    keyless = [s.partition for s in list(p.queue)[3:]]
    assert sorted(keyless) == [0, 1, 2, 3], "one full round"


def test_a_send_goes_to_the_leader_and_ok_records_the_offset():
    p = producer(partitions=1)
    out = p.step("controller", metadata(2), 0)
    p.send(None, b"x", 0)
    out = p.pump(0)
    [(dst, request)] = sends(out, Produce)
    assert dst == "b2" and request.acks == -1
    p.step("b2", ProduceResponse(request.request_id, "t", 0, Errors.NONE, 7), ms(3))
    ok = [op for op in p.history if op["type"] == "ok"]
    assert ok[0]["value"] == {"offset": 7, "value": "x"}


def test_a_retriable_error_refreshes_metadata_and_retries_after_the_backoff():
    p = producer(partitions=1, retry_backoff_ns=ms(100))
    p.step("controller", metadata(2), 0)
    p.send(None, b"x", 0)
    [(_, first)] = sends(p.pump(0), Produce)
    out = p.step(
        "b2", ProduceResponse(first.request_id, "t", 0, Errors.NOT_LEADER_OR_FOLLOWER), ms(1)
    )
    assert sends(out, MetadataRequest), "the leader moved: ask again"
    p.step("controller", metadata(3), ms(2))
    assert not sends(p.pump(ms(50)), Produce), "backing off"
    [(dst, second)] = sends(p.pump(ms(101)), Produce)
    assert dst == "b3" and second.request_id != first.request_id
    assert p.stats["retries"] == 1


def test_an_unanswered_request_is_retried_and_an_expired_op_is_info_if_ever_sent():
    p = producer(partitions=1, request_timeout_ns=ms(100), delivery_timeout_ns=ms(250))
    p.step("controller", metadata(2), 0)
    p.send(None, b"x", 0)
    p.pump(0)
    p.tick(ms(101))  # timed out: retried (the first may still land: a duplicate)
    p.step("controller", metadata(2), ms(102))
    p.tick(ms(300))
    completions = [op["type"] for op in p.history if op["type"] != "invoke"]
    assert completions == ["info"], "sent at least once: its outcome is unknown"
    q = producer(partitions=1, delivery_timeout_ns=ms(10))
    q.send(None, b"y", 0)
    q.pump(ms(20))
    assert [op["type"] for op in q.history] == ["invoke", "fail"], "never sent: failed"


def test_acks_0_is_info_at_once():
    p = producer(acks=0, partitions=1)
    p.step("controller", metadata(1), 0)
    p.send(None, b"x", 0)
    p.pump(0)
    assert [op["type"] for op in p.history] == ["invoke", "info"]
    assert not p.in_flight


def test_a_send_records_each_attempt_and_how_it_ended():
    p = producer(partitions=1, request_timeout_ns=ms(100), retry_backoff_ns=ms(10))
    p.step("controller", metadata(2), 0)
    send = p.send(None, b"x", 0)
    assert send.attempts == [], "queued: nothing sent yet"
    [(_, first)] = sends(p.pump(0), Produce)
    p.step("b2", ProduceResponse(first.request_id, "t", 0, Errors.NOT_ENOUGH_REPLICAS), ms(1))
    p.step("controller", metadata(2), ms(2))
    [(_, second)] = sends(p.pump(ms(20)), Produce)
    p.tick(ms(200))  # unanswered: retried
    ends = [(a.request_id, a.broker, a.end, a.error) for a in send.attempts]
    assert ends == [
        (first.request_id, "b2", AttemptEnd.ANSWERED, Errors.NOT_ENOUGH_REPLICAS),
        (second.request_id, "b2", AttemptEnd.TIMED_OUT, None),
    ]
    late = ProduceResponse(second.request_id, "t", 0, Errors.NONE, 3)
    p.step("b2", late, ms(201))
    assert send.attempts[-1].end is AttemptEnd.TIMED_OUT, "an answer after the timeout is no one's"


def test_an_acks_0_attempt_is_not_awaited():
    p = producer(acks=0, partitions=1)
    p.step("controller", metadata(1), 0)
    send = p.send(None, b"x", 0)
    p.pump(0)
    assert [a.end for a in send.attempts] == [AttemptEnd.NOT_AWAITED]


def test_a_consumer_seeks_between_polls_and_gives_up_polls_without_a_leader():
    c = Consumer("c1", "t", 0, ConsumerConfig())
    c.seek(5)
    c.poll(0)  # no leader known: the poll waits for metadata
    assert c.busy and not c.fetching
    with pytest.raises(ValueError, match="seek once it has completed"):
        c.seek(0)
    assert c.give_up_polls() == 1
    assert not c.busy and c.history == [], "nothing was fetched: nothing to record"
    c.seek(2)
    c.poll(0)
    [(_, request)] = sends(c.step("controller", metadata(1), 0), Fetch)
    assert request.fetch_offset == 2 and c.fetching


def test_each_send_is_its_own_process():
    p = producer(partitions=1)
    p.send(None, b"a", 0)
    p.send(None, b"b", 0)
    assert [op["process"] for op in p.history] == ["p1/0", "p1/1"]


def test_the_consumer_reads_from_its_position_up_to_the_hw_and_moves_on():
    c = Consumer("c1", "t", 0, ConsumerConfig())
    out = c.poll(0)
    assert sends(out, MetadataRequest)
    out = c.step("controller", metadata(1), 0)
    [(dst, request)] = sends(out, Fetch)
    assert dst == "b1" and request.fetch_offset == 0 and request.replica_id == -1
    batch = RecordBatch.of(b"a", b"b").with_placement(0, 0).encode()
    c.step("b1", FetchResponse("t", 0, Errors.NONE, request.fetch_id, 0, 2, 5, batch), ms(1))
    assert c.position == 2
    assert c.history[-1]["value"] == {"records": [[0, "a"], [1, "b"]], "hw": 2}
    [(_, again)] = sends(c.poll(ms(2)), Fetch)
    assert again.fetch_offset == 2


def test_a_failed_poll_is_fail_and_forgets_the_leader():
    c = Consumer("c1", "t", 0, ConsumerConfig())
    c.poll(0)
    [(_, request)] = sends(c.step("controller", metadata(1), 0), Fetch)
    c.step(
        "b1", FetchResponse("t", 0, Errors.NOT_LEADER_OR_FOLLOWER, request.fetch_id, 0, -1, -1), 0
    )
    assert c.history[-1]["type"] == "fail" and c.leader == -1


def test_in_a_cluster_acknowledged_sends_are_read_back_in_order():
    config = ClusterConfig(brokers=3, producers=2, consumers=1, min_insync_replicas=2)
    cluster = Cluster(config, seed=11)
    for i in range(20):
        cluster.client_send(f"p{i % 2 + 1}", None, f"v{i}".encode())
        cluster.run_until(cluster.clock.now + ms(50))
    cluster.run_until(cluster.clock.now + seconds(2))
    for _ in range(5):
        cluster.client_poll("c1")
        cluster.run_until(cluster.clock.now + ms(600))
    acked = {
        op["value"]["value"]: op["value"]["offset"]
        for op in cluster.history()
        if op["type"] == "ok" and op["f"] == "send"
    }
    read = {(v or b"").decode(): o for o, v in cluster.consumers["c1"].records}
    assert len(acked) == 20
    assert read == acked


# --- the idempotent producer (KIP-98, KIP-360) ----------------------------------------


def idempotent(**config) -> Producer:
    p = producer(partitions=2, enable_idempotence=True, **config)
    p.step("controller", metadata(1, 2), 0)
    return p


def produced(effects) -> list[tuple[int, int, int, int]]:
    """(partition, producer id, epoch, sequence) of each Produce sent."""
    return [
        (m.partition, m.producer_id, m.producer_epoch, m.base_sequence)
        for _, m in sends(effects, Produce)
    ]


def test_idempotence_needs_acks_all_and_at_most_five_requests_in_flight():
    with pytest.raises(ValueError, match="acks=all"):
        ProducerConfig(acks=1, enable_idempotence=True)
    with pytest.raises(ValueError, match="max_in_flight"):
        ProducerConfig(enable_idempotence=True, max_in_flight=6)


def test_an_idempotent_producer_gets_an_id_then_numbers_records_per_partition():
    p = idempotent(max_in_flight=5)
    p.send(b"k0", b"a", 0)
    out = p.pump(0)
    [(dst, init)] = sends(out, InitProducerId)
    assert dst == "controller" and not sends(out, Produce), "no id yet: nothing is sent"
    out = p.step("controller", InitProducerIdResponse(Errors.NONE, init.request_id, 42, 0), ms(1))
    for value in (b"b", b"c"):
        p.send(b"k0", value, ms(1))
    p.send(b"k3", b"d", ms(1))
    out.extend(p.pump(ms(1)))
    k0, k3 = partition_for_key(b"k0", 2), partition_for_key(b"k3", 2)
    assert k0 != k3
    assert produced(out) == [(k0, 42, 0, 0), (k0, 42, 0, 1), (k0, 42, 0, 2), (k3, 42, 0, 0)]


def test_a_retry_keeps_its_sequence_and_an_expired_send_bumps_the_epoch():
    p = idempotent(request_timeout_ns=ms(100), delivery_timeout_ns=ms(250))
    p.send(b"k0", b"a", 0)
    [(_, init)] = sends(p.pump(0), InitProducerId)
    [first] = produced(
        p.step("controller", InitProducerIdResponse(Errors.NONE, init.request_id, 42, 0), 0)
    )
    retried = p.tick(ms(101))  # unanswered: sent again, same sequence
    retried.extend(p.step("controller", metadata(1, 2), ms(102)))
    retried.extend(p.pump(ms(201)))
    assert produced(retried) == [first]
    p.tick(ms(302))  # timed out again, past the delivery timeout: unknown, unresolved
    assert [op["type"] for op in p.history if op["type"] != "invoke"] == ["info"]
    p.send(b"k0", b"b", ms(302))
    [after] = produced(p.step("controller", metadata(1, 2), ms(303)))
    assert after == (first[0], 42, 1, 0), "KIP-360: a new epoch, the partition starts at 0"
    assert p.stats["epoch_bumps"] == 1


def test_out_of_order_sequence_fails_the_send_and_bumps_the_epoch():
    p = idempotent()
    p.send(b"k0", b"a", 0)
    [(_, init)] = sends(p.pump(0), InitProducerId)
    out = p.step("controller", InitProducerIdResponse(Errors.NONE, init.request_id, 42, 3), 0)
    [request] = sends(out, Produce)
    refused = ProduceResponse(
        request[1].request_id, "t", request[1].partition, Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    )
    p.step("b1", refused, ms(1))
    assert [op["type"] for op in p.history if op["type"] != "invoke"] == ["info"]
    p.send(b"k0", b"b", ms(2))
    assert produced(p.pump(ms(2)))[0][2:] == (4, 0)


def test_in_a_cluster_idempotent_retries_of_duplicated_requests_append_once():
    """The network delivers every request twice: without idempotence records land twice,
    with it (Kafka's default with acks=all) each value is in the log once."""
    counts = {}
    for idempotence in (False, True):
        config = ClusterConfig(
            brokers=3,
            producers=1,
            consumers=1,
            enable_idempotence=idempotence,
            network=NetworkConfig(duplicate_probability=1.0),
        )
        cluster = Cluster(config, seed=4)
        for i in range(10):
            cluster.client_send("p1", None, f"v{i}".encode())
            cluster.run_until(cluster.clock.now + ms(100))
        cluster.run_until(cluster.clock.now + seconds(2))
        for _ in range(3):
            cluster.client_poll("c1")
            cluster.run_until(cluster.clock.now + ms(600))
        values = [v for _, v in cluster.consumers["c1"].records]
        assert set(values) == {f"v{i}".encode() for i in range(10)}
        counts[idempotence] = len(values)
    assert counts == {False: 20, True: 10}


def test_a_producer_times_out_by_its_own_clock():
    # delivery.timeout.ms (30 s here) on the producer's local clock: cut off from every
    # broker (the controller among them) no leader is ever known; a clock 60 s ahead gives
    # the send up at its next tick.
    for skew, outcomes in ((0, []), (seconds(60), ["fail"])):
        cluster = Cluster(ClusterConfig(producers=1), seed=2)
        cluster.partition([("p1", b) for b in ("b1", "b2", "b3")])
        cluster.client_send("p1", None, b"x")
        cluster.skew_clock("p1", skew)
        cluster.run_until(cluster.clock.now + seconds(2))
        done = [op for op in cluster.history() if op["type"] != "invoke"]
        assert [op["type"] for op in done] == outcomes
        assert all(op["time"] <= cluster.clock.now for op in done), "histories: global time"


def test_a_duplicated_metadata_response_starts_no_second_request():
    # NetworkClient keeps one metadata request in flight and matches its response by
    # correlation id: under message duplication each copy of a response starting another
    # request made the requests multiply (a million in flight in a swarm run).
    c = Consumer("c1", "t", 0, ConsumerConfig())
    [(_, request)] = sends(c.poll(0), MetadataRequest)
    answer = MetadataResponse("t", request.request_id, (PartitionMetadata(0, -1, 0, frozenset()),))
    [(_, again)] = sends(c.step("controller", answer, 0), MetadataRequest)  # still no leader
    assert again.request_id != request.request_id
    assert not sends(c.step("controller", answer, 0), MetadataRequest), "a duplicate: ignored"
    p = producer(partitions=1)
    p.send(None, b"a", 0)
    [(_, asked)] = sends(p.tick(0), MetadataRequest)
    reply = MetadataResponse("t", asked.request_id, (PartitionMetadata(0, -1, 0, frozenset()),))
    p.step("controller", reply, 0)
    assert not sends(p.step("controller", reply, 0), MetadataRequest), "a duplicate: ignored"
