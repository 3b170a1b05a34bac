"""The consumer-group spec's KIP-848 protocol (``spec.group.consumer``), encoded for z3.

``kmodel check group --protocol consumer`` visits every state up to group epoch 4. This
package proves its invariants for *every* group epoch, member epoch, expiry, lost answer
and failover: epochs are unbounded integers and the budgets are dropped (a bound only
disables actions, so what holds without it holds with it).

- ``encoding``: the state as z3 terms (per consumer and partition a Boolean, epochs
  integers), the actions as (guard, successor), and the readings of a concrete spec state
  into constants and back, so that the encoding is checked against the spec on every
  reachable state;
- ``obligations``: the invariants, the auxiliary ones their proof needs, and the
  obligations ``Init => Inv`` and ``S /\\ guard_A => Inv'``, one z3 query each.

The classic and cooperative protocols (in-flight requests, member ids, generation reuse
after failover) are not encoded: for them the bounded model checking is all there is.
"""
