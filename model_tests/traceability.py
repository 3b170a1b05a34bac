"""The traceability table: each Kafka mechanism the project models, from the Kafka
documentation or KIP that defines it, to the spec actions and properties that state it, the
implementation code that carries it out, how the implementation is checked against the
spec, and the scenario files and tests that cover it.

The catalogue below is written by hand (which mechanism, which source, which spec actions,
which implementation functions); everything else is found: a spec name is looked up among
the spec's declarations, an implementation path is imported, and the scenarios and tests
are the files that mention one of the mechanism's names (see ``covering``). A mechanism no
test mentions is a *gap*: ``model_tests/test_traceability.py`` renders the table into
``docs/traceability.md``, fails when the file is stale, and fails on a gap or on a name that
does not resolve.

``SET_ASIDE`` lists what Kafka does that the project does not model, each with the reason,
so that a reader looking for a mechanism finds either where it lives or why it is absent.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "model_tests"
SCENARIOS = TESTS / "scenarios"

REFINEMENT = {
    "replication": "step by step (`impl/refinement_machine.py`, `impl/abstraction.py`)",
    "controller": "property-level (`impl/controller_abstraction.py`)",
    "rebalance": "property-level for metadata, step by step for the data plane "
    "(`impl/rebalance_abstraction.py`)",
    "group": "property-level (`impl/group/abstraction.py`)",
    "offsets": "property-level (`impl/group/offsets_refinement.py`), and the delivery checker "
    "on every run (`jepsen_py/checker/delivery.py`)",
}
"""How the implementation is checked against each spec (see each spec's page)."""


@attrs.frozen
class Mechanism:
    name: str
    source: str
    """Where Kafka defines it: the documentation's section, the config, the KIP."""
    spec: tuple[str, ...] = ()
    """``"spec:name"``: an action or property of one of the specs."""
    impl: tuple[str, ...] = ()
    """``"module:Qualified.name"``: the implementation code that carries it out."""
    fault: tuple[str, ...] = ()
    """The ``kmodel test`` faults or flags that exercise it."""


MECHANISMS: tuple[Mechanism, ...] = (
    # --- replication --------------------------------------------------------------------
    Mechanism(
        "Leader epochs and becoming leader",
        "Kafka docs, Replication; KIP-101",
        ("replication:become_leader", "replication:controller_elect", "replication:EpochsOnlyGrow"),
        ("impl.replica:Replica.become_leader", "impl.log.leader_epoch:LeaderEpochCache.assign"),
    ),
    Mechanism(
        "Produce with acks=0/1/all",
        "Kafka docs, producer config `acks`",
        ("replication:leader_write", "replication:NoAckedWriteLost"),
        ("impl.replica:Replica.handle_produce", "impl.client:Producer.send"),
        ("--acks",),
    ),
    Mechanism(
        "min.insync.replicas",
        "Kafka docs, topic config `min.insync.replicas`",
        ("replication:leader_write", "replication:NoAckedAllWriteLost"),
        ("impl.replica:Replica.handle_produce",),
        ("--min-isr",),
    ),
    Mechanism(
        "Follower fetch and the high watermark",
        "Kafka docs, Replication; KIP-101",
        ("replication:follower_fetch", "replication:leader_advance_hw", "replication:HwAdvances"),
        (
            "impl.replica:Replica.handle_fetch",
            "impl.fetcher:FollowerFetcher.build_fetch",
            "impl.replica:Replica.on_fetch_response",
        ),
    ),
    Mechanism(
        "ISR shrink (replica.lag.time.max.ms)",
        "Kafka docs, broker config `replica.lag.time.max.ms`",
        ("replication:leader_shrink_isr", "replication:shrink_isr_lagging"),
        ("impl.isr:out_of_sync", "impl.replica:Replica.propose_isr_change"),
    ),
    Mechanism(
        "ISR expand",
        "Kafka docs, Replication",
        ("replication:leader_expand_isr", "replication:expand_isr_caught_up"),
        ("impl.isr:caught_up_candidates", "impl.replica:Replica.propose_isr_change"),
    ),
    Mechanism(
        "ISR changes through the controller (AlterPartition)",
        "KIP-497",
        ("replication:leader_shrink_isr", "controller:shrink_isr"),
        ("impl.replica:Replica.on_alter_partition_response", "impl.controller:Controller.step"),
    ),
    Mechanism(
        "Truncation by high watermark (before KIP-101)",
        "KIP-101 (the problem it fixes)",
        ("replication:become_follower", "replication:NoDivergenceBelowHw"),
        ("impl.fetcher:check_truncation",),
        ("--truncation high_watermark",),
    ),
    Mechanism(
        "Truncation by leader epoch (OffsetsForLeaderEpoch)",
        "KIP-101, KIP-279",
        ("replication:become_follower",),
        (
            "impl.replica:Replica.handle_offsets_for_leader_epoch",
            "impl.log.leader_epoch:LeaderEpochCache.end_offset_for",
        ),
        ("--truncation kip101", "--truncation kip279"),
    ),
    Mechanism(
        "Fencing by the current leader epoch",
        "KIP-320",
        (
            "replication:become_follower_fenced",
            "replication:follower_fetch_fenced",
            "replication:OneLeaderPerEpoch",
        ),
        ("impl.fetcher:fenced", "impl.replica:fenced"),
        ("--truncation kip320",),
    ),
    Mechanism(
        "Unclean leader election",
        "Kafka docs, `unclean.leader.election.enable`",
        ("replication:unclean_elect",),
        ("impl.coordination:MetadataStore.elect",),
        ("--unclean",),
    ),
    Mechanism(
        "Crash, torn writes and recovery",
        "Kafka docs, Log recovery; `log.flush.interval.messages`",
        ("replication:crash", "replication:restart", "replication:flush"),
        (
            "impl.log.recovery:load_log",
            "impl.log.log:Log.flush",
            "impl.log.segment:Segment.recover",
        ),
        ("kill", "disk-lose-unflushed", "disk-truncate"),
    ),
    Mechanism(
        "Idempotent producer (sequence numbers)",
        "KIP-98, `enable.idempotence`",
        (),
        ("impl.producer_state:ProducerStateManager.check", "impl.client:Producer.send"),
        ("duplicate",),
    ),
    Mechanism(
        "Producer-state snapshots (rebuild after a restart or truncation)",
        "Kafka's `ProducerStateManager.takeSnapshot`/`truncateAndReload`, `<offset>.snapshot`",
        (),
        (
            "impl.producer_state:ProducerStateManager.take_snapshot",
            "impl.producer_state:ProducerStateManager.rebuild",
        ),
    ),
    Mechanism(
        "Partitioning records by key",
        "Kafka docs, producer `partitioner.class`",
        (),
        ("impl.partitioner:partition_for_key", "impl.partitioner:RoundRobinPartitioner.partition"),
    ),
    Mechanism(
        "Log segments and the offset index",
        "Kafka docs, Log; `log.segment.bytes`",
        (),
        ("impl.log.log:Log.roll", "impl.log.log:Log.segments", "impl.log.index:OffsetIndex.lookup"),
        ("--segment-bytes",),
    ),
    Mechanism(
        "Record batches and CRCs",
        "Kafka docs, Record Batch format",
        (),
        ("impl.log.batch:RecordBatch.encode", "impl.log.batch:decode"),
        ("disk-bitflip",),
    ),
    Mechanism(
        "Time- and size-based retention",
        "Kafka docs, `log.retention.ms`, `log.retention.bytes`; KIP-107",
        (),
        ("impl.log.retention:apply_retention", "impl.log.log:Log.advance_log_start_offset"),
        ("--retention-ms", "--retention-bytes"),
    ),
    Mechanism(
        "Log compaction",
        "Kafka docs, Log Compaction; `cleanup.policy=compact`",
        (),
        ("impl.log.cleaner:clean_log", "impl.log.cleaner:LogCleaner.maybe_clean"),
    ),
    # --- controller ---------------------------------------------------------------------
    Mechanism(
        "Broker registration and session expiry",
        "Kafka docs, ZooKeeper `/brokers/ids`; `zookeeper.session.timeout.ms`",
        ("controller:session_expires", "controller:reconnect"),
        (
            "impl.coordination:MetadataStore.register",
            "impl.coordination:MetadataStore.expire_sessions",
        ),
    ),
    Mechanism(
        "Controller election and controller epoch",
        "Kafka docs, Controller; `/controller`, `/controller_epoch`",
        ("controller:elect_controller", "controller:resign", "controller:ControllerFailover"),
        ("impl.coordination:MetadataStore.elect", "impl.controller:Controller.resign"),
        ("kill-controller", "pause-controller"),
    ),
    Mechanism(
        "Fencing a zombie controller at the store (conditional writes)",
        "Kafka docs, Controller; KAFKA-6082",
        ("controller:write_refused", "controller:partition_version_conflict"),
        ("impl.coordination:MetadataStore.write",),
    ),
    Mechanism(
        "Fencing a zombie controller at the brokers (controller epoch)",
        "Kafka docs, Controller; KIP-380",
        ("controller:reject_stale_request", "controller:NoStaleControllerEpochApplied"),
        ("impl.broker:Broker._controller_request_error",),
    ),
    Mechanism(
        "LeaderAndIsr, UpdateMetadata and StopReplica",
        "Kafka protocol; KIP-570",
        ("controller:apply_leader_and_isr", "controller:apply_stop_replica"),
        ("impl.broker:Broker._on_leader_and_isr", "impl.broker:Broker._on_stop_replica"),
    ),
    # --- leadership and replica movement ------------------------------------------------
    Mechanism(
        "Preferred leader election",
        "Kafka docs, Balancing leadership",
        ("rebalance:preferred_election", "rebalance:PreferredLeaderRegains"),
        ("impl.controller:Controller.elect_preferred",),
        ("preferred-election",),
    ),
    Mechanism(
        "Replica assignment",
        "`kafka-topics.sh --replica-assignment`; the rack-unaware round-robin assignment",
        (),
        ("impl.coordination:round_robin_replicas",),
        ("--replica-assignment",),
    ),
    Mechanism(
        "A consumer fetching from a follower",
        "KIP-392",
        (),
        ("impl.roles:SERVES", "jepsen_py.generator.kafka:replica_reads"),
        (),
    ),
    Mechanism(
        "Automatic leader rebalance",
        "`auto.leader.rebalance.enable`, `leader.imbalance.per.broker.percentage`",
        ("rebalance:auto_rebalance",),
        ("impl.controller:Controller.imbalance",),
        ("--auto-leader-rebalance",),
    ),
    Mechanism(
        "Controlled shutdown",
        "`controlled.shutdown.enable`",
        ("rebalance:controlled_shutdown", "rebalance:stop_broker", "rebalance:ShutdownMovesLeader"),
        ("impl.controlled_shutdown:ShutdownState.tick", "impl.world:World.controlled_shutdown"),
        ("controlled-shutdown",),
    ),
    Mechanism(
        "Partition reassignment",
        "KIP-455",
        (
            "rebalance:start_reassignment",
            "rebalance:complete_reassignment",
            "rebalance:cancel_reassignment",
            "rebalance:ReassignmentKeepsMinIsr",
        ),
        ("impl.controller:Controller.alter_reassignment",),
        ("reassign",),
    ),
    Mechanism(
        "Eligible Leader Replicas",
        "KIP-966",
        ("rebalance:elect_leader", "rebalance:LeaderElectedFromElr"),
        ("impl.elr:elect", "impl.elr:elr_after", "impl.elr:unclean_restart"),
        ("--elr",),
    ),
    Mechanism(
        "Topic creation, deletion and added partitions",
        "Kafka docs, Adding and removing topics; `delete.topic.enable`",
        (),
        ("impl.controller:Controller.create_partitions", "impl.controller:Controller.delete_topic"),
        ("add-partitions",),
    ),
    # --- consumer groups ----------------------------------------------------------------
    Mechanism(
        "JoinGroup, SyncGroup and generations",
        "Kafka protocol, group membership; KIP-62",
        (
            "group:join_group",
            "group:complete_join",
            "group:handle_sync",
            "group:OneOwnerPerPartition",
        ),
        ("impl.group.coordinator:Coordinator.step", "impl.group.member:Member.step"),
    ),
    Mechanism(
        "Heartbeats and session timeouts",
        "`session.timeout.ms`, `heartbeat.interval.ms`",
        ("group:heartbeat", "group:expire"),
        ("impl.group.coordinator:Coordinator.tick", "impl.group.member:Member.tick"),
        ("pause-consumer",),
    ),
    Mechanism(
        "Leaving the group",
        "Kafka protocol, LeaveGroup",
        ("group:leave_group",),
        ("impl.group.member:Member.close", "impl.group.consumer:GroupConsumer.close"),
        ("leave-consumer",),
    ),
    Mechanism(
        "Coordinator failover and loading",
        "Kafka docs, `__consumer_offsets`; COORDINATOR_LOAD_IN_PROGRESS",
        ("group:coordinator_moves", "group:load_group", "group:CoordinatorMovesAndGroupResumes"),
        (
            "impl.group.coordinator:Coordinator.begin_load",
            "impl.group.coordinator:Coordinator.load",
        ),
        ("kill-coordinator",),
    ),
    Mechanism(
        "Partition assignors",
        "`partition.assignment.strategy`; KIP-54, KIP-429",
        ("group:AssignmentPartitionsSubscribedPartitions",),
        (
            "impl.assignors:range_assign",
            "impl.assignors:round_robin_assign",
            "impl.group.sticky:sticky_assign",
            "impl.group.sticky:cooperative_assign",
        ),
    ),
    Mechanism(
        "Fencing stale generations",
        "Kafka protocol, ILLEGAL_GENERATION",
        ("group:StaleGenerationChangesNothing", "group:ZombieFenced"),
        ("impl.group.coordinator:Coordinator.step",),
        ("late-commit",),
    ),
    # --- offsets and delivery -----------------------------------------------------------
    Mechanism(
        "Committing offsets",
        "Kafka docs, Offset management; `commitSync`, `commitAsync`",
        ("offsets:send_commit", "offsets:handle_commit", "offsets:StaleGenerationNeverCommits"),
        ("impl.group.coordinator:Coordinator.commit_done", "impl.group.member:Member.commit"),
        ("--commit",),
    ),
    Mechanism(
        "Fetching committed offsets and auto.offset.reset",
        "`auto.offset.reset`; OffsetFetch",
        ("offsets:fetch_offset", "offsets:load_offsets", "offsets:OffsetsSurviveFailover"),
        ("impl.group.consumer:GroupConsumer.step",),
    ),
    Mechanism(
        "At-least-once and at-most-once delivery",
        "Kafka docs, Message Delivery Semantics",
        ("offsets:AtLeastOnce", "offsets:CommittedNeverRegresses"),
        ("jepsen_py.checker.delivery:check_key", "impl.group.consumer:GroupConsumer.poll"),
        ("--commit",),
    ),
    Mechanism(
        "Seek, pause and resume",
        "`KafkaConsumer.seek`, `pause`, `resume` (Javadoc)",
        ("offsets:CommittedWithinOwnerProgress",),
        (
            "impl.group.consumer:GroupConsumer.seek",
            "impl.group.consumer:GroupConsumer.pause",
            "impl.group.consumer:GroupConsumer.resume",
        ),
        ("pause-partition", "fail-processing"),
    ),
)


SET_ASIDE: tuple[tuple[str, str], ...] = (
    (
        "Transactions and exactly-once (KIP-98 transactions, KIP-447)",
        "Not modelled: histories with `txn` ops are refused with a clear message "
        "(`docs/history-format.md`). The idempotent producer is modelled.",
    ),
    (
        "Static group membership (KIP-345)",
        "Not modelled: members always join with a new member id (`docs/groups.md`).",
    ),
    (
        "Producer interceptors, serializers, compression",
        "Client-side transformations that change no replication or group state: values are "
        "opaque strings.",
    ),
    (
        "Zero-copy transfer, page cache and batching for throughput",
        "Performance mechanisms; the simulated disk models what survives a crash (the "
        "unflushed tail), not how fast reads are.",
    ),
    (
        "Quotas, ACLs and security",
        "Outside failure semantics.",
    ),
    (
        "KRaft's metadata log (KIP-500) as a Raft quorum",
        "The controller spec has a `kraft` mode for its fencing; the implementation's "
        "coordination store plays ZooKeeper (`docs/controller.md`).",
    ),
    (
        "The replica selector and rack awareness (KIP-392's `replica.selector.class`, "
        "`client.rack`), tiered storage (KIP-405)",
        "Not modelled: a follower serves a consumer's fetch, but the reader names the "
        "replica (the final replica reads, `docs/fault-injection.md`) instead of the leader.",
    ),
    (
        "Kafka Connect and Kafka Streams",
        "Built on the producer and consumer; out of scope.",
    ),
)


def _spec_declarations() -> dict[str, set[str]]:
    from spec.controller import Controller
    from spec.controller import Params as ControllerParams
    from spec.group import ClassicGroup, ConsumerGroup
    from spec.offsets import Offsets
    from spec.rebalance import Rebalance
    from spec.replication import Replication

    classes = {
        "replication": (Replication,),
        "controller": (Controller,),
        "rebalance": (Rebalance,),
        "group": (ClassicGroup, ConsumerGroup),
        "offsets": (Offsets,),
    }
    del ControllerParams
    names: dict[str, set[str]] = {}
    for spec, types in classes.items():
        found = names.setdefault(spec, set())
        for cls in types:
            for decls in (
                cls._actions,
                cls._invariants,
                cls._transition_properties,
                cls._sometimes,
            ):
                found |= {d.name for d in decls}
            found |= {d.name for d in cls._liveness}
    return names


def unresolved(m: Mechanism) -> list[str]:
    """The names of ``m`` that resolve to nothing: a spec declaration that does not exist,
    an implementation path that does not import."""
    wrong = []
    declared = _spec_declarations()
    for ref in m.spec:
        spec, _, name = ref.partition(":")
        if name not in declared.get(spec, set()):
            wrong.append(ref)
    for ref in m.impl:
        module, _, qualname = ref.partition(":")
        try:
            obj: object = importlib.import_module(module)
            for part in qualname.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError):
            wrong.append(ref)
    return wrong


