"""The demo's fault-injection stage: ``kmodel test`` runs on the simulated cluster, each
with what it is expected to show.

- **Kafka today** (acks=all, min.insync.replicas=2, clean election, KIP-320 truncation)
  under every fault of the catalogue but whole-cluster loss of unflushed data: no
  acknowledged write may be lost and no offset may hold two values.
- **Jepsen 2013, unclean**: the partition pattern of Jepsen's 2013 Kafka analysis with
  ``unclean.leader.election.enable=true``: the writes the isolated leader acknowledged
  alone are lost.
- **Jepsen 2013, clean**: the same faults with clean election: nothing is lost (the
  partition waits for an ISR member instead).
- **KIP-966's last replica standing**: Kafka today, whose ISR shrank to the leader, which
  then loses power before the kernel wrote its log back: the writes are lost, and the run
  explains it as ``last-replica-standing`` (what Eligible Leader Replicas, Kafka 4.0, fix).
- **The same run with KIP-966's ELR on** (``kmodel test --elr``), beside it: nothing is
  lost (b2 and b3, in the ELR, are elected instead of the broker that lost power).

A run that must lose writes must also explain them by the expected mechanism
(``jepsen_py.explain``).

Each run writes its store directory (``test.json``, ``history.jsonl``, ``results.json``,
``timeline.html``, ``latency.png``, ``rate.png``) under the demo's ``store/``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from jepsen_py.generator import SECOND
from jepsen_py.runner.config import TestConfig
from jepsen_py.runner.outcome import RunOutcome
from jepsen_py.runner.run import run_test
from jepsen_py.scenarios import KAFKA_TODAY, LAST_REPLICA_STANDING, jepsen_2013
from jepsen_py.store import HISTORY_FILE, TIMELINE_FILE


@attrs.frozen
class DemoRun:
    """A run of the demo: its configuration and seed, and what it must show."""

    title: str
    config: TestConfig
    seed: int
    expect_loss: bool
    """True: the run must lose acknowledged writes (a known bug); False: it must not lose
    any, nor show an offset with two values."""
    mechanism: str | None = None
    """With ``expect_loss``: the mechanism that must explain every loss."""


def demo_runs(time_limit_s: int, seed: int) -> list[DemoRun]:
    """The demo's runs; ``time_limit_s`` is Kafka today's main phase in logical seconds."""
    today = attrs.evolve(KAFKA_TODAY, name="kafka-today", time_limit_ns=time_limit_s * SECOND)
    return [
        DemoRun("Kafka today, faults from the whole catalogue", today, seed, expect_loss=False),
        DemoRun(
            "Jepsen 2013 partition, unclean election",
            jepsen_2013(True),
            1,
            True,
            "unclean-leader-election",
        ),
        DemoRun("Jepsen 2013 partition, clean election", jepsen_2013(False), 1, False),
        DemoRun(
            "KIP-966 last replica standing, Kafka today",
            LAST_REPLICA_STANDING,
            1,
            True,
            "last-replica-standing",
        ),
        DemoRun(
            "KIP-966 last replica standing, with Eligible Leader Replicas (Kafka 4.0+)",
            attrs.evolve(LAST_REPLICA_STANDING, name="last-replica-standing-elr", elr=True),
            1,
            False,
        ),
    ]


def outcome_row(run: DemoRun, outcome: RunOutcome) -> dict[str, Any]:
    """The demo's table row for ``run``: what was lost, by which mechanism, and whether
    that is what the run expects."""
    check = outcome.check
    lost, inconsistent = check.lost_acknowledged_writes, check.inconsistent_offsets
    complete = check.final_reads.complete
    mechanisms = check.loss_mechanisms
    if run.expect_loss:
        as_expected = lost > 0 and mechanisms == [run.mechanism]
        expected = f"acknowledged writes lost, explained as {run.mechanism}"
    else:
        # With the idempotent producer (KIP-98, on by default with acks=all) a retried
        # send must not be written twice either.
        idempotent = run.config.idempotence is not False and run.config.acks == "all"
        duplicated = idempotent and "duplicate" in check.violations
        as_expected = lost == 0 and inconsistent == 0 and complete and not duplicated
        expected = "no acknowledged write lost, no offset with two values"
        if idempotent:
            expected += ", no write duplicated"
    assert outcome.run_dir is not None
    return {
        "name": run.config.name,
        "title": run.title,
        "seed": run.seed,
        "expected": expected,
        "as_expected": as_expected,
        "verdict": outcome.verdict_name,
        "violations": list(check.violations),
        "anomalies": check.anomaly_summary,
        "lost_acknowledged_writes": lost,
        "loss_mechanisms": mechanisms,
        "inconsistent_offsets": inconsistent,
        "final_reads_complete": complete,
        "ops": len(outcome.history),
        "acknowledged_sends": check.acknowledged_sends,
        "faults": dict(outcome.faults),
        "logical_seconds": round(outcome.figures.logical_end_ns / SECOND, 1),
        "wall_seconds": outcome.seconds.wall,
        "store": str(outcome.run_dir),
        "history": str(outcome.run_dir / HISTORY_FILE),
        "timeline": str(outcome.run_dir / TIMELINE_FILE),
        "command": outcome.command,
    }


def fault_rows(
    store: Path,
    *,
    time_limit_s: int,
    seed: int,
    say: Callable[[str], None],
) -> list[dict[str, Any]]:
    """Run every demo run into ``store`` and return one row each (see `outcome_row`)."""
    rows = []
    for run in demo_runs(time_limit_s, seed):
        say(f"  running {run.title} (seed {run.seed}) ...")
        outcome = run_test(run.config, run.seed, store_root=store)
        rows.append(outcome_row(run, outcome))
    return rows
