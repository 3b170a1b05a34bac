"""Executable specifications and the explicit-state model checker.

`spec` imports nothing else of the project. A spec is a plain module built on
`spec.framework`: a frozen state, a frozen params record, initial states, named actions with
enumerated argument domains, invariants, transition properties and "sometimes" properties.
`spec.explore` checks a spec exhaustively (breadth-first) or by seeded random simulation.
"""
