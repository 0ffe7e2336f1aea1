"""`--log-format kafka`: log4j's `[%d] %p %m (%c)` lines as Confluent's cp-kafka image prints
them, and KafkaServer's `[KafkaServer id=N] started` line, the one testcontainers' Kafka modules
(Java, .NET, Python) wait for with `\\[KafkaServer id=\\d+\\] started`."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator

import pytest

from zkbroker.broker.log import (
    KAFKA_SERVER_LINES,
    configure_logging,
    get_logger,
    kafka_layout,
    log4j_level,
    log4j_timestamp,
)

# log4j's PatternLayout `[%d] %p %m (%c)`, %d in its ISO8601 layout.
LINE = re.compile(
    r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] "
    r"(TRACE|DEBUG|INFO|WARN|ERROR|FATAL) (.*) \((\S+)\)$"
)
# testcontainers-java / -dotnet / -python's wait regex for a ZooKeeper-mode broker.
STARTED = re.compile(r".*\[KafkaServer id=\d+\] started.*")


def _created(text: str, millis: int) -> float:
    return time.mktime(time.strptime(text, "%Y-%m-%d %H:%M:%S")) + millis / 1000


def test_timestamp_is_log4j_iso8601_with_comma_milliseconds() -> None:
    created = _created("2026-11-29 15:40:00", 123)
    assert log4j_timestamp(created) == "2026-11-29 15:40:00,123"
    assert log4j_timestamp(_created("2026-01-02 03:04:05", 7)) == "2026-01-02 03:04:05,007"


@pytest.mark.parametrize(
    ("levelno", "name"),
    [
        (logging.DEBUG, "DEBUG"),
        (logging.INFO, "INFO"),
        (logging.WARNING, "WARN"),
        (logging.ERROR, "ERROR"),
        (logging.CRITICAL, "FATAL"),
        (5, "TRACE"),
    ],
)
def test_levels_are_named_as_log4j_names_them(levelno: int, name: str) -> None:
    assert log4j_level(levelno) == name


def test_an_event_is_name_then_fields_under_its_logger() -> None:
    text = kafka_layout(
        {"event": "config.unused", "message": "a b", "key": "x"},
        created=_created("2026-11-29 15:40:00", 5),
        levelno=logging.WARNING,
        logger_name="zkbroker.broker.cli.main",
    )
    assert text == (
        "[2026-11-29 15:40:00,005] WARN config.unused message='a b' key=x "
        "(zkbroker.broker.cli.main)"
    )
    match = LINE.match(text)
    assert match is not None and match.group(4) == "zkbroker.broker.cli.main"


def test_broker_started_also_prints_kafka_servers_started_line() -> None:
    text = kafka_layout(
        {"event": "broker.started", "broker_id": 1, "port": 9093, "broker_epoch": 25},
        created=_created("2026-11-29 15:40:00", 123),
        levelno=logging.INFO,
        logger_name="zkbroker.broker.server.broker_node",
    )
    first, second = text.split("\n")
    assert first == (
        "[2026-11-29 15:40:00,123] INFO broker.started broker_id=1 port=9093 broker_epoch=25 "
        "(zkbroker.broker.server.broker_node)"
    )
    assert second == (
        "[2026-11-29 15:40:00,123] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)"
    )
    assert LINE.match(second) and STARTED.fullmatch(second)
    assert not STARTED.fullmatch(first)


def test_broker_stopped_prints_shut_down_completed() -> None:
    text = kafka_layout(
        {"event": "broker.stopped", "broker_id": 2},
        created=0.0,
        levelno=logging.INFO,
        logger_name="zkbroker.broker.server.broker_node",
    )
    assert text.endswith("] INFO [KafkaServer id=2] shut down completed (kafka.server.KafkaServer)")
    assert set(KAFKA_SERVER_LINES) == {"broker.started", "broker.stopped"}


def test_no_kafka_server_line_without_a_broker_id_or_for_other_events() -> None:
    for fields in ({"event": "broker.started"}, {"event": "cluster.started", "broker_id": 1}):
        text = kafka_layout(fields, created=0.0, levelno=logging.INFO, logger_name="x")
        assert "\n" not in text and "KafkaServer" not in text


def test_a_traceback_follows_the_line() -> None:
    text = kafka_layout(
        {"event": "broker.stop_failed", "broker_id": 3, "exception": "Traceback...\nBoom\n"},
        created=0.0,
        levelno=logging.ERROR,
        logger_name="zkbroker.broker.engine.engine",
    )
    lines = text.split("\n")
    assert lines[0].endswith("ERROR broker.stop_failed broker_id=3 (zkbroker.broker.engine.engine)")
    assert lines[1:] == ["Traceback...", "Boom"]


@pytest.fixture
def stderr_lines(capsys: pytest.CaptureFixture[str]) -> Iterator[Callable[[], list[str]]]:
    """What configure_logging's handler wrote to stderr (pytest's capture); the root logger's
    handlers and levels restored after."""
    root, package, kazoo = (logging.getLogger(n) for n in ("", "zkbroker", "kazoo"))
    saved = (root.handlers[:], root.level, package.level, kazoo.level)
    try:
        yield lambda: capsys.readouterr().err.splitlines()
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        package.setLevel(saved[2])
        kazoo.setLevel(saved[3])


def test_configured_kafka_format_renders_zkbroker_and_foreign_records(
    stderr_lines: Callable[[], list[str]],
) -> None:
    configure_logging("info", "kafka")
    get_logger("zkbroker.broker.server.broker_node").bind(broker_id=1).info(
        "broker.started", port=9093
    )
    logging.getLogger("asyncio").warning("slow %s", "callback")
    get_logger("zkbroker.test").debug("not.shown")
    lines = stderr_lines()
    assert len(lines) == 3, lines
    assert all(LINE.match(line) for line in lines)
    assert lines[0].endswith(
        "INFO broker.started broker_id=1 port=9093 (zkbroker.broker.server.broker_node)"
    )
    assert lines[1].endswith("INFO [KafkaServer id=1] started (kafka.server.KafkaServer)")
    assert lines[2].endswith("WARN slow callback (asyncio)")


def test_configured_kafka_format_prints_the_exception_after_the_line(
    stderr_lines: Callable[[], list[str]],
) -> None:
    configure_logging("info", "kafka")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        get_logger("zkbroker.test").exception("thing.failed")
    lines = stderr_lines()
    assert LINE.match(lines[0]) and " ERROR thing.failed (zkbroker.test)" in lines[0]
    assert lines[1].startswith("Traceback") and lines[-1] == "RuntimeError: boom"


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="log format"):
        configure_logging("info", "xml")  # type: ignore[arg-type]
