"""The results both verification engines give, and the rules that shape them: a
`KeyResult` per (run, key) of a history, an `InputResult` per history file.

The local engine (`engine`), the Spark job (`spark.job`) and its SQL path (`spark.logsql`)
all build these records, and the CLI, the HTML reports and the verdict table read them,
so they live here, below all of them. The rules every engine applies to them are here too:
the order keys are listed in (`group_order`), and what rejected lines do to a key's verdict
(`downgrade`: a key with rejected lines cannot be vouched for, it is UNKNOWN).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

import attrs

from jepsen_py.checker.result import Verdict
from jepsen_py.checker.taxonomy import ANOMALIES, DELIVERY_ANOMALIES, violations_of
from jepsen_py.checker.wgl import PartitionResult
from jepsen_py.history.op import Op
from jepsen_py.history.validate import Rejection

GroupKey = tuple[str | None, Any]
"""(run, key) of a part of a history."""

_Group = TypeVar("_Group", bound=tuple[Any, Any])

WITNESSES_SHOWN = 3
"""Witnesses per violation listed in JSON and text (the counts are exact)."""


@attrs.frozen(eq=False)
class KeyResult:
    """The verdict on one (run, key) of a history."""

    run: str | None
    key: Any
    ops: int
    verdict: Verdict
    seconds: float
    explanation: str | None = None
    rejected: int = 0
    report: str | None = None
    checked: list[PartitionResult] = attrs.field(factory=list)
    """The WGL results of the key's partitions (empty for the log model)."""
    witness: list[Op] = attrs.field(factory=list)
    """The ops that witness the verdict (log model only): the first violation's, or the
    failure to linearize when linearizability decides."""
    consistency: str | None = None
    """What decided (log model only): ``kafka`` or ``linearizable``; for a delivery check
    (``kmodel verify --delivery``), the delivery mode."""
    kafka: Verdict | None = None
    """Kafka's guarantees (log model only)."""
    linearizable: Verdict | None = None
    """Linearizability of the partition log (log model only)."""
    violations: tuple[str, ...] = ()
    """What makes the verdict ILLEGAL (`verdict.KeyVerdict.violations`)."""
    counts: dict[str, int] = attrs.field(factory=dict)
    """Every anomaly found, with its count (log model only)."""
    anomalies: dict[str, list[list[Op]]] = attrs.field(factory=dict)
    """This key's witnesses per anomaly found."""

    @property
    def informational(self) -> dict[str, int]:
        broken = violations_of(self.consistency)
        return {n: c for n, c in self.counts.items() if c and n not in broken}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "run": self.run,
            "key": self.key,
            "ops": self.ops,
            "verdict": self.verdict.value,
            "seconds": round(self.seconds, 6),
            "explanation": self.explanation,
            "rejected_lines": self.rejected,
            "report": self.report,
        }
        if self.consistency is not None:
            out.update(
                consistency=self.consistency,
                kafka=self.kafka.value if self.kafka else None,
                linearizable=self.linearizable.value if self.linearizable else None,
                violations=[self.violation_json(name) for name in self.violations],
                informational=self.informational,
            )
        if self.witness:
            out["witness"] = [op_json(op) for op in self.witness]
        return out

    def violation_json(self, name: str) -> dict[str, Any]:
        """A violation as JSON: its name, count and first witnesses as history lines."""
        if name in self.anomalies:
            groups = self.anomalies[name]
            count = self.counts.get(name, len(groups))
        else:  # nonlinearizable: the log checker's witness
            groups, count = [self.witness], 1
        return {
            "name": name,
            "count": count,
            "lines": [[line_of(op) for op in group] for group in groups[:WITNESSES_SHOWN]],
        }


def line_of(op: Op) -> int | None:
    """The history line of an op (its index + 1 when it was not read from a file)."""
    return op.line if op.line is not None else op.index + 1


