"""Deliberately broken variants of the encoded protocol, so every obligation is seen failing.

The spec's own variants (pre-KIP-101 truncation, KIP-101, KIP-279) and bug flags
(``Params.bugs``) already break most invariants. For those no spec variant breaks, each
class below makes one plausible mistake in one action of the encoding. A proof run with a
mutant (``prove(..., encoding=Mutant)``) checks its CTIs against the mutant's own Python
reading (there is no spec to replay them on). ``FAILS_UNDER`` maps every invariant (and the
transition property) to a variant and the action whose obligation fails there; the tests
check each of them yields a concretely checked counterexample.
"""

from __future__ import annotations

from typing import Any

import attrs

from spec.proofs.encoding import Encoding, SymState
from spec.replication import Params


class ReuseRecordId(Encoding):
    """A leader stamps its record with the next id but does not consume it."""

    def a_leader_write(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        guard, post = super().a_leader_write(st, a)
        return guard, attrs.evolve(post, next_id=st.next_id)


class WriteBeyondLogSize(Encoding):
    """A leader appends past the end of its log's capacity (no LOG_SIZE check)."""

    def a_leader_write(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        saved = self.log_size
        self.log_size = self.rep(st, a["r"]).leo + 1
        try:
            return super().a_leader_write(st, a)
        finally:
            self.log_size = saved


class AnyReplicaLeads(Encoding):
    """A replica takes leadership from a request that names another replica."""

    def a_become_leader(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        q, leader = a["q"], a["_leader"]
        rep = self.rep(st, leader)
        _, post = super().a_become_leader(st, a)
        guard = self.ops.And(self.ops.select(st.req_in, q), self.accepts(rep, q))
        return guard, post


class StaleEpochWrite(Encoding):
    """A leader stamps its records with the epoch before its own."""

    def a_leader_write(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        r = a["r"]
        rep = self.rep(st, r)
        guard, post = super().a_leader_write(st, a)
        wrong = self.append(rep, rep.epoch - 1, st.next_id)
        return guard, self.with_rep(post, r, attrs.evolve(self.rep(post, r), log_ep=wrong.log_ep))


class ReuseEpochCounter(Encoding):
    """The controller sends a new request without consuming the epoch it used."""

    def controller_update(self, st: SymState, leader: Any, isr: tuple[Any, ...]) -> SymState:
        post = super().controller_update(st, leader, isr)
        return attrs.evolve(post, next_epoch=st.next_epoch)


class QuorumWithoutRequest(Encoding):
    """The controller changes the quorum state but sends no LeaderAndIsr."""

    def controller_update(self, st: SymState, leader: Any, isr: tuple[Any, ...]) -> SymState:
        post = super().controller_update(st, leader, isr)
        return attrs.evolve(post, req_in=st.req_in, req_leader=st.req_leader, req_isr=st.req_isr)


class ElectWithoutLeaderInIsr(Encoding):
    """An election sends the new leader with an ISR that leaves it out."""

    def a_controller_elect(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        guard, _ = super().a_controller_elect(st, a)
        isr = self.isr_without(st.q_isr, a["n"])
        return guard, self.controller_update(st, self.ops.lit(a["n"]), isr)


class ControllerRestoresIsr(Encoding):
    """The controller, handling a failure, resets the ISR to every replica."""

    def a_controller_shrink_isr(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        guard, post = super().a_controller_shrink_isr(st, a)
        everyone = tuple(self.ops.lit(True) for _ in self.ids)
        return guard, self.controller_update(st, post.q_leader, everyone)


class LeaderKeepsOldIsr(Encoding):
    """A new leader keeps the ISR it believed in before, not the request's."""

    def a_become_leader(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        guard, post = super().a_become_leader(st, a)
        leader = a["_leader"]
        old = self.rep(st, leader).isr
        return guard, self.with_rep(post, leader, attrs.evolve(self.rep(post, leader), isr=old))


class ExpandWithoutFollowing(Encoding):
    """The leader adds a replica to the ISR without checking it fetches in its epoch."""

    def following(self, st: SymState, leader: int, f: int) -> Any:
        return (
            self.ops.lit(True)
            if getattr(self, "_expanding", False)
            else super().following(st, leader, f)
        )

    def a_leader_expand_isr(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        self._expanding = True
        try:
            return super().a_leader_expand_isr(st, a)
        finally:
            self._expanding = False


class ShrinkOutsideTrueLeader(Encoding):
    """A stale leader (not the quorum's, or in an old epoch) may shrink the quorum ISR."""

    def true_leader(self, st: SymState, r: int) -> Any:
        return self.presumes(st, r)


class FetchFromStaleEpoch(Encoding):
    """A follower fetches from its leader whatever their epochs (no KIP-320 fencing)."""

    def a_follower_fetch(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        f, leader = a["f"], a["_leader"]
        if f == leader:
            return self.ops.lit(False), st
        ok, post = self.replicate(st, leader, f)
        return self.ops.And(self.rep(st, f).leader == leader, ok), post


class FollowerHwIsLeo(Encoding):
    """A follower sets its HW to its own LEO after a fetch, not to the leader's HW."""

    def replicate(self, st: SymState, leader: int, f: int) -> tuple[Any, SymState]:
        guard, post = super().replicate(st, leader, f)
        rep = self.rep(post, f)
        return guard, self.with_rep(post, f, attrs.evolve(rep, hw=rep.leo))


class AdvanceWithoutIsr(Encoding):
    """The leader advances its HW when it alone holds the record."""

    def a_leader_advance_hw(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        leader = a["leader"]
        lrep = self.rep(st, leader)
        guard = self.ops.And(lrep.leader == leader, lrep.leo > lrep.hw)
        return guard, self.advance_hw(st, leader)


class FollowerSkipsTruncation(Encoding):
    """A follower of a new leader keeps its whole log (KAFKA-7164's skipped truncation)."""

    def truncation_offset(self, st: SymState, r: int, leader: int) -> Any:
        return self.rep(st, r).leo


class FollowerTakesNoEpoch(Encoding):
    """A replica becoming follower keeps its old epoch."""

    def become_follower_effect(
        self, st: SymState, q: Any, r: int, leader: int
    ) -> tuple[Any, SymState]:
        guard, post = super().become_follower_effect(st, q, r, leader)
        old = self.rep(st, r).epoch
        return guard, self.with_rep(post, r, attrs.evolve(self.rep(post, r), epoch=old))


class FollowerOfAnyReplica(Encoding):
    """A replica becomes follower of a leader that has not taken the request's epoch yet."""

    def a_become_follower(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        q, r, leader = a["q"], a["r"], a["_leader"]
        if r == leader:
            return self.ops.lit(False), st
        ops = self.ops
        guards = [
            ops.select(st.req_in, q),
            ops.select(st.req_leader, q) == leader,
            self.accepts(self.rep(st, r), q),
        ]
        ok, post = self.become_follower_effect(st, q, r, leader)
        return ops.And(*guards, ok), post


class PendingSurvivesStepDown(Encoding):
    """A replica that stops leading keeps its purgatory (acks=all writes stay pending)."""

    def drop_pending(self, st: SymState, r: int) -> Any:
        return st.pend_in


class PendingReusesId(Encoding):
    """A pending acks=all write is registered under the previous record id."""

    def a_leader_write(self, st: SymState, a: dict[str, Any]) -> tuple[Any, SymState]:
        guard, post = super().a_leader_write(st, a)
        ops = self.ops
        rid = st.next_id - 1
        return guard, attrs.evolve(
            post,
            pend_in=ops.store(st.pend_in, rid, ops.lit(True)),
            pend_leader=ops.store(st.pend_leader, rid, ops.lit(a["r"])),
            pend_offset=ops.store(st.pend_offset, rid, self.rep(st, a["r"]).leo),
        )


class AckAnyPending(Encoding):
    """An HW advance acknowledges every pending write of the leader, even above the HW."""

    def advance_hw(self, st: SymState, leader: int) -> SymState:
        post = super().advance_hw(st, leader)
        ops = self.ops

        def mine(i: Any) -> Any:
            return ops.And(ops.select(st.pend_in, i), ops.select(st.pend_leader, i) == leader)

        sources = (st.pend_in, st.pend_leader, st.pend_offset, st.acked_in, st.acked_offset)
        return attrs.evolve(
            post,
            pend_in=ops.lam(
                lambda i: ops.And(ops.select(st.pend_in, i), ops.Not(mine(i))), *sources
            ),
            acked_in=ops.lam(lambda i: ops.Or(ops.select(st.acked_in, i), mine(i)), *sources),
            acked_offset=ops.lam(
                lambda i: ops.If(
                    mine(i), ops.select(st.pend_offset, i), ops.select(st.acked_offset, i)
                ),
                *sources,
            ),
        )


MUTANTS: dict[str, type[Encoding]] = {
    cls.__name__: cls
    for cls in (
        WriteBeyondLogSize,
        AnyReplicaLeads,
        ReuseRecordId,
        StaleEpochWrite,
        ReuseEpochCounter,
        QuorumWithoutRequest,
        ElectWithoutLeaderInIsr,
        ControllerRestoresIsr,
        LeaderKeepsOldIsr,
        ExpandWithoutFollowing,
        ShrinkOutsideTrueLeader,
        FetchFromStaleEpoch,
        AdvanceWithoutIsr,
        FollowerHwIsLeo,
        FollowerSkipsTruncation,
        FollowerTakesNoEpoch,
        FollowerOfAnyReplica,
        PendingSurvivesStepDown,
        PendingReusesId,
        AckAnyPending,
    )
}

_P3 = Params(replicas=3, truncation="kip320")
_HW = Params(replicas=3, truncation="high_watermark")
_EXT = Params(replicas=3, model="extended", leader_view=False)


def _bug(name: str, base: Params = _P3) -> Params:
    return attrs.evolve(base, bugs=frozenset({name}))


PUBLISHED_ONLY = "published"
"""Strengthening marker: the published model's invariants only (no acked-write ghost ones),
for the acks=1 configuration whose acked writes do not satisfy them."""

FAILS_UNDER: dict[str, tuple[Params, str | None, str, str | None]] = {
    "TypeOk": (_P3, "WriteBeyondLogSize", "leader_write", None),
    "StrongIsr": (_HW, None, "become_follower", None),
    "WeakIsr": (_HW, None, "become_follower", None),
    "NoDivergenceBelowHw": (_HW, None, "follower_fetch", None),
    "HwBelowLeo": (_bug("follower_hw_unclamped"), None, "follower_fetch_fenced", None),
    "LeaderInIsr": (_bug("elect_outside_isr"), None, "controller_elect", None),
    "OneLeaderPerEpoch": (_P3, "AnyReplicaLeads", "become_leader", None),
    "RequestEpochs": (_P3, "ReuseEpochCounter", "controller_elect", None),
    "QuorumIsLatestRequest": (_P3, "ReuseEpochCounter", "controller_elect", None),
    "ReplicaEpochFromRequest": (_P3, "AnyReplicaLeads", "become_leader", None),
    "RequestLeaderInIsr": (_P3, "ElectWithoutLeaderInIsr", "controller_elect", None),
    "LeaderInOwnIsr": (_P3, "LeaderKeepsOldIsr", "become_leader", None),
    "TrueLeaderIsrIsQuorumIsr": (_P3, "LeaderKeepsOldIsr", "become_leader", None),
    "RecordEpochs": (_HW, None, "follower_fetch", None),
    "RecordIds": (_P3, "ReuseRecordId", "leader_write", None),
    "LogMatching": (_HW, None, "follower_fetch", None),
    "LeaderHoldsItsEpoch": (_P3, "StaleEpochWrite", "leader_write", None),
    "FollowerIsPrefix": (_P3, "FollowerSkipsTruncation", "become_follower_fenced", None),
    "FollowerLeaderReachedEpoch": (_HW, None, "become_follower", None),
    "CommittedEverywhere": (_HW, None, "become_follower", None),
    "EpochRecordsCommittedByLeader": (_P3, "FollowerHwIsLeo", "follower_fetch_fenced", None),
    "LiveLeaderCoversQuorumIsr": (_P3, "ControllerRestoresIsr", "controller_shrink_isr", None),
    "QuorumIsrInLaterRequests": (_HW, None, "leader_expand_isr", None),
    "LaterLeadersHoldCommits": (_HW, None, "leader_advance_hw", None),
    "LiveLeaderCoversLaterRequests": (_P3, "ControllerRestoresIsr", "controller_shrink_isr", None),
    "QuorumIsrAsSent": (_P3, "ShrinkOutsideTrueLeader", "leader_shrink_isr_fenced", None),
    "RecordEpochLeaderReached": (_P3, "StaleEpochWrite", "leader_write", None),
    "IsrGrowthNeedsALeader": (_P3, "ControllerRestoresIsr", "controller_shrink_isr", None),
    "IsrAdditionsFollowed": (_HW, None, "leader_expand_isr", None),
    "LeaderCompleteness": (_HW, None, "leader_advance_hw", None),
    "RequestIsrHoldsOlderCommits": (_HW, None, "become_follower", None),
    "EpochsOnlyGrow": (_bug("accept_stale_epoch"), None, "become_leader", None),
    "NoAckedAllWriteLost": (_bug("ack_before_hw", _EXT), None, "leader_write", None),
    "NoAckedWriteLost": (
        attrs.evolve(_EXT, acks="1"),
        None,
        "become_leader",
        PUBLISHED_ONLY,
    ),
    "GhostIds": (_EXT, "PendingReusesId", "leader_write", None),
    "PendingInLeaderLog": (_EXT, "PendingSurvivesStepDown", "become_follower_fenced", None),
    "AckedBelowWriterHw": (_EXT, "AckAnyPending", "leader_advance_hw_fenced", None),
    "AckedLeaderCompleteness": (_EXT, "AnyReplicaLeads", "become_leader", None),
    "AckedInRequestIsr": (_bug("ack_before_hw", _EXT), None, "leader_write", None),
    "AckedInQuorumIsr": (_bug("ack_before_hw", _EXT), None, "leader_write", None),
}
"""invariant -> (spec parameters, mutant or None for the spec itself, the action whose
obligation fails, the strengthening: None for every applicable invariant)."""
