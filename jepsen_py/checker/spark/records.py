"""The records the Spark job's steps hand each other: a checked (run, key) as the driver
gathers it (`Group`), a rejected line (`Rejected`), and what the job returns
(`SparkReport`).

The per-key path (`job`), the SQL path (`logsql`) and the writer of the verdict table
(`output`) all read them, so they live here, below all three.
"""

from __future__ import annotations

from typing import Any

import attrs

from jepsen_py.checker.records import InputResult
from jepsen_py.checker.spark.keycheck import FILE_RUN, file_of, run_of
from jepsen_py.checker.taxonomy import GROUP_FS, REASSIGN_FS


@attrs.define
class Group:
    """The result of one (run, key), as the driver gathers it."""

    run_eff: str
    key: str | None
    files: tuple[int, ...]
    model: str | None
    verdict: str | None
    ops: int
    seconds: float
    explanation: str | None
    witness: str | None
    anomalies: str | None
    kafka: str | None
    linearizable: str | None
    consistency: str | None
    violations: tuple[str, ...]
    fs: tuple[str, ...]
    mismatches: int
    client_ops: int
    needs_ordinal: bool
    timed_out: bool
    engine: str = "per-key"

    @classmethod
    def from_row(
        cls,
        row: Any,
        *,
        files: tuple[int, ...],
        engine: str,
        mismatches: int | None = None,
        needs_ordinal: bool | None = None,
    ) -> Group:
        """A worker's result row (`keycheck.RESULT_DDL`'s fields) as a `Group`;
        ``mismatches`` and ``needs_ordinal`` override the row's (a whole file has none)."""
        return cls(
            run_eff=row["run_eff"],
            key=row["key"],
            files=files,
            model=row["model"],
            verdict=row["verdict"],
            ops=int(row["ops"] or 0),
            seconds=float(row["seconds"] or 0.0),
            explanation=row["explanation"],
            witness=row["witness"],
            anomalies=row["anomalies"],
            kafka=row["kafka"],
            linearizable=row["linearizable"],
            consistency=row["consistency"],
            violations=tuple(row["violations"] or ()),
            fs=tuple(row["fs"] or ()),
            mismatches=int(row["mismatches"] or 0) if mismatches is None else mismatches,
            client_ops=int(row["client_ops"] or 0),
            needs_ordinal=bool(row["needs_ordinal"]) if needs_ordinal is None else needs_ordinal,
            timed_out=bool(row["timed_out"]),
            engine=engine,
        )

    @property
    def ident(self) -> tuple[str, str | None]:
        return (self.run_eff, self.key)

    @property
    def run(self) -> str | None:
        return None if self.run_eff.startswith(FILE_RUN) else self.run_eff

    @property
    def is_key(self) -> bool:
        """False for a group of ``assign``/``subscribe`` ops alone (handed to the keys), or
        of a consumer group's delivery ops alone (keyless commits and fetches, which the
        log check leaves aside, as the local engine does)."""
        return not (set(self.fs) <= REASSIGN_FS | GROUP_FS)


@attrs.frozen
class Rejected:
    """A rejected line: where, why, the key and run it names, and which step rejected it
    (``parse``, ``validate``, ``refused``: a ``txn`` op, or ``model``)."""

    pos: int
    reason: str
    key: str | None
    run: str | None
    stage: str
    order: int = 0
    """Its place among its group's rejections (the local engine's order within a key)."""

    @property
    def group(self) -> tuple[str, str | None]:
        return (run_of(file_of(self.pos), self.run), self.key)


@attrs.frozen(eq=False)
class SparkReport:
    """What the job found: one `InputResult` per file (the local engine's shape), the
    verdict table's rows, figures about the run, and the rejected lines brought back
    (positions into ``files``, the paths of the file ids) for ``rejected.json``."""

    inputs: list[InputResult]
    verdicts: list[dict[str, Any]]
    figures: dict[str, Any]
    rejected: list[Rejected] = attrs.field(factory=list)
    files: tuple[str, ...] = ()
