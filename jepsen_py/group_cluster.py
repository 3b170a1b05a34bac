"""``kmodel test --workload group`` on the simulated cluster (issues 18 and 19): a consumer
group reading a topic that a producer writes, on ``impl.cluster.Cluster`` with
``__consumer_offsets``, under faults of the brokers (the coordinator's among them) and of
the consumers.

``GroupClusterRun(config, seed).run()``:

- the cluster is created with the topic ``t`` (``partitions``) and ``__consumer_offsets``
  (``offsets_partitions``; ``unclean.leader.election.enable`` and ``min.insync.replicas``
  apply to it as to every topic); its consumers form the group ``group``
  (``impl.group.hosting``), each a ``GroupConsumer`` (``impl.group.consumer``) that reads
  what it is assigned and commits as ``--commit`` says;
- producer ``p1`` sends a new integer (unique in the run) every ``send_interval_ns`` with
  acks=all, round robin over the partitions; every consumer's application polls every
  ``poll_interval_ns``;
- every ``fault_interval_ns`` the nemesis (``jepsen_py.nemesis``) starts a fault drawn from
  ``faults`` (the seed's ``faults`` stream), or ends the one running: ``pause-consumer``,
  ``kill-consumer`` and ``leave-consumer`` (a consumer closes, LeaveGroup, and subscribes
  again at the stop), ``kill-coordinator`` and ``pause-coordinator`` (``kill`` and
  ``pause`` of the broker leading the group's ``__consumer_offsets`` partition),
  ``late-commit`` (a consumer's OffsetCommit delivered after the group moved on, see
  ``LATE_COMMIT``), ``pause-partition`` (a consumer pauses one of its partitions:
  back-pressure, ``KafkaConsumer.pause``; resumed at the stop) and ``fail-processing`` (a
  consumer's record handler throws on some batches until the stop, and the application
  seeks back to its committed offset: ``KafkaConsumer.seek``), and any fault of the Kafka
  workload's catalogue by name (``kill``, ``pause``, ``partition``, ...);
- every ``monitor_interval_ns`` on average (each gap drawn from the seed's ``monitor``
  stream, between half and one and a half of it) an admin reads the group's committed
  offsets from the coordinator, as ``kafka-consumer-groups.sh --describe`` and consumer-lag
  monitors do: a ``fetch-offsets`` op of process ``monitor``, ``ok`` with what the
  coordinator answered or ``fail`` with its error (``COORDINATOR_LOAD_IN_PROGRESS`` while
  a new coordinator reads the partition). The delivery checker holds these reads to every
  commit acknowledged before them (``commit-regression``), so a coordinator that answers
  before it finished loading (``--bug fetch_before_load``) is caught whenever a read falls
  in the load;
- after ``duration_ns`` every fault is healed, the consumers go on for ``recovery_ns``, and
  a final OffsetFetch (an admin's, handed to the coordinator's broker directly) reads the
  group's committed offsets: the ``fetch-offsets`` op with ``"final": true``.

What is checked as it runs (``impl.group.invariants``): each completed generation's
assignment is a partition of the subscribed partitions, no two members stable in the
current generation own a partition, no zombie's commit is accepted. The delivery verdict
(lost, duplicated, commit regression) is the delivery checker's, reading the history
(``docs/history-format.md``); this module reports counts only: records processed,
commits by outcome, acknowledged commits above the final committed offset.
"""

from __future__ import annotations

import contextlib
from typing import Any

import attrs

from impl.cluster import Cluster, ClusterConfig
from impl.group.consumer import ConsumerApp
from impl.group.coordinator import GROUP_BUGS
from impl.group.invariants import GroupInvariants
from impl.group.member import MemberConfig
from impl.group.messages import (
    COORDINATOR_NOT_AVAILABLE,
    NO_OFFSET,
    NONE,
    GenerationCompleted,
    OffsetCommit,
    OffsetFetch,
)
from impl.group.messages import OffsetFetchResponse as _OffsetFetchResponse
from impl.group.offsets_refinement import OffsetsRefinement
from impl.group.placement import CONSUMER_OFFSETS
from impl.protocol import NO_LEADER
from impl.sim.clock import ms
from jepsen_py.fault_verbs import fault_ops
from jepsen_py.nemesis import CATALOGUE, Nemesis, network_for
from jepsen_py.workload import record_key_for

