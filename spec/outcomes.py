"""Kafka's replication bugs (and their fixes) as configurations of the replication spec.

Each outcome names a configuration of ``spec.replication`` and the property the model
checker is expected to find violated in it, or ``None`` when the property must hold. The
tests pin each one's shortest counterexample as a scenario file under
``model_tests/scenarios/replication/``; ``kmodel demo`` runs them and writes their traces.

The expectations are knowledge about Kafka, not about this code: a configuration that stops
showing a known bug (or starts showing one that was fixed) is a change in the model's
semantics, to be found and explained.
"""

from __future__ import annotations

import attrs

from spec.replication import Params


@attrs.frozen
class Outcome:
    name: str
    title: str
    params: Params
    invariants: tuple[str, ...]
    expect_violation: str | None
    """The property expected to fail (the first of ``invariants`` to fail), or None."""
    reference: str
    """Where the behaviour is described (KIP, JIRA, Jepsen post)."""
    slow: bool = False

    def command(self) -> str:
        """The ``kmodel check`` command line that reproduces this outcome."""
        p = self.params
        parts = ["kmodel check replication", f"--model {p.model}", f"--replicas {p.replicas}"]
        parts.append(f"--truncation {p.truncation}")
        if p.extended:
            parts.append(f"--acks {p.acks}")
            if p.min_isr != 1:
                parts.append(f"--min-isr {p.min_isr}")
            parts.append(f"--max-crashes {p.max_crashes}")
            if p.unclean:
                parts.append("--unclean")
        for bug in sorted(p.bugs):
            parts.append(f"--bug {bug}")
        parts += [f"--invariant {name}" for name in self.invariants]
        return " ".join(parts)


def _ext(**kwargs: object) -> Params:
    kwargs.setdefault("model", "extended")
    kwargs.setdefault("max_crashes", 0)
    return Params(**kwargs)  # type: ignore[arg-type]


OUTCOMES: tuple[Outcome, ...] = (
    Outcome(
        "kip101-acked-write-lost",
        "Before KIP-101 a follower truncates to its lagging HW and is then elected: an "
        "acknowledged acks=all write is lost",
        _ext(truncation="high_watermark"),
        ("NoAckedAllWriteLost",),
        "NoAckedAllWriteLost",
        "KIP-101, scenario 1",
    ),
    Outcome(
        "kip101-divergence",
        "Before KIP-101 replica logs diverge below the high watermark",
        _ext(truncation="high_watermark", max_crashes=2),
        ("NoDivergenceBelowHw",),
        "NoDivergenceBelowHw",
        "KIP-101, scenario 2",
    ),
    Outcome(
        "kip279-fast-failover",
        "KIP-101's epoch lookup loses committed data when leadership changes twice quickly "
        "(the bug KIP-279 fixed)",
        Params(truncation="kip101"),
        ("StrongIsr",),
        "StrongIsr",
        "KIP-279",
    ),
    Outcome(
        "kip320-stale-leader-truncation",
        "With three replicas, a stale LeaderAndIsr makes a follower truncate against a "
        "replica that no longer leads (the bug KIP-320 fixed)",
        Params(replicas=3, truncation="kip279"),
        ("StrongIsr",),
        "StrongIsr",
        "KIP-320",
    ),
    Outcome(
        "kip320-holds",
        "With KIP-320's epoch fencing, no committed data is lost (published model, two replicas)",
        Params(truncation="kip320"),
        ("StrongIsr", "WeakIsr"),
        None,
        "KIP-320",
    ),
    Outcome(
        "unclean-election-loss",
        "Unclean leader election: the ISR shrinks to the leader, the leader is cut off, an "
        "out-of-sync replica takes over and acknowledged acks=all writes are lost",
        _ext(truncation="kip320", unclean=True),
        ("NoAckedAllWriteLost",),
        "NoAckedAllWriteLost",
        "Jepsen: Kafka (2013)",
    ),
    Outcome(
        "acks1-leader-crash",
        "acks=1: a write acknowledged by the leader alone is lost when the leader crashes",
        _ext(truncation="kip320", acks="1", max_crashes=1),
        ("NoAckedWriteLost",),
        "NoAckedWriteLost",
        "Kafka docs: acks",
    ),
    Outcome(
        "min-isr-2-no-crash-holds",
        "acks=all, min.insync.replicas=2, three replicas, clean election, KIP-320: no "
        "acknowledged write is lost while no broker crashes",
        _ext(replicas=3, truncation="kip320", min_isr=2),
        ("NoAckedAllWriteLost",),
        None,
        "Kafka docs: Replication",
        slow=True,
    ),
    Outcome(
        "min-isr-2-last-replica-standing",
        "acks=all, min.insync.replicas=2, three replicas, KIP-320, one crash: the ISR "
        "shrinks to one replica, which crashes, loses its unflushed tail, and is re-elected "
        "(KIP-966's last replica standing)",
        _ext(replicas=3, truncation="kip320", min_isr=2, max_crashes=1),
        ("NoAckedAllWriteLost",),
        "NoAckedAllWriteLost",
        "KIP-966",
        slow=True,
    ),
)


def by_name(name: str) -> Outcome:
    for outcome in OUTCOMES:
        if outcome.name == name:
            return outcome
    known = ", ".join(o.name for o in OUTCOMES)
    raise KeyError(f"no outcome named {name!r}; known: {known}")
