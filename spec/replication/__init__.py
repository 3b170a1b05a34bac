"""Kafka partition replication as an executable state machine.

In plain words. A Kafka partition is a log kept by several brokers, its *replicas*. One of
them is the *leader*: producers write to it and it appends each record at the end of its
log; the others are *followers* that fetch from the leader and append what they get. A
replica's *log end offset* (LEO) is where its next record will go: its log's length. The
*high watermark* (HW) is the offset below which a record is *committed*: the leader moves it
to the smallest LEO of its *in-sync replicas* (ISR), so every record below it is held by
every member of the ISR, and consumers only ever read below it. A follower learns the HW
from its fetch responses, so its HW lags the leader's by a fetch.

The ISR is the set of replicas the leader considers caught up. A follower that has not
fetched up to the leader's LEO for ``replica.lag.time.max.ms`` (30 s by default) is dropped
from the ISR, so a slow or dead follower does not hold the HW back; it rejoins the ISR once
it has fetched up to the leader's HW again. Only an ISR member may be elected leader in a
clean election, which is why the ISR is the set that must hold every committed record.

What a producer is promised depends on ``acks``: with acks=0 nothing; with acks=1 that the
leader appended the record (lost if the leader dies before a follower copied it); with
acks=all that every member of the ISR has it, i.e. the HW has passed it, and with
``min.insync.replicas`` = M that the ISR had at least M members when it was written (the
leader refuses the write with NotEnoughReplicas otherwise). The promise of acks=all is that
"a committed message will not be lost, as long as there is at least one in sync replica
alive" (Kafka docs, "Replication").

Leadership changes are decided by the controller, which bumps the partition's *leader epoch*
on every change and tells the replicas in a LeaderAndIsr request. Epochs exist because
requests arrive late and brokers pause: a replica that still believes it leads an older
epoch must not be able to overwrite the new leader's log, and a follower that rejoins after
a crash must learn exactly where its log and the new leader's diverge. Before KIP-101 a
follower truncated its log to its own HW on becoming follower, which loses committed records
(the HW it knew lagged) or lets logs diverge below the HW after a power loss; KIP-101 stamps
every record batch with its leader epoch and truncates to the end of the follower's last
epoch as the leader reports it (OffsetsForLeaderEpoch); KIP-279 fixes the cases where
leadership moves twice in quick succession; KIP-320 makes fetches carry the follower's
leader epoch so that a fetch against a stale leader is fenced. When every ISR member is
gone, ``unclean.leader.election.enable`` chooses between waiting (unavailability) and
electing an out-of-sync replica (data loss); KIP-966's Eligible Leader Replicas keeps track
of replicas that may be elected without loss.

The model. One partition, replicas ``1..N``, and a controller that acts only through the
*quorum state*: the partition record the controller keeps in ZooKeeper
(``/brokers/topics/T/partitions/P/state``) or, under KRaft, in the metadata log: leader,
leader epoch and ISR. The controller publishes each new quorum state as a LeaderAndIsr
request; the set ``requests`` holds every request ever sent, and a replica may act on any of
them at any time, so requests can be delayed, duplicated, reordered or never delivered.

Two models share one core (``Params.model``):

``published-2018``
    Exactly the model Kafka's engineers published in 2018 and checked with TLC (the TLA+
    specification at github.com/hachikuji/kafka-specification): the same variables, initial
    state and actions, for the truncation variants ``high_watermark`` (before KIP-101),
    ``kip101``, ``kip279`` and ``kip320``. On it our checker reproduces TLC's
    distinct-state counts and shortest counterexamples
    (``model_tests/test_replication_parity.py``).

``extended``
    The same core plus what a user of Kafka configures and suffers: ``acks`` (0, 1, all) and
    ``min.insync.replicas``, crashes that lose the unflushed tail of the log and restarts,
    flushes, unclean leader election (``unclean.leader.election.enable``), the leader's view
    of its followers, and a ghost record of every acknowledged write so that loss is stated
    directly. The extra state is constant when the extra actions are off, so the core's
    behaviour is unchanged.

Records are ``(epoch, id)`` pairs: the leader epoch the record was written in (every record
batch carries it, since KIP-101) and a unique id, so two records are equal only if they are
the same write.

Deliberate buggy variants (``Params.bugs``) exist so that every invariant is shown able to
fail; each is named after the mistake it makes.

The modules, each owning one part:

- ``state``: the state records (``State``, ``Replica``, ``Quorum``, the ghosts);
- ``variants``: the protocol variants as named rule choices (``VARIANTS``);
- ``params``: ``Params``, the models, ``acks`` and the bugs;
- ``core``: the vocabulary, the controller and leadership actions, the shared effects;
- ``published``: the 2018 model's five replication steps; ``fencing``: KIP-320's forms
  of them, and every rule KIP-320 changes;
- ``leader_view``, ``acks``, ``extended``: the extended model's broker handlers, producer
  acknowledgements, and controller failover, unclean election, crashes and restarts;
- ``properties``: invariants and "sometimes" properties;
- ``symmetry``, ``rendering``: replica renaming, and states as trace rows and JSON;
- ``models``: which actions each model runs, and the ``Replication`` spec.
"""

from spec.replication.models import Replication
from spec.replication.params import ACKS, BUGS, MODELS, ModelChoices, Params
from spec.replication.state import NIL, NONE, Pending, Quorum, Record, Replica, State, Write
from spec.replication.variants import TRUNCATIONS, VARIANTS, TruncationRule, Variant

__all__ = [
    "ACKS",
    "BUGS",
    "MODELS",
    "NIL",
    "NONE",
    "TRUNCATIONS",
    "VARIANTS",
    "ModelChoices",
    "Params",
    "Pending",
    "Quorum",
    "Record",
    "Replica",
    "Replication",
    "State",
    "TruncationRule",
    "Variant",
    "Write",
]
