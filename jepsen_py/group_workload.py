"""``kmodel test --workload group``: a consumer group on the simulated cluster
(``jepsen_py.group_cluster``): a producer writes the topic, the consumers subscribe as one
group, read what they are assigned, process and commit (``--commit``), under faults of the
consumers and of the brokers, the group coordinator's among them.

Faults (``--nemesis``, comma-separated, or ``all``): ``pause-consumer`` (SIGSTOP: the zombie
member), ``kill-consumer`` (it dies and comes back as a new member and a new history
process), ``kill-coordinator`` and ``pause-coordinator`` (the broker leading the group's
``__consumer_offsets`` partition), ``late-commit``, ``pause-partition`` (a consumer pauses a
partition for a while: back-pressure) and ``fail-processing`` (a consumer's handler throws
part way through some batches and the application seeks back to its committed offset:
re-deliveries the checker explains as ``duplicated-seek``), and any fault of the Kafka
workload's catalogue (``kmodel test --list-faults``); ``all`` is
``GROUP_CLUSTER_FAULTS``. ``--unclean`` lets ``__consumer_offsets`` elect an out-of-sync
leader too (commits can be lost).
``--bug no_generation_check`` turns the coordinator's generation check off (``spec/group``'s
bug of the same name).

What is checked (``impl.group.invariants``): each completed generation's assignment gives
every partition exactly one owner; no two members stable in the current generation own one
partition; no zombie's OffsetCommit is accepted. The history (``docs/history-format.md``:
send, subscribe, assign, poll, process, commit, fetch-offsets, the offsets monitor's
fetch-offsets about once a second (``--monitor-interval``), the final fetch-offsets),
the outcome (rebalances, records processed, commits by outcome) and the test's config go to
the store; the delivery verdict is ``kmodel verify --delivery``'s.

``impl.group.run.GroupRun`` (the coordinator without the cluster) stays for its tests.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import orjson

from impl.group.coordinator import GROUP_BUGS
from impl.sim.clock import NS_PER_MS
from jepsen_py.checker.delivery_engine import verify_delivery_path
from jepsen_py.group_cluster import (
    COORDINATOR_FAULTS,
    GROUP_CLUSTER_FAULTS,
    HARNESS_FAULTS,
    GroupClusterConfig,
    GroupClusterRun,
)
from jepsen_py.nemesis import CATALOGUE
from jepsen_py.runner.outcome import verdict_name
from jepsen_py.store import create_run

__all__ = ["GROUP_BUGS", "GroupTestError", "parse_group_faults", "run_group_test"]


class GroupTestError(ValueError):
    """A group test asked for something the group workload does not offer."""


def parse_group_faults(text: str) -> tuple[str, ...]:
    """``--nemesis`` for the group workload: ``all``, ``none``, group fault names or any
    fault of the catalogue; in the order given, each once."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    chosen: list[str] = []
    for item in items:
        names = GROUP_CLUSTER_FAULTS if item == "all" else () if item == "none" else (item,)
        for name in names:
            if (
                name not in COORDINATOR_FAULTS
                and name not in CATALOGUE
                and name not in HARNESS_FAULTS
            ):
                raise GroupTestError(
                    f"unknown group fault {name!r}; with --workload group the faults are: "
                    f"{', '.join(GROUP_CLUSTER_FAULTS)} (all), none, or any "
                    "fault of `kmodel test --list-faults`"
                )
            if name not in chosen:
                chosen.append(name)
    return tuple(chosen)


DELIVERY_OF_COMMIT = {
    "after-process": "at-least-once",
    "after-process-async": "at-least-once",
    "auto": "at-least-once",
    "before-process": "at-most-once",
}
"""The delivery guarantee each ``--commit`` mode promises, which the run's delivery check
holds it to (``kmodel verify --delivery``): committing after processing (with commitSync or
commitAsync, and auto commit, which commits on the next poll what the previous one
returned) re-delivers after a crash
but loses nothing; committing before processing loses what a crash interrupts but never
processes a record twice."""


