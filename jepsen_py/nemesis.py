"""The nemesis: Jepsen's fault catalogue, performed on the simulated cluster.

Every fault has a start op and a stop op, named by the fault vocabulary
(``jepsen_py.fault_verbs.fault_ops``: ``kill``/``restart``, ``pause``/``resume``, otherwise
``start-X``/``stop-X``), so the schedule generator, the history and the reports pair them the
same way. A start op without
a value draws its targets from the nemesis's own stream of the run's seed; with a value (an
explicit schedule, a replay, a shrunk run) it performs exactly those targets. Either way the
completion records the concrete targets, so the history alone says what was done, and a
schedule read back from it replays the same faults.

The catalogue (`CATALOGUE`):

Partitions, among the servers (brokers ``b1``.. and the coordination store ``zk``, the
ZooKeeper ensemble; clients always reach every server, as Jepsen's clients reach their
node). The value is Jepsen's *grudge*: each
node -> the nodes whose messages it drops. Stopping any partition heals the network.

- ``partition``: one of the shapes below, drawn at random;
- ``partition-halves``: the servers, shuffled, cut into two halves;
- ``partition-isolate``: one server cut off from the other servers;
- ``partition-leader``: the current leader of a partition cut off from the other servers;
- ``partition-bridge``: two halves that only one server in the middle talks to;
- ``partition-ring``: majorities ring (each server hears a majority, no two the same one);
- ``partition-asymmetric``: one server (the leader, half of the time) hears nobody but is
  heard by all, or the reverse;
- ``partition-controller``: the controller (the broker ``/controller`` names) cut off from
  the store but not from the brokers -- its session expires, another broker is elected, and
  it keeps sending to the brokers as a zombie -- or, half of the time, the reverse: cut off
  from every broker but not from the store (it stays controller, and nobody hears it).

Targeted faults (``TARGETED``; not in ``all``, drawn by swarm runs, ``--nemesis targeted``):
aimed by the cluster's live state, as Jepsen's nemeses aim at ``:primaries`` or a
``:minority``; each is a generic fault (a partition, a power loss) at a chosen target, so
with ``--max-faults`` > 1 they compound: a partition, a power loss inside it, the heal.

- ``partition-followers``: a partition's leader cut off from the other brokers but not
  from the store: its followers stop fetching, and after ``replica.lag.time.max.ms`` the
  leader shrinks the ISR to itself (with ``min.insync.replicas=1`` it goes on acknowledging);
- ``partition-one-follower``: one follower cut off from its partition's leader only (it
  still reaches the store and the other brokers): it leaves the ISR after
  ``replica.lag.time.max.ms`` while the leader goes on acknowledging with the others, so it
  misses acknowledged writes -- the replica a faulty election must not pick. A partition
  whose leader is not the controller is preferred (else the follower would not hear the
  controller either);
- ``partition-stale-follower``: a follower (neither the leader nor the controller) cut off
  from the controller only: it goes on fetching but misses LeaderAndIsr requests, so when
  leadership moves it acts on a stale leader and epoch (what KIP-320's fencing is for);
- ``kill-last-isr``: power loss of the last member of a partition's ISR (the partition
  with the smallest ISR: its leader): KIP-966's "last replica standing";
- ``kill-lagging``: power loss of a replica outside a partition's ISR (a lagging or cut-off
  follower, a KIP-966 ELR member);
- ``kill-isolated``: power loss of the broker the running partition cuts off from the most
  servers (the leader first among equals): the isolated leader killed inside its partition;
- ``pause-deciding-controller``: SIGSTOP of the controller's broker at its next decision
  (a leader elected, an ISR changed: written to the store), while the requests it decided
  wait for its send threads (``ControllerChannelManager``): armed at the start, it fires
  when the controller next acts; a pause past the session timeout makes it a zombie whose
  queued requests of the old controller epoch reach the brokers after its successor's
  (issue 16's brain split; what ``STALE_CONTROLLER_EPOCH`` fences). The stop resumes it
  once it has held two session timeouts; a stop before any decision leaves it armed for
  the next one (another fault's: a broker killed, leadership moved), to hold as long, and
  only the run's final heal disarms it;
- ``transfer-leadership``: a partition's leadership moved to one of its ISR followers (a
  reassignment that puts it first, then a preferred-leader election of that partition, as
  an operator does it; Jepsen's Redpanda nemesis), to a follower cut off from the leader:
  it is still in the ISR until ``replica.lag.time.max.ms`` passes, but has not fetched
  what the leader appended since. A running partition's cut, or one the fault makes
  itself (then it moves leadership a moment later). Its stop gives leadership back while
  the old leader is still in the ISR: KIP-279's double failover when the old leader could
  not truncate to the new one; or, when the fault also stalled the controller's channel
  to the third replica (which goes on fetching from the old leader in its old epoch) and
  the old leader did truncate, KAFKA-6880's stale follower, which KIP-320 fences;
- ``shutdown-last-isr``: a controlled shutdown (``controlled.shutdown.enable``) of the
  leader of a partition whose ISR has shrunk while a replica it dropped runs (the smallest
  such ISR): the controller must hand its leadership to another ISR member, never to that
  replica, which misses acknowledged writes. Stopped and restarted as ``controlled-shutdown`` is;
- ``reassign-lagging``: a KIP-455 reassignment of a partition onto its replicas that are
  behind (outside the ISR, down ones too, or cut off from the leader), with ISR followers,
  then the leader, added up to ``min.insync.replicas``: an operator moving a partition to
  brokers that have not caught up, the case where the controller must wait for the
  target replicas to join the ISR before it drops the others. Its stop cancels it if
  unfinished, as ``reassign``'s does.

These two make their target when none exists: with every ISR whole at their start, they
cut one follower off from its leader (``partition-one-follower``'s cut, in the
completion's ``grudge``), are armed (``{"armed": true}``), and act at the first moment a
partition offers a replica behind -- right after an ISR shrinks (their own cut's, after
``replica.lag.time.max.ms``, or another fault's), or a follower outside the ISR starts
catching up (a broker back from a crash) -- on that partition, the cut still in place.
The schedule waits a fifth past ``replica.lag.time.max.ms`` after their start (``HOLDS``):
a replica falls behind on its own only for moments, so waiting alone seldom fired. Their
stop heals their cut and says what they did (``fired``), or that no ISR shrank.

Each kill falls back to a partition's leader when its target does not exist now;
``transfer-leadership`` is skipped when no partition has a running ISR follower the
controller reaches. While a targeted partition runs, the faults aimed at "a partition's
leader" aim at the leader of the partition it cut (``Nemesis.focus``).

Processes:

- ``kill`` / ``restart``: a broker loses power (the store is never killed: it stands for a
  replicated ZooKeeper ensemble); a broker's
  disk loses every byte neither fsynced nor written back by the kernel (Kafka leaves
  flushing to the page cache, so that is its last 30 to 35 seconds of log: the kernel
  writes back dirty pages older than ``vm.dirty_expire_centisecs``, see
  ``impl.sim.disk``). The restart recovers from the disk;
- ``kill-leader``: the same, aimed at the current leader of a partition;
- ``sigkill``, ``sigkill-leader``: the process is killed but the machine stays up, so the
  page cache survives, dirty pages included (the kernel writes them back later): only
  memory is lost. This isolates the replication protocol's own losses (KIP-101's
  truncation to the high watermark) from the loss of unflushed data;
- ``kill-all``: every broker crashes at once: whole-cluster loss of unflushed data, a loss
  Kafka's replication does not protect against (acks=all writes live in page caches). Not
  in ``all``;
- ``kill-controller``: the same, aimed at the controller: failover by election;
- ``pause`` / ``resume``: SIGSTOP and SIGCONT of a broker (the leader or the controller
  half of the time): it keeps its state and wakes up acting on it, a zombie leader or
  controller that only epochs can fence;
- ``pause-leader``, ``pause-controller``: the same, aimed at the current leader of a
  partition, or at the controller (a long GC pause of the controller: the brain split).
- ``pause-consumer``: SIGSTOP of a consumer: in a consumer group, past its session it is
  the zombie member that still believes it owns its partitions. Not in ``all``.
- ``kill-consumer`` / ``restart-consumer``: a group consumer's process dies (what it had
  processed and not committed is the next owner's again); it comes back as a new member
  with a new history process (the op's ``process`` names the one that died). Not in
  ``all``.
- ``leave-consumer`` / ``join-consumer``: a group consumer closes (``KafkaConsumer.close``:
  the rebalance listener commits what was processed, then LeaveGroup) and later subscribes
  again, the same process: a member leaving and joining on purpose. Not in ``all``.

Leadership (operations an operator performs, ``impl.controller``):

- ``controlled-shutdown``: a broker (a partition's leader half of the time) shuts down
  cleanly (``controlled.shutdown.enable``): the controller moves its leaderships to other
  ISR members and takes it out of the ISRs, then it stops with its logs flushed; the stop
  op restarts it;
- ``preferred-election``: the admin's preferred-leader election for every partition
  (``kafka-leader-election.sh --election-type preferred``); its stop does nothing;
- ``reassign``: KIP-455's reassignment of a random partition to a random ordered set of
  brokers (replication factor from ``min.insync.replicas`` to the broker count, so RF
  increases and decreases), like Jepsen's membership nemesis; the stop op cancels it if it
  has not completed;
- ``add-partitions``: the admin grows the topic by one partition (``CreatePartitions``; at
  most ``MAX_ADDED_PARTITIONS`` over a run): keyed records would now map elsewhere; the
  workload's keys are partitions, so the new ones only load the controller and brokers. Its
  stop does nothing (a topic never shrinks).

Network (``impl.sim.network.NetworkConfig`` for messages sent while it lasts):

- ``loss``: each message is dropped with a probability drawn in [0.05, 0.3];
- ``duplicate``: each message is delivered twice with a probability in [0.1, 0.5] (a
  retransmitted request: a duplicated produce appends twice from a non-idempotent producer,
  and is recognised by the leader from an idempotent one, KIP-98);
- ``delay``: delays of 20..300 ms instead of the usual milliseconds;
- ``reorder``: delays spread over 0..50 ms on a network without per-link order, so messages
  overtake each other. The runner builds that network (FIFO off, a constant delay, which
  keeps order) when ``reorder`` is in the nemesis list: the simulator cannot switch FIFO off
  while messages are in flight.

Disks (a broker's, through ``cluster.disks``; each crashes the broker first, since a live
broker's in-memory log would not see its files change, and restarts it at the stop):

- ``disk-lose-unflushed``: a power loss during write-back, a torn write: each file keeps a
  random prefix of its unflushed bytes and loses the rest;
- ``disk-truncate``: the broker's process dies (its page cache is written back) and the
  active segment of a partition is found with its last bytes gone (lost sectors, a
  filesystem check);
- ``disk-bitflip``: the same, with one bit of the active segment flipped, inside what a
  batch's CRC-32C covers. Recovery scans the active segment batch by batch and cuts the log
  at the corrupt batch. (A flip in an older, trusted segment, or in the header fields the
  CRC leaves out, would go unnoticed until a reader's check: outside what Kafka protects.)

Clocks (``impl.sim.clock``: every node reads its local clock, global time + an offset, at
a rate; events stay scheduled on global time):

- ``clock``: a random non-empty subset of the servers has its clock bumped by a signed,
  log-uniform amount between 4 ms and 65 s (Jepsen's ``bump``), and runs at a rate drawn
  from 1/4, 1/2, 1, 1, 2, 4 times global time; the stop resets every clock (a node that was
  ahead steps back). Kafka reads the wall clock for ``replica.lag.time.max.ms``, broker
  session timeouts and request timeouts, so a leader whose clock jumps ahead drops lagging
  followers from the ISR at once, and a controller whose clock jumps ahead expires every
  broker's session. Clients are never skewed (as Jepsen's, they run on the control node).

Randomness: one stream, ``SimRandom(seed).split("jepsen/nemesis")``, drawn only when a
fault starts without a value; the network's and disks' streams are the cluster's.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
import orjson

from impl.cluster import Cluster, IllegalEvent
from impl.controller import broker_node
from impl.coordination import STORE
from impl.log.batch import read_header
from impl.protocol import NO_LEADER
from impl.sim.network import (
    Link,
    NetworkConfig,
    bridge_links,
    halves_links,
    isolate_links,
    majorities_ring_links,
    split_halves,
)
from impl.sim.node import NodeState
from jepsen_py.fault_verbs import fault_ops
from jepsen_py.generator import (
    MILLISECOND,
    Context,
    Gen,
    GeneratorError,
    Invocation,
    Pending,
    Step,
)
from jepsen_py.generator import nemesis as on_nemesis
from jepsen_py.history.op import Op, is_final


class NemesisError(ValueError):
    """A fault that does not exist, or cannot be offered; the message says what to use."""


@attrs.frozen
class Fault:
    name: str
    group: str
    summary: str


CATALOGUE: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault("partition", "partition", "a partition of a random shape among the servers"),
        Fault("partition-halves", "partition", "servers cut into two halves"),
        Fault("partition-isolate", "partition", "one server cut off from the others"),
        Fault("partition-leader", "partition", "a partition's leader cut off"),
        Fault("partition-bridge", "partition", "two halves joined by one server"),
        Fault("partition-ring", "partition", "majorities ring"),
        Fault(
            "partition-followers",
            "partition",
            "a partition's leader cut off from the other brokers, not from the store",
        ),
        Fault(
            "partition-one-follower",
            "partition",
            "one follower cut off from its partition's leader only: it leaves the ISR",
        ),
        Fault(
            "partition-stale-follower",
            "partition",
            "a follower cut off from the controller only: it acts on stale leadership",
        ),
        Fault("partition-asymmetric", "partition", "one server deaf, or mute, to the others"),
        Fault(
            "partition-controller",
            "partition",
            "the controller cut off from the store but not the brokers, or the reverse",
        ),
        Fault("kill", "process", "crash a server (unflushed data lost), restart it"),
        Fault("kill-leader", "process", "crash a partition's leader, restart it"),
        Fault("kill-controller", "process", "crash the controller's broker, restart it"),
        Fault("kill-last-isr", "process", "crash the last member of a partition's ISR"),
        Fault("kill-lagging", "process", "crash a replica outside a partition's ISR"),
        Fault("kill-isolated", "process", "crash the broker a partition cut off"),
        Fault("kill-all", "process", "crash every broker at once: whole-cluster data loss"),
        Fault("sigkill", "process", "SIGKILL a server process (page cache kept), restart it"),
        Fault("sigkill-leader", "process", "SIGKILL a partition's leader, restart it"),
        Fault("pause", "process", "SIGSTOP a server (often the leader or controller)"),
        Fault("pause-leader", "process", "SIGSTOP a partition's leader"),
        Fault("pause-controller", "process", "SIGSTOP the controller (a zombie when it wakes)"),
        Fault(
            "pause-deciding-controller",
            "process",
            "SIGSTOP the controller at its next decision, its requests still queued",
        ),
        Fault("pause-consumer", "process", "SIGSTOP a consumer (a zombie group member)"),
        Fault("kill-consumer", "process", "kill a group consumer; it comes back a new member"),
        Fault("leave-consumer", "process", "a group consumer closes (LeaveGroup), rejoins later"),
        Fault(
            "controlled-shutdown",
            "leadership",
            "a broker shuts down cleanly: its leaderships move first; restart it",
        ),
        Fault(
            "shutdown-last-isr",
            "leadership",
            "a controlled shutdown of a leader whose ISR dropped a running replica; makes one",
        ),
        Fault("preferred-election", "leadership", "elect every partition's preferred leader"),
        Fault(
            "transfer-leadership",
            "leadership",
            "move a partition's leadership to an ISR follower, one cut off from the leader first",
        ),
        Fault("add-partitions", "leadership", "grow the topic by a partition (admin)"),
        Fault(
            "reassign",
            "leadership",
            "move a partition to random replicas, RF changes included; cancel if unfinished",
        ),
        Fault(
            "reassign-lagging",
            "leadership",
            "move a partition onto its replicas that lag (makes one); cancel if unfinished",
        ),
        Fault("loss", "network", "drop messages at random"),
        Fault("duplicate", "network", "deliver messages twice at random"),
        Fault("delay", "network", "slow every message down (20..300 ms)"),
        Fault("reorder", "network", "spread delays so messages overtake each other"),
        Fault("disk-lose-unflushed", "disk", "crash with a torn write: part of the page cache"),
        Fault("disk-truncate", "disk", "crash and cut the active segment's tail"),
        Fault("disk-bitflip", "disk", "crash and flip a bit of the active segment"),
        Fault("clock", "clock", "bump servers' clocks by up to 65 s, run them fast or slow"),
    )
}

CONSUMER_FAULTS = ("pause-consumer", "kill-consumer", "leave-consumer")
"""Faults of the consumers: not in ``all``, which would change the default workload's runs
(``kmodel test --workload group`` has them, with ``kill-consumer``)."""

TARGETED: dict[str, str] = {
    "partition-followers": "partition",
    "partition-one-follower": "partition",
    "partition-stale-follower": "partition",
    "kill-last-isr": "kill",
    "kill-lagging": "kill",
    "kill-isolated": "kill",
    "pause-deciding-controller": "pause-controller",
    "shutdown-last-isr": "controlled-shutdown",
    "transfer-leadership": "preferred-election",
    "reassign-lagging": "reassign",
}
"""Faults aimed by the cluster's live state (Jepsen's nemesis targets ``:primaries``,
``:minority``), each -> the generic fault it aims: not in ``all``, whose runs keep their
histories; a swarm run (``jepsen_py.runner.config.swarm_config``) draws each one whose
generic fault it may draw, and ``--nemesis targeted`` names them."""

DECIDING_PAUSE = "pause-deciding-controller"
"""The targeted fault that stops the controller's broker at its next decision (the
zombie controller's making: `ZOMBIE_PAUSE_SESSIONS`)."""

