"""kazoo's warnings for a session zkbroker stops on purpose are demoted to debug
(`zkbroker.zk_layout.store.client`): a library that stops its sessions stays quiet."""

from __future__ import annotations

import logging

import pytest

from zkbroker.zk_layout.store.client import _KazooLog


def test_warnings_pass_until_the_session_is_stopped(caplog: pytest.LogCaptureFixture) -> None:
    log = _KazooLog()
    with caplog.at_level(logging.DEBUG, logger="kazoo.client"):
        log.warning("Connection dropped: %s", "socket connection error: Broken pipe")
        log.stopping.set()
        log.warning("Connection dropped: %s", "socket connection error: Broken pipe")
        log.warning("Failed connecting to Zookeeper within the connection retry policy.")
        log.info("Zookeeper session closed, state: CLOSED")
    levels = [(r.levelname, r.getMessage()[:18]) for r in caplog.records]
    assert levels == [
        ("WARNING", "Connection dropped"),
        ("DEBUG", "Connection dropped"),
        ("DEBUG", "Failed connecting "),
        ("INFO", "Zookeeper session "),
    ]
