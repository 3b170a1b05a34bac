"""Opening a partition directory after a crash (Kafka's ``LogLoader``, ``LogSegment.recover``).

A broker that stopped uncleanly cannot trust the tail of its log: the last batches may be
torn (power failed mid write-back) or corrupt. What it can trust is everything below its
*recovery point*: the offset up to which the log was flushed, persisted in
``recovery-point-offset-checkpoint``. On open:

1. leftover ``*.tmp`` files (a checkpoint write interrupted before its rename) and index
   files without their ``.log`` are removed; so are ``*.cleaned`` files (a cleaning that
   crashed before its swap, ``impl.log.cleaner``), and a ``*.swap`` file (a cleaning that
   crashed after it) replaces the segments whose offsets it covers (Kafka's
   ``LogLoader.completeSwapOperations``);
2. segments entirely below the recovery point are trusted: their index is loaded and
   sanity-checked (rebuilt by a full scan if that fails), their end found by stepping over
   batch headers;
3. the active segment, and every segment that reaches the recovery point, is scanned batch
   by batch: CRC-32C, framing, contiguous offsets, and leader epochs that never decrease
   (a stricter check than Kafka's, which catches a flipped epoch field outside the CRC;
   the replicas never write a decreasing epoch, see ``docs/impl.md``, finding F2).
   The index is rebuilt as appends would have built it. The first batch that fails ends the
   log: the file is cut there and every later segment is deleted, so offsets stay
   contiguous;
4. the leader-epoch cache is re-derived over the scanned range (an epoch starts at the
   first batch that carries it, which covers a checkpoint write lost in the crash), then
   truncated to the recovered LEO and to the log start (KIP-101: the cache never names an
   epoch start beyond the log).

The loss this produces is exactly the unflushed suffix (or the damaged part of it); that it
is *safe* is the replication protocol's business: the replica re-fetches what it lost, and
must not count it as committed in the meantime (KIP-966, the "last replica standing").
"""

from __future__ import annotations

import attrs

from impl.log.batch import RecordBatch, read_header
from impl.log.checkpoint import LeaderEpochCheckpointFile
from impl.log.config import LogConfig
from impl.log.fs import FileSystem, join
from impl.log.index import IndexCorruptError
from impl.log.leader_epoch import LeaderEpochCache
from impl.log.segment import INDEX_SUFFIX, LOG_SUFFIX, Segment, SegmentScan, parse_base_offset

__all__ = ["CLEANED_SUFFIX", "SWAP_SUFFIX", "LoadedLog", "RecoveryReport", "load_log"]

CLEANED_SUFFIX = ".cleaned"
"""A cleaned segment being written: ``<base>.log.cleaned``; not yet part of the log."""
SWAP_SUFFIX = ".swap"
"""A cleaned segment, complete and fsynced, replacing the segments it covers:
``<base>.log.swap``. Renaming ``.cleaned`` to ``.swap`` is the cleaning's commit point."""


@attrs.frozen
class RecoveryReport:
    """What opening a partition directory did, for logs, scenarios and tests."""

    directory: str
    segments_found: int
    scans: tuple[SegmentScan, ...]
    """One per segment that was validated batch by batch, in offset order."""
    indexes_rebuilt: tuple[int, ...]
    """Base offsets of trusted segments whose index failed its sanity check."""
    segments_deleted: tuple[int, ...]
    """Base offsets of segments removed because an earlier one was cut short."""
    files_removed: tuple[str, ...]
    log_start_offset: int
    log_end_offset: int
    epochs_before: tuple[tuple[int, int], ...]
    epochs_after: tuple[tuple[int, int], ...]

    @property
    def truncated_bytes(self) -> int:
        return sum(scan.truncated_bytes for scan in self.scans)

    @property
    def clean(self) -> bool:
        """Nothing was cut, rebuilt or deleted."""
        return not (self.truncated_bytes or self.indexes_rebuilt or self.segments_deleted)

    @property
    def errors(self) -> tuple[str, ...]:
        return tuple(scan.error for scan in self.scans if scan.error is not None)


@attrs.define
class LoadedLog:
    segments: list[Segment]
    epoch_cache: LeaderEpochCache
    log_start_offset: int
    recovery_point: int
    report: RecoveryReport


