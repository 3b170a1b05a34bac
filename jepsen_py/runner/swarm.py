"""A swarm of fault-injection runs (``kmodel test --runs N``), one run at a time: the draw
of each run's configuration (plain swarm testing, or steered by coverage), the run, and the
row the swarm's table, its summary and ``swarm.parquet`` hold.

Both engines call `run_member` for every seed -- this process for ``--engine local``, a
Spark task for ``--engine spark`` (`jepsen_py.runner.swarm_spark`) -- so the same seeds give
the same configurations, histories and verdicts on either.

**Swarm testing** (Groce et al., "Swarm Testing", ISSTA 2012): each run draws its own subset
of the fault kinds, pace, rate and clients from its seed (`jepsen_py.runner.config.swarm_config`).

**Steering** (``--steer``): the runs go in rounds of `ROUND` seeds. After each round,
every fault kind a run injected is credited with the run's *novelty*: the sum, over the
situations and spec actions the run reached (`jepsen_py.runner.coverage`), of
``1 / (1 + runs that reached it before)`` -- 1 for something no earlier run reached, less
for what is common -- shared among the kinds the run injected. A kind's weight decays by
`DECAY` a round and gains its credits; the next round includes each kind with probability
``density * weight / mean weight``, the factor kept within [2 `P_MIN`, 2 `P_MAX`], where
``density`` is the run's own (`swarm_density`: the plain swarm keeps each offered kind
with it; with equal weights the steered draw is the plain one, `Steering.draw`). The pace is
steered the same way: each `SWARM_PACE` choice has a weight, credited with the novelty of
the runs that took it, and is drawn with probability half uniform, half by weight. The draw comes
from the plain draw and the seed's ``steer`` stream and the weights from the rounds before, so
a steered swarm is as reproducible as a plain one; each run's reproduce command names its
faults, so it reruns alone.

``swarm.parquet`` (`write_parquet`): one row per run, columns `PARQUET_FIELDS`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from impl.cluster import Cluster
from impl.sim.rng import SimRandom
from jepsen_py.checker.anomalies import DESCRIPTIONS
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.verdict import KAFKA
from jepsen_py.explain import explanation_lines
from jepsen_py.generator import MILLISECOND
from jepsen_py.history.op import Op
from jepsen_py.runner.config import (
    SWARM_PACE,
    TestConfig,
    format_duration,
    swarm_config,
    swarm_density,
    swarm_offered,
)
from jepsen_py.runner.coverage import Coverage, coverage_of
from jepsen_py.runner.outcome import HistoryCheck, RunOutcome, verdict_name
from jepsen_py.runner.run import run_test

ROUND = 10
"""Runs per steering round (``--steer``): weights change between rounds, on both engines."""
DECAY = 0.8
P_MIN = 0.1
P_MAX = 0.9

PARQUET_FILE = "swarm.parquet"


def violation_lines(check: HistoryCheck) -> list[str]:
    """One line per violation that made a run invalid: its name, what it means, and the
    ``history.jsonl`` lines of its first witnesses."""
    out = []
    for name in check.violations:
        groups = check.violation_lines.get(name) or []
        where = "; ".join("lines " + " ".join(map(str, group)) for group in groups[:3])
        what = DESCRIPTIONS.get(name, "no linearization of the partition log")
        out.append(f"{name}: {what}" + (f" ({where})" if where else ""))
    return out


def describe_draw(config: TestConfig) -> str:
    """What the swarm drew for a run: its faults, their pace and overlap, the clients."""
    faults = ",".join(config.nemesis) or "none"
    return (
        f"faults {faults} every ~{format_duration(config.interval_ns)} "
        f"(at most {config.max_faults} at once); {config.rate:g} ops/s by "
        f"{config.concurrency} clients; {format_duration(config.time_limit_ns)}"
    )


@attrs.frozen
class SwarmRow:
    """One run of a swarm, as the table, the summary and ``swarm.parquet`` show it. Small
    and picklable: what a Spark task sends back to the driver."""

    seed: int
    config: TestConfig
    verdict: str
    """``valid``, ``invalid`` or ``unknown`` (`jepsen_py.runner.outcome.verdict_name`)."""
    violations: tuple[str, ...]
    first_witness: Mapping[str, tuple[int, ...]]
    """Per violation, the ``history.jsonl`` lines of its first witness."""
    violation_text: tuple[str, ...]
    """`violation_lines` of the run."""
    loss_text: tuple[str, ...]
    """How its lost writes were lost (`jepsen_py.explain.explanation_lines`, short)."""
    anomalies: Mapping[str, int]
    """Anomalies that occurred, with their counts."""
    informational: Mapping[str, int]
    faults: Mapping[str, int]
    """Faults started, per kind (`jepsen_py.runner.outcome.fault_counts`)."""
    coverage: Coverage
    lost_writes: int
    history_ops: int
    history_hash: str
    command: str
    store: str | None
    seconds: float
    """Wall-clock seconds to the verdict (the only wall-clock figure)."""
    logical_seconds: float
    round: int | None = None
    """The steering round (``--steer``), else None."""

    @property
    def outcome(self) -> Verdict:
        """The verdict as the checker's `Verdict`."""
        return next(v for v in Verdict if verdict_name(v) == self.verdict)

    @classmethod
    def of(cls, outcome: RunOutcome, coverage: Coverage, round_: int | None = None) -> SwarmRow:
        check = outcome.check
        return cls(
            seed=outcome.seed,
            config=outcome.config,
            verdict=outcome.verdict_name,
            violations=tuple(check.violations),
            first_witness={
                name: tuple((check.violation_lines.get(name) or [[]])[0])
                for name in check.violations
            },
            violation_text=tuple(violation_lines(check)),
            loss_text=tuple(explanation_lines(check.loss_explanations, False)),
            anomalies={k: n for k, n in check.anomaly_counts.items() if n},
            informational=dict(check.informational),
            faults=dict(outcome.faults),
            coverage=coverage,
            lost_writes=check.lost_acknowledged_writes,
            history_ops=len(outcome.history),
            history_hash=outcome.history_hash,
            command=outcome.command,
            store=str(outcome.run_dir) if outcome.run_dir is not None else None,
            seconds=outcome.seconds.wall,
            logical_seconds=outcome.figures.logical_end_ns / 1e9,
            round=round_,
        )

    def record(self) -> dict[str, Any]:
        """The row of ``swarm.parquet`` (`PARQUET_FIELDS`)."""
        return {
            "seed": self.seed,
            "round": self.round,
            "config": describe_draw(self.config),
            "config_json": json.dumps(self.config.to_json(), sort_keys=True),
            "verdict": self.verdict,
            "violations": list(self.violations),
            "anomalies": sorted(self.anomalies.items()),
            "faults": sorted(self.faults.items()),
            "situations": list(self.coverage.situations),
            "actions": list(self.coverage.actions),
            "lost_writes": self.lost_writes,
            "history_ops": self.history_ops,
            "history_hash": self.history_hash,
            "command": self.command,
            "store": self.store,
            "seconds": self.seconds,
            "logical_seconds": self.logical_seconds,
        }


