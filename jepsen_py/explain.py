"""Why acknowledged writes were lost: the known mechanism, and the story that shows it.

A history says *that* an acknowledged write is gone (the final read of its key does not
return it); the cluster's timeline (``impl.timeline``, kept by the simulated world and
stored as ``cluster.jsonl``) says why. For each lost write this module finds the
*first leader without it*: the first replica to become leader, in a later leader epoch
than the one the write was acknowledged in, whose log ended at or below the write's offset
(or the acknowledging leader itself, leading the same epoch again after a crash that no
controller handled).
Everything the cluster did after that leader took over -- followers truncating to its log --
only finishes the loss; the question is how that replica came to be elected. The answer
names a mechanism (`MECHANISMS`):

``last-replica-standing``
    KIP-966's motivating case. The ISR had shrunk to one replica (a follower lagged past
    ``replica.lag.time.max.ms``, was partitioned away, or the controller let its session
    expire); that replica lost the write in a power loss (its page cache was never written
    back); it was the only ISR member, so the clean election chose it again (or, when no
    controller handled its failure while it was down, it resumed the very epoch it led),
    and the other replicas, which had the write, truncated to its log. Kafka before 4.0
    loses the write; Eligible Leader Replicas (KIP-966 part 1: Kafka 4.0, on by default
    for new clusters since 4.1) keeps the replicas removed from the ISR below
    ``min.insync.replicas`` eligible, and a replica that restarts from an unclean shutdown
    is not.
``unclean-shutdown-leader``
    The same power loss, but the ISR still named other replicas when the one that lost the
    write was elected (it was first in the assignment order). KIP-966 removes a broker that
    restarts from an unclean shutdown from the ISR and ELR for the same reason.
``last-replica-disk-damage``, ``disk-damage-leader``
    The same two, with a damaged disk instead of a power loss: the process died with its
    page cache kept, and recovery found the active segment cut short or a batch corrupt
    (its CRC) and truncated the log there. KIP-966 closes both the same way (a broker
    restarting from an unclean shutdown leaves the ISR and the ELR).
``correlated-power-loss``
    Every replica that held the write lost it in power losses before the kernel wrote it
    back: Kafka acknowledges acks=all writes from page caches, so losing power on all of
    them at once loses the write (``log.flush.interval.messages``=1 trades throughput for
    it).
``unclean-leader-election``
    A replica outside the ISR was elected (``unclean.leader.election.enable``): the other
    replicas truncate to it (Jepsen's 2013 analysis of Kafka).
``acks-leader-failure``
    The write was acknowledged with acks=0 or 1 by a leader alone; a replica that never
    fetched it became leader (Kafka's documentation of ``acks``).
``hw-truncation``, ``epoch-truncation``, ``stale-epoch-truncation``
    The replica had the write and truncated it away by the protocol's truncation rule: to
    its high watermark before KIP-101, by the leader epoch without the fixes of KIP-279
    (``kip101`` rule) or of KIP-320 (``kip279`` rule). The cut may come before the
    acknowledgement: without KIP-320's fencing the leader can count a fetch the follower
    sent before it truncated, and advance the high watermark over what it just cut.
``unexplained``
    None of the above: with the safe configuration, a bug of the implementation.

`explain_losses` groups the lost writes of a key by mechanism and leader epoch; each
`LossExplanation` carries the story (the timeline's relevant events and the faults around
them, one line each, with their logical time) that the runner prints and stores.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from impl.sim.clock import NS_PER_S
from impl.timeline import (
    Ack,
    Crash,
    Divergence,
    Election,
    Event,
    IsrChange,
    Leadership,
    Logs,
    Recovery,
    SessionExpiry,
    Truncation,
)
from jepsen_py.history.op import Op

__all__ = [
    "MECHANISMS",
    "STORY_LINES",
    "DivergenceExplanation",
    "LossExplanation",
    "Mechanism",
    "explain_divergences",
    "explain_losses",
    "explanation_lines",
    "mechanism_of",
]


@attrs.frozen
class Mechanism:
    """A known way for Kafka to lose an acknowledged write."""

    name: str
    title: str
    reference: str
    """The KIP, JIRA or documentation that describes it."""
    safe: bool
    """Whether Kafka's safe configuration (acks=all, min.insync.replicas=2 of 3 replicas,
    clean election, KIP-320) is exposed to it."""


MECHANISMS: dict[str, Mechanism] = {
    m.name: m
    for m in (
        Mechanism(
            "last-replica-standing",
            "the last ISR member lost the write in a power loss and led again",
            "KIP-966 (Eligible Leader Replicas; Kafka 4.0, default for new clusters in 4.1)",
            True,
        ),
        Mechanism(
            "unclean-shutdown-leader",
            "a replica that lost the write in a power loss was elected from the ISR",
            "KIP-966 (a broker restarting from an unclean shutdown leaves the ISR and ELR)",
            True,
        ),
        Mechanism(
            "last-replica-disk-damage",
            "the last ISR member lost the write to a damaged disk and was elected again",
            "KIP-966 (a broker restarting from an unclean shutdown leaves the ISR and ELR); "
            "Kafka's log recovery truncates at the first corrupt batch",
            True,
        ),
        Mechanism(
            "disk-damage-leader",
            "a replica whose damaged disk lost the write was elected from the ISR",
            "KIP-966 (a broker restarting from an unclean shutdown leaves the ISR and ELR)",
            True,
        ),
        Mechanism(
            "correlated-power-loss",
            "every replica holding the write lost it in power losses before write-back",
            "Kafka's docs: durability relies on replication, not fsync "
            "(log.flush.interval.messages)",
            True,
        ),
        Mechanism(
            "unclean-leader-election",
            "a replica outside the ISR was elected leader",
            "unclean.leader.election.enable (Jepsen's 2013 Kafka analysis)",
            False,
        ),
        Mechanism(
            "acks-leader-failure",
            "acknowledged by the leader alone (acks=0/1), which then lost leadership",
            "Kafka's docs on acks",
            False,
        ),
        Mechanism(
            "hw-truncation",
            "a follower truncated to its high watermark, then led without the write",
            "KIP-101",
            False,
        ),
        Mechanism(
            "epoch-truncation",
            "truncation by leader epoch without KIP-279's fix (fast leader failover)",
            "KIP-279",
            False,
        ),
        Mechanism(
            "stale-epoch-truncation",
            "truncation by leader epoch without KIP-320's fencing of stale leaders",
            "KIP-320",
            False,
        ),
        Mechanism(
            "unexplained",
            "no known mechanism explains it: a bug of the implementation",
            "-",
            False,
        ),
    )
}

_TRUNCATION_MECHANISM = {
    "high_watermark": "hw-truncation",
    "kip101": "epoch-truncation",
    "kip279": "stale-epoch-truncation",
}
"""The mechanism a truncation loss has under each truncation rule (none under kip320)."""


def mechanism_of(name: str) -> Mechanism:
    return MECHANISMS[name]


def _mechanism_json(name: str) -> dict[str, Any]:
    """A mechanism as an explanation's JSON names it."""
    m = MECHANISMS[name]
    return {
        "mechanism": name,
        "title": m.title,
        "reference": m.reference,
        "safe_configuration_exposed": m.safe,
    }