ZOMBIE_PAUSE_SESSIONS = 2
"""`DECIDING_PAUSE` holds its pause at least this many ``zookeeper.session.timeout.ms``
from when it fired: the session expires, a successor is elected and sends its requests, and
the controller wakes a zombie (a stop that comes sooner leaves it paused until then; a stop
before it fired leaves it armed, to hold as long once it fires)."""

ARMED = "armed"
"""``Nemesis.active``'s value for a fault armed and waiting for its target."""

ARMED_ON_LAG = ("shutdown-last-isr", "reassign-lagging")
"""Targeted faults that, when their target does not exist at their start, make one and
are armed: they cut a follower off from its leader (``partition-one-follower``'s cut;
their stop heals it), and act at the first moment a partition offers a replica behind
(``impl.cluster.Cluster.arm_on_lag``: an ISR shrank -- their own cut's, after
``replica.lag.time.max.ms`` -- or a follower started catching up), on that partition. A
replica falls behind on its own only for moments, so waiting for one alone seldom
fires."""

HOLDS: dict[str, tuple[int, int]] = dict.fromkeys(ARMED_ON_LAG, (6, 5))
"""Faults that act some time after their start, each -> how long the schedule waits after
it before its next op, as a fraction (numerator, denominator) of ``replica.lag.time.max.ms``
(``jepsen_py.generator.nemesis_schedule(holds=...)``): the faults that make their own lag
(`ARMED_ON_LAG`) a fifth past it (the leader's ISR check, then the store's write)."""

TRANSFER = "transfer-leadership"