def check_group_delivery(history: list[dict[str, Any]], delivery: str) -> dict[str, Any]:
    """``stored_delivery`` of a history not stored: it is written to a scratch file, as the
    engine reads histories from files."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "history.jsonl"
        path.write_bytes(_jsonl(history))
        return stored_delivery(path, delivery)


def stored_delivery(path: Path, delivery: str) -> dict[str, Any]:
    """The delivery check of the group run's history at ``path``
    (``jepsen_py.checker.delivery_engine``, the engine of ``kmodel verify --delivery``),
    summed over its keys: the verdict, the count of each anomaly, the violations and the
    lines that witness the first few."""
    result = verify_delivery_path(path, delivery)
    counts: dict[str, int] = {}
    violations: set[str] = set()
    witnesses: dict[str, list[list[int | None]]] = {}
    for key in result.keys:
        for name, n in key.counts.items():
            counts[name] = counts.get(name, 0) + n
        violations.update(key.violations)
        for name, found in key.anomalies.items():
            kept = witnesses.setdefault(name, [])
            kept.extend([[op.line for op in w] for w in found][: max(0, 3 - len(kept))])
    return {
        "mode": delivery,
        "verdict": verdict_name(result.verdict),
        "counts": dict(sorted(counts.items())),
        "violations": sorted(violations),
        "witness_lines": dict(sorted(witnesses.items())),
        "error": result.error,
        "rejected": len(result.rejected),
    }


def _jsonl(history: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(op) + b"\n" for op in history)


def _verdict(invariants_hold: bool, delivery: str) -> str:
    """The run's verdict: invalid when a group invariant broke or the delivery check found
    a violation; unknown when the delivery could not be judged; valid otherwise."""
    if not invariants_hold or delivery == "invalid":
        return "invalid"
    return "unknown" if delivery != "valid" else "valid"


def run_group_test(
    *,
    seed: int,
    faults: tuple[str, ...],
    time_limit_ns: int,
    interval_ns: int,
    partitions: int,
    brokers: int,
    consumers: int,
    bugs: tuple[str, ...],
    store_root: str | None,
    name: str,
    assignor: str = "range",
    commit: str = "after-process",
    auto_offset_reset: str = "earliest",
    unclean: bool = False,
    min_isr: int = 2,
    recovery_ns: int | None = None,
    monitor_interval_ns: int | None = None,
) -> dict[str, Any]:
    """Run one group test on the cluster; store it unless ``store_root`` is None; return
    the outcome."""
    unknown = sorted(set(bugs) - GROUP_BUGS)
    if unknown:
        raise GroupTestError(
            f"--bug {', '.join(unknown)} is not a group fence; with --workload group choose "
            f"from {', '.join(sorted(GROUP_BUGS))}"
        )
    defaults = GroupClusterConfig()
    try:
        config = GroupClusterConfig(
            brokers=brokers,
            consumers=consumers,
            partitions=partitions,
            min_isr=min_isr,
            unclean=unclean,
            commit=commit,
            auto_offset_reset=auto_offset_reset,
            assignor=assignor,
            duration_ns=time_limit_ns,
            recovery_ns=defaults.recovery_ns if recovery_ns is None else recovery_ns,
            fault_interval_ns=interval_ns,
            faults=faults,
            bugs=frozenset(bugs),
            monitor_interval_ns=(
                defaults.monitor_interval_ns if monitor_interval_ns is None else monitor_interval_ns
            ),
        )
    except ValueError as exc:
        raise GroupTestError(str(exc)) from exc
    run = GroupClusterRun(config, seed)
    outcome = run.run()
    history = run.history()
    stored = None
    if store_root is not None:
        stored = create_run(
            name,
            seed=seed,
            config={
                "workload": "group",
                "brokers": brokers,
                "consumers": consumers,
                "partitions": partitions,
                "nemesis": list(faults),
                "time_limit_ns": time_limit_ns,
                "recovery_ns": config.recovery_ns,
                "interval_ns": interval_ns,
                "bugs": sorted(bugs),
                "assignor": assignor,
                "commit": commit,
                "auto_offset_reset": auto_offset_reset,
                "unclean": unclean,
                "min_isr": min_isr,
                "monitor_interval_ns": config.monitor_interval_ns,
            },
            root=store_root,
        )
        stored.history_path.write_bytes(_jsonl(history))
    mode = DELIVERY_OF_COMMIT[commit]
    delivery = (
        check_group_delivery(history, mode)
        if stored is None
        else stored_delivery(stored.history_path, mode)
    )
    result: dict[str, Any] = {
        "workload": "group",
        "seed": seed,
        "group": "group",
        "offsets_partition": run.host.partition,
        "time_limit_ms": time_limit_ns // NS_PER_MS,
        "bugs": sorted(bugs),
        "assignor": assignor,
        "commit": commit,
        "auto_offset_reset": auto_offset_reset,
        "unclean": unclean,
        **outcome,
        "delivery": delivery,
        "ok": outcome["ok"] and delivery["verdict"] == "valid",
        "verdict": _verdict(outcome["ok"], delivery["verdict"]),
    }
    if stored is not None:
        stored.write_results(result)
        result["store"] = str(stored.path)
    return result
