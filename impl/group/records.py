"""The records a group coordinator writes to ``__consumer_offsets``, and reading them back.

Kafka's ``GroupMetadataManager`` writes two kinds of record to the group's partition of the
internal topic (the formats of ``GroupCoordinatorRecordSerde``: versioned keys and values):

- an **offset commit** per partition: key (group, topic, partition), value the committed
  offset (the next one to read), written by every accepted OffsetCommit;
- the **group metadata**: key (group), value the generation, the leader and every member
  with its subscription and assignment, written when the leader's SyncGroup completes a
  generation and when the group empties (``storeGroup``).

The topic is compacted (``cleanup.policy=compact``): only the last record of each key
matters, which is what ``read_group`` keeps (the cleaner itself lives in ``impl/log``, and
a log here is read whole, so reading gives the same answer with or without it). The keys
and values here are JSON (a version tag first) rather than Kafka's binary schemas; what
matters is that they are keyed as Kafka keys them.
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson

from impl.group.coordinator import StoredGroup

__all__ = ["group_record", "offset_records", "read_group"]

_OFFSET = 1
"""Kafka's key version 0/1: an offset commit key."""
_GROUP = 2
"""Kafka's key version 2: a group metadata key."""


def offset_records(
    group: str, offsets: Iterable[tuple[tuple[str, int], int]]
) -> tuple[tuple[bytes, bytes], ...]:
    """The (key, value) records of an OffsetCommit, one per partition."""
    return tuple(
        (
            orjson.dumps([_OFFSET, group, topic, partition]),
            orjson.dumps({"offset": offset}),
        )
        for (topic, partition), offset in offsets
    )


def group_record(group: str, stored: StoredGroup) -> tuple[bytes, bytes]:
    """The (key, value) record of the group's metadata."""
    value = {
        "generation": stored.generation,
        "leader": stored.leader,
        "members": [
            [mid, client, list(topics), session, rebalance, [list(tp) for tp in parts]]
            for mid, client, topics, session, rebalance, parts in stored.members
        ],
    }
    return orjson.dumps([_GROUP, group]), orjson.dumps(value)


def read_group(
    entries: Iterable[tuple[int, int, bytes | None, bytes | None]], group: str
) -> tuple[StoredGroup | None, dict[tuple[str, int], int]]:
    """What a new coordinator loads for ``group`` from its replica's log (``entries``:
    (offset, epoch, key, value) from the log start, ``Log.entries``): the last group
    metadata record and, per partition, the last committed offset."""
    stored: StoredGroup | None = None
    offsets: dict[tuple[str, int], int] = {}
    for _, _, key, value in entries:
        if key is None or value is None:
            continue
        k = orjson.loads(key)
        if not isinstance(k, list) or len(k) < 2 or k[1] != group:
            continue
        v = orjson.loads(value)
        if k[0] == _OFFSET:
            offsets[(k[2], k[3])] = v["offset"]
        elif k[0] == _GROUP:
            stored = StoredGroup(
                v["generation"],
                v["leader"],
                tuple(
                    (
                        mid,
                        client,
                        tuple(topics),
                        session,
                        rebalance,
                        tuple((t, p) for t, p in parts),
                    )
                    for mid, client, topics, session, rebalance, parts in v["members"]
                ),
            )
    return stored, offsets
