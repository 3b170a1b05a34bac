"""A simulated node's process life cycle: running, paused, crashed, stopped.

These are the process-level faults of Jepsen's nemeses, applied to a broker:

- **pause** (SIGSTOP) freezes the process. It keeps its memory, its open connections and its
  timers, but acts on nothing: messages sent to it queue up in the network and its timers
  wait. **resume** (SIGCONT) wakes it up acting on the state it had: a leader or controller
  that was replaced while it slept still believes it is in charge (the *zombie*), and only
  epoch fencing (leader epoch, controller epoch) stops it.
- **crash** (kill -9, power loss) ends the process: memory is lost, the disk keeps only what
  was flushed, and every TCP connection to or from it is reset, so messages in flight on
  them are lost. A paused process can crash too.
- **stop** is Kafka's controlled shutdown (``controlled.shutdown.enable``): the broker hands
  off its leaderships and flushes before exiting. Its connections close like a crash's.
- **restart** starts a new process from what is on disk: a new *incarnation*, so nothing
  addressed to or sent by the previous one can reach it.

The table ``TRANSITIONS`` is the single source of the life cycle: ``NodeLifecycles.apply``
follows it, raises one readable ``IllegalTransition`` for anything else, and ``to_mermaid``
and ``to_dot`` draw it for the docs.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

import attrs

__all__ = [
    "INITIAL_STATE",
    "TRANSITIONS",
    "IllegalTransition",
    "NodeEvent",
    "NodeLifecycles",
    "NodeState",
    "Transition",
    "allowed_events",
    "next_state",
    "to_dot",
    "to_markdown",
    "to_mermaid",
]


class NodeState(enum.Enum):
    RUNNING = "running"
    PAUSED = "paused"
    CRASHED = "crashed"
    STOPPED = "stopped"

    @property
    def alive(self) -> bool:
        """A process exists: its connections are open and messages to it are accepted."""
        return self in (NodeState.RUNNING, NodeState.PAUSED)

    @property
    def acts(self) -> bool:
        """It takes messages and ticks, and may send: only a running node."""
        return self is NodeState.RUNNING


class NodeEvent(enum.Enum):
    PAUSE = "pause"
    RESUME = "resume"
    CRASH = "crash"
    STOP = "stop"
    RESTART = "restart"


@attrs.frozen(slots=True)
class Transition:
    """One row of the life-cycle table."""

    source: NodeState
    event: NodeEvent
    target: NodeState
    models: str
    """What it models, for the docs."""


INITIAL_STATE = NodeState.RUNNING

_R, _P, _C, _S = NodeState.RUNNING, NodeState.PAUSED, NodeState.CRASHED, NodeState.STOPPED

TRANSITIONS: tuple[Transition, ...] = (
    Transition(_R, NodeEvent.PAUSE, _P, "SIGSTOP: keeps memory, connections, timers"),
    Transition(_P, NodeEvent.RESUME, _R, "SIGCONT: acts on stale state (zombie)"),
    Transition(_R, NodeEvent.CRASH, _C, "kill -9: loses memory and unflushed writes"),
    Transition(_P, NodeEvent.CRASH, _C, "kill -9 while stopped by SIGSTOP"),
    Transition(_R, NodeEvent.STOP, _S, "controlled shutdown: flushes, then exits"),
    Transition(_C, NodeEvent.RESTART, _R, "new incarnation, recovers from disk"),
    Transition(_S, NodeEvent.RESTART, _R, "new incarnation, recovers from disk"),
)

_TABLE: dict[tuple[NodeState, NodeEvent], Transition] = {
    (row.source, row.event): row for row in TRANSITIONS
}
assert len(_TABLE) == len(TRANSITIONS), "two rows for one (state, event)"


class IllegalTransition(Exception):
    """An event the life-cycle table does not allow in the node's current state."""

    def __init__(self, node: str | None, state: NodeState, event: NodeEvent) -> None:
        self.node = node
        self.state = state
        self.event = event
        who = f"node {node!r}" if node is not None else "a node"
        allowed = ", ".join(e.value for e in allowed_events(state)) or "none"
        super().__init__(
            f"{who} cannot {event.value} while {state.value}; "
            f"events allowed while {state.value}: {allowed}"
        )


def allowed_events(state: NodeState) -> tuple[NodeEvent, ...]:
    """The events the table allows in ``state``, in table order."""
    return tuple(row.event for row in TRANSITIONS if row.source is state)


