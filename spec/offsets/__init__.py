"""The offsets spec: committed offsets and delivery semantics (``kmodel check offsets``).

In plain words. A consumer group remembers how far it has read each partition by
*committing* an offset to the group coordinator, which stores it in ``__consumer_offsets``;
a consumer that takes over a partition (after a rebalance, a crash or a restart) resumes
from the committed offset. When it commits decides what a crash costs. Committing *after*
processing (``enable.auto.commit=false`` and ``commitSync`` after the work, or auto-commit,
which commits on the next poll) gives *at-least-once* delivery: a crash between processing
and committing makes the next owner process the same records again, but none is skipped.
Committing *before* processing gives *at-most-once*: a crash after the commit skips the
records not yet processed. A commit is fenced by the member's generation, so a zombie member
cannot move the group's offset after its partition was given to another member.

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
