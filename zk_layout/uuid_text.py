"""Kafka's ``Uuid`` text form: URL-safe base64, without padding, of the 16 bytes (most significant
64 bits first) — 22 characters, e.g. ``p3t0vCrqQkKpWBbNG2j1Zg``. Used for topic ids in
``/brokers/topics/<t>`` and for the cluster id in ``/cluster/id``.

``random_uuid()`` follows Kafka's ``Uuid.randomUuid`` rules: never the all-zero id (``ZERO_UUID``,
Kafka's "no id"), never ``(0, 1)`` (``METADATA_TOPIC_ID``, reserved for ``__cluster_metadata``),
and never an id whose text starts with ``-`` (3.2+, so the id cannot look like a command-line
option).

Deliberately not here: Java's ``java.util.UUID`` string form (with dashes) — Kafka never stores
topic or cluster ids that way in ZooKeeper.
"""

from __future__ import annotations

import base64
import re
import uuid
from typing import Final

ZERO_UUID: Final = uuid.UUID(int=0)
METADATA_TOPIC_ID: Final = uuid.UUID(int=1)

_TEXT: Final = re.compile(r"^[A-Za-z0-9_-]{22}(==)?$")


def uuid_to_text(value: uuid.UUID) -> str:
    """The 22-character URL-safe base64 text of a UUID."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def uuid_from_text(text: str) -> uuid.UUID:
    """Parse the text form; raises ``ValueError`` unless it is 16 bytes of URL-safe base64.

    Java's URL decoder accepts the padded 24-character form too, so this does.
    """
    if not isinstance(text, str) or not _TEXT.match(text):
        raise ValueError(f"not a Kafka Uuid (22 URL-safe base64 characters): {text!r}")
    raw = base64.urlsafe_b64decode(text[:22] + "==")
    if len(raw) != 16:  # pragma: no cover - 22 base64 chars always carry 16 bytes
        raise ValueError(f"Kafka Uuid text {text!r} decodes to {len(raw)} bytes, expected 16")
    return uuid.UUID(bytes=raw)


def is_reserved(value: uuid.UUID) -> bool:
    """True for the ids ``random_uuid`` never returns: zero and the metadata topic id."""
    return value in (ZERO_UUID, METADATA_TOPIC_ID)


def random_uuid() -> uuid.UUID:
    """A random (version 4) id that is not reserved and whose text does not start with '-'."""
    while True:
        candidate = uuid.uuid4()
        if is_reserved(candidate) or uuid_to_text(candidate).startswith("-"):
            continue
        return candidate


def random_uuid_text() -> str:
    return uuid_to_text(random_uuid())