PARQUET_FIELDS: dict[str, str] = {
    "seed": "int64: the run's seed",
    "round": "int32, null without --steer: the steering round",
    "config": "string: what the swarm drew (faults, pace, overlap, rate, clients, time)",
    "config_json": "string: the whole TestConfig as test.json holds it",
    "verdict": "string: valid, invalid or unknown",
    "violations": "list<string>: the anomalies that made the run invalid",
    "anomalies": "map<string,int64>: every anomaly that occurred, with its count",
    "faults": "map<string,int64>: faults started, per kind",
    "situations": "list<string>: ISR/leader situations reached (jepsen_py.runner.coverage)",
    "actions": "list<string>: spec.replication actions reached",
    "lost_writes": "int64: acknowledged writes the final reads did not return",
    "history_ops": "int64: ops in history.jsonl",
    "history_hash": "string: blake2b of history.jsonl (same seed, same hash)",
    "command": "string: the one command that reproduces the run",
    "store": "string, null: the run's store directory",
    "seconds": "float64: wall-clock seconds to the verdict",
    "logical_seconds": "float64: simulated seconds the run lasted",
}
"""The columns of ``swarm.parquet``, in order, with their types and meaning."""


def write_parquet(rows: Sequence[SwarmRow], path: str | Path) -> Path:
    """``swarm.parquet`` at ``path`` (a local file), one row per run, seed order."""
    # pyarrow takes a fifth of a second to import: only a swarm pays for it
    import pyarrow as pa
    import pyarrow.parquet as pq

    counts = pa.map_(pa.string(), pa.int64())
    strings = pa.list_(pa.string())
    schema = pa.schema(
        [
            ("seed", pa.int64()),
            ("round", pa.int32()),
            ("config", pa.string()),
            ("config_json", pa.string()),
            ("verdict", pa.string()),
            ("violations", strings),
            ("anomalies", counts),
            ("faults", counts),
            ("situations", strings),
            ("actions", strings),
            ("lost_writes", pa.int64()),
            ("history_ops", pa.int64()),
            ("history_hash", pa.string()),
            ("command", pa.string()),
            ("store", pa.string()),
            ("seconds", pa.float64()),
            ("logical_seconds", pa.float64()),
        ]
    )
    assert schema.names == list(PARQUET_FIELDS), "PARQUET_FIELDS documents the schema"
    ordered = sorted(rows, key=lambda r: r.seed)
    table = pa.Table.from_pylist([r.record() for r in ordered], schema=schema)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, target)
    return target