def _spec_names(m: Mechanism) -> list[str]:
    """The spec declarations of ``m`` specific enough to search for: names of more than
    one word (``become_follower``, ``NoAckedAllWriteLost``; a one-word action such as
    ``fetch`` says too little alone)."""
    names = (ref.partition(":")[2] for ref in m.spec)
    return sorted({n for n in names if "_" in n or sum(c.isupper() for c in n) > 1})


def _impl_patterns(m: Mechanism) -> list[tuple[re.Pattern[str], re.Pattern[str]]]:
    """For each implementation path, what a file must mention to refer to it: the
    function's own name and, anywhere in the file, its class (``Replica`` for
    ``impl.replica:Replica.become_leader``) or, for a module-level function, its module
    (``impl.isr``): ``send`` alone is every other file."""
    patterns = []
    for ref in m.impl:
        module, _, qualname = ref.partition(":")
        parts = qualname.split(".")
        owner = parts[-2] if len(parts) > 1 else module
        patterns.append((_word(owner), _word(parts[-1])))
    return patterns


def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(name)}\b")


@cache
def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _mentions_spec(m: Mechanism, text: str) -> bool:
    names = _spec_names(m)
    return (
        bool(names)
        and re.search(r"\b(" + "|".join(map(re.escape, names)) + r")\b", text) is not None
    )


