"""The two models of replication, each stated as the list of actions it runs, and the
``Replication`` spec assembled from its parts.

``published-2018`` is the model Kafka's engineers published in 2018 and checked with TLC;
``extended`` adds what a Kafka user configures and suffers. Both share the core (the
controller and leadership, ``spec.replication.core``); the protocol variant's fencing
choice picks the form of each replication step (``spec.replication.fencing``). The order of
each list is the order in which the model checker tries the actions, which decides which of
several shortest counterexamples it reports: it is pinned by the scenario files.
"""

from __future__ import annotations

from spec.framework import ActionDecl, Fair
from spec.replication.core import CONTROLLER, LEADERSHIP
from spec.replication.extended import ENVIRONMENT, FAILOVER, UNCLEAN, ExtendedModel
from spec.replication.fencing import EpochFencing, step_form
from spec.replication.leader_view import LEADER_VIEW_STEPS, LeaderView
from spec.replication.params import Params
from spec.replication.properties import ReplicationProperties
from spec.replication.published import PUBLISHED_STEPS, PublishedSteps
from spec.replication.rendering import TraceRendering
from spec.replication.symmetry import ReplicaSymmetry


def replication_steps(p: Params) -> tuple[str, ...]:
    """How records and the ISR move: the published model's five steps, which read the other
    replicas' state directly, or, with the leader view, becoming a follower and the leader's
    three handlers; each in its KIP-320 form when the variant fences."""
    if p.views:
        return (step_form("become_follower", p.fenced), *LEADER_VIEW_STEPS)
    return tuple(step_form(name, p.fenced) for name in PUBLISHED_STEPS)


def published_2018(p: Params) -> tuple[str, ...]:
    """The published model, as TLC checked it: the controller elects and shrinks the ISR,
    a replica becomes leader and appends, and the five published steps move the data."""
    return CONTROLLER + LEADERSHIP + replication_steps(p)


def extended_model(p: Params) -> tuple[str, ...]:
    """The extended model: the controller also fails a leader over in one write (and, with
    ``unclean``, elects outside the ISR); producers' ``acks`` are tracked (in
    ``leader_write``); the leader learns its followers' LEOs from their fetches (unless
    ``leader_view`` is off); with a crash budget, brokers crash, restart and flush."""
    controller = CONTROLLER + FAILOVER + (UNCLEAN if p.unclean else ())
    environment = ENVIRONMENT if p.max_crashes else ()
    return controller + LEADERSHIP + replication_steps(p) + environment


class Replication(
    TraceRendering,
    ReplicaSymmetry,
    ReplicationProperties,
    ExtendedModel,
    LeaderView,
    EpochFencing,
    PublishedSteps,
):
    """The replication protocol of one partition (see ``spec.replication``): every action
    of both models; ``Params.model`` chooses which run."""

    def __init__(self, params: Params | None = None) -> None:
        super().__init__(params)
        names = extended_model(self.p) if self.extended else published_2018(self.p)
        declared = {decl.name: decl for decl in self._actions}
        self._enabled = tuple(declared[name] for name in names)

    def enabled_actions(self) -> tuple[ActionDecl, ...]:
        return self._enabled

    def fairness(self) -> tuple[Fair, ...]:
        """What the brokers keep doing: each replica acts on the LeaderAndIsr requests it
        receives, each follower keeps fetching (``ReplicaFetcherThread``), and each leader
        keeps advancing its HW as its followers catch up, or its handlers keep serving
        fetches in the leader-view form. Weak fairness per replica (per request), the
        ``WF_vars`` of a TLA+ spec. The controller's choices (elections, ISR shrinks) and
        the environment's faults are not fair: they may or may not happen."""
        fair = FAIR_STEPS - FETCHES if "follower_stops_fetching" in self.bugs else FAIR_STEPS
        return tuple(
            Fair(decl.name) for decl in self._enabled if decl.name.removesuffix("_fenced") in fair
        )


FETCHES = frozenset({"follower_fetch", "fetch"})
"""A follower's fetch, in the published model's form and the leader view's."""

FAIR_STEPS = frozenset({"become_leader", "become_follower", "leader_advance_hw"}) | FETCHES
"""The replica steps that happen whenever they can (the others are the controller's and the
environment's choices)."""
