"""Bug-finding power of the fault injector (issue 21): how many generic-fault runs until each
known-unsafe configuration shows its anomaly, and the safe configuration's false alarms.

Every entry is a ``kmodel test`` configuration that Kafka's documentation or a KIP says can
lose or misplace acknowledged writes, or a fence the implementation lets ``kmodel test --bug``
turn off:

- unsafe flags: unclean leader election with ``min.insync.replicas=1``; ``acks=1`` (leader
  failures lose what followers had not fetched); pre-KIP-101 truncation to the high
  watermark; KIP-101's and KIP-279's leader-epoch truncation with 3 replicas (the gaps
  KIP-279 and KIP-320 closed); producers without idempotence (KIP-98) under duplicated
  messages;
- every ``kmodel test --bug`` choice (``impl.world.FENCE_BUGS``: the controller fences of
  issue 16, the reassignment, shutdown and ELR fences of issue 17; ``no_generation_check``
  and ``fetch_before_load``, the group coordinator's fences, run the group workload,
  ``kmodel test --workload group``), and both controller fences off at once (issue 16's
  brain split with nothing to stop it).

No scenario schedule: each run is exactly ``kmodel test --runs N --seed S --nemesis all
<flags>``'s swarm run for its seed (``jepsen_py.runner.config.swarm_config``: the seed draws
its subset of faults, their pace and targets), run in this process through the runner API;
the group workload's runs are ``kmodel test --workload group --nemesis GROUP_FENCE_FAULTS
--interval 4s --seed S`` (its faults but the application's own, ``pause-partition`` and
``fail-processing``, which touch no fence). An entry is found at the first seed that shows
its anomaly (`EXPECTED`, a violation: a lost acknowledged write or an offset with two values
for the unsafe flags, a duplicate without idempotence (both copies left in the final read:
`one_copy_left`), any violation for a fence; for the group workload, an invalid run: a
violated group invariant, or a delivery violation such as a commit regression). A loss must
be explained by the entry's own mechanism (``jepsen_py.explain``:
``unclean-leader-election``, ``acks-leader-failure``, ``hw-truncation``...); for a fence, a
loss no mechanism explains counts only if the same swarm run with every fence on loses
nothing. A loss that only mechanisms Kafka's safe configuration is exposed to explain
(``jepsen_py.explain``: the last replica standing and the leader elected after an unclean
shutdown or with a damaged disk, closed by KIP-966, and every replica of a write losing
power) does not count: overlapping faults reach those in any configuration. The safe
configuration (acks=all, min.insync.replicas=2, clean election, KIP-320, idempotence, every
fence on) runs the same seeds; an invalid run of it not explained so is a false alarm (the
explained ones are listed on stderr).

Three controller fences cannot show in any history (``docs/controller.md``: with the
store's conditional writes the brokers order what they apply by leader epoch); each is
found when a run breaks the ``spec.controller`` invariant it guards, counted on the run's
cluster (`FENCE_INVARIANTS`; ``found_by`` says ``invariant ...`` instead of ``history``),
and the safe configuration breaking one would be a false alarm.

Prints ONE JSON line (the shape issue 21 asks for, plus ``found_by``)::

    {"bugs": {"<name>": {"runs_to_bug": <int|null>, "sim_s_to_bug": <float|null>,
                         "found_by": "history" | "invariant <name>" | null,
                         "args": "<kmodel test args>"}},
     "safe_runs": <int>, "false_alarms": <int>}

``runs_to_bug`` counts runs from ``--seed`` up to and including the first that shows the
bug (null: none within ``--runs``); ``sim_s_to_bug`` is the logical seconds those runs
simulated (main phase, recovery and final reads). Progress, and each found run's violations
and reproduce command, go to stderr.

    .venv/bin/python benchmarks/bug_hunt.py [--runs 10] [--time-limit 60] [--seed 1]
        [--workers 2] [--safe-runs N] [--only NAME,...] [--max-faults 1] [--buggify]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from impl.world import FENCE_BUGS
from jepsen_py.checker.result import Verdict
from jepsen_py.explain import MECHANISMS
from jepsen_py.generator import SECOND
from jepsen_py.group_cluster import APPLICATION_FAULTS
from jepsen_py.group_workload import GROUP_BUGS, parse_group_faults, run_group_test
from jepsen_py.history.op import Op, freeze, is_final
from jepsen_py.nemesis import ALL
from jepsen_py.runner.config import TestConfig, swarm_config
from jepsen_py.runner.run import run_test

SAFE = "safe"
SAFE_CHUNK = 10
"""The safe configuration's seeds are run in jobs of this many."""
GROUP_FENCE_FAULTS = tuple(f for f in parse_group_faults("all") if f not in APPLICATION_FAULTS)
"""The group workload's faults that act on its members, coordinator and commits."""