@attrs.frozen
class LossExplanation:
    """Lost acknowledged writes of one key that one mechanism explains."""

    key: str
    mechanism: str
    writes: int
    first_offset: int
    last_offset: int
    leader: int | None
    """The first leader without the writes (None when there was none)."""
    leader_epoch: int | None
    story: tuple[str, ...]

    def summary(self) -> str:
        m = MECHANISMS[self.mechanism]
        span = (
            f"offset {self.first_offset}"
            if self.first_offset == self.last_offset
            else f"offsets {self.first_offset}..{self.last_offset}"
        )
        who = (
            f"; first leader without them: b{self.leader} in epoch {self.leader_epoch}"
            if self.leader is not None
            else ""
        )
        return (
            f"{self.key}: {self.writes} write(s) at {span} by {self.mechanism} "
            f"({m.title}; {m.reference}){who}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            **_mechanism_json(self.mechanism),
            "writes": self.writes,
            "first_offset": self.first_offset,
            "last_offset": self.last_offset,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "story": list(self.story),
        }


@attrs.frozen
class DivergenceExplanation:
    """Offsets of one key that held two values (``inconsistent-offsets``), and the
    replica that kept records its leader did not have (``impl.timeline.Divergence``)."""

    key: str
    mechanism: str
    offsets: int
    """How many offsets of the key were read or acknowledged with two values."""
    first_offset: int
    last_offset: int
    follower: int
    """The replica that kept records its leader did not have."""
    leader: int
    leader_epoch: int
    """The leader it reconciled with, and the epoch it did so in."""
    story: tuple[str, ...]

    def summary(self) -> str:
        m = MECHANISMS[self.mechanism]
        return (
            f"{self.key}: {self.offsets} offset(s) with two values from {self.first_offset} "
            f"by {self.mechanism} ({m.title}; {m.reference}); b{self.follower} kept records "
            f"b{self.leader} did not have, reconciling in epoch {self.leader_epoch}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            **_mechanism_json(self.mechanism),
            "offsets": self.offsets,
            "first_offset": self.first_offset,
            "last_offset": self.last_offset,
            "follower": self.follower,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "story": list(self.story),
        }


