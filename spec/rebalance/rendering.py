"""How rebalance states read in traces: the replication core's columns (one group per
broker: log, LEO, HW, leader epoch, believed leader, ISR; the quorum state; the acked
ghost) followed by the partition metadata: replicas in order, adding/removing, ELR, and
the brokers in controlled shutdown."""

from __future__ import annotations

from typing import Any

from spec.rebalance.core import RebalanceCore
from spec.rebalance.state import RState
from spec.replication.state import describe_ids


class RebalanceRendering(RebalanceCore):
    """Trace-table rows, one-line states and JSON."""

    def columns(self, s: RState) -> list[tuple[str, str, str]]:
        cells = self.data.columns(s.core)
        m = s.meta
        for i, (group, column, value) in enumerate(cells):
            if group.startswith("replica "):
                r = int(group.split()[1])
                rep = s.core.replicas[r - 1]
                if column == "log" and not rep.alive and not self.p.max_crashes:
                    value = "DOWN " + value
                cells[i] = (f"broker {r}", column, value)
        moving = ""
        if m.ongoing:
            moving = f"+{describe_ids(m.adding)} -{describe_ids(m.removing)}"
        cells += [
            ("partition", "replicas", "[" + ",".join(str(r) for r in m.assignment) + "]"),
            ("partition", "reassigning", moving or "-"),
            ("partition", "ELR", describe_ids(m.elr) if m.elr else "-"),
            ("partition", "shutting", describe_ids(m.shutting) if m.shutting else "-"),
        ]
        return cells

    def short(self, s: RState) -> str:
        return self.data.short(s.core) + f" replicas{list(s.meta.assignment)}"

    def to_json(self, s: RState) -> dict[str, Any]:
        m = s.meta
        return {
            "core": self.data.to_json(s.core),
            "assignment": list(m.assignment),
            "adding": sorted(m.adding),
            "removing": sorted(m.removing),
            "elr": sorted(m.elr),
            "shutting": sorted(m.shutting),
            "reassignments": m.reassignments,
            "shutdowns": m.shutdowns,
        }