TRANSFER_DELAY_MS = (200, 1500)
"""When ``transfer-leadership`` cuts its follower off itself, it moves leadership there
this long after the cut (drawn in milliseconds): meanwhile the leader appends records the
follower misses (the acks=all producers' batches, waiting for it)."""

TRANSFER_AIM_NS = 2000 * MILLISECOND
"""How much longer than its drawn delay ``transfer-leadership``'s own move may wait for the
records it is aimed at: the replica the move leaves behind its target (the old leader; with
a stale follower, that follower) holding records the target lacks, as the brokers'
``LogEndOffset`` gauges show (``Cluster.log_end_offset``), checked every
`TRANSFER_AIM_POLL_NS`. With a few clients, each waiting on one send, a delay can pass with
nothing appended, and then the move leaves no records for the logs to part on. When the
wait runs out, it moves anyway."""

TRANSFER_AIM_POLL_NS = 50 * MILLISECOND

TRANSFER_AIM_RECORDS = 2
"""How many records the replica left behind must hold past the target for the aimed move.
Records the old leader appended and the target lacks are the acks=all producers' batches
still waiting; the idempotent producers send them again to the new leader. One alone comes
back first, to the same offset, so the logs then part on leader epochs only, not on values;
of two or more, sent by different producers, the new leader may append another first."""

LIFT_AFTER_MOVE_NS = 500 * MILLISECOND
"""When ``transfer-leadership`` stalls a follower's controller channel (KIP-320's stale
follower), it lifts the one-way cut that made its target lag this long after the move:
once the target leads, the old leader truncates to it (a round trip between the two)."""

GIVE_BACK_HEAL_NS = 1000 * MILLISECOND
"""How long after giving leadership back ``transfer-leadership`` heals its own cut and ends
its stall: the old leader, which never reached the follower it lost leadership to, takes
over again before it can truncate to it (KIP-279's window); a stale follower fetches from
it in its old epoch before it hears of the change."""

SETTLES: dict[str, int] = {
    TRANSFER: TRANSFER_DELAY_MS[1] * MILLISECOND
    + TRANSFER_AIM_NS
    + LIFT_AFTER_MOVE_NS
    + 500 * MILLISECOND
}
"""Faults that play out over steps of their own, each -> the least time from its start to
the schedule's next op (``jepsen_py.generator.nemesis_schedule(settles=...)``):
``transfer-leadership``'s own move comes at most `TRANSFER_DELAY_MS` plus `TRANSFER_AIM_NS`
after its start, its cut lifts `LIFT_AFTER_MOVE_NS` later, and the old leader then needs a
round trip to truncate. A stop sooner calls the move off or gives leadership back before
the old leader truncated; a fault started sooner (a partition, a kill) lands in the middle
of it."""

REASSIGNS = ("reassign", "reassign-lagging")
"""The faults that start a KIP-455 reassignment and cancel it, unfinished, at their stop."""

ALL = tuple(
    name
    for name in CATALOGUE
    if name != "kill-all" and name not in CONSUMER_FAULTS and name not in TARGETED
)
"""``--nemesis all``: every fault except whole-cluster loss of unflushed data, the
consumers' faults and the targeted ones (``TARGETED``)."""

ALIASES: dict[str, tuple[str, ...]] = {
    "all": ALL,
    "none": (),
    "network": ("loss", "duplicate", "delay", "reorder"),
    "disk": ("disk-lose-unflushed", "disk-truncate", "disk-bitflip"),
    "clock-skew": ("clock",),
    "leadership": ("controlled-shutdown", "preferred-election", "add-partitions", "reassign"),
    "targeted": tuple(TARGETED),
}

UNSUPPORTED: dict[str, str] = {}
"""Faults asked for by name that the simulator cannot perform, with the reason (none now)."""

CLOCK_BUMP_MS = (4, 65_536)
"""The range of a clock bump's magnitude, drawn log-uniformly (Jepsen: 2^2..2^18 ms)."""
CLOCK_RATES = ((1, 4), (1, 2), (1, 1), (1, 1), (2, 1), (4, 1))
"""Clock rates a skewed node may run at (numerator, denominator of global time)."""

_SHAPES = ("halves", "isolate", "leader", "bridge", "ring", "asymmetric")
"""The shapes ``partition`` draws from (``partition-controller`` and the targeted
``partition-followers``, ``partition-one-follower`` and ``partition-stale-follower`` are
named on their own)."""

_CRC_FIELD = 17
"""Where a batch's CRC-32C field starts (``impl.log.batch``); the CRC covers what follows."""

MAX_ADDED_PARTITIONS = 2
"""``add-partitions`` grows the topic at most this much over a run (simulation cost)."""

REORDER_BASE_DELAY_NS = 2 * MILLISECOND
"""The constant delay of a network built for ``reorder``: order is kept until it starts."""


def parse_faults(text: str | Sequence[str]) -> tuple[str, ...]:
    """``"partition,kill,pause"`` (or a list) as fault names, aliases expanded, in
    catalogue order, each once."""
    items = [t.strip() for t in text.split(",")] if isinstance(text, str) else list(text)
    chosen: set[str] = set()
    for item in items:
        if not item:
            continue
        if item in UNSUPPORTED:
            raise NemesisError(UNSUPPORTED[item])
        if item in ALIASES:
            chosen.update(ALIASES[item])
        elif item in CATALOGUE:
            chosen.add(item)
        else:
            names = ", ".join([*CATALOGUE, *ALIASES])
            raise NemesisError(f"unknown fault {item!r}; the faults are: {names}")
    return tuple(name for name in CATALOGUE if name in chosen)


def fault_of_op(f: str) -> tuple[str, str] | None:
    """(fault, "start" | "stop") for a nemesis op of the catalogue; None otherwise."""
    for name in CATALOGUE:
        start, stop = fault_ops(name)
        if f == start:
            return name, "start"
        if f == stop:
            return name, "stop"
    return None


def covered_bit(data: bytes, rng: random.Random) -> int:
    """A bit of a segment's ``data`` that a batch's CRC-32C covers (from the crc field to
    the batch's end), in a batch drawn from ``rng``. The fields before it (base offset,
    length, leader epoch, magic) are outside the CRC in Kafka too; a flip there is not left
    to chance (see ``impl.log.batch``). Data without a whole batch: any bit."""
    batches: list[tuple[int, int]] = []
    position = 0
    while (header := read_header(data, position)) is not None and header.size > 0:
        if position + header.size > len(data):
            break
        batches.append((position, header.size))
        position += header.size
    if not batches:
        return rng.randrange(len(data) * 8)
    start, size = batches[rng.randrange(len(batches))]
    return rng.randrange((start + _CRC_FIELD) * 8, (start + size) * 8)


def grudge_of(links: Iterable[Link]) -> dict[str, list[str]]:
    """Blocked links as Jepsen's grudge: node -> the nodes whose messages it drops."""
    grudge: dict[str, set[str]] = {}
    for src, dst in links:
        grudge.setdefault(dst, set()).add(src)
    return {dst: sorted(grudge[dst]) for dst in sorted(grudge)}


def links_of(grudge: Mapping[str, Sequence[str]]) -> frozenset[Link]:
    return frozenset((src, dst) for dst, srcs in grudge.items() for src in srcs)


@attrs.frozen
class _TransferPlan:
    """How ``transfer-leadership`` moves one partition's leadership to ``target`` and
    back (`Nemesis._cut_then_transfer`): the links it cuts first, those it heals at the
    move, and the controller channel it stalls (controller's broker, follower), if any."""

    partition: int
    target: int
    links: frozenset[Link]
    lift: frozenset[Link] = frozenset()
    stall: tuple[str, str] | None = None


def _both_ways(a: str, b: str) -> frozenset[Link]:
    """The two links between nodes ``a`` and ``b``."""
    return frozenset({(a, b), (b, a)})


def network_for(faults: Sequence[str], base: NetworkConfig | None = None) -> NetworkConfig:
    """The network a run with ``faults`` is built with: ``base`` (default: the simulator's
    default), or, with ``reorder``, the same without per-link order and a constant delay."""
    config = base if base is not None else NetworkConfig()
    if "reorder" in faults:
        return attrs.evolve(
            config,
            fifo=False,
            min_delay_ns=REORDER_BASE_DELAY_NS,
            max_delay_ns=REORDER_BASE_DELAY_NS,
        )
    return config


