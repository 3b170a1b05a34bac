"""Sequential specifications for the linearizability checker: a register, a
compare-and-set register, and a key-value store (Porcupine's and Knossos's classic models).

- `RegisterModel`: ``read`` -> value, ``write`` v. The state is the value, initially
  ``initial`` (nil unless told otherwise: the register has no value yet).
- `CasRegisterModel`: the register plus ``cas`` with value ``[expected new]``: it applies
  when the register holds ``expected``. A cas that completed ``ok`` applied; one that
  completed and reported "did not apply" (Porcupine's etcd logs: ``fail`` with
  ``Conventions.fail_completes``) compared and found another value; an indeterminate one
  may apply at any time after its call, or never.
- `KeyValueModel`: ``get`` k -> value, ``put`` k v, ``append`` k v (string concatenation),
  each key initially "" (Porcupine's kv model). Partitioned per key: keys are independent
  registers, checked apart (Horn and Kroening's P-compositionality).

A read that did not complete (``info``, pending) or whose result is unknown constrains
nothing and is left out; so is a read of nil under Knossos's conventions.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from jepsen_py.checker.model import UNKNOWN_STATE, Model, ModelError, Operation
from jepsen_py.history.op import Op, freeze
from jepsen_py.history.validate import Conventions

READ, WRITE, CAS = 0, 1, 2
GET, PUT, APPEND = 0, 1, 2

UNSET: Any = object()
"""The initial value when none is given: the model's own default."""


def _unknown_f(model: str, op: Op, fs: str) -> ModelError:
    return ModelError(
        f"f {op.f!r} is not an operation of the {model} model ({fs}); choose the model that "
        "matches this history with --model"
    )


def _show(value: Any) -> str:
    return "nil" if value is None else repr(value)


class RegisterModel(Model):
    """A read/write register (see the module docstring)."""

    name = "register"
    _fs = "read, write"

    def __init__(self, initial: Any = None) -> None:
        self.initial = freeze(initial)

    def init(self) -> Hashable:
        return self.initial

    def step(self, state: Any, input: Any, output: Any) -> tuple[bool, Any]:
        kind, arg = input
        if kind == READ:
            return output == state, state
        return True, arg

    def encode(
        self, invoke: Op, complete: Op | None, conventions: Conventions
    ) -> tuple[Hashable, Hashable] | None:
        if invoke.f == "read":
            if complete is None:
                return None  # unknown result: constrains nothing
            if complete.value is None and not conventions.nil_read_constrains:
                return None
            return (READ, None), freeze(complete.value)
        if invoke.f == "write":
            return (WRITE, freeze(invoke.value)), None
        raise _unknown_f(self.name, invoke, self._fs)

    def read_only(self, input: Any, output: Any) -> bool:
        return bool(input[0] == READ)

    def describe_operation(self, input: Any, output: Any) -> str:
        kind, arg = input
        if kind == READ:
            return f"read() -> {_show(output)}"
        return f"write({_show(arg)})"

    def describe_state(self, state: Any) -> str:
        return _show(state)


class CasRegisterModel(RegisterModel):
    """A register with compare-and-set (see the module docstring)."""

    name = "cas-register"
    _fs = "read, write, cas"

    def step(self, state: Any, input: Any, output: Any) -> tuple[bool, Any]:
        kind, arg = input
        if kind == READ:
            return output == state, state
        if kind == WRITE:
            return True, arg
        expected, new = arg
        if output is False:  # compared, found another value, did not apply
            return state != expected, state
        # ok: applied; None (indeterminate): linearized only where it applies, since where
        # it does not it is the same as never taking effect
        return state == expected, new

    def encode(
        self, invoke: Op, complete: Op | None, conventions: Conventions
    ) -> tuple[Hashable, Hashable] | None:
        if invoke.f != "cas":
            return super().encode(invoke, complete, conventions)
        value = invoke.value
        if not isinstance(value, list | tuple) or len(value) != 2:
            raise ModelError(
                f"a cas value is [expected new], got {value!r} (line {invoke.line}); write "
                "the invocation's value as a two-element list"
            )
        arg = (freeze(value[0]), freeze(value[1]))
        if complete is None:
            return (CAS, arg), None
        return (CAS, arg), complete.type == "ok"

    def read_only(self, input: Any, output: Any) -> bool:
        return bool(input[0] == READ or (input[0] == CAS and output is False))

    def describe_operation(self, input: Any, output: Any) -> str:
        kind, arg = input
        if kind != CAS:
            return super().describe_operation(input, output)
        outcome = {True: "ok", False: "did not apply", None: "unknown"}[output]
        return f"cas({_show(arg[0])}, {_show(arg[1])}) -> {outcome}"


class KeyValueModel(Model):
    """A map from keys to string values, partitioned per key (see the module docstring)."""

    name = "kv"

    def __init__(self, initial: Any = "") -> None:
        if not isinstance(initial, str):
            raise ValueError(
                f"the kv model's initial value is a string (append concatenates), got {initial!r}"
            )
        self.initial = initial

    def init(self) -> Hashable:
        return self.initial

    def step(self, state: Any, input: Any, output: Any) -> tuple[bool, Any]:
        kind, arg = input
        if kind == GET:
            return output == state, state
        if kind == PUT:
            return True, arg
        return True, state + arg

    def encode(
        self, invoke: Op, complete: Op | None, conventions: Conventions
    ) -> tuple[Hashable, Hashable] | None:
        f = invoke.f
        if f == "get":
            if complete is None:
                return None
            if complete.value is None and not conventions.nil_read_constrains:
                return None
            return (GET, None), freeze(complete.value)
        if f not in ("put", "append"):
            raise _unknown_f(self.name, invoke, "get, put, append")
        if not isinstance(invoke.value, str):
            raise ModelError(
                f"{f} of {invoke.value!r} (line {invoke.line}): the kv model's values are "
                "strings (append concatenates them)"
            )
        return ((PUT if f == "put" else APPEND), invoke.value), None

    def read_only(self, input: Any, output: Any) -> bool:
        return bool(input[0] == GET)

    prunes_by_growth = True

    def grows(self, input: Any) -> bool:
        return bool(input[0] == APPEND)

    def sets(self, input: Any) -> Any:
        return input[1] if input[0] == PUT else UNKNOWN_STATE

    def growth_test(self, input: Any, output: Any) -> Callable[[Any], bool] | None:
        # appends only lengthen the value: a get that saw v can follow only a prefix of v
        return output.startswith if isinstance(output, str) else None

    def partition(self, history: list[Operation]) -> list[list[Operation]]:
        parts: dict[Any, list[Operation]] = {}
        for op in history:
            parts.setdefault(op.key, []).append(op)
        return [parts[k] for k in sorted(parts, key=lambda k: (k is None, str(k)))]

    def describe_operation(self, input: Any, output: Any) -> str:
        kind, arg = input
        if kind == GET:
            return f"get() -> {_show(output)}"
        return f"{'put' if kind == PUT else 'append'}({_show(arg)})"

    def describe_state(self, state: Any) -> str:
        return _show(state)


MODELS = {"register": RegisterModel, "cas-register": CasRegisterModel, "kv": KeyValueModel}
"""The WGL models by name (the CLI's ``--model``); ``log`` is the Kafka-log checker's."""


def model_named(name: str, initial: Any = UNSET) -> Model:
    """The model called ``name``, with its initial value (the model's default when unset)."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}: expected one of {', '.join(MODELS)}")
    cls = MODELS[name]
    return cls() if initial is UNSET else cls(initial)
