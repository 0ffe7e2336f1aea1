"""`capture_events()`: zkbroker's log events during a block, as dicts (structlog's
`capture_logs` for events that go through `logging`, as zkbroker's do)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from zkbroker.broker.log import ROOT_LOGGER


class _Events(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.events: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if isinstance(record.msg, dict):
            self.events.append({**record.msg, "log_level": record.levelname.lower()})


@contextlib.contextmanager
def capture_events(level: int = logging.DEBUG) -> Iterator[list[dict[str, Any]]]:
    """Every zkbroker event at `level` or above logged inside the block, each with its
    `log_level`; the list fills as they are logged."""
    logger = logging.getLogger(ROOT_LOGGER)
    handler, saved = _Events(), logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield handler.events
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved)
