"""Retention and compaction on the simulated cluster (impl.log_cleanup from the broker's
tick): logs stay bounded, replicas agree above their log starts, a follower that fell below
the leader's log start starts over there, and ``__consumer_offsets`` is compacted."""

from __future__ import annotations

from impl.cluster import Cluster, ClusterConfig
from impl.group.placement import CONSUMER_OFFSETS
from impl.log import LogConfig
from impl.sim.clock import ms, seconds


def _produce(cluster: Cluster, count: int, every_ms: int = 20) -> None:
    for i in range(count):
        cluster.client_send(cluster.producer_names[0], None, b"value-%05d" % i)
        cluster.run_until(cluster.clock.now + ms(every_ms))


def _logs(cluster: Cluster):
    for b in cluster.config.broker_ids:
        broker = cluster.brokers[b]
        if broker is not None:
            replica = broker.replica("t", 0)
            if replica is not None:
                yield b, replica


def test_retention_bytes_bounds_every_replica_and_they_agree_above_the_log_start():
    config = ClusterConfig(
        brokers=3, producers=1, segment_bytes=400, retention_bytes=800, min_insync_replicas=2
    )
    cluster = Cluster(config, 7)
    _produce(cluster, 200)
    cluster.run_until(cluster.clock.now + seconds(3))
    logs = dict(_logs(cluster))
    assert len(logs) == 3
    for replica in logs.values():
        log = replica.log
        assert log.log_start_offset > 0, log.describe()
        assert log.log_start_offset <= replica.hw
        # what retention keeps: at least retention.bytes, and less than one more segment
        assert log.size_in_bytes - log.active_segment.size < 800 + 400, log.describe()
        log.check_invariants()
    top = max(r.log.log_start_offset for r in logs.values())
    suffixes = {tuple(e for e in r.log.entries() if e[0] >= top) for r in logs.values()}
    assert len(suffixes) == 1
    figures = [cluster.brokers[b].log_cleanup.stats for b in logs]
    assert all(f["segments_deleted"] > 0 for f in figures)


def test_a_follower_below_the_leaders_log_start_starts_over_there():
    config = ClusterConfig(
        brokers=3,
        producers=1,
        segment_bytes=400,
        retention_bytes=800,
        min_insync_replicas=1,
        replica_lag_time_max_ns=ms(1_000),
    )
    cluster = Cluster(config, 3)
    _produce(cluster, 20)
    leader = cluster.store.partitions[("t", 0)].leader
    follower = next(b for b in config.broker_ids if b != leader)
    cluster.crash(f"b{follower}")
    cluster.run_until(cluster.clock.now + seconds(3))  # the ISR shrinks without it
    _produce(cluster, 200)
    assert cluster.brokers[leader].replica("t", 0).log.log_start_offset > 20
    cluster.restart(f"b{follower}")
    cluster.run_until(cluster.clock.now + seconds(20))
    logs = dict(_logs(cluster))
    behind = logs[follower].log
    ahead = max(r.log.log_end_offset for r in logs.values())
    assert behind.log_end_offset == ahead
    assert behind.log_start_offset > 20  # it never fetched what retention had deleted


def test_the_offsets_topic_is_compacted_and_the_workload_topic_is_not():
    broker_config = ClusterConfig(offsets_partitions=1).broker_config()
    assert broker_config.log_config(CONSUMER_OFFSETS).cleanup_policy == "compact"
    assert broker_config.log_config("t").cleanup_policy == "delete"
    assert broker_config.log_config("t") == LogConfig(
        segment_bytes=broker_config.log.segment_bytes,
        index_interval_bytes=broker_config.log.index_interval_bytes,
    )


class _Hosted:
    def __init__(self, log, hw: int) -> None:
        self.log = log
        self.hw = hw


def test_the_broker_cleanup_runs_each_job_on_its_own_interval():
    from impl.log import Log, RecordBatch
    from impl.log_cleanup import LogCleanup
    from impl.sim.disk import SimDisk

    disk = SimDisk()
    compacted = Log.open(disk, "c-0", config=LogConfig(segment_bytes=200, cleanup_policy="compact"))
    retained = Log.open(disk, "r-0", config=LogConfig(segment_bytes=200, retention_bytes=300))
    for i in range(40):
        compacted.append_as_leader(RecordBatch.of(b"v%d" % i, key=b"k%d" % (i % 3)), 0)
        retained.append_as_leader(RecordBatch.of(b"v%d" % i), 0)
    hosted = {
        ("c", 0): _Hosted(compacted, compacted.log_end_offset),
        ("r", 0): _Hosted(retained, retained.log_end_offset),
    }
    cleanup = LogCleanup(retention_check_interval_ns=ms(5_000), cleaner_backoff_ns=ms(3_000))
    cleanup.tick(hosted, now=0, wall=0)
    assert cleanup.stats["cleanings"] == 1 and cleanup.stats["records_cleaned"] > 0
    assert cleanup.stats["segments_deleted"] > 0
    assert retained.size_in_bytes - retained.active_segment.size < 300 + 200
    below = [k for o, _, k, _ in compacted.entries() if o < compacted.active_segment.base_offset]
    assert below and len(below) == len(set(below)) <= 3  # one record per key was kept
    before = dict(cleanup.stats)
    for i in range(40, 80):
        compacted.append_as_leader(RecordBatch.of(b"v%d" % i, key=b"k%d" % (i % 3)), 0)
        retained.append_as_leader(RecordBatch.of(b"v%d" % i), 0)
    hosted = {k: _Hosted(h.log, h.log.log_end_offset) for k, h in hosted.items()}
    cleanup.tick(hosted, now=ms(2_000), wall=ms(2_000))
    assert cleanup.stats == before  # neither is due yet
    cleanup.tick(hosted, now=ms(3_000), wall=ms(3_000))
    assert (
        cleanup.stats["cleanings"] == 2
        and cleanup.stats["segments_deleted"] == (before["segments_deleted"])
    )
    cleanup.tick(hosted, now=ms(5_000), wall=ms(5_000))
    assert cleanup.stats["segments_deleted"] > before["segments_deleted"]
