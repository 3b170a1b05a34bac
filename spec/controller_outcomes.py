"""The controller's fences, and what goes wrong without each, as configurations of
``spec.controller``.

Each outcome names a configuration and the property expected to fail in it (or ``None``
when every property must hold); ``WITNESSES`` names the "sometimes" properties whose
shortest witness is worth reading: the brain split happening and being survived. The tests
pin each trace as a scenario file under ``model_tests/scenarios/controller/``.

The expectations are knowledge about Kafka, not about this code: a fence that stops
mattering (or a broken variant that stops failing) is a change in the model's semantics, to
be found and explained.
"""

from __future__ import annotations

import attrs

from spec.check_command import check_command, dashed
from spec.controller import Params


@attrs.frozen
class ControllerOutcome:
    name: str
    title: str
    params: Params
    invariants: tuple[str, ...]
    """The properties checked (empty: all of them)."""
    expect_violation: str | None
    """The property expected to fail first, or None."""
    reference: str
    slow: bool = False

    def command(self) -> str:
        """The ``kmodel check`` command line that reproduces this outcome."""
        flags = dashed(
            "mode",
            "brokers",
            "partitions",
            "max_controller_epoch",
            "max_leader_epoch",
            "max_expiries",
        )
        return check_command("controller", self.params, Params(), flags, self.invariants)


def _bug(name: str, **kwargs: object) -> Params:
    return Params(bugs=frozenset({name}), **kwargs)  # type: ignore[arg-type]


OUTCOMES: tuple[ControllerOutcome, ...] = (
    ControllerOutcome(
        "fenced-holds",
        "Both fences on (brokers reject older controller epochs, writes are conditional on "
        "/controller_epoch's version): every property holds",
        Params(),
        (),
        None,
        "KafkaController; KAFKA-6082",
    ),
    ControllerOutcome(
        "kraft-holds",
        "KRaft: the controller epoch is the metadata quorum's Raft epoch; every property holds",
        Params(mode="kraft"),
        (),
        None,
        "KIP-500, KIP-595, KIP-631",
        slow=True,
    ),
    ControllerOutcome(
        "stale-controller-epoch-accepted",
        "Brokers that accept stale controller epochs apply the zombie's request after the new "
        "controller's",
        _bug("accept_stale_controller_epoch"),
        (),
        "NoStaleControllerEpochApplied",
        "ReplicaManager: STALE_CONTROLLER_EPOCH",
    ),
    ControllerOutcome(
        "kraft-stale-epoch-accepted",
        "KRaft brokers that accept metadata from an older Raft epoch go back to the deposed "
        "leader's",
        _bug("accept_stale_controller_epoch", mode="kraft"),
        (),
        "NoStaleControllerEpochApplied",
        "KIP-595: FENCED_LEADER_EPOCH",
    ),
    ControllerOutcome(
        "unconditional-write-zombie-writes",
        "Unconditional writes: the zombie's write lands in the new controller's epoch",
        _bug("unconditional_write"),
        (),
        "OneControllerWritesPerEpoch",
        "KAFKA-6082",
    ),
    ControllerOutcome(
        "unconditional-write-leader-epoch-goes-back",
        "Unconditional writes: the zombie overwrites the partition state with an older leader "
        "epoch",
        _bug("unconditional_write"),
        ("LeaderEpochsOnlyGrow",),
        "LeaderEpochsOnlyGrow",
        "KAFKA-6082",
    ),
    ControllerOutcome(
        "unconditional-write-two-leaders",
        "Unconditional writes: the zombie and the new controller hand out one leader epoch to "
        "two brokers, and both act as leader",
        _bug("unconditional_write"),
        ("OneLeaderPerLeaderEpoch",),
        "OneLeaderPerLeaderEpoch",
        "KAFKA-6082",
    ),
    ControllerOutcome(
        "kafka-6082-partition-version-only",
        "Before Kafka 2.2, writes were conditional on the partition znode's version only: a "
        "zombie writes a partition the new controller has not written yet",
        _bug("partition_version_only"),
        (),
        "OneControllerWritesPerEpoch",
        "KAFKA-6082 (fixed in 2.2)",
    ),
    ControllerOutcome(
        "controller-epoch-not-persisted",
        "A controller epoch that is not persisted starts again at 1: two controllers write in "
        "epoch 1, and brokers cannot tell them apart",
        _bug("epoch_not_persisted"),
        (),
        "OneControllerWritesPerEpoch",
        "KafkaZkClient.registerControllerAndIncrementControllerEpoch",
    ),
    ControllerOutcome(
        "three-brokers-holds",
        "Three brokers, one session expiry: every property holds",
        Params(brokers=3, max_expiries=1),
        (),
        None,
        "KafkaController; KAFKA-6082",
        slow=True,
    ),
)

WITNESSES: tuple[tuple[str, str], ...] = (
    ("brain-split-request-rejected", "ZombieRequestRejected"),
    ("brain-split-write-refused", "ZombieWriteRefused"),
)
"""(scenario name, "sometimes" property): the shortest witness in the default configuration
of the brain split being survived."""


def by_name(name: str) -> ControllerOutcome:
    for outcome in OUTCOMES:
        if outcome.name == name:
            return outcome
    known = ", ".join(o.name for o in OUTCOMES)
    raise KeyError(f"no outcome named {name!r}; known: {known}")