def explain_divergences(
    inconsistent: Iterable[Sequence[Op]],
    history: Sequence[Op],
    events: Sequence[Event],
    *,
    truncation: str,
    topic: str = "t",
) -> list[DivergenceExplanation]:
    """Explain the offsets that held two values (``inconsistent``: the witnesses of
    ``inconsistent-offsets``, each the ops that read or acknowledged one offset) by the
    replicas' logs: a follower that reconciled with its leader and kept records the
    leader did not have (a `Divergence` of the cluster's ``events``, at or below the
    offset). Its mechanism is the truncation rule's gap (`_TRUNCATION_MECHANISM`; under
    KIP-320's rule a divergence is ``unexplained``: no known gap), unless the leader's
    record there was written in an epoch it led twice across an unclean shutdown
    (`_epoch_led_twice`): then it is that shutdown's, under every rule. A key whose offsets no
    divergence explains gets no explanation here: overwritten offsets also follow a leader
    elected without records others had (`explain_losses` tells that story)."""
    offsets: dict[str, list[int]] = {}
    for witness in inconsistent:
        at = _common_offset(witness)
        if at is not None:
            offsets.setdefault(str(witness[0].key), []).append(at)
    faults = _faults(history)
    explanations = []
    for key, found in sorted(offsets.items()):
        partition = _partition_of(key, topic)
        first = next(
            (
                e
                for e in events
                if isinstance(e, Divergence)
                and (e.topic, e.partition) == (topic, partition)
                and e.offset <= max(found)
            ),
            None,
        )
        if first is None:
            continue
        mine = [e for e in events if _partition(e) in (None, (topic, partition))]
        name = _epoch_led_twice(first, mine) or _TRUNCATION_MECHANISM.get(truncation, "unexplained")
        explanations.append(
            DivergenceExplanation(
                key,
                name,
                len(found),
                min(found),
                max(found),
                first.broker,
                first.leader,
                first.leader_epoch,
                _divergence_story(first, mine, faults),
            )
        )
    return explanations


