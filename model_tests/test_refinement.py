"""Refinement: the implementation (``impl``) moves, step by step, as the replication spec
(``spec.replication``, extended model, leader view) allows.

- Hypothesis's stateful machine (``impl/refinement_machine.py``) drives the
  implementation through random events and checks, after each one, that the abstract state
  stayed put or moved by exactly one spec action, and that the spec's invariants hold
  (except those the configuration is known to violate: the spec violates them too).
- The same machine against deliberately broken implementations must fail, naming the spec
  action it could not match, with a shrunk reproduction.
- Scenario files (``model_tests/scenarios/impl/*.txt``) replay Kafka's known bugs against
  the implementation, printing the spec action and the abstract state after every step.
  ``--rewrite`` (or ``KMODEL_REWRITE=1``) regenerates them.
- Findings: where Kafka's mechanism (the leader-epoch cache) and the spec's rule (computed
  from the records) disagree, a test pins the disagreement.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis.stateful import run_state_machine_as_test

from impl.abstraction import RefinementError, abstract, check_step, describe_state, spec_params
from impl.broker import Broker
from impl.fetcher import ExchangeDone, ExchangeFailed, TruncationExchange, fenced
from impl.log import UNDEFINED_EPOCH, EpochEntry, LeaderEpochCache
from impl.log.batch import read_header
from impl.protocol import (
    Acked,
    Errors,
    OffsetsForLeaderEpoch,
    OffsetsForLeaderEpochResponse,
    Produce,
)
from impl.refinement import RefinementCluster
from impl.refinement_machine import (
    COVERAGE,
    OPTIONAL_RULES,
    STATS,
    InvariantViolation,
    machine_settings,
    make_machine,
    refinement_config,
)
from impl.replica import Replica
from impl.roles import roles_to_markdown, roles_to_mermaid
from impl.sim.clock import ms
from model_tests.scenario_files import (
    SCENARIOS,
    assert_matches_file,
    parse_scenario,
    render_scenario,
)
from spec.replication import Replication, State

CRASH_VIOLATIONS = frozenset({"StrongIsr", "WeakIsr", "NoAckedAllWriteLost", "NoAckedWriteLost"})
"""What the spec itself violates once brokers crash and lose unflushed data (KIP-966's
last replica standing; ``kmodel check replication --model extended --replicas 3 --min-isr 2
--max-crashes 1`` finds each)."""

UNFENCED_VIOLATIONS = CRASH_VIOLATIONS | {"NoDivergenceBelowHw"}
"""Also what the variants before KIP-320 violate without crashes (KIP-101, KIP-279, KIP-320's
scenarios)."""


# --------------------------------------------------------------------------------- findings


class CacheTruncation(Replication):
    """The spec with Kafka's truncation offset in place of its own: the OffsetsForLeaderEpoch
    exchange run over leader-epoch caches built from the abstract logs (each replica's
    record epochs, plus a leader's current epoch starting at its LEO when it has written
    nothing in it: ``Partition.makeLeader`` records it before any write)."""

    def truncation_offset(self, s: State, r: int, leader: int) -> int:
        return kafka_truncation_offset(self.p.truncation, s, r, leader)


def _cache(rep_log: tuple[tuple[int, int], ...], leads_in: int | None) -> LeaderEpochCache:
    entries: list[EpochEntry] = []
    for offset, (epoch, _) in enumerate(rep_log):
        if not entries or entries[-1].epoch != epoch:
            entries.append(EpochEntry(epoch, offset))
    if leads_in is not None and (not entries or leads_in > entries[-1].epoch):
        entries.append(EpochEntry(leads_in, len(rep_log)))
    return LeaderEpochCache(None, entries)


def kafka_truncation_offset(truncation: str, s: State, r: int, leader: int) -> int:
    """Where Kafka's follower ``r`` truncates when ``leader`` answers from its epoch cache."""
    frep, lrep = s.rep(r), s.rep(leader)
    fcache = _cache(frep.log, frep.epoch if frep.leader == r else None)
    lcache = _cache(lrep.log, lrep.epoch if lrep.leader == leader else None)
    exchange = TruncationExchange(
        truncation=truncation,
        replica_id=r,
        topic="t",
        partition=0,
        entries=fcache.entries,
        log_end_offset=frep.leo,
        high_watermark=frep.hw,
        current_leader_epoch=lrep.epoch,
        first_request_id=0,
    )
    result: OffsetsForLeaderEpoch | ExchangeDone | ExchangeFailed = exchange.start()
    for _ in range(100):
        if isinstance(result, ExchangeDone):
            return result.offset
        assert not isinstance(result, ExchangeFailed), "a leader answering from its cache"
        request = result
        if request.leader_epoch == UNDEFINED_EPOCH:
            answer = (UNDEFINED_EPOCH, -1)
        else:
            found = lcache.end_offset_for(request.leader_epoch, lrep.leo)
            answer = (found.leader_epoch, found.end_offset)
        result = exchange.on_response(
            OffsetsForLeaderEpochResponse("t", 0, Errors.NONE, request.request_id, *answer)
        )
    raise AssertionError("the exchange did not converge")


