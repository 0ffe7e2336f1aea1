"""The controller's replica catch-up delay (`zkbroker.broker.rules.replica_catchup`)."""

from __future__ import annotations

from zkbroker.broker.rules.replica_catchup import (
    CATCHUP_BYTES_PER_MS,
    CATCHUP_FLOOR_MS,
    catchup_ms,
)
from zkbroker.broker.settings import Settings


def test_default_grows_with_the_partition_from_a_floor() -> None:
    assert CATCHUP_FLOOR_MS == 300
    assert catchup_ms(0, None) == 300
    assert catchup_ms(-5, None) == 300
    # 100 MiB/s: a 1 GiB partition takes about 10 s more.
    assert catchup_ms(1024**3, None) == 300 + 1024**3 // CATCHUP_BYTES_PER_MS
    assert 10_500 < catchup_ms(1024**3, None) < 10_600


def test_a_fixed_delay_wins_and_zero_is_at_once() -> None:
    assert catchup_ms(1024**3, 0) == 0
    assert catchup_ms(0, 2500) == 2500


def test_settings_default_is_the_proportional_one() -> None:
    assert Settings().replica_catchup_ms is None
    assert Settings(replica_catchup_ms=0).replica_catchup_ms == 0
