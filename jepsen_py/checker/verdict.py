"""The verdict on one key (partition) of a Kafka-log history: the one function
(`key_verdict`) that ``kmodel test``, the local engine and the Spark engine all call, so
that one history never gets two verdicts.

A key has two properties (docs/checking.md):

- **Kafka's guarantees** (`anomalies`): ILLEGAL when an anomaly classed as a violation
  occurs; UNKNOWN when the key cannot be judged (a value sent twice, ops that are not of the
  history format's shape) or when its final read did not reach the end of the log (its
  unread writes then prove nothing: the final-read rule); else OK;
- **linearizability** of the partition log (`kafka_log.check_log`, exact).

``consistency`` says which decides: ``kafka`` (the default; linearizability is reported
beside it) or ``linearizable`` (Kafka's guarantees are reported beside it). A verdict
other than OK always says why; ILLEGAL names its violations (anomalies, or
``nonlinearizable``) and their witnessing ops, by history line.

`check_keys` runs both checks over a list of ops and gives every key its verdict: the
runner hands it a whole run's history, the engines one key's ops (with the ``assign`` and
``subscribe`` ops of its run).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from jepsen_py.checker.anomalies import FinalRead, KeyAnomalies, Observer, op_label
from jepsen_py.checker.kafka_log import LogResult, check_log
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.taxonomy import (
    ANOMALIES,
    CONSISTENCIES,
    DELIVERIES,
    DESCRIPTIONS,
    KAFKA,
    LOG_FS,
    NONLINEARIZABLE,
    VIOLATIONS,
    violations_of,
)
from jepsen_py.history.op import Op

LineOf = Callable[[int], "int | None"]


@attrs.frozen
class KeyVerdict:
    """One key's verdict, the two properties it comes from, and why."""

    verdict: Verdict
    """What decides under ``consistency``."""
    consistency: str
    kafka: Verdict
    linearizable: Verdict
    violations: tuple[str, ...]
    """What makes ``verdict`` ILLEGAL: anomalies classed as violations (``kafka``), or
    `NONLINEARIZABLE` (``linearizable``); empty otherwise."""
    counts: dict[str, int]
    """Every anomaly's count (informational ones too)."""
    witness: tuple[int, ...]
    """Positions of the ops that witness the first violation (or the failure to
    linearize, or what left the verdict unknown)."""
    explanation: str | None
    final_read: FinalRead = attrs.field(factory=FinalRead)

    @property
    def informational(self) -> tuple[str, ...]:
        """Anomalies found that are not violations."""
        return tuple(n for n in ANOMALIES if self.counts.get(n) and n not in VIOLATIONS)


def _lines(positions: Sequence[int], line_of: LineOf) -> str:
    lines = [line_of(p) for p in positions]
    return ", ".join(str(n) if n is not None else "?" for n in lines)


def key_verdict(
    linearizable: Verdict,
    linearizable_explanation: str | None,
    linearizable_witness: Sequence[int],
    found: KeyAnomalies,
    consistency: str,
    line_of: LineOf,
) -> KeyVerdict:
    """The verdict on one key from its two checks (see the module docstring).
    ``line_of`` turns a position into the op's history line (for explanations)."""
    if consistency not in CONSISTENCIES:
        raise ValueError(f"consistency {consistency!r}: expected one of {CONSISTENCIES}")
    kafka, broken, kafka_text, decided_by = guarantees(found, VIOLATIONS, line_of)
    if linearizable is Verdict.OK:
        lin_text = "linearizable: yes"
    else:
        lin_text = f"linearizable: {'no' if linearizable is Verdict.ILLEGAL else 'unknown'}"
        if linearizable_explanation:
            lin_text += f" ({linearizable_explanation})"
    info_text = _informational_text(found, VIOLATIONS)
    if consistency == KAFKA:
        verdict = kafka
        violations = tuple(broken)
        first, beside = kafka_text, (lin_text if linearizable is not Verdict.OK else None)
        witness = decided_by
    else:
        verdict = linearizable
        violations = (NONLINEARIZABLE,) if linearizable is Verdict.ILLEGAL else ()
        first = lin_text if linearizable is not Verdict.OK else None
        if linearizable is Verdict.ILLEGAL:
            first = f"violated: {NONLINEARIZABLE} ({linearizable_explanation})"
        beside = kafka_text if kafka is not Verdict.OK else None
        witness = tuple(linearizable_witness)
        if beside is not None:
            beside = "Kafka's guarantees: " + beside
    parts = [p for p in (first, beside, info_text) if p]
    return KeyVerdict(
        verdict,
        consistency,
        kafka,
        linearizable,
        violations,
        dict(found.counts),
        tuple(sorted(witness)),
        "; ".join(parts) if parts else None,
        found.final,
    )


def guarantees(
    found: KeyAnomalies, violations: frozenset[str], line_of: LineOf
) -> tuple[Verdict, list[str], str | None, tuple[int, ...]]:
    """The rule every anomaly-based verdict follows, the Kafka-log taxonomy's and a
    ``--delivery`` check's alike: ILLEGAL when an anomaly of ``violations`` was found
    (unless a premise of the definitions fails); else UNKNOWN when something kept the key
    from being judged (a `Problem`, an unfinished final read); else OK. Returns the
    verdict, the violations found (in order), the text that says why, and the positions
    of the ops that witness the first violation (or what left the key unknown)."""
    premise = next((p for p in found.problems if p.premise), None)
    problem = next((p for p in found.problems if not p.premise), None)
    broken = [] if premise is not None else [n for n in found.found() if n in violations]
    if broken:
        verdict = Verdict.ILLEGAL
    elif premise is not None or problem is not None or found.final.unfinished:
        verdict = Verdict.UNKNOWN
    else:
        verdict = Verdict.OK
    text = _kafka_text(verdict, broken, found, premise or problem, line_of)
    if broken:
        witness: tuple[int, ...] = found.witnesses[broken[0]][0]
    elif verdict is Verdict.UNKNOWN and (premise or problem) is not None:
        witness = (premise or problem).positions  # type: ignore[union-attr]
    else:
        witness = ()
    return verdict, broken, text, witness