LOSS = "loss"
"""An entry found when an acknowledged write is lost or an offset holds two values."""
DUPLICATE = "duplicate"
"""An entry found when a value is appended twice (the non-idempotent producer's retry)."""
ANY = "any"
"""An entry found by any violation (a fence: with idempotence on, nothing else fails)."""

SAFE_EXPOSURES = frozenset(name for name, m in MECHANISMS.items() if m.safe)
"""Loss mechanisms Kafka's safe configuration is exposed to (``jepsen_py.explain``): the last
replica standing and the leader elected after an unclean shutdown (KIP-966), and the power
loss of every replica holding a write. Overlapping faults reach them."""
KIP_966_CLOSES = frozenset(
    {
        "last-replica-standing",
        "unclean-shutdown-leader",
        "last-replica-disk-damage",
        "disk-damage-leader",
    }
)
"""The exposures Eligible Leader Replicas (KIP-966, ``--elr``) closes."""
UNEXPLAINED = "unexplained"
"""The explanation of a loss no known mechanism explains (``jepsen_py.explain``)."""
LOSS_VIOLATIONS = frozenset({"lost-write", "inconsistent-offsets", "unseen", "nonmonotonic-send"})
"""The violations a loss shows as (a send after a truncated one may get a lower offset)."""

EXPECTED: dict[str, str] = {"no_idempotence": DUPLICATE, SAFE: ANY}
"""What each entry's anomaly is (default: `LOSS`; the fences: `ANY`). acks=1 turns
idempotence off too (Kafka's default), so its duplicates are not what it is hunted for;
the safe configuration's false alarm is any violation."""

FENCE_INVARIANTS: dict[str, tuple[str, str]] = {
    "accept_stale_controller_epoch": ("NoStaleControllerEpochApplied", "stale_controller_applied"),
    "epoch_not_persisted": ("OneControllerWritesPerEpoch", "shared_epoch_writes"),
    "unconditional_write": ("OneControllerWritesPerEpoch", "zombie_writes"),
}
"""The controller fences whose absence no history can show (docs/controller.md: with the
store's conditional writes, brokers order what they apply by leader epoch): each -> the
``spec.controller`` invariant it guards and the figure of the run's cluster that counts its
breaches (``impl.world.World.controller_figures``). Such a fence is found when a run breaks
its invariant; the safe configuration breaking any of them would be a false alarm."""

UNSAFE_FLAGS: dict[str, tuple[dict[str, Any], str]] = {
    "unclean_min_isr_1": ({"unclean": True, "min_isr": 1}, "--unclean --min-isr 1"),
    "acks_1": ({"acks": "1", "min_isr": 1}, "--acks 1 --min-isr 1"),
    "pre_kip101": ({"truncation": "high_watermark"}, "--truncation high_watermark"),
    "kip101_3_replicas": ({"truncation": "kip101"}, "--truncation kip101"),
    "kip279_3_replicas": ({"truncation": "kip279"}, "--truncation kip279"),
    "no_idempotence": ({"idempotence": False}, "--no-idempotence"),
}
"""Unsafe flag configurations of issue 21: name -> (TestConfig fields, kmodel test flags)."""


def entries() -> dict[str, tuple[dict[str, Any], str]]:
    """Every entry: the unsafe flags, then one per ``kmodel test --bug`` choice."""
    out = dict(UNSAFE_FLAGS)
    for bug in sorted(FENCE_BUGS):
        out[bug] = ({"bugs": (bug,)}, f"--bug {bug}")
    # With min.insync.replicas=2 of 3 brokers every reassignment target keeps an ISR
    # member, so dropping the removed replicas early only leaves an ISR below
    # min.insync.replicas, never a loss (docs/leadership.md): the fence matters with 1.
    out["drop_before_isr_join"] = (
        {"bugs": ("drop_before_isr_join",), "min_isr": 1},
        "--bug drop_before_isr_join --min-isr 1",
    )
    # Issue 16's brain split with both controller fences off: the zombie's stale writes land
    # in the store and the brokers apply its requests.
    both = ("accept_stale_controller_epoch", "unconditional_write")
    out["+".join(both)] = ({"bugs": both}, " ".join(f"--bug {b}" for b in both))
    for bug in sorted(GROUP_BUGS):
        out[bug] = (
            {"workload": "group", "bugs": (bug,)},
            f"--workload group --bug {bug} --nemesis {','.join(GROUP_FENCE_FAULTS)}",
        )
    return out


