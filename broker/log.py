"""Logging: structlog events carried by the standard `logging` module, one event per record.

Every module takes its logger from `get_logger(__name__)`: a structlog bound logger over the
stdlib logger of that name (`zkbroker.*`) with zkbroker's own processors, so importing zkbroker
changes neither structlog's nor `logging`'s configuration. As Python's logging HOWTO asks of a
library, the `zkbroker` logger gets a `NullHandler` (in `zkbroker/__init__.py`) and no level:
in someone else's process the events go where that process's configuration sends them, at the
level it sets (`logging.basicConfig(level=...)`, or `logging.getLogger("zkbroker").setLevel(...)`
for zkbroker alone; pytest's `log_level` and caplog included), and with no configuration at
all nothing is printed. A record's `msg` is the event's fields, an `Event` dict whose text is
`name key=value ...`; structlog's `ProcessorFormatter` renders it as its own event.

`configure_logging` is for the `zkbroker` command only, the one place that configures output:
one handler on the root logger, stderr, console lines, JSON lines or Kafka's lines. The `kafka`
format is log4j's PatternLayout `[%d] %p %m (%c)%n`, the layout Confluent's cp-kafka image
configures (its log4j.properties template): each event as `name key=value ...` under its logger
name, and the broker lifecycle events (`KAFKA_SERVER_LINES`) once more as Kafka's ZooKeeper-mode
`KafkaServer` logs them (KafkaServer.scala: `[KafkaServer id=N] started`), the line
testcontainers' Kafka modules wait for. It imitates the text only: no log4j configuration
(levels per logger, appenders) is read.

Deliberately not here: per-request context (the server binds correlation id, client id, api
and version on its own logger), log files or rotation.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Mapping, MutableMapping
from types import MappingProxyType
from typing import Any

import structlog

from zkbroker.broker.log_formats import LogFormat

#: The logger every zkbroker module's logger descends from (the import package's name).
ROOT_LOGGER = "zkbroker"

# Frames from `logging`'s call up to the module that logged, through structlog's bound logger.
_CALLER_DEPTH = 4
# Not on the line a plain handler prints: the traceback follows the line on its own.
_NOT_IN_TEXT = frozenset({"event", "exc_info", "stack_info"})


class Event(dict[str, Any]):
    """One event's fields. Its text, what a handler without structlog prints, is the event
    name followed by `key=value` for every other field."""

    __slots__ = ()

    def __str__(self) -> str:
        fields = " ".join(
            f"{key}={_text(value)}" for key, value in self.items() if key not in _NOT_IN_TEXT
        )
        name = str(self.get("event", ""))
        return f"{name} {fields}" if fields else name


def _text(value: Any) -> str:
    text = str(value)
    return repr(text) if (not text or any(c.isspace() or c in "='\"" for c in text)) else text


def _to_record(
    logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
) -> tuple[tuple[Event], dict[str, Any]]:
    """The last processor: the stdlib call's arguments. `_logger` and `_name` are what
    structlog's ProcessorFormatter looks for to treat the record as a structlog event."""
    # stacklevel: the record names the line that logged, not structlog's frames in between
    # (the bound logger's method, its two proxies, then `logging`'s own call).
    kwargs: dict[str, Any] = {
        "extra": {"_logger": logger, "_name": method_name},
        "stacklevel": _CALLER_DEPTH,
    }
    exc_info = event_dict.get("exc_info")
    if exc_info:
        # Resolved now, while the exception is being handled, for every handler alike.
        if exc_info is True or not isinstance(exc_info, (tuple, BaseException)):
            exc_info = sys.exc_info()
        event_dict["exc_info"] = exc_info
        kwargs["exc_info"] = exc_info
    if event_dict.get("stack_info"):
        kwargs["stack_info"] = True
    return (Event(event_dict),), kwargs


_PROCESSORS: list[Any] = [
    structlog.stdlib.filter_by_level,
    structlog.contextvars.merge_contextvars,
    _to_record,
]


