"""``kmodel test --workload group``: consumers subscribe as one group and join and leave
during the run, under the group faults; the run is ``impl.group.run.GroupRun``.

Faults (``--nemesis``, comma-separated, or ``all``): ``pause-consumer`` (SIGSTOP a consumer
for up to three session timeouts: the zombie member), ``kill-consumer`` (it dies and comes
back as a new member), ``leave`` and ``join`` (a consumer closes, or subscribes again), and
``coordinator-failover`` (the leader of the group's ``__consumer_offsets`` partition moves).
``--bug no_generation_check`` turns the coordinator's generation check off (``spec/group``'s
bug of the same name).

What is checked (``impl.group.run``): each completed generation's assignment gives every
partition exactly one owner; no two members stable in the current generation own one
partition; no zombie's OffsetCommit is accepted. The history (``subscribe`` and ``assign``
ops, ``docs/history-format.md``), the outcome with rebalance counts and durations (logical
time), and the test's config go to the store.
"""

from __future__ import annotations

from typing import Any

import orjson

from impl.group.run import FAULTS, GROUP_BUGS, GroupRun, GroupRunConfig
from impl.sim.clock import NS_PER_MS
from jepsen_py.store import create_run

__all__ = ["GROUP_BUGS", "GroupTestError", "parse_group_faults", "run_group_test"]


class GroupTestError(ValueError):
    """A group test asked for something the group workload does not offer."""


def parse_group_faults(text: str) -> tuple[str, ...]:
    """``--nemesis`` for the group workload: ``all``, ``none`` or group fault names."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    chosen: set[str] = set()
    for item in items:
        if item == "all":
            chosen.update(FAULTS)
        elif item == "none":
            continue
        elif item in FAULTS:
            chosen.add(item)
        else:
            raise GroupTestError(
                f"unknown group fault {item!r}; with --workload group the faults are: "
                f"{', '.join(FAULTS)} (or all, none)"
            )
    return tuple(f for f in FAULTS if f in chosen)


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
) -> dict[str, Any]:
    """Run one group test; store it unless ``store_root`` is None; return the outcome."""
    unknown = sorted(set(bugs) - GROUP_BUGS)
    if unknown:
        raise GroupTestError(
            f"--bug {', '.join(unknown)} is not a group fence; with --workload group choose "
            f"from {', '.join(sorted(GROUP_BUGS))}"
        )
    config = GroupRunConfig(
        brokers=brokers,
        consumers=consumers,
        partitions=partitions,
        duration_ns=time_limit_ns,
        fault_interval_ns=interval_ns,
        faults=faults,
        bugs=frozenset(bugs),
        assignor=assignor,
    )
    run = GroupRun(config, seed)
    outcome = run.run()
    result: dict[str, Any] = {
        "workload": "group",
        "seed": seed,
        "group": config.group,
        "offsets_partition": run.offsets_partition,
        "time_limit_ms": time_limit_ns // NS_PER_MS,
        "bugs": sorted(bugs),
        "assignor": assignor,
        **outcome.to_json(),
    }
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
                "interval_ns": interval_ns,
                "bugs": sorted(bugs),
                "assignor": assignor,
            },
            root=store_root,
        )
        stored.history_path.write_bytes(b"".join(orjson.dumps(op) + b"\n" for op in run.history))
        stored.write_results(result)
        result["store"] = str(stored.path)
    return result