def next_state(state: NodeState, event: NodeEvent, node: str | None = None) -> NodeState:
    """The state after ``event``; raises ``IllegalTransition`` if the table has no such row."""
    row = _TABLE.get((state, event))
    if row is None:
        raise IllegalTransition(node, state, event)
    return row.target


class NodeLifecycles:
    """The life-cycle state and incarnation of every node of a simulated cluster.

    The one place a node's state is kept: the world loop asks it which nodes act, and the
    network asks it which connections still exist (``version`` tells the network whether
    anything changed since it last looked).
    """

    __slots__ = ("_incarnation", "_state", "version")

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._state: dict[str, NodeState] = {}
        self._incarnation: dict[str, int] = {}
        self.version = 0
        """Increases with every added node and every transition. A plain attribute: the
        world loop and the network read it on every event; only this class moves it."""
        for name in names:
            self.add(name)

    def add(self, name: str) -> None:
        """A new node, running its first incarnation (0)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a node name is a non-empty str, got {name!r}")
        if name in self._state:
            raise ValueError(f"node {name!r} already exists")
        self._state[name] = INITIAL_STATE
        self._incarnation[name] = 0
        self.version += 1

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._state))

    def __contains__(self, name: object) -> bool:
        return name in self._state

    def __len__(self) -> int:
        return len(self._state)

    def state(self, name: str) -> NodeState:
        return self._state[self._known(name)]

    def incarnation(self, name: str) -> int:
        """How many times the node has restarted: a connection belongs to one incarnation."""
        return self._incarnation[self._known(name)]

    def in_state(self, state: NodeState) -> tuple[str, ...]:
        return tuple(name for name in self.names if self._state[name] is state)

    def apply(self, name: str, event: NodeEvent) -> Transition:
        """Apply ``event`` to ``name`` by the table; returns the row it followed."""
        state = self._state[self._known(name)]
        row = _TABLE.get((state, event))
        if row is None:
            raise IllegalTransition(name, state, event)
        self._state[name] = row.target
        if event is NodeEvent.RESTART:
            self._incarnation[name] += 1
        self.version += 1
        return row

    def pause(self, name: str) -> Transition:
        return self.apply(name, NodeEvent.PAUSE)

    def resume(self, name: str) -> Transition:
        return self.apply(name, NodeEvent.RESUME)

    def crash(self, name: str) -> Transition:
        return self.apply(name, NodeEvent.CRASH)

    def stop(self, name: str) -> Transition:
        return self.apply(name, NodeEvent.STOP)

    def restart(self, name: str) -> Transition:
        return self.apply(name, NodeEvent.RESTART)

    def snapshot(self) -> tuple[tuple[str, NodeState, int], ...]:
        """(name, state, incarnation) of every node, sorted by name."""
        return tuple((n, self._state[n], self._incarnation[n]) for n in self.names)

    def _known(self, name: str) -> str:
        if name not in self._state:
            raise KeyError(f"unknown node {name!r}; the nodes are {list(self.names)}")
        return name

    def __repr__(self) -> str:
        inside = ", ".join(f"{n}={s.value}#{i}" for n, s, i in self.snapshot())
        return f"NodeLifecycles({inside})"


# Diagrams for the docs, drawn from the same table ---------------------------------------


def to_mermaid() -> str:
    """The life cycle as a Mermaid state diagram."""
    lines = ["stateDiagram-v2", f"    [*] --> {INITIAL_STATE.value}"]
    lines += [f"    {r.source.value} --> {r.target.value}: {r.event.value}" for r in TRANSITIONS]
    return "\n".join(lines) + "\n"


def to_dot() -> str:
    """The life cycle as a Graphviz digraph."""
    lines = [
        "digraph node_lifecycle {",
        "    rankdir=LR;",
        '    start [shape=point, label=""];',
        f"    start -> {INITIAL_STATE.value};",
    ]
    lines += [
        f'    {r.source.value} -> {r.target.value} [label="{r.event.value}", tooltip="{r.models}"];'
        for r in TRANSITIONS
    ]
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_markdown() -> str:
    """The table itself, as a Markdown table."""
    lines = ["| from | event | to | models |", "| --- | --- | --- | --- |"]
    lines += [
        f"| {r.source.value} | {r.event.value} | {r.target.value} | {r.models} |"
        for r in TRANSITIONS
    ]
    return "\n".join(lines) + "\n"