def pace_intervals(config: TestConfig) -> list[int]:
    """The fault intervals of `SWARM_PACE` for ``config``'s timers (as `swarm_config`
    draws them)."""
    timer = min(config.session_timeout_ns, config.replica_lag_time_max_ns)
    return [max(MILLISECOND, timer * n // d) for n, d in SWARM_PACE]


@attrs.frozen
class Steering:
    """The fault kinds' weights and how many runs reached each situation so far (module
    docstring); immutable: `learn` returns the next round's."""

    weights: Mapping[str, float]
    reached: Mapping[str, int] = attrs.field(factory=dict)
    paces: tuple[float, ...] = (1.0,) * len(SWARM_PACE)
    """A weight per `SWARM_PACE` choice: the pace is steered too."""

    @classmethod
    def start(cls, base: TestConfig) -> Steering:
        return cls({kind: 1.0 for kind in swarm_offered(base)})

    def pace_probabilities(self) -> list[float]:
        """How likely the next round's runs take each `SWARM_PACE` choice: half uniform
        (every pace stays in play), half by weight."""
        total = sum(self.paces)
        m = len(self.paces)
        return [0.5 / m + (0.5 * w / total if total > 0 else 0.5 / m) for w in self.paces]

    def probability(self, kind: str, density: float = 0.5) -> float:
        """How likely the next round's runs of fault ``density`` (`SWARM_DENSITY`) include
        ``kind``: the density times the kind's weight over the mean weight, that factor kept
        within [2 `P_MIN`, 2 `P_MAX`] (so within [`P_MIN`, `P_MAX`] at density 1/2)."""
        mean = sum(self.weights.values()) / len(self.weights) if self.weights else 1.0
        factor = self.weights.get(kind, 0.0) / mean if mean > 0 else 1.0
        return min(1.0, density * min(2 * P_MAX, max(2 * P_MIN, factor)))

    def draw(self, base: TestConfig, seed: int) -> TestConfig:
        """``swarm_config(base, seed)`` with its faults drawn by these weights. Common
        random numbers: with the run's density d (`swarm_density`), a kind the plain draw
        kept gets a uniform number in [0, d), one it left out a number in [d, 1) (from the
        seed's ``steer`` stream), and is kept when that number is below its probability;
        so at equal weights (probability d) the steered draw is the plain one, and
        steering changes only what it must."""
        plain = swarm_config(base, seed)
        density = swarm_density(seed)
        rng = SimRandom(seed).split("steer")
        pace_u = rng.random()
        kept = set(plain.nemesis)
        kinds = list(swarm_offered(base))
        faults = []
        for kind in kinds:
            u = density * rng.random() if kind in kept else density + (1 - density) * rng.random()
            if u < self.probability(kind, density):
                faults.append(kind)
        if kinds and not faults:
            total = sum(self.weights.get(k, 0.0) for k in kinds)
            point = rng.random() * total
            for kind in kinds:
                point -= self.weights.get(kind, 0.0)
                if point < 0:
                    faults = [kind]
                    break
            else:
                faults = [kinds[-1]]
        steered = attrs.evolve(plain, nemesis=tuple(faults))
        intervals = pace_intervals(base)
        if plain.interval_ns not in intervals:
            return steered  # a draw that is not SWARM_PACE's: its pace stays
        # common random numbers again: the plain choice i of m is the uniform number
        # (i + u) / m, read through these weights' distribution
        point = (intervals.index(plain.interval_ns) + pace_u) / len(intervals)
        choice = len(intervals) - 1
        for j, p in enumerate(self.pace_probabilities()):
            point -= p
            if point < 0:
                choice = j
                break
        return attrs.evolve(steered, interval_ns=intervals[choice])

    def learn(self, rows: Iterable[SwarmRow]) -> Steering:
        """The weights after a round (its rows are taken in seed order)."""
        reached = dict(self.reached)
        credit = dict.fromkeys(self.weights, 0.0)
        pace_credit = [0.0] * len(self.paces)
        for row in sorted(rows, key=lambda r: r.seed):
            items = sorted(row.coverage.reached)
            novelty = sum(1.0 / (1 + reached.get(item, 0)) for item in items)
            for item in items:
                reached[item] = reached.get(item, 0) + 1
            kinds = [k for k, n in sorted(row.faults.items()) if n and k in credit]
            kinds = kinds or [k for k in row.config.nemesis if k in credit]
            for kind in kinds:
                credit[kind] += novelty / len(kinds)
            intervals = pace_intervals(row.config)
            if row.config.interval_ns in intervals:
                pace_credit[intervals.index(row.config.interval_ns)] += novelty
        weights = {k: DECAY * w + credit[k] for k, w in self.weights.items()}
        paces = tuple(DECAY * w + c for w, c in zip(self.paces, pace_credit, strict=True))
        return Steering(weights, reached, paces)


class _LastCluster:
    """An observer (`jepsen_py.runner.drive.Observer`) that keeps the run's cluster, whose
    timeline and controller figures coverage reads once the run is over."""

    def __init__(self) -> None:
        self.cluster: Cluster | None = None

    def __call__(self, cluster: Cluster, op: Op | None) -> None:
        self.cluster = cluster


@attrs.frozen
class SwarmPlan:
    """What every run of a swarm shares: the base configuration and where runs go."""

    base: TestConfig
    store_root: str | None
    reports: bool = True
    consistency: str = KAFKA
    swarm: bool = True
    """Draw each run's configuration from its seed (False: one run of ``base``)."""

    def config_for(self, seed: int, steering: Steering | None) -> TestConfig:
        if not self.swarm:
            return self.base
        if steering is not None:
            return steering.draw(self.base, seed)
        return swarm_config(self.base, seed)


def run_member(
    plan: SwarmPlan,
    seed: int,
    steering: Steering | None = None,
    round_: int | None = None,
    store_root: str | None = None,
) -> tuple[RunOutcome, SwarmRow]:
    """One run of the swarm: its configuration drawn (`SwarmPlan.config_for`), simulated,
    checked and stored (`run_test`), and its coverage. ``store_root`` overrides the plan's
    (a Spark task writing to scratch space first)."""
    config = plan.config_for(seed, steering)
    seen = _LastCluster()
    outcome = run_test(
        config,
        seed,
        store_root=store_root if store_root is not None else plan.store_root,
        reports=plan.reports,
        observer=seen,
        consistency=plan.consistency,
    )
    assert seen.cluster is not None, "the driver calls the observer after every step"
    coverage = coverage_of(
        config,
        seen.cluster.timeline.events,
        outcome.history,
        outcome.figures.controller,
    )
    return outcome, SwarmRow.of(outcome, coverage, round_)


def rounds(first_seed: int, runs: int, steer: bool) -> list[list[int]]:
    """The swarm's seeds, in steering rounds of `ROUND` (one round without steering)."""
    seeds = list(range(first_seed, first_seed + runs))
    if not steer:
        return [seeds]
    return [seeds[i : i + ROUND] for i in range(0, len(seeds), ROUND)]


__all__ = [
    "DECAY",
    "PARQUET_FIELDS",
    "PARQUET_FILE",
    "P_MAX",
    "P_MIN",
    "ROUND",
    "Steering",
    "SwarmPlan",
    "SwarmRow",
    "describe_draw",
    "rounds",
    "run_member",
    "violation_lines",
    "write_parquet",
]
