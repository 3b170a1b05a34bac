"""The offsets spec (``spec.offsets``), encoded for z3.

``kmodel check offsets`` visits every state within its bounds (two consumers, generation 2,
one expiry, one crash, one coordinator move). This package proves its invariants for
*every* generation, coordinator number and number of faults: generations and coordinator
numbers are unbounded integers, the commits in flight an unbounded set, and the fault
budgets are dropped (a bound only disables actions, so what holds without it holds with it).

- ``encoding``: the state as z3 terms, the actions as (guard, successor), and the readings
  of a concrete spec state into constants and back, so that the encoding is checked against
  the spec on reachable states;
- ``obligations``: the invariants, the auxiliary ones their proof needs, and the
  obligations ``Init => Inv`` and ``S /\\ guard_A => Inv'``, one z3 query each.
"""
