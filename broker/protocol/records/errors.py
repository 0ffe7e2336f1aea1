"""Errors raised while reading record batches, carrying Kafka's error code and message.

Kafka raises ``CorruptRecordException`` (CORRUPT_MESSAGE) for a frame it cannot even size or
whose checksum is wrong, and ``InvalidRecordException`` (INVALID_RECORD since Kafka 2.4,
KIP-467) for a batch whose inner structure is wrong. The messages are Kafka 3.x's
(``ByteBufferLogInputStream``, ``DefaultRecord``, ``DefaultRecordBatch``).

Deliberately not here: which code a given release answers (``zkbroker.broker.rules.log_validation``
maps INVALID_RECORD to CORRUPT_MESSAGE before 2.4) or whether the message reaches the wire.
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes


class RecordFormatError(Exception):
    """A record batch that cannot be read; ``code`` is Kafka's error code."""

    code: int = error_codes.CORRUPT_MESSAGE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class CorruptRecordError(RecordFormatError):
    """Kafka's CorruptRecordException: the frame or its CRC is wrong."""

    code = error_codes.CORRUPT_MESSAGE


class InvalidRecordError(RecordFormatError):
    """Kafka's InvalidRecordException: the batch's inner structure is wrong."""

    code = error_codes.INVALID_RECORD


class DecompressionError(RecordFormatError):
    """The compressed payload does not decompress with its codec.

    Kafka wraps the codec's IOException in a plain KafkaException, which is not an
    ApiException, so the partition answers UNKNOWN_SERVER_ERROR.
    """

    code = error_codes.UNKNOWN_SERVER_ERROR


class UnknownCompressionError(RecordFormatError):
    """Codec bits 5-7: Kafka's ``CompressionType.forId`` throws IllegalArgumentException.

    Not an ApiException either, so the partition answers UNKNOWN_SERVER_ERROR.
    """

    code = error_codes.UNKNOWN_SERVER_ERROR
