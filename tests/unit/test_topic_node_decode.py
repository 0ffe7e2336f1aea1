"""The topic znode's fast replica-map reading agrees with the checked one (pure)."""

from __future__ import annotations

import json

import pytest

from zkbroker.zk_layout import TopicAssignment, TopicNode, ZnodeFormatError
from zkbroker.zk_layout.nodes.topics import _fast_replica_map


def test_a_large_topic_reads_back_with_shared_replica_tuples() -> None:
    value = TopicAssignment({p: (p % 3, (p + 1) % 3) for p in range(5000)}, adding={7: (2,)})
    back = TopicNode.decode(TopicNode.encode(value, (3, 9)))
    assert back == value
    assert back.partitions[0] is back.partitions[3]  # equal lists share one tuple


@pytest.mark.parametrize(
    "partitions",
    [
        {"-1": [1]},  # signed keys: the checked reading (Integer.parseInt) takes them
        {"+1": [1]},
        {"0012": [1]},
        {"0": []},
        {"999999999": [2147483647, -2147483648]},
    ],
)
def test_what_the_fast_path_leaves_is_read_as_before(partitions: dict[str, object]) -> None:
    data = json.dumps({"version": 3, "partitions": partitions}).encode()
    expected = {int(k): tuple(v) for k, v in partitions.items()}  # type: ignore[call-overload]
    assert TopicNode.decode(data).partitions == expected


@pytest.mark.parametrize(
    "partitions",
    [
        {"0": [1.0]},
        {"0": [True]},
        {"0": [[1]]},
        {"0": [2147483648]},
        {"0": [-2147483649]},
        {"0": "1"},
        {"9999999999": [1]},
        {"\u00b2": [1]},
        {"": [1]},
    ],
)
def test_what_the_checked_reading_refuses_is_still_refused(
    partitions: dict[str, object],
) -> None:
    assert _fast_replica_map(partitions) is None
    data = json.dumps({"version": 3, "partitions": partitions}).encode()
    with pytest.raises(ZnodeFormatError):
        TopicNode.decode(data)
