"""The verdict on a run, as typed records: `HistoryCheck` (what the checker found in a
history) and `RunOutcome` (a whole run: its configuration, seed, history, check, figures
and timings), each with ``to_json`` for ``results.json``.

Checking (`check_history`): every key's verdict from `jepsen_py.checker.verdict` -- the
one verdict function ``kmodel verify`` uses too -- over the exact Kafka-log checker
(linearizability) and the anomaly taxonomy (Kafka's guarantees), decided under
``consistency`` (``kafka`` by default; docs/checking.md). The final-read rule is that
function's: an acknowledged write the complete final read did not return is a lost
write; a key whose final read gave up (the cluster never recovered) is *unknown* at best.
A run that never reached its final reads is *unknown* at best (`settle_run`).

A run's verdict is the checker's `Verdict`; on the terminal and in ``results.json`` it is
written ``valid``, ``invalid`` or ``unknown`` (`verdict_name`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from impl.timeline import Event
from jepsen_py.checker.anomalies import ANOMALIES, VIOLATIONS, KeyAnomalies, observe, summarize
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.verdict import KAFKA, KeyCheck, check_keys
from jepsen_py.explain import (
    DivergenceExplanation,
    LossExplanation,
    explain_divergences,
    explain_losses,
)
from jepsen_py.history.op import Op, freeze, is_final
from jepsen_py.nemesis import fault_of_op
from jepsen_py.runner.config import TestConfig
from jepsen_py.runner.drive import RunFigures

EXAMPLES = 5
"""Witnesses and lost writes ``results.json`` lists per kind."""

_NAMES = {Verdict.OK: "valid", Verdict.ILLEGAL: "invalid", Verdict.UNKNOWN: "unknown"}


def verdict_name(verdict: Verdict) -> str:
    """How a run's verdict is written: ``valid``, ``invalid`` or ``unknown``."""
    return _NAMES[verdict]


@attrs.frozen
class FinalReads:
    """Per key with a final read: did the final polls return the whole log?"""

    keys: Mapping[str, bool]

    @property
    def complete(self) -> bool:
        """Every key was read back completely (and there was a key to read)."""
        return bool(self.keys) and all(self.keys.values())

    def to_json(self) -> dict[str, Any]:
        return {"keys": dict(self.keys), "complete": self.complete}


@attrs.frozen
class Linearizability:
    """The log checker over all keys: the first key that is not linearizable (else one not
    decided), with the figures summed over keys (`jepsen_py.checker.kafka_log.LogResult`)."""

    verdict: Verdict
    explanation: str | None
    summary: Mapping[str, Any]
    """As ``results.json`` holds it: `LogResult.to_json` of that key, figures summed."""

    @classmethod
    def of(cls, checks: Sequence[KeyCheck]) -> Linearizability:
        worst = next((c for c in checks if c.log.verdict is Verdict.ILLEGAL), None) or next(
            (c for c in checks if c.log.verdict is Verdict.UNKNOWN), None
        )
        out: dict[str, Any] = (
            worst.log.to_json() if worst is not None else {"verdict": Verdict.OK.value}
        )
        out.update(
            keys=len(checks),
            ops=sum(c.log.ops for c in checks),
            log_length=sum(c.log.log_length for c in checks),
            unknown_sends_applied=sum(c.log.unknown_sends_applied for c in checks),
        )
        out.setdefault("explanation", None)
        out.setdefault("witness", [])
        out.setdefault("key", None)
        verdict = worst.log.verdict if worst is not None else Verdict.OK
        explanation = worst.log.explanation if worst is not None else None
        return cls(verdict, explanation, out)

    def to_json(self) -> dict[str, Any]:
        return dict(self.summary)


