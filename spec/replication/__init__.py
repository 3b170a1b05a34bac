"""Kafka partition replication as an executable state machine.

One partition, replicas ``1..N``, and a controller that acts only through the *quorum state*:
the partition record the controller keeps in ZooKeeper (``/brokers/topics/T/partitions/P/
state``) or, under KRaft, in the metadata log: leader, leader epoch and ISR. The controller
publishes each new quorum state as a LeaderAndIsr request; the set ``requests`` holds every
request ever sent, and a replica may act on any of them at any time, so requests can be
delayed, duplicated, reordered or never delivered.

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
