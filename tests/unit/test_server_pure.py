"""Pure helpers of the server and the handler registry."""

from __future__ import annotations

from zkbroker.broker.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from zkbroker.broker.protocol.releases import RELEASES, advertised_range
from zkbroker.broker.server.hooks import collect_error_codes
from zkbroker.handlers.registry import HANDLERS, api_table


def test_collect_error_codes_walks_nested_items_once_each() -> None:
    response = MetadataResponse(
        topics=[
            MetadataResponseTopic(
                name="a",
                error_code=0,
                partitions=[
                    MetadataResponsePartition(error_code=5),
                    MetadataResponsePartition(error_code=0),
                    MetadataResponsePartition(error_code=5),
                ],
            ),
            MetadataResponseTopic(name="b", error_code=3),
        ]
    )
    assert collect_error_codes(response) == [5, 3]
    assert collect_error_codes(MetadataResponse()) == []


def test_api_table_only_advertises_handled_keys_within_each_release() -> None:
    for release in RELEASES:
        table = api_table(release)
        assert set(table.ranges) <= set(HANDLERS)
        for key, (low, high) in table.ranges.items():
            released = advertised_range(release, key)
            assert released is not None
            assert released[0] <= low <= high <= released[1]
            cap = HANDLERS[key].max_version_cap
            assert cap is None or high <= cap
            assert table.supports(key, high) and not table.supports(key, high + 1)


def test_release_without_describe_cluster_does_not_advertise_it() -> None:
    assert 60 not in api_table((2, 7)).ranges
    assert api_table((2, 8)).ranges[60] == (0, 0)
    assert api_table((3, 7)).ranges[60] == (0, 1)
