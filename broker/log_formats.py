"""The formats of the `zkbroker` command's log lines, apart from the logging set-up
(`zkbroker.broker.log`), so that parsing a command line and checking its settings import no
logging library: `console` (structlog's lines), `json` (one object per line) and `kafka`
(log4j's `[time] LEVEL message (logger)` as Kafka's images print it)."""

from __future__ import annotations

from typing import Literal, get_args

LogFormat = Literal["console", "json", "kafka"]
LOG_FORMATS: tuple[str, ...] = get_args(LogFormat)