def _epoch_led_twice(first: Divergence, events: Sequence[Event]) -> str | None:
    """The unclean-shutdown mechanism behind ``first`` when its leader's record at the
    diverging offset was written in an epoch the leader led twice: it led the epoch, lost
    the records from that offset on in a crash (a power loss, or a damaged disk), came back
    before any controller handled its failure and led the same epoch again from the shorter
    log (``_first_leader_without``). Two logs then share one epoch, and a follower holding
    the first one's records keeps them under every truncation rule, KIP-320's included:
    the epoch lookup cannot tell them apart. Kafka's safe configuration is exposed to this
    (KIP-966 closes it: a broker back from an unclean shutdown leaves the ISR). None when
    the epoch was led once."""
    epoch, leader, offset = first.leader_record_epoch, first.leader, first.offset
    led = [
        e.time
        for e in events
        if isinstance(e, Leadership)
        and e.broker == leader
        and e.leader_epoch == epoch
        and e.time <= first.time
    ]
    if len(led) < 2:
        return None
    between = [e for e in events if led[0] < e.time < led[-1]]
    crashes = [e for e in between if isinstance(e, Crash) and e.broker == leader]
    if not (crashes and _recovered_short(between, leader, first.topic, first.partition, offset)):
        return None
    alone = _isr_at(led[-1], events) == (leader,)
    return _crash_mechanism(any(e.power_loss for e in crashes), alone)


def _recovered_short(
    events: Sequence[Event], broker: int, topic: str, partition: int, offset: int
) -> bool:
    """Whether ``broker`` recovered, among ``events``, a log of ``partition`` ending at or
    before ``offset``: a crash took the record there."""
    return any(
        isinstance(e, Recovery)
        and e.broker == broker
        and (end := e.log_end(topic, partition)) is not None
        and end <= offset
        for e in events
    )


def _crash_mechanism(power_loss: bool, alone: bool) -> str:
    """The mechanism of a leader that lost records in a crash and led again: by a power
    loss (its unflushed page cache gone) or else a damaged disk, and as the only ISR member
    (KIP-966's last replica standing) or not."""
    if power_loss:
        return "last-replica-standing" if alone else "unclean-shutdown-leader"
    return "last-replica-disk-damage" if alone else "disk-damage-leader"


def _common_offset(witness: Sequence[Op]) -> int | None:
    """The offset an ``inconsistent-offsets`` witness is about: the first offset its ops
    (a send's acknowledged offset and value, a poll's records) give different values."""
    seen: dict[int, set[Any]] = {}
    for op in witness:
        value = op.value if isinstance(op.value, dict) else {}
        pairs = [(value["offset"], value.get("value"))] if type(value.get("offset")) is int else []
        pairs += [tuple(r) for r in value.get("records") or () if len(r) == 2]
        for offset, v in pairs:
            if type(offset) is int:
                seen.setdefault(offset, set()).add(repr(v))
    differing = [o for o, values in seen.items() if len(values) > 1]
    return min(differing) if differing else None


def _faults(history: Sequence[Op]) -> list[Op]:
    """The nemesis's ops; each fault is logged twice (invoked, then done with its
    targets): the last of each is kept."""
    done: dict[tuple[int, str], Op] = {}
    for op in history:
        if not op.is_client:
            done[(op.time, op.f)] = op
    return list(done.values())


def _divergence_story(
    first: Divergence, events: Sequence[Event], faults: Sequence[Op]
) -> tuple[str, ...]:
    """From the election of the epoch of the follower's diverging record to the
    divergence: the faults and cluster events that moved leadership in between."""
    start = next(
        (e.time for e in events if isinstance(e, Election) and e.leader_epoch == first.epoch),
        first.time - 30 * NS_PER_S,
    )
    return _told(_window(events, faults, start, first.time))


@attrs.frozen
class _Lost:
    key: str
    offset: int
    acked_at: int
    invoked_at: int
    read: bool = False


