"""A deterministic run of one consumer group: brokers hosting the coordinator, consumers as
members, a network, faults, all driven by one seed and logical time.

``GroupRun(config, seed).run()`` simulates ``config.duration_ns``: every consumer
subscribes to ``config.topic``; the coordinator is the leader of the group's
``__consumer_offsets`` partition (``coordinator_partition``; the partition's leader moves
on a ``coordinator-failover`` fault: the old broker unloads the group, the new one loads the
group's last stored state, what Kafka's ``GroupMetadata`` record held). Each consumer's
application polls every ``poll_interval_ns`` and commits its positions every
``commit_interval_ns``. The network delays each message (uniformly up to
``max_delay_ns``) and keeps each link in order (one TCP connection); what is sent to a
consumer is lost with the process it was sent to (a restarted consumer never reads its
previous incarnation's connections), and a consumer drops a response whose request it gave
up on (``impl.group.member``: correlation ids). Faults, drawn from the seed's ``faults``
stream every ``fault_interval_ns``:

- ``pause-consumer``: SIGSTOP a consumer for up to three session timeouts (the zombie:
  it resumes believing it owns its partitions);
- ``kill-consumer``: the consumer's process dies; it comes back later as a new member;
- ``leave`` / ``join``: a consumer closes (LeaveGroup) or subscribes again;
- ``coordinator-failover``: the leader of the group's ``__consumer_offsets`` partition moves.

What it checks (``Outcome``): every completed generation's assignment gives each subscribed
partition exactly one owner (``GenerationCompleted``); among members that completed the
current generation no partition is owned twice; no zombie's action is accepted: every
accepted OffsetCommit (``CommitAccepted``) names the group's generation and only partitions
the member owns in it, and no partition is committed by two members in one generation.

This harness stands for the coordinator's broker without the replication of
``__consumer_offsets`` itself (the stored group is kept by the run, as if the partition's
log were never lost). On the simulated cluster the same coordinator and members run in
``impl.world`` (``impl.group.hosting``); ``kmodel test --workload group`` runs this harness.
"""

from __future__ import annotations

import heapq
from typing import Any

import attrs

from impl.group.coordinator import GROUP_BUGS, Coordinator, CoordinatorConfig, StoredGroup
from impl.group.invariants import GroupInvariants, Outcome
from impl.group.member import Member, MemberConfig
from impl.group.messages import (
    NONE,
    FindCoordinator,
    FindCoordinatorResponse,
    GenerationCompleted,
)
from impl.group.placement import DEFAULT_OFFSETS_PARTITIONS, coordinator_partition
from impl.messages import Message
from impl.protocol import Effects
from impl.sim.clock import ms
from impl.sim.rng import SimRandom

__all__ = ["FAULTS", "GROUP_BUGS", "GroupRun", "GroupRunConfig", "Outcome"]

FAULTS = ("pause-consumer", "kill-consumer", "leave", "join", "coordinator-failover")


@attrs.frozen
class GroupRunConfig:
    brokers: int = 3
    consumers: int = 3
    topic: str = "t"
    partitions: int = 6
    group: str = "g"
    offsets_partitions: int = DEFAULT_OFFSETS_PARTITIONS
    assignor: str = "range"
    duration_ns: int = ms(120_000)
    session_timeout_ns: int = ms(6_000)
    max_poll_interval_ns: int = ms(20_000)
    heartbeat_interval_ns: int = ms(1_000)
    request_timeout_ns: int = ms(3_000)
    poll_interval_ns: int = ms(500)
    commit_interval_ns: int = ms(1_000)
    tick_interval_ns: int = ms(100)
    max_delay_ns: int = ms(300)
    slow_probability: float = 0.02
    """The chance that a message is slow (a retransmission, a congested link): its delay
    is drawn up to ``slow_delay_ns`` instead; later messages on the same connection wait
    behind it, those on a new connection (after a request timeout) do not."""
    slow_delay_ns: int = ms(10_000)
    fault_interval_ns: int = ms(4_000)
    faults: tuple[str, ...] = FAULTS
    bugs: frozenset[str] = attrs.field(default=frozenset(), converter=frozenset)

    def __attrs_post_init__(self) -> None:
        unknown = sorted(set(self.bugs) - GROUP_BUGS)
        if unknown:
            raise ValueError(f"unknown group --bug {unknown}; choose from {sorted(GROUP_BUGS)}")
        bad = sorted(set(self.faults) - set(FAULTS))
        if bad:
            raise ValueError(f"unknown group faults {bad}; choose from {list(FAULTS)}")


