"""Reports: fault periods are paired the way the generator names faults, the timeline page
draws lanes, bars and shaded faults with nothing fetched from the network (and stays small
for 10^5 ops), and the plots render to the same bytes every time."""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

import pytest

from jepsen_py import generator as g
from jepsen_py.checker.result import Verdict
from jepsen_py.fault_verbs import EVERY_FAULT, fault_kind, fault_ops
from jepsen_py.generator import MILLISECOND, NEMESIS, SECOND
from jepsen_py.history import write_jsonl
from jepsen_py.history.op import Op
from jepsen_py.report.plots import render_latency, render_plots, render_rate
from jepsen_py.report.spans import collect
from jepsen_py.report.timeline import render_timeline, write_timeline
from jepsen_py.runner import check_history, verdict_banner

KEYS = ["t-0", "t-1"]
FAULTS = ["partition", "kill", "pause", "clock-skew", "loss", "bit-flip"]
EXTERNAL = re.compile(
    r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/|\bsrc\s*=|\bhref\s*=|url\(|@import", re.I
)


def simulated(seed: int = 3) -> list[Op]:
    gen = g.phases(
        g.nemesis(
            g.time_limit(
                2 * SECOND, g.nemesis_schedule(["partition", "kill"], 300 * MILLISECOND, seed)
            ),
            g.time_limit(
                2 * SECOND, g.stagger(5 * MILLISECOND, g.mix(g.sends(KEYS), g.polls(KEYS)))
            ),
        ),
        g.heal(["partition", "kill"]),
        g.clients(g.final_reads(KEYS)),
    )

    def latency(inv: g.Invocation, rng: random.Random) -> int:
        return int(rng.expovariate(1 / (2 * MILLISECOND)))

    world = g.IdealLog(p_fail=0.05, p_info=0.03)
    return list(g.simulate(gen, 4, seed=seed, latency=latency, respond=world).history)


def big(n_spans: int = 50_000, threads: int = 10, seed: int = 0) -> list[Op]:
    """A 2 * n_spans line history: ops back to back on each thread, 2% ending info (a new
    process each time), a partition from a third to half of the way."""
    rng = random.Random(seed)
    process = list(range(threads))
    out: list[Op] = []
    t = 0
    for i in range(n_spans):
        thread = i % threads
        p = process[thread]
        f = "send" if rng.random() < 0.5 else "poll"
        out.append(Op(len(out), t, p, "invoke", f, "t-0", i))
        kind = "info" if rng.random() < 0.02 else "fail" if rng.random() < 0.03 else "ok"
        # done before this thread's next invocation, threads * 100 us later
        out.append(Op(len(out), t + 1 + rng.randrange(threads * 100_000 - 1), p, kind, f, "t-0", i))
        t += 100_000
        if kind == "info":
            process[thread] += threads
        if i == n_spans // 3:
            out.append(Op(len(out), t, NEMESIS, "info", "start-partition", None, None))
        if i == n_spans // 2:
            out.append(Op(len(out), t, NEMESIS, "info", "stop-partition", None, None))
    out.sort(key=lambda op: op.time)
    return [Op(k, op.time, op.process, op.type, op.f, op.key, op.value) for k, op in enumerate(out)]


# --- fault periods ------------------------------------------------------------------------


@pytest.mark.parametrize("fault", FAULTS)
def test_the_report_pairs_fault_ops_the_way_the_generator_names_them(fault: str) -> None:
    start, stop = fault_ops(fault)
    assert fault_kind(start) == (fault, "start")
    assert fault_kind(stop) == (fault, "stop")


def test_fault_periods_pair_start_with_stop_and_heal_closes_everything() -> None:
    def nem(t: int, f: str, value: object = None) -> Op:
        return Op(0, t, NEMESIS, "info", f, None, value)

    history = [
        nem(10, "start-partition"),
        nem(12, "start-partition", {"grudge": {"n1": ["n2"]}}),  # the completion: targets
        nem(20, "kill"),
        nem(22, "kill", ["n3"]),
        nem(30, "stop-partition"),
        nem(32, "stop-partition"),
        nem(40, "start-partition"),
        nem(50, "pause"),
        nem(60, "heal"),
        nem(70, "restart"),  # nothing open: no period
        nem(80, "start-clock-skew"),
        nem(90, "log-something"),  # not a fault
    ]
    periods = [(p.fault, p.start, p.end, p.value) for p in collect(history).faults]
    assert periods == [
        ("partition", 10, 30, {"grudge": {"n1": ["n2"]}}),
        ("kill", 20, 60, ["n3"]),
        ("partition", 40, 60, None),
        ("pause", 50, 60, None),
        ("clock-skew", 80, None, None),  # never stopped: lasts to the end
    ]
    assert fault_kind("heal") == (EVERY_FAULT, "stop")
    assert fault_kind("start-") is None and fault_kind("read") is None


def test_spans_pair_invocations_with_completions_per_process() -> None:
    history = [
        Op(0, 0, 0, "invoke", "send", "t-0", 1),
        Op(1, 5, 1, "invoke", "poll", "t-0", {"from": 0}),
        Op(2, 7, 0, "ok", "send", "t-0", {"offset": 0, "value": 1}),
        Op(3, 9, 1, "info", "poll", "t-0", None),
        Op(4, 11, 3, "invoke", "send", "t-0", 2),
    ]
    data = collect(history)
    got = [(s.process, s.f, s.start, s.end, s.type, s.invoke_value) for s in data.spans]
    assert got == [
        (0, "send", 0, 7, "ok", 1),
        (1, "poll", 5, 9, "info", {"from": 0}),
        (3, "send", 11, None, "pending", 2),
    ]
    assert (data.t_min, data.t_max, data.ops) == (0, 11, 5)


# --- the timeline page --------------------------------------------------------------------


def test_the_timeline_draws_lanes_bars_and_shaded_faults() -> None:
    history = simulated()
    data = collect(history)
    page = render_timeline(history, title="kafka acks=all")
    processes = {(s.run, s.process) for s in data.spans}
    assert page.count('<rect class="lane ') == len(processes) + 1  # + the nemesis lane
    assert page.count('<rect class="op ') == len(data.spans)
    assert len(data.faults) >= 3
    assert page.count('<rect class="fault ') == len(data.faults)
    assert page.count('<rect class="op ok"') == sum(s.type == "ok" for s in data.spans)
    assert page.count('<rect class="op fail"') == sum(s.type == "fail" for s in data.spans)
    assert page.count('<rect class="op info"') == sum(s.type == "info" for s in data.spans)
    assert "partition: from" in page and "kill: from" in page
    # Hover text names f, key and values.
    send = next(s for s in data.spans if s.f == "send" and s.type == "ok")
    assert f"send {send.key}" in page
    assert f"&quot;offset&quot;:{send.value['offset']}" in page
    assert "<title>kafka acks=all</title>" in page


def test_the_timeline_fetches_nothing_and_the_check_can_tell() -> None:
    page = render_timeline(simulated())
    assert EXTERNAL.search(page) is None
    assert "<script" not in page
    for bad in (
        '<script src="https://cdn.example.com/d3.js"></script>',
        '<link href="style.css">',
        "background: url(x.png)",
        "@import 'a.css';",
    ):
        assert EXTERNAL.search(page.replace("</body>", bad + "</body>")) is not None


def test_the_timeline_reads_a_history_file_with_a_torn_last_line(tmp_path: Path) -> None:
    history = simulated()
    path = tmp_path / "history.jsonl"
    write_jsonl(path, history)
    path.write_bytes(path.read_bytes()[:-5])
    out = write_timeline(path, tmp_path / "timeline.html")
    page = out.read_text(encoding="utf-8")
    assert "Rejected history lines" in page
    assert f"history.jsonl:{len(history)}: not valid JSON" in page
    assert page.count('<rect class="op ') == len(collect(history[:-1]).spans)


def test_a_big_history_is_downsampled_and_stays_light() -> None:
    history = big()
    assert len(history) >= 100_000
    started = time.perf_counter()
    page = render_timeline(history, max_bars=4000)
    seconds = time.perf_counter() - started
    rects = page.count("<rect ")
    assert "bin" in page and "More than 4000 ops" in page
    assert rects < 12_000, rects
    assert len(page) < 4_000_000, len(page)
    assert seconds < 20, seconds
    # ~1000 processes (every info starts one) are packed into about one lane per thread.
    lanes = page.count('<rect class="lane ')
    assert 11 <= lanes <= 20, lanes
    assert page.count('<rect class="fault ') == 1


def test_without_downsampling_the_big_page_would_be_heavy() -> None:
    # The size bound above can fail: drawing every op of the same history breaks it.
    page = render_timeline(big(), max_bars=10**6)
    assert page.count('<rect class="op ') == 50_000
    assert len(page) > 4_000_000


# --- plots --------------------------------------------------------------------------------


def test_plots_render_and_are_byte_identical_across_renders(tmp_path: Path) -> None:
    history = simulated()
    first = render_plots(history, tmp_path)
    a = {name: p.read_bytes() for name, p in first.items()}
    (tmp_path / "again").mkdir()
    second = render_plots(history, tmp_path / "again")
    b = {name: p.read_bytes() for name, p in second.items()}
    assert set(a) == {"latency", "rate"}
    for name in a:
        assert a[name][:8] == b"\x89PNG\r\n\x1a\n"
        assert len(a[name]) > 10_000
        assert a[name] == b[name], name
        assert b"Software" not in a[name] and b"Matplotlib" not in a[name]
    # The comparison can fail: another history renders differently.
    other = render_plots(simulated(seed=4), tmp_path / "again")
    assert other["latency"].read_bytes() != a["latency"]
    assert other["rate"].read_bytes() != a["rate"]


def test_plots_read_a_file_and_survive_an_empty_history(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    write_jsonl(path, simulated())
    assert render_latency(path, tmp_path / "l.png").stat().st_size > 10_000
    assert render_rate(path, tmp_path / "r.png", bin_ns=50 * MILLISECOND).exists()
    empty = render_plots([], tmp_path)
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in empty.values())
    with pytest.raises(ValueError, match="at least 1 ns"):
        render_rate(path, tmp_path / "r.png", bin_ns=0)


def test_the_timeline_opens_with_the_verdict_and_outlines_the_witnesses() -> None:
    history = [
        Op(0, 0, 0, "invoke", "send", "k", 10),
        Op(1, 10, 0, "ok", "send", "k", {"offset": 0, "value": 10}),
        Op(2, 20, 0, "invoke", "send", "k", 11),
        Op(3, 30, 0, "ok", "send", "k", {"offset": 1, "value": 11}),
        Op(4, 40, 1, "invoke", "poll", "k", {"from": 0}),
        Op(5, 50, 1, "ok", "poll", "k", {"records": [[1, 11]], "hw": 2}),
    ]
    check = check_history(history)
    assert check.verdict is Verdict.ILLEGAL and check.violations == ("lost-write", "poll-skip")
    assert check.violation_lines["lost-write"] == [[1, 2, 6]]
    page = render_timeline(history, verdict=verdict_banner(check))
    assert "Verdict: INVALID" in page and "violation <b>lost-write</b>: lines 1 2 6" in page
    # the witnessing ops' bars (by their history lines: the send of 10 and the poll) are
    # outlined; the send of 11 is not
    assert page.count(' witness"') == 2
    stale = [
        *history[:2],
        Op(2, 20, 1, "invoke", "poll", "k", {"from": 0}),
        Op(3, 30, 1, "ok", "poll", "k", {"records": [], "hw": 0}),
    ]
    check = check_history(stale)
    page = render_timeline(stale, verdict=verdict_banner(check))
    assert check.verdict is Verdict.OK and "Verdict: VALID" in page
    assert "informational: stale-read (1)" in page and "linearizable: illegal" in page