@attrs.frozen
class HistoryCheck:
    """The verdict on a run's history (`check_history`); ``to_json`` is the checker's part
    of ``results.json``."""

    verdict: Verdict
    """The run's: the worst of its keys' (after `settle_run`, unknown at best when the run
    stopped short)."""
    consistency: str
    """What decided: ``kafka`` (Kafka's guarantees) or ``linearizable``."""
    kafka: Verdict
    """Kafka's guarantees over all keys, whatever decided."""
    linearizable: Linearizability
    anomalies: Mapping[str, Sequence[Sequence[Op]]]
    """Every anomaly of the taxonomy, with the ops that witness each occurrence."""
    violations: tuple[str, ...]
    """The anomalies (or ``nonlinearizable``) that decided an invalid verdict, sorted."""
    violation_lines: Mapping[str, Sequence[Sequence[int]]]
    """Per violation, the ``history.jsonl`` lines of its first witnesses."""
    keys: Mapping[str, Verdict]
    explanations: Mapping[str, Any]
    """Per key that is not OK, why (the verdict function's explanation)."""
    lost_writes: tuple[Op, ...]
    """Acknowledged sends the complete final read of their key did not return."""
    final_reads: FinalReads
    completions: Mapping[str, int]
    """Client completions by f and type (``send ok``, ``final poll ok``, ...)."""
    checker_seconds: float
    loss_explanations: tuple[LossExplanation, ...] = ()
    """Why the lost writes were lost (`explain_run_losses`), when asked."""
    read_loss_explanations: tuple[LossExplanation, ...] = ()
    """Why records a consumer read but whose send was never acknowledged (the high
    watermark covered them: with the ISR below ``min.insync.replicas`` it still advances,
    before KIP-966) are missing from the complete final read (`read_then_lost`)."""
    divergence_explanations: tuple[DivergenceExplanation, ...] = ()
    """Why offsets held two values, where a replica kept records its leader did not have
    (`jepsen_py.explain.explain_divergences`)."""

    @property
    def valid(self) -> bool | None:
        return {Verdict.OK: True, Verdict.ILLEGAL: False, Verdict.UNKNOWN: None}[self.verdict]

    @property
    def anomaly_counts(self) -> dict[str, int]:
        """Occurrences of every anomaly of the taxonomy (zeros included), in its order."""
        return {name: len(self.anomalies.get(name, ())) for name in ANOMALIES}

    @property
    def anomaly_summary(self) -> dict[str, Any]:
        """Counts and first witnesses (op indices) per anomaly, as ``results.json`` has
        them (`jepsen_py.checker.anomalies.summarize`)."""
        return summarize({k: [list(w) for w in v] for k, v in self.anomalies.items()})

    @property
    def anomaly_types(self) -> list[str]:
        """The anomalies that occurred, in the taxonomy's order."""
        return [name for name in ANOMALIES if self.anomalies.get(name)]

    @property
    def informational(self) -> dict[str, int]:
        """Anomalies that occurred and that Kafka's guarantees allow (stale reads...)."""
        return {
            name: len(self.anomalies[name]) for name in self.anomaly_types if name not in VIOLATIONS
        }

    @property
    def lost_acknowledged_writes(self) -> int:
        return len(self.lost_writes)

    @property
    def lost_examples(self) -> list[dict[str, Any]]:
        """The first lost writes, as ``results.json`` lists them (index, key, offset, value)."""
        return [
            {"index": op.index, "key": op.key, **op.value} for op in self.lost_writes[:EXAMPLES]
        ]

    @property
    def inconsistent_offsets(self) -> int:
        return len(self.anomalies.get("inconsistent-offsets", ()))

    @property
    def acknowledged_sends(self) -> int:
        return self.completions.get("send ok", 0)

    @property
    def loss_mechanisms(self) -> list[str]:
        """The mechanisms that explain the lost writes, sorted (`jepsen_py.explain`)."""
        return sorted({e.mechanism for e in self.loss_explanations})

    @property
    def read_loss_mechanisms(self) -> list[str]:
        """The mechanisms that explain the records read and then lost, sorted."""
        return sorted({e.mechanism for e in self.read_loss_explanations})

    @property
    def divergence_mechanisms(self) -> list[str]:
        """The mechanisms that explain the offsets with two values, sorted."""
        return sorted({e.mechanism for e in self.divergence_explanations})

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": verdict_name(self.verdict),
            "valid": self.valid,
            "consistency": self.consistency,
            "kafka": self.kafka.value,
            "linearizable": self.linearizable.to_json(),
            "anomalies": self.anomaly_summary,
            "anomaly_types": self.anomaly_types,
            "violations": list(self.violations),
            "violation_lines": {k: [list(w) for w in v] for k, v in self.violation_lines.items()},
            "informational": self.informational,
            "keys": {k: v.value for k, v in self.keys.items()},
            "explanations": dict(self.explanations),
            "lost_acknowledged_writes": self.lost_acknowledged_writes,
            "lost_examples": [
                {"index": op.index, "key": op.key, **op.value} for op in self.lost_writes[:EXAMPLES]
            ],
            "inconsistent_offsets": self.inconsistent_offsets,
            "final_reads": self.final_reads.to_json(),
            "completions": dict(self.completions),
            "checker_seconds": self.checker_seconds,
            "loss_explanations": [e.to_json() for e in self.loss_explanations],
            "read_loss_explanations": [e.to_json() for e in self.read_loss_explanations],
            "divergence_explanations": [e.to_json() for e in self.divergence_explanations],
        }


