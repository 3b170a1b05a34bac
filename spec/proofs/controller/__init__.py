"""The controller spec (``spec.controller``), encoded for z3.

``kmodel check controller`` visits every reachable state of two brokers, two controller
epochs and two leader epochs. This package proves the controller's invariants for *every*
number of controller epochs, leader epochs, session expiries and requests: epochs are
unbounded integers and the request sets unbounded.

- ``ops``: the backends one encoding is written against: Python values (to cross-check the
  encoding against the spec, state by state), unbounded z3 terms (to prove), and z3 terms
  over a finite window of epochs (to find counterexamples to induction quickly, with every
  set element readable);
- ``encoding``: the state and the actions of ``spec.controller``;
- ``invariants``: the spec's invariants restated, and the auxiliary ones the proof needs;
- ``obligations``: ``Init => Inv`` and ``S /\\ Action => Inv'``, one z3 query each, with
  every counterexample to induction checked against the Python spec;
- ``report``: the invariant x action table and JSON.

It shares nothing with the replication proofs beside it but the method.
"""
