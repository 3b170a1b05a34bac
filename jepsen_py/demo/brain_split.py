"""The demo's brain-split stage: a controller paused by a long GC wakes up a zombie
(``impl.world``, ``impl.controller``), once with both fences on and once with each off.

The story, on a 3-broker simulated cluster: broker b3 dies; b1, the controller, writes the
failover to the store and is paused before its send threads deliver the LeaderAndIsr; its
ZooKeeper session expires and b2 wins the election with controller epoch 2; b1 wakes up,
still believing it is the controller, and sends its queued requests with epoch 1. Two
controllers act at once: the brain split (脑裂).

- **both fences on**: the brokers, which have applied epoch 2, reject the zombie's requests
  (STALE_CONTROLLER_EPOCH), and its next write is refused by the store (BADVERSION on
  ``/controller_epoch``, KAFKA-6082): it resigns. Nothing it did took effect.
- ``--bug accept_stale_controller_epoch``: the brokers apply the zombie's requests: b2
  goes back to controller epoch 1, taking orders from a controller that no longer is one.
- ``--bug unconditional_write``: the zombie's writes land in the store over its
  successor's (here cut off from the store instead of paused, so that it writes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from impl.cluster import Cluster, ClusterConfig
from impl.coordination import STORE
from impl.sim.clock import ms

__all__ = ["BrainSplitRun", "brain_split_rows", "run_brain_split"]

SECOND = ms(1000)


@attrs.frozen
class BrainSplitRun:
    title: str
    bugs: frozenset[str]
    zombie: str
    """``paused``: paused right after a write; ``cut``: cut off from the store for 10 s."""
    expect: str
    """What must be seen: ``rejected``, ``applied`` or ``zombie-write``."""


RUNS = (
    BrainSplitRun("both fences on", frozenset(), "paused", "rejected"),
    BrainSplitRun(
        "--bug accept_stale_controller_epoch",
        frozenset({"accept_stale_controller_epoch"}),
        "paused",
        "applied",
    ),
    BrainSplitRun(
        "--bug unconditional_write", frozenset({"unconditional_write"}), "cut", "zombie-write"
    ),
)


def run_brain_split(run: BrainSplitRun, seed: int = 3) -> dict[str, Any]:
    """Drive the story of the module docstring; returns the figures and whether they are
    what ``run.expect`` says."""
    cluster = Cluster(ClusterConfig(bugs=run.bugs), seed)
    cluster.run_until(2 * SECOND)
    first = cluster.store.controller
    if run.zombie == "paused":
        cluster.crash("b3")
        epoch = cluster.store.partitions[("t", 0)].leader_epoch
        for _ in range(4000):
            cluster.run_until(cluster.clock.now + ms(5))
            if cluster.store.partitions[("t", 0)].leader_epoch != epoch:
                break
        cluster.pause(f"b{first}")
        cluster.run_until(cluster.clock.now + 10 * SECOND)
        successor = cluster.store.controller
        cluster.resume(f"b{first}")
    else:
        node = f"b{first}"
        cluster.partition([(node, STORE), (STORE, node)])
        cluster.run_until(cluster.clock.now + 10 * SECOND)
        successor = cluster.store.controller
        cluster.heal()
    cluster.run_until(cluster.clock.now + 4 * SECOND)
    figures = cluster.controller_figures()
    seen = {
        "rejected": figures["stale_controller_rejected"] > 0
        and figures["stale_controller_applied"] == 0
        and figures["zombie_writes"] == 0,
        "applied": figures["stale_controller_applied"] > 0,
        "zombie-write": figures["zombie_writes"] > 0,
    }
    return {
        "title": run.title,
        "bugs": sorted(run.bugs),
        "zombie": f"b{first} ({run.zombie})",
        "successor": f"b{successor}",
        "controller_epoch": cluster.store.controller_epoch,
        **figures,
        "expected": run.expect,
        "as_expected": figures["brain_splits"] >= 1 and seen[run.expect],
    }


def brain_split_rows(say: Callable[[str], None]) -> list[dict[str, Any]]:
    rows = []
    for run in RUNS:
        say(f"  running the zombie controller story, {run.title} ...")
        rows.append(run_brain_split(run))
    return rows
