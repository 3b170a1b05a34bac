"""Explained losses: every run that loses acknowledged writes names the mechanism, and each
known-unsafe configuration's loss is explained by its own mechanism (and never as
``unexplained``)."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
from click.testing import CliRunner

from impl.log.leader_epoch import LeaderEpochCache
from impl.timeline import (
    Ack,
    Crash,
    Divergence,
    Election,
    Event,
    Leadership,
    Recovery,
    Truncation,
    epoch_mismatches,
)
from jepsen_py.cli import main
from jepsen_py.explain import (
    MECHANISMS,
    DivergenceExplanation,
    explain_divergences,
    explain_losses,
)
from jepsen_py.generator import SECOND
from jepsen_py.history.op import Op
from jepsen_py.nemesis import ScheduleStep
from jepsen_py.runner import RunOutcome, TestConfig, run_test
from jepsen_py.scenarios import (
    ACKS_1_LEADER_KILLS,
    KAFKA_TODAY,
    LAST_REPLICA_STANDING,
    PRE_KIP_101,
    jepsen_2013,
)

PINNED_LAYOUT = ((1, 2, 3), (1, 2, 3))
"""The topic's layout the pinned runs below ran with: b1 first in every partition
(``--replica-assignment 1:2:3,1:2:3``)."""


def mechanisms(outcome: RunOutcome) -> set[str]:
    check = outcome.check
    assert check.lost_acknowledged_writes > 0, "the run lost nothing"
    assert sum(e.writes for e in check.loss_explanations) == check.lost_acknowledged_writes
    return set(check.loss_mechanisms)


def test_the_last_replica_standing_is_explained_as_kip_966() -> None:
    outcome = run_test(LAST_REPLICA_STANDING, 1)
    assert mechanisms(outcome) == {"last-replica-standing"}
    (explanation,) = outcome.check.loss_explanations
    mechanism = MECHANISMS[explanation.mechanism]
    assert mechanism.safe
    assert "KIP-966" in mechanism.reference
    story = "\n".join(explanation.story)
    assert "changes the ISR to [1]" in story, "the shrink that made b1 the last ISR member"
    assert "b1 loses power" in story and "truncates its log" in story


def test_the_last_replica_standing_losing_the_write_to_its_disk_is_named() -> None:
    # LAST_REPLICA_STANDING with a damaged disk instead of a power loss: the process dies
    # (page cache kept) and its active segment is found cut short; once the only ISR
    # member, it is elected again and the followers truncate to it.
    steps = list(LAST_REPLICA_STANDING.schedule or ())
    steps[1] = ScheduleStep(14 * SECOND, "start-disk-truncate", {"node": "b1", "bytes": 10**6})
    steps[3] = ScheduleStep(17 * SECOND, "stop-disk-truncate")
    outcome = run_test(attrs.evolve(LAST_REPLICA_STANDING, schedule=tuple(steps)), 1)
    assert mechanisms(outcome) == {"last-replica-disk-damage"}
    assert MECHANISMS["last-replica-disk-damage"].safe
    (explanation,) = outcome.check.loss_explanations
    assert "process dies (page cache kept" in "\n".join(explanation.story)


def test_a_record_read_but_never_acknowledged_then_lost_is_explained() -> None:
    # Overlapping swarm faults (seed 10): the ISR of t-1 shrinks to b2, whose HW still
    # advances (no KIP-966): a consumer reads offset 56, whose send was refused
    # (min.insync.replicas); b2, the controller too, then loses power and recovers without
    # it. No controller handled its failure meanwhile (the others were cut off from the
    # store), so it leads the same epoch again: the last replica standing. No acknowledged
    # write is lost, but the read record is gone: explained.
    config = attrs.evolve(
        KAFKA_TODAY,
        replica_assignment=PINNED_LAYOUT,
        nemesis=("partition-bridge", "kill-controller", "sigkill-leader"),
        interval_ns=8 * SECOND,
        rate=50.0,
        concurrency=2,
        max_faults=2,
    )
    check = run_test(config, 10).check
    assert check.lost_acknowledged_writes == 0 and "inconsistent-offsets" in check.violations
    (explanation,) = check.read_loss_explanations
    assert (explanation.key, explanation.first_offset) == ("t-1", 56)
    assert check.read_loss_mechanisms == ["last-replica-standing"]
    assert MECHANISMS["last-replica-standing"].safe


def test_a_leader_back_in_its_own_epoch_after_a_power_loss_is_the_last_replica_standing() -> None:
    # The same faults with min.insync.replicas=1: b2 leads both partitions with ISR [2] and
    # is the controller when it loses power; the other brokers are cut off from the store,
    # so no controller handles its failure, and back up it leads epoch 2 again with the
    # shorter log it recovered. No leader of a later epoch is involved: the explainer must
    # still see the last replica standing (it once called these 38 writes unexplained).
    config = attrs.evolve(
        KAFKA_TODAY,
        min_isr=1,
        replica_assignment=PINNED_LAYOUT,
        nemesis=("partition-bridge", "kill-controller", "sigkill-leader"),
        interval_ns=8 * SECOND,
        rate=50.0,
        concurrency=2,
        max_faults=2,
    )
    outcome = run_test(config, 10)
    assert mechanisms(outcome) == {"last-replica-standing"}
    assert outcome.check.lost_acknowledged_writes == 38
    assert {(e.leader, e.leader_epoch) for e in outcome.check.loss_explanations} == {(2, 2)}
    story = "\n".join(outcome.check.loss_explanations[0].story)
    # Acknowledged in epoch 2 and lost to b2 leading epoch 2 again: no election between.
    assert "acknowledged by b2 in epoch 2" in story and "b2 becomes leader in epoch 2" in story
    assert " leads in epoch" not in story.split("b2 loses power")[1].split("restarts")[0]


def test_an_unclean_election_is_explained_as_such() -> None:
    assert mechanisms(run_test(jepsen_2013(unclean=True), 1)) == {"unclean-leader-election"}


def test_whole_cluster_power_loss_is_explained_as_correlated() -> None:
    config = attrs.evolve(
        KAFKA_TODAY, nemesis=("kill-all",), partitions=1, time_limit_ns=20 * SECOND
    )
    assert mechanisms(run_test(config, 1)) == {"correlated-power-loss"}


def test_acks_1_losses_are_explained_as_a_leader_failure() -> None:
    assert mechanisms(run_test(ACKS_1_LEADER_KILLS, 2)) == {"acks-leader-failure"}


def test_pre_kip_101_losses_are_explained_as_hw_truncation() -> None:
    assert mechanisms(run_test(PRE_KIP_101, 3)) == {"hw-truncation"}


def test_a_truncation_before_the_acknowledgement_is_still_the_truncation() -> None:
    # Pre-KIP-101, swarm seed 29 with BUGGIFY: b1 is leader again in epoch 1 and b2, made
    # its follower, truncates to its high watermark (49 -> 46). A fetch b2 sent before the
    # truncation reaches b1 after it: b1 takes b2's log end as 49, advances its high
    # watermark and acknowledges 46 and 47, which b2 no longer has. b1 crashes; b2, in the
    # ISR, leads without them. The truncation came *before* the acknowledgement; the
    # explainer once looked only after it and called the two writes unexplained.
    # bug_hunt.py's pre_kip101 entry drew this configuration for seed 29 (the swarm of
    # session 10; the swarm's draws have changed since, the run is pinned as it was).
    faults = (
        "partition-asymmetric,partition-controller,kill-leader,sigkill,sigkill-leader,pause,"
        "pause-controller,controlled-shutdown,preferred-election,loss,duplicate,delay,reorder,"
        "disk-lose-unflushed,disk-truncate,partition-followers,kill-last-isr"
    )
    config = TestConfig(
        nemesis=tuple(faults.split(",")),
        buggify=True,
        truncation="high_watermark",
        replica_assignment=PINNED_LAYOUT,
        interval_ns=SECOND,
        rate=50.0,
        concurrency=4,
    )
    outcome = run_test(config, 29)
    assert mechanisms(outcome) == {"hw-truncation"}
    assert outcome.check.lost_acknowledged_writes == 2
    story = "\n".join(outcome.check.loss_explanations[0].story)
    assert "b2 truncates its log 49 -> 46 (following b1, epoch 1)" in story, story


def _send(index: int, time: int, offset: int, type_: str = "ok") -> Op:
    value = {"offset": offset, "value": index} if type_ == "ok" else index
    return Op(index, time, 0, type_, "send", "t-0", value)


def _unexplained_loss() -> tuple[list[Op], list[Event]]:
    """A write at offset 3, acknowledged in epoch 0 and lost, though every later leader had
    a longer log and nobody crashed or truncated."""
    history = [_send(0, 1, 3, "invoke"), _send(1, 2, 3)]
    events: list[Event] = [
        Election(0, "t", 0, 0, 1, (1, 2, 3), (1, 2, 3)),
        Leadership(0, 1, "t", 0, 0, 0, 0),
        Ack(2, 1, "t", 0, 0, 3, 1),
        Election(5, "t", 0, 1, 2, (2, 3), (1, 2, 3)),
        Leadership(5, 2, "t", 0, 1, 10, 9),
    ]
    return history, events


def test_a_loss_no_mechanism_accounts_for_is_unexplained() -> None:
    # Nothing known explains `_unexplained_loss` (a checker or cluster bug).
    history, events = _unexplained_loss()
    (explanation,) = explain_losses([history[1]], history, events, acks="all", truncation="kip320")
    assert explanation.mechanism == "unexplained" and explanation.leader is None
    assert not MECHANISMS["unexplained"].safe


def test_a_loss_where_the_logs_parted_takes_the_divergences_mechanism() -> None:
    # `kip279_3_replicas`, swarm seed 4 (--max-faults 3): a follower kept records its
    # stale leader had cut away and the logs parted at offsets 273..274; the write read
    # at 273 is replaced there, and no leader's failure explains it. The divergence does.
    history, events = _unexplained_loss()
    parted = DivergenceExplanation("t-0", "stale-epoch-truncation", 2, 3, 4, 3, 2, 1, ("...",))
    (explanation,) = explain_losses(
        [history[1]], history, events, acks="all", truncation="kip279", diverged=[parted]
    )
    assert explanation.mechanism == "stale-epoch-truncation"
    assert (explanation.leader, explanation.leader_epoch) == (2, 1)
    # Another key's divergence, or one at other offsets, explains nothing here.
    for other in (attrs.evolve(parted, key="t-1"), attrs.evolve(parted, first_offset=4)):
        (explanation,) = explain_losses(
            [history[1]], history, events, acks="all", truncation="kip279", diverged=[other]
        )
        assert explanation.mechanism == "unexplained"


def test_a_leader_that_lost_power_while_others_were_in_the_isr() -> None:
    history = [_send(0, 1, 0, "invoke"), _send(1, 2, 0)]
    events = [
        Election(0, "t", 0, 0, 1, (1, 2, 3), (1, 2, 3)),
        Leadership(0, 1, "t", 0, 0, 0, 0),
        Ack(2, 1, "t", 0, 0, 0, 1),
        Crash(3, 1, True, 100, (("t", 0, 1, 1),)),
        Recovery(4, 1, (("t", 0, 0, 0),)),
        Election(5, "t", 0, 1, 1, (1, 2, 3), (1, 2, 3)),
        Leadership(5, 1, "t", 0, 1, 0, 0),
        Truncation(6, 2, "t", 0, 1, 1, 1, 0),
    ]
    (explanation,) = explain_losses([history[1]], history, events, acks="all", truncation="kip320")
    assert explanation.mechanism == "unclean-shutdown-leader"
    assert explanation.leader == 1 and explanation.leader_epoch == 1


def test_a_follower_that_lost_power_before_the_acknowledgement_and_then_led() -> None:
    # The safe configuration, swarm seed 50 (--max-faults 3): b2 fetched the write and
    # lost power; the leader b1, going by b2's last fetch, acknowledged it; b2 restarted
    # with an empty log and, while the controller that would have taken it out of the ISR
    # was paused, the next controller elected it from the ISR. The crash came *before* the
    # acknowledgement: the explainer once looked only after it and called the writes
    # unexplained, a false alarm of the safe configuration.
    history = [_send(0, 1, 0, "invoke"), _send(1, 4, 0)]
    events = [
        Election(0, "t", 0, 0, 1, (1, 2, 3), (1, 2, 3)),
        Leadership(0, 1, "t", 0, 0, 0, 0),
        Crash(3, 2, True, 100, (("t", 0, 1, 0),)),
        Ack(4, 1, "t", 0, 0, 0, 1),
        Recovery(5, 2, (("t", 0, 0, 0),)),
        Election(6, "t", 0, 1, 2, (1, 2), (1, 2, 3)),
        Leadership(6, 2, "t", 0, 1, 0, 0),
    ]
    (explanation,) = explain_losses([history[1]], history, events, acks="all", truncation="kip320")
    assert explanation.mechanism == "unclean-shutdown-leader"
    assert explanation.leader == 2 and explanation.leader_epoch == 1
    # A crash before the write was even sent took nothing of it: not this mechanism.
    early = [e if not isinstance(e, Crash) else attrs.evolve(e, time=0) for e in events]
    (explanation,) = explain_losses([history[1]], history, early, acks="all", truncation="kip320")
    assert explanation.mechanism == "unexplained"


def test_a_read_record_at_an_offset_acknowledged_before_in_an_earlier_epoch() -> None:
    # The safe configuration with 2 to 4 more client threads, swarm seed 39: offset 0 was
    # acknowledged in epoch 0, cut away by power losses, written again in epoch 1 with
    # another record that a poll read, then lost once more when b1, the last ISR member,
    # lost power and led again. The read's explanation once took epoch 0's
    # acknowledgement for its own and found no leader after the read: "unexplained".
    read = Op(7, 7, 0, "ok", "send", "t-0", {"offset": 0, "value": "second"})
    events = [
        Election(0, "t", 0, 0, 1, (1,), (1,)),
        Leadership(0, 1, "t", 0, 0, 0, 0),
        Ack(2, 1, "t", 0, 0, 0, 1),
        Crash(3, 1, True, 100, (("t", 0, 1, 1),)),
        Recovery(4, 1, (("t", 0, 0, 0),)),
        Election(5, "t", 0, 1, 1, (1,), (1,)),
        Leadership(5, 1, "t", 0, 1, 0, 0),
        Crash(8, 1, True, 100, (("t", 0, 1, 1),)),
        Recovery(9, 1, (("t", 0, 0, 0),)),
        Election(10, "t", 0, 2, 1, (1,), (1,)),
        Leadership(10, 1, "t", 0, 2, 0, 0),
    ]
    (explanation,) = explain_losses(
        [read], [read], events, acks="all", truncation="kip320", read=True
    )
    assert explanation.mechanism == "last-replica-standing"
    assert explanation.leader == 1 and explanation.leader_epoch == 2
    # An acknowledged send is the write its acknowledgement covers: the same events,
    # read as an ``ok`` at 7, still name epoch 0's acknowledgement, and nothing after it
    # explains a loss that epoch 1's leader (with an empty log) already showed.
    (explanation,) = explain_losses([read], [read], events, acks="all", truncation="kip320")
    assert explanation.mechanism == "unexplained"


def test_kmodel_test_prints_and_stores_the_explanation(tmp_path: Path) -> None:
    args = ["test", "--nemesis", "kill-all", "--partitions", "1", "--time-limit", "20s"]
    args += ["--seed", "1", "--no-reports", "--store", str(tmp_path)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert "correlated-power-loss" in result.output and "loses power" in result.output
    (run,) = [p for p in (tmp_path / "kafka").iterdir() if not p.is_symlink()]
    results = json.loads((run / "results.json").read_text())
    assert {e["mechanism"] for e in results["loss_explanations"]} == {"correlated-power-loss"}
    kinds = {json.loads(line)["event"] for line in (run / "cluster.jsonl").read_text().splitlines()}
    assert {"elected", "crashed", "recovered", "became-leader"} <= kinds
    replayed = CliRunner().invoke(main, ["replay", str(run)])
    assert "correlated-power-loss" in replayed.output


def test_epoch_mismatches_are_the_offsets_where_two_epoch_caches_disagree() -> None:
    def cache(*entries: tuple[int, int]) -> LeaderEpochCache:
        return LeaderEpochCache(entries=entries)

    # KIP-279's fast failover: b3 kept epoch 2's records from 43 on; b2 never had epoch 2
    follower = cache((0, 0), (1, 25), (2, 43))
    leader = cache((0, 0), (1, 25), (3, 48))
    assert list(epoch_mismatches(follower, 46, leader, 60)) == [(43, 2, 1)]
    # the same records: nothing, whatever entries begin at or past a log end
    assert list(epoch_mismatches(follower, 43, leader, 60)) == []
    assert list(epoch_mismatches(cache((0, 0), (4, 10)), 10, cache((0, 0)), 10)) == []


def test_a_divergence_is_named_by_the_truncation_rule_and_only_where_the_logs_diverged() -> None:
    def op(index: int, records: list[list[int]]) -> Op:
        return Op(
            index=index,
            time=index,
            process=0,
            type="ok",
            f="poll",
            key="t-0",
            value={"records": records},
        )

    witness = [op(1, [[42, 7], [43, 8]]), op(2, [[42, 7], [43, 9]])]
    diverged = Divergence(5, 3, "t", 0, 2, 3, 43, 2, 1, 46)
    elsewhere = attrs.evolve(diverged, partition=1)
    for rule, name in (("kip101", "epoch-truncation"), ("kip320", "unexplained")):
        (found,) = explain_divergences([witness], [], [diverged], truncation=rule)
        assert (found.mechanism, found.first_offset, found.follower) == (name, 43, 3)
    # a divergence of another partition, or above the offset, explains nothing
    assert explain_divergences([witness], [], [elsewhere], truncation="kip101") == []
    above = attrs.evolve(diverged, offset=44)
    assert explain_divergences([witness], [], [above], truncation="kip101") == []


def test_a_divergence_from_an_epoch_led_twice_across_a_power_loss_is_an_exposure() -> None:
    """A leader that led epoch 6, lost its log in a power loss and led epoch 6 again from
    the shorter log (no controller handled the crash) holds another epoch-6 record at an
    offset where a follower kept the first log's: every truncation rule keeps it, so the
    divergence is the unclean shutdown's (KIP-966), not the rule's gap."""

    def poll(index: int, value: int) -> Op:
        return Op(index, index, 0, "ok", "poll", "t-0", {"records": [[0, value]]})

    witness = [poll(1, 7), poll(2, 9)]
    first_lead = Leadership(1, 1, "t", 0, 6, 6, 5)
    crash = Crash(2, 1, True, 371, (("t", 0, 14, 12),))
    recovery = Recovery(3, 1, (("t", 0, 0, 0),))
    again = Leadership(5, 1, "t", 0, 6, 0, 0)
    diverged = Divergence(9, 3, "t", 0, 1, 8, 0, 0, 6, 1)

    def mechanism(events: list[Event], truncation: str = "kip279") -> str:
        (found,) = explain_divergences([witness], [], events, truncation=truncation)
        return found.mechanism

    others = Election(4, "t", 0, 7, 1, (1, 3), (1, 3))
    alone = Election(4, "t", 0, 7, 1, (1,), (1, 3))
    for rule in ("kip279", "kip320"):
        events = [first_lead, crash, recovery, others, again, diverged]
        assert mechanism(events, rule) == "unclean-shutdown-leader"
    assert mechanism([first_lead, crash, recovery, alone, again, diverged]) == (
        "last-replica-standing"
    )
    # the process died with its page cache: a damaged disk cut the log
    sigkill = attrs.evolve(crash, power_loss=False)
    assert mechanism([first_lead, sigkill, recovery, others, again, diverged]) == (
        "disk-damage-leader"
    )
    # led once, or led twice with a log that kept the offset: the truncation rule's gap
    assert mechanism([first_lead, diverged]) == "stale-epoch-truncation"
    kept = Recovery(3, 1, (("t", 0, 5, 0),))
    assert mechanism([first_lead, crash, kept, others, again, diverged]) == (
        "stale-epoch-truncation"
    )
