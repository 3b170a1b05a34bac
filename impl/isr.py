"""ISR management by the leader: which followers are in sync, on the logical clock
(Kafka's ``Partition.maybeShrinkIsr`` / ``maybeExpandIsr`` and ``Replica.updateFetchState``).

The leader keeps, for every follower, what it learnt from that follower's fetches
(``RemoteReplica``): the follower's log end offset (the fetch offset of its last fetch in
this leader epoch; -1 before the first), when it last fetched, and ``last_caught_up_ns``,
the last time its fetches had reached the leader's log end. The rules:

- **shrink** (``replica.lag.time.max.ms``, default 30 s): a follower is out of sync when
  its LEO is not the leader's LEO and it has not been caught up for longer than the lag
  time. Every out-of-sync follower leaves the ISR in *one* change; the leader never removes
  itself.
- **expand**: a follower outside the ISR joins when its LEO has reached the leader's HW
  (and, with KIP-320's fencing, the start offset of the leader's current epoch, so it holds
  everything a previous leader may have committed). One follower per change, as Kafka has
  only one ISR change in flight at a time.

``last_caught_up_ns`` follows Kafka's ``updateFetchState``: a fetch at or past the leader's
LEO makes the follower caught up *now*; a fetch at or past the LEO the leader had at the
follower's previous fetch makes it caught up as of that previous fetch (it has since read
everything that existed then). Making a replica leader resets every remote state: LEO
unknown, and ISR members count as caught up at that instant (``resetReplicaState``).

Everything here is a pure function of the values passed in; the replica applies the result
through the controller (``AlterPartition``). The times are the *leader's* clock, as Kafka's
``time.milliseconds()`` is (``impl.sim.clock``: the clock nemesis may skew it): a leader whose
clock jumps ahead by more than the lag time drops every follower that is not at its LEO at
once, one whose clock stalls keeps lagging followers in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

__all__ = ["RemoteReplica", "caught_up_candidates", "out_of_sync", "record_fetch"]


@attrs.define
class RemoteReplica:
    """What a leader knows of one follower, from its fetches in this leader epoch."""

    leo: int = -1
    last_fetch_ns: int = 0
    last_fetch_leader_leo: int = -1
    last_caught_up_ns: int = 0

    @classmethod
    def reset(cls, now: int, in_sync: bool) -> RemoteReplica:
        return cls(-1, now if in_sync else 0, -1, now if in_sync else 0)


def record_fetch(remote: RemoteReplica, fetch_offset: int, leader_leo: int, now: int) -> None:
    """A fetch at ``fetch_offset`` arrived while the leader's LEO was ``leader_leo``."""
    assert fetch_offset <= leader_leo, "a fetch past the leader's LEO is answered out of range"
    if fetch_offset >= leader_leo:
        remote.last_caught_up_ns = now
    elif fetch_offset >= remote.last_fetch_leader_leo >= 0:
        remote.last_caught_up_ns = max(remote.last_caught_up_ns, remote.last_fetch_ns)
    remote.leo = fetch_offset
    remote.last_fetch_leader_leo = leader_leo
    remote.last_fetch_ns = now


def out_of_sync(
    *,
    leader: int,
    isr: Iterable[int],
    remotes: Mapping[int, RemoteReplica],
    leader_leo: int,
    now: int,
    lag_time_max_ns: int,
) -> frozenset[int]:
    """The ISR followers to drop: not at the leader's LEO and not caught up within
    ``replica.lag.time.max.ms``."""
    dropped = set()
    for f in sorted(isr):
        if f == leader:
            continue
        remote = remotes[f]
        if remote.leo != leader_leo and now - remote.last_caught_up_ns > lag_time_max_ns:
            assert remote.leo < leader_leo, (f, remote.leo, leader_leo)
            dropped.add(f)
    return frozenset(dropped)


def caught_up_candidates(
    *,
    leader: int,
    isr: Iterable[int],
    replicas: Iterable[int],
    remotes: Mapping[int, RemoteReplica],
    high_watermark: int,
    epoch_start_offset: int | None,
    fetched_since_ns: int | None = None,
) -> list[int]:
    """Followers outside the ISR that may join it, in id order. ``epoch_start_offset`` is
    the start of the leader's current epoch under KIP-320's fencing, None otherwise.

    ``fetched_since_ns``: only followers that fetched at or after that time. Kafka judges
    expansion on a follower's fetch (``updateFollowerFetchState``), so a follower that has
    stopped fetching never rejoins; this tick-driven leader asks for a fetch within
    ``replica.lag.time.max.ms`` instead. It matters under KIP-966's strict min ISR, where
    the HW stands still below ``min.insync.replicas`` and a silent follower's last LEO
    would otherwise pass for caught up."""
    members = frozenset(isr)
    result = []
    for f in sorted(replicas):
        if f == leader or f in members:
            continue
        leo = remotes[f].leo
        if leo < 0 or leo < high_watermark:
            continue
        if fetched_since_ns is not None and remotes[f].last_fetch_ns < fetched_since_ns:
            continue
        if epoch_start_offset is not None and leo < epoch_start_offset:
            continue
        result.append(f)
    return result