def _informational_text(found: KeyAnomalies, violations: frozenset[str]) -> str | None:
    informational = [n for n in found.found() if n not in violations]
    if not informational:
        return None
    return "informational: " + ", ".join(f"{n} ({found.counts[n]})" for n in informational)


@attrs.frozen
class DeliveryVerdict:
    """One key's verdict under ``--delivery`` (`jepsen_py.checker.delivery`), and why."""

    verdict: Verdict
    delivery: str
    """``at-least-once`` or ``at-most-once``: which anomalies are violations."""
    violations: tuple[str, ...]
    counts: dict[str, int]
    """Every delivery anomaly's count (informational ones too)."""
    witness: tuple[int, ...]
    explanation: str | None

    @property
    def informational(self) -> tuple[str, ...]:
        """Delivery anomalies found that are not violations under ``delivery``."""
        broken = violations_of(self.delivery)
        return tuple(n for n, c in self.counts.items() if c and n not in broken)


def delivery_verdict(found: KeyAnomalies, delivery: str, line_of: LineOf) -> DeliveryVerdict:
    """The verdict on one key of a consumer group's delivery under ``delivery``
    (``--delivery``), by the same rule as the Kafka-log taxonomy's (`guarantees`), with
    the mode's classes (`taxonomy.DELIVERY_CLASSES`). Every engine calls this."""
    if delivery not in DELIVERIES:
        raise ValueError(f"delivery {delivery!r}: expected one of {DELIVERIES}")
    broken_set = violations_of(delivery)
    verdict, broken, text, witness = guarantees(found, broken_set, line_of)
    parts = [p for p in (text, _informational_text(found, broken_set)) if p]
    return DeliveryVerdict(
        verdict,
        delivery,
        tuple(broken),
        dict(found.counts),
        tuple(sorted(witness)),
        "; ".join(parts) if parts else None,
    )


def _kafka_text(
    kafka: Verdict,
    broken: list[str],
    found: KeyAnomalies,
    problem: Any,
    line_of: LineOf,
) -> str | None:
    if kafka is Verdict.ILLEGAL:
        clauses = [
            f"{name} ({found.counts[name]}): {DESCRIPTIONS[name]} "
            f"(lines {_lines(found.witnesses[name][0], line_of)})"
            for name in broken
        ]
        return "violated: " + "; ".join(clauses)
    if kafka is Verdict.UNKNOWN:
        if problem is not None:
            return f"not decided: {problem.reason} (lines {_lines(problem.positions, line_of)})"
        return (
            "not decided: the final read of this key never reached the end of the log, "
            "so what it did not return proves nothing"
        )
    return None


@attrs.frozen
class KeyCheck:
    """One key checked: its verdict, and the two checks it comes from."""

    run: Any
    key: Any
    ops: int
    """The key's client ops (send and poll lines)."""
    verdict: KeyVerdict
    log: LogResult
    anomalies: KeyAnomalies
    seconds: float


def check_keys(
    ops: Sequence[Op],
    consistency: str = KAFKA,
    *,
    line_of: LineOf | None = None,
    max_witnesses: int | None = None,
) -> list[KeyCheck]:
    """Both checks and the verdict for every (run, key) with send or poll ops in ``ops``
    (a history in order; ``assign``/``subscribe`` ops of a run apply to all its keys).
    Positions are indices into ``ops``; ``line_of`` names their lines (default: the op's
    ``line``, else its index + 1). Keys come sorted by (run, key)."""
    started = time.perf_counter()
    lines = line_of or (lambda p: ops[p].line if ops[p].line is not None else p + 1)
    observer = Observer(max_witnesses, label=functools.partial(op_label, ops))
    feed = observer.feed
    per_key: dict[tuple[Any, Any], list[Op]] = {}
    where: dict[int, int] = {}  # id(op) -> position, for check_log's witness
    for pos, op in enumerate(ops):
        feed(pos, op.run, op.process, op.type, op.f, op.key, op.value)
        if op.f in LOG_FS and op.is_client:
            per_key.setdefault((op.run, op.key), []).append(op)
            where[id(op)] = pos
    found = {(k.run, k.key): k for k in observer.finish()}
    shared = time.perf_counter() - started
    out = []
    for ident in sorted(per_key, key=lambda g: (str(g[0]), g[1] is None, str(g[1]))):
        began = time.perf_counter()
        mine = per_key[ident]
        log = check_log(mine)
        anomalies = found.get(ident) or KeyAnomalies(
            ident[0], ident[1], dict.fromkeys(ANOMALIES, 0), {}
        )
        verdict = key_verdict(
            log.verdict,
            log.explanation,
            [where[id(op)] for op in log.witness],
            anomalies,
            consistency,
            lines,
        )
        seconds = time.perf_counter() - began + shared / max(1, len(per_key))
        out.append(KeyCheck(ident[0], ident[1], len(mine), verdict, log, anomalies, seconds))
    return out
