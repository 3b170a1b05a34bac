"""Replay: run a store directory's (config, seed) again, confirm that the history comes out
identical, and show what the cluster did around the first anomaly.

A run is a function of (code, config, seed), so a replay must reproduce the stored
``history.jsonl`` byte for byte; `replay` compares the blake2b of both (and, when they
differ, names the first line that does: a different code version, or a determinism bug).

While it replays, a `Tracer` watches the cluster after every step and records what a
history cannot show: controller decisions (leader, leader epoch, ISR of each partition),
node crashes, restarts and pauses, and each replica's truncations (its log end offset going
down), with every replica's role, epoch, log end offset and high watermark at that moment.
`trace_around` merges those events with the nemesis ops and the witnessing client ops of
the first anomaly, in time order: the step-by-step story of how the write was lost.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import orjson

from impl.cluster import Cluster
from impl.controller import broker_node
from impl.coordination import STORE
from jepsen_py.checker.anomalies import ANOMALIES, CLASSES
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.verdict import KAFKA, NONLINEARIZABLE, check_keys
from jepsen_py.generator import SECOND
from jepsen_py.history.op import Op
from jepsen_py.nemesis import fault_of_op
from jepsen_py.runner.config import ConfigError, TestConfig
from jepsen_py.runner.drive import HistoryHash, history_file_hash, simulate_run
from jepsen_py.runner.outcome import HistoryCheck, check_run, verdict_name
from jepsen_py.store import StoreError, code_version, load_run

TRACE_MARGIN_NS = 2 * SECOND
"""How far before and after each witnessing op the trace reaches."""
TRACE_LINES = 120


class ReplayError(ValueError):
    """A store directory that cannot be replayed; the message says why and what to do."""


@attrs.frozen
class TraceEvent:
    time: int
    who: str
    """A partition key (``t-0``), a node (``b1``, ``controller``), ``nemesis`` or a process."""
    text: str
    witness: bool = False


class Tracer:
    """Records the cluster's state changes after each step of a run (see the module
    docstring). Pass it as the runner's ``observer``."""

    def __init__(self) -> None:
        self.events: list[TraceEvent] = []
        self._metadata: dict[int, tuple[int, int, tuple[int, ...]]] = {}
        self._nodes: dict[str, tuple[str, int]] = {}
        self._replicas: dict[tuple[int, int], tuple[str, int, int]] = {}

    def __call__(self, cluster: Cluster, op: Op | None) -> None:
        if op is not None:
            return
        now = cluster.clock.now
        config = cluster.config
        servers = [*(broker_node(b) for b in config.broker_ids), STORE]
        for name in servers:
            node_state = cluster.nodes.state(name)
            life = (node_state.value, cluster.nodes.incarnation(name))
            if self._nodes.get(name, ("running", 0)) != life:
                self.events.append(TraceEvent(now, name, f"{name} is {node_state.value}"))
            self._nodes[name] = life
        for p in range(config.partitions):
            key = f"{config.topic}-{p}"
            quorum = cluster.store.partitions[(config.topic, p)]
            signature = (quorum.leader, quorum.leader_epoch, tuple(sorted(quorum.isr)))
            changed = self._metadata.get(p) != signature
            self._metadata[p] = signature
            notes: list[str] = []
            for b in config.broker_ids:
                broker = cluster.brokers.get(b)
                replica = broker.replica(config.topic, p) if broker is not None else None
                if replica is None:
                    self._replicas.pop((b, p), None)
                    continue
                role, epoch, leo = replica.role.value, replica.leader_epoch, replica.leo
                before = self._replicas.get((b, p))
                if before is not None and leo < before[2]:
                    notes.append(f"b{b} truncated its log {before[2]} -> {leo}")
                elif before is not None and (role, epoch) != before[:2]:
                    notes.append(f"b{b} is {role} in epoch {epoch}")
                self._replicas[(b, p)] = (role, epoch, leo)
            if changed:
                leader = "none" if signature[0] < 0 else f"b{signature[0]}"
                notes.insert(
                    0,
                    f"controller: leader {leader}, epoch {signature[1]}, ISR {list(signature[2])}",
                )
            if notes:
                self.events.append(
                    TraceEvent(now, key, "; ".join(notes) + "  [" + _replicas(cluster, p) + "]")
                )


def _replicas(cluster: Cluster, p: int) -> str:
    parts = []
    for b in cluster.config.broker_ids:
        broker = cluster.brokers.get(b)
        replica = broker.replica(cluster.config.topic, p) if broker is not None else None
        if replica is None:
            parts.append(f"b{b} down")
        else:
            parts.append(
                f"b{b} {replica.role.value} e{replica.leader_epoch} "
                f"leo={replica.leo} hw={replica.hw}"
            )
    return " | ".join(parts)


