"""The backends the controller encoding is written against.

The encoding needs Booleans, integers, ``If``, *sets of integer tuples* (the requests sent,
keyed by their fields; the ghost record of writes) with membership, insertion and a bounded
``forall`` over members, and *maps* from integers to integers (a proof-only history). Three
readings:

- ``PyOps``: plain Python values; sets are frozensets of tuples, maps dicts. Used to run the
  encoding on concrete states of the spec and compare with the spec's own actions.
- ``Z3Ops``: z3 terms; a set of k-tuples is a k-ary array to Bool, a ``forall`` a quantifier.
  Unbounded: the proofs use it.
- ``WindowOps``: z3 terms over a finite window of values: a set is one Boolean per tuple in
  the window, a ``forall`` a conjunction. Quantifier-free, so z3 finds counterexamples fast
  and every member of every set can be read from a model. Only used to *find*
  counterexamples, which are then checked concretely.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import z3

JUNK = -7
"""What ``PyOps.get`` answers for a key a map does not hold: never read where it matters."""


class PyOps:
    symbolic = False

    def And(self, *xs: Any) -> bool:
        return all(bool(x) for x in xs)

    def Or(self, *xs: Any) -> bool:
        return any(bool(x) for x in xs)

    def Not(self, x: Any) -> bool:
        return not x

    def Implies(self, a: Any, b: Any) -> bool:
        return (not a) or bool(b)

    def If(self, c: Any, a: Any, b: Any) -> Any:
        return a if c else b

    def lit(self, value: int | bool) -> Any:
        return value

    def count(self, bools: Sequence[Any]) -> int:
        return sum(1 for b in bools if b)

    def member(self, s: frozenset[tuple[int, ...]], key: tuple[Any, ...]) -> bool:
        return tuple(key) in s

    def add(self, s: frozenset[tuple[int, ...]], key: tuple[Any, ...]) -> frozenset[Any]:
        return s | {tuple(key)}

    def forall(self, s: frozenset[tuple[int, ...]], body: Callable[..., Any]) -> bool:
        return all(bool(body(*key)) for key in s)

    def get(self, m: dict[int, int], key: Any) -> int:
        return m.get(key, JUNK)

    def put(self, m: dict[int, int], key: Any, value: Any) -> dict[int, int]:
        return {**m, key: value}


class Z3Ops:
    """Unbounded z3 terms: integers, k-ary arrays to Bool for sets, arrays for maps."""

    symbolic = True

    def And(self, *xs: Any) -> Any:
        return z3.And(*xs) if xs else z3.BoolVal(True)

    def Or(self, *xs: Any) -> Any:
        return z3.Or(*xs) if xs else z3.BoolVal(False)

    def Not(self, x: Any) -> Any:
        return z3.Not(x)

    def Implies(self, a: Any, b: Any) -> Any:
        return z3.Implies(a, b)

    def If(self, c: Any, a: Any, b: Any) -> Any:
        return z3.If(c, a, b)

    def lit(self, value: int | bool) -> Any:
        return z3.BoolVal(value) if isinstance(value, bool) else z3.IntVal(value)

    def count(self, bools: Sequence[Any]) -> Any:
        if not bools:
            return z3.IntVal(0)
        return z3.Sum([z3.If(b, 1, 0) for b in bools])

    def int_const(self, name: str) -> Any:
        return z3.Int(name)

    def bool_const(self, name: str) -> Any:
        return z3.Bool(name)

    def set_const(self, name: str, arity: int, space: Sequence[tuple[int, ...]]) -> Any:
        sorts = [z3.IntSort()] * arity
        return z3.Array(name, *sorts, z3.BoolSort())

    def map_const(self, name: str, keys: Sequence[int]) -> Any:
        return z3.Array(name, z3.IntSort(), z3.IntSort())

    def set_value(
        self, members: frozenset[tuple[int, ...]], arity: int, space: Sequence[tuple[int, ...]]
    ) -> Any:
        """A concrete set as a z3 array: the lambda of its characteristic function."""
        xs = [z3.FreshInt("x") for _ in range(arity)]
        body = z3.Or(
            *[z3.And(*[x == v for x, v in zip(xs, key, strict=True)]) for key in sorted(members)]
        )
        return z3.Lambda(xs, body)

    def map_value(self, m: dict[int, int], keys: Sequence[int]) -> Any:
        out = z3.K(z3.IntSort(), z3.IntVal(JUNK))
        for key in sorted(m):
            out = z3.Store(out, key, m[key])
        return out

    def member(self, s: Any, key: tuple[Any, ...]) -> Any:
        return z3.Select(s, *key)

    def add(self, s: Any, key: tuple[Any, ...]) -> Any:
        return z3.Store(s, *key, z3.BoolVal(True))

    def forall(self, s: Any, body: Callable[..., Any]) -> Any:
        arity = z3.Z3_get_array_arity(s.ctx.ref(), s.sort().ast)
        xs = [z3.FreshInt("k") for _ in range(arity)]
        return z3.ForAll(xs, z3.Implies(z3.Select(s, *xs), body(*xs)))

    def get(self, m: Any, key: Any) -> Any:
        return z3.Select(m, key)

    def put(self, m: Any, key: Any, value: Any) -> Any:
        return z3.Store(m, key, value)


class WindowOps(Z3Ops):
    """z3 terms over a finite window: a set is a dict from every tuple of its key space to a
    Boolean term, a map a dict from every key to an integer term."""

    def set_const(self, name: str, arity: int, space: Sequence[tuple[int, ...]]) -> Any:
        return {key: z3.Bool(f"{name}{list(key)}") for key in space}

    def map_const(self, name: str, keys: Sequence[int]) -> Any:
        return {key: z3.Int(f"{name}[{key}]") for key in keys}

    def set_value(
        self, members: frozenset[tuple[int, ...]], arity: int, space: Sequence[tuple[int, ...]]
    ) -> Any:
        outside = sorted(set(members) - set(space))
        if outside:
            raise ValueError(f"members {outside} are outside the window")
        return {key: z3.BoolVal(key in members) for key in space}

    def map_value(self, m: dict[int, int], keys: Sequence[int]) -> Any:
        return {key: z3.IntVal(m.get(key, JUNK)) for key in keys}

    def If(self, c: Any, a: Any, b: Any) -> Any:
        if isinstance(a, dict):
            return {key: z3.If(c, a[key], b[key]) for key in a}
        return z3.If(c, a, b)

    def _is(self, key: tuple[Any, ...], value: tuple[int, ...]) -> Any:
        return z3.And(*[_eq(k, v) for k, v in zip(key, value, strict=True)])

    def member(self, s: Any, key: tuple[Any, ...]) -> Any:
        if all(isinstance(k, int) for k in key):
            return s.get(tuple(key), z3.BoolVal(False))
        return z3.Or(*[z3.And(self._is(key, value), term) for value, term in s.items()])

    def add(self, s: Any, key: tuple[Any, ...]) -> Any:
        return {value: z3.Or(term, self._is(key, value)) for value, term in s.items()}

    def forall(self, s: Any, body: Callable[..., Any]) -> Any:
        return z3.And(
            *[z3.Implies(term, body(*[z3.IntVal(v) for v in value])) for value, term in s.items()]
        )

    def get(self, m: Any, key: Any) -> Any:
        if isinstance(key, int):
            return m.get(key, z3.IntVal(JUNK))
        out = z3.IntVal(JUNK)
        for k in sorted(m, reverse=True):
            out = z3.If(_eq(key, k), m[k], out)
        return out

    def put(self, m: Any, key: Any, value: Any) -> Any:
        return {k: z3.If(_eq(key, k), value, term) for k, term in m.items()}


def _eq(a: Any, b: int) -> Any:
    return a == b if not isinstance(a, int) else z3.BoolVal(a == b)


def key_space(*ranges: Sequence[int]) -> list[tuple[int, ...]]:
    """Every tuple of the product of ``ranges``, in order."""
    return list(itertools.product(*ranges))