def one_copy_left(history: Sequence[Op]) -> bool:
    """Whether every value of a key acknowledged or read at two offsets sits at most once in
    the key's final read (polls invoked with ``"final": true``): the first copy was lost, or
    read from a replica whose log diverged, and the producer's retry appended the value
    again -- a loss shows so even with idempotent producers (the new leader never had the
    batch). A non-idempotent producer's duplicate leaves both copies in the log."""
    seen: dict[tuple[Any, Any], set[int]] = defaultdict(set)
    final: dict[tuple[Any, Any], set[int]] = defaultdict(set)
    reading_final: dict[Any, bool] = {}
    for op in history:
        if not op.is_client:
            continue
        value = op.value if isinstance(op.value, dict) else {}
        if op.f == "send" and op.type == "ok" and isinstance(value.get("offset"), int):
            seen[(op.key, freeze(value.get("value")))].add(value["offset"])
        elif op.f == "poll" and op.type == "invoke":
            reading_final[op.process] = is_final(value)
        elif op.f == "poll":
            final_read = reading_final.pop(op.process, False)
            records = value.get("records") if op.type == "ok" else None
            for offset, record in records if isinstance(records, list) else ():
                seen[(op.key, freeze(record))].add(offset)
                if final_read:
                    final[(op.key, freeze(record))].add(offset)
    twice = [k for k, offsets in seen.items() if len(offsets) > 1]
    return all(len(final.get(k, ())) <= 1 for k in twice)


