"""The replication spec's pure rules, restated as small functions with contracts.

``spec.replication`` computes these rules inside its actions, on whole states. Here each is
a function of plain values (ints, lists of record epochs, lists of ``(epoch, id)`` records)
carrying PEP 316 contracts (``pre:``/``post:`` in the docstring) that CrossHair checks
symbolically: it explores execution paths looking for inputs that satisfy the
preconditions and break a postcondition. ``model_tests/test_crosshair_contracts.py`` checks
that each function agrees with the spec's own computation on every reachable state of
small configurations, and runs CrossHair on each within a bounded budget.

Where two formulations of a rule exist, both are here, so that ``crosshair diffbehavior``
can compare them: the published model's ISR-expansion rule against Kafka's (the extended
model's), and the spec's truncation rule against the KIP-279 OffsetsForLeaderEpoch exchange
a real follower performs.

Records are ``(epoch, id)``; logs are lists of records, offset = index.
"""

from __future__ import annotations

Record = tuple[int, int]


# --- the high watermark --------------------------------------------------------------------


def follower_hw(leader_hw: int, follower_leo: int) -> int:
    """A follower's HW after a fetch: the leader's HW from the response, capped at its own
    LEO after the append (``Partition.updateFollowerFetchState`` / the fetcher's
    ``maybeUpdateHighWatermark``). A follower never believes records it lacks are
    committed, so it learns of an HW advance one fetch late.

    pre: leader_hw >= 0
    pre: follower_leo >= 0
    post: __return__ <= follower_leo
    post: __return__ <= leader_hw
    post: __return__ == leader_hw or __return__ == follower_leo
    """
    return min(leader_hw, follower_leo)


def leader_advance_hw(
    hw: int, leader_leo: int, log_size: int, member_leos: list[int], members_ok: list[bool]
) -> int | None:
    """The published model's HW advance (one record at a time): the HW passes offset
    ``hw`` once every ISR member holds a record there and follows the leader (believes it
    leads; with KIP-320, in its current epoch). ``members_ok[i]`` says member ``i``
    follows; ``None``: not enabled. The unfenced rule bounds the HW by ``log_size``, the
    fenced one by the leader's own LEO (pass ``log_size=leader_leo``).

    pre: hw >= 0
    pre: len(member_leos) == len(members_ok)
    post: __return__ is None or __return__ == hw + 1
    post: __return__ is None or all(leo >= __return__ for leo in member_leos)
    post: __return__ is None or all(members_ok)
    post: __return__ is None or __return__ <= log_size
    """
    if hw >= log_size:
        return None
    for leo, ok in zip(member_leos, members_ok, strict=True):
        if not ok or leo <= hw:
            return None
    return hw + 1


def recompute_leader_hw(hw: int, leader_leo: int, member_reported_leos: list[int]) -> int:
    """Kafka's ``Partition.maybeIncrementLeaderHW`` (the extended model's leader view): the
    HW becomes the smallest LEO over the ISR (the leader's own and each follower's as last
    reported; -1 when a follower has not fetched in this epoch), if that is higher; it
    never goes down.

    pre: 0 <= hw <= leader_leo
    pre: all(leo >= -1 for leo in member_reported_leos)
    post: __return__ >= hw
    post: __return__ <= leader_leo
    post: __return__ == hw or all(leo >= __return__ for leo in member_reported_leos)
    """
    target = leader_leo
    for leo in member_reported_leos:
        target = min(target, leo)
    return target if target > hw else hw


# --- ISR expansion -------------------------------------------------------------------------


def epoch_start_offset(log_epochs: list[int], epoch: int) -> int:
    """The offset of the first record of ``epoch`` (the LEO if there is none): the entry a
    new leader appends to its leader-epoch cache (KIP-101).

    post: 0 <= __return__ <= len(log_epochs)
    post: __return__ == len(log_epochs) or log_epochs[__return__] == epoch
    post: all(e != epoch for e in log_epochs[:__return__])
    """
    for offset, e in enumerate(log_epochs):
        if e == epoch:
            return offset
    return len(log_epochs)


