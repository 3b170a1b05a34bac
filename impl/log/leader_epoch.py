"""The leader-epoch cache of a partition (KIP-101, KIP-279; Kafka's ``LeaderEpochFileCache``).

Every batch carries the epoch of the leader that wrote it; the cache records where each
epoch begins in this replica's log, as a list of ``(epoch, start offset)``. A new leader
adds ``(its epoch, its LEO)`` when it takes over, before writing anything; a follower adds
an entry when it appends the first batch of a newer epoch.

It answers OffsetsForLeaderEpoch (``end_offset_for``): a follower that restarts or sees a
new leader asks "where did epoch e end in your log?" and truncates its own log there,
instead of to its high watermark (the pre-KIP-101 rule that loses committed data, see
``kafka-semantics.md`` scenarios 1 and 2). KIP-279 made the answer the largest epoch <= e
the leader knows, with its end offset, so the follower can repeat the exchange until the
logs agree.

The end offset of epoch e is the start offset of the next higher epoch in the cache, or
the LEO if e is the latest.

Invariants: epochs strictly increase along the list and so do start offsets; every start
offset is <= the LEO of the log the cache belongs to (the log truncates the cache with
itself). ``assign`` keeps them as Kafka does (``maybeTruncateNonMonotonicEntries``, Kafka
2.8+): an entry the new one does not strictly follow is removed, whether it is an epoch
begun at the LEO in which nothing was written (routine) or one with records behind it
(an older epoch's records arriving after a newer one's, which the protocol variants
without KIP-320's fencing can produce; Kafka logs a warning). Loading the checkpoint
applies the same rule to each line in turn, as Kafka's constructor does; only a file that
does not parse is an error (``CheckpointError``).

Every change is written to the ``leader-epoch-checkpoint`` file, as Kafka does.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable

import attrs

from impl.log.checkpoint import EpochEntry, LeaderEpochCheckpointFile

__all__ = [
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "EpochEndOffset",
    "EpochEntry",
    "LeaderEpochCache",
]

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


@attrs.frozen(slots=True)
class EpochEndOffset:
    """An OffsetsForLeaderEpoch answer: the largest known epoch <= the one asked for and the
    offset where it ended; both ``UNDEFINED`` (-1) when nothing is known."""

    leader_epoch: int
    end_offset: int

    @property
    def is_undefined(self) -> bool:
        return self.leader_epoch == UNDEFINED_EPOCH and self.end_offset == UNDEFINED_EPOCH_OFFSET


_UNDEFINED = EpochEndOffset(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


class LeaderEpochCache:
    """The (epoch, start offset) list of one replica's log, optionally persisted."""

    def __init__(
        self,
        checkpoint: LeaderEpochCheckpointFile | None = None,
        entries: Iterable[EpochEntry] = (),
    ) -> None:
        self.checkpoint = checkpoint
        self._entries: list[EpochEntry] = [EpochEntry(*e) for e in entries]
        self._epochs: list[int] = [e.epoch for e in self._entries]
        problem = _monotonicity_problem(self._entries)
        if problem:
            raise ValueError(f"leader epoch entries {self._entries}: {problem}")

    @classmethod
    def load(cls, checkpoint: LeaderEpochCheckpointFile) -> LeaderEpochCache:
        """The cache as its checkpoint file holds it (empty if there is no file): each
        entry is assigned in file order, so a file whose entries do not increase loads as
        Kafka's ``LeaderEpochFileCache`` loads it (later lines supersede earlier ones they
        conflict with), without rewriting the file. ``CheckpointError`` if the file does not
        parse (``LeaderEpochCheckpointFile.read``)."""
        cache = cls()
        for entry in checkpoint.read():
            cache.assign(entry.epoch, entry.start_offset)
        cache.checkpoint = checkpoint
        return cache

    # ------------------------------------------------------------------ queries

    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        return tuple(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1].epoch if self._entries else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    def epoch_for(self, offset: int) -> int | None:
        """The epoch the record at ``offset`` was written in, by the cache (None if the
        offset is before every known epoch)."""
        starts = [e.start_offset for e in self._entries]
        i = bisect.bisect_right(starts, offset) - 1
        return self._entries[i].epoch if i >= 0 else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> EpochEndOffset:
        """OffsetsForLeaderEpoch with KIP-279 semantics.

        - the latest epoch ends at the LEO;
        - an epoch the cache lacks is answered with the largest epoch below it, ending where
          the next higher known epoch starts;
        - an epoch below every known one is answered as itself, ending where the first known
          epoch starts (its records are gone; the follower must truncate to there);
        - an epoch above every known one, or UNDEFINED_EPOCH, is answered UNDEFINED.
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return _UNDEFINED
        if requested_epoch == self._entries[-1].epoch:
            return EpochEndOffset(requested_epoch, log_end_offset)
        higher = bisect.bisect_right(self._epochs, requested_epoch)
        if higher == len(self._entries):
            return _UNDEFINED
        end = self._entries[higher].start_offset
        if higher == 0:
            return EpochEndOffset(requested_epoch, end)
        return EpochEndOffset(self._entries[higher - 1].epoch, end)

    # ------------------------------------------------------------------ changes

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset`` (the LEO at which a new leader
        takes over, or the base offset of a batch a log appends). Returns whether the cache
        changed. Kafka's ``LeaderEpochFileCache.assign``:

        - nothing to do if ``epoch`` is already the latest epoch and starts at or before
          ``start_offset`` (later batches of the current epoch);
        - otherwise every entry at the end that the new one would not strictly follow --
          an epoch >= ``epoch``, or a start offset >= ``start_offset`` -- is removed first
          (``maybeTruncateNonMonotonicEntries``), then the new entry is added.

        Removing an entry that starts exactly at ``start_offset`` is routine: an epoch in
        which no record was written, superseded. Removing any other is what Kafka warns
        about ("caused truncation of conflicting entries"): records of an older epoch
        arrive after a newer one's, and the newer epochs are forgotten, so the cache no
        longer describes every record before ``start_offset`` (even an epoch equal to
        ``epoch`` that started earlier now starts here). ``ValueError`` for a negative
        epoch or offset, as Kafka's ``IllegalArgumentException``.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"cannot assign epoch {epoch} at offset {start_offset}")
        latest = self.latest_entry
        if latest is not None and epoch == latest.epoch and start_offset >= latest.start_offset:
            return False
        keep = len(self._entries)
        while keep and (
            self._entries[keep - 1].epoch >= epoch
            or self._entries[keep - 1].start_offset >= start_offset
        ):
            keep -= 1
        del self._entries[keep:]
        del self._epochs[keep:]
        self._entries.append(EpochEntry(epoch, start_offset))
        self._epochs.append(epoch)
        self._flush()
        return True

    def truncate_from_end(self, end_offset: int) -> bool:
        """Forget every epoch that starts at or after ``end_offset`` (the log was truncated to
        ``end_offset``). Returns whether the cache changed."""
        keep = len(self._entries)
        while keep and self._entries[keep - 1].start_offset >= end_offset:
            keep -= 1
        if keep == len(self._entries):
            return False
        del self._entries[keep:]
        del self._epochs[keep:]
        self._flush()
        return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """The log start moved to ``start_offset``: epochs that begin at or before it collapse
        into the latest of them, now starting at ``start_offset``. Returns whether the cache
        changed."""
        covered = 0
        while covered < len(self._entries) and self._entries[covered].start_offset <= start_offset:
            covered += 1
        if covered == 0:
            return False
        last = self._entries[covered - 1]
        if covered == 1 and last.start_offset == start_offset:
            return False
        del self._entries[:covered]
        del self._epochs[:covered]
        self._entries.insert(0, EpochEntry(last.epoch, start_offset))
        self._epochs.insert(0, last.epoch)
        self._flush()
        return True

    def clear(self) -> None:
        if self._entries:
            self._entries.clear()
            self._epochs.clear()
            self._flush()

    def check_invariants(self, log_end_offset: int | None = None) -> None:
        problem = _monotonicity_problem(self._entries)
        assert not problem, problem
        assert self._epochs == [e.epoch for e in self._entries]
        if log_end_offset is not None and self._entries:
            assert self._entries[-1].start_offset <= log_end_offset, (
                self._entries,
                log_end_offset,
            )

    def _flush(self) -> None:
        if self.checkpoint is not None:
            self.checkpoint.write(self._entries)

    def __repr__(self) -> str:
        body = ", ".join(f"{e.epoch}@{e.start_offset}" for e in self._entries)
        return f"LeaderEpochCache([{body}])"


def _monotonicity_problem(entries: list[EpochEntry]) -> str | None:
    for a, b in itertools.pairwise(entries):
        if not (a.epoch < b.epoch and a.start_offset < b.start_offset):
            return f"entry {tuple(b)} does not follow {tuple(a)} (epochs and offsets increase)"
    for e in entries:
        if e.epoch < 0 or e.start_offset < 0:
            return f"entry {tuple(e)} is negative"
    return None
