"""The client software an ApiVersions request names (KIP-511): Kafka's validity rule for the
name and version, and whether the request registers them for its connection.

Kafka's network layer (SocketServer's Processor) records them from every valid ApiVersions
request before the request is handled; the handler answers INVALID_REQUEST to an invalid one
(docs/kafka-behaviour.md §0, "ApiVersions"). Not here: where they are kept (the connection)
nor the answer.
"""

from __future__ import annotations

import re

# Versions before 3 carry no software name or version.
SOFTWARE_VERSION = 3
_PATTERN = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def valid_software(version: int, name: str, software_version: str) -> bool:
    """Kafka's ApiVersionsRequest.isValid: from v3 both must match the pattern."""
    if version < SOFTWARE_VERSION:
        return True
    return bool(_PATTERN.fullmatch(name) and _PATTERN.fullmatch(software_version))


def registered_software(version: int, name: str, software_version: str) -> tuple[str, str] | None:
    """The (name, version) a request registers for its connection, None when it registers
    nothing (before v3 the client is unknown; an invalid request is refused)."""
    if version < SOFTWARE_VERSION or not valid_software(version, name, software_version):
        return None
    return name, software_version