@attrs.frozen(eq=False)
class InputResult:
    """The verdict on one history file."""

    path: str
    format: str | None
    model: str | None
    verdict: Verdict
    keys: list[KeyResult]
    anomalies: dict[str, list[list[Op]]]
    rejected: list[Rejection]
    seconds: float
    ops: int = 0
    error: str | None = None
    """Why the input could not be checked at all (unreadable, unknown format, nothing to
    check)."""
    consistency: str | None = None

    @classmethod
    def unchecked(
        cls,
        path: str,
        error: str,
        *,
        format: str | None,
        model: str | None,
        rejected: Iterable[Rejection] = (),
        seconds: float = 0.0,
        ops: int = 0,
    ) -> InputResult:
        """An input that could not be checked at all: UNKNOWN, no keys, ``error`` says why."""
        return cls(
            path=path,
            format=format,
            model=model,
            verdict=Verdict.UNKNOWN,
            keys=[],
            anomalies={},
            rejected=list(rejected),
            seconds=seconds,
            ops=ops,
            error=error,
        )

    @classmethod
    def checked(
        cls,
        path: str,
        *,
        format: str | None,
        model: str | None,
        keys: list[KeyResult],
        anomalies: dict[str, list[list[Op]]],
        rejected: list[Rejection],
        seconds: float,
        ops: int,
        consistency: str | None,
    ) -> InputResult:
        """A checked input: its verdict combines the keys' (already downgraded by
        ``downgrade``), and a rejected line that names no key makes it UNKNOWN at best."""
        verdicts = [k.verdict for k in keys]
        if any(r.key is None for r in rejected):
            verdicts.append(Verdict.UNKNOWN)
        return cls(
            path=path,
            format=format,
            model=model,
            verdict=Verdict.combine(verdicts),
            keys=keys,
            anomalies=anomalies,
            rejected=rejected,
            seconds=seconds,
            ops=ops,
            consistency=consistency,
        )

    @property
    def anomaly_counts(self) -> dict[str, int]:
        """Every anomaly found, with its exact count over the keys (``anomalies`` may keep
        fewer witnesses than that: the Spark engine keeps 100 per key and anomaly)."""
        out: dict[str, int] = {}
        for key in self.keys:
            for name, n in key.counts.items():
                if n:
                    out[name] = out.get(name, 0) + n
        return {name: out[name] for name in (*ANOMALIES, *DELIVERY_ANOMALIES) if name in out}

    @property
    def violations(self) -> dict[str, int]:
        """The violations that decided a key ILLEGAL, with their counts over the keys."""
        out: dict[str, int] = {}
        for key in self.keys:
            if key.verdict is not Verdict.ILLEGAL:
                continue
            for name in key.violations:
                out[name] = out.get(name, 0) + key.violation_json(name)["count"]
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": self.format,
            "model": self.model,
            "consistency": self.consistency,
            "verdict": self.verdict.value,
            "violations": self.violations,
            "seconds": round(self.seconds, 6),
            "ops": self.ops,
            "keys": [k.to_json() for k in self.keys],
            "anomalies": {
                name: [[op_json(op) for op in group] for group in groups]
                for name, groups in sorted(self.anomalies.items())
                if groups
            },
            "rejected_lines": [r.to_json() for r in self.rejected],
            "error": self.error,
        }


def op_json(op: Op) -> dict[str, Any]:
    return {
        "index": op.index,
        "line": op.line,
        "process": op.process,
        "type": op.type,
        "f": op.f,
        "key": op.key,
        "value": op.value,
    }


def order_key(run: Any, key: Any) -> tuple[str, bool, str]:
    """Where a (run, key) comes in the order results are listed: by run, then key, a key
    of None (ops without a key) last."""
    return (str(run), key is None, str(key))


def group_order(groups: Iterable[_Group]) -> list[_Group]:
    """(run, key) pairs in the order results are listed (`order_key`)."""
    return sorted(groups, key=lambda g: order_key(g[0], g[1]))


def downgrade(results: list[KeyResult], rejected: Iterable[Rejection]) -> list[KeyResult]:
    """``results`` with every key that has rejected lines made UNKNOWN: the check of its
    accepted ops is kept in the explanation, and the count in ``rejected``."""
    per_key: dict[GroupKey, int] = {}
    for r in rejected:
        if r.key is not None:
            per_key[(r.run, r.key)] = per_key.get((r.run, r.key), 0) + 1
    out = []
    for result in results:
        n = per_key.get((result.run, result.key), 0)
        if n:
            found = result.explanation or f"the accepted ops are {result.verdict.value}"
            result = attrs.evolve(
                result,
                verdict=Verdict.UNKNOWN,
                rejected=n,
                explanation=f"{n} line(s) of this key were rejected (see rejected_lines); "
                f"fix them and check again. Check of the accepted ops: {found}",
            )
        out.append(result)
    return out
