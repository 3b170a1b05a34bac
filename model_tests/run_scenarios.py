"""Fault-injection runs as scenario files: a configuration, an explicit fault schedule and a
seed, then what the cluster did and what the run lost, in the datadriven format of
``scenario_files`` (``scenarios/runs/*.txt``).

Commands::

    config brokers=3 partitions=2 rate=1.0 time_limit_ns=5281475943 nemesis=["clock","kill"]
    fault 823534814 start-clock {"skews": {"zk": -3719000000}}
    run seed=517

``config`` sets `TestConfig` fields (values in JSON; names as in ``test.json``); ``fault``
adds a step to the explicit schedule (time in ns, the nemesis op, its value in JSON);
``run`` simulates and checks the run and prints: the verdict, the acknowledged and lost
writes, every session the store let expire, the controller's figures when a brain split
happened or a fence is off, every election and ISR change, every crash and recovery
(``impl.timeline``), and each loss's mechanism and story (``jepsen_py.explain``).
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from impl.timeline import Crash, Election, IsrChange, Recovery, SessionExpiry
from jepsen_py.generator import SECOND
from jepsen_py.nemesis import ScheduleStep
from jepsen_py.runner import (
    TestConfig,
    check_history,
    explain_run_divergences,
    explain_run_losses,
    simulate_run,
    verdict_name,
)


class RunScenario:
    """The state a run scenario's commands build up."""

    def __init__(self) -> None:
        self.fields: dict[str, Any] = {}
        self.schedule: list[ScheduleStep] = []

    def execute(self, command: str) -> list[str]:
        verb, _, rest = command.partition(" ")
        if verb == "config":
            for word in _split_assignments(rest):
                name, _, value = word.partition("=")
                self.fields[name] = json.loads(value)
            return ["ok"]
        if verb == "fault":
            at, f, value = [*rest.split(" ", 2), ""][:3]
            self.schedule.append(ScheduleStep(int(at), f, json.loads(value) if value else None))
            return ["ok"]
        if verb == "run":
            name, _, seed = rest.partition("=")
            assert name == "seed", f"run takes seed=N, got {rest!r}"
            return self.run(int(seed))
        raise ValueError(f"unknown command {verb!r}: use config, fault or run")

    def config(self) -> TestConfig:
        fields = dict(self.fields)
        if "nemesis" in fields:
            fields["nemesis"] = tuple(fields["nemesis"])
        config = TestConfig(**fields)
        if self.schedule:
            config = attrs.evolve(config, schedule=tuple(self.schedule))
        return config

    def run(self, seed: int) -> list[str]:
        config = self.config()
        simulation = simulate_run(config, seed)
        history, events = simulation.history, simulation.events
        check = check_history(history)
        acked = sum(1 for op in history if op.is_client and op.f == "send" and op.type == "ok")
        lines = [
            f"verdict: {verdict_name(check.verdict)}",
            f"acknowledged writes: {acked}, lost: {check.lost_acknowledged_writes}",
        ]
        expired = [f"{_t(e.time)} b{e.broker}" for e in events if isinstance(e, SessionExpiry)]
        lines.append(f"sessions expired: {', '.join(expired) or 'none'}")
        controller = simulation.figures.controller
        if config.bugs or controller["brain_splits"]:
            # Brain splits and what the zombie's requests met (impl.world.controller_figures).
            lines.append("controller: " + ", ".join(f"{k} {v}" for k, v in controller.items()))
        for e in events:
            if isinstance(e, Election):
                leader = "none" if e.leader < 0 else f"b{e.leader}"
                clean = "" if e.clean else " UNCLEAN"
                lines.append(
                    f"{_t(e.time)} {e.topic}-{e.partition} elected: leader {leader} epoch "
                    f"{e.leader_epoch} ISR {list(e.isr)}{clean}"
                )
            elif isinstance(e, IsrChange):
                lines.append(
                    f"{_t(e.time)} {e.topic}-{e.partition} ISR {list(e.previous_isr)} -> "
                    f"{list(e.isr)} by b{e.leader}"
                )
            elif isinstance(e, Crash):
                how = f"power loss, {e.unflushed_bytes} bytes lost" if e.power_loss else "SIGKILL"
                lines.append(f"{_t(e.time)} b{e.broker} crashed ({how})")
            elif isinstance(e, Recovery):
                logs = ", ".join(f"{t}-{p} log end {end}" for t, p, end, _ in e.logs)
                lines.append(f"{_t(e.time)} b{e.broker} recovered: {logs}")
        for explanation in explain_run_losses(config, history, events, check.lost_writes):
            lines.append(f"loss: {explanation.summary()}")
            lines.extend(f"  {line.strip()}" for line in explanation.story)
        for divergence in explain_run_divergences(config, history, events, check):
            lines.append(f"divergence: {divergence.summary()}")
            lines.extend(f"  {line.strip()}" for line in divergence.story)
        return lines


def _t(ns: int) -> str:
    return f"{ns / SECOND:8.3f}s"


def _split_assignments(text: str) -> list[str]:
    """``a=1 b=["x", "y"]`` as ``["a=1", 'b=["x", "y"]']``: spaces inside JSON brackets or
    strings do not split."""
    words, depth, quoted, current = [], 0, False, []
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "[{":
            depth += 1
        elif not quoted and ch in "]}":
            depth -= 1
        if ch == " " and depth == 0 and not quoted:
            if current:
                words.append("".join(current))
                current = []
            continue
        current.append(ch)
    if current:
        words.append("".join(current))
    return words
