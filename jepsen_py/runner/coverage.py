"""Coverage of a fault-injection run: which ISR/leader situations it reached, and which
``spec.replication`` actions its cluster took (issue 21, coverage feedback).

A swarm (``kmodel test --runs N``) is worth the situations its runs drive the protocol into:
an ISR shrunk to one replica, an unclean election, a follower truncating records a leader
had acknowledged, a zombie controller fenced. `coverage_of` reads them from what the
simulated world recorded (``impl.timeline``: elections, ISR changes, leaderships,
truncations, acknowledgements, crashes, recoveries, session expiries), from the
controllers' figures (``World.controller_figures``: failovers, brain splits, stale requests
fenced by ``STALE_CONTROLLER_EPOCH``) and from the history (client requests fenced by
``FENCED_LEADER_EPOCH``/``UNKNOWN_LEADER_EPOCH``, KIP-320). A produce refused with
``NOT_ENOUGH_REPLICAS`` is no situation here: the producer retries it until its delivery
timeout, so the history only shows the timeout.

Spec actions: the refinement check (``impl.abstraction.check_step``) needs the cluster
observed after every single step, which a whole run does not give (the driver advances many
deliveries at once); so an action counts as reached when the event that is its
implementation's counterpart occurred (`ACTION_EVENTS`). ``flush`` has no event (the OS's
write-back and ``log.flush.interval.*`` are silent): it is never reported.

Everything here is a function of the run's events and history, so the same seed gives the
same coverage on any engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from impl.timeline import (
    Ack,
    Crash,
    Election,
    Event,
    IsrChange,
    Leadership,
    Recovery,
    SessionExpiry,
    Truncation,
)
from jepsen_py.history.op import Op
from jepsen_py.runner.config import TestConfig

MAX_ISR = 5
"""ISR sizes get a situation each up to this (``isr=1`` .. ``isr=5``)."""

EPOCH_BUCKETS = (2, 5, 10)
"""``epoch>=N``: some partition's leader epoch reached N (leadership churn)."""

SITUATIONS: dict[str, str] = {
    **{
        f"isr={n}": f"a partition's ISR had {n} member(s) after an election or ISR change"
        for n in range(1, MAX_ISR + 1)
    },
    "leaderless": "an election left a partition without a leader (its whole ISR was gone)",
    "leader-change": "a partition's leader moved to another broker",
    **{f"epoch>={n}": f"a partition's leader epoch reached {n}" for n in EPOCH_BUCKETS},
    "elected-alone": "a leader was elected with an ISR of itself only",
    "unclean-election": "a leader was elected from outside the ISR "
    "(unclean.leader.election.enable)",
    "isr-shrink": "a leader shrank its ISR (replica.lag.time.max.ms, AlterPartition)",
    "isr-expand": "a leader took a caught-up follower back into its ISR",
    "ack-at-min-isr": "a write was acknowledged while its partition's ISR, as last recorded, "
    "had exactly min.insync.replicas members",
    "ack-below-min-isr": "a write was acknowledged while its partition's ISR, as last "
    "recorded, had fewer than min.insync.replicas members (acks=0/1; with acks=all, a "
    "leader acking on the ISR it holds before it learns that a shrink was committed)",
    "ack-isr=1": "a write was acknowledged while its partition's ISR was the leader alone",
    "truncation": "a follower truncated its log (leader epoch / high watermark truncation)",
    "acked-truncated": "a follower truncated records at offsets a leader had acknowledged",
    "crash": "a broker process died",
    "power-loss": "a crash lost unflushed bytes (the machine lost power)",
    "log-shrunk-by-crash": "a broker recovered a shorter log than it had before its crash",
    "session-expiry": "the controller let a broker's session expire",
    "controller-failover": "a second controller was elected",
    "brain-split": "a controller was elected while a zombie predecessor still acted",
    "stale-controller-fenced": "a broker rejected a zombie controller's request "
    "(STALE_CONTROLLER_EPOCH)",
    "stale-controller-applied": "a broker applied a zombie controller's request (that fence off)",
    "client-fenced-epoch": "a client request was fenced by its leader epoch "
    "(FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH, KIP-320)",
}
"""Every situation, in the order tables list them, with what it means."""