def explain_losses(
    lost: Iterable[Op],
    history: Sequence[Op],
    events: Sequence[Event],
    *,
    acks: str,
    truncation: str,
    topic: str = "t",
    read: bool = False,
    diverged: Sequence[DivergenceExplanation] = (),
) -> list[LossExplanation]:
    """Explain each lost acknowledged write (``lost``: the ``ok`` sends a complete final
    read did not return) from the run's ``history`` and the cluster's ``events``; writes
    that share a key, a mechanism and a first leader without them are explained once.

    ``read``: ``lost`` are records a poll returned (its time standing for the ``ok``) that
    the final read did not. A poll returns only what lies below the high watermark, so the
    record was committed when it was read, but the producer's acknowledgement is not
    known: its offset may have been written, acknowledged and cut away before, in an
    earlier leader epoch, and written again with this record.

    ``diverged``: the run's explained divergences (`explain_divergences`). A write no
    leader's failure explains, at an offset of its key that held two values, was replaced
    where the replicas' logs parted: its mechanism is the divergence's."""
    invoked: dict[Any, int] = {}
    invoke_time: dict[int, int] = {}
    for op in history:
        if op.is_client and op.f == "send":
            if op.type == "invoke":
                invoked[op.process] = op.time
            elif op.type == "ok":
                invoke_time[op.index] = invoked.get(op.process, op.time)
    writes = [
        _Lost(
            str(op.key),
            int(op.value["offset"]),
            op.time,
            invoke_time.get(op.index, op.time),
            read,
        )
        for op in lost
        if isinstance(op.value, dict) and isinstance(op.value.get("offset"), int)
    ]
    faults = _faults(history)
    groups: dict[tuple[Any, ...], list[tuple[_Lost, tuple[str, ...]]]] = {}
    for write in sorted(writes, key=lambda w: (w.key, w.offset)):
        partition = _partition_of(write.key, topic)
        mine = [e for e in events if _partition(e) in (None, (topic, partition))]
        name, root, story = _explain_one(write, mine, faults, acks, truncation, topic, partition)
        leader = root.broker if root is not None else None
        epoch = root.leader_epoch if root is not None else None
        parted = _diverged_at(write, diverged) if name == "unexplained" else None
        if parted is not None:
            name, leader, epoch, story = (
                parted.mechanism,
                parted.leader,
                parted.leader_epoch,
                parted.story,
            )
        groups.setdefault((write.key, name, leader, epoch), []).append((write, story))
    explanations = []
    for (key, name, leader, epoch), members in groups.items():
        offsets = [w.offset for w, _ in members]
        explanations.append(
            LossExplanation(
                key, name, len(members), min(offsets), max(offsets), leader, epoch, members[0][1]
            )
        )
    return sorted(explanations, key=lambda e: (e.key, e.first_offset))


def _diverged_at(
    write: _Lost, diverged: Sequence[DivergenceExplanation]
) -> DivergenceExplanation | None:
    """The divergence whose offsets with two values span the write's offset, if any."""
    return next(
        (
            d
            for d in diverged
            if d.key == write.key and d.first_offset <= write.offset <= d.last_offset
        ),
        None,
    )


def _partition_of(key: str, topic: str) -> int:
    prefix = f"{topic}-"
    if not key.startswith(prefix) or not key[len(prefix) :].isdigit():
        raise ValueError(f"key {key!r} is not a partition of topic {topic!r} ({prefix}N)")
    return int(key[len(prefix) :])


def _partition(event: Event) -> tuple[str, int] | None:
    """The partition an event is about; None for broker-wide events."""
    if isinstance(event, SessionExpiry | Crash | Recovery):
        return None
    return (event.topic, event.partition)


