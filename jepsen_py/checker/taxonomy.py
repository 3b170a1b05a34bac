"""The names a history's verdict is given in: the Kafka anomalies (Jepsen's Kafka taxonomy,
``jepsen.tests.kafka`` in jepsen-io/jepsen) and the consumer-group delivery anomalies, each
with its class (a *violation* breaks a stated guarantee, an *informational* one is allowed by
it) and a one-line description; what decides a Kafka-log key (``--consistency``) and what a
group's delivery is held to (``--delivery``); the ``f`` of the ops each check reads.

Definitions are in docs/checking.md; the pass that finds the Kafka anomalies is `anomalies`,
the delivery check `delivery`, the verdict `verdict`. These names stand alone so that what
only names or classes anomalies (the CLI's flags and tables, the records, the engine's
dispatch) does not load those checkers: ``kmodel verify`` of a register or key-value history
never imports them.
"""

from __future__ import annotations

VIOLATION = "violation"
INFORMATIONAL = "informational"

CLASSES: dict[str, str] = {
    "inconsistent-offsets": VIOLATION,
    "duplicate": VIOLATION,
    "aborted-read": VIOLATION,
    "lost-write": VIOLATION,
    "unseen": INFORMATIONAL,
    "deleted-by-retention": INFORMATIONAL,
    "poll-skip": VIOLATION,
    "nonmonotonic-poll": VIOLATION,
    "int-poll-skip": VIOLATION,
    "int-nonmonotonic-poll": VIOLATION,
    "nonmonotonic-send": VIOLATION,
    "stale-read": INFORMATIONAL,
}
"""Every anomaly's class, in the order reports list them."""

ANOMALIES: tuple[str, ...] = tuple(CLASSES)
VIOLATIONS: frozenset[str] = frozenset(n for n, c in CLASSES.items() if c == VIOLATION)

DESCRIPTIONS: dict[str, str] = {
    "inconsistent-offsets": "one offset holds two values",
    "duplicate": "one value sits at two offsets",
    "aborted-read": "a poll returned the value of a send that failed",
    "lost-write": "a record that must be in the log was not returned by a read that "
    "covered it (or by the complete final read)",
    "unseen": "an acknowledged send no poll returned (nobody read where it is)",
    "deleted-by-retention": "a record below the log start no read returned: retention deleted it",
    "poll-skip": "a poll jumped over an offset known to exist",
    "nonmonotonic-poll": "a poll started below the consumer's position",
    "int-poll-skip": "a poll's successive records jump over an offset known to exist",
    "int-nonmonotonic-poll": "a poll's successive records go backwards or repeat",
    "nonmonotonic-send": "a producer's successive acknowledged sends do not get increasing offsets",
    "stale-read": "a poll reported a high watermark below an offset already shown to exist",
}
"""One line per anomaly, for explanations (docs/checking.md has the definitions)."""

AT_LEAST_ONCE = "at-least-once"
AT_MOST_ONCE = "at-most-once"
DELIVERIES = (AT_LEAST_ONCE, AT_MOST_ONCE)
"""``--delivery``: the guarantee a consumer group's delivery is held to
(`jepsen_py.checker.delivery`; the ``KafkaConsumer`` Javadoc, "Offsets and Consumer
Position": committing after processing gives at least once, before it at most once)."""

DELIVERY_CLASSES: dict[str, dict[str, str]] = {
    AT_LEAST_ONCE: {
        "lost": VIOLATION,
        "duplicated-rebalance": INFORMATIONAL,
        "duplicated-crash": INFORMATIONAL,
        "duplicated-seek": INFORMATIONAL,
        "duplicated-unexplained": VIOLATION,
        "commit-regression": VIOLATION,
    },
    AT_MOST_ONCE: {
        "lost": INFORMATIONAL,
        "duplicated-rebalance": VIOLATION,
        "duplicated-crash": VIOLATION,
        "duplicated-seek": VIOLATION,
        "duplicated-unexplained": VIOLATION,
        "commit-regression": VIOLATION,
    },
}
"""The delivery anomalies' class under each ``--delivery`` (docs/checking.md, "Delivery
semantics"): which one is a violation depends on what the consumers promise."""

DELIVERY_ANOMALIES: tuple[str, ...] = tuple(DELIVERY_CLASSES[AT_LEAST_ONCE])
assert all(tuple(c) == DELIVERY_ANOMALIES for c in DELIVERY_CLASSES.values())

DESCRIPTIONS.update(
    {
        "lost": "an acknowledged record the group's committed offset passed, that no "
        "member processed",
        "duplicated-rebalance": "a record processed again by the partition's next owner, "
        "which started before a commit covering it was acknowledged",
        "duplicated-crash": "a record processed again after its processor was killed "
        "before a commit covering it was acknowledged",
        "duplicated-seek": "a record processed again after its consumer sought back to it "
        "(KafkaConsumer.seek: a deliberate rewind)",
        "duplicated-unexplained": "a record processed twice with neither a rebalance, "
        "a crash nor a seek back to explain it",
        "commit-regression": "an OffsetFetch returned less than a commit already "
        "acknowledged (the committed offset went backwards)",
    }
)


def violations_of(consistency: str | None) -> frozenset[str]:
    """The anomalies classed as violations when ``consistency`` decides: a ``--delivery``
    mode's (`DELIVERY_CLASSES`), else the Kafka-log taxonomy's (`VIOLATIONS`)."""
    classes = DELIVERY_CLASSES.get(consistency or "")
    if classes is None:
        return VIOLATIONS
    return frozenset(n for n, c in classes.items() if c == VIOLATION)


def class_of(name: str, consistency: str | None) -> str:
    """``name``'s class (violation or informational) when ``consistency`` decides."""
    classes = DELIVERY_CLASSES.get(consistency or "")
    if classes is not None and name in classes:
        return classes[name]
    return CLASSES[name]


LOG_FS = frozenset({"send", "poll"})
GROUP_FS = frozenset({"process", "commit", "fetch-offsets", "seek"})
"""The client ops a consumer group's delivery adds to a Kafka history (docs/history-format.md):
the delivery check reads them (`jepsen_py.checker.delivery`), the Kafka-log check leaves
them aside."""
REASSIGN_FS = frozenset({"assign", "subscribe"})
"""Ops that set which keys a consumer reads (Kafka's ``assign``/``subscribe``)."""

KAFKA = "kafka"
LINEARIZABLE = "linearizable"
CONSISTENCIES = (KAFKA, LINEARIZABLE)
"""``--consistency``: what decides a Kafka-log key's verdict (`verdict.key_verdict`)."""

NONLINEARIZABLE = "nonlinearizable"
"""The violation named when linearizability decides and fails."""