def get_logger(name: str) -> Any:
    """The structlog logger of module `name` (a `structlog.stdlib.BoundLogger`)."""
    return structlog.wrap_logger(
        logging.getLogger(name),
        processors=_PROCESSORS,
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


#: zkbroker events that Kafka's KafkaServer also logs: event name -> the message after the
#: `[KafkaServer id=<broker_id>] ` prefix (KafkaServer.startup's `info("started")`, shutdown's
#: `info("shut down completed")`). zkbroker has no event for a broker beginning to start.
KAFKA_SERVER_LINES: Mapping[str, str] = MappingProxyType(
    {"broker.started": "started", "broker.stopped": "shut down completed"}
)
#: The %c of those lines: the logger Kafka's KafkaServer logs under.
KAFKA_SERVER_LOGGER = "kafka.server.KafkaServer"

# log4j's level names, from the most severe down (Python's WARNING is log4j's WARN, CRITICAL
# its FATAL); below DEBUG, log4j's TRACE.
_LOG4J_LEVELS = (
    (logging.CRITICAL, "FATAL"),
    (logging.ERROR, "ERROR"),
    (logging.WARNING, "WARN"),
    (logging.INFO, "INFO"),
    (logging.DEBUG, "DEBUG"),
)
# Rendered after the line (a traceback, as log4j prints a throwable), never inside it.
_KAFKA_TRAILERS = ("exception", "stack")


def log4j_level(levelno: int) -> str:
    """The log4j name of a `logging` level number."""
    for threshold, name in _LOG4J_LEVELS:
        if levelno >= threshold:
            return name
    return "TRACE"


def log4j_timestamp(created: float) -> str:
    """log4j's `%d` (its ISO8601 layout, `yyyy-MM-dd HH:mm:ss,SSS`) in local time, as the
    JVM's default time zone prints it: UTC in a container without TZ."""
    millis = int(created * 1000) % 1000
    return f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(created))},{millis:03d}"


def kafka_layout(
    fields: Mapping[str, Any], *, created: float, levelno: int, logger_name: str
) -> str:
    """One record in Kafka's layout `[%d] %p %m (%c)`: the event's text as `%m`, then, for an
    event of `KAFKA_SERVER_LINES` with a `broker_id`, KafkaServer's own line, then any
    traceback (`exception`/`stack` fields, as structlog's format_exc_info leaves them)."""
    head = f"[{log4j_timestamp(created)}] {log4j_level(levelno)}"
    event = Event({k: v for k, v in fields.items() if k not in _KAFKA_TRAILERS})
    lines = [f"{head} {event} ({logger_name})"]
    message = KAFKA_SERVER_LINES.get(str(fields.get("event", "")))
    broker_id = fields.get("broker_id")
    if message is not None and broker_id is not None:
        lines.append(f"{head} [KafkaServer id={broker_id}] {message} ({KAFKA_SERVER_LOGGER})")
    lines.extend(str(fields[k]).rstrip("\n") for k in _KAFKA_TRAILERS if fields.get(k))
    return "\n".join(lines)


def _render_kafka(logger: Any, method_name: str, event_dict: MutableMapping[str, Any]) -> str:
    """ProcessorFormatter's last processor for `--log-format kafka`: time, level and logger
    name come from the record itself (foreign records, kazoo's or asyncio's, alike)."""
    record: logging.LogRecord = event_dict.pop("_record")
    event_dict.pop("_from_structlog", None)
    return kafka_layout(
        event_dict, created=record.created, levelno=record.levelno, logger_name=record.name
    )


def _processors(fmt: LogFormat) -> list[Any]:
    """The formatter's chain for one output format; the last one returns the line."""
    if fmt == "kafka":
        return [structlog.processors.format_exc_info, _render_kafka]
    processors: list[Any] = [
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if fmt == "json":
        processors.append(structlog.processors.format_exc_info)
    processors.append(structlog.stdlib.ProcessorFormatter.remove_processors_meta)
    if fmt == "json":
        processors.append(structlog.processors.JSONRenderer())
    else:
        processors.append(structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty()))
    return processors


def configure_logging(level: str = "info", fmt: LogFormat = "console") -> None:
    """The `zkbroker` command's logging: every record of the process (zkbroker's events,
    kazoo's, asyncio's) as one line on stderr, at `level` and above (two lines for a
    KafkaServer event in the `kafka` format)."""
    numeric_level = logging.getLevelName(level.upper())
    if not isinstance(numeric_level, int):
        raise ValueError(f"unknown log level {level!r}")
    if fmt not in ("console", "json", "kafka"):
        raise ValueError(f"unknown log format {fmt!r}")
    formatter = structlog.stdlib.ProcessorFormatter(processors=_processors(fmt))
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric_level)
    logging.getLogger(ROOT_LOGGER).setLevel(numeric_level)
    # kazoo logs every connection attempt at INFO; keep it to warnings unless debugging.
    logging.getLogger("kazoo").setLevel(max(numeric_level, logging.WARNING))