def may_join_isr_published(
    leader_hw: int,
    leader_log_epochs: list[int],
    leader_epoch: int,
    follower_leo: int,
    following: bool,
) -> bool:
    """KIP-320 as the published model states it: a follower joins the ISR when it fetches
    in the leader's epoch, has reached the leader's HW, and the leader's HW has reached the
    leader's own epoch (the HW is at the LEO, or the record at the HW is of the current
    epoch). The contract states why: a new member then holds everything a previous leader
    may have committed, i.e. it has reached the start of the leader's epoch.

    pre: 0 <= leader_hw <= len(leader_log_epochs)
    pre: all(0 <= e <= leader_epoch for e in leader_log_epochs)
    pre: all(a <= b for a, b in zip(leader_log_epochs, leader_log_epochs[1:]))
    pre: follower_leo >= 0
    post: (not __return__) or following
    post: (not __return__) or follower_leo >= leader_hw
    post: (not __return__) or follower_leo >= epoch_start_offset(leader_log_epochs, leader_epoch)
    """
    if not following:
        return False
    if leader_hw != 0 and follower_leo < leader_hw:
        return False
    return leader_hw == len(leader_log_epochs) or leader_log_epochs[leader_hw] == leader_epoch


def may_join_isr_kafka(
    leader_hw: int,
    leader_log_epochs: list[int],
    leader_epoch: int,
    follower_leo: int,
    following: bool,
) -> bool:
    """Kafka's rule (``Partition.isFollowerInSync``; the extended model's
    ``expand_isr_caught_up``): the follower's LEO has reached the leader's HW *and* the
    start offset of the leader's current epoch.

    pre: 0 <= leader_hw <= len(leader_log_epochs)
    pre: all(0 <= e <= leader_epoch for e in leader_log_epochs)
    pre: all(a <= b for a, b in zip(leader_log_epochs, leader_log_epochs[1:]))
    pre: follower_leo >= 0
    post: (not __return__) or follower_leo >= leader_hw
    post: (not __return__) or follower_leo >= epoch_start_offset(leader_log_epochs, leader_epoch)
    """
    if not following:
        return False
    start = epoch_start_offset(leader_log_epochs, leader_epoch)
    return follower_leo >= leader_hw and follower_leo >= start


def _valid_expansion(
    leader_hw: int, leader_log_epochs: list[int], leader_epoch: int, follower_leo: int
) -> bool:
    return (
        0 <= leader_hw <= len(leader_log_epochs)
        and all(0 <= e <= leader_epoch for e in leader_log_epochs)
        and _monotone_ints(leader_log_epochs)
        and follower_leo >= 0
    )


def may_join_published_if_valid(
    leader_hw: int,
    leader_log_epochs: list[int],
    leader_epoch: int,
    follower_leo: int,
    following: bool,
) -> int:
    """``may_join_isr_published`` on its preconditions' domain (-1 outside it): for
    ``diffbehavior`` against ``may_join_kafka_if_valid``."""
    if not _valid_expansion(leader_hw, leader_log_epochs, leader_epoch, follower_leo):
        return -1
    args = (leader_hw, leader_log_epochs, leader_epoch, follower_leo, following)
    return int(may_join_isr_published(*args))


def may_join_kafka_if_valid(
    leader_hw: int,
    leader_log_epochs: list[int],
    leader_epoch: int,
    follower_leo: int,
    following: bool,
) -> int:
    """``may_join_isr_kafka`` on the same domain (-1 outside it)."""
    if not _valid_expansion(leader_hw, leader_log_epochs, leader_epoch, follower_leo):
        return -1
    return int(
        may_join_isr_kafka(leader_hw, leader_log_epochs, leader_epoch, follower_leo, following)
    )


def _monotone_ints(values: list[int]) -> bool:
    return all(values[k] <= values[k + 1] for k in range(len(values) - 1))


# --- truncation ----------------------------------------------------------------------------


def truncation_offset_hw(follower_hw: int) -> int:
    """Before KIP-101: a replica becoming follower truncates to its own HW.

    pre: follower_hw >= 0
    post: __return__ == follower_hw
    """
    return follower_hw


def truncation_offset_kip101(follower: list[Record], leader: list[Record], follower_hw: int) -> int:
    """KIP-101: the end offset, on the leader, of the epoch of the follower's last record
    (OffsetsForLeaderEpoch), the follower's HW when the leader cannot answer. May exceed
    the follower's LEO (the published model then disables the step).

    pre: follower_hw >= 0
    post: __return__ >= 0
    post: (not follower) or (not leader) or __return__ <= max(len(leader), follower_hw)
    post: follower or __return__ == 0
    """
    if not follower:
        return 0
    last_epoch = follower[-1][0]
    if not leader:
        return follower_hw
    if leader[-1][0] == last_epoch:
        return len(leader)
    for offset, record in enumerate(leader):
        if record[0] > last_epoch:
            return offset
    return follower_hw