__all__ = [
    "APPLICATION_FAULTS",
    "COORDINATOR_FAULTS",
    "GROUP_CLUSTER_FAULTS",
    "HARNESS_FAULTS",
    "LATE_COMMIT",
    "GroupClusterConfig",
    "GroupClusterRun",
]

COORDINATOR_FAULTS = {"kill-coordinator": "kill", "pause-coordinator": "pause"}
"""Faults aimed at the group coordinator's broker -> the catalogue fault performed on it."""
LATE_COMMIT = "late-commit"
"""A consumer's OffsetCommit delivered late: the request it would send now is held and
reaches the coordinator only after the group has moved to a later generation (a request
left on a connection the client gave up on, as the harness's slow messages); its answer is
lost with that connection. The zombie's commit that the generation check must refuse (and
does: delivered only once the group's generation moved past the request's, it changes
nothing with the check on; at the heal one still held is dropped)."""
PAUSE_PARTITION = "pause-partition"
FAIL_PROCESSING = "fail-processing"
APPLICATION_FAULTS = (PAUSE_PARTITION, FAIL_PROCESSING)
"""Faults of a consumer's application, each a start/stop pair on one running consumer
that is stable and owns a partition: ``pause-partition`` pauses one of its partitions
(``KafkaConsumer.pause``: back-pressure; the member stays in the group) and the stop resumes
it if it is still assigned and paused (a rebalance drops the pause); ``fail-processing``
makes its record handler throw on one batch in ``ConsumerApp.fail_every`` until the stop, the
application seeking the partition back to its committed offset each time
(``KafkaConsumer.seek``)."""
HARNESS_FAULTS = frozenset({LATE_COMMIT, *APPLICATION_FAULTS})
"""The group workload's faults that are not the catalogue's (nor aimed at the coordinator):
performed by this harness."""
GROUP_CLUSTER_FAULTS = (
    "pause-consumer",
    "kill-consumer",
    "leave-consumer",
    "kill-coordinator",
    "pause-coordinator",
    "partition",
    "kill",
    "late-commit",
    PAUSE_PARTITION,
    FAIL_PROCESSING,
)
"""``--nemesis all`` with ``--workload group``."""
TOPIC = "t"
GROUP = "group"
MONITOR = "monitor"
"""The history process of the offsets monitor's reads."""


@attrs.frozen
class GroupClusterConfig:
    brokers: int = 3
    consumers: int = 3
    partitions: int = 6
    offsets_partitions: int = 5
    """``offsets.topic.num.partitions`` (Kafka's default is 50; fewer replicas to simulate)."""
    min_isr: int = 2
    unclean: bool = False
    commit: str = "after-process"
    auto_offset_reset: str = "earliest"
    assignor: str = "range"
    duration_ns: int = ms(60_000)
    recovery_ns: int = ms(20_000)
    fault_interval_ns: int = ms(8_000)
    """Longer than ``session.timeout.ms``: a consumer killed or paused by one fault is
    expired before the next one brings it back (its partitions move, it is a zombie)."""
    poll_interval_ns: int = ms(200)
    send_interval_ns: int = ms(100)
    session_timeout_ns: int = ms(6_000)
    max_poll_interval_ns: int = ms(20_000)
    heartbeat_interval_ns: int = ms(1_000)
    request_timeout_ns: int = ms(3_000)
    monitor_interval_ns: int = ms(1_000)
    """The mean gap between the offsets monitor's reads (0: no monitor). The gaps are drawn
    at random so that the reads fall at any phase of the faults' timers, not on a grid."""
    faults: tuple[str, ...] = GROUP_CLUSTER_FAULTS
    bugs: frozenset[str] = attrs.field(default=frozenset(), converter=frozenset)
    refinement: bool = False
    """Check ``spec.offsets``' properties on the abstraction of the group after every event
    (``impl.group.offsets_refinement``): its violations join the outcome's."""

    def __attrs_post_init__(self) -> None:
        unknown = sorted(set(self.bugs) - GROUP_BUGS)
        if unknown:
            raise ValueError(f"unknown group --bug {unknown}; choose from {sorted(GROUP_BUGS)}")
        bad = [
            f
            for f in self.faults
            if f not in COORDINATOR_FAULTS and f not in CATALOGUE and f not in HARNESS_FAULTS
        ]
        if bad:
            raise ValueError(
                f"unknown group faults {bad}; choose from {', '.join(GROUP_CLUSTER_FAULTS)} "
                "or any fault of `kmodel test --list-faults`"
            )
        if self.monitor_interval_ns < 0:
            raise ValueError(
                f"the offsets monitor's interval must be 0 (off) or positive, not "
                f"{self.monitor_interval_ns} ns"
            )
        ConsumerApp(commit=self.commit, auto_offset_reset=self.auto_offset_reset)

    def cluster_config(self) -> ClusterConfig:
        return ClusterConfig(
            brokers=self.brokers,
            topic=TOPIC,
            partitions=self.partitions,
            min_insync_replicas=self.min_isr,
            unclean=self.unclean,
            producers=1,
            consumers=self.consumers,
            offsets_partitions=self.offsets_partitions,
            group=GROUP,
            bugs=self.bugs,
            network=network_for([COORDINATOR_FAULTS.get(f, f) for f in self.faults]),
            group_member=MemberConfig(
                group=GROUP,
                session_timeout_ns=self.session_timeout_ns,
                max_poll_interval_ns=self.max_poll_interval_ns,
                heartbeat_interval_ns=self.heartbeat_interval_ns,
                request_timeout_ns=self.request_timeout_ns,
                assignor=self.assignor,
            ),
            consumer_app=ConsumerApp(
                commit=self.commit,
                auto_offset_reset=self.auto_offset_reset,
                request_timeout_ns=self.request_timeout_ns,
            ),
        )


