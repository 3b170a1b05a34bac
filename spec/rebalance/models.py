"""Which actions each mechanism runs, and the ``Rebalance`` spec assembled from its parts.

Every mechanism runs the replication data plane and the clean election
(``spec.rebalance.core``), plus its own actions; ``all`` runs every mechanism in one state
space. The order of each list is the order in which the model checker tries the actions,
which decides which of several shortest counterexamples it reports: it is pinned by the
scenario files.
"""

from __future__ import annotations

from spec.framework import ActionDecl, Fair
from spec.rebalance.core import CRASHES, DATA_PLANE, ELECTION, FAILURES
from spec.rebalance.params import Params
from spec.rebalance.preferred import PREFERRED, PreferredLeader
from spec.rebalance.properties import RebalanceProperties
from spec.rebalance.reassignment import REASSIGNMENT, Reassignment
from spec.rebalance.rendering import RebalanceRendering
from spec.rebalance.shutdown import SHUTDOWN, ControlledShutdown

MECHANISM_ACTIONS: dict[str, tuple[str, ...]] = {
    "preferred": FAILURES + PREFERRED,
    "shutdown": SHUTDOWN,
    "reassignment": REASSIGNMENT,
    "elr": FAILURES + CRASHES,
}
"""Each mechanism's own actions, beyond the data plane and the election."""


def actions_of(p: Params) -> tuple[str, ...]:
    """The data plane, the election, then the mechanism's actions (each once, in the order
    of ``MECHANISM_ACTIONS`` for ``all``); crashes only with a crash budget."""
    names = list(DATA_PLANE + ELECTION)
    for mechanism, own in MECHANISM_ACTIONS.items():
        if p.runs(mechanism):
            names += [a for a in own if a not in names]
    if p.max_crashes and "crash" not in names:
        names += [a for a in CRASHES if a not in names]
    if not p.max_crashes:
        names = [a for a in names if a not in ("crash", "flush")]
    return tuple(names)


class Rebalance(
    RebalanceRendering,
    RebalanceProperties,
    Reassignment,
    ControlledShutdown,
    PreferredLeader,
):
    """Leadership and replica movement for one partition (see ``spec.rebalance``)."""

    def __init__(self, params: Params | None = None) -> None:
        super().__init__(params)
        declared = {decl.name: decl for decl in self._actions}
        self._enabled = tuple(declared[name] for name in actions_of(self.p))

    def enabled_actions(self) -> tuple[ActionDecl, ...]:
        return self._enabled

    def fairness(self) -> tuple[Fair, ...]:
        """What keeps happening: brokers act on LeaderAndIsr requests and keep fetching
        (``ReplicaFetcherThread``), a leader adds a caught-up follower to the ISR, a
        leaderless partition gets a leader (weak fairness, per argument); and the
        controller, which handles every ISR change event, completes a reassignment whose
        target is in sync whenever that happens again and again (strong fairness). Failure
        suspicion, crashes, shutdowns, preferred elections and new reassignments are the
        environment's and the operator's choices: not fair."""
        weak = ("become_leader", "become_follower", "fetch", "expand_isr_caught_up", "elect_leader")
        names = {decl.name for decl in self._enabled}
        fair = [Fair(name) for name in weak if name in names]
        if "complete_reassignment" in names:
            fair.append(Fair("complete_reassignment", strong=True, per_argument=False))
        return tuple(fair)