def check_history(history: Sequence[Op], consistency: str = KAFKA) -> HistoryCheck:
    """The verdict on a run's history (see the module docstring): each key's from
    `check_keys`, the run's the worst of them. Witness lines are ``history.jsonl`` lines
    (one op per line, in history order)."""
    started = time.perf_counter()
    ops = list(history)
    checks = check_keys(ops, consistency, line_of=lambda p: p + 1)
    found: dict[str, list[list[Op]]] = {name: [] for name in ANOMALIES}
    witnesses: dict[str, list[list[int]]] = {}
    for c in checks:
        for name, groups in c.anomalies.witnesses.items():
            found[name].extend([ops[p] for p in w] for w in groups)
        for name in c.verdict.violations:
            groups_ = c.anomalies.witnesses.get(name) or (c.verdict.witness,)
            lines = witnesses.setdefault(name, [])
            lines.extend([p + 1 for p in w] for w in groups_[: EXAMPLES - len(lines)])
    reads = FinalReads(
        {str(c.key): c.verdict.final_read.complete for c in checks if c.verdict.final_read.present}
    )
    return HistoryCheck(
        verdict=Verdict.combine([c.verdict.verdict for c in checks]),
        consistency=consistency,
        kafka=Verdict.combine([c.verdict.kafka for c in checks]),
        linearizable=Linearizability.of(checks),
        anomalies=found,
        violations=tuple(sorted({name for c in checks for name in c.verdict.violations})),
        violation_lines=witnesses,
        keys={str(c.key): c.verdict.verdict for c in checks},
        explanations={
            str(c.key): c.verdict.explanation for c in checks if c.verdict.verdict is not Verdict.OK
        },
        lost_writes=tuple(
            missing_from_final_read(
                ops, dict(reads.keys), {str(c.key): c.anomalies.log_start for c in checks}
            )
        ),
        final_reads=reads,
        completions=completion_counts(ops),
        checker_seconds=round(time.perf_counter() - started, 6),
    )


def settle_run(check: HistoryCheck, *, finished: bool) -> HistoryCheck:
    """A run that stopped short (out of logical time) or never reached its final reads is
    *unknown* at best: what went unread proves nothing."""
    if finished and check.final_reads.keys:
        return check
    settled = Verdict.ILLEGAL if check.verdict is Verdict.ILLEGAL else Verdict.UNKNOWN
    return attrs.evolve(check, verdict=settled)


def check_run(
    config: TestConfig,
    history: Sequence[Op],
    events: Sequence[Event],
    *,
    finished: bool,
    consistency: str = KAFKA,
) -> HistoryCheck:
    """A simulated run's check: `check_history`, settled (`settle_run`), its lost writes
    explained from the cluster's ``events`` (`explain_run_losses`), and so are its offsets
    that held two values (`jepsen_py.explain.explain_divergences`)."""
    check = settle_run(check_history(history, consistency), finished=finished)
    divergences = explain_run_divergences(config, history, events, check)
    explained = explain_run_losses(config, history, events, check.lost_writes, diverged=divergences)
    read_lost = read_then_lost(history) if check.verdict is Verdict.ILLEGAL else []
    read_explained = (
        explain_run_losses(config, history, events, read_lost, read=True, diverged=divergences)
        if read_lost
        else []
    )
    return attrs.evolve(
        check,
        loss_explanations=tuple(explained),
        read_loss_explanations=tuple(read_explained),
        divergence_explanations=tuple(divergences),
    )


