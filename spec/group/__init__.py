"""The consumer-group spec: membership, generations and rebalance (``kmodel check group``).

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
