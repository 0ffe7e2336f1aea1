"""The leader epoch cache against Kafka's LeaderEpochFileCache semantics, by hand."""

from __future__ import annotations

import pytest

from zkbroker.broker.storage.epoch_cache import LeaderEpochCache


def cache(*entries: tuple[int, int]) -> LeaderEpochCache:
    c = LeaderEpochCache()
    for epoch, start in entries:
        c.assign(epoch, start)
    return c


def test_assign_same_epoch_later_offset_is_ignored() -> None:
    c = cache((2, 10))
    assert not c.assign(2, 15)
    assert c.entries() == [(2, 10)]


def test_assign_same_epoch_earlier_offset_replaces() -> None:
    c = cache((1, 0), (2, 10))
    assert c.assign(2, 5)
    assert c.entries() == [(1, 0), (2, 5)]


def test_assign_lower_epoch_truncates_like_kafka() -> None:
    # Kafka's maybeTruncateNonMonotonicEntries: entries with epoch >= or start >= go.
    c = cache((1, 0), (3, 10), (5, 20))
    assert c.assign(4, 15)
    assert c.entries() == [(1, 0), (3, 10), (4, 15)]
    assert c.assign(2, 5)
    assert c.entries() == [(1, 0), (2, 5)]


def test_assign_rejects_negative() -> None:
    with pytest.raises(ValueError):
        cache().assign(-1, 0)


def test_end_offset_for() -> None:
    c = cache((2, 5), (4, 9), (7, 20))
    leo = 30
    assert c.end_offset_for(7, leo) == (7, 30)
    assert c.end_offset_for(2, leo) == (2, 9)
    assert c.end_offset_for(3, leo) == (2, 9)
    assert c.end_offset_for(6, leo) == (4, 20)
    assert c.end_offset_for(1, leo) == (1, 5)
    assert c.end_offset_for(8, leo) == (-1, -1)
    assert c.end_offset_for(-1, leo) == (-1, -1)
    assert LeaderEpochCache().end_offset_for(0, leo) == (-1, -1)


def test_truncate_from_start_keeps_the_covering_epoch() -> None:
    c = cache((2, 5), (4, 9), (7, 20))
    c.truncate_from_start(4)
    assert c.entries() == [(2, 5), (4, 9), (7, 20)]
    c.truncate_from_start(9)  # exclusive: an entry at the offset stays, moved to itself
    assert c.entries() == [(4, 9), (7, 20)]
    c.truncate_from_start(12)
    assert c.entries() == [(4, 12), (7, 20)]
    c.truncate_from_start(25)
    assert c.entries() == [(7, 25)]
    assert c.epoch_for_offset(24) is None
    assert c.epoch_for_offset(26) == 7