def tolerate_cache_truncation(spec: Replication, before: State, after: State) -> str | None:
    """Finding F1: a become_follower step that the spec allows with Kafka's cache-based
    truncation offset, but not with its own record-based one."""
    try:
        step = check_step(CacheTruncation(spec.p), before, after)
    except RefinementError:
        return None
    if step is not None and step.action.startswith("become_follower"):
        return f"F1 {spec.p.truncation}: epoch-cache truncation offset differs from the spec's"
    return None


def test_finding_f1_kip101_cache_answer_differs_from_the_spec():
    """F1, step by step (kip101, three brokers, min.insync.replicas=1): b1 leads epoch 0
    and writes m0, which b2 and b3 fetch (their HWs stay 0). b1 is cut off: b2 leads epoch
    1 and writes m1. b2 is cut off: b3 leads epoch 2, with only m0 in its log. When b2
    comes back as b3's follower it asks where epoch 1 ends. b3's epoch cache is
    [(0, 0), (2, 1)]: Kafka answers offset 1 (the start of epoch 2) and b2 keeps m0. The
    spec's record-based rule finds no record of an epoch above 1 in b3's log and truncates
    b2 to its HW, 0, dropping m0. The implementation's step is the spec's step with Kafka's
    truncation offset."""
    config = refinement_config(truncation="kip101", min_isr=1)
    cluster = RefinementCluster(config, seed=1)
    spec = Replication(spec_params(config))
    prev = abstract(cluster)

    def event(fn):
        nonlocal prev
        fn()
        now = abstract(cluster)
        check_step(spec, prev, now)
        prev = now

    def settle():
        while cluster.deliverable():
            event(lambda: cluster.deliver(cluster.deliverable()[0].seq))

    def expire_session_of(node: str, alive: tuple[str, ...]):
        cluster.pause(node)
        cluster.advance(ms(700))
        for other in alive:
            cluster.tick(other)
        event(lambda: cluster.tick_controller())

    event(lambda: cluster.tick_controller())
    settle()
    cluster.raw_produce(1)
    settle()
    event(lambda: cluster.replica_fetch(2))
    event(lambda: cluster.replica_fetch(3))
    expire_session_of("b1", ("b2", "b3"))
    settle()
    cluster.raw_produce(2)
    settle()
    expire_session_of("b2", ("b3",))
    settle()
    cluster.resume("b2")
    cluster.tick("b2")  # its heartbeat is stale: it registers again, gets epoch 2
    # The controller's /brokers/ids watch fires: it sends b2 the published state.
    event(lambda: cluster.tick_controller())
    before = abstract(cluster)
    envelope = cluster.deliverable()[0]
    assert envelope.dst == "b2" and envelope.message.leader_epoch == 2
    cluster.deliver(envelope.seq)
    after = abstract(cluster)
    assert before.rep(2).log == ((0, 0), (1, 1)) and after.rep(2).log == ((0, 0),)
    assert spec.truncation_offset(before, 2, 3) == 0, "the spec: b2's HW"
    assert kafka_truncation_offset("kip101", before, 2, 3) == 1, "Kafka: b3's epoch 2 start"
    with pytest.raises(RefinementError, match="become_follower"):
        check_step(spec, before, after)
    step = check_step(CacheTruncation(spec.p), before, after)
    assert step is not None and step.action == "become_follower"
    assert tolerate_cache_truncation(spec, before, after) is not None


