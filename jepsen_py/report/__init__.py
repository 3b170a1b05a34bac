"""Reports of a run: the timeline page (`timeline`) and the latency and rate plots
(`plots`), both from a history alone (a store's ``history.jsonl``, any readable history
file, or ops in memory), with fault periods shaded. `spans` turns a history into what they
draw: op spans from invocation to completion, nemesis events, fault periods.
"""