def read_then_lost(history: Sequence[Op]) -> list[Op]:
    """Records a non-final poll returned whose send was never acknowledged (``ok``), and
    which the complete final read of their key does not return (retention's deletions
    excepted): as ``ok`` sends (index and time of the first poll that read them, value
    ``{"offset", "value"}``), for `explain_run_losses`."""
    keys = observe(list(history))
    reads = {str(k.key): k.final.complete for k in keys if k.final.present}
    starts = {str(k.key): k.log_start for k in keys}
    acked: set[Any] = set()
    final_values: dict[str, set[Any]] = {}
    final_process: dict[Any, str] = {}
    first_read: dict[tuple[str, Any], tuple[Op, int]] = {}
    for op in history:
        if not op.is_client:
            continue
        if op.f == "send" and op.type == "ok" and isinstance(op.value, dict):
            acked.add((str(op.key), freeze(op.value.get("value"))))
        if op.f != "poll":
            continue
        if op.type == "invoke":
            if is_final(op.value):
                final_process[op.process] = str(op.key)
            else:
                final_process.pop(op.process, None)
            continue
        key = final_process.pop(op.process, None)
        if op.type != "ok" or not isinstance(op.value, dict):
            continue
        records = [r for r in op.value.get("records") or () if len(r) == 2]
        if key is not None:
            final_values.setdefault(key, set()).update(freeze(r[1]) for r in records)
            continue
        for offset, value in records:
            first_read.setdefault((str(op.key), freeze(value)), (op, offset))
    lost = []
    for (key, value), (op, offset) in first_read.items():
        if not reads.get(key) or (key, value) in acked or value in final_values.get(key, ()):
            continue
        if type(offset) is not int or KeyAnomalies.deleted_below(starts.get(key, 0), offset):
            continue
        lost.append(
            Op(op.index, op.time, op.process, "ok", "send", key, {"offset": offset, "value": value})
        )
    return sorted(lost, key=lambda o: (o.index, o.value["offset"]))


def final_read_status(history: Sequence[Op]) -> dict[str, bool]:
    """Per key with a final read: is it complete (the shared rule of
    `jepsen_py.checker.anomalies`: the final polls returned the whole log)?"""
    return {str(k.key): k.final.complete for k in observe(list(history)) if k.final.present}


def missing_from_final_read(
    history: Sequence[Op], reads: dict[str, bool], log_starts: dict[str, int] | None = None
) -> list[Op]:
    """The ``ok`` sends whose value the final read of their key did not return, for keys
    whose final read completed: acknowledged writes that are gone, however they went
    (never read: ``lost-write``/``unseen``; read once, then replaced:
    ``inconsistent-offsets``) -- except those retention deleted on purpose, below the
    key's log start (``log_starts``, `KeyAnomalies.deleted`)."""
    starts = log_starts or {}
    final_values: dict[str, set[Any]] = {}
    final_process: dict[Any, str] = {}
    for op in history:
        if not op.is_client or op.f != "poll":
            continue
        if op.type == "invoke":
            if is_final(op.value):
                final_process[op.process] = str(op.key)
            else:
                final_process.pop(op.process, None)
            continue
        key = final_process.pop(op.process, None)
        if key is not None and op.type == "ok" and isinstance(op.value, dict):
            seen = final_values.setdefault(key, set())
            seen.update(freeze(r[1]) for r in op.value.get("records") or () if len(r) == 2)
    return [
        op
        for op in history
        if op.is_client
        and op.f == "send"
        and op.type == "ok"
        and reads.get(str(op.key))
        and isinstance(op.value, dict)
        and freeze(op.value.get("value")) not in final_values.get(str(op.key), set())
        and not KeyAnomalies.deleted_below(starts.get(str(op.key), 0), _offset(op.value))
    ]


def _offset(value: dict[str, Any]) -> int | None:
    offset = value.get("offset")
    return offset if type(offset) is int else None


def explain_run_losses(
    config: TestConfig,
    history: Sequence[Op],
    events: Sequence[Event],
    lost: Sequence[Op] | None = None,
    *,
    read: bool = False,
    diverged: Sequence[DivergenceExplanation] = (),
) -> list[LossExplanation]:
    """Why the run's lost acknowledged writes were lost (``jepsen_py.explain``). ``lost``:
    the lost writes when already known (`HistoryCheck.lost_writes`); by default, found
    from the final reads (`missing_from_final_read`). ``read``: ``lost`` are records
    polls returned (`read_then_lost`). ``diverged``: the run's explained divergences
    (`explain_run_divergences`), which explain a write replaced where the logs parted."""
    if lost is None:
        keys = observe(list(history))
        lost = missing_from_final_read(
            history,
            {str(k.key): k.final.complete for k in keys if k.final.present},
            {str(k.key): k.log_start for k in keys},
        )
    if not lost:
        return []
    return explain_losses(
        lost,
        history,
        events,
        acks=config.acks,
        truncation=config.truncation,
        topic=config.cluster_config().topic,
        read=read,
        diverged=diverged,
    )


