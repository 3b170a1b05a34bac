"""The abstraction function: the simulated world's state as the replication spec's state.

``abstract(cluster)`` reads the implementation -- logs from disk, in-memory replica state,
the metadata store -- plus the world's ghost state, and returns a ``spec.replication.State``
of the *extended* model, leader view:

=====================  ====================================================================
spec                   implementation
=====================  ====================================================================
``rep.log``            the replica's log, record by record: (batch leader epoch, ghost id
                       of the append at that epoch and offset)
``rep.hw``             the replica's in-memory high watermark
``rep.epoch/leader``   the replica's leader epoch and the leader it believes in
``rep.isr``            the ISR the replica holds (a follower: the one its LeaderAndIsr said)
``rep.flushed``        the log's recovery point (every byte below it was fsynced)
``rep.alive``          the broker process exists (running or paused)
``rep.fence``          the quorum epoch when the broker last restarted (ghost; the broker
                       itself fences with its broker epoch, KIP-380, which is stricter)
``rep.remote``         while leading: the LEO each follower reported in its last fetch
``quorum``             the store's partition state (leader epoch, leader, ISR)
``requests``           every LeaderAndIsr the controller published (ghost)
``next_record_id``     ids handed out to appends (ghost)
``next_epoch``         the store's leader epoch + 1
``crashes``            broker crashes so far (ghost)
``acked``              writes acknowledged to producers (ghost, from the leaders' notes)
``pending``            the live leaders' produce purgatories, record by record
=====================  ====================================================================

A crashed broker is what the spec's ``crash`` leaves: the log recovery will find on its
disk (previewed at the crash on a copy of the disk), its HW checkpoint clamped to that log,
and nothing else.

``check_step(spec, before, after)`` is the refinement check: ``after`` equals ``before``
(a stutter) or is reached from it by exactly one enabled spec action, which it returns.
On failure it raises ``RefinementError`` naming the closest spec successors and what
differs.
"""

from __future__ import annotations

import attrs

from impl.world import ClusterConfig, World
from spec.framework import Step
from spec.replication import NIL, NONE, Params, Pending, Quorum, Replica, Replication, State, Write

__all__ = [
    "RefinementError",
    "abstract",
    "check_step",
    "describe_state",
    "spec_params",
]

BOUND = 1_000_000
"""Spec bounds large enough never to disable a step the implementation takes."""


def spec_params(config: ClusterConfig, bugs: frozenset[str] = frozenset()) -> Params:
    """The extended-model parameters the implementation with ``config`` refines."""
    return Params(
        replicas=config.brokers,
        log_size=BOUND,
        max_records=BOUND,
        max_epoch=BOUND,
        truncation=config.truncation,
        model="extended",
        acks=config.acks,
        min_isr=config.min_insync_replicas,
        unclean=config.unclean,
        max_crashes=BOUND,
        bugs=bugs,
    )


def abstract(cluster: World, partition: int = 0) -> State:
    config = cluster.config
    topic = config.topic
    ghost = cluster.ghost
    ids = ghost.ids

    def record(epoch: int, offset: int) -> tuple[int, int]:
        return (epoch, ids[(topic, partition, epoch, offset)])

    replicas = []
    pending: set[Pending] = set()
    for b in config.broker_ids:
        name = cluster.broker_names[b]
        if not cluster.nodes.state(name).alive:
            entries, hw = ghost.down[b].get((topic, partition), ([], 0))
            log = tuple(record(epoch, offset) for offset, epoch in entries)
            replicas.append(
                Replica(log, min(hw, len(log)), NIL, NONE, frozenset(), len(log), False, NIL, ())
            )
            continue
        broker = cluster.brokers[b]
        assert broker is not None
        fence = ghost.fences.get(b, NIL)
        rep = broker.replica(topic, partition)
        if rep is None:
            replicas.append(Replica((), 0, NIL, NONE, frozenset(), 0, True, fence, ()))
            continue
        log = tuple(record(epoch, offset) for offset, epoch, _, _ in rep.log.entries())
        remote: tuple[int, ...] = ()
        if rep.is_leader:
            # A broker that is no replica (a reassignment removed it) is unknown to it.
            remote = tuple(
                rep.remotes[r].leo if r != b and r in rep.remotes else -1 for r in config.broker_ids
            )
            for p in rep.purgatory:
                for offset in range(p.base_offset, p.last_offset + 1):
                    pending.add(Pending(b, offset, record(p.leader_epoch, offset)[1]))
        replicas.append(
            Replica(
                log,
                rep.hw,
                rep.leader_epoch,
                rep.leader,
                rep.isr,
                rep.log.recovery_point,
                True,
                fence,
                remote,
            )
        )
    state = cluster.store.partitions[(topic, partition)]
    quorum = Quorum(state.leader_epoch, state.leader, state.isr)
    requests = frozenset(
        Quorum(epoch, leader, isr)
        for (t, p, epoch, leader, isr) in ghost.requests
        if (t, p) == (topic, partition)
    )
    acked = frozenset(
        Write(offset, rid, acks)
        for (t, p, offset, rid, acks) in ghost.acked
        if (t, p) == (topic, partition)
    )
    return State(
        replicas=tuple(replicas),
        quorum=quorum,
        requests=requests,
        next_record_id=ghost.next_record_id,
        next_epoch=state.leader_epoch + 1,
        crashes=ghost.crashes,
        acked=acked,
        pending=frozenset(pending),
    )


