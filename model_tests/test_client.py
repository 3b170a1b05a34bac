"""Clients (``impl.client``): the producer's partitioner, acks, retries and timeouts, and
the consumer reading up to the high watermark; as state machines and in a cluster."""

from __future__ import annotations

import pytest

from impl.client import Consumer, ConsumerConfig, Producer, ProducerConfig, acks_value
from impl.cluster import Cluster, ClusterConfig
from impl.log import RecordBatch
from impl.partitioner import partition_for_key
from impl.protocol import (
    Errors,
    Fetch,
    FetchResponse,
    MetadataRequest,
    MetadataResponse,
    PartitionMetadata,
    Produce,
    ProduceResponse,
)
from impl.sim.clock import ms, seconds
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
