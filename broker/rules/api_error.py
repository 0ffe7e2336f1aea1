"""Kafka's rule for the error message sent with an error code (ApiError.fromThrowable).

A per-item error carries Kafka's exception message, except that the message is null when
the code is UNKNOWN_SERVER_ERROR or when the message equals the error's default message
(docs/kafka-behaviour.md §0). Handlers build errors through `api_error` so the rule lives in one
place.

Deliberately not here: choosing codes (each handler does, in Kafka's check order).
"""

from __future__ import annotations

from dataclasses import dataclass

from zkbroker.broker.protocol import error_codes


@dataclass(frozen=True)
class ApiError(Exception):
    code: int
    message: str | None = None

    @property
    def wire_message(self) -> str | None:
        return message_for(self.code, self.message)

    @classmethod
    def with_default_message(cls, code: int) -> ApiError:
        """Java's `new ApiError(Errors.X)`: the code's default message, sent as it is."""
        return cls(code, error_codes.DEFAULT_MESSAGES[code])


def message_for(code: int, message: str | None) -> str | None:
    if code == error_codes.UNKNOWN_SERVER_ERROR:
        return None
    if message is not None and message == error_codes.DEFAULT_MESSAGES.get(code):
        return None
    return message


NONE = ApiError(error_codes.NONE)
