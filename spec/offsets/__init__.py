"""The offsets spec: committed offsets and delivery semantics (``kmodel check offsets``).

- ``params``: bounds, the ``--commit`` and ``--reset`` choices and the ``--bug`` choices;
- ``commits``: OffsetCommit / OffsetFetch against the group coordinator and
  ``__consumer_offsets``, with the consumer's processing loop.
"""

from __future__ import annotations

from spec.offsets.commits import Offsets
from spec.offsets.params import BUG_SETTINGS, BUGS, COMMITS, RESETS, Params

__all__ = ["BUGS", "BUG_SETTINGS", "COMMITS", "RESETS", "Offsets", "Params", "build"]


def build(params: Params | None = None) -> Offsets:
    """The offsets spec for ``params``."""
    return Offsets(params or Params())