class GroupRun:
    def __init__(self, config: GroupRunConfig, seed: int) -> None:
        self.config = config
        self.seed = seed
        rng = SimRandom(seed)
        self.net_rng = rng.split("network")
        self.fault_rng = rng.split("faults")
        self.now = 0
        self._queue: list[tuple[int, int, str, Any]] = []
        self._seq = 0
        self._link_free: dict[tuple[str, str, int], int] = {}
        self.brokers = [f"b{i}" for i in range(1, config.brokers + 1)]
        check = "no_generation_check" not in config.bugs
        self.coordinators = {
            b: Coordinator(b, CoordinatorConfig(check_generation=check)) for b in self.brokers
        }
        self.offsets_partition = coordinator_partition(config.group, config.offsets_partitions)
        self.leader = self.brokers[self.offsets_partition % len(self.brokers)]
        self.stored: StoredGroup | None = None
        self.coordinators[self.leader].load(config.group, None, 0)
        self.paused: dict[str, int] = {}
        self.dead: set[str] = set()
        self.lost_with_process = 0
        """Messages dropped on reaching a restarted consumer: they were sent to its previous
        process, whose connections died with it."""
        self.history: list[dict[str, Any]] = []
        self.invariants = GroupInvariants(
            config.topic, config.partitions, config.assignor == "cooperative-sticky"
        )
        self.outcome = self.invariants.outcome
        self.positions: dict[tuple[str, int], int] = {}
        self._incarnation: dict[str, int] = {}
        self.members: dict[str, Member] = {}
        for i in range(1, config.consumers + 1):
            self._start_member(f"c{i}")
        for b in self.brokers:
            self._at(0, "tick", b)
        if config.faults:
            self._at(config.fault_interval_ns, "fault", "")

    # ------------------------------------------------------------------ plumbing

    def _at(self, at: int, kind: str, arg: Any) -> None:
        heapq.heappush(self._queue, (at, self._seq, kind, arg))
        self._seq += 1

    def _member_config(self) -> MemberConfig:
        c = self.config
        return MemberConfig(
            group=c.group,
            session_timeout_ns=c.session_timeout_ns,
            max_poll_interval_ns=c.max_poll_interval_ns,
            heartbeat_interval_ns=c.heartbeat_interval_ns,
            request_timeout_ns=c.request_timeout_ns,
            assignor=c.assignor,
        )

    def _start_member(self, name: str) -> None:
        incarnation = self._incarnation.get(name, 0)
        self._incarnation[name] = incarnation + 1
        index = int(name[1:])
        member = Member(
            name,
            self._member_config(),
            bootstrap=lambda: self.brokers[0],
            metadata=lambda: {self.config.topic: self.config.partitions},
            process=index + 100 * incarnation,
        )
        self.members[name] = member
        member.subscribe((self.config.topic,), self.now)
        self._collect(member)
        self._at(self.now, "poll", (name, incarnation))
        self._at(self.now, "tick", (name, incarnation))

    def _send(self, src: str, effects: Effects) -> None:
        for note in effects.notes:
            self._observe(note)
        conn = self.members[src].connection if src in self.members else 0
        for dst, msg in effects.sends:
            error = getattr(msg, "error", NONE)
            if error != NONE:
                self.outcome.errors[error] = self.outcome.errors.get(error, 0) + 1
            rng, c = self.net_rng, self.config
            slow = rng.chance(c.slow_probability)
            delay = 1 + int(rng.random() * (c.slow_delay_ns if slow else c.max_delay_ns))
            link = (src, dst, conn)
            at = max(self.now + delay, self._link_free.get(link, 0))
            self._link_free[link] = at
            self._at(at, "deliver", (src, dst, msg, self._incarnation.get(dst, 0)))

    def _collect(self, member: Member) -> None:
        for op in member.history:
            self.history.append({"index": len(self.history), **op})
        member.history.clear()

    def _running(self, name: str) -> bool:
        return name not in self.paused and name not in self.dead

    # ------------------------------------------------------------------ the run

    def run(self) -> Outcome:
        end = self.config.duration_ns
        while self._queue and self._queue[0][0] <= end:
            at, _, kind, arg = heapq.heappop(self._queue)
            self.now = at
            if kind == "deliver":
                src, dst, msg, incarnation = arg
                if dst in self.dead:
                    continue
                if self._incarnation.get(dst, 0) != incarnation:
                    self.lost_with_process += 1  # its connection died with that process
                    continue
                if dst in self.paused:  # SIGSTOP: the socket buffers it until resumed
                    self._at(self.paused[dst], "deliver", arg)
                    continue
                self._deliver(src, dst, msg)
            elif kind == "tick":
                name = arg if isinstance(arg, str) else arg[0]
                if name in self.dead or (
                    isinstance(arg, tuple) and self._incarnation[name] != arg[1] + 1
                ):
                    continue  # a dead process's timers are gone
                if name in self.paused:
                    self._at(self.paused[name], "tick", arg)
                    continue
                self._tick(name)
                self._at(at + self.config.tick_interval_ns, "tick", arg)
            elif kind == "poll":
                self._poll(*arg)
            elif kind == "fault":
                self._fault()
                self._at(at + self.config.fault_interval_ns, "fault", "")
            elif kind == "resume":
                self.paused.pop(arg, None)
            elif kind == "resubscribe":
                member = self.members[arg]
                if self._running(arg) and not member.topics:
                    member.subscribe((self.config.topic,), self.now)
                    self._collect(member)
            elif kind == "restart":
                self.dead.discard(arg)
                self._start_member(arg)
            self._check_beliefs()
        return self.outcome

    def _deliver(self, src: str, dst: str, msg: Message) -> None:
        if dst in self.coordinators:
            if isinstance(msg, FindCoordinator):
                answer = FindCoordinatorResponse(msg.group, NONE, self.leader, msg.correlation)
                self._send(dst, _one(src, answer))
                return
            coordinator = self.coordinators[dst]
            effects = coordinator.step(src, msg, self.now)
            self._store(coordinator)
            self._send(dst, effects)
            return
        member = self.members[dst]
        effects = member.step(src, msg, self.now)
        self._collect(member)
        self._send(dst, effects)

    def _tick(self, name: str) -> None:
        if name in self.coordinators:
            coordinator = self.coordinators[name]
            effects = coordinator.tick(self.now)
            self._store(coordinator)
        else:
            member = self.members[name]
            effects = member.tick(self.now)
            self._collect(member)
        self._send(name, effects)

    def _poll(self, name: str, incarnation: int) -> None:
        if self._incarnation.get(name) != incarnation + 1 or name in self.dead:
            return
        if name in self.paused:
            self._at(self.paused[name], "poll", (name, incarnation))
            return
        member = self.members[name]
        effects = member.poll(self.now)
        for tp in member.owned:  # the records read since the last poll
            self.positions[tp] = self.positions.get(tp, 0) + 1
        if self.now // self.config.commit_interval_ns != (
            (self.now - self.config.poll_interval_ns) // self.config.commit_interval_ns
        ):
            effects.extend(member.commit(self.now, lambda tp: self.positions.get(tp, 0)))
        self._collect(member)
        self._send(name, effects)
        self._at(self.now + self.config.poll_interval_ns, "poll", (name, incarnation))

    def _store(self, coordinator: Coordinator) -> None:
        if self.config.group in coordinator.hosted and self.config.group in coordinator.stored:
            self.stored = coordinator.stored[self.config.group]

    # ------------------------------------------------------------------ faults

    def _fault(self) -> None:
        rng = self.fault_rng
        kind = self.config.faults[int(rng.random() * len(self.config.faults))]
        names = sorted(self.members)
        name = names[int(rng.random() * len(names))]
        span = 1 + int(rng.random() * 3 * self.config.session_timeout_ns)
        done = False
        if kind == "pause-consumer" and self._running(name):
            self.paused[name] = self.now + span
            self._at(self.now + span, "resume", name)
            done = True
        elif kind == "kill-consumer" and self._running(name):
            self.dead.add(name)
            self._at(self.now + span, "restart", name)
            done = True
        elif kind == "leave" and self._running(name) and self.members[name].topics:
            member = self.members[name]
            self._send(name, member.close(self.now))
            self._collect(member)
            self._at(self.now + span, "resubscribe", name)
            done = True
        elif kind == "join":
            idle = [n for n in names if self._running(n) and not self.members[n].topics]
            if idle:
                name = idle[0]
                self.members[name].subscribe((self.config.topic,), self.now)
                self._collect(self.members[name])
                done = True
        elif kind == "coordinator-failover":
            others = [b for b in self.brokers if b != self.leader]
            new = others[int(rng.random() * len(others))]
            old, self.leader = self.leader, new
            self._send(old, self.coordinators[old].unload(self.config.group))
            self.coordinators[new].load(self.config.group, self.stored, self.now)
            name = f"{old}->{new}"
            done = True
        if done:
            self.outcome.faults[kind] = self.outcome.faults.get(kind, 0) + 1
            self.history.append(
                {
                    "index": len(self.history),
                    "process": "nemesis",
                    "type": "info",
                    "f": kind,
                    "value": name,
                    "time": self.now,
                }
            )

    # ------------------------------------------------------------------ checks

    def _observe(self, note: Message) -> None:
        started = None
        if isinstance(note, GenerationCompleted):
            started = self.coordinators[note.coordinator].groups[note.group].rebalance_started
        self.invariants.observe(note, started)

    def _check_beliefs(self) -> None:
        g = self.coordinators[self.leader].groups.get(self.config.group)
        alive = [m for name, m in sorted(self.members.items()) if name not in self.dead]
        self.invariants.check_beliefs(g, alive, self.now)


def _one(dst: str, msg: Message) -> Effects:
    effects = Effects()
    effects.send(dst, msg)
    return effects
