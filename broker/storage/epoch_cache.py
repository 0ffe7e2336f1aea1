"""The leader epoch cache of one partition log: leader epoch -> first offset of that epoch.

Follows Kafka's ``LeaderEpochFileCache`` (storage module, 3.x): ``assign`` only adds an entry
for an epoch other than the latest or an earlier start offset, dropping entries that would
break monotonicity; ``end_offset_for`` answers OffsetsForLeaderEpoch (KIP-101/KIP-279) with
its UNDEFINED cases; ``truncate_from_start`` keeps the epoch that covers the new log start
offset, moved to it; ``truncate_from_end`` drops the epochs starting at or after a
follower's truncation point. ``UnifiedLog.append`` feeds it from each magic 2 batch's stamped
partition leader epoch, and clears it when a legacy (magic 0/1) batch is appended.

Deliberately not here: the ``leader-epoch-checkpoint`` file. The owner rebuilds the cache
from the batch headers whenever it scans a log (at open and after another process's
appends), so the cache is always what the stored batches say.
"""

from __future__ import annotations

import bisect

from zkbroker.broker.storage.types import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET


class LeaderEpochCache:
    """Epoch entries in increasing epoch and start offset order (two parallel lists)."""

    __slots__ = ("_epochs", "_starts")

    def __init__(self) -> None:
        self._epochs: list[int] = []
        self._starts: list[int] = []

    def entries(self) -> list[tuple[int, int]]:
        """(epoch, start offset) pairs, oldest first."""
        return list(zip(self._epochs, self._starts, strict=True))

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs[-1] if self._epochs else None

    @property
    def earliest_entry(self) -> tuple[int, int] | None:
        return (self._epochs[0], self._starts[0]) if self._epochs else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; True when the cache changed."""
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid partition leader epoch entry ({epoch}, {start_offset})")
        if self._epochs and epoch == self._epochs[-1] and start_offset >= self._starts[-1]:
            return False
        # Entries from the end that the new one contradicts go (Kafka's
        # maybeTruncateNonMonotonicEntries): a lower epoch never follows a higher one.
        while self._epochs and (self._epochs[-1] >= epoch or self._starts[-1] >= start_offset):
            self._epochs.pop()
            self._starts.pop()
        self._epochs.append(epoch)
        self._starts.append(start_offset)
        return True

    def clear(self) -> None:
        self._epochs.clear()
        self._starts.clear()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop the entries at or below ``start_offset``, keeping the last of them moved to it
        (exclusive: an entry starting exactly there stays, as in Kafka)."""
        removed = bisect.bisect_right(self._starts, start_offset)
        if removed == 0:
            return
        keep_epoch = self._epochs[removed - 1]
        del self._epochs[:removed]
        del self._starts[:removed]
        self._epochs.insert(0, keep_epoch)
        self._starts.insert(0, start_offset)

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop the entries starting at or after ``end_offset`` (Kafka's ``truncateFromEnd``:
        the log lost its batches from there on)."""
        kept = bisect.bisect_left(self._starts, end_offset)
        del self._epochs[kept:]
        del self._starts[kept:]

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch the record at ``offset`` was written in, if the cache knows."""
        i = bisect.bisect_right(self._starts, offset)
        return self._epochs[i - 1] if i else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetsForLeaderEpoch, Kafka's ``endOffsetFor``.

        The epoch is the largest known one <= the requested; its end offset is the start of
        the next known epoch, or the log end offset for the latest. (-1, -1) when the request
        is UNDEFINED or above every known epoch (an empty cache included); an epoch older
        than the first known answers the requested epoch with the first entry's start.
        """
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self._epochs and self._epochs[-1] == requested_epoch:
            return requested_epoch, log_end_offset
        higher = bisect.bisect_right(self._epochs, requested_epoch)
        if higher == len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            # Older than anything we know: the data is gone; the follower restarts from the
            # first known epoch's start (Kafka returns the requested epoch here).
            return requested_epoch, self._starts[0]
        return self._epochs[higher - 1], self._starts[higher]
