"""Verdicts, as Porcupine and Knossos give them: OK, ILLEGAL, or UNKNOWN (a timeout or an
exhausted budget), never a guess."""

from __future__ import annotations

import enum


class Verdict(enum.Enum):
    OK = "ok"
    ILLEGAL = "illegal"
    UNKNOWN = "unknown"

    @staticmethod
    def combine(verdicts: list[Verdict]) -> Verdict:
        """The verdict of a whole history from its parts: any ILLEGAL part makes it ILLEGAL;
        otherwise any UNKNOWN part makes it UNKNOWN; otherwise OK (also for no parts)."""
        if Verdict.ILLEGAL in verdicts:
            return Verdict.ILLEGAL
        if Verdict.UNKNOWN in verdicts:
            return Verdict.UNKNOWN
        return Verdict.OK
