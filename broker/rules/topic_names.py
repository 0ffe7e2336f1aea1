"""Kafka's topic-name rules (org.apache.kafka.common.internals.Topic), with each release's words.

`validation_error(name, release)` returns None for a legal name or the message Kafka gives
with INVALID_TOPIC_EXCEPTION (17). Checks run in Kafka's order: empty, "." or "..",
longer than 249 characters, a character outside ASCII `[a-zA-Z0-9._-]`. Kafka reworded
the messages in 3.4; both wordings are here.

Also the collision rule: two names collide when they are equal after replacing every '.'
with '_' (Kafka refuses to create the second one).

Deliberately not here: existence checks (the metadata image) and internal-topic rules.
"""

from __future__ import annotations

import re

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def validation_error(name: str, release: tuple[int, ...]) -> str | None:
    reworded = release >= (3, 4)
    if not name:
        return (
            "Topic name is invalid: the empty string is not allowed"
            if reworded
            else "Topic name is illegal, it can't be empty"
        )
    if name in (".", ".."):
        return (
            f"Topic name is invalid: '{name}' is not allowed"
            if reworded
            else 'Topic name cannot be "." or ".."'
        )
    if len(name) > MAX_NAME_LENGTH:
        return (
            f"Topic name is invalid: the length of '{name}' is longer than the max allowed "
            f"length {MAX_NAME_LENGTH}"
            if reworded
            else f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} "
            f"characters, topic name: {name}"
        )
    if not _LEGAL.fullmatch(name):
        return (
            f"Topic name is invalid: '{name}' contains one or more characters other than "
            "ASCII alphanumerics, '.', '_' and '-'"
            if reworded
            else f'Topic name "{name}" is illegal, it contains a character other than '
            "ASCII alphanumerics, '.', '_' and '-'"
        )
    return None


def is_valid(name: str) -> bool:
    return validation_error(name, (2, 8)) is None


def has_collision_chars(name: str) -> bool:
    return "." in name or "_" in name


def collides(a: str, b: str) -> bool:
    return a.replace(".", "_") == b.replace(".", "_")
