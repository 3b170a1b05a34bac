"""Where the corpora shared between projects live: ``../shared/corpora`` beside the
repository, when it is there. Tests that read them skip, saying so, when it is not; the
default suite stands on the corpora inside the repository (``model_tests/corpora``) and
on generated histories."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "corpora"
PORCUPINE = SHARED / "porcupine"
"""Porcupine's public test histories (anishathalye/porcupine, ``test_data/``)."""

needs_porcupine = pytest.mark.skipif(
    not (PORCUPINE / "README.md").exists(),
    reason="Porcupine's corpus (../shared/corpora/porcupine beside the repository) is not here",
)
