"""Throughput of the simulated cluster (``impl.cluster``, asynchronous mode) and of the
refinement machine (``impl/refinement_machine.py``).

The cluster: 3 brokers, one partition (replication factor 3, acks=all,
min.insync.replicas=2, KIP-320), 10 producers and 10 consumers issuing ``--rate`` client
ops per simulated second between them (half sends, half polls, on clients drawn from the
workload stream, exponential inter-arrival times), under random faults for ``--minutes``
of logical time: a broker crash (torn unflushed tail) and restart, a pause, a partition
isolating a broker, the controller crashing, each healed after a few seconds, one at a time.
The last 10 s heal everything.

Then the refinement machine runs ``--examples`` Hypothesis test cases of the KIP-320
configuration and counts its steps (rules executed).

Prints ONE JSON line: ``client_ops_per_wall_s``, ``sim_s_per_wall_s``,
``hypothesis_steps_per_s`` (per wall second; the ``*_cpu_s`` twins divide by this process's
CPU time instead, which a busy shared machine does not distort), and the run's figures (ops
by outcome, faults, messages, digest: the same seed gives the same digest on every
machine).

    .venv/bin/python benchmarks/sim_throughput.py [--minutes 10] [--rate 100] [--seed 1]
"""

from __future__ import annotations

import argparse
import collections
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from impl.cluster import Cluster, ClusterConfig
from impl.controller import broker_node
from impl.refinement_machine import STATS, make_machine, refinement_config
from impl.sim.clock import ms, seconds


def run_cluster(
    minutes: float, rate: float, seed: int, keep: list[Any] | None = None
) -> dict[str, Any]:
    config = ClusterConfig(
        brokers=3,
        producers=10,
        consumers=10,
        truncation="kip320",
        acks="all",
        min_insync_replicas=2,
    )
    cluster = Cluster(config, seed)
    if keep is not None:
        keep.append(cluster)
    end = seconds(minutes * 60)
    heal_at = max(0, end - seconds(10))
    workload = cluster.workload_rng
    faults = cluster.fault_rng
    brokers = list(cluster.broker_names.values())
    counts: collections.Counter[str] = collections.Counter()
    value = 0
    active: list[str] = []

    def next_op_at() -> int:
        return cluster.clock.now + max(1, round(workload.expovariate(rate) * 1e9))

    def on_timer(payload: tuple[str, ...]) -> None:
        nonlocal value
        kind = payload[0]
        now = cluster.clock.now
        if kind == "op":
            if workload.random() < 0.5:
                name = workload.choice(cluster.producer_names)
                cluster.client_send(name, None, f"{value}".encode())
                value += 1
                counts["send"] += 1
            else:
                cluster.client_poll(workload.choice(cluster.consumer_names))
                counts["poll"] += 1
            cluster.schedule(next_op_at(), ("op",))
        elif kind == "fault":
            if now < heal_at and not active:
                fault = faults.choice(["crash", "pause", "isolate", "controller"])
                target = faults.choice(brokers)
                duration = seconds(faults.uniform(2, 8))
                if fault == "crash":
                    cluster.crash(target, rng=cluster.disk_rng)
                elif fault == "pause":
                    cluster.pause(target)
                elif fault == "isolate":
                    cluster.network.isolate(target)
                else:
                    # The broker holding /controller crashes: failover by election.
                    holder = cluster.store.controller
                    target = broker_node(holder) if holder > 0 else target
                    if cluster.nodes.state(target).alive:
                        cluster.crash(target, rng=cluster.disk_rng)
                active.append(fault)
                counts[f"fault_{fault}"] += 1
                cluster.schedule(now + duration, ("heal", fault, target))
            cluster.schedule(now + seconds(faults.uniform(5, 15)), ("fault",))
        elif kind == "heal":
            _, fault, target = payload
            if fault in ("crash", "controller"):
                cluster.restart(target)
            elif fault == "pause":
                cluster.resume(target)
            else:
                cluster.heal()
            active.remove(fault)

    cluster.schedule(ms(100), ("op",))
    cluster.schedule(seconds(5), ("fault",))
    started, cpu_started = time.perf_counter(), time.process_time()
    cluster.run_until(end, on_timer)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    ops = counts["send"] + counts["poll"]
    outcomes: collections.Counter[str] = collections.Counter()
    for op in cluster.history():
        if op["type"] != "invoke":
            outcomes[f"{op['f']}_{op['type']}"] += 1
    stats = cluster.network.stats()
    return {
        "client_ops_per_wall_s": round(ops / wall, 1),
        "sim_s_per_wall_s": round((end / 1e9) / wall, 1),
        "sim_s_per_cpu_s": round((end / 1e9) / cpu, 1),
        "sim_seconds": end / 1e9,
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "client_ops": ops,
        "outcomes": dict(sorted(outcomes.items())),
        "faults": {k: v for k, v in sorted(counts.items()) if k.startswith("fault_")},
        "messages_delivered": stats.delivered,
        "digest": cluster.digest(),
    }


def run_machine(examples: int) -> dict[str, Any]:
    machine = make_machine(
        refinement_config(),
        expect_violated=frozenset(
            {"StrongIsr", "WeakIsr", "NoAckedAllWriteLost", "NoAckedWriteLost"}
        ),
    )
    before = STATS.copy()
    started, cpu_started = time.perf_counter(), time.process_time()
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=50,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        ),
    )
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    counted = STATS - before
    return {
        "hypothesis_steps_per_s": round(counted["steps"] / wall, 1),
        "hypothesis_steps_per_cpu_s": round(counted["steps"] / cpu, 1),
        "hypothesis_events_checked_per_s": round(counted["events"] / wall, 1),
        "hypothesis_examples": examples,
        "hypothesis_wall_seconds": round(wall, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=100.0, help="client ops per sim second")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--examples", type=int, default=200)
    args = parser.parse_args()
    result: dict[str, Any] = {"benchmark": "sim_throughput", "seed": args.seed}
    result.update(run_cluster(args.minutes, args.rate, args.seed))
    result.update(run_machine(args.examples))
    result["python"] = platform.python_version()
    print(json.dumps(result, sort_keys=False))


if __name__ == "__main__":
    main()
