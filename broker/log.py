"""Logging set-up for the zkbroker process: structlog, one event per line.

Two renderers: a human console format (default) and JSON lines (`--log-format json`).
Everything logs through structlog's bound loggers; the standard library's `logging`
carries the level filter and the output stream so that kazoo's own log records come out
in the same format.

Deliberately not here: per-request context (the server binds correlation id, client id,
api and version on its own logger), log files or rotation (the process writes to stderr;
whoever runs it decides where that goes).
"""

from __future__ import annotations

import logging
import sys
from typing import Literal

import structlog

LogFormat = Literal["console", "json"]


def configure_logging(level: str = "info", fmt: LogFormat = "console") -> None:
    """Configure structlog and the stdlib root logger for the whole process."""
    numeric_level = logging.getLevelName(level.upper())
    if not isinstance(numeric_level, int):
        raise ValueError(f"unknown log level {level!r}")

    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: structlog.types.Processor
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer()
        shared.append(structlog.processors.format_exc_info)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())

    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric_level)
    # kazoo logs every connection attempt at INFO; keep it to warnings unless debugging.
    logging.getLogger("kazoo").setLevel(max(numeric_level, logging.WARNING))
