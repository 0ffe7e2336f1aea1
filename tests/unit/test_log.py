"""`zkbroker.broker.log`: events as `logging` records (their text, fields, traceback and caller),
the library's manners (no level, a NullHandler), and the command's one-line-per-event output."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest
import structlog

from zkbroker.broker import log as log_module
from zkbroker.broker.log import ROOT_LOGGER, Event, configure_logging, get_logger


class _Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def kept() -> Iterator[_Keep]:
    logger = logging.getLogger(ROOT_LOGGER)
    handler, saved = _Keep(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(saved)


def test_event_text_is_the_name_then_the_fields() -> None:
    event = Event(event="broker.started", port=9092, host="a b", empty="", exc_info=None)
    assert str(event) == "broker.started port=9092 host='a b' empty=''"
    assert str(Event(event="cluster.stopped")) == "cluster.stopped"


def test_a_record_carries_the_fields_the_caller_and_the_logger_name(kept: _Keep) -> None:
    get_logger("zkbroker.demo").bind(broker_id=1).info("demo.done", n=2)
    (record,) = kept.records
    assert record.name == "zkbroker.demo" and record.levelno == logging.INFO
    assert record.msg == {"event": "demo.done", "broker_id": 1, "n": 2}
    assert record.getMessage() == "demo.done broker_id=1 n=2"
    assert record.filename == "test_log.py"
    assert record.funcName == "test_a_record_carries_the_fields_the_caller_and_the_logger_name"


def test_an_exception_reaches_plain_handlers_as_a_traceback(kept: _Keep) -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        get_logger("zkbroker.demo").exception("demo.failed")
    (record,) = kept.records
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None and isinstance(record.exc_info[1], ValueError)
    text = logging.Formatter().format(record)
    assert text.startswith("demo.failed\nTraceback") and "ValueError: boom" in text


def test_below_the_level_nothing_is_built(kept: _Keep) -> None:
    logging.getLogger(ROOT_LOGGER).setLevel(logging.INFO)
    get_logger("zkbroker.demo").debug("demo.detail")
    assert kept.records == []


def test_importing_zkbroker_sets_no_level_and_only_a_null_handler() -> None:
    # In a fresh process: this one's loggers have been through the suite's fixtures.
    script = textwrap.dedent(
        """
        import logging
        import zkbroker
        from zkbroker import Cluster
        import zkbroker.broker.log, zkbroker.broker.toolkit.pytest_plugin

        ours, root = logging.getLogger("zkbroker"), logging.getLogger()
        print(ours.level, [type(h).__name__ for h in ours.handlers], root.level, root.handlers)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.split() == ["0", "['NullHandler']", "30", "[]"]
    assert not hasattr(log_module, "DEFAULT_LEVEL")


def test_structlogs_global_configuration_is_left_alone() -> None:
    before = structlog.get_config()
    get_logger("zkbroker.demo").info("demo.done")
    assert structlog.get_config() == before


@pytest.fixture
def root_restored() -> Iterator[None]:
    root, ours = logging.getLogger(), logging.getLogger(ROOT_LOGGER)
    saved = (list(root.handlers), root.level, ours.level, logging.getLogger("kazoo").level)
    yield
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])
    ours.setLevel(saved[2])
    logging.getLogger("kazoo").setLevel(saved[3])


def test_the_command_writes_json_lines_for_events_and_foreign_records(
    root_restored: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = io.StringIO()
    monkeypatch.setattr(log_module.sys, "stderr", stream)
    configure_logging("debug", "json")
    get_logger("zkbroker.demo").debug("demo.detail", n=1)
    logging.getLogger("asyncio").warning("plain %s", "record")
    try:
        raise KeyError("k")
    except KeyError:
        get_logger("zkbroker.demo").exception("demo.failed")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(x["event"], x["level"], x["logger"]) for x in lines] == [
        ("demo.detail", "debug", "zkbroker.demo"),
        ("plain record", "warning", "asyncio"),
        ("demo.failed", "error", "zkbroker.demo"),
    ]
    assert lines[0]["n"] == 1 and "timestamp" in lines[0]
    assert "KeyError: 'k'" in lines[2]["exception"]
