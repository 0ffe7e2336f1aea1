"""`--broker-config-file PATH`: a Kafka `server.properties` read as Java's
`java.util.Properties.load(InputStream)` reads it (Kafka's `Utils.loadProps`), so the same file
configures a Kafka broker and zkbroker.

The file is ISO-8859-1, read by `zkbroker.broker.jvm.properties`; a later duplicate key wins.
Its entries are applied before the `--broker-config` ones, with the same checks, errors naming
the file and line (`zkbroker.broker.cli.config_options`).

Not here: Kafka's `config.providers` indirections (`${file:...}`), the `--override` flag itself.
"""

from __future__ import annotations

from pathlib import Path

from zkbroker.broker.jvm.properties import PropertiesError, parse_properties

__all__ = ["PropertiesError", "read_broker_config_file"]


def read_broker_config_file(path: str) -> tuple[tuple[str, str, int], ...]:
    """The file's entries as (key, value, line): the last of duplicate keys only (its own
    line), where the first of them stood; PropertiesError when it cannot be read."""
    try:
        text = Path(path).read_bytes().decode("iso-8859-1")
    except OSError as e:
        raise PropertiesError(f"--broker-config-file {path}: {e.strerror or e}") from None
    last: dict[str, tuple[str, int]] = {}
    for key, value, line in parse_properties(text, path):
        last[key] = (value, line)
    return tuple((key, value, line) for key, (value, line) in last.items())