def test_the_docs_show_the_role_table():
    docs = (Path(__file__).resolve().parent.parent / "docs" / "impl.md").read_text()
    assert roles_to_mermaid() in docs and roles_to_markdown() in docs


# --------------------------------------------------------------------------------- machines


def run_machine(machine: type, examples: int, steps: int = 50) -> None:
    run_state_machine_as_test(machine, settings=machine_settings(examples, steps))


KIP320 = refinement_config(truncation="kip320", acks="all", min_isr=2)


def test_the_initial_world_is_the_spec_initial_state():
    cluster = RefinementCluster(KIP320, seed=7)
    spec = Replication(spec_params(KIP320))
    assert abstract(cluster) == next(iter(spec.init()))


KIP320_CRASHES_RUN = """
import json
from impl.controller_abstraction import SEEN
from impl.refinement_machine import COVERAGE, make_machine
from hypothesis.stateful import run_state_machine_as_test
from impl.refinement_machine import machine_settings
from model_tests.test_refinement import CRASH_VIOLATIONS, KIP320

machine = make_machine(KIP320, expect_violated=CRASH_VIOLATIONS, name="Kip320Crashes")
run_state_machine_as_test(machine, settings=machine_settings(250, 50))
print(json.dumps({"coverage": dict(COVERAGE), "brain_splits": SEEN["BrainSplit"]}))
"""