def load_log(
    disk: FileSystem,
    directory: str,
    config: LogConfig,
    *,
    recovery_point: int,
    log_start_offset: int,
) -> LoadedLog:
    """Load and recover the partition directory ``directory``; creates an empty log (one
    segment at ``log_start_offset``) if it holds no segment."""
    if recovery_point < 0 or log_start_offset < 0:
        raise ValueError(
            f"recovery point {recovery_point} and log start offset {log_start_offset} are >= 0"
        )
    removed: list[str] = []
    logs: list[int] = []
    indexes: list[int] = []
    removed.extend(_finish_cleaning(disk, directory))
    for name in disk.list_dir(directory):
        if name.endswith(".tmp"):
            disk.delete(join(directory, name))
            removed.append(name)
            continue
        parsed = parse_base_offset(name)
        if parsed is not None:
            (logs if parsed[1] == LOG_SUFFIX else indexes).append(parsed[0])
    for base in sorted(set(indexes) - set(logs)):
        name = f"{base:020d}{INDEX_SUFFIX}"
        disk.delete(join(directory, name))
        removed.append(name)
    bases = sorted(logs)

    cache = LeaderEpochCache.load(LeaderEpochCheckpointFile(disk, directory))
    epochs_before = tuple((e.epoch, e.start_offset) for e in cache.entries)

    segments: list[Segment] = []
    scans: list[SegmentScan] = []
    rebuilt: list[int] = []
    deleted: list[int] = []
    # The first segment that may hold offsets at or above the recovery point; it and all
    # later ones are scanned. The active (last) segment always is.
    first_unflushed = 0
    while first_unflushed < len(bases) - 1 and bases[first_unflushed + 1] <= recovery_point:
        first_unflushed += 1
    scanning = False
    last_epoch = -1

    def check(batch: RecordBatch) -> str | None:
        nonlocal last_epoch
        epoch = batch.partition_leader_epoch
        if epoch < last_epoch:
            return (
                f"leader epoch {epoch} follows a batch of epoch {last_epoch} (epochs never "
                "decrease along a log; the epoch field is corrupt)"
            )
        last_epoch = epoch
        latest = cache.latest_epoch
        if epoch >= 0 and (latest is None or epoch > latest):
            cache.assign(epoch, batch.base_offset)
        return None

    for i, base in enumerate(bases):
        segment = Segment.open_existing(disk, directory, base, config)
        if segments and base != segments[-1].next_offset:
            # This segment does not continue the previous one: that one was cut by its scan
            # or lost its tail below the recovery point. Offsets must stay contiguous, so the
            # log ends before this segment, and every later one goes too (as Kafka deletes
            # every unflushed segment after one it had to cut).
            segment.delete()
            deleted.append(base)
            continue
        if i >= first_unflushed:
            if not scanning:
                scanning = True
                cache.truncate_from_end(base)
                last_epoch = cache.latest_epoch if cache.latest_epoch is not None else -1
            scans.append(segment.recover(check))
        else:
            try:
                segment.load()
            except IndexCorruptError:
                rebuilt.append(base)
                scans.append(segment.recover())
        segments.append(segment)

    if not segments:
        segments.append(Segment.create(disk, directory, log_start_offset, config))
    log_end = segments[-1].next_offset
    log_start = max(log_start_offset, segments[0].base_offset)
    if log_start > log_end:
        # Everything below the checkpointed log start was deleted anyway; what remains of
        # the log is below it (lost): start empty at the log start.
        for segment in segments:
            segment.delete()
            deleted.append(segment.base_offset)
        segments = [Segment.create(disk, directory, log_start, config)]
        cache.clear()
        log_end = log_start
    cache.truncate_from_end(log_end)
    cache.truncate_from_start(log_start)

    for segment in segments:
        segment.check_invariants()
    cache.check_invariants(log_end)
    assert log_start <= log_end
    report = RecoveryReport(
        directory=directory,
        segments_found=len(bases),
        scans=tuple(scans),
        indexes_rebuilt=tuple(rebuilt),
        segments_deleted=tuple(deleted),
        files_removed=tuple(removed),
        log_start_offset=log_start,
        log_end_offset=log_end,
        epochs_before=epochs_before,
        epochs_after=tuple((e.epoch, e.start_offset) for e in cache.entries),
    )
    return LoadedLog(segments, cache, log_start, min(recovery_point, log_end), report)


def _finish_cleaning(disk: FileSystem, directory: str) -> list[str]:
    """Undo a cleaning that crashed before its commit point (delete ``*.cleaned``) or
    complete one that crashed after it (a ``*.swap`` replaces every segment whose base
    offset lies in its offset range, then takes its final name). Returns the files
    removed."""
    removed = []
    for name in sorted(disk.list_dir(directory)):
        if name.endswith(CLEANED_SUFFIX):
            disk.delete(join(directory, name))
            removed.append(name)
    for name in sorted(disk.list_dir(directory)):
        if not name.endswith(LOG_SUFFIX + SWAP_SUFFIX):
            continue
        final = name[: -len(SWAP_SUFFIX)]
        parsed = parse_base_offset(final)
        assert parsed is not None, f"{directory}/{name}: not a segment's swap file"
        first = parsed[0]
        swap = join(directory, name)
        data = disk.read(swap)
        position, end = 0, first
        while (header := read_header(data, position)) is not None and header.size > 0:
            end = header.last_offset + 1
            position += header.size
        for other in sorted(disk.list_dir(directory)):
            found = parse_base_offset(other)
            if found is not None and first <= found[0] < end:
                disk.delete(join(directory, other))
                removed.append(other)
        disk.rename(swap, join(directory, final))
    return removed