def covering_tests(m: Mechanism, files: Iterable[Path]) -> list[Path]:
    """The test files among ``files`` that name one of ``m``'s specific spec declarations
    or refer to one of its implementation functions (``_impl_patterns``)."""
    patterns = _impl_patterns(m)
    return [
        f
        for f in files
        if _mentions_spec(m, _text(f))
        or any(o.search(_text(f)) and n.search(_text(f)) for o, n in patterns)
    ]


def covering_scenarios(m: Mechanism, files: Iterable[Path]) -> list[Path]:
    """The scenario files among ``files`` whose steps or expectations name one of ``m``'s
    specific spec declarations."""
    return [f for f in files if _mentions_spec(m, _text(f))]


def test_files() -> list[Path]:
    """The test suite's files (this table's own test excepted: it names everything)."""
    return sorted(p for p in TESTS.glob("test_*.py") if p.name != "test_traceability.py")


def scenario_files() -> list[Path]:
    return sorted(SCENARIOS.rglob("*.txt"))


def _first(items: list[str], n: int) -> list[str]:
    return items[:n] + ([f"and {len(items) - n} more"] if len(items) > n else [])


def _cell(items: Iterable[str]) -> str:
    return "<br>".join(items) or "-"


def render() -> str:
    """``docs/traceability.md``."""
    out = [
        "# Traceability: from Kafka's mechanisms to specs, code and tests",
        "",
        "Generated by `model_tests/test_traceability.py` from the catalogue in",
        "`model_tests/traceability.py` (run pytest with `--rewrite` after changing it). Each",
        "row is a mechanism, the Kafka documentation or KIP that defines it, the spec actions",
        "and properties that state it, the implementation code that carries it out, how that",
        "code is checked against the spec, the faults and flags of `kmodel test` that",
        "exercise it, and the scenario files and test files that mention its names. The test",
        "fails if a name does not resolve or if a mechanism has no test.",
        "",
        "| mechanism | defined by | spec | implementation | checked against the spec "
        "| faults, flags | scenarios | tests |",
        "|---|---|---|---|---|---|---|---|",
    ]
    tests, scenarios = test_files(), scenario_files()
    for m in MECHANISMS:
        specs = sorted({ref.partition(":")[0] for ref in m.spec})
        refinement = _cell(f"{s}: {REFINEMENT[s]}" for s in specs)
        covered = [f"`{p.name}`" for p in covering_tests(m, tests)]
        scen = [f"`{p.relative_to(SCENARIOS)}`" for p in covering_scenarios(m, scenarios)]
        out.append(
            "| "
            + " | ".join(
                (
                    m.name,
                    m.source,
                    _cell(f"`{ref}`" for ref in m.spec),
                    _cell(f"`{ref}`" for ref in m.impl),
                    refinement,
                    _cell(f"`{f}`" for f in m.fault),
                    _cell(_first(scen, 4)),
                    _cell(_first(covered, 6)),
                )
            )
            + " |"
        )
    out += [
        "",
        "## Set aside",
        "",
        "What Kafka does that the project does not model, and why.",
        "",
        "| mechanism | why |",
        "|---|---|",
    ]
    out += [f"| {name} | {why} |" for name, why in SET_ASIDE]
    return "\n".join(out) + "\n"
