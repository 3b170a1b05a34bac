"""The annotated reference of a spec, rendered from its own declarations.

Every action, invariant and "sometimes" property documents itself (its docstring names the
Kafka mechanism, config or KIP it models); the spec's modules explain the Kafka mechanism in
plain words, and its state records say what each field means. This module lays them out as
one markdown page per spec: the mechanism in plain words, the state, then the actions and
properties with the Kafka configs and KIPs each one cites, so the reference in
``docs/reference/`` can never drift from the code: a test re-renders it and compares.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import attrs

from spec.framework import Spec, SpecError
from spec.liveness import describe_fairness

KIP = re.compile(r"\bKIP-(\d+)\b")
"""A KIP cited in a docstring: ``KIP-320``."""
CONFIG = re.compile(r"``([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+)(?:=[^`]*)?``")
"""A Kafka config cited in a docstring: a dotted lower-case name in double backticks
(``min.insync.replicas``, ``unclean.leader.election.enable=true``)."""
ACKS = re.compile(r"\backs(?:=| ?\()")
"""The producer's ``acks`` config, cited as ``acks=all`` or ``acks (0, 1, all)``."""
NOT_CONFIGS = ("spec.", "impl.", "jepsen_py.", "model_tests.", "docs.")
"""Dotted names that are this project's modules, not Kafka configs."""
FILE_SUFFIXES = (".py", ".json", ".jsonl", ".md", ".html", ".txt", ".edn")


def kafka_refs(doc: str) -> str:
    """The Kafka configs and KIPs a docstring cites, configs first, each once, in order."""
    configs: list[str] = []
    if ACKS.search(doc):
        configs.append("acks")
    for name in CONFIG.findall(doc):
        if name.startswith(NOT_CONFIGS) or name.endswith(FILE_SUFFIXES) or name in configs:
            continue
        configs.append(name)
    kips: list[str] = []
    for number in KIP.findall(doc):
        if f"KIP-{number}" not in kips:
            kips.append(f"KIP-{number}")
    return ", ".join([f"`{c}`" for c in configs] + kips) or "-"


def cited(docs: Sequence[str]) -> str:
    """Every Kafka config (alphabetically) and KIP (by number) the docstrings cite."""
    configs: set[str] = set()
    kips: set[int] = set()
    for doc in docs:
        for ref in kafka_refs(doc).split(", "):
            if ref.startswith("KIP-"):
                kips.add(int(ref.removeprefix("KIP-")))
            elif ref != "-":
                configs.add(ref)
    return ", ".join([*sorted(configs), *(f"KIP-{n}" for n in sorted(kips))]) or "none"


def docstring_markdown(doc: str) -> str:
    """A docstring as markdown: reST definition lists (a term line, then its text indented)
    become bullets with the term in bold; everything else is already markdown."""
    lines = inspect.cleandoc(doc).splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        follows = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and not line.startswith(" ") and follows.startswith("    "):
            body: list[str] = []
            i += 1
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                if not lines[i].strip() and not (
                    i + 1 < len(lines) and lines[i + 1].startswith("    ")
                ):
                    break
                body.append(lines[i].strip())
                i += 1
            out.append(f"- **{line.strip()}**: " + " ".join(b for b in body if b))
            continue
        out.append(line)
        i += 1
    return "\n".join(out).strip()