ACTION_EVENTS: dict[str, str] = {
    "controller_elect": "a clean election that kept the ISR",
    "controller_shrink_isr": "an election that shrank the ISR (or left the partition leaderless)",
    "controller_failover": "a clean election that took the old leader out of the ISR",
    "unclean_elect": "an unclean election",
    "become_leader": "a replica became leader",
    "leader_write": "a leader acknowledged a write",
    "fetch": "an acks=all write acknowledged with followers in the ISR",
    "become_follower": "a follower truncated on becoming follower",
    "shrink_isr_lagging": "a leader shrank its ISR",
    "expand_isr_caught_up": "a leader expanded its ISR",
    "crash": "a broker crashed",
    "restart": "a broker recovered its logs and started",
}
"""The spec's actions reached through their implementation events (module docstring).
``become_follower`` stands for the spec's ``become_follower`` and ``become_follower_fenced``
(KIP-320 truncation); ``flush`` has no event."""

_FENCED = frozenset({"FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH"})


@attrs.frozen
class Coverage:
    """What one run reached: situations (`SITUATIONS`) and spec actions (`ACTION_EVENTS`),
    each in its table's order."""

    situations: tuple[str, ...]
    actions: tuple[str, ...]

    def to_json(self) -> dict[str, list[str]]:
        return {"situations": list(self.situations), "actions": list(self.actions)}

    @property
    def reached(self) -> frozenset[str]:
        """Situations and actions together (actions prefixed ``action:``)."""
        return frozenset(self.situations) | frozenset(f"action:{a}" for a in self.actions)


def coverage_of(
    config: TestConfig,
    events: Iterable[Event],
    history: Sequence[Op],
    controller: Mapping[str, int],
) -> Coverage:
    """The situations and actions one run reached (see the module docstring)."""
    found: set[str] = set()
    actions: set[str] = set()
    isr: dict[tuple[str, int], tuple[int, ...]] = {}
    leader: dict[tuple[str, int], int] = {}
    acked: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
    crashed_end: dict[tuple[int, str, int], int] = {}
    for event in events:
        if isinstance(event, Election):
            key = (event.topic, event.partition)
            isr[key] = event.isr
            _isr_size(found, event.isr)
            if event.leader_epoch >= 1:
                found.update(f"epoch>={n}" for n in EPOCH_BUCKETS if event.leader_epoch >= n)
            before = leader.get(key)
            if event.leader < 0:
                found.add("leaderless")
                actions.add("controller_shrink_isr")
            elif not event.clean:
                found.add("unclean-election")
                actions.add("unclean_elect")
            elif set(event.isr) < set(event.previous_isr):
                failed = before is not None and before >= 0 and before not in event.isr
                actions.add("controller_failover" if failed else "controller_shrink_isr")
            else:
                actions.add("controller_elect")
            if event.leader >= 0 and len(event.isr) == 1:
                found.add("elected-alone")
            if before is not None and before >= 0 and event.leader >= 0 and before != event.leader:
                found.add("leader-change")
            leader[key] = event.leader
        elif isinstance(event, IsrChange):
            key = (event.topic, event.partition)
            isr[key] = event.isr
            _isr_size(found, event.isr)
            if len(event.isr) < len(event.previous_isr):
                found.add("isr-shrink")
                actions.add("shrink_isr_lagging")
            elif len(event.isr) > len(event.previous_isr):
                found.add("isr-expand")
                actions.add("expand_isr_caught_up")
        elif isinstance(event, Leadership):
            actions.add("become_leader")
        elif isinstance(event, Ack):
            key = (event.topic, event.partition)
            actions.add("leader_write")
            size = len(isr.get(key, ()))
            if size == config.min_isr:
                found.add("ack-at-min-isr")
            if size < config.min_isr:
                found.add("ack-below-min-isr")
            if size == 1:
                found.add("ack-isr=1")
            if config.acks == "all" and size > 1:
                actions.add("fetch")
            acked.setdefault(key, []).append(
                (event.leader_epoch, event.base_offset, event.base_offset + event.count)
            )
        elif isinstance(event, Truncation):
            found.add("truncation")
            actions.add("become_follower")
            key = (event.topic, event.partition)
            if any(
                epoch < event.leader_epoch and start < event.from_offset and event.to_offset < end
                for epoch, start, end in acked.get(key, ())
            ):
                found.add("acked-truncated")
        elif isinstance(event, Crash):
            found.add("crash")
            actions.add("crash")
            if event.power_loss and event.unflushed_bytes > 0:
                found.add("power-loss")
            for topic, partition, end, _ in event.logs:
                crashed_end[(event.broker, topic, partition)] = end
        elif isinstance(event, Recovery):
            actions.add("restart")
            for topic, partition, end, _ in event.logs:
                before_end = crashed_end.pop((event.broker, topic, partition), None)
                if before_end is not None and end < before_end:
                    found.add("log-shrunk-by-crash")
        elif isinstance(event, SessionExpiry):
            found.add("session-expiry")
    if controller.get("controller_elections", 0) > 1:
        found.add("controller-failover")
    if controller.get("brain_splits", 0) > 0:
        found.add("brain-split")
    if controller.get("stale_controller_rejected", 0) > 0:
        found.add("stale-controller-fenced")
    if controller.get("stale_controller_applied", 0) > 0:
        found.add("stale-controller-applied")
    for op in history:
        failed = op.is_client and op.type == "fail" and isinstance(op.value, dict)
        if failed and op.value.get("error") in _FENCED:
            found.add("client-fenced-epoch")
    return Coverage(
        situations=tuple(name for name in SITUATIONS if name in found),
        actions=tuple(name for name in ACTION_EVENTS if name in actions),
    )


