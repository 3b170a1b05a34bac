"""Step diagrams of a counterexample, as one SVG picture with a row per step.

Each row is drawn from that step's state, as the spec exports it (``spec.to_json``), never
by hand: for replication (and the rebalance spec, whose state holds replication's as
``core``) each replica's log as boxes labelled by leader epoch and record id, its high
watermark and log end offset marked, whether it believes it leads, its ISR, a crashed
replica greyed out, and the controller's partition state; for the controller spec the
brokers (session, controller role, the leader epoch each applied) and ZooKeeper's
``/controller``, ``/controller_epoch`` and partition state; for the offsets spec the
consumers (generation, ownership, position), the coordinator's group and the committed
offset over the partition's records.

The pictures are plain string building: no dependency, small files, byte-identical for the
same trace (``model_tests/test_stories.py`` pins them next to the pages).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from xml.sax.saxutils import escape

from spec.explore import TraceStep
from spec.framework import Spec

LEFT = 10
"""Where a row's drawing starts; the step number and action are written above it."""
HEADER = 20
"""Height of a row's heading (step number and action)."""
BOX = 46
"""Width of one record box (and of one offset on the log axis)."""
LANE = 26
"""Height of one replica's, broker's or consumer's lane."""

STYLE = (
    "text{font:11px ui-monospace,Menlo,Consolas,monospace;fill:#222}"
    ".act{font-size:11px}.num{font-weight:bold}.dim{fill:#888}.bad{fill:#b00020}"
    ".row{fill:#fafafa;stroke:#ddd}.last{fill:#fff0f0;stroke:#b00020}"
    ".rec{stroke:#555}.unflushed{stroke-dasharray:3 2}.acked{stroke:#000;stroke-width:2.5}"
    ".hw{stroke:#1b8a3a;stroke-width:3}.leo{fill:#333}.down{opacity:.35}"
    ".card{fill:#fff;stroke:#999}.zombie{fill:#fff0f0;stroke:#b00020}.ctl{fill:#eef4ff;stroke:#3060c0}"
    ".done{fill:#d8f0dc;stroke:#555}.todo{fill:#fff;stroke:#555}.cmt{stroke:#1b8a3a;stroke-width:3}"
    ".pos{fill:#3060c0}"
)


