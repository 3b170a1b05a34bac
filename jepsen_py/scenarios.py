"""Named test configurations of ``kmodel test``: Kafka as configured today, and the partition
pattern of Jepsen's 2013 Kafka analysis.

They are shared by the regression tests (``model_tests/test_runner.py``) and the main job
(``kmodel demo``), so the demo shows exactly what the tests pin.
"""

from __future__ import annotations

from impl.coordination import STORE
from jepsen_py.generator import SECOND
from jepsen_py.nemesis import ALL, ScheduleStep
from jepsen_py.runner.config import TestConfig

KAFKA_TODAY = TestConfig(acks="all", min_isr=2, unclean=False, truncation="kip320", nemesis=ALL)
"""acks=all, min.insync.replicas=2, 3 brokers, clean election, KIP-320 truncation, every
fault except whole-cluster loss of unflushed data (``kill-all``)."""

CUT_FOLLOWERS = {"b1": ["b2", "b3"], "b2": ["b1"], "b3": ["b1"]}
"""The leader b1 and its followers lose each other; everyone still reaches the store (zk)."""

ISOLATE_LEADER = {
    "b1": ["b2", "b3", STORE],
    "b2": ["b1"],
    "b3": ["b1"],
    STORE: ["b1"],
}
"""b1 loses every other node (its clients still reach it)."""

JEPSEN_2013 = (
    # The followers lose the leader b1 (which is the controller and still reaches the store): after
    # replica.lag.time.max.ms the ISR shrinks to b1 alone, which goes on acknowledging.
    ScheduleStep(2 * SECOND, "start-partition", {"shape": "isr-shrink", "grudge": CUT_FOLLOWERS}),
    # Then b1 loses the store (zk) too; clients still reach it. Its session expires, no ISR
    # member is left, and an out-of-sync follower is elected.
    ScheduleStep(16 * SECOND, "start-partition", {"shape": "leader-cut", "grudge": ISOLATE_LEADER}),
    ScheduleStep(28 * SECOND, "stop-partition"),
)
"""The fault schedule of Jepsen's 2013 Kafka analysis (Kyle Kingsbury, "Call me maybe:
Kafka"): the ISR shrinks to the leader alone, then the leader is cut off and, with
``unclean.leader.election.enable``, an out-of-sync replica takes over and the writes the
old leader acknowledged alone are lost."""


LAST_REPLICA_STANDING = TestConfig(
    name="last-replica-standing",
    partitions=1,
    nemesis=(),
    time_limit_ns=20 * SECOND,
    rate=20,
    schedule=(
        # The followers lose the leader b1: after replica.lag.time.max.ms (10 s) b1 shrinks
        # the ISR to [1]; acks=all writes are refused from then on (min.insync.replicas=2).
        ScheduleStep(
            2 * SECOND, "start-partition", {"shape": "isr-shrink", "grudge": CUT_FOLLOWERS}
        ),
        # b1 loses power before the kernel wrote its log back, restarts empty, and is the
        # only ISR member: elected again, and b2 and b3 truncate to it.
        ScheduleStep(14 * SECOND, "kill", {"node": "b1"}),
        ScheduleStep(16 * SECOND, "stop-partition"),
        ScheduleStep(17 * SECOND, "restart"),
    ),
)
"""KIP-966's "last replica standing" in Kafka's safe configuration (acks=all,
min.insync.replicas=2, clean election, KIP-320): the ISR shrinks to the leader, which then
loses power; every write acknowledged before the shrink is lost (Kafka before 4.0)."""


ACKS_1_LEADER_KILLS = TestConfig(
    name="acks-1-leader-kills",
    acks="1",
    min_isr=1,
    partitions=1,
    nemesis=("kill-leader",),
    interval_ns=SECOND,
    time_limit_ns=30 * SECOND,
    rate=200,
    concurrency=10,
)
"""acks=1 with the leader losing power every second or so: a write acknowledged by the
leader alone is lost when a follower that never fetched it takes over."""

PRE_KIP_101 = TestConfig(
    name="pre-kip-101",
    truncation="high_watermark",
    partitions=1,
    nemesis=("sigkill", "sigkill-leader"),
    interval_ns=150_000_000,
    time_limit_ns=20 * SECOND,
    rate=200,
    concurrency=10,
)
"""Kills and restarts every 150 ms or so, the page cache kept (so no loss of unflushed
data muddles the picture): a follower that truncated to its high watermark on a leader
change and is then elected before it fetched again loses committed records (KIP-101)."""


def jepsen_2013(unclean: bool) -> TestConfig:
    """The 2013 partition pattern on one partition with acks=all and min.insync.replicas=1
    (the setting that lets an ISR of one acknowledge), unclean election as given."""
    return TestConfig(
        name="jepsen-2013" + ("-unclean" if unclean else "-clean"),
        acks="all",
        min_isr=1,
        unclean=unclean,
        partitions=1,
        schedule=JEPSEN_2013,
        time_limit_ns=30 * SECOND,
        recovery_ns=15 * SECOND,
        rate=50,
    )


__all__ = [
    "ACKS_1_LEADER_KILLS",
    "CUT_FOLLOWERS",
    "ISOLATE_LEADER",
    "JEPSEN_2013",
    "KAFKA_TODAY",
    "LAST_REPLICA_STANDING",
    "PRE_KIP_101",
    "jepsen_2013",
]
