"""What each emulated release advertises (`zkbroker.handlers.registry.api_table`): the release
history's ranges (`zkbroker.broker.protocol.releases`), narrowed only by a handler's declared
`MAX_VERSION_CAP`, for every release and key; and what the registry asks of an API module."""

from __future__ import annotations

import dataclasses
from types import ModuleType
from typing import Any

import pytest

from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.releases import API_VERSION_RANGES, RELEASES
from zkbroker.handlers import heartbeat
from zkbroker.handlers.registry import HANDLERS, api_table, entry_of
from zkbroker.handlers.support.zk_trouble import Family


def test_every_release_advertises_its_history_narrowed_by_the_caps() -> None:
    for release in RELEASES:
        expected = {}
        for key, (low, high) in API_VERSION_RANGES[release].items():
            cap = HANDLERS[ApiKey(key)].max_version_cap
            high = high if cap is None else min(high, cap)
            if low <= high:
                expected[key] = (low, high)
        assert api_table(release).ranges == expected, release


def test_every_handler_serves_every_version_of_its_history() -> None:
    capped = {key.name: e.max_version_cap for key, e in HANDLERS.items()}
    assert {name: cap for name, cap in capped.items() if cap is not None} == {}


def test_a_cap_narrows_every_release_and_hides_a_key_it_leaves_no_version_of() -> None:
    fetch = dataclasses.replace(HANDLERS[ApiKey.FETCH], max_version_cap=12)
    assert fetch.range_in((3, 9)) == (0, 12)
    assert fetch.range_in((2, 0)) == (0, 8)
    shutdown = dataclasses.replace(HANDLERS[ApiKey.CONTROLLED_SHUTDOWN], max_version_cap=0)
    assert shutdown.range_in((0, 10, 0)) is None  # 0.10.0 advertises v1 only
    assert shutdown.range_in((1, 0)) == (0, 0)
    assert HANDLERS[ApiKey.DESCRIBE_CLUSTER].range_in((2, 7)) is None


def _module(**names: Any) -> ModuleType:
    module = ModuleType("zkbroker.handlers.example")
    declared = {
        "API_KEY": ApiKey.HEARTBEAT,
        "ZK_TROUBLE_FAMILY": Family.OTHER,
        "README_NOTE": "a note",
        "handle": heartbeat.handle,
        "error_response": heartbeat.error_response,
    }
    for name, value in {**declared, **names}.items():
        if value is not None:
            setattr(module, name, value)
    return module


def test_the_registry_reads_the_module_declarations() -> None:
    entry = entry_of(_module(MAX_VERSION_CAP=2))
    assert (entry.api_key, entry.zk_trouble_family, entry.readme_note) == (
        ApiKey.HEARTBEAT,
        Family.OTHER,
        "a note",
    )
    assert entry.max_version_cap == 2 and entry.range_in((3, 9)) == (0, 2)
    assert entry_of(_module()).max_version_cap is None


@pytest.mark.parametrize(
    "names",
    [
        {"ZK_TROUBLE_FAMILY": None},
        {"ZK_TROUBLE_FAMILY": "other"},
        {"API_KEY": 12},
        {"README_NOTE": None},
        {"MAX_VERSION": 4},
        {"MIN_VERSION": 0},
        {"MAX_VERSION_CAP": "2"},
    ],
)
def test_the_registry_refuses_a_module_without_its_declarations(names: dict[str, Any]) -> None:
    with pytest.raises(TypeError, match=r"^zkbroker\.handlers\.example: "):
        entry_of(_module(**names))