def _isr_size(found: set[str], members: tuple[int, ...]) -> None:
    if 1 <= len(members) <= MAX_ISR:
        found.add(f"isr={len(members)}")


def possible(config: TestConfig | None = None) -> tuple[str, ...]:
    """The situations and actions (``action:NAME``) a run of ``config`` can reach, in table
    order: no ISR larger than the brokers, no unclean election with it off, no zombie
    request applied with every fence on (None: all of them)."""
    names = [*SITUATIONS, *(f"action:{name}" for name in ACTION_EVENTS)]
    if config is None:
        return tuple(names)
    ruled_out = {f"isr={n}" for n in range(config.brokers + 1, MAX_ISR + 1)}
    if not config.unclean:
        ruled_out |= {"unclean-election", "action:unclean_elect"}
    if not config.bugs:
        ruled_out.add("stale-controller-applied")
    return tuple(name for name in names if name not in ruled_out)


def coverage_table(
    reached: Iterable[Coverage], config: TestConfig | None = None
) -> list[tuple[str, int]]:
    """Per situation and per action (``action:NAME``) ``config`` can reach (`possible`), in
    table order, how many of the runs reached it (zeros included: what no run reached is
    the point of the table; anything reached is listed, possible or not)."""
    runs = [c.reached for c in reached]
    counts = {name: sum(name in r for r in runs) for name in possible()}
    allowed = set(possible(config))
    return [(name, n) for name, n in counts.items() if name in allowed or n]


def coverage_json(reached: Iterable[Coverage], config: TestConfig | None = None) -> dict[str, Any]:
    """`coverage_table` as JSON: ``{"situation": runs, ...}`` plus how many were reached."""
    table = coverage_table(reached, config)
    return {
        "runs_per_situation": dict(table),
        "reached": sum(1 for _, n in table if n),
        "possible": len(table),
    }


__all__ = [
    "ACTION_EVENTS",
    "EPOCH_BUCKETS",
    "MAX_ISR",
    "SITUATIONS",
    "Coverage",
    "coverage_json",
    "coverage_of",
    "coverage_table",
    "possible",
]