class Nemesis:
    """Performs nemesis ops on ``cluster``; tracks what each fault has running, so its stop
    undoes exactly that. ``rng`` draws targets for ops without a value."""

    def __init__(self, cluster: Cluster, rng: random.Random) -> None:
        self.cluster = cluster
        self.rng = rng
        self.base_network = cluster.network.config
        self.active: dict[str, Any] = {}
        """fault -> what it holds down: nodes killed or paused, network settings."""
        self.focus: int | None = None
        """The partition a running targeted partition fault aims at (``TARGETED``): while
        it runs, faults aimed at "a partition's leader" aim at that partition's, so that
        a compound acts on what its partition did (the leader of the follower it cut
        off), as Jepsen's composed nemeses do. None otherwise (a partition drawn)."""
        self.performed = 0
        self.healing = False
        """The run's final heal has begun (a stop op marked final,
        ``jepsen_py.history.op.is_final``): nothing stays armed past it."""
        self.fired: dict[str, dict[str, Any]] = {}
        """An armed fault (`ARMED_ON_LAG`) that acted -> what it did, for its stop."""
        self.cuts: dict[str, list[Link]] = {}
        """A fault that made its own lag (`ARMED_ON_LAG`) -> the links it cut, for its stop."""
        self.stalls: dict[str, tuple[str, str]] = {}
        """A fault that stalled a controller channel -> (controller's broker, broker): it
        ends with the fault's cut (`_heal_cut`)."""

    # ------------------------------------------------------------------ helpers

    @property
    def servers(self) -> list[str]:
        """What partitions and clock faults act on: the brokers and the store."""
        return [*(broker_node(b) for b in self.cluster.config.broker_ids), STORE]

    def controller(self) -> str | None:
        """The broker ``/controller`` names now (None: no controller)."""
        holder = self.cluster.store.controller
        return None if holder == NO_LEADER else broker_node(holder)

    @property
    def brokers(self) -> list[str]:
        return [broker_node(b) for b in self.cluster.config.broker_ids]

    def _state(self, node: str) -> NodeState:
        return self.cluster.nodes.state(node)

    def leader(self, partition: int | None = None) -> tuple[int, str | None]:
        """(partition, its leader's node) for ``partition``, else the one a running
        targeted partition aims at (``focus``), else one drawn at random; the leader is
        None when the partition has none."""
        config = self.cluster.config
        if partition is None and self.focus is not None:
            partition = self.focus
        if partition is None:
            partition = self.rng.randrange(config.partitions)
        state = self.cluster.store.partitions[(config.topic, partition)]
        return partition, None if state.leader == NO_LEADER else broker_node(state.leader)

    def _pick(self, nodes: Sequence[str], state: NodeState = NodeState.RUNNING) -> str | None:
        eligible = [n for n in nodes if self._state(n) is state]
        return eligible[self.rng.randrange(len(eligible))] if eligible else None

    # ------------------------------------------------------------------ dispatch

    def perform(self, f: str, value: Any) -> Any:
        """Do nemesis op ``f`` (with targets ``value``, or drawn when None); returns the
        completion's value: the concrete targets, or why nothing was done."""
        kind = fault_of_op(f)
        if kind is None:
            raise NemesisError(f"no fault has the op {f!r}")
        fault, edge = kind
        self.performed += 1
        group = CATALOGUE[fault].group
        given = value if isinstance(value, dict) else None
        if edge == "stop":
            if is_final(given):
                self.healing = True
            return getattr(self, f"_stop_{group}")(fault)
        return getattr(self, f"_start_{group}")(fault, given)

    # ------------------------------------------------------------------ partitions

    def _start_partition(self, fault: str, given: dict[str, Any] | None) -> Any:
        self.focus = None
        if given is not None and "grudge" in given:
            shape = given.get("shape", "given")
            links = links_of(given["grudge"])
            extra: dict[str, Any] = {k: v for k, v in given.items() if k not in ("grudge",)}
        else:
            shape = fault.removeprefix("partition-") if fault != "partition" else None
            if shape is None:
                shape = _SHAPES[self.rng.randrange(len(_SHAPES))]
            links, extra = self._shape(shape)
            extra = {"shape": shape, **extra}
        self.cluster.heal()
        self.cluster.partition(sorted(links))
        self.active[fault] = sorted(links)
        if fault in TARGETED and isinstance(extra.get("partition"), int):
            self.focus = extra["partition"]
        return {**extra, "grudge": grudge_of(links)}

    def _shape(self, shape: str) -> tuple[frozenset[Link], dict[str, Any]]:
        servers = self.servers
        order = list(servers)
        self.rng.shuffle(order)
        if shape == "halves":
            a, b = split_halves(order)
            return halves_links(a, b), {"halves": [sorted(a), sorted(b)]}
        if shape == "isolate":
            node = order[0]
            return isolate_links(servers, node), {"node": node}
        if shape == "leader":
            partition, leader = self.leader()
            node = leader if leader is not None else order[0]
            return isolate_links(servers, node), {"node": node, "partition": partition}
        if shape == "bridge":
            return bridge_links(order), {"bridge": order[len(order) // 2]}
        if shape == "ring":
            return majorities_ring_links(order), {"ring": order}
        if shape == "followers":
            partition, leader = self.leader()
            node = leader if leader is not None else order[0]
            others = [b for b in self.brokers if b != node]
            links = frozenset((node, o) for o in others) | frozenset((o, node) for o in others)
            return links, {"node": node, "partition": partition}
        if shape == "one-follower":
            # A partition whose leader is not the controller, when there is one: cut off
            # from the leader only, the follower still hears the controller (its ISR
            # changes, its promotion); cut off from a leader that is the controller, it
            # would hear neither.
            partition, leader = self.leader(self._led_apart_from_controller())
            followers = [b for b in self.brokers if b != leader]
            node = followers[self.rng.randrange(len(followers))]
            if leader is None:
                return isolate_links(servers, node), {"node": node, "partition": partition}
            links = frozenset({(node, leader), (leader, node)})
            return links, {"node": node, "leader": leader, "partition": partition}
        if shape == "stale-follower":
            # A partition whose leader is not the controller, when there is one: cut off
            # from the controller, the follower goes on fetching from its leader; cut off
            # from a leader that is the controller, it would fetch nothing.
            controller = self.controller()
            partition, leader = self.leader(self._led_apart_from_controller())
            followers = [b for b in self.brokers if b not in (leader, controller)]
            if controller is None or not followers:
                return isolate_links(servers, order[0]), {"node": order[0]}
            node = followers[self.rng.randrange(len(followers))]
            links = frozenset({(node, controller), (controller, node)})
            return links, {"node": node, "controller": controller, "partition": partition}
        if shape == "controller":
            node = self.controller() or self.brokers[self.rng.randrange(len(self.brokers))]
            if self.rng.random() < 0.5:
                links = frozenset({(node, STORE), (STORE, node)})
                return links, {"node": node, "cut_from": "store"}
            others = [b for b in self.brokers if b != node]
            links = frozenset((node, o) for o in others) | frozenset((o, node) for o in others)
            return links, {"node": node, "cut_from": "brokers"}
        if shape == "asymmetric":
            if self.rng.random() < 0.5:
                partition, leader = self.leader()
                node = leader if leader is not None else order[0]
            else:
                node = order[0]
            others = [s for s in servers if s != node]
            deaf = self.rng.random() < 0.5
            links = (
                frozenset((o, node) for o in others)
                if deaf
                else frozenset((node, o) for o in others)
            )
            return links, {"node": node, "direction": "deaf" if deaf else "mute"}
        raise NemesisError(f"unknown partition shape {shape!r}; shapes: {', '.join(_SHAPES)}")

    def _stop_partition(self, fault: str) -> Any:
        held = [name for name in self.active if CATALOGUE[name].group == "partition"]
        for name in held:
            del self.active[name]
        self.focus = None
        blocked = len(self.cluster.network.blocked_links())
        self.cluster.heal()
        return {"healed_links": blocked} if blocked else {"healed": "nothing was partitioned"}

    # ------------------------------------------------------------------ processes

    def _start_process(self, fault: str, given: dict[str, Any] | None) -> Any:
        if fault in self.active:
            return {"skipped": f"{fault} is already holding {self.active[fault]}"}
        if fault == DECIDING_PAUSE:
            # Armed now; the world stops the controller's broker at its next decision.
            self.cluster.pause_controller_at_decision(True)
            self.active[fault] = []
            return {"armed": True}
        if fault == "kill-all":
            nodes = given.get("nodes") if given is not None else None
            targets = [n for n in (nodes or self.brokers) if self._state(n).alive]
            for node in targets:
                self.cluster.crash(node)
            self.active[fault] = targets
            return {"nodes": targets}
        pause = fault.startswith("pause")
        out: dict[str, Any] = {}
        node = given.get("node") if given is not None else None
        if node is None:
            node, out = self._process_target(fault)
        if node is None:
            return {"skipped": "no running node to target"}
        if self._state(node) is not NodeState.RUNNING:
            return {"node": node, "skipped": f"{node} is {self._state(node).value}"}
        if pause:
            self.cluster.pause(node)
        elif fault in ("kill-consumer", "leave-consumer"):
            if self.cluster.groups is None:
                return {"node": node, "skipped": f"{fault} needs a consumer group"}
            if fault == "kill-consumer":
                out["process"] = self.cluster.kill_client(node)
            else:
                out["process"] = self.cluster.close_client(node)
        else:
            unflushed = sum(n for _, n in self._unflushed(node))
            if fault.startswith("sigkill"):
                # The machine stays up: the page cache, dirty pages included, survives.
                out["page_cache_kept"] = unflushed
                self.cluster.crash(node, power_loss=False)
            else:
                out["unflushed_bytes_lost"] = unflushed
                self.cluster.crash(node)
        self.active[fault] = [node]
        return {"node": node, **out}

    def _process_target(self, fault: str) -> tuple[str | None, dict[str, Any]]:
        if fault in TARGETED:
            return self._targeted(fault)
        if fault.endswith("-consumer"):
            return self._pick(self.cluster.consumer_names), {"consumer": True}
        if fault.endswith("-controller"):
            node = self.controller()
            if node is not None and self._state(node) is NodeState.RUNNING:
                return node, {"controller": True}
            return self._pick(self.brokers), {}
        if fault.endswith("-leader") or (fault == "pause" and self.rng.random() < 0.25):
            partition, leader = self.leader()
            if leader is not None and self._state(leader) is NodeState.RUNNING:
                return leader, {"leader_of": partition}
        controller = self.controller()
        if (
            fault == "pause"
            and self.rng.random() < 0.25
            and controller is not None
            and self._state(controller) is NodeState.RUNNING
        ):
            return controller, {"controller": True}
        return self._pick(self.brokers), {}

    def _targeted(self, fault: str) -> tuple[str | None, dict[str, Any]]:
        """The broker a targeted process fault (``TARGETED``) aims at, from the cluster's
        live state (the store's ISRs, the network's cut links); a fault whose target does
        not exist now falls back to the leader of a partition drawn at random."""
        running = NodeState.RUNNING
        if fault == "kill-last-isr":
            # The partition with the smallest ISR (ties drawn): its leader, which is in
            # the ISR, or else a running member. An ISR of one is Kafka's "last replica
            # standing" (KIP-966): its power loss is what unclean election and ELR decide.
            found: list[tuple[int, int, str]] = []
            for p, state in self._partition_states():
                members = [broker_node(b) for b in sorted(state.isr)]
                members = [n for n in members if self._state(n) is running]
                if members:
                    leader = None if state.leader == NO_LEADER else broker_node(state.leader)
                    found.append((len(state.isr), p, leader if leader in members else members[0]))
            if found:
                size, p, node = self._smallest_isr(found)
                return node, {"last_isr_of": p, "isr_size": size}
        elif fault == "kill-lagging":
            # A replica outside the ISR (lagging, cut off, or in KIP-966's ELR): the one
            # a clean election must not pick and an unclean one may.
            outside = [
                (p, broker_node(b))
                for p, state in self._partition_states()
                for b in state.replicas
                if b not in state.isr and self._state(broker_node(b)) is running
            ]
            if outside:
                p, node = self._draw(outside)
                return node, {"outside_isr_of": p}
        elif fault == "kill-isolated":
            # The broker the running partition cuts off from the most servers (the
            # minority side; the leader first among equals): Jepsen's partition, then
            # kill inside it.
            cut: dict[str, set[str]] = {}
            for src, dst in self.cluster.network.blocked_links():
                cut.setdefault(src, set()).add(dst)
                cut.setdefault(dst, set()).add(src)
            alive = {b: len(cut.get(b, ())) for b in self.brokers if self._state(b) is running}
            most = max(alive.values(), default=0)
            if most > 0:
                isolated = sorted(b for b, n in alive.items() if n == most)
                leaders = {self.leader(p)[1] for p, _ in self._partition_states()}
                node = next((b for b in isolated if b in leaders), None) or self._draw(isolated)
                return node, {"isolated_from": sorted(cut[node])}
        partition, leader = self.leader()
        if leader is not None and self._state(leader) is running:
            return leader, {"leader_of": partition}
        return self._pick(self.brokers), {}

    def _partition_states(self) -> list[tuple[int, Any]]:
        """(partition, its state in the store) for the workload topic's partitions."""
        topic = self.cluster.config.topic
        states = self.cluster.store.partitions
        return [(p, states[(t, p)]) for t, p in sorted(states) if t == topic]

    def _led_apart_from_controller(self) -> int | None:
        """A partition drawn among those led by a broker other than the controller's;
        None when none is."""
        controller = self.controller()
        others = [
            p
            for p, state in self._partition_states()
            if state.leader != NO_LEADER and broker_node(state.leader) != controller
        ]
        return self._draw(others) if others else None

    def _draw(self, items: Sequence[Any]) -> Any:
        return items[self.rng.randrange(len(items))]

    def _unflushed(self, node: str) -> list[tuple[str, int]]:
        return self.cluster.unflushed_files(self.cluster.broker_id(node))

    def _stop_deciding_pause(self) -> dict[str, Any]:
        """``pause-deciding-controller``'s stop. Fired: the pause holds until
        `ZOMBIE_PAUSE_SESSIONS` sessions from when it fired. Not fired yet: the pause stays
        armed for the controller's next decision (another fault's: a broker killed or cut
        from the store, leadership moved) and holds as long once it fires -- a stop before
        any decision would make it a no-op -- except at the run's final heal, which
        disarms it."""
        cluster = self.cluster
        running = self.active.pop(DECIDING_PAUSE, None) is not None
        hold = ZOMBIE_PAUSE_SESSIONS * cluster.config.session_timeout_ns
        node, since = cluster.paused_at_decision, cluster.paused_at_decision_since
        if node is None:
            if running and not self.healing:
                cluster.pause_controller_at_decision(True, hold_ns=hold)
                return {"armed": "until the controller's next decision", "hold_ns": hold}
            cluster.pause_controller_at_decision(False)
            return {"healed": "the controller decided nothing while armed"}
        cluster.pause_controller_at_decision(False)
        cluster.paused_at_decision = None
        wake = (since or 0) + hold
        if not running:  # fired after its stop: it wakes by itself (`Cluster.resume_at`)
            return {"nodes": [node], "paused_at": since, "wakes_at": wake}
        if self._state(node) is NodeState.PAUSED:
            # Held past zookeeper.session.timeout.ms, so that it wakes a zombie.
            if wake > cluster.clock.now:
                cluster.resume_at(node, wake)
                return {"nodes": [node], "wakes_at": wake}
            cluster.resume(node)
        return {"nodes": [node]}

    def _stop_process(self, fault: str) -> Any:
        if fault == DECIDING_PAUSE:
            return self._stop_deciding_pause()
        nodes = self.active.pop(fault, None)
        if not nodes:
            return {"healed": f"no {fault} to undo"}
        done = []
        for node in nodes:
            state = self._state(node)
            if fault.startswith("pause") and state is NodeState.PAUSED:
                self.cluster.resume(node)
                done.append(node)
            elif fault == "leave-consumer" and state is NodeState.RUNNING:
                self.cluster.rejoin_client(node)
                done.append(node)
            elif state in (NodeState.CRASHED, NodeState.STOPPED):
                self.cluster.restart(node)
                done.append(node)
        return {"nodes": done}

    # ------------------------------------------------------------------ leadership

    def _start_leadership(self, fault: str, given: dict[str, Any] | None) -> Any:
        if fault in REASSIGNS:
            return self._start_reassign(fault, given)
        if fault == "add-partitions":
            return self._start_add_partitions(given)
        if fault == "transfer-leadership":
            return self._start_transfer(given)
        if fault == "preferred-election":
            queued = self.cluster.preferred_election()
            if queued is None:
                return {"skipped": "no controller acts now"}
            return {"queued": queued}
        if fault in self.active:
            return {"skipped": f"{fault} is already holding {self.active[fault]}"}
        node = given.get("node") if given is not None else None
        out: dict[str, Any] = {}
        if node is None and fault == "shutdown-last-isr":
            node, out = self._shrunk_leader()
            if node is None or (given is not None and given.get("armed")):
                return self._make_lag(fault, given)
        if node is None:
            if self.rng.random() < 0.5:
                partition, leader = self.leader()
                if leader is not None and self._state(leader) is NodeState.RUNNING:
                    node, out = leader, {"leader_of": partition}
            if node is None:
                node = self._pick(self.brokers)
        if node is None:
            return {"skipped": "no running server to target"}
        if not self.cluster.controlled_shutdown(node):
            return {"node": node, "skipped": f"{node} is {self._state(node).value}"}
        self.active[fault] = [node]
        return {"node": node, **out}

    def _start_transfer(self, given: dict[str, Any] | None) -> Any:
        """Leadership of one partition moved to a chosen ISR follower, as an operator does
        it in Kafka: a reassignment to the same replicas with that follower first (KIP-455;
        no data moves), then a preferred-leader election of that partition (KIP-460's
        ``ElectLeaders``); Jepsen's Redpanda test has the same nemesis. The follower is an
        ISR member cut off from its leader: it still counts as in sync until
        ``replica.lag.time.max.ms`` passes, so it is eligible, yet it has not fetched what
        the leader appended since the cut. A running partition fault's cut when there is
        one; else the fault makes one itself (`_cut_then_transfer`), drawn among two
        plans (`_TransferPlan`) over the partitions it may act on:

        - KIP-279's double failover: a follower, leader and follower not the controller's
          broker (both must hear it), cut off from its leader; leadership moves there
          `TRANSFER_DELAY_MS` later, and the old leader, which cannot reach it, keeps the
          records it appended meanwhile;
        - KIP-320's stale follower: the controller's channel to the third replica stalls
          (``Cluster.stall_channel``: it hears no LeaderAndIsr and goes on fetching from
          the leader it knows); the target, the controller's broker or a follower of the
          controller, lags behind a one-way cut toward the controller's broker that its
          requests still cross; leadership moves there `TRANSFER_DELAY_MS` later, the cut
          lifts `LIFT_AFTER_MOVE_NS` after, and the old leader truncates to the new one.

        Its stop gives leadership back (`_stop_transfer`): leadership moving there and away
        again before the ISR shrinks is KIP-279's double failover, and, with a stale
        follower, KAFKA-6880's: the follower fetches from the old leader again, in its old
        epoch, on top of records the old leader truncated. With no plan, any running ISR
        follower of a partition drawn at random. A follower the controller cannot reach is
        never chosen:
        it would not hear of its promotion."""
        self._heal_pending_cut()
        topic = self.cluster.config.topic
        if given is not None:
            partition, target = int(given["partition"]), tuple(given["target"])
            if "grudge" in given and "after_ns" in given:
                links = links_of(given["grudge"])
                lift = links_of(given.get("lift", {}))
                after = int(given["after_ns"])
                stall = given.get("stall")
                return self._cut_then_transfer(
                    partition, target, links, after, lift, tuple(stall) if stall else None
                )
            out: dict[str, Any] = {"partition": partition, "target": list(target)}
            return self._transfer_held(partition, target, out)
        network = self.cluster.network
        controller = self.controller()
        running = NodeState.RUNNING

        def apart(a: str | None, b: str) -> bool:
            return a is not None and (network.is_blocked(a, b) or network.is_blocked(b, a))

        candidates: list[tuple[bool, int, int, tuple[int, ...]]] = []
        plans: list[_TransferPlan] = []
        for p, state in self._partition_states():
            if state.leader == NO_LEADER:
                continue
            leader = broker_node(state.leader)
            for b in sorted(state.isr):
                node = broker_node(b)
                if b == state.leader or self._state(node) is not running:
                    continue
                if apart(controller, node):
                    continue  # it would never hear the LeaderAndIsr that promotes it
                candidates.append((apart(leader, node), p, b, tuple(state.replicas)))
                if controller is None or apart(leader, node):
                    continue
                if controller not in (node, leader):
                    # KIP-279's double failover: the target, cut off from the leader,
                    # misses what it appends; the old leader cannot truncate to it.
                    plans.append(_TransferPlan(p, b, _both_ways(node, leader)))
                    continue
                # KIP-320's stale follower: the third replica, its controller channel
                # stalled, goes on fetching from the leader it knows while leadership
                # moves to the target and back. The target lags: what the other of the
                # two sends to the controller's broker is cut off (the target's fetch
                # responses, or its fetches) until shortly after the move, which the
                # controller's requests still carry; the old leader then truncates to it.
                other = leader if controller == node else node
                toward = frozenset({(other, controller)})
                for r in state.replicas:
                    third = broker_node(r)
                    if r in (b, state.leader) or self._state(third) is not running:
                        continue
                    if not apart(leader, third):
                        plans.append(_TransferPlan(p, b, toward, toward, (controller, third)))
        if not candidates:
            return {"skipped": "no partition has a running ISR follower"}
        if any(c[1] == self.focus for c in candidates):
            # A running targeted partition's: leadership moves where its cut acts.
            candidates = [c for c in candidates if c[1] == self.focus]
            plans = [plan for plan in plans if plan.partition == self.focus]
        cut_off = [c for c in candidates if c[0]]
        if not cut_off and plans:
            plan = self._draw(plans)
            replicas = tuple(self.cluster.store.partitions[(topic, plan.partition)].replicas)
            target = (plan.target, *(r for r in replicas if r != plan.target))
            after = self.rng.randint(*TRANSFER_DELAY_MS) * MILLISECOND
            return self._cut_then_transfer(
                plan.partition, target, plan.links, after, plan.lift, plan.stall
            )
        cut, partition, chosen, replicas = self._draw(cut_off or candidates)
        target = (chosen, *(r for r in replicas if r != chosen))
        out = {"partition": partition, "target": list(target), "cut_off": cut}
        return self._transfer_held(partition, target, out)

    def _transfer_held(
        self, partition: int, target: tuple[int, ...], out: dict[str, Any]
    ) -> dict[str, Any]:
        """`_transfer`, remembering the partition's leader before it, for the stop."""
        leader = self.cluster.store.partitions[(self.cluster.config.topic, partition)].leader
        done = self._transfer(partition, target, out)
        if "queued" in done and leader != NO_LEADER:
            self.active[TRANSFER] = (partition, leader, target)
        return done

    def _cut_then_transfer(
        self,
        partition: int,
        target: tuple[int, ...],
        links: Iterable[Link],
        after_ns: int,
        lift: frozenset[Link] = frozenset(),
        stall: tuple[str, str] | None = None,
    ) -> dict[str, Any]:
        """Cut ``links`` (``target[0]``, the follower leadership moves to, off from its
        leader, one way or both), focused on as a targeted partition's cut is, stall the
        controller's channel ``stall`` (its broker, a follower: ``Cluster.stall_channel``)
        if given, and move leadership to ``target[0]`` ``after_ns`` later; ``lift``, links
        of the cut, heal `LIFT_AFTER_MOVE_NS` after the move (the old leader then truncates
        to the new one). The move is aimed: it waits up to `TRANSFER_AIM_NS` more for the
        replica it leaves behind (the stalled follower, else the old leader) to hold records
        the target lacks. The move's outcome goes in the stop's completion (``fired``). The
        stall ends with the cut (`_heal_cut`)."""
        self._hold_cut(TRANSFER, links, partition)
        if stall is not None:
            self.cluster.stall_channel(*stall)
            self.stalls[TRANSFER] = stall
        topic = self.cluster.config.topic
        left_behind = (
            self.cluster.broker_id(stall[1])
            if stall is not None
            else self.cluster.store.partitions[(topic, partition)].leader
        )
        due = self.cluster.clock.now + after_ns
        deadline = due + TRANSFER_AIM_NS

        def move() -> None:
            now = self.cluster.clock.now
            if now < deadline and not self._holds_more(partition, left_behind, target[0]):
                self.cluster.call_at(now + TRANSFER_AIM_POLL_NS, f"{TRANSFER}/move", move)
                return
            self.fired[TRANSFER] = {
                **self._transfer_held(partition, target, {}),
                "waited_ns": now - due,
            }
            if lift:
                at = now + LIFT_AFTER_MOVE_NS
                self.cluster.call_at(at, f"{TRANSFER}/lift", lambda: self._lift_cut(TRANSFER, lift))

        self.cluster.call_at(due, f"{TRANSFER}/move", move)
        done = {
            "partition": partition,
            "target": list(target),
            "cut_off": True,
            "grudge": grudge_of(self.cuts[TRANSFER]),
            "after_ns": after_ns,
        }
        if lift:
            done["lift"] = grudge_of(sorted(lift))
        if stall is not None:
            done["stall"] = list(stall)
        return done

    def _holds_more(self, partition: int, ahead: int, behind: int) -> bool:
        """Whether broker ``ahead``'s replica of ``partition`` ends `TRANSFER_AIM_RECORDS` or
        more past broker ``behind``'s (their ``LogEndOffset`` gauges); False when either
        cannot be read."""
        a = self.cluster.log_end_offset(ahead, partition)
        b = self.cluster.log_end_offset(behind, partition)
        return a is not None and b is not None and a >= b + TRANSFER_AIM_RECORDS

    def _transfer(
        self, partition: int, target: tuple[int, ...], out: dict[str, Any]
    ) -> dict[str, Any]:
        """Reassign ``partition`` to ``target`` (its replicas, reordered) and elect its
        preferred replica, the completion ``out`` says how it went."""
        result = self.cluster.reassign(partition, target)
        if result != "NONE":
            return {**out, "skipped": f"reassignment refused: {result}"}
        queued = self.cluster.preferred_election(partition)
        if queued is None:
            return {**out, "skipped": "no controller acts now"}
        return {**out, "queued": queued}

    def _stop_transfer(self) -> dict[str, Any]:
        """Give leadership back to the leader the move took it from (`_transfer` with that
        broker first: still in the ISR while ``replica.lag.time.max.ms`` has not passed),
        unless the assignment changed since; a move not yet made is called off. The
        fault's own cut heals `GIVE_BACK_HEAL_NS` after a give-back (the old leader must not
        reach the follower before it leads again), else now."""
        self.cluster.cancel_call(f"{TRANSFER}/move")
        self.cluster.cancel_call(f"{TRANSFER}/lift")
        fired = self.fired.pop(TRANSFER, None)
        done = {} if fired is None else {"fired": fired}
        moved = self.active.pop(TRANSFER, None)
        if moved is not None:
            partition, leader, target = moved
            state = self.cluster.store.partitions[(self.cluster.config.topic, partition)]
            original = (leader, *(r for r in target if r != leader))
            back: dict[str, Any] = {"partition": partition, "target": list(original)}
            if tuple(state.replicas) != target or state.reassigning:
                done |= {**back, "skipped": "the assignment changed since"}
            else:
                done |= self._transfer(partition, original, back)
        if done.get("queued") and TRANSFER in self.cuts:
            at = self.cluster.clock.now + GIVE_BACK_HEAL_NS
            self.cluster.call_at(at, f"{TRANSFER}/heal", lambda: self._heal_cut(TRANSFER))
            return {**done, "cut_heals_at": at}
        return {**done, **self._heal_cut(TRANSFER)}

    def _heal_pending_cut(self) -> None:
        """Heal now a cut a stop left to heal later (`GIVE_BACK_HEAL_NS`): a new start
        begins from a whole network."""
        if self.cluster.cancel_call(f"{TRANSFER}/heal"):
            self._heal_cut(TRANSFER)

    def _start_add_partitions(self, given: dict[str, Any] | None) -> Any:
        topic = self.cluster.config.topic
        current = sum(1 for t, _ in self.cluster.store.partitions if t == topic)
        total = int(given["total"]) if given is not None else current + 1
        if given is None and total > self.cluster.config.partitions + MAX_ADDED_PARTITIONS:
            return {"skipped": f"already {current} partitions"}
        created = self.cluster.add_partitions(total)
        if created is None:
            return {"skipped": "no controller acts now"}
        return {"total": total, "created": created}

    def _arm_on_lag(self, fault: str) -> dict[str, Any]:
        """Arm ``fault`` (`ARMED_ON_LAG`): it acts right after the next ISR shrink."""
        self.active[fault] = ARMED
        self.cluster.arm_on_lag(fault, lambda topic, p: self._fire(fault, topic, p))
        return {"armed": True}

    def _make_lag(self, fault: str, given: dict[str, Any] | None) -> dict[str, Any]:
        """Arm ``fault`` (`ARMED_ON_LAG`) and make its target: one follower cut off from its
        partition's leader only (``partition-one-follower``'s cut, ``given``'s grudge when
        replayed), focused on as a targeted partition's is. The leader drops it from the ISR
        after ``replica.lag.time.max.ms`` and the fault acts on that partition then, the
        follower still cut off: a replica that misses acknowledged writes and runs. No cut
        when no partition has a leader."""
        armed = self._arm_on_lag(fault)
        if given is not None:
            if "grudge" not in given:
                return armed
            links = links_of(given["grudge"])
            extra = {k: given[k] for k in ("node", "leader", "partition") if k in given}
        else:
            cut, extra = self._shape("one-follower")
            if "leader" not in extra:
                return armed
            links = cut
        partition = extra.get("partition")
        self._hold_cut(fault, links, partition if isinstance(partition, int) else None)
        return {**armed, **extra, "grudge": grudge_of(links)}

    def _hold_cut(self, fault: str, links: Iterable[Link], partition: int | None) -> None:
        """Cut ``links`` for ``fault`` until `_heal_cut` (its own cut, beside any partition
        fault's), focused on ``partition`` as a targeted partition's cut is."""
        cut = sorted(links)
        self.cluster.partition(cut)
        self.cuts[fault] = cut
        if partition is not None:
            self.focus = partition

    def _lift_cut(self, fault: str, links: frozenset[Link]) -> None:
        """Heal ``links`` of ``fault``'s own cut (`_hold_cut`) now, but those a running
        partition fault holds too; the rest of the cut stays."""
        cut = self.cuts.get(fault)
        if cut is None:
            return
        self.cuts[fault] = [link for link in cut if link not in links]
        held = self._held_by_partitions()
        self.cluster.network.unblock(link for link in links if link not in held)

    def _held_by_partitions(self) -> set[Link]:
        """The links the running partition faults cut."""
        return {
            link
            for name, links in self.active.items()
            if CATALOGUE[name].group == "partition"
            for link in links
        }

    def _heal_cut(self, fault: str) -> dict[str, Any]:
        """Heal the links ``fault`` cut (`_make_lag`), but those a running partition fault
        holds too, and end the controller channel it stalled; the completion's part."""
        stall = self.stalls.pop(fault, None)
        if stall is not None:
            self.cluster.release_channel(*stall)
        cut = self.cuts.pop(fault, None)
        if cut is None:
            return {}
        held = self._held_by_partitions()
        self.cluster.network.unblock(link for link in cut if link not in held)
        if not held and not self.cuts:
            self.focus = None
        return {"cut_healed": len(cut)}

    def _fire(self, fault: str, topic: str, partition: int) -> None:
        """A partition may have a replica behind while ``fault`` is armed: it acts on that
        partition now, its targets kept for its stop's completion (``fired``); armed again
        when the partition offers no target (not the workload's topic, no replica behind,
        for the shutdown none running)."""
        if self.active.get(fault) != ARMED:
            return
        if topic == self.cluster.config.topic and fault == "shutdown-last-isr":
            node, out = self._shrunk_leader(partition)
            if node is not None and self.cluster.controlled_shutdown(node):
                self.active[fault] = [node]
                self.fired[fault] = {"node": node, **out}
                return
        elif topic == self.cluster.config.topic:
            lagging = self._lagging_target(partition)
            if lagging is not None:
                self.fired[fault] = self._move(fault, *lagging)
                return
        self._arm_on_lag(fault)

    def _disarm(self, fault: str) -> dict[str, Any] | None:
        """Stop an armed ``fault`` that has not acted: its completion; None if it acted
        (or was never armed)."""
        if self.active.get(fault) != ARMED:
            return None
        del self.active[fault]
        self.cluster.disarm_lag(fault)
        return {"healed": "no ISR shrank while it was armed"}

    def _shrunk_leader(self, partition: int | None = None) -> tuple[str | None, dict[str, Any]]:
        """For ``shutdown-last-isr``: the running leader of a partition whose ISR is smaller
        than its replicas and which has a replica outside the ISR that runs (one a faulty
        shutdown could hand the leadership to) -- ``partition``, else the one with the
        smallest ISR (ties drawn); (None, {}) when there is none."""
        running = NodeState.RUNNING
        found = [
            (len(state.isr), p, broker_node(state.leader))
            for p, state in self._partition_states()
            if (partition is None or p == partition)
            and state.leader != NO_LEADER
            and len(state.isr) < len(state.replicas)
            and self._state(broker_node(state.leader)) is running
            and any(
                b not in state.isr and self._state(broker_node(b)) is running
                for b in state.replicas
            )
        ]
        if not found:
            return None, {}
        size, p, node = self._smallest_isr(found)
        return node, {"leader_of": p, "isr_size": size}

    def _smallest_isr(self, found: list[tuple[int, int, str]]) -> tuple[int, int, str]:
        """Of (ISR size, partition, broker) candidates, one with the smallest ISR (ties
        drawn)."""
        least = min(size for size, _, _ in found)
        return self._draw([f for f in found if f[0] == least])

    def _lagging_target(
        self, partition: int | None = None
    ) -> tuple[int, tuple[int, ...], list[int]] | None:
        """For ``reassign-lagging``: (partition, target, the replicas behind), the target
        being the partition's replicas that are behind -- outside the ISR (down ones too: a
        move onto a broker that is down), or running ISR members cut off from the leader --
        then its ISR followers and last its leader, up
        to ``min.insync.replicas``. Only ``partition`` when given; else the focused
        partition (``focus``) first, else one drawn among those with a replica behind; None
        when no partition has one."""
        network = self.cluster.network
        min_isr = self.cluster.config.min_insync_replicas
        found = []
        for p, state in self._partition_states():
            if state.leader == NO_LEADER or state.reassigning:
                continue
            if partition is not None and p != partition:
                continue
            leader = broker_node(state.leader)
            behind = []
            for b in state.replicas:
                node = broker_node(b)
                if b == state.leader:
                    continue
                if b not in state.isr or (
                    self._state(node) is NodeState.RUNNING and network.is_blocked(leader, node)
                ):
                    behind.append(b)
            if behind:
                followers = [b for b in sorted(state.isr) if b != state.leader and b not in behind]
                pad = [*followers, state.leader][: max(0, min_isr - len(behind))]
                found.append((p, (*behind, *pad), behind))
        if not found:
            return None
        focused = [f for f in found if f[0] == self.focus]
        return focused[0] if focused else self._draw(found)

    def _start_reassign(self, fault: str, given: dict[str, Any] | None) -> Any:
        config = self.cluster.config
        if fault == "reassign-lagging":
            if fault in self.active:
                return {"skipped": f"{fault} is already holding {self.active[fault]}"}
            if given is None:
                lagging = self._lagging_target()
                if lagging is None:
                    return self._make_lag(fault, given)
                return self._move(fault, *lagging)
            if given.get("armed"):
                return self._make_lag(fault, given)
        if given is not None:
            return self._move(fault, int(given["partition"]), tuple(given["target"]))
        partition = self.rng.randrange(config.partitions)
        rf = self.rng.randint(min(config.min_insync_replicas, config.brokers), config.brokers)
        return self._move(fault, partition, tuple(self.rng.sample(list(config.broker_ids), rf)))

    def _move(
        self,
        fault: str,
        partition: int,
        target: tuple[int, ...],
        behind: list[int] | None = None,
    ) -> dict[str, Any]:
        """Reassign ``partition`` to ``target`` for ``fault`` (held as active until its
        stop, when the controller took it); the completion (``behind``: the replicas
        ``reassign-lagging`` aimed at)."""
        result = self.cluster.reassign(partition, target)
        if result == "NONE":
            self.active[fault] = partition
        else:
            self.active.pop(fault, None)
        aimed = {} if behind is None else {"behind": behind}
        return {"partition": partition, "target": list(target), **aimed, "result": result}

    def _stop_leadership(self, fault: str) -> Any:
        if fault == TRANSFER:
            return self._stop_transfer()
        healed = self._heal_cut(fault)
        disarmed = self._disarm(fault)
        if disarmed is not None:
            return {**disarmed, **healed}
        fired = self.fired.pop(fault, None)
        done = self._undo_leadership(fault)
        return {**done, **healed} if fired is None else {**done, **healed, "fired": fired}

    def _undo_leadership(self, fault: str) -> Any:
        if fault in REASSIGNS:
            partition = self.active.pop(fault, None)
            if partition is None:
                return {}
            state = self.cluster.store.partitions[(self.cluster.config.topic, partition)]
            if not state.reassigning:
                return {"partition": partition, "completed": True}
            return {"partition": partition, "cancel": self.cluster.reassign(partition, None)}
        if fault in ("preferred-election", "add-partitions"):
            return {}  # an election is not undone, a topic never shrinks
        for node in self.active.get(fault, []):
            # Still waiting for its leaderships to move: it stops now anyway, as Kafka's
            # shutdown does once its retries are spent; then it restarts.
            self.cluster.finish_controlled_shutdown(node)
        return self._stop_process(fault)

    # ------------------------------------------------------------------ network

    def _network_config(self) -> NetworkConfig:
        config = self.base_network
        for fault in sorted(self.active):
            if CATALOGUE[fault].group == "network":
                config = attrs.evolve(config, **self.active[fault])
        return config

    def _start_network(self, fault: str, given: dict[str, Any] | None) -> Any:
        if given is not None:
            settings = dict(given)
        elif fault == "loss":
            settings = {"drop_probability": round(0.05 + 0.25 * self.rng.random(), 3)}
        elif fault == "duplicate":
            settings = {"duplicate_probability": round(0.1 + 0.4 * self.rng.random(), 3)}
        elif fault == "delay":
            settings = {"min_delay_ns": 20 * MILLISECOND, "max_delay_ns": 300 * MILLISECOND}
        else:
            if self.base_network.fifo:
                raise NemesisError(
                    "reorder needs a network without per-link order: build the cluster's "
                    "network with jepsen_py.nemesis.network_for(faults)"
                )
            settings = {"min_delay_ns": 0, "max_delay_ns": 50 * MILLISECOND}
        self.active[fault] = settings
        self.cluster.network.reconfigure(self._network_config())
        return settings

    def _stop_network(self, fault: str) -> Any:
        settings = self.active.pop(fault, None)
        self.cluster.network.reconfigure(self._network_config())
        return {"restored": fault} if settings is not None else {"healed": f"no {fault} running"}

    # ------------------------------------------------------------------ clocks

    def _start_clock(self, fault: str, given: dict[str, Any] | None) -> Any:
        if given is not None and "skews" in given:
            skews = {str(n): int(v) for n, v in given["skews"].items()}
            rates = {str(n): (int(r[0]), int(r[1])) for n, r in given.get("rates", {}).items()}
        else:
            servers = self.servers
            chosen = [n for n in servers if self.rng.random() < 0.5]
            if not chosen:
                chosen = [servers[self.rng.randrange(len(servers))]]
            skews, rates = {}, {}
            low, high = (math.log2(b) for b in CLOCK_BUMP_MS)
            for node in chosen:
                sign = 1 if self.rng.random() < 0.5 else -1
                skews[node] = sign * round(2 ** self.rng.uniform(low, high)) * MILLISECOND
                rate = CLOCK_RATES[self.rng.randrange(len(CLOCK_RATES))]
                if rate != (1, 1):
                    rates[node] = rate
        unknown = sorted((set(skews) | set(rates)) - set(self.cluster.nodes.names))
        if unknown:
            raise NemesisError(f"clock: no such nodes {unknown}; the servers are {self.servers}")
        for node in sorted(set(skews) | set(rates)):
            self.cluster.skew_clock(node, skews.get(node, 0), rates.get(node, (1, 1)))
        held = set(self.active.get(fault, ())) | set(skews) | set(rates)
        self.active[fault] = sorted(held)
        return {
            "skews": dict(sorted(skews.items())),
            "rates": {n: list(r) for n, r in sorted(rates.items())},
        }

    def _stop_clock(self, fault: str) -> Any:
        nodes = self.active.pop(fault, None)
        self.cluster.reset_clocks()
        return {"reset": nodes} if nodes else {"healed": "no clock was skewed"}

    # ------------------------------------------------------------------ disks

    def _start_disk(self, fault: str, given: dict[str, Any] | None) -> Any:
        if fault in self.active:
            return {"skipped": f"{fault} is already holding {self.active[fault]}"}
        node = given.get("node") if given is not None else self._pick(self.brokers)
        if node is None:
            return {"skipped": "no running broker"}
        if not self._state(node).alive:
            return {"node": node, "skipped": f"{node} is {self._state(node).value}"}
        broker = self.cluster.broker_id(node)
        disk = self.cluster.disks[broker]
        out: dict[str, Any] = {"node": node}
        if fault == "disk-lose-unflushed":
            torn = self._torn(disk, given)
            out["unflushed_bytes"] = sum(n for _, n in self.cluster.unflushed_files(broker))
            self.cluster.crash(node, torn=torn)
            out["kept"] = torn
        else:
            # A damaged file, not a power loss: the process dies, the page cache survives,
            # and the file is found damaged when the broker starts again.
            out["page_cache_kept"] = sum(n for _, n in self._unflushed(node))
            self.cluster.crash(node, power_loss=False)
            out.update(self._damage(fault, disk, given))
        self.active[fault] = [node]
        return out

    def _torn(self, disk: Any, given: dict[str, Any] | None) -> dict[str, int]:
        """How many unflushed bytes each file keeps: as given (clamped to what the file
        has now), or drawn uniformly in [0, unflushed]."""
        torn: dict[str, int] = {}
        wanted = given.get("kept", {}) if given is not None else None
        for path in disk.paths():
            if disk.durable_image(path) is None:
                continue
            unflushed = disk.unflushed_bytes(path)
            if unflushed <= 0:
                continue
            if wanted is None:
                torn[path] = self.rng.randint(0, unflushed)
            elif path in wanted:
                torn[path] = min(int(wanted[path]), unflushed)
        return torn

    def _damage(self, fault: str, disk: Any, given: dict[str, Any] | None) -> dict[str, Any]:
        path = given.get("path") if given is not None else None
        if path is None:
            segments = [p for p in disk.paths() if p.endswith(".log")]
            directories = sorted({p.split("/", 1)[0] for p in segments})
            # Each partition's active segment (its newest), if it holds anything.
            active = [max(p for p in segments if p.startswith(d + "/")) for d in directories]
            active = [p for p in active if disk.size(p) > 0]
            if not active:
                return {"skipped": "no partition has data on this disk"}
            path = active[self.rng.randrange(len(active))]
        if not disk.exists(path) or disk.size(path) == 0:
            return {"path": path, "skipped": "the segment is empty or gone"}
        size = disk.size(path)
        if fault == "disk-truncate":
            if given is not None and "bytes" in given:
                cut = min(int(given["bytes"]), size)
            else:
                cut = self.rng.randint(1, min(size, 4096))
            disk.truncate_tail(path, cut)
            return {"path": path, "bytes": cut, "size": size}
        if given is not None and "bit" in given and int(given["bit"]) < size * 8:
            bit = int(given["bit"])
        else:
            bit = covered_bit(disk.read(path), self.rng)
        disk.flip_bit(path, bit)
        return {"path": path, "bit": bit, "size": size}

    def _stop_disk(self, fault: str) -> Any:
        nodes = self.active.pop(fault, None)
        if not nodes:
            return {"healed": f"no {fault} to undo"}
        done: list[str] = []
        for node in nodes:
            if self._state(node) in (NodeState.CRASHED, NodeState.STOPPED):
                try:
                    self.cluster.restart(node)
                except IllegalEvent as exc:  # pragma: no cover - guarded by the state check
                    return {"nodes": done, "error": str(exc)}
                done.append(node)
        return {"nodes": done}


# --- explicit schedules ---------------------------------------------------------------


def canonical(value: Any) -> Any:
    """``value`` as JSON would read it back, with every object's keys sorted: so a value
    written to ``test.json`` (sorted) and one built in memory serialize to the same bytes."""
    return orjson.loads(orjson.dumps(value, option=orjson.OPT_SORT_KEYS))


@attrs.frozen
class ScheduleStep:
    """One nemesis op of an explicit schedule: at ``time`` (ns), op ``f`` with ``value``
    (the targets; None: drawn when performed)."""

    time: int
    f: str
    value: Any = attrs.field(default=None, converter=canonical)

    def to_json(self) -> dict[str, Any]:
        return {"time": self.time, "f": self.f, "value": self.value}

    @classmethod
    def from_json(cls, data: Any) -> ScheduleStep:
        if not isinstance(data, dict) or not isinstance(data.get("time"), int):
            raise NemesisError(
                f"a schedule step is {{'time': ns, 'f': op, 'value': ...}}: {data!r}"
            )
        f = data.get("f")
        if not isinstance(f, str) or fault_of_op(f) is None:
            raise NemesisError(f"schedule step {data!r}: {f!r} is no fault's start or stop op")
        return cls(data["time"], f, data.get("value"))


@attrs.frozen(slots=True)
class _Scripted(Gen):
    steps: tuple[ScheduleStep, ...]
    position: int

    def op(self, ctx: Context) -> Step:
        if self.position >= len(self.steps):
            # Never exhausted: a schedule ends when its phase does (a time limit), so that
            # what follows (the final heal) happens when it would have with the faults
            # the schedule was read from.
            return Pending(None), self
        step = self.steps[self.position]
        if ctx.time < step.time:
            return Pending(step.time), self
        thread = ctx.first_free()
        if thread is None:
            return Pending(None), self
        inv = Invocation(ctx.time, thread, ctx.workers[thread], step.f, None, step.value)
        return inv, _Scripted(self.steps, self.position + 1)


def scripted(steps: Sequence[ScheduleStep]) -> Gen:
    """The nemesis ops of an explicit schedule, each at its time (in time order), on the
    nemesis thread; then nothing, until a time limit around it ends it."""
    ordered = tuple(sorted(steps, key=lambda s: s.time))
    if any(s.time < 0 for s in ordered):
        raise GeneratorError("schedule steps need times >= 0 ns")
    return on_nemesis(_Scripted(ordered, 0))


def realized_schedule(history: Iterable[Op], before: int | None = None) -> list[ScheduleStep]:
    """The faults a run performed, with the concrete targets its completions recorded (the
    nemesis logs each op twice, invocation and completion, both ``info``), as a schedule
    that replays them; only ops invoked before ``before`` (the end of the main phase)."""
    steps: list[ScheduleStep] = []
    invoked: Op | None = None
    for op in history:
        if op.is_client or fault_of_op(op.f) is None:
            continue
        if invoked is None:
            invoked = op
            continue
        if op.f != invoked.f:
            raise NemesisError(
                f"history index {op.index}: nemesis op {op.f!r} completes {invoked.f!r}; "
                "the nemesis runs one op at a time"
            )
        if before is None or invoked.time < before:
            kind = fault_of_op(op.f)
            assert kind is not None
            if kind[1] == "stop":
                steps.append(ScheduleStep(invoked.time, op.f, None))
            elif isinstance(op.value, dict) and "skipped" not in op.value:
                # A start that did nothing (no target) replays as nothing: left out.
                steps.append(ScheduleStep(invoked.time, op.f, op.value))
        invoked = None
    return steps


def fault_windows(steps: Sequence[ScheduleStep]) -> list[tuple[ScheduleStep, ...]]:
    """The schedule as units for shrinking: each start with the stop of the same fault that
    follows it (or alone when none does); stray stops alone."""
    units: list[tuple[ScheduleStep, ...]] = []
    used: set[int] = set()
    for i, step in enumerate(steps):
        if i in used:
            continue
        kind = fault_of_op(step.f)
        assert kind is not None, step
        fault, edge = kind
        if edge == "stop":
            units.append((step,))
            used.add(i)
            continue
        stop = fault_ops(fault)[1]
        j = next(
            (k for k in range(i + 1, len(steps)) if k not in used and steps[k].f == stop), None
        )
        if j is None:
            units.append((step,))
            used.add(i)
        else:
            units.append((step, steps[j]))
            used.update((i, j))
    return units


__all__ = [
    "ALIASES",
    "ALL",
    "CATALOGUE",
    "HOLDS",
    "SETTLES",
    "TARGETED",
    "Fault",
    "Nemesis",
    "NemesisError",
    "ScheduleStep",
    "canonical",
    "covered_bit",
    "fault_of_op",
    "fault_windows",
    "grudge_of",
    "links_of",
    "network_for",
    "parse_faults",
    "realized_schedule",
    "scripted",
]
