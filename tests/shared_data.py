"""Where the suite finds the shared data that lives beside the repository, not in it.

Kafka's message specs (Kafka 3.9's `clients/src/main/resources/common/message` JSON files and the
group coordinator's) are read by the codec and release-table tests from
`<repository>/../shared/kafka-message-specs`; `ZKBROKER_SHARED_DIR` names another `shared`
folder. Tests that read it are marked `@pytest.mark.needs_shared` (or take the
`kafka_message_specs` fixture); tests/conftest.py skips them, with one summary line naming the
missing folder, when it is absent, and fails them under CI (`CI` set to anything but empty,
`0` or `false`), where a missing folder is a broken checkout, not a choice.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: Names the `shared` folder when it is not beside the repository.
SHARED_DIR_ENV = "ZKBROKER_SHARED_DIR"
#: Kafka's message specs, inside the shared folder.
KAFKA_MESSAGE_SPECS = "kafka-message-specs"


def shared_dir() -> Path:
    """The shared data folder: `$ZKBROKER_SHARED_DIR`, else `shared` beside the repository."""
    override = os.environ.get(SHARED_DIR_ENV, "").strip()
    return Path(override).expanduser().resolve() if override else REPO.parent / "shared"


def kafka_message_specs() -> Path:
    """Kafka's JSON message specs (`*Request.json`, `*Response.json`, the record schemas)."""
    return shared_dir() / KAFKA_MESSAGE_SPECS


def under_ci() -> bool:
    """Whether the run is a CI run (`CI=true`, `CI=1`, ...: set and not `0`/`false`)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no", "off")


def missing_reason() -> str | None:
    """Why tests needing the shared data cannot run (naming the folder), None when it is
    there."""
    specs = kafka_message_specs()
    if specs.is_dir() and any(specs.glob("*.json")):
        return None
    return (
        f"shared test data missing: {specs} (Kafka's message specs, expected beside the "
        f"repository at ../shared/{KAFKA_MESSAGE_SPECS}; set {SHARED_DIR_ENV} to another "
        "shared folder)"
    )