def explain_run_divergences(
    config: TestConfig, history: Sequence[Op], events: Sequence[Event], check: HistoryCheck
) -> list[DivergenceExplanation]:
    """Why the run's offsets that held two values (``check``'s ``inconsistent-offsets``)
    did (``jepsen_py.explain.explain_divergences``)."""
    diverged = check.anomalies.get("inconsistent-offsets", ())
    if not diverged:
        return []
    return explain_divergences(
        diverged,
        history,
        events,
        truncation=config.truncation,
        topic=config.cluster_config().topic,
    )


def completion_counts(history: Iterable[Op]) -> dict[str, int]:
    """Client completions by f and type (``send ok``, ``poll fail``, ``final poll ok``,
    ``replica poll ok``: a poll from a follower, KIP-392...)."""
    counts: Counter[str] = Counter()
    marks: dict[Any, str] = {}
    for op in history:
        if not op.is_client:
            continue
        if op.type == "invoke":
            value = op.value if isinstance(op.value, dict) else {}
            marks[op.process] = (
                "final " if value.get("final") is True else "replica " if "replica" in value else ""
            )
            continue
        counts[f"{marks.pop(op.process, '')}{op.f} {op.type}"] += 1
    return dict(sorted(counts.items()))


def fault_counts(history: Iterable[Op]) -> dict[str, int]:
    """How many times each fault was started (completions that did something)."""
    counts: Counter[str] = Counter()
    pending: Op | None = None
    for op in history:
        if op.is_client or fault_of_op(op.f) is None:
            continue
        if pending is None:
            pending = op
            continue
        kind = fault_of_op(op.f)
        assert kind is not None
        if kind[1] == "start" and not (isinstance(op.value, dict) and "skipped" in op.value):
            counts[kind[0]] += 1
        pending = None
    return dict(sorted(counts.items()))


@attrs.frozen
class Timings:
    """Wall-clock seconds (the only place a run reads the wall clock): ``simulation`` to
    the end of the run, ``wall`` to the verdict, ``reports`` to render them (None: none)."""

    simulation: float
    wall: float
    reports: float | None = None

    def to_json(self) -> dict[str, float]:
        out = {"simulation": self.simulation, "wall": self.wall}
        if self.reports is not None:
            out["reports"] = self.reports
        return out


@attrs.frozen
class RunOutcome:
    """What a run produced: the history, its hash, the check, the simulation's figures,
    the command that reproduces it, and where it was stored. ``to_json`` is its
    ``results.json``."""

    config: TestConfig
    seed: int
    history: list[Op]
    history_hash: str
    """`jepsen_py.runner.drive.HistoryHash` of the history as ``history.jsonl`` holds it."""
    check: HistoryCheck
    figures: RunFigures
    faults: Mapping[str, int]
    """How many times each fault was started (`fault_counts`)."""
    command: str
    """The one command that reproduces the run (`reproduce_command`)."""
    seconds: Timings
    run_dir: Path | None
    extra: Mapping[str, Any] = attrs.field(factory=dict)
    """More entries for ``results.json`` (a shrunk run's origin)."""

    @property
    def verdict(self) -> Verdict:
        return self.check.verdict

    @property
    def verdict_name(self) -> str:
        return verdict_name(self.check.verdict)

    @property
    def violations(self) -> list[str]:
        return list(self.check.violations)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.check.to_json(),
            "seed": self.seed,
            "history": {"ops": len(self.history), "blake2b": self.history_hash},
            "faults": dict(self.faults),
            "run": self.figures.to_json(),
            "command": self.command,
            "seconds": self.seconds.to_json(),
            **self.extra,
        }


__all__ = [
    "EXAMPLES",
    "FinalReads",
    "HistoryCheck",
    "Linearizability",
    "RunOutcome",
    "Timings",
    "check_history",
    "check_run",
    "completion_counts",
    "explain_run_divergences",
    "explain_run_losses",
    "fault_counts",
    "final_read_status",
    "missing_from_final_read",
    "settle_run",
    "verdict_name",
]