def _explain_one(
    write: _Lost,
    events: Sequence[Event],
    faults: Sequence[Op],
    acks: str,
    truncation: str,
    topic: str,
    partition: int,
) -> tuple[str, Leadership | None, tuple[str, ...]]:
    o = write.offset
    ack = _acknowledgement(write, events)
    root = _first_leader_without(write, ack, events)
    resumed = root is not None and _resumed(root, events)
    start = ack.time if ack is not None else write.invoked_at
    if root is None:
        story = _story(write, ack, None, events, faults, start, start + 60 * NS_PER_S)
        return "unexplained", None, story
    election = next(
        (e for e in events if isinstance(e, Election) and e.leader_epoch == root.leader_epoch),
        None,
    )
    story = _story(write, ack, root, events, faults, start, root.time)
    if resumed:
        # No election: the replica resumed an epoch it had led before its crash, so the
        # ISR that counts is the store's when it did (the one it had when it went down).
        election = None
    if election is not None and not election.clean:
        return "unclean-leader-election", root, story
    # Crashes count from the write's invocation: a follower that fetched the record and
    # lost power before the acknowledgement still counts for it (the leader goes by its
    # last fetch until the ISR shrinks), and loses it all the same.
    between = [e for e in events if write.invoked_at <= e.time <= root.time]
    recovered_short = _recovered_short(between, root.broker, topic, partition, o)
    crashes = [e for e in between if isinstance(e, Crash) and e.broker == root.broker]
    lost_power = recovered_short and any(e.power_loss for e in crashes)
    if recovered_short and crashes and not lost_power:
        # The process died with its page cache kept, yet recovery found the log shorter:
        # its disk was damaged (a cut segment, a corrupt batch recovery truncated at).
        isr = _isr_before(root, election, events, resumed)
        return _crash_mechanism(False, tuple(isr) == (root.broker,)), root, story
    if lost_power:
        holders = _holders_at(write, ack, events, root)
        if len(holders) > 1 and all(
            _recovered_short(between, b, topic, partition, o) for b in holders
        ):
            return "correlated-power-loss", root, story
        isr = _isr_before(root, election, events, resumed)
        return _crash_mechanism(True, tuple(isr) == (root.broker,)), root, story
    # The truncation may come before the acknowledgement: without KIP-320's fencing a
    # leader counts a fetch its follower sent before truncating (the follower's log end
    # as it was), advances the high watermark past what the follower still holds, and
    # acknowledges writes the follower has just cut away.
    cut = next(
        (
            e
            for e in events
            if isinstance(e, Truncation)
            and e.broker == root.broker
            and write.invoked_at <= e.time <= root.time
            and e.to_offset <= o < e.from_offset
        ),
        None,
    )
    truncated = cut is not None
    if cut is not None and truncation in _TRUNCATION_MECHANISM:
        if cut.time < start:
            story = _story(write, ack, root, events, faults, cut.time, root.time)
        return _TRUNCATION_MECHANISM[truncation], root, story
    if acks in ("0", "1") and not truncated:
        return "acks-leader-failure", root, story
    return "unexplained", root, story


def _first_leader_without(
    write: _Lost, ack: Ack | None, events: Sequence[Event]
) -> Leadership | None:
    """The first replica to lead without the write: in a later leader epoch than the one it
    was acknowledged in (epochs, not times, order the leaders: a deposed leader that has not
    heard of its successor may still acknowledge writes after the successor took over,
    Jepsen 2013), or the acknowledging leader itself, again in the same epoch, after it
    crashed and recovered a log that ends at or below the write. That happens when no
    controller handled its failure while it was down (the controller died with it, or none
    could reach ZooKeeper): the store still names it leader of that epoch, so the
    controller that sees it register again sends it the same LeaderAndIsr
    (``onBrokerStartup``), and it leads the epoch again with the shorter log."""
    o = write.offset
    written_epoch = ack.leader_epoch if ack is not None else None
    crashed = False
    for e in events:
        if ack is not None and e.time > ack.time and isinstance(e, Crash):
            crashed = crashed or e.broker == ack.broker
        if not isinstance(e, Leadership) or e.log_end_offset > o:
            continue
        if written_epoch is None:
            if e.time >= write.invoked_at:
                return e
        elif e.leader_epoch > written_epoch or (
            ack is not None
            and e.leader_epoch == written_epoch
            and e.broker == ack.broker
            and e.time > ack.time
            and crashed
        ):
            return e
    return None