def run_one(
    name: str,
    fields: dict[str, Any],
    seed: int,
    time_limit_s: int,
    max_faults: int = 1,
    buggify: bool = False,
) -> dict[str, Any]:
    """One generic-fault run of an entry: whether it is invalid, and its logical seconds."""
    if fields.get("workload") == "group":
        result = run_group_test(
            seed=seed,
            faults=GROUP_FENCE_FAULTS,
            time_limit_ns=time_limit_s * SECOND,
            interval_ns=4 * SECOND,
            partitions=6,
            brokers=3,
            consumers=3,
            bugs=tuple(fields["bugs"]),
            store_root=None,
            name="group",
        )
        return {
            "invalid": not result["ok"],
            "explained": False,
            "unknown": False,
            "sim_s": float(time_limit_s),
            "violations": [str(v) for v in result["violations"][:2]],
            "command": f"kmodel test --workload group --seed {seed} --bug {fields['bugs'][0]}"
            f" --nemesis {','.join(GROUP_FENCE_FAULTS)} --interval 4s --time-limit {time_limit_s}s",
        }
    base = TestConfig(
        name=f"bughunt-{name}",
        nemesis=ALL,
        time_limit_ns=time_limit_s * SECOND,
        max_faults=max_faults,
        buggify=buggify,
        **fields,
    )
    outcome = run_test(swarm_config(base, seed), seed, reports=False)
    check = outcome.check
    expected = EXPECTED.get(name, ANY if "bugs" in fields else LOSS)
    lossy = bool(check.lost_acknowledged_writes or check.inconsistent_offsets)
    # A loss that only mechanisms the safe configuration is exposed to explain (the KIP-966
    # gaps, correlated power loss) is Kafka's, not the entry's: it proves nothing here.
    # With KIP-966 on (``--elr``, implied by ``--bug stale_elr``) the two gaps it closes are
    # no exposure: a loss by them there is the entry's.
    elr = base.elr or "stale_elr" in base.bugs
    exposures = SAFE_EXPOSURES - KIP_966_CLOSES if elr else SAFE_EXPOSURES
    # Acknowledged writes lost, and records read (the HW covered them) then lost.
    mechanisms = set(check.loss_mechanisms) | set(check.read_loss_mechanisms)
    # Offsets that held two values because a replica kept records its leader did not have.
    mechanisms |= set(check.divergence_mechanisms)
    exposed = bool(mechanisms) and mechanisms <= exposures
    violations = set(check.violations)
    if DUPLICATE in violations and one_copy_left(outcome.history):
        # Each value seen at two offsets is at most once in the final log: a write lost (or
        # a replica's diverged copy) that the producer appended again, part of the loss
        # judged above, not a second copy in the log.
        violations.discard(DUPLICATE)
    explained = lossy and exposed and violations <= LOSS_VIOLATIONS
    # The entry's own mechanisms: anything but those exposures and "unexplained".
    own = mechanisms - exposures - {UNEXPLAINED}
    figures = outcome.figures.controller
    broken = sorted(
        {inv for bug, (inv, figure) in FENCE_INVARIANTS.items() if figures.get(figure, 0) > 0}
    )
    guarded = {FENCE_INVARIANTS[b][0] for b in base.bugs if b in FENCE_INVARIANTS}
    found_by = "history"
    if expected == LOSS:
        shows = lossy and bool(own)
    elif expected == DUPLICATE:
        shows = DUPLICATE in violations
    else:
        shows = outcome.verdict is Verdict.ILLEGAL and not explained
        if shows and name != SAFE and not own and violations <= LOSS_VIOLATIONS:
            # Only an unexplained loss: the fence's doing only if the same run with every
            # fence on (same seed, same swarm draw) does not lose writes too.
            twin = attrs.evolve(swarm_config(base, seed), bugs=(), elr=elr)
            shows = run_test(twin, seed, reports=False).verdict is not Verdict.ILLEGAL
        if not shows and (set(broken) & guarded or (name == SAFE and broken)):
            # The fence's own invariant broken in the run (for the safe configuration, any).
            shows, found_by = True, "invariant " + ",".join(broken)
    return {
        "invalid": shows,
        "found_by": found_by,
        "explained": outcome.verdict is Verdict.ILLEGAL and explained,
        # Invalid, yet neither the entry's anomaly nor an exposure: listed, never dropped
        # silently (e.g. offsets read with two values that no loss mechanism explains).
        "other": outcome.verdict is Verdict.ILLEGAL and not explained and not shows,
        "unknown": outcome.verdict is Verdict.UNKNOWN,
        "sim_s": outcome.figures.logical_end_ns / 1e9,
        "violations": list(check.violations)
        + [f"lost:{m}" for m in check.loss_mechanisms]
        + [f"read-lost:{m}" for m in check.read_loss_mechanisms]
        + [f"diverged:{m}" for m in check.divergence_mechanisms]
        + [f"invariant:{i}" for i in broken],
        "command": outcome.command,
    }


