"""The consumer-group spec: membership, generations and rebalance (``kmodel check group``).

- ``params``: bounds, the ``--protocol`` choices and the ``--bug`` choices;
- ``lifecycle``: the group's and a member's life cycles, as tables;
- ``assignors``: the assignment a leader (or, KIP-848, the coordinator) computes;
- ``classic``: the classic JoinGroup/SyncGroup protocol, eager or KIP-429 cooperative;

KIP-848's protocol (``group.protocol=consumer``) is not modelled yet.

``build(params)`` returns the spec for the chosen protocol.
"""

from __future__ import annotations

from spec.framework import Spec
from spec.group.classic import ClassicGroup
from spec.group.params import BUGS, NETWORKS, PROTOCOL_BUGS, PROTOCOLS, Params

__all__ = ["BUGS", "NETWORKS", "PROTOCOLS", "PROTOCOL_BUGS", "ClassicGroup", "Params", "build"]


def build(params: Params | None = None) -> Spec:
    """The spec of ``params.protocol``."""
    params = params or Params()
    return ClassicGroup(params)