def _text(x: float, y: float, content: str, cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return f'<text x="{x:g}" y="{y:g}"{attr}>{escape(content)}</text>'


def _rect(x: float, y: float, w: float, h: float, cls: str, fill: str = "") -> str:
    style = f' style="fill:{fill}"' if fill else ""
    return f'<rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" class="{cls}"{style}/>'


def _line(x1: float, y1: float, x2: float, y2: float, cls: str) -> str:
    return f'<line x1="{x1:g}" y1="{y1:g}" x2="{x2:g}" y2="{y2:g}" class="{cls}"/>'


def _set(members: Sequence[Any]) -> str:
    return "{" + ",".join(str(m) for m in members) + "}"


def _epoch_fill(epoch: int) -> str:
    """One pastel colour per leader epoch, so records of one epoch read as one colour."""
    return f"hsl({(epoch * 67 + 200) % 360},70%,88%)"


# --------------------------------------------------------------------------- replication

Layout = dict[str, Any]
"""What every row of one picture shares: its width, how many log slots, what to mark."""


def _replication_data(state_json: dict[str, Any]) -> dict[str, Any]:
    """Replication's JSON, or the replication core inside the rebalance spec's."""
    return state_json.get("core", state_json)


def replication_layout(states: Sequence[dict[str, Any]]) -> Layout:
    """Log slots for the longest log of the trace; flushing is drawn only when the trace
    has a crash (otherwise what is flushed changes nothing)."""
    cores = [_replication_data(s) for s in states]
    slots = max(
        [2] + [max(len(r["log"]), r["leo"], r["hw"]) for c in cores for r in c["replicas"].values()]
    )
    crashes = any(
        c.get("crashes", 0) or not r.get("alive", True)
        for c in cores
        for r in c["replicas"].values()
    )
    return {"slots": slots, "crashes": crashes, "width": max(660, LOG_X + slots * BOX + 330)}


LOG_X = LEFT + 86
"""Where offset 0 of a log is drawn."""


def replication_row(
    state_json: dict[str, Any], y: float, layout: Layout
) -> tuple[list[str], float]:
    """The replicas' lanes and the controller's line for one state; the row's height."""
    data = _replication_data(state_json)
    acked = {(offset, record) for offset, record, *_ in data.get("acked", [])}
    parts: list[str] = []
    facts_x = LOG_X + layout["slots"] * BOX + 14
    replicas = sorted(data["replicas"].items(), key=lambda kv: int(kv[0]))
    for index, (rid, rep) in enumerate(replicas):
        top = y + index * LANE
        alive = rep.get("alive", True)
        lane: list[str] = []
        leads = str(rep["leader"]) == rid and rep["epoch"] is not None and rep["epoch"] >= 0
        name = f"replica {rid}" + (" \u2605" if leads and alive else "")
        lane.append(_text(LEFT, top + 15, name))
        for offset, (epoch, record) in enumerate(rep["log"]):
            cls = "rec"
            if layout["crashes"] and offset >= rep.get("flushed", offset + 1):
                cls += " unflushed"
            if (offset, record) in acked:
                cls += " acked"
            x = LOG_X + offset * BOX
            lane.append(_rect(x + 2, top + 3, BOX - 4, LANE - 8, cls, _epoch_fill(epoch)))
            lane.append(_text(x + 7, top + 16, f"e{epoch}\u00b7{record}"))
        hw_x = LOG_X + rep["hw"] * BOX
        lane.append(_line(hw_x, top + 1, hw_x, top + LANE - 3, "hw"))
        leo_x = LOG_X + rep["leo"] * BOX
        lane.append(f'<path d="M{leo_x:g} {top + LANE - 4:g}l-4 4h8z" class="leo"/>')
        epoch = "-" if rep["epoch"] is None or rep["epoch"] < 0 else str(rep["epoch"])
        isr = _set(rep["isr"]) if rep["isr"] else "-"
        facts = f"HW {rep['hw']}  LEO {rep['leo']}  epoch {epoch}  ISR {isr}"
        if not alive:
            facts += "  DOWN"
        lane.append(_text(facts_x, top + 15, facts, "" if alive else "bad"))
        if alive:
            parts += lane
        else:
            parts.append('<g class="down">' + "".join(lane[:-1]) + "</g>")
            parts.append(lane[-1])
    top = y + len(replicas) * LANE
    quorum = data["quorum"]
    leader = "-" if quorum["leader"] is None or quorum["leader"] < 0 else str(quorum["leader"])
    epoch = "-" if quorum["epoch"] is None or quorum["epoch"] < 0 else str(quorum["epoch"])
    line = f"controller: leader {leader}, epoch {epoch}, ISR {_set(quorum['isr']) or '-'}"
    if "elr" in state_json:
        line += f", ELR {_set(state_json['elr']) if state_json['elr'] else '-'}"
    if acked:
        line += "   acknowledged: " + ", ".join(
            f"offset {offset} (record {record})" for offset, record in sorted(acked)
        )
    parts.append(_text(LEFT, top + 14, line, "dim"))
    return parts, len(replicas) * LANE + 20


REPLICATION_LEGEND = (
    "boxes: records (leader epoch \u00b7 record id), coloured by epoch; bold: acknowledged;",
    "dashed: not yet flushed (drawn when the trace has a crash); greyed: a crashed replica;",
    "green bar: the replica's high watermark; triangle: its log end offset; \u2605 it leads",
)

# ---------------------------------------------------------------------------- controller

CARD = 250
"""Width of a broker's card (the store's is wider)."""
STORE_CARD = 290


def controller_layout(states: Sequence[dict[str, Any]]) -> Layout:
    brokers = len(states[0]["brokers"])
    return {"width": LEFT + brokers * CARD + STORE_CARD + 10}


def controller_row(state_json: dict[str, Any], y: float, layout: Layout) -> tuple[list[str], float]:
    """Each broker as a card (controller role, session, the controller epoch and the
    partition leaders it applied), then ZooKeeper's znodes."""
    store = state_json["store"]
    parts: list[str] = []
    x = float(LEFT)
    height = 4 * 16 + 8
    for rid, broker in sorted(state_json["brokers"].items(), key=lambda kv: int(kv[0])):
        b = int(rid)
        session = b in store["sessions"]
        active = broker["active_epoch"] != 0
        zombie = active and (
            store["controller"] != b or broker["active_epoch"] < store["controller_epoch"]
        )
        cls = "zombie" if zombie else "ctl" if active else "card"
        parts.append(_rect(x, y + 2, CARD - 10, height, cls))
        title = f"broker {b}"
        if active:
            role = "zombie controller" if zombie else "controller"
            title += f": {role}, epoch {broker['active_epoch']}"
        views = []
        for p, r in enumerate(broker["replicas"]):
            if r["leader"] < 0:
                views.append(f"p{p}: no leader")
            elif r["leader"] == b:
                views.append(f"p{p}: \u2605 leads, epoch {r['leader_epoch']}")
            else:
                views.append(f"p{p}: follows {r['leader']}, epoch {r['leader_epoch']}")
        lines = [
            (title, "bad" if zombie else ""),
            ("session: yes" if session else "session: EXPIRED", "" if session else "bad"),
            (f"applied controller epoch {broker['controller_epoch']}", ""),
            ("; ".join(views), ""),
        ]
        for index, (text, cls_text) in enumerate(lines):
            parts.append(_text(x + 6, y + 16 + 16 * index, text, cls_text))
        x += CARD
    controller = "-" if store["controller"] < 0 else str(store["controller"])
    parts.append(_rect(x, y + 2, STORE_CARD - 10, height, "card"))
    lines_store = [
        "ZooKeeper",
        f"/controller: {controller}",
        f"/controller_epoch: {store['controller_epoch']} (version {store['epoch_version']})",
    ]
    for p, part in enumerate(store["partitions"]):
        leader = "-" if part["leader"] < 0 else part["leader"]
        epoch = "-" if part["leader_epoch"] < 0 else part["leader_epoch"]
        lines_store.append(f"p{p}: leader {leader}, epoch {epoch}, ISR {_set(part['isr'])}")
    for index, text in enumerate(lines_store):
        parts.append(_text(x + 6, y + 16 + 16 * index, text))
    return parts, height + 4


CONTROLLER_LEGEND = (
    "blue card: the controller; red: a zombie (it believes it is the controller,",
    "but ZooKeeper names another, or none); \u2605 a broker that leads the partition",
)

# ------------------------------------------------------------------------------- offsets


def offsets_layout(states: Sequence[dict[str, Any]]) -> Layout:
    slots = 1 + max(
        [max(s["processed"], default=0) for s in states]
        + [s["stored"]["committed"] or 0 for s in states]
        + [c["position"] or 0 for s in states for c in s["consumers"]]
    )
    consumers = len(states[0]["consumers"])
    return {"slots": slots, "width": max(640, LOG_X + slots * BOX + 200), "consumers": consumers}


def offsets_row(state_json: dict[str, Any], y: float, layout: Layout) -> tuple[list[str], float]:
    """The partition's records (processed filled), the committed offset (green bar) and
    the owner's position (blue triangle); then a line per consumer, the coordinator's group
    and the commits in flight."""
    parts: list[str] = []
    processed = set(state_json["processed"])
    parts.append(_text(LEFT, y + 15, "partition p0"))
    for offset in range(layout["slots"]):
        cls = "done" if offset in processed else "todo"
        parts.append(_rect(LOG_X + offset * BOX + 2, y + 3, BOX - 4, LANE - 8, cls))
        parts.append(_text(LOG_X + offset * BOX + 12, y + 16, f"r{offset}"))
    committed = state_json["stored"]["committed"]
    if committed is not None:
        cx = LOG_X + committed * BOX
        parts.append(_line(cx, y + 1, cx, y + LANE - 3, "cmt"))
    for consumer in state_json["consumers"]:
        if consumer["owns"] and consumer["position"] is not None:
            px = LOG_X + consumer["position"] * BOX
            parts.append(f'<path d="M{px:g} {y + LANE - 4:g}l-4 5h8z" class="pos"/>')
    group = state_json["group"]
    committed_text = "none" if committed is None else str(committed)
    parts.append(
        _text(
            LOG_X + layout["slots"] * BOX + 14,
            y + 15,
            f"committed offset: {committed_text}",
        )
    )
    top = y + LANE
    lines: list[tuple[str, str]] = []
    for slot, consumer in enumerate(state_json["consumers"], start=1):
        member = consumer["member_id"] or "-"
        in_group = consumer["member_id"] in group["members"]
        zombie = consumer["state"] == "stable" and not in_group
        text = (
            f"consumer {slot} ({member}): {consumer['state']}, generation {consumer['generation']}"
        )
        if consumer["owns"]:
            position = "-" if consumer["position"] is None else consumer["position"]
            text += f", owns p0, position {position}"
        if zombie:
            text += "; NOT IN THE GROUP"
        lines.append((text, "bad" if zombie else ""))
    members = " ".join(group["members"]) or "none"
    lines.append(
        (
            f"coordinator: {group['state']}, generation {group['generation']}, members "
            f"{members}, p0 assigned to {group['owner'] or '-'}",
            "",
        )
    )
    if state_json["inflight"]:
        lines.append(("in flight: " + ", ".join(state_json["inflight"]), "dim"))
    for index, (text, cls) in enumerate(lines):
        parts.append(_text(LEFT, top + 14 + index * 16, text, cls))
    return parts, LANE + len(lines) * 16 + 6


OFFSETS_LEGEND = (
    "boxes: the partition's records, green once processed; green bar: the group's",
    "committed offset; blue triangle: the owner's position; in red: a consumer that",
    "still acts but is no longer a member of the group",
)

Drawer = tuple[
    Callable[[dict[str, Any], float, Layout], tuple[list[str], float]],
    Callable[[Sequence[dict[str, Any]]], Layout],
    tuple[str, ...],
]

DRAWERS: dict[str, Drawer] = {
    "replication": (replication_row, replication_layout, REPLICATION_LEGEND),
    "rebalance": (replication_row, replication_layout, REPLICATION_LEGEND),
    "controller": (controller_row, controller_layout, CONTROLLER_LEGEND),
    "offsets": (offsets_row, offsets_layout, OFFSETS_LEGEND),
}
"""How each spec's states are drawn: a row, the picture's layout, the legend."""


def render_svg(spec: Spec, trace: Sequence[TraceStep], title: str) -> str:
    """The trace as one SVG picture: a legend, then one row per step (the step's number and
    action, then its state); the last row, where the property fails, outlined in red."""
    if spec.name not in DRAWERS:
        raise ValueError(
            f"no step diagram for spec {spec.name!r}; known: {', '.join(sorted(DRAWERS))}"
        )
    row, layout_of, legend = DRAWERS[spec.name]
    states = [spec.to_json(step.state) for step in trace]
    layout = layout_of(states)
    width = layout["width"]
    body: list[str] = [_text(8, 18, title, "num")]
    body += [_text(8, 36 + 16 * i, line, "dim") for i, line in enumerate(legend)]
    y = 30.0 + 16 * len(legend)
    for number, (step, state_json) in enumerate(zip(trace, states, strict=True), start=1):
        parts, height = row(state_json, y + HEADER + 2, layout)
        last = number == len(trace)
        body.append(_rect(2, y, width - 4, HEADER + height + 8, "last" if last else "row"))
        label = "Init" if step.step is None else step.step.describe()
        body.append(_text(LEFT, y + 16, str(number), "num"))
        body.append(_text(LEFT + 28, y + 16, label, "act"))
        body += parts
        y += HEADER + height + 12
    height = int(y + 4)
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">'
        f"<style>{STYLE}</style>"
    )
    return head + "\n" + "\n".join(body) + "\n</svg>\n"