def hunt(job: tuple[str, dict[str, Any], list[int], int, bool, int, bool]) -> dict[str, Any]:
    """Run an entry's seeds in order until one is invalid (or, ``exhaustive``, all of them,
    counting the invalid ones: the safe configuration's false alarms)."""
    name, fields, seeds, time_limit_s, exhaustive, max_faults, buggify = job
    sim_s = 0.0
    invalid: list[int] = []
    explained: list[int] = []
    unknown = 0
    started = time.perf_counter()
    for i, seed in enumerate(seeds, start=1):
        took = time.perf_counter()
        result = run_one(name, fields, seed, time_limit_s, max_faults, buggify)
        print(
            f"    {name} seed {seed}: {result['sim_s']:.0f} s simulated in "
            f"{time.perf_counter() - took:.1f} s",
            file=sys.stderr,
            flush=True,
        )
        sim_s += result["sim_s"]
        unknown += result["unknown"]
        if result["explained"]:
            explained.append(seed)
            print(
                f"  {name}: seed {seed} lost writes by a mechanism the safe configuration is "
                f"exposed to ({', '.join(result['violations'])}): not counted",
                file=sys.stderr,
                flush=True,
            )
        if result.get("other"):
            print(
                f"  {name}: seed {seed} invalid, but not by the entry's own mechanism "
                f"({', '.join(result['violations'])}): not counted; {result['command']}",
                file=sys.stderr,
                flush=True,
            )
        if result["invalid"]:
            invalid.append(seed)
            print(
                f"  {name}: seed {seed} invalid ({', '.join(result['violations'])}): "
                f"{result['command']}",
                file=sys.stderr,
                flush=True,
            )
            if not exhaustive:
                return {
                    "name": name,
                    "runs": i,
                    "runs_to_bug": i,
                    "found_by": result.get("found_by", "history"),
                    "sim_s_to_bug": round(sim_s, 1),
                    "invalid": invalid,
                    "explained": explained,
                    "unknown": unknown,
                    "wall_s": round(time.perf_counter() - started, 1),
                }
    return {
        "name": name,
        "runs": len(seeds),
        "runs_to_bug": None,
        "sim_s_to_bug": None,
        "invalid": invalid,
        "explained": explained,
        "unknown": unknown,
        "wall_s": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="seeds per entry (N)")
    parser.add_argument("--time-limit", type=int, default=60, help="seconds of each run")
    parser.add_argument("--seed", type=int, default=1, help="the first seed")
    parser.add_argument(
        "--max-faults", type=int, default=1, help="kmodel test --max-faults: swarm overlap bound"
    )
    parser.add_argument(
        "--buggify", action="store_true", help="kmodel test --buggify: randomized broker timing"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--safe-runs", type=int, default=None, help="safe configuration runs (default --runs)"
    )
    parser.add_argument("--only", default=None, help="comma-separated entry names")
    args = parser.parse_args()
    table = entries()
    chosen = list(table) if args.only is None else [n for n in args.only.split(",") if n]
    unknown_names = sorted(set(chosen) - set(table) - {SAFE})
    if unknown_names:
        parser.error(f"--only: unknown {unknown_names}; entries: {', '.join([*table, SAFE])}")
    seeds = list(range(args.seed, args.seed + args.runs))
    safe_runs = args.runs if args.safe_runs is None else args.safe_runs
    jobs: list[tuple[str, dict[str, Any], list[int], int, bool, int, bool]] = []
    if args.only is None or SAFE in chosen:
        # In chunks, so that the safe runs spread over the workers too.
        for start in range(args.seed, args.seed + safe_runs, SAFE_CHUNK):
            chunk = list(range(start, min(start + SAFE_CHUNK, args.seed + safe_runs)))
            jobs.append((SAFE, {}, chunk, args.time_limit, True, args.max_faults, args.buggify))
    hunted = [n for n in chosen if n != SAFE]
    jobs += [
        (n, table[n][0], seeds, args.time_limit, False, args.max_faults, args.buggify)
        for n in hunted
    ]
    started = time.perf_counter()
    results: dict[str, dict[str, Any]] = {}
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for result in pool.map(hunt, jobs):
            if result["name"] == SAFE and SAFE in results:
                merged = results[SAFE]
                merged["runs"] += result["runs"]
                merged["invalid"] += result["invalid"]
                merged["explained"] += result["explained"]
                merged["unknown"] += result["unknown"]
                merged["wall_s"] += result["wall_s"]
                result = merged
            results[result["name"]] = result
            print(
                f"{result['name']}: runs_to_bug {result['runs_to_bug']} "
                f"({result['runs']} runs, invalid {result['invalid']}, explained by the "
                f"safe configuration's exposures {result['explained']}, unknown "
                f"{result['unknown']}, {result['wall_s']} s wall, "
                f"{time.perf_counter() - started:.0f} s so far)",
                file=sys.stderr,
                flush=True,
            )
    flags = f"--nemesis all --runs {args.runs} --seed {args.seed} --time-limit {args.time_limit}s"
    if args.max_faults != 1:
        flags += f" --max-faults {args.max_faults}"
    if args.buggify:
        flags += " --buggify"
    bugs = {
        name: {
            "runs_to_bug": results[name]["runs_to_bug"],
            "sim_s_to_bug": results[name]["sim_s_to_bug"],
            "found_by": results[name].get("found_by"),
            "args": (
                f"{table[name][1]} --interval 4s --seed {args.seed} --time-limit {args.time_limit}s"
                if table[name][0].get("workload") == "group"
                else f"{table[name][1]} {flags}"
            ),
        }
        for name in chosen
        if name != SAFE
    }
    safe = results.get(SAFE)
    print(
        json.dumps(
            {
                "bugs": bugs,
                "safe_runs": safe["runs"] if safe else 0,
                "false_alarms": len(safe["invalid"]) if safe else 0,
            },
            sort_keys=True,
        )
    )


if __name__ == "__main__":
    main()


__all__ = ["SAFE", "UNSAFE_FLAGS", "entries", "hunt", "run_one"]