class _NoPipes(ast.NodeTransformer):
    """``X | None`` as ``Optional[X]`` and ``X | Y`` as ``Union[X, Y]``: a markdown table
    cell cannot hold a ``|`` inside code."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        if not isinstance(node.op, ast.BitOr):
            return self.generic_visit(node)
        left, right = self.visit(node.left), self.visit(node.right)
        if isinstance(right, ast.Constant) and right.value is None:
            return ast.Subscript(ast.Name("Optional"), left)
        return ast.Subscript(ast.Name("Union"), ast.Tuple([left, right]))


def field_docs(cls: type) -> list[tuple[str, str, str]]:
    """``(field, type, docstring)`` for each field of an attrs class, read from its source
    (the string under a field is its documentation). ``SpecError`` for a field without
    one: a state field the reference cannot explain is a field a reader cannot either."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    found: dict[str, tuple[str, str]] = {}
    for here, after in zip(body, [*body[1:], None], strict=True):
        if not isinstance(here, ast.AnnAssign) or not isinstance(here.target, ast.Name):
            continue
        doc = ""
        if (
            isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            doc = " ".join(after.value.value.split())
        found[here.target.id] = (ast.unparse(_NoPipes().visit(here.annotation)), doc)
    rows = []
    for field in attrs.fields(cls):
        annotation, doc = found[field.name]
        if not doc:
            raise SpecError(
                f"{cls.__qualname__}.{field.name} has no docstring: write one under the field "
                "saying what it holds and which Kafka state it stands for"
            )
        rows.append((field.name, annotation, doc))
    return rows


def _table(rows: Sequence[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    return lines


def _full_doc(spec: Spec, method: str) -> str:
    fn: Callable[..., Any] = getattr(type(spec), method)
    return fn.__doc__ or ""


def render_reference(
    title: str,
    intro: str,
    configurations: Sequence[tuple[str, Spec]],
    mechanism: Sequence[ModuleType] = (),
    state: Sequence[type] = (),
) -> str:
    """Markdown: the Kafka mechanism in plain words (the docstrings of the ``mechanism``
    modules), the ``state`` records field by field, then for each action and property its
    doc, the Kafka configs and KIPs its docstring cites, and the configurations using it."""
    out = [f"# {title}", "", intro.strip(), ""]
    first = configurations[0][1]
    docs = [
        _full_doc(spec, decl.method) for _, spec in configurations for decl in type(spec)._actions
    ]
    docs += [
        _full_doc(first, d.method)
        for d in (*first.invariants(), *first.transition_properties(), *type(first)._sometimes)
    ]
    docs += [_full_doc(first, d.method) for d in type(first)._liveness]
    out += [f"Kafka configs and KIPs the actions and properties below cite: {cited(docs)}.", ""]
    if mechanism:
        out += ["## The mechanism in plain words", ""]
        for module in mechanism:
            doc = module.__doc__ or ""
            if not doc.strip():
                raise SpecError(f"{module.__name__} has no module docstring to explain it")
            out += [f"*From `{module.__name__}`:*", "", docstring_markdown(doc), ""]
    if state:
        out += ["## State", ""]
        for cls in state:
            out += [f"### `{cls.__name__}` (`{cls.__module__}`)", ""]
            if cls.__doc__ and not cls.__doc__.startswith(f"{cls.__name__}("):
                out += [docstring_markdown(cls.__doc__), ""]
            fields = [(f"`{name}`", f"`{kind}`", doc) for name, kind, doc in field_docs(cls)]
            out += _table(fields, ("field", "type", "what it holds"))
            out.append("")
    names = [name for name, _ in configurations]
    out += ["## Configurations", "", "Configurations compared below:", ""]
    out += [f"- **{name}**" for name in names]
    out.append("")
    every_action = []
    seen: set[str] = set()
    owner: dict[str, Spec] = {}
    for _, spec in configurations:
        for decl in type(spec)._actions:
            if decl.name not in seen:
                seen.add(decl.name)
                every_action.append(decl)
                owner[decl.name] = spec
    out += ["## Actions", ""]
    rows: list[tuple[str, ...]] = []
    for decl in every_action:
        used = [n for n, spec in configurations if decl.name in {d.name for d in spec.actions()}]
        args = ", ".join(decl.params) or "-"
        refs = kafka_refs(_full_doc(owner[decl.name], decl.method))
        rows.append(
            (f"`{decl.name}`", decl.kind.value, args, ", ".join(used) or "-", decl.doc, refs)
        )
    out += _table(
        rows, ("action", "kind", "arguments", "used in", "what it models", "Kafka configs, KIPs")
    )
    out += ["", "## Invariants and transition properties", ""]
    rows = [
        (f"`{d.name}`", d.doc, kafka_refs(_full_doc(first, d.method)))
        for d in first.invariants() + first.transition_properties()
    ]
    out += _table(rows, ("property", "what it states", "Kafka configs, KIPs"))
    out += ["", '## "Sometimes" properties (the model is not vacuous)', ""]
    rows = [
        (f"`{d.name}`", d.doc, kafka_refs(_full_doc(first, d.method)))
        for d in type(first)._sometimes
    ]
    out += _table(rows, ("property", "what must be reachable", "Kafka configs, KIPs"))
    liveness = type(first)._liveness
    if liveness:
        out += ["", "## Liveness properties (checked under fairness)", ""]
        rows = [
            (
                f"`{d.name}`",
                "always eventually" if d.premise is None else f"after `{d.premise}`, eventually",
                d.doc,
                kafka_refs(_full_doc(first, d.method)),
            )
            for d in liveness
        ]
        out += _table(
            rows, ("property", "form", "what must eventually hold", "Kafka configs, KIPs")
        )
        out += ["", "Fairness assumed, per configuration:", ""]
        for name, spec in configurations:
            fair = ", ".join(describe_fairness(f) for f in spec.fairness()) or "none"
            out.append(f"- **{name}**: {fair}")
    out.append("")
    return "\n".join(out)