def truncation_offset_kip279(follower: list[Record], leader: list[Record]) -> int:
    """KIP-279/KIP-320 as the spec abstracts it: one past the last offset where both logs
    hold the same record (the follower repeats the epoch exchange until they agree).

    post: 0 <= __return__ <= min(len(follower), len(leader))
    post: __return__ == 0 or follower[__return__ - 1] == leader[__return__ - 1]
    post: all(follower[k] != leader[k] for k in range(__return__, min(len(follower), len(leader))))
    """
    for offset in range(min(len(follower), len(leader)) - 1, -1, -1):
        if follower[offset] == leader[offset]:
            return offset + 1
    return 0


def log_matching(a: list[Record], b: list[Record]) -> bool:
    """The shape every pair of logs of the KIP-320 protocol has: epochs are >= 0 and never
    decrease along a log, ids are unique within a log, and records of one epoch, wherever
    they sit, are copies of that epoch's leader's log, so two logs holding records of the
    same epoch at offsets ``k`` and ``j`` agree up to ``min(k, j)`` included (the strong
    form of ``LogMatching``, proved in ``spec.proofs``)."""
    for log in (a, b):
        if any(r[0] < 0 for r in log) or not _monotone(log):
            return False
        if len({r[1] for r in log}) != len(log):
            return False
    for k, ra in enumerate(a):
        for j, rb in enumerate(b):
            if ra[1] == rb[1] and (k != j or ra != rb):
                return False
            m = min(k, j)
            if ra[0] == rb[0] and a[: m + 1] != b[: m + 1]:
                return False
    return True


def epoch_end_offset(log: list[Record], requested: int) -> tuple[int, int]:
    """OffsetsForLeaderEpoch with KIP-279's answer, on a log: the largest epoch <= the
    requested one that has records, and its end offset (where the next higher epoch starts,
    or the LEO); (-1, -1) when there is none.

    pre: all(log[k][0] <= log[k + 1][0] for k in range(len(log) - 1))
    post: __return__ == (-1, -1) or __return__[0] <= requested
    post: __return__ == (-1, -1) or 0 < __return__[1] <= len(log)
    """
    best = -1
    for record in log:
        if best < record[0] <= requested:
            best = record[0]
    if best < 0:
        return (-1, -1)
    for offset, record in enumerate(log):
        if record[0] > best:
            return (best, offset)
    return (best, len(log))


def truncation_by_epoch_exchange(follower: list[Record], leader: list[Record]) -> int:
    """What a follower does (KIP-279, ``AbstractFetcherThread.getOffsetTruncationState``):
    it asks the leader for the end of the epoch of its last record; the leader answers with
    the largest epoch it knows up to that one and its end offset. If the follower has that
    epoch too, it truncates to the earlier of the two ends. If not, its own largest smaller
    epoch is where the logs may part: it truncates to that epoch's end and asks again (each
    round the log it asks about is shorter, so the exchange ends). 0 when the leader, or the
    follower, has no such epoch.

    pre: all(follower[k][0] <= follower[k + 1][0] for k in range(len(follower) - 1))
    pre: all(leader[k][0] <= leader[k + 1][0] for k in range(len(leader) - 1))
    post: 0 <= __return__ <= len(follower)
    """
    log = follower
    while log and leader:
        epoch, end = epoch_end_offset(leader, log[-1][0])
        if epoch < 0:
            return 0
        own_epoch, own_end = epoch_end_offset(log, epoch)
        if own_epoch < 0:
            return 0
        if own_epoch == epoch:
            return min(end, own_end)
        log = log[:own_end]  # it does not know the leader's epoch: cut, and ask again
    return 0


def truncation_kip279_if_matching(follower: list[Record], leader: list[Record]) -> int:
    """The spec's rule on log pairs the KIP-320 protocol can produce (-1 otherwise): for
    ``diffbehavior`` against ``truncation_by_epoch_exchange_if_matching``."""
    if not log_matching(follower, leader):
        return -1
    return truncation_offset_kip279(follower, leader)


def truncation_by_epoch_exchange_if_matching(follower: list[Record], leader: list[Record]) -> int:
    """The KIP-279 exchange on log pairs the KIP-320 protocol can produce (-1 otherwise)."""
    if not log_matching(follower, leader):
        return -1
    return truncation_by_epoch_exchange(follower, leader)


def _monotone(log: list[Record]) -> bool:
    return all(log[k][0] <= log[k + 1][0] for k in range(len(log) - 1))