@attrs.frozen
class Anomaly:
    """The anomaly a replay traces: its name, the ops that witness it, and whether it is a
    violation that decided the verdict (else informational, or not deciding)."""

    name: str
    witness: tuple[Op, ...]
    explanation: str | None = None
    violation: bool = True


SEVERITY = (
    "inconsistent-offsets",
    "lost-write",
    "aborted-read",
    "poll-skip",
    "nonmonotonic-poll",
    "int-poll-skip",
    "int-nonmonotonic-poll",
    "nonmonotonic-send",
    "duplicate",
    NONLINEARIZABLE,
    "unseen",
    "deleted-by-retention",
    "stale-read",
)
"""Failure types, the gravest first: a log that diverged (its witnesses show when the
other value was first seen, near the election that caused it) and lost acknowledged writes
before reordering, before duplicates (which a non-idempotent producer's retries make by
design), before what is informational."""
assert set(SEVERITY) == {*ANOMALIES, NONLINEARIZABLE}


def first_anomaly(history: Sequence[Op], consistency: str = KAFKA) -> Anomaly | None:
    """The gravest violation that decided the verdict (`SEVERITY`); when none did, the
    gravest anomaly found (informational, or reported beside the verdict), marked so; None
    for a history with nothing to show."""
    ops = list(history)
    checks = check_keys(ops, consistency)
    deciding = {name for c in checks for name in c.verdict.violations}
    firsts: dict[str, tuple[tuple[Op, ...], str]] = {}
    for c in checks:
        for name, witnesses in c.anomalies.witnesses.items():
            count = sum(k.anomalies.counts.get(name, 0) for k in checks)
            firsts.setdefault(name, (tuple(ops[p] for p in witnesses[0]), f"{count} witness(es)"))
        if c.log.verdict is Verdict.ILLEGAL:
            firsts.setdefault(NONLINEARIZABLE, (tuple(c.log.witness), c.log.explanation or ""))
    for violation in (True, False):
        for name in SEVERITY:
            if name in firsts and (name in deciding) is violation:
                witness, explanation = firsts[name]
                if not violation:
                    kind = CLASSES.get(name, "not deciding")
                    explanation = f"{kind}, not a violation here: {explanation}"
                return Anomaly(name, witness, explanation, violation)
    return None


def describe_op(op: Op) -> str:
    value = op.value
    if op.f == "send" and op.type == "ok" and isinstance(value, dict):
        return f"send {value.get('value')} ok: offset {value.get('offset')}"
    if op.f == "send":
        return f"send {value!r} {op.type}" if op.type != "invoke" else f"send {value!r}"
    if op.f == "poll" and op.type == "ok" and isinstance(value, dict):
        records = value.get("records") or []
        span = f"{records[0][0]}..{records[-1][0]}" if records else "nothing"
        return f"poll ok: {len(records)} records ({span}), hw {value.get('hw')}"
    if op.f == "poll" and op.type == "invoke" and isinstance(value, dict):
        final = " (final)" if value.get("final") else ""
        return f"poll from {value.get('from')}{final}"
    return f"{op.f} {op.type} {value!r}"


def trace_around(
    history: Sequence[Op],
    events: Sequence[TraceEvent],
    anomaly: Anomaly,
    *,
    margin: int = TRACE_MARGIN_NS,
    max_lines: int = TRACE_LINES,
) -> list[TraceEvent]:
    """The cluster events and nemesis ops within ``margin`` of a witnessing op of the
    anomaly, and those ops, in time order; the lines nearest the witnesses are kept when
    there are more than ``max_lines``."""
    if not anomaly.witness:
        return []
    times = sorted(op.time for op in anomaly.witness)

    def near(t: int) -> bool:
        i = bisect.bisect_left(times, t - margin)
        return i < len(times) and times[i] <= t + margin

    keys = {op.key for op in anomaly.witness if op.key is not None}
    witnessed = {op.index for op in anomaly.witness}
    lines: list[TraceEvent] = []
    completes = False  # the nemesis logs each op twice: its invocation, then what it did
    for op in history:
        if not op.is_client and fault_of_op(op.f) is not None:
            completes = not completes
            if completes:
                continue
        if op.index in witnessed:
            lines.append(TraceEvent(op.time, f"process {op.process}", describe_op(op), True))
        elif not op.is_client and near(op.time):
            lines.append(TraceEvent(op.time, "nemesis", f"{op.f} {_compact(op.value)}"))
    for event in events:
        if near(event.time) and (not _is_partition(event.who) or event.who in keys):
            lines.append(event)
    lines.sort(key=lambda e: e.time)
    if len(lines) > max_lines:

        def distance(e: TraceEvent) -> int:
            return min(abs(e.time - t) for t in times)

        lines = sorted(lines, key=lambda e: (not e.witness, distance(e)))[:max_lines]
        lines.sort(key=lambda e: e.time)
    return lines


def _compact(value: Any) -> str:
    return orjson.dumps(value).decode() if value is not None else ""


