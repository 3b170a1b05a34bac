"""The annotated reference of a spec, rendered from its own declarations.

Every action, invariant and "sometimes" property documents itself (its docstring names the
Kafka mechanism, config or KIP it models); this module lays them out as markdown, so the
reference in ``docs/reference/`` can never drift from the code: a test re-renders it and
compares.
"""

from __future__ import annotations

from collections.abc import Sequence

from spec.framework import Spec
from spec.liveness import describe_fairness


def _table(rows: Sequence[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    return lines


def render_reference(title: str, intro: str, configurations: Sequence[tuple[str, Spec]]) -> str:
    """Markdown: for each action and property, its doc and the configurations using it."""
    out = [f"# {title}", "", intro.strip(), ""]
    names = [name for name, _ in configurations]
    out += ["Configurations compared below:", ""]
    out += [f"- **{name}**" for name in names]
    out.append("")
    first = configurations[0][1]
    every_action = []
    seen: set[str] = set()
    for _, spec in configurations:
        for decl in type(spec)._actions:
            if decl.name not in seen:
                seen.add(decl.name)
                every_action.append(decl)
    out += ["## Actions", ""]
    rows: list[tuple[str, ...]] = []
    for decl in every_action:
        used = [n for n, spec in configurations if decl.name in {d.name for d in spec.actions()}]
        args = ", ".join(decl.params) or "-"
        rows.append((f"`{decl.name}`", decl.kind.value, args, ", ".join(used) or "-", decl.doc))
    out += _table(rows, ("action", "kind", "arguments", "used in", "what it models"))
    out += ["", "## Invariants and transition properties", ""]
    rows = [(f"`{d.name}`", d.doc) for d in first.invariants() + first.transition_properties()]
    out += _table(rows, ("property", "what it states"))
    out += ["", '## "Sometimes" properties (the model is not vacuous)', ""]
    rows = [(f"`{d.name}`", d.doc) for d in type(first)._sometimes]
    out += _table(rows, ("property", "what must be reachable"))
    liveness = type(first)._liveness
    if liveness:
        out += ["", "## Liveness properties (checked under fairness)", ""]
        rows = [
            (
                f"`{d.name}`",
                "always eventually" if d.premise is None else f"after `{d.premise}`, eventually",
                d.doc,
            )
            for d in liveness
        ]
        out += _table(rows, ("property", "form", "what must eventually hold"))
        out += ["", "Fairness assumed, per configuration:", ""]
        for name, spec in configurations:
            fair = ", ".join(describe_fairness(f) for f in spec.fairness()) or "none"
            out.append(f"- **{name}**: {fair}")
    out.append("")
    return "\n".join(out)
