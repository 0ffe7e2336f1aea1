"""The one exception type of the wire codec.

Every failure to decode or encode, whatever its cause (truncation, garbage, a value that does not
fit its field, an unknown api key or version), surfaces as ``CodecError``. The server turns it
into a closed connection, exactly as a Kafka broker does for an unparsable request.

Deliberately not here: Kafka protocol error codes (see ``error_codes``), which are data sent back
to clients, not exceptions.
"""

from __future__ import annotations


class CodecError(Exception):
    """A message could not be decoded or encoded.

    ``api_key``/``api_version`` name the message when known, ``field`` is the field path
    (``topics[3].name``) and ``offset`` the byte offset in the decoded buffer (None on encode).
    """

    def __init__(
        self,
        message: str,
        *,
        api_key: int | None = None,
        api_version: int | None = None,
        field: str | None = None,
        offset: int | None = None,
    ) -> None:
        super().__init__(message)
        self.api_key = api_key
        self.api_version = api_version
        self.field = field
        self.offset = offset
