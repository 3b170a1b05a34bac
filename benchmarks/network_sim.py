"""Throughput of the simulated network (``impl.sim.network``): messages delivered per wall
second.

A closed loop among 5 nodes: each node starts with a window of messages in flight, and
every delivery makes the receiver send a new message to a peer drawn from the workload's
PRNG, until 10^5 messages have been sent; then the network drains. The world loop is the
one a cluster runs (advance the clock to ``next_delivery_time()``, ``deliver_next()``).
Two network configurations: ``default`` (FIFO links, no faults) and ``faulty`` (no FIFO,
exponential delays, 5% loss, 5% duplication). Prints ONE JSON line; ``history_digest`` is
the same for the same seed on every machine (a determinism check, not a speed figure).

    .venv/bin/python benchmarks/network_sim.py [--messages 100000] [--nodes 5] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time

import attrs

from impl.messages import Message, int_at_least, message
from impl.sim.clock import Clock, ms
from impl.sim.network import Network, NetworkConfig
from impl.sim.node import NodeLifecycles
from impl.sim.rng import SimRandom

CONFIGS = {
    "default": NetworkConfig(),
    "faulty": NetworkConfig(
        fifo=False,
        distribution="exponential",
        min_delay_ns=ms(0.2),
        max_delay_ns=ms(20),
        drop_probability=0.05,
        duplicate_probability=0.05,
    ),
}


@message
class Probe(Message):
    n: int = attrs.field(validator=int_at_least(0))


def run(config: NetworkConfig, messages: int, node_count: int, seed: int) -> dict[str, object]:
    names = tuple(f"b{i}" for i in range(1, node_count + 1))
    root = SimRandom(seed)
    nodes, clock = NodeLifecycles(names), Clock()
    network = Network(nodes, clock, root.split("network"), config)
    workload = root.split("workload")
    peers = {src: tuple(n for n in names if n != src) for src in names}
    window = 64
    sent = 0

    def send_from(src: str) -> None:
        nonlocal sent
        network.send(src, workload.choice(peers[src]), Probe(sent))
        sent += 1

    started = time.perf_counter()
    for src in names:
        for _ in range(window):
            if sent < messages:
                send_from(src)
    delivered = 0
    # Bounded: each round delivers or drops at least one message or sends one, and every
    # send is delivered at most twice (a duplicate); a loop that needs more is a bug.
    for _ in range(4 * messages + 1):
        at = network.next_delivery_time()
        if at is None:
            if sent >= messages:
                break
            send_from(names[sent % len(names)])  # losses emptied the window: refill it
            continue
        clock.advance_to(at)
        while (envelope := network.deliver_next()) is not None:
            delivered += 1
            if sent < messages:
                send_from(envelope.dst)
    else:
        raise SystemExit("the network did not drain: a bug in the world loop or the network")
    seconds = time.perf_counter() - started
    stats = network.stats()
    assert stats.sent == messages and stats.in_flight == 0, stats
    return {
        "messages_sent": stats.sent,
        "messages_delivered": delivered,
        "dropped": stats.dropped,
        "duplicated": stats.duplicated,
        "seconds": round(seconds, 3),
        "messages_per_second": round(delivered / seconds),
        "simulated_ms": clock.now // ms(1),
        "history_digest": network.history_digest(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--nodes", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    runs = {
        name: run(config, args.messages, args.nodes, args.seed) for name, config in CONFIGS.items()
    }
    print(
        json.dumps(
            {
                "benchmark": "network_sim",
                "seed": args.seed,
                "nodes": args.nodes,
                "messages": args.messages,
                "python": platform.python_version(),
                "messages_per_second": runs["default"]["messages_per_second"],
                "runs": runs,
            },
            sort_keys=True,
        )
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