class GroupClusterRun:
    """One seeded run (see the module docstring)."""

    def __init__(self, config: GroupClusterConfig, seed: int) -> None:
        self.config = config
        self.seed = seed
        self.cluster = Cluster(config.cluster_config(), seed)
        assert self.cluster.groups is not None
        self.host = self.cluster.groups
        self.nemesis = Nemesis(self.cluster, self.cluster.fault_rng)
        self.invariants = GroupInvariants(
            TOPIC, config.partitions, config.assignor == "cooperative-sticky"
        )
        self.faults: dict[str, int] = {}
        self._active: tuple[str, str] | None = None
        """The fault running: (name, the op that stops it)."""
        self._notes_seen = 0
        self.final: dict[str, int | None] | None = None
        self._keys = [record_key_for(p, config.partitions) for p in range(config.partitions)]
        self._t = 0
        self._value = 0
        self._next_fault = config.fault_interval_ns
        self._monitor_rng = self.cluster.rng.split("monitor")
        self._next_monitor = self._monitor_gap()
        self._late: tuple[str, OffsetCommit] | None = None
        """late-commit: (consumer, the request it sent) held back."""
        self.refinement = (
            OffsetsRefinement(
                GROUP,
                TOPIC,
                config.partitions,
                at_least_once=config.commit != "before-process",
            )
            if config.refinement
            else None
        )
        self._app_fault: tuple[str, str, tuple[str, int] | None] | None = None
        """The application fault running: (fault, consumer, the partition paused)."""

    # ------------------------------------------------------------------ the run

    def run(self) -> dict[str, Any]:
        """The whole run: the workload under faults, everything healed, the recovery, the
        final read; returns the outcome."""
        c = self.config
        self.advance(c.duration_ns)
        self._heal()
        self.advance(c.duration_ns + c.recovery_ns, sending=False, faults=False)
        self._final_fetch()
        return self.outcome()

    def advance(self, until_ns: int, *, sending: bool = True, faults: bool = True) -> None:
        """Run the workload (sends, the consumers' polls, the nemesis) up to ``until_ns``,
        in steps of 100 ms of logical time; tests drive a scenario with it."""
        c, cluster = self.config, self.cluster
        step = ms(100)
        observe = None if self.refinement is None else self.observe
        while self._t <= until_ns:
            t = self._t
            cluster.run_until(t, on_event=observe)
            self._check()
            if t % c.poll_interval_ns == 0:
                for name in cluster.consumer_names:
                    if cluster.running(name):
                        cluster.client_poll(name)
                        if observe is not None:
                            observe()
            if sending and t % c.send_interval_ns == 0:
                self._value += 1
                key = self._keys[self._value % c.partitions]
                # buffer.memory exhausted: the application's send throws, and moves on.
                with contextlib.suppress(OverflowError):
                    cluster.client_send("p1", key, str(self._value).encode())
            if c.monitor_interval_ns and t >= self._next_monitor:
                self._monitor()
                self._next_monitor = t + self._monitor_gap()
                if observe is not None:
                    observe()
            if faults and c.faults and t >= self._next_fault:
                self._deliver_late()
                self._fault()
                self._next_fault += c.fault_interval_ns
                if observe is not None:
                    observe()
            self._t += step

    def observe(self) -> None:
        """The refinement check's look at the world (``config.refinement``)."""
        assert self.refinement is not None
        b = self._coordinator()
        cluster = self.cluster
        consumers = self.host.consumers
        self.refinement.observe(
            None if b is None else self.host.coordinators[b],
            self.host.stats.get("loads", 0),
            consumers,
            {n: cluster.nodes.state(n).alive for n in consumers},
            self.host.notes,
            cluster.clock.now,
        )

    def _check(self) -> None:
        notes = self.host.notes
        for note in notes[self._notes_seen :]:
            started = None
            if isinstance(note, GenerationCompleted):
                b = self.cluster.broker_id(note.coordinator)
                g = self.host.coordinators[b].groups.get(note.group)
                started = None if g is None else g.rebalance_started
            self.invariants.observe(note, started)
        self._notes_seen = len(notes)
        b = self._coordinator()
        if b is None:
            return
        coordinator = self.host.coordinators[b]
        if GROUP not in coordinator.hosted or GROUP in coordinator.loading:
            return
        live = [
            gc.member
            for name, gc in sorted(self.host.consumers.items())
            if self.cluster.running(name)
        ]
        self.invariants.check_beliefs(coordinator.groups.get(GROUP), live, self.cluster.clock.now)

    def _coordinator(self) -> int | None:
        leader = self.cluster.store.partitions[(CONSUMER_OFFSETS, self.host.partition)].leader
        return None if leader == NO_LEADER else leader

    # ------------------------------------------------------------------ faults

    def _perform(self, f: str, value: Any) -> None:
        result = self.nemesis.perform(f, value)
        self.cluster.record({"process": "nemesis", "type": "info", "f": f, "value": result})

    def _fault(self) -> None:
        if self._app_fault is not None:
            self._stop_app_fault()
            return
        if self._active is not None:
            _, stop = self._active
            self._active = None
            self._perform(stop, None)
            return
        rng = self.cluster.fault_rng
        name = self.config.faults[rng.randrange(len(self.config.faults))]
        if name == LATE_COMMIT:
            self._hold_commit()
            return
        if name in APPLICATION_FAULTS:
            self._start_app_fault(name)
            return
        fault = COORDINATOR_FAULTS.get(name, name)
        start, stop = fault_ops(fault)
        given = None
        if name in COORDINATOR_FAULTS:
            b = self._coordinator()
            if b is None:
                return
            given = {"node": self.cluster.broker_names[b]}
        self.faults[name] = self.faults.get(name, 0) + 1
        self._perform(start, given)
        self._active = (fault, stop)

    def _generation(self) -> int | None:
        """The group's generation at its coordinator (None: none loaded)."""
        b = self._coordinator()
        coordinator = None if b is None else self.host.coordinators[b]
        if coordinator is None or GROUP not in coordinator.hosted or GROUP in coordinator.loading:
            return None
        return coordinator.groups[GROUP].generation

    def _handed_over(self, request: OffsetCommit) -> bool:
        """Whether a partition of ``request`` is now another member's, at the coordinator."""
        b = self._coordinator()
        g = None if b is None else self.host.coordinators[b].groups.get(GROUP)
        if g is None:
            return False
        return any(
            tp in m.partitions
            for mid, m in g.members.items()
            if mid != request.member_id
            for tp, _ in request.offsets
        )

    def _hold_commit(self) -> None:
        """late-commit's start: a stable consumer's commit of what it processed is held."""
        if self._late is not None:
            return
        cluster = self.cluster
        eligible = [
            name
            for name, gc in sorted(self.host.consumers.items())
            if cluster.running(name)
            and gc.member.state == "stable"
            and any(tp in gc.processed for tp in gc.member.owned)
        ]
        if not eligible:
            return
        name = eligible[cluster.fault_rng.randrange(len(eligible))]
        gc = self.host.consumers[name]
        offsets = tuple((tp, gc.processed[tp]) for tp in gc.member.owned if tp in gc.processed)
        request = OffsetCommit(GROUP, gc.member.member_id, gc.member.generation, offsets, -1)
        self._late = (name, request)
        self.faults[LATE_COMMIT] = self.faults.get(LATE_COMMIT, 0) + 1
        value = {
            "node": name,
            "member": request.member_id,
            "generation": request.generation,
            "offsets": {f"{t}-{p}": o for (t, p), o in offsets},
        }
        cluster.record(
            {"process": "nemesis", "type": "info", "f": f"start-{LATE_COMMIT}", "value": value}
        )

    def _deliver_late(self, *, healing: bool = False) -> None:
        """late-commit's stop: once the group is past the held request's generation and one
        of its partitions belongs to another member (the worst moment for it to arrive),
        or at the heal once the generation moved, it reaches the coordinator; otherwise at
        the heal it is dropped."""
        if self._late is None:
            return
        name, request = self._late
        generation = self._generation()
        moved = generation is not None and generation > request.generation
        if not moved or not (healing or self._handed_over(request)):
            if not healing:
                return
            moved = False
        self._late = None
        b = self._coordinator()
        value: dict[str, Any] = {"node": name, "group_generation": generation}
        if moved and b is not None and self.cluster.running(name):
            coordinator = self.cluster.broker_names[b]
            self.cluster.network.send(name, coordinator, request)
            value["delivered_to"] = coordinator
        else:
            value["dropped"] = True
        self.cluster.record(
            {"process": "nemesis", "type": "info", "f": f"stop-{LATE_COMMIT}", "value": value}
        )

    def _start_app_fault(self, name: str) -> None:
        """An application fault's start on a running, stable consumer that owns a
        partition whose start is known (see ``APPLICATION_FAULTS``)."""
        cluster, rng = self.cluster, self.cluster.fault_rng
        eligible = [
            n
            for n, gc in sorted(self.host.consumers.items())
            if cluster.running(n) and gc.member.state == "stable" and gc.fetchers
        ]
        if not eligible:
            return
        node = eligible[rng.randrange(len(eligible))]
        gc = self.host.consumers[node]
        value: dict[str, Any] = {"node": node, "process": gc.process}
        tp = None
        if name == PAUSE_PARTITION:
            owned = sorted(gc.fetchers)
            tp = owned[rng.randrange(len(owned))]
            gc.pause((tp,), cluster.clock.now)
            value["key"] = f"{tp[0]}-{tp[1]}"
        else:
            gc.fail_processing(True)
        self._app_fault = (name, node, tp)
        self.faults[name] = self.faults.get(name, 0) + 1
        cluster.record({"process": "nemesis", "type": "info", "f": f"start-{name}", "value": value})

    def _stop_app_fault(self) -> None:
        """Its stop: the partition resumed (if the consumer still has it paused: a
        rebalance, or a restart, drops the pause), or the handler healthy again."""
        assert self._app_fault is not None
        name, node, tp = self._app_fault
        self._app_fault = None
        gc = self.host.consumers[node]
        value: dict[str, Any] = {"node": node}
        if tp is not None:
            value["key"] = f"{tp[0]}-{tp[1]}"
            if tp in gc.paused:
                gc.resume((tp,), self.cluster.clock.now)
            else:
                value["dropped"] = True  # revoked meanwhile, or the consumer restarted
        else:
            gc.fail_processing(False)
        self.cluster.record(
            {"process": "nemesis", "type": "info", "f": f"stop-{name}", "value": value}
        )

    def _heal(self) -> None:
        if self._app_fault is not None:
            self._stop_app_fault()
        self._deliver_late(healing=True)
        if self._active is not None:
            _, stop = self._active
            self._active = None
            self._perform(stop, None)
        self.cluster.heal()

    # ------------------------------------------------------------------ reading offsets

    def _monitor_gap(self) -> int:
        """The wait before the monitor's next read: uniform in [1/2, 3/2] of its mean, on
        the workload's 100 ms steps."""
        steps = max(1, self.config.monitor_interval_ns // ms(100))
        return ms(100) * max(1, self._monitor_rng.randint(steps // 2, steps * 3 // 2))

    def _running_coordinator(self) -> str | None:
        """The broker the metadata names as the group's coordinator (the leader of its
        ``__consumer_offsets`` partition), if it is running: where an admin's request goes."""
        b = self._coordinator()
        name = None if b is None else self.cluster.broker_names[b]
        return name if name is not None and self.cluster.running(name) else None

    def _read_offsets(self, name: str) -> tuple[str, dict[str, int | None] | None]:
        """One admin OffsetFetch of every partition of the topic, handed to broker ``name``:
        (the error, the committed offsets by key when it is ``NONE``)."""
        cluster = self.cluster
        tps = tuple((TOPIC, p) for p in range(self.config.partitions))
        for answer in cluster.admin_request(name, OffsetFetch(GROUP, tps)):
            assert isinstance(answer, _OffsetFetchResponse), answer
            if answer.error != NONE:
                return answer.error, None
            got = dict(answer.offsets)
            return NONE, {
                f"{t}-{p}": None if got[(t, p)] == NO_OFFSET else got[(t, p)] for t, p in tps
            }
        return COORDINATOR_NOT_AVAILABLE, None

    def _monitor(self) -> None:
        """The offsets monitor's read (see the module docstring); nothing is logged when no
        running broker is named coordinator (the admin's call would fail or time out without
        reaching one: no OffsetFetch was handled)."""
        name = self._running_coordinator()
        if name is None:
            return
        keys = [f"{TOPIC}-{p}" for p in range(self.config.partitions)]
        op = {"process": MONITOR, "f": "fetch-offsets"}
        self.cluster.record({**op, "type": "invoke", "value": keys})
        error, offsets = self._read_offsets(name)
        if offsets is not None:
            self.cluster.record({**op, "type": "ok", "value": offsets})
        else:
            self.cluster.record({**op, "type": "fail", "value": keys, "error": error})

    def final_fetch(self) -> dict[str, int | None] | None:
        """The final read (``fetch-offsets`` with ``"final": true``): the group's committed
        offsets by key (None where it has none); None if the coordinator never answered."""
        self._final_fetch()
        return self.final

    def _final_fetch(self) -> None:
        """The admin's OffsetFetch after everything healed, retried while the coordinator
        is unknown, loading or moving."""
        cluster = self.cluster
        keys = [f"{TOPIC}-{p}" for p in range(self.config.partitions)]
        cluster.record(
            {
                "process": "final",
                "type": "invoke",
                "f": "fetch-offsets",
                "value": keys,
                "final": True,
            }
        )
        for _ in range(60):
            name = self._running_coordinator()
            error, offsets = (
                (COORDINATOR_NOT_AVAILABLE, None) if name is None else self._read_offsets(name)
            )
            if offsets is not None:
                self.final = offsets
                cluster.record(
                    {
                        "process": "final",
                        "type": "ok",
                        "f": "fetch-offsets",
                        "value": self.final,
                        "final": True,
                    }
                )
                return
            cluster.run_until(cluster.clock.now + ms(500))
        cluster.record(
            {
                "process": "final",
                "type": "fail",
                "f": "fetch-offsets",
                "value": {"error": error},
                "final": True,
            }
        )

    # ------------------------------------------------------------------ results

    def history(self) -> list[dict[str, Any]]:
        """The run's history in the contract's shapes (``docs/history-format.md``): send
        values as integers."""
        out = []
        for op in self.cluster.history():
            if op.get("f") == "send":
                op = dict(op)
                v = op["value"]
                if isinstance(v, dict):
                    op["value"] = {"offset": v["offset"], "value": int(v["value"])}
                else:
                    op["value"] = int(v)
            out.append(op)
        return out

    def outcome(self) -> dict[str, Any]:
        history = self.cluster.history()
        counts: dict[str, int] = {}
        processed = 0
        acked: dict[str, int] = {}
        for op in history:
            f, kind = op.get("f"), op.get("type")
            if f == "process":
                processed += len(op["value"])
            elif f == "commit" and kind != "invoke":
                counts[f"commits_{kind}"] = counts.get(f"commits_{kind}", 0) + 1
                if kind == "ok":
                    for key, offset in op["value"].items():
                        acked[key] = max(acked.get(key, 0), offset)
            elif f == "send" and kind == "ok":
                counts["sends_ok"] = counts.get("sends_ok", 0) + 1
        regressed = (
            None
            if self.final is None
            else sorted(k for k, o in acked.items() if (self.final.get(k) or 0) < o)
        )
        outcome = self.invariants.outcome.to_json()
        if self.refinement is not None:
            r = self.refinement
            outcome["violations"] = [*outcome["violations"], *(v.describe() for v in r.violations)]
            outcome["ok"] = outcome["ok"] and r.count == 0
            outcome["refinement"] = {
                "observations": r.observations,
                "commits_checked": r.commits_checked,
                "commits_of_deposed_coordinators": r.deposed_commits,
                "violations": r.count,
            }
        return {
            **outcome,
            "records_processed": processed,
            **dict(sorted(counts.items())),
            "final_offsets": self.final,
            "keys_behind_acknowledged_commit": regressed,
            "coordinator": dict(sorted(self.host.stats.items())),
            "nemesis": dict(sorted(self.faults.items())),
        }
