"""Where a follower truncates its log, per emulated release (docs/kafka-behaviour.md §24).

Kafka's ``AbstractFetcherThread`` rules: the offset a partition starts fetching from when the
broker becomes its follower (``ReplicaManager.initialFetchOffset``), whether it first truncates
(the ``Truncating`` state) or fetches at once with its last fetched epoch (truncation on fetch,
KIP-595's diverging epochs, from 2.7), and the truncation offset from the leader's (epoch, end
offset) answer (``getOffsetTruncationState``, KIP-101 and KIP-279), whether that answer came from
OffsetsForLeaderEpoch (0.11 to 2.6) or a Fetch answer's diverging epoch (2.7 on). Before 0.11
a follower truncates to its high watermark.

Pure: the fetcher applies the offsets to the log.
"""

from __future__ import annotations

from dataclasses import dataclass

from zkbroker.broker.storage.types import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from zkbroker.zk_layout.release import Release

#: OffsetsForLeaderEpoch exists (KIP-101).
OFFSET_FOR_LEADER_EPOCH_SINCE: Release = (0, 11)
#: Fetch answers carry the diverging epoch and followers truncate on them (KIP-595, IBP 2.7).
TRUNCATION_ON_FETCH_SINCE: Release = (2, 7)


def truncates_on_fetch(release: Release) -> bool:
    return release >= TRUNCATION_ON_FETCH_SINCE


def asks_leader_epochs(release: Release) -> bool:
    return release >= OFFSET_FOR_LEADER_EPOCH_SINCE


@dataclass(frozen=True, slots=True)
class FollowStart:
    """How a partition starts when this broker becomes its follower."""

    fetch_offset: int
    #: Truncate before fetching (to the fetch offset, or by OffsetsForLeaderEpoch).
    truncating: bool
    #: The last epoch in the log, sent as Fetch's LastFetchedEpoch (None: not sent).
    last_fetched_epoch: int | None


def follow_start(
    release: Release, log_end_offset: int, high_watermark: int, latest_epoch: int | None
) -> FollowStart:
    """``initialFetchOffset`` and ``partitionFetchState``: from 2.7 a log with epochs fetches
    from its end and lets the leader say where it diverges; otherwise it starts at its high
    watermark in the truncating state."""
    if truncates_on_fetch(release) and latest_epoch is not None:
        return FollowStart(log_end_offset, truncating=False, last_fetched_epoch=latest_epoch)
    return FollowStart(high_watermark, truncating=True, last_fetched_epoch=None)


@dataclass(frozen=True, slots=True)
class Truncation:
    offset: int
    #: False: truncate to `offset`, then ask the leader again (an epoch unknown here).
    completed: bool


def truncation_for(
    leader_epoch: int,
    leader_end_offset: int,
    *,
    fetch_offset: int,
    log_end_offset: int,
    local_end_for_epoch: tuple[int, int] | None,
) -> Truncation:
    """``getOffsetTruncationState``: the leader answered (`leader_epoch`, `leader_end_offset`)
    for this log's latest epoch. `local_end_for_epoch` is this log's (epoch, end offset) for
    the largest epoch <= `leader_epoch`, None when it tracks none that old."""
    if leader_end_offset == UNDEFINED_EPOCH_OFFSET:
        # The leader knows no such epoch: the initial fetch offset (the high watermark).
        return Truncation(fetch_offset, completed=True)
    if leader_epoch == UNDEFINED_EPOCH:
        # OffsetsForLeaderEpoch v0 (before 2.0) answers offsets only.
        return Truncation(min(leader_end_offset, log_end_offset), completed=True)
    if local_end_for_epoch is None:
        return Truncation(min(leader_end_offset, log_end_offset), completed=True)
    local_epoch, local_end = local_end_for_epoch
    if local_epoch != leader_epoch:
        # An epoch this log never saw: cut to where its own older epoch ends, then ask again.
        return Truncation(min(local_end, log_end_offset), completed=False)
    return Truncation(min(local_end, leader_end_offset, log_end_offset), completed=True)
