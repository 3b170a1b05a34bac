"""The demo's consumer-group stage: one group on the simulated cluster under consumer and
coordinator faults (``kmodel test --workload group``), with the generation check on, then
off; and the delivery story: the same group committing after processing (at least once:
nothing lost, duplicates, each explained) and before processing (at most once: what a kill
interrupts is lost, nothing processed twice), judged by the delivery checker.

With every fence on, each generation's assignment gives every partition exactly one owner
and no zombie's OffsetCommit is accepted; with ``no_generation_check`` (the spec's bug of
the same name) a commit from a generation the group has left, delivered late, is accepted
(seed 2); with ``fetch_before_load`` a new coordinator answers an OffsetFetch before it
has read ``__consumer_offsets``, and the offsets monitor's read that falls in the load sees
"no committed offset" below what was acknowledged: a commit regression (seed 2). Each
run's history and outcome go to the store; the rows report the rebalances (count and
logical durations)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from jepsen_py.group_cluster import GROUP_CLUSTER_FAULTS, GroupClusterConfig
from jepsen_py.group_workload import run_group_test


@attrs.frozen
class GroupCase:
    name: str
    title: str
    seed: int
    bugs: tuple[str, ...]
    expect_ok: bool
    commit: str = "after-process"
    expect_loss: bool = False
    """The case shows records lost (committing before processing, with kills)."""


CASES = (
    GroupCase("group-fenced", "a consumer group under every group fault", 1, (), True),
    GroupCase(
        "group-before-process",
        "the same, committing before processing",
        2,
        (),
        True,
        commit="before-process",
        expect_loss=True,
    ),
    GroupCase(
        "group-no-generation-check",
        "the same without the generation check",
        2,
        ("no_generation_check",),
        False,
    ),
    GroupCase(
        "group-fetch-before-load",
        "the same, offsets read before the load",
        2,
        ("fetch_before_load",),
        False,
    ),
)


def group_rows(store: Path, cases: tuple[GroupCase, ...] = CASES) -> list[dict[str, Any]]:
    """Each case run and stored; ``as_expected`` says whether its verdict is the one its
    case expects."""
    defaults = GroupClusterConfig()
    rows = []
    for case in cases:
        result = run_group_test(
            seed=case.seed,
            faults=GROUP_CLUSTER_FAULTS,
            time_limit_ns=defaults.duration_ns,
            interval_ns=defaults.fault_interval_ns,
            partitions=defaults.partitions,
            brokers=defaults.brokers,
            consumers=defaults.consumers,
            bugs=case.bugs,
            store_root=str(store),
            name=case.name,
            commit=case.commit,
        )
        bug = "".join(f" --bug {b}" for b in case.bugs)
        if case.commit != "after-process":
            bug += f" --commit {case.commit}"
        lost = result["delivery"]["counts"].get("lost", 0)
        rows.append(
            {
                "name": case.name,
                "title": case.title,
                "as_expected": result["ok"] == case.expect_ok and (lost > 0) == case.expect_loss,
                "command": f"kmodel test --workload group --seed {case.seed}{bug}",
                **result,
            }
        )
    return rows
