"""The consumer-group spec: membership, generations and rebalance (``kmodel check group``).

In plain words. Consumers that share a ``group.id`` split a topic's partitions between
them: each partition is read by one member of the group at a time. One broker, the group's
*coordinator*, keeps the membership. When a member joins or leaves, or stops heartbeating
for ``session.timeout.ms`` (or stops polling for ``max.poll.interval.ms``), the group
*rebalances*: the partitions are assigned anew and every rebalance starts a new
*generation* (classic protocol) or group epoch (KIP-848). A member that was expired without
knowing it, after a long GC pause for example, is a *zombie*: it still believes it owns its
partitions. Each request carries the member's id and generation (or member epoch), and the
coordinator refuses those from a past generation, so that two members never own one
partition at once in the current generation and a zombie cannot commit offsets. The classic
protocol rebalances in two round trips (JoinGroup, SyncGroup), eagerly (every member gives
up every partition) or cooperatively (KIP-429: only the partitions that move); KIP-848's
protocol (``group.protocol=consumer``) does it with heartbeats and a server-side
assignment. The two modules' docstrings below tell each in full.

- ``params``: bounds, the ``--protocol`` choices and the ``--bug`` choices;
- ``lifecycle``: the group's and a member's life cycles, as tables;
- ``assignors``: the assignment a leader (or, KIP-848, the coordinator) computes;
- ``classic``: the classic JoinGroup/SyncGroup protocol, eager or KIP-429 cooperative;
- ``consumer``: the KIP-848 protocol (server-side assignment, member epochs).

``build(params)`` returns the spec for the chosen protocol.
"""

from __future__ import annotations

from spec.framework import Spec
from spec.group.classic import ClassicGroup
from spec.group.consumer import ConsumerGroup
from spec.group.params import BUG_SETTINGS, BUGS, NETWORKS, PROTOCOL_BUGS, PROTOCOLS, Params

__all__ = [
    "BUGS",
    "BUG_SETTINGS",
    "NETWORKS",
    "PROTOCOLS",
    "PROTOCOL_BUGS",
    "ClassicGroup",
    "ConsumerGroup",
    "Params",
    "build",
]


def build(params: Params | None = None) -> Spec:
    """The spec of ``params.protocol``."""
    params = params or Params()
    if params.protocol == "consumer":
        return ConsumerGroup(params)
    return ClassicGroup(params)