def _resumed(root: Leadership, events: Sequence[Event]) -> bool:
    """Whether ``root`` leads an epoch it had already led before (``_first_leader_without``:
    back from a crash that no controller handled)."""
    return any(
        isinstance(e, Leadership)
        and e.broker == root.broker
        and e.leader_epoch == root.leader_epoch
        and e.time < root.time
        for e in events
    )


def _isr_before(
    root: Leadership, election: Election | None, events: Sequence[Event], resumed: bool
) -> tuple[int, ...]:
    """The ISR ``root`` was chosen from: the election's previous ISR, or, when it resumed
    its epoch without an election, the store's ISR at that moment (its last member)."""
    if resumed:
        return _isr_at(root.time, events)
    return tuple(election.previous_isr) if election is not None else ()


def _acknowledgement(write: _Lost, events: Sequence[Event]) -> Ack | None:
    """The leader's acknowledgement of the write: the last ``Ack`` covering its offset no
    later than the client saw the ``ok``. For a record a poll read (``write.read``), an
    ``Ack`` followed by a leader whose log ends at or below the offset, before the read,
    acknowledged another record: the offset was written again after that leader took
    over, and the record read is one of those later writes."""
    found = None
    for e in events:
        if e.time > write.acked_at:
            break
        if isinstance(e, Ack) and e.covers(write.offset):
            found = e
        elif write.read and isinstance(e, Leadership) and e.log_end_offset <= write.offset:
            found = None
    return found


def _isr_at(time: int, events: Sequence[Event]) -> tuple[int, ...]:
    """The partition's ISR in the store at ``time`` (``events``: one partition's)."""
    isr: tuple[int, ...] = ()
    for e in events:
        if e.time > time:
            break
        if isinstance(e, Election | IsrChange):
            isr = e.isr
    return isr


def _holders_at(
    write: _Lost, ack: Ack | None, events: Sequence[Event], root: Leadership
) -> list[int]:
    """The replicas in the ISR when the write was acknowledged (acks=all: each held it)."""
    return sorted(_isr_at(ack.time, events)) if ack is not None else [root.broker]


def _story(
    write: _Lost,
    ack: Ack | None,
    root: Leadership | None,
    events: Sequence[Event],
    faults: Sequence[Op],
    start: int,
    until: int,
) -> tuple[str, ...]:
    """The lines that tell how the write was lost, in time order: its acknowledgement, the
    faults and cluster events from then to the first leader without it, and the followers'
    truncations after."""
    acked_by = ""
    if ack is not None:
        isr = _isr_at(ack.time, events)
        acked_by = f" by b{ack.broker} in epoch {ack.leader_epoch} (ISR {list(isr)})"
    lines = [(write.acked_at, 0, f"write at offset {write.offset} acknowledged{acked_by}")]

    def finishing(e: Event) -> bool:
        # a follower's truncation after the first leader without the write, which it ends
        return (
            root is not None
            and isinstance(e, Truncation)
            and e.time > until
            and e.leader_epoch == root.leader_epoch
            and e.to_offset <= write.offset < e.from_offset
        )

    lines += _window(events, faults, start, until, also=finishing)
    return _told(lines)


def _window(
    events: Sequence[Event],
    faults: Sequence[Op],
    start: int,
    until: int,
    also: Callable[[Event], bool] | None = None,
) -> list[tuple[int, int, str]]:
    """A story's lines from ``start`` to ``until``: the faults (from 10 s before, when
    they began the trouble), then the cluster's events (acknowledgements left out), and
    the events ``also`` picks outside the window; each ``(time, rank, text)``."""
    margin = 10 * NS_PER_S
    lines = [
        (op.time, 1, f"nemesis: {op.f} {_short(op.value)}")
        for op in faults
        if start - margin <= op.time <= until and _interesting_fault(op)
    ]
    for e in events:
        if isinstance(e, Ack):
            continue
        if start <= e.time <= until or (also is not None and also(e)):
            text = _describe(e)
            if text:
                lines.append((e.time, 2, text))
    return lines


