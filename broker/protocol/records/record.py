"""One decoded record, the same shape for magic 0, 1 and 2.

A v2 record (KIP-98) has headers and no CRC of its own; a legacy message (magic 0/1, KIP-32
for the timestamp) has a CRC-32 and no headers. ``Record`` holds what validation and the
encoders need from either.

Deliberately not here: decoding (``batch_v2``, ``legacy``).
"""

from __future__ import annotations

from dataclasses import dataclass

from zkbroker.broker.protocol.records.constants import CompressionType, TimestampType

Header = tuple[bytes, bytes | None]


@dataclass(slots=True, eq=True)
class Record:
    # Not frozen: a frozen dataclass's __init__ costs several times more, and a batch of
    # 1,000 records builds 1,000 of these on the produce path. Treat it as read-only.
    offset: int
    """Absolute offset as sent: base offset + offset delta (v2), the message's offset (v0/v1)."""
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    magic: int = 2
    attributes: int = 0
    size_in_bytes: int = 0
    """Encoded size: length varint included (v2), log overhead included (v0/v1)."""
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    crc: int | None = None
    """The stored CRC-32 of a legacy message; None for v2 records."""
    computed_crc: int | None = None
    """The CRC-32 of a legacy message's bytes as received; None for v2 records."""

    @property
    def crc_valid(self) -> bool:
        """Whether a legacy message's stored CRC matches its bytes (always True for v2)."""
        return self.crc == self.computed_crc

    @property
    def has_key(self) -> bool:
        return self.key is not None

    @property
    def is_compressed(self) -> bool:
        """A legacy message with codec bits set (an inner message must have none)."""
        return self.magic < 2 and self.attributes & 0x07 != 0

    def kafka_str(self) -> str:
        """Kafka's toString of the record, as its error messages print it."""
        key_len = 0 if self.key is None else len(self.key)
        value_len = 0 if self.value is None else len(self.value)
        if self.magic >= 2:
            return (
                f"DefaultRecord(offset={self.offset}, timestamp={self.timestamp}, "
                f"key={key_len} bytes, value={value_len} bytes)"
            )
        codec_id = self.attributes & 0x07
        codec = CompressionType(codec_id).kafka_name if codec_id <= 4 else str(codec_id)
        if self.magic == 0:
            inner = (
                f"Record(magic=0, attributes={self.attributes}, compression={codec}, "
                f"crc={self.crc}, key={key_len} bytes, value={value_len} bytes)"
            )
        else:
            inner = (
                f"Record(magic={self.magic}, attributes={self.attributes}, compression={codec}, "
                f"crc={self.crc}, {self.timestamp_type.kafka_name}={self.timestamp}, "
                f"key={key_len} bytes, value={value_len} bytes)"
            )
        return f"LegacyRecordBatch(offset={self.offset}, {inner})"
