"""Formal assurance beyond exploration: the replication spec, encoded for z3.

``spec.explore`` checks every reachable state of a *small* configuration (two or three
replicas, logs of two records, three leader epochs). This package proves properties for
every state of a much larger space: logs of any length up to a bound, offsets, high
watermarks, leader epochs and record ids as unbounded integers, and the set of LeaderAndIsr
requests as an unbounded map from epoch to (leader, ISR).

- ``encoding``: the state and the actions of ``spec.replication``, written once against a
  small backend interface and interpreted two ways: as plain Python values (to cross-check
  the encoding against the Python spec on every reachable state of a small configuration)
  and as z3 terms (to prove things);
- ``invariants``: the spec's invariants restated for the encoding, and the auxiliary
  invariants Kafka's correctness rests on;
- ``obligations``: ``Init => Inv`` and ``Inv /\\ Action => Inv'``, one z3 query each, with
  counterexamples to induction minimised and rendered as trace tables;
- ``bmc``: bounded model checking from the initial state (shortest counterexample traces);
- ``rules``: contract-carrying restatements of the spec's pure rules, for CrossHair;
- ``report``: tables and JSON.

Nothing here reads a clock: callers pass one in (``time.perf_counter``) to get timings.
"""
