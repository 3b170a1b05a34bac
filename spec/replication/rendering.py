"""How replication states read in traces: the trace table's columns (one group per replica:
log, LEO, HW, leader epoch, believed leader, ISR; then the quorum state and the ghost of
acknowledged writes), a one-line form for state graphs, and JSON."""

from __future__ import annotations

from typing import Any

from spec.replication.core import ReplicationCore
from spec.replication.state import NIL, NONE, Quorum, State, Write, describe_ids


def _sorted_writes(writes: frozenset[Write]) -> list[Write]:
    return sorted(writes, key=lambda w: (w.offset, w.id, w.acks))


class TraceRendering(ReplicationCore):
    """Trace-table rows, one-line states and JSON."""

    def columns(self, s: State) -> list[tuple[str, str, str]]:
        """One trace-table row: a column group per replica (log of (epoch, id) records, LEO,
        HW, leader epoch, believed leader, ISR), then the controller's quorum state."""
        cells: list[tuple[str, str, str]] = []
        for r, rep in zip(self.ids, s.replicas, strict=True):
            group = f"replica {r}"
            log = " ".join(f"({e},{i})" for e, i in rep.log) or "-"
            if self.extended and self.p.max_crashes:
                if rep.flushed < rep.leo:
                    log += f" [flushed {rep.flushed}]"
                if not rep.alive:
                    log = "DOWN " + log
            cells += [
                (group, "log", log),
                (group, "LEO", str(rep.leo)),
                (group, "HW", str(rep.hw)),
                (group, "epoch", "-" if rep.epoch == NIL else str(rep.epoch)),
                (group, "leader", "-" if rep.leader == NONE else str(rep.leader)),
                (group, "ISR", describe_ids(rep.isr)),
            ]
        cells.append(("quorum", "state", s.quorum.describe()))
        if self.extended:
            acked = " ".join(f"{w.offset}:{w.id}/{w.acks}" for w in _sorted_writes(s.acked))
            cells.append(("ghost", "acked", acked or "-"))
        return cells

    def short(self, s: State) -> str:
        parts = []
        for r, rep in zip(self.ids, s.replicas, strict=True):
            log = "".join(f"{e}{i}" for e, i in rep.log)
            lead = "*" if rep.leader == r else ""
            parts.append(f"{r}{lead}:[{log}]hw{rep.hw}e{rep.epoch}")
        return " ".join(parts) + " q" + s.quorum.describe()

    def to_json(self, s: State) -> dict[str, Any]:
        return {
            "replicas": {
                str(r): {
                    "log": [list(rec) for rec in rep.log],
                    "leo": rep.leo,
                    "hw": rep.hw,
                    "epoch": rep.epoch,
                    "leader": rep.leader,
                    "isr": sorted(rep.isr),
                    "flushed": rep.flushed,
                    "alive": rep.alive,
                }
                for r, rep in zip(self.ids, s.replicas, strict=True)
            },
            "quorum": {
                "epoch": s.quorum.epoch,
                "leader": s.quorum.leader,
                "isr": sorted(s.quorum.isr),
            },
            "requests": [
                {"epoch": q.epoch, "leader": q.leader, "isr": sorted(q.isr)}
                for q in sorted(s.requests, key=Quorum.key)
            ],
            "next_record_id": s.next_record_id,
            "next_epoch": s.next_epoch,
            "crashes": s.crashes,
            "acked": [[w.offset, w.id, w.acks] for w in _sorted_writes(s.acked)],
        }