class RefinementError(AssertionError):
    """An implementation step that is no step of the spec."""


def describe_state(spec: Replication, s: State) -> str:
    """Several lines: one per replica, then the quorum and the ghosts."""
    lines = []
    for r, rep in zip(spec.ids, s.replicas, strict=True):
        log = " ".join(f"{e}:{i}" for e, i in rep.log) or "-"
        role = "leader" if rep.leader == r else ("follower" if rep.leader != NONE else "-")
        if not rep.alive:
            role = "DOWN"
        remote = f" remote={list(rep.remote)}" if rep.remote else ""
        fence = f" fence={rep.fence}" if rep.fence != NIL else ""
        lines.append(
            f"  {r}: {role:8} log=[{log}] hw={rep.hw} flushed={rep.flushed} "
            f"epoch={rep.epoch} leader={rep.leader} isr={sorted(rep.isr)}{remote}{fence}"
        )
    q = s.quorum
    lines.append(
        f"  quorum: epoch={q.epoch} leader={q.leader} isr={sorted(q.isr)}; "
        f"requests={sorted((x.epoch, x.leader, tuple(sorted(x.isr))) for x in s.requests)}"
    )
    acked = " ".join(f"{w.offset}:{w.id}/{w.acks}" for w in sorted(s.acked, key=_wkey)) or "-"
    pend = " ".join(f"{p.leader}:{p.offset}:{p.id}" for p in sorted(s.pending, key=_pkey)) or "-"
    lines.append(
        f"  ghost: next_id={s.next_record_id} crashes={s.crashes} acked={acked} pending={pend}"
    )
    return "\n".join(lines)


def _wkey(w: Write) -> tuple[int, int, str]:
    return (w.offset, w.id, w.acks)


def _pkey(p: Pending) -> tuple[int, int, int]:
    return (p.leader, p.offset, p.id)


def _differences(a: State, b: State) -> list[str]:
    """Field-level differences between two abstract states, for failure messages."""
    diffs = []
    for i, (x, y) in enumerate(zip(a.replicas, b.replicas, strict=True)):
        for f in attrs.fields(Replica):
            vx, vy = getattr(x, f.name), getattr(y, f.name)
            if vx != vy:
                diffs.append(f"replica {i + 1}.{f.name}: {_show(vx)} vs {_show(vy)}")
    for name in (
        "quorum",
        "requests",
        "next_record_id",
        "next_epoch",
        "crashes",
        "acked",
        "pending",
    ):
        vx, vy = getattr(a, name), getattr(b, name)
        if vx != vy:
            diffs.append(f"{name}: {_show(vx)} vs {_show(vy)}")
    return diffs


def _show(value: object) -> str:
    if isinstance(value, frozenset):
        return "{" + ", ".join(sorted(str(v) for v in value)) + "}"
    return str(value)


def check_step(spec: Replication, before: State, after: State, event: str = "") -> Step | None:
    """The spec step from ``before`` to ``after`` (None for a stutter), or raise
    ``RefinementError``. When several actions lead to ``after``, the first in the spec's
    order is returned."""
    if after == before:
        return None
    successors = []
    for decl, args, nxt in spec.successors(before):
        if nxt == after:
            return spec.step_of(decl, args)
        successors.append((spec.step_of(decl, args), nxt))
    candidates = [(len(_differences(nxt, after)), step, nxt) for step, nxt in successors]
    candidates.sort(key=lambda c: c[0])
    lines = [
        f"the implementation's event {event!r} is no step of the spec "
        f"(truncation={spec.p.truncation}, acks={spec.p.acks}, min_isr={spec.p.min_isr})",
        "before:",
        describe_state(spec, before),
        "after (implementation):",
        describe_state(spec, after),
        "what changed (before vs after): " + "; ".join(_differences(before, after)),
        "closest spec steps (spec's result vs the implementation's):",
    ]
    for _, step, nxt in candidates[:3]:
        lines.append(f"  {step.describe()}: differs in " + "; ".join(_differences(nxt, after)))
    if not candidates:
        lines.append("  (no spec action is enabled)")
    raise RefinementError("\n".join(lines))