def test_kip320_acks_all_min_isr_2_refines_the_spec_with_crashes():
    """The configuration that must hold: every event is a spec step; every invariant the
    spec keeps under crashes (HW <= LEO, leader in ISR, one leader per epoch, no divergence
    below the HW, epochs only grow) holds.

    Run in a fresh interpreter, so that its derandomized search is the same in any test
    run: Hypothesis draws literal constants from the local modules loaded in the process
    (``hypothesis.internal.conjecture.providers._get_local_constants``), so importing the
    other test modules changes what it generates (here: from the ninth example on, and no
    ISR expansion in 250 examples). The simulation itself is deterministic: the event logs
    of the two processes are equal up to the first draw that differs (docs/impl.md)."""
    run = subprocess.run(
        [sys.executable, "-c", KIP320_CRASHES_RUN],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    fired = figures["coverage"]
    # The controller spec's properties were checked on states with two controllers.
    assert figures["brain_splits"] > 0, "no brain split in the runs"
    # Not vacuous: the interesting spec actions all happened.
    for action in (
        "controller_elect",
        "controller_shrink_isr",
        "controller_failover",
        "become_leader",
        "become_follower_fenced",
        "leader_write",
        "fetch",
        "shrink_isr_lagging",
        "expand_isr_caught_up",
        "crash",
        "restart",
        "flush",
    ):
        assert fired.get(action, 0) > 0, f"{action} never happened: {fired}"


Kip320NoCrash = make_machine(
    KIP320, disabled=frozenset({"crash", "controller_move"}), name="Kip320NoCrash"
)
TestKip320WithoutCrashesKeepsEveryInvariant = Kip320NoCrash.TestCase
"""No crash: the spec keeps every invariant (no acknowledged write lost, logs of the ISR
agree below the HW), and so must the implementation. (A ``TestCase``, so that
``pytest --hypothesis-show-statistics`` reports on it.)"""
TestKip320WithoutCrashesKeepsEveryInvariant.settings = machine_settings(150)


@pytest.mark.parametrize("truncation", ["high_watermark", "kip101", "kip279"])
def test_unfenced_variants_refine_the_spec_step_by_step(truncation):
    """The variants before KIP-320 lose data and diverge (the spec shows it); each step is
    still a spec step, except the documented finding F1 (see ``CacheTruncation``)."""
    config = refinement_config(truncation=truncation, acks="all", min_isr=1)
    machine = make_machine(
        config,
        expect_violated=UNFENCED_VIOLATIONS,
        tolerate=tolerate_cache_truncation,
        name=f"Unfenced_{truncation}",
    )
    run_machine(machine, examples=120)


def test_unclean_election_and_acks_1_refine_the_spec():
    config = refinement_config(truncation="kip320", acks="1", min_isr=1, unclean=True)
    before = COVERAGE.copy()
    machine = make_machine(
        config,
        expect_violated=UNFENCED_VIOLATIONS,
        always_on=frozenset({"fail_leader"}),
        name="UncleanAcks1",
    )
    run_machine(machine, examples=150)
    assert (COVERAGE - before)["unclean_elect"] > 0


def test_the_machine_reports_a_spec_invariant_the_implementation_breaks():
    """The invariant check can fail: the same machine, checking every invariant in a
    configuration that breaks one (unclean election), driven by the steps Hypothesis
    shrank a failure to (``unclean`` with ``fail_leader``: about 10 minutes to find and
    shrink, too slow for the default run)."""
    config = refinement_config(truncation="kip320", acks="all", min_isr=1, unclean=True)
    machine: Any = make_machine(config, always_on=frozenset({"fail_leader"}), name="UncleanLoss")()
    machine.start(seed=0, swarm=set(), bootstrap=True)
    machine.fail_leader(resume=False)
    machine.tick_broker(b=2, delay=ms(200))
    machine.fail_leader(resume=True)
    machine.produce(b=2)
    machine.tick_controller(delay=0)
    with pytest.raises(InvariantViolation, match="invariant StrongIsr fails"):
        machine.settle()


@pytest.mark.slow
@pytest.mark.parametrize("truncation", ["kip320", "kip279", "kip101", "high_watermark"])
def test_deep_refinement_runs(truncation):
    """Long runs (``pytest -m slow``): more and longer test cases per variant."""
    epoch_fenced = fenced(truncation)
    config = refinement_config(truncation=truncation, min_isr=2 if epoch_fenced else 1)
    machine = make_machine(
        config,
        expect_violated=CRASH_VIOLATIONS if epoch_fenced else UNFENCED_VIOLATIONS,
        tolerate=None if epoch_fenced else tolerate_cache_truncation,
        name=f"Deep_{truncation}",
    )
    run_machine(machine, examples=3000, steps=100)


# --------------------------------------------------------------------------------- broken


class AckBeforeHwReplica(Replica):
    """Broken: acknowledges acks=all writes as soon as they are appended."""

    def handle_produce(self, src, msg, now, out):
        super().handle_produce(src, msg, now, out)
        if msg.acks == -1 and self.purgatory:
            for p in self.purgatory:
                out.note(
                    Acked(
                        self.broker_id,
                        self.topic,
                        self.partition,
                        p.leader_epoch,
                        p.base_offset,
                        p.last_offset - p.base_offset + 1,
                        -1,
                    )
                )
            self.purgatory = []


class AckBeforeHwBroker(Broker):
    replica_class = AckBeforeHwReplica


class AckBeforeHwCluster(RefinementCluster):
    broker_class = AckBeforeHwBroker


class TruncateOnRestartBroker(Broker):
    """Broken: on start-up truncates every log to its checkpointed HW, whatever the
    truncation variant (the pre-KIP-101 habit, applied to a KIP-320 broker)."""

    def _load(self, now):
        super()._load(now)
        for replica in self.replicas.values():
            replica.log.truncate_to(replica.hw)


class TruncateOnRestartCluster(RefinementCluster):
    broker_class = TruncateOnRestartBroker


def _failure(machine: type, examples: int, steps: int = 50) -> BaseException:
    with pytest.raises((RefinementError, InvariantViolation)) as info:
        run_machine(machine, examples, steps)
    return info.value


def test_a_broker_acknowledging_before_the_hw_is_caught():
    machine = make_machine(
        KIP320,
        expect_violated=CRASH_VIOLATIONS,
        cluster_class=AckBeforeHwCluster,
        disabled=frozenset(OPTIONAL_RULES),
        name="AckBeforeHw",
    )
    error = _failure(machine, examples=500, steps=20)
    text = str(error)
    assert isinstance(error, RefinementError), text
    assert "is no step of the spec" in text
    assert "leader_write(r=" in text, "the message names the spec action it could not match"
    reproduction = "\n".join(getattr(error, "__notes__", []))
    assert "state.teardown()" in reproduction
    assert "state.produce(" in reproduction or "state.write_to_leader(" in reproduction


def test_a_broker_truncating_to_its_hw_on_restart_is_no_spec_step():
    """The scripted counterpart of the Hypothesis test below (which is slow: shrinking
    takes minutes): a record beyond the HW survives a crash; the broken broker drops it on
    restart, which no spec action does."""
    config = refinement_config(truncation="kip320", min_isr=1)
    cluster = TruncateOnRestartCluster(config, seed=1)
    spec = Replication(spec_params(config))
    prev = abstract(cluster)

    def event(what, fn):
        nonlocal prev
        fn()
        now = abstract(cluster)
        check_step(spec, prev, now, what)
        prev = now

    event("elect", lambda: cluster.tick_controller())
    for envelope in cluster.deliverable():
        event("deliver", lambda e=envelope: cluster.deliver(e.seq))
    leader = prev.quorum.leader
    assert leader == 1
    cluster.raw_produce(leader)
    [produce] = [e for e in cluster.deliverable() if isinstance(e.message, Produce)]
    event("produce", lambda: cluster.deliver(produce.seq))
    event("flush", lambda: cluster.flush(leader))
    event("crash", lambda: cluster.crash(f"b{leader}"))
    event("failover", lambda: cluster.tick_controller())
    with pytest.raises(RefinementError, match=r"restart\(r=1\): differs in replica 1.log"):
        event("restart", lambda: cluster.restart(f"b{leader}"))


@pytest.mark.slow
def test_a_broker_truncating_to_its_hw_on_restart_is_caught():
    machine = make_machine(
        KIP320,
        expect_violated=CRASH_VIOLATIONS,
        cluster_class=TruncateOnRestartCluster,
        always_on=frozenset({"crash"}),
        disabled=frozenset(OPTIONAL_RULES) - {"crash"},
        name="TruncateOnRestart",
    )
    error = _failure(machine, examples=2000, steps=30)
    text = str(error)
    assert isinstance(error, RefinementError), text
    assert "restart" in text and "restart(r=" in text, text
    reproduction = "\n".join(getattr(error, "__notes__", []))
    assert "state.restart(" in reproduction


# --------------------------------------------------------------------------------- scenarios


IMPL_SCENARIOS = SCENARIOS / "impl"


class ImplScenario:
    """Runs a scenario file's commands against a refinement-mode cluster.

    Commands (``name key=value ...``):

    - ``cluster brokers=N truncation=T acks=A min-isr=M [unclean=yes]`` (first);
    - ``controller``: one controller tick (failure handling or an election);
    - ``deliver [to=NODE] [type=MessageType]``: the oldest deliverable message that matches;
    - ``deliver-all``: every deliverable message, oldest first;
    - ``produce to=bN``: a producer request to broker N, delivered at once;
    - ``fetch bN``: one replica fetch round trip of follower N;
    - ``tick bN [advance=MS]``: let MS milliseconds pass, then the broker's periodic work;
    - ``advance ms=MS``: let time pass;
    - ``crash bN [keep-records=K] [extra-bytes=E]``: power loss keeping the first K records
      of the log (those flushed at least) and E bytes of the next batch (a torn write);
    - ``restart bN``, ``flush bN``, ``pause NODE``, ``resume NODE``, ``isolate NODE``,
      ``partition NODE NODE`` (both directions), ``heal``.

    Output per command: the implementation's events with the spec action each matched
    (``stutter`` when the abstract state did not move), any recovery report, then the
    abstract state and the spec invariants it violates.
    """

    def __init__(self) -> None:
        self.cluster: RefinementCluster | None = None
        self.spec: Replication | None = None
        self.prev: State | None = None
        self.lines: list[str] = []

    def run(self, command: str) -> list[str]:
        name, *words = shlex.split(command)
        args = [w for w in words if "=" not in w]
        kwargs = dict(w.split("=", 1) for w in words if "=" in w)
        handler = getattr(self, "do_" + name.replace("-", "_"), None)
        if handler is None:
            raise ValueError(f"unknown scenario command {name!r}")
        self.lines = []
        handler(*args, **kwargs)
        return self.lines + self._state()

    @property
    def c(self) -> RefinementCluster:
        assert self.cluster is not None, "the scenario must start with 'cluster'"
        return self.cluster

    def _event(self, what: str, fn) -> None:
        assert self.spec is not None and self.prev is not None
        fn()
        now = abstract(self.c)
        step = check_step(self.spec, self.prev, now, what)
        self.lines.append(f"{what}: {step.describe() if step else 'stutter'}")
        self.prev = now

    def _state(self) -> list[str]:
        assert self.spec is not None and self.prev is not None
        lines = describe_state(self.spec, self.prev).split("\n")
        broken = [
            d.name for d in self.spec.invariants() if not getattr(self.spec, d.method)(self.prev)
        ]
        lines.append("  violated: " + (", ".join(broken) if broken else "none"))
        return lines

    # commands ------------------------------------------------------------------------

    def do_cluster(self, brokers="2", truncation="kip320", acks="all", unclean="no", **kw):
        config = refinement_config(
            truncation=truncation,
            acks=acks,
            min_isr=int(kw.get("min-isr", "1")),
            brokers=int(brokers),
            unclean=unclean == "yes",
        )
        self.cluster = RefinementCluster(config, seed=int(kw.get("seed", "1")))
        self.spec = Replication(spec_params(config))
        self.prev = abstract(self.cluster)

    def do_controller(self):
        self._event("controller tick", lambda: self.c.tick_controller())

    def _matching(self, to: str | None, kind: str | None):
        for envelope in self.c.deliverable():
            if to is not None and envelope.dst != to:
                continue
            if kind is not None and type(envelope.message).__name__ != kind:
                continue
            return envelope
        return None

    def _deliver(self, envelope) -> None:
        msg = envelope.message
        what = f"deliver {type(msg).__name__} {envelope.src}->{envelope.dst}"
        if hasattr(msg, "leader_epoch") and hasattr(msg, "isr"):
            what += f" (epoch {msg.leader_epoch}, leader {msg.leader}, isr {sorted(msg.isr)})"
        self._event(what, lambda: self.c.deliver(envelope.seq))

    def do_deliver(self, to=None, type=None):
        envelope = self._matching(to, type)
        assert envelope is not None, f"no deliverable message to={to} type={type}"
        self._deliver(envelope)

    def do_deliver_all(self):
        for _ in range(100):
            ready = self.c.deliverable()
            if not ready:
                return
            self._deliver(ready[0])

    def do_produce(self, to):
        b = self.c.broker_id(to)
        self._event(f"send Produce to {to}", lambda: self.c.raw_produce(b))
        envelope = self._matching(to, "Produce")
        assert envelope is not None, f"the produce to {to} was not sent"
        self._deliver(envelope)

    def do_fetch(self, node):
        b = self.c.broker_id(node)
        self._event(f"fetch by {node}", lambda: self.c.replica_fetch(b))

    def do_tick(self, node, advance="0"):
        delta = ms(int(advance))

        def tick() -> None:
            self.c.advance(delta)
            self.c.tick(node)

        self._event(f"tick {node} after {advance}ms", tick)

    def do_advance(self, **kw):
        delta = ms(int(kw["ms"]))
        self._event(f"{kw['ms']}ms pass", lambda: self.c.advance(delta))

    def do_crash(self, node, **kw):
        b = self.c.broker_id(node)
        torn = {}
        if "keep-records" in kw:
            torn = self._torn_for(b, int(kw["keep-records"]), int(kw.get("extra-bytes", "0")))
        shown = ", ".join(f"{Path(p).name} {n}" for p, n in sorted(torn.items())) or "nothing"
        self._event(
            f"crash {node} (unflushed bytes kept: {shown})", lambda: self.c.crash(node, torn=torn)
        )

    def _torn_for(self, b: int, keep: int, extra: int) -> dict[str, int]:
        broker = self.c.brokers[b]
        assert broker is not None
        replica = broker.replica(self.c.config.topic, 0)
        assert replica is not None
        disk = self.c.disks[b]
        path = replica.log.active_segment.log_path
        data = disk.read(path)
        flushed = len(data) - disk.unflushed_bytes(path)
        position, offset = 0, replica.log.active_segment.base_offset
        while offset < keep:
            header = read_header(data, position)
            assert header is not None, f"b{b} has no record {offset} to keep"
            position += header.size
            offset = header.last_offset + 1
        kept = position + extra - flushed
        assert kept >= 0, f"b{b} flushed more than {keep} records"
        return {path: kept}

    def do_restart(self, node):
        self._event(f"restart {node}", lambda: self.c.restart(node))
        broker = self.c.brokers[self.c.broker_id(node)]
        assert broker is not None
        for (topic, partition), report in sorted(broker.recovered.items()):
            self.lines.append(
                f"recovery of {topic}-{partition}: {len(report.scans)} segment(s) scanned, "
                f"{report.truncated_bytes} bytes cut, log end {report.log_end_offset}"
            )
            for error in report.errors:
                self.lines.append(f"  because {error.split(': ', 1)[-1]}")

    def do_flush(self, node):
        self._event(f"flush {node}", lambda: self.c.flush(self.c.broker_id(node)))

    def do_pause(self, node):
        self._event(f"pause {node}", lambda: self.c.pause(node))

    def do_resume(self, node):
        self._event(f"resume {node}", lambda: self.c.resume(node))

    def do_isolate(self, node):
        self._event(f"isolate {node}", lambda: self.c.network.isolate(node))

    def do_partition(self, a, b):
        self._event(f"partition {a} | {b}", lambda: self.c.partition([(a, b), (b, a)]))

    def do_heal(self):
        self._event("heal", lambda: self.c.heal())


def replay(path: Path) -> str:
    """The scenario file's text with every expectation replaced by what happens now."""
    items = parse_scenario(path.read_text())
    scenario = ImplScenario()
    actual = []
    for kind, line, expected in items:
        if kind == "case":
            expected = scenario.run(line)
        actual.append((kind, line, expected))
    return render_scenario(actual)


@pytest.mark.parametrize("path", sorted(IMPL_SCENARIOS.glob("*.txt")), ids=lambda p: p.stem)
def test_impl_scenario(path: Path, rewrite: bool):
    assert render_scenario(parse_scenario(path.read_text())) == path.read_text(), (
        "the file must round-trip"
    )
    assert_matches_file(path, replay(path), rewrite)


def test_scenario_replay_reports_a_divergence(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("cluster brokers=2\n----\nnot what it prints\n")
    assert replay(path) != path.read_text()
    with pytest.raises(ValueError, match="expected '----'"):
        parse_scenario("controller\nno separator\n")
    with pytest.raises(ValueError, match="unknown scenario command"):
        ImplScenario().run("frobnicate b1")


# --- the controller spec on the same runs (impl.controller_abstraction) ------------------


def _zombie_machine(bugs: frozenset[str]) -> Any:
    """b1 is elected and leads; /controller is deleted and b2 wins (epoch 2), resending
    the published state; every message is delivered. b1 is now a zombie."""
    config = refinement_config(truncation="kip320", acks="all", min_isr=1, bugs=bugs)
    machine: Any = make_machine(config, name="Zombie")()
    machine.start(seed=0, swarm=set(), bootstrap=True)
    assert machine.c.store.controller == 1
    machine.controller_moves()
    machine.tick_controller(delay=0)
    assert machine.c.store.controller == 2 and set(machine.c.controllers) == {1, 2}
    machine.settle()
    return machine


def _redeliver_the_first_leader_and_isr(machine: Any) -> None:
    c = machine.c
    first = next(i for i, (_, dst, m) in enumerate(c.sent_leader_and_isr) if dst == "b3")
    assert c.sent_leader_and_isr[first][2].controller_epoch == 1
    assert c.redeliver(first)
    machine._after("redeliver the zombie's first LeaderAndIsr to b3")


def test_a_zombies_stale_request_is_rejected_and_the_controller_spec_holds():
    machine = _zombie_machine(frozenset())
    _redeliver_the_first_leader_and_isr(machine)
    assert machine.c.stats["stale_controller_rejected"] == 1


def test_the_controller_spec_catches_brokers_that_accept_stale_controller_epochs():
    machine = _zombie_machine(frozenset({"accept_stale_controller_epoch"}))
    with pytest.raises(InvariantViolation, match="NoStaleControllerEpochApplied"):
        _redeliver_the_first_leader_and_isr(machine)


def _zombie_decides(machine: Any) -> None:
    """b3's session expires; the new controller b2 takes it out of the ISR; then the
    zombie b1 decides the same from its stale context."""
    c = machine.c
    c.pause("b3")
    machine._after("pause b3")
    c.advance(ms(700))
    for node in ("b1", "b2"):  # their heartbeats keep their sessions
        c.tick(node)
        machine._after(f"tick {node}")
    c.tick_controller()
    machine._after("controller tick: b3's session expired, b2 shrinks the ISR")
    assert 3 not in c.store.registrations and set(c.store.registrations) == {1, 2}
    c.tick_role(1)
    machine._after("zombie controller b1 ticks")


def test_a_zombies_write_is_refused_by_the_store_and_the_controller_spec_holds():
    machine = _zombie_machine(frozenset())
    _zombie_decides(machine)
    assert 1 not in machine.c.controllers, "the zombie resigned on BADVERSION"


def test_the_refinement_catches_a_zombies_unconditional_write():
    """Without the store's fence the zombie's write lands: the store's partition state is
    then no step of the replication spec (a leader epoch handed out from a stale view)."""
    machine = _zombie_machine(frozenset({"unconditional_write"}))
    with pytest.raises((RefinementError, InvariantViolation)) as info:
        _zombie_decides(machine)
    assert "zombie controller b1 ticks" in str(info.value)
    assert machine.c.stats["zombie_writes"] == 1


def test_controlled_shutdown_refines_the_spec():
    """Controlled shutdown (issue 17): each event of it -- the leadership moved to another
    ISR member, the broker taken out of the ISR, the clean stop -- is a step of
    ``spec.replication`` (the core ``spec.rebalance`` composes with), and every invariant
    holds. Partial refinement: the spec's ``shutting`` set is not abstracted."""
    before, moved = COVERAGE.copy(), STATS["controlled_shutdown_moved_leader"]
    machine = make_machine(
        KIP320,
        expect_violated=CRASH_VIOLATIONS,
        always_on=frozenset({"controlled_shutdown"}),
        name="ControlledShutdown",
    )
    run_machine(machine, examples=60)
    fired = COVERAGE - before
    assert STATS["controlled_shutdown_moved_leader"] > moved, "no leadership moved"
    assert fired["controller_shrink_isr"] > 0 and fired["crash"] > 0, dict(fired)
