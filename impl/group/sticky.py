"""Kafka's sticky assignors: ``StickyAssignor`` (eager) and ``CooperativeStickyAssignor``
(KIP-429), as pure functions of the members' subscriptions and what each reported owning.

``sticky_assign`` is ``AbstractStickyAssignor``'s aim: a balanced assignment (counts differ
by at most one among the members subscribed to the same topics) that keeps as many of the
previous assignment's partitions where they were as balance allows. Each member keeps, in
member-id order, the partitions it owned that it still subscribes to and nobody kept
before it, up to its quota (``ceil(n / m)`` for the first ``n % m`` members that reach it,
``floor(n / m)`` for the others); the partitions left are dealt one by one, in
(topic, partition) order, to the subscribed member with the fewest (ties: member id).

``cooperative_assign`` is what the cooperative protocol's leader sends (KIP-429's
``CooperativeStickyAssignor.adjustAssignment``): the sticky assignment minus every
partition that another member still owns -- it moves in two rebalances: its owner revokes
it when it sees it missing, rejoins, and the next rebalance hands it over.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

__all__ = ["cooperative_assign", "sticky_assign"]

TP = tuple[str, int]


def sticky_assign(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Collection[str]],
    owned: Mapping[str, Collection[TP]],
) -> dict[str, list[TP]]:
    members = sorted(subscriptions)
    result: dict[str, list[TP]] = {m: [] for m in members}
    if not members:
        return result
    everything = sorted(
        (t, p)
        for t in sorted({t for m in members for t in subscriptions[m]})
        if t in partitions_per_topic
        for p in range(partitions_per_topic[t])
    )
    n, m = len(everything), len(members)
    floor, extra = divmod(n, m)
    taken: set[TP] = set()
    at_ceiling = 0
    valid = set(everything)
    for member in members:
        keep = [
            tp
            for tp in sorted(set(owned.get(member, ())))
            if tp in valid and tp not in taken and tp[0] in subscriptions[member]
        ]
        quota = floor + 1 if at_ceiling < extra else floor
        kept = keep[:quota]
        if len(kept) == floor + 1:
            at_ceiling += 1
        result[member] = kept
        taken.update(kept)
    for tp in everything:
        if tp in taken:
            continue
        candidates = [x for x in members if tp[0] in subscriptions[x]]
        if not candidates:
            continue
        best = min(candidates, key=lambda x: (len(result[x]), x))
        result[best].append(tp)
        taken.add(tp)
    return {x: sorted(ps) for x, ps in result.items()}


def cooperative_assign(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Collection[str]],
    owned: Mapping[str, Collection[TP]],
) -> dict[str, list[TP]]:
    target = sticky_assign(partitions_per_topic, subscriptions, owned)
    owner = {tp: x for x in sorted(owned) for tp in owned[x] if x in subscriptions}
    return {x: [tp for tp in ps if owner.get(tp, x) == x] for x, ps in sorted(target.items())}