def _told(lines: list[tuple[int, int, str]]) -> tuple[str, ...]:
    """A story's lines in time order (at one time: the write, the faults, the events)."""
    lines.sort(key=lambda item: (item[0], item[1]))
    return tuple(f"{t / NS_PER_S:9.3f} s  {text}" for t, _, text in lines)


def _interesting_fault(op: Op) -> bool:
    value = op.value
    return not (isinstance(value, dict) and ("healed" in value or "skipped" in value))


def _short(value: Any, limit: int = 160) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe(e: Event) -> str:
    if isinstance(e, Election):
        leader = "no leader" if e.leader < 0 else f"b{e.leader} leads"
        how = "" if e.clean else " (UNCLEAN: outside the ISR)"
        return (
            f"controller: {leader} in epoch {e.leader_epoch}{how}, ISR {list(e.isr)} "
            f"(was {list(e.previous_isr)})"
        )
    if isinstance(e, IsrChange):
        return (
            f"b{e.leader} changes the ISR to {list(e.isr)} (was {list(e.previous_isr)}) "
            f"in epoch {e.leader_epoch}"
        )
    if isinstance(e, SessionExpiry):
        return f"controller: b{e.broker}'s session expired"
    if isinstance(e, Leadership):
        return (
            f"b{e.broker} becomes leader in epoch {e.leader_epoch} with log end "
            f"{e.log_end_offset}, HW {e.high_watermark}"
        )
    if isinstance(e, Truncation):
        return (
            f"b{e.broker} truncates its log {e.from_offset} -> {e.to_offset} "
            f"(following b{e.leader}, epoch {e.leader_epoch})"
        )
    if isinstance(e, Crash):
        if e.power_loss:
            lost = f"{e.unflushed_bytes} unflushed bytes lost"
            return f"b{e.broker} loses power ({lost}; {_logs_text(e.logs)})"
        return f"b{e.broker}'s process dies (page cache kept; {_logs_text(e.logs)})"
    if isinstance(e, Recovery):
        return f"b{e.broker} restarts and recovers {_logs_text(e.logs)}"
    if isinstance(e, Divergence):
        return (
            f"b{e.broker} reconciles with b{e.leader} in epoch {e.leader_epoch} to log end "
            f"{e.log_end_offset} and keeps a record b{e.leader} does not have: at offset "
            f"{e.offset} its batch is of epoch {e.epoch}, b{e.leader}'s of epoch "
            f"{e.leader_record_epoch}"
        )
    return ""


def _logs_text(logs: Logs) -> str:
    return ", ".join(f"{t}-{p} log end {end} HW {hw}" for t, p, end, hw in logs)


STORY_LINES = 24
"""Story lines printed per explanation (``results.json`` and ``kmodel replay`` keep all)."""


def explanation_lines(
    explanations: Sequence[LossExplanation | DivergenceExplanation], story: bool = True
) -> list[str]:
    """How each group of lost writes was lost, or how a key's offsets came to hold two
    values (`jepsen_py.explain`), for the terminal."""
    lines = []
    for e in explanations:
        m = MECHANISMS[e.mechanism]
        span = (
            f"offset {e.first_offset}"
            if e.first_offset == e.last_offset
            else f"offsets {e.first_offset}..{e.last_offset}"
        )
        what = (
            f"{e.writes} at {span}"
            if isinstance(e, LossExplanation)
            else f"{e.offsets} with two values at {span}"
        )
        lines.append(f"    {e.key}: {what}: {e.mechanism} ({m.title}; {m.reference})")
        if story:
            told = e.story[:STORY_LINES]
            lines.extend(f"      {line}" for line in told)
            if len(e.story) > len(told):
                lines.append(f"      ... {len(e.story) - len(told)} more in results.json")
    return lines