def _is_partition(who: str) -> bool:
    """Whether a trace event's ``who`` names a partition (``<topic>-<n>``)."""
    return "-" in who and who.rsplit("-", 1)[1].isdigit()


def format_trace(lines: Sequence[TraceEvent]) -> list[str]:
    out = []
    for event in lines:
        mark = "  <- witness" if event.witness else ""
        out.append(f"{event.time / SECOND:10.4f} s  {event.who:<12} {event.text}{mark}")
    return out


@attrs.define
class ReplayResult:
    run_dir: Path
    seed: int
    config: TestConfig
    identical: bool
    stored_hash: str
    replayed_hash: str
    first_difference: str | None
    version_stored: str | None
    version_now: str
    check: HistoryCheck
    anomaly: Anomaly | None
    trace: list[TraceEvent]
    history: list[Op]

    @property
    def verdict(self) -> Verdict:
        """The replayed run's verdict; UNKNOWN when the history differs from the stored one
        (the replay then proves nothing about the stored run)."""
        return self.check.verdict if self.identical else Verdict.UNKNOWN

    def to_json(self) -> dict[str, Any]:
        return {
            "run": str(self.run_dir),
            "seed": self.seed,
            "identical": self.identical,
            "stored_hash": self.stored_hash,
            "replayed_hash": self.replayed_hash,
            "first_difference": self.first_difference,
            "version_stored": self.version_stored,
            "version_now": self.version_now,
            "verdict": verdict_name(self.check.verdict),
            "consistency": self.check.consistency,
            "loss_explanations": [e.to_json() for e in self.check.loss_explanations],
            "violations": list(self.check.violations),
            "violation_lines": dict(self.check.violation_lines),
            "informational": self.check.informational,
            "anomaly": None if self.anomaly is None else self.anomaly.name,
            "anomaly_is_violation": None if self.anomaly is None else self.anomaly.violation,
            "witness": [] if self.anomaly is None else [op.index for op in self.anomaly.witness],
            "trace": format_trace(self.trace),
        }


def load_config(run_test_json: dict[str, Any], where: str) -> tuple[TestConfig, int]:
    seed = run_test_json.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ReplayError(f"{where}: test.json has no integer seed")
    try:
        return TestConfig.from_json(run_test_json.get("config")), seed
    except ConfigError as exc:
        raise ReplayError(
            f"{where}: test.json's config is not a `kmodel test` configuration ({exc}); "
            "only runs written by `kmodel test` can be replayed"
        ) from exc


def replay(path: str | os.PathLike[str]) -> ReplayResult:
    """Replay the run at ``path`` (a run directory, or a test directory's latest run)."""
    try:
        loaded = load_run(path)
    except StoreError as exc:
        raise ReplayError(str(exc)) from exc
    run_dir = loaded.run.path
    config, seed = load_config(loaded.test, str(run_dir / "test.json"))
    if not loaded.run.history_path.exists():
        raise ReplayError(f"{run_dir}: no history.jsonl to compare with")
    stored_hash = history_file_hash(loaded.run.history_path)
    tracer = Tracer()
    hasher = HistoryHash()
    lines: list[bytes] = []

    def emit(op: Op, line: bytes) -> None:
        hasher.add(line)
        lines.append(line)

    simulation = simulate_run(config, seed, emit=emit, observer=tracer)
    history = simulation.history
    replayed_hash = hasher.hexdigest()
    identical = replayed_hash == stored_hash
    difference = None if identical else _first_difference(loaded.run.history_path, lines)
    stored = loaded.results or {}
    consistency = str(stored.get("consistency", KAFKA))
    check = check_run(
        config,
        history,
        simulation.events,
        finished=simulation.figures.finished,
        consistency=consistency,
    )
    anomaly = first_anomaly(history, consistency)
    trace = trace_around(history, tracer.events, anomaly) if anomaly is not None else []
    return ReplayResult(
        run_dir,
        seed,
        config,
        identical,
        stored_hash,
        replayed_hash,
        difference,
        loaded.test.get("version"),
        code_version(),
        check,
        anomaly,
        trace,
        history,
    )


def _first_difference(path: Path, replayed: Sequence[bytes]) -> str:
    with open(path, "rb") as handle:
        stored = handle.readlines()
    for number, (a, b) in enumerate(zip(stored, replayed, strict=False), start=1):
        if a != b:
            return (
                f"line {number}: stored {a.decode(errors='replace').strip()} / "
                f"replayed {b.decode(errors='replace').strip()}"
            )
    return f"the stored history has {len(stored)} lines, the replay {len(replayed)}"


__all__ = [
    "SEVERITY",
    "Anomaly",
    "ReplayError",
    "ReplayResult",
    "TraceEvent",
    "Tracer",
    "first_anomaly",
    "format_trace",
    "replay",
    "trace_around",
]
