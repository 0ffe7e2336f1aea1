"""Kafka's validation of a produce payload before it is appended, and offset assignment.

Pure functions following `ProduceRequest.validateRecords` (`produce_request_errors`),
`UnifiedLog.analyzeAndValidateRecords`, `LogValidator`, `UnifiedLog.append`'s size checks and
`LogConfig.recordVersion` (`topic_record_magic`): docs/kafka-behaviour.md §15, "Produce" and
"Validating an append". Messages are Kafka 3.x's wording; the offset of the max timestamp is
3.7+'s at every release.

Not here: producer state (sequence, epoch and duplicate checks come after this step, with
`ValidatedAppend.producer` as their input), down-converting v2 batches to an older topic
format (kept as sent), storage, and resolving topic configs (`LogConfig` takes resolved values).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.records import (
    MAGIC_V0,
    MAGIC_V1,
    MAGIC_V2,
    NO_TIMESTAMP,
    Batch,
    CompressionType,
    NewRecord,
    Record,
    RecordBatchV2,
    RecordFormatError,
    TimestampType,
    encode_batch,
    encode_message_set,
    iter_batches,
)
from zkbroker.broker.protocol.records.scan import RecordsScan, scan_records
from zkbroker.zk_layout.release import Release, release_at_least

LONG_MAX = (1 << 63) - 1

# Kafka's defaults (LogConfig / ServerLogConfigs).
DEFAULT_MAX_MESSAGE_BYTES = 1048588
DEFAULT_SEGMENT_BYTES = 1024 * 1024 * 1024

_TARGET_COMPRESSION = {
    "uncompressed": CompressionType.NONE,
    "none": CompressionType.NONE,
    "gzip": CompressionType.GZIP,
    "snappy": CompressionType.SNAPPY,
    "lz4": CompressionType.LZ4,
    "zstd": CompressionType.ZSTD,
}


@dataclass(frozen=True)
class LogConfig:
    """The topic configs validation reads, already resolved (topic over broker default)."""

    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    # 3.6+ (KIP-937); before, both come from message.timestamp.difference.max.ms
    timestamp_before_max_ms: int = LONG_MAX
    timestamp_after_max_ms: int = LONG_MAX
    compacted: bool = False
    compression_type: str = "producer"
    record_magic: int = MAGIC_V2
    """The topic's record version: from ``message.format.version`` before 3.0, else 2."""

    @classmethod
    def with_timestamp_difference(cls, difference_max_ms: int, **kwargs: object) -> LogConfig:
        """Before 3.6: ``message.timestamp.difference.max.ms`` bounds both sides."""
        return cls(
            timestamp_before_max_ms=difference_max_ms,
            timestamp_after_max_ms=difference_max_ms,
            **kwargs,  # type: ignore[arg-type]
        )

    def target_compression(self, source: CompressionType) -> CompressionType:
        """Kafka's ``BrokerCompressionType.targetCompression``: "producer" keeps the source."""
        if self.compression_type == "producer":
            return source
        return _TARGET_COMPRESSION[self.compression_type]


def topic_record_magic(release: Release, message_format_version: str | None) -> int:
    """The magic a topic's log is written in (Kafka's ``LogConfig.recordVersion``).

    ``message.format.version`` (``None``: the release's own) chooses it before 3.0; from 3.0
    on (KIP-724) it is ignored and every log is v2. 0.8/0.9 formats are v0, 0.10.x v1
    (KIP-32), 0.11.0 and later v2 (KIP-98).
    """
    if release_at_least(release, (3, 0)):
        return MAGIC_V2
    if message_format_version is None:
        parts: tuple[int, ...] = tuple(release)
    else:
        numbers = message_format_version.split("-")[0].split(".")
        parts = tuple(int(p) for p in numbers if p.isdigit())
    if parts < (0, 10):
        return MAGIC_V0
    if parts < (0, 11):
        return MAGIC_V1
    return MAGIC_V2


@dataclass(frozen=True)
class RecordError:
    """Produce v8+'s per-record error (KIP-467): the record's index in its batch."""

    batch_index: int
    message: str | None

    def kafka_str(self) -> str:
        message = "null" if self.message is None else f"'{self.message}'"
        return f"RecordError(batchIndex={self.batch_index}, message={message})"


@dataclass(frozen=True)
class AppendError:
    """The append is refused: Kafka's code, its exception message, what Produce sends."""

    code: int
    message: str
    record_errors: tuple[RecordError, ...] = ()
    custom_message: bool = False

    @property
    def wire_message(self) -> str | None:
        """ProduceResponse's error_message: only record validation errors carry one."""
        return self.message if self.custom_message else None


@dataclass(frozen=True)
class ProducerBatchInfo:
    """What the producer-state step (sequence and epoch checks, later) needs of a batch."""

    producer_id: int
    producer_epoch: int
    base_sequence: int
    first_offset: int
    last_offset: int
    record_count: int
    is_transactional: bool


@dataclass(frozen=True)
class ValidatedAppend:
    """An accepted append: the bytes to store and what the Produce response reports."""

    base_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int
    """``now`` for LogAppendTime topics, else -1 (ProduceResponse's log_append_time_ms)."""
    records: bytes
    record_count: int
    source_compression: CompressionType
    target_compression: CompressionType
    converted: bool
    """True when the batches were rebuilt (recompressed or up-converted), not stored as sent."""
    producer: tuple[ProducerBatchInfo, ...] = field(default=())

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


class _Reject(Exception):
    def __init__(self, error: AppendError) -> None:
        super().__init__(error.message)
        self.error = error


def _reject(code: int, message: str) -> _Reject:
    return _Reject(AppendError(code, message))


# -- Produce request shape (KafkaApis, before the log) -----------------------------------


def produce_request_errors(
    api_version: int, payload: bytes | memoryview, release: Release = (3, 9)
) -> AppendError | None:
    """Kafka's ``ProduceRequest.validateRecords``: the partition's error, if any."""
    if api_version < 3:
        return None  # older versions were never checked, for old clients' sake
    error = _produce_request_shape(api_version, payload)
    return None if error is None else _for_release(error, release)


def _produce_request_shape(api_version: int, payload: bytes | memoryview) -> AppendError | None:
    try:
        batches = iter_batches(payload)
        first = next(batches, None)
        if first is None:
            return AppendError(
                error_codes.INVALID_RECORD,
                f"Produce requests with version {api_version} must have at least one record "
                "batch per partition",
            )
        if first.magic != MAGIC_V2:
            return AppendError(
                error_codes.INVALID_RECORD,
                f"Produce requests with version {api_version} are only allowed to contain "
                "record batches with magic version 2",
            )
        if api_version < 7 and first.attributes & 0x07 == CompressionType.ZSTD:
            return AppendError(
                error_codes.UNSUPPORTED_COMPRESSION_TYPE,
                f"Produce requests with version {api_version} are not allowed to use "
                "ZStandard compression",
            )
        if next(batches, None) is not None:
            return AppendError(
                error_codes.INVALID_RECORD,
                f"Produce requests with version {api_version} are only allowed to contain "
                "exactly one record batch per partition",
            )
    except RecordFormatError as e:
        return AppendError(e.code, e.message)
    return None


# -- the append ---------------------------------------------------------------------------


def validate_append(
    payload: bytes | memoryview,
    *,
    topic_partition: str,
    next_offset: int,
    now_ms: int,
    config: LogConfig,
    partition_leader_epoch: int = 0,
    release: Release = (3, 9),
) -> ValidatedAppend | AppendError:
    """Validate a client's records for one partition and assign offsets from ``next_offset``.

    ``topic_partition`` is Kafka's ``topic-partition`` text, as its messages print it.
    """
    try:
        batches, _valid_bytes = _analyze(payload, topic_partition, config)
        if not batches:
            # Nothing whole to append: Kafka answers success without an offset.
            return ValidatedAppend(
                base_offset=-1,
                last_offset=-1,
                max_timestamp=NO_TIMESTAMP,
                offset_of_max_timestamp=-1,
                log_append_time=-1,
                records=b"",
                record_count=0,
                source_compression=CompressionType.NONE,
                target_compression=CompressionType.NONE,
                converted=False,
            )
        validator = _Validator(
            batches,
            topic_partition,
            next_offset,
            now_ms,
            config,
            partition_leader_epoch,
            release,
        )
        result = validator.run()
        _check_sizes_after(result, topic_partition, config)
        return result
    except _Reject as r:
        return _for_release(r.error, release)
    except RecordFormatError as e:
        return _for_release(AppendError(e.code, e.message), release)


def _for_release(error: AppendError, release: Release) -> AppendError:
    """Before KIP-467 (2.4) Kafka's InvalidRecordException was a CorruptRecordException."""
    if error.code == error_codes.INVALID_RECORD and not _has_invalid_record(release):
        return AppendError(error_codes.CORRUPT_MESSAGE, error.message)
    return error


def _has_invalid_record(release: Release) -> bool:
    # KIP-467 (Kafka 2.4) introduced INVALID_RECORD and record errors; before, Kafka's
    # InvalidRecordException was a CorruptRecordException.
    return release_at_least(release, (2, 4))


def _analyze(payload: bytes | memoryview, tp: str, config: LogConfig) -> tuple[list[Batch], int]:
    """``UnifiedLog.analyzeAndValidateRecords`` (client origin)."""
    batches: list[Batch] = []
    valid = 0
    for batch in iter_batches(payload):
        if isinstance(batch, RecordBatchV2) and batch.base_offset != 0:
            raise _reject(
                error_codes.INVALID_RECORD,
                f"The baseOffset of the record batch in the append to {tp} should be 0, "
                f"but it is {batch.base_offset}",
            )
        size = batch.size_in_bytes
        if size > config.max_message_bytes:
            raise _reject(
                error_codes.MESSAGE_TOO_LARGE,
                f"The record batch size in the append to {tp} is {size} bytes which exceeds "
                f"the maximum configured value of {config.max_message_bytes}.",
            )
        if not batch.is_valid():
            raise _reject(
                error_codes.CORRUPT_MESSAGE,
                f"Record is corrupt (stored crc = {batch.crc}) in topic partition {tp}.",
            )
        batches.append(batch)
        valid += size
    return batches, valid


def _check_sizes_after(result: ValidatedAppend, tp: str, config: LogConfig) -> None:
    if result.converted:
        for batch in iter_batches(result.records):
            if batch.size_in_bytes > config.max_message_bytes:
                raise _reject(
                    error_codes.MESSAGE_TOO_LARGE,
                    f"Message batch size is {batch.size_in_bytes} bytes in append to partition "
                    f"{tp} which exceeds the maximum configured size of "
                    f"{config.max_message_bytes}.",
                )
    if len(result.records) > config.segment_bytes:
        raise _reject(
            error_codes.RECORD_LIST_TOO_LARGE,
            f"Message batch size is {len(result.records)} bytes in append to partition {tp} "
            f"which exceeds the maximum configured segment size of {config.segment_bytes}.",
        )


def _source_compression(batches: Sequence[Batch]) -> CompressionType:
    source = CompressionType.NONE
    for batch in batches:
        if batch.is_compressed:
            source = batch.compression
    return source


class _Validator:
    """One run of Kafka's LogValidator over the batches of one append."""

    def __init__(
        self,
        batches: list[Batch],
        tp: str,
        next_offset: int,
        now: int,
        config: LogConfig,
        leader_epoch: int,
        release: Release,
    ) -> None:
        self.batches = batches
        self.tp = tp
        self.counter = next_offset
        self.initial = next_offset
        self.now = now
        self.config = config
        self.leader_epoch = leader_epoch
        self.release = release
        self.record_errors_supported = _has_invalid_record(release)
        self.source = _source_compression(batches)
        self.target = config.target_compression(self.source)
        # Down-conversion is not emulated: a batch newer than the topic's format is kept.
        self.to_magic = config.record_magic

    def run(self) -> ValidatedAppend:
        if self.source == CompressionType.NONE and self.target == CompressionType.NONE:
            if all(b.magic >= self.to_magic for b in self.batches):
                return self._assign_non_compressed()
            return self._convert_non_compressed()
        return self._compressed()

    # -- batch and record rules -----------------------------------------------------------

    def _first_batch(self, source: CompressionType) -> Batch:
        first = self.batches[0]
        if (first.magic >= MAGIC_V2 or source != CompressionType.NONE) and len(self.batches) > 1:
            raise _reject(
                error_codes.INVALID_RECORD, "Compressed outer record has more than one batch"
            )
        return first

    def _validate_batch(self, first: Batch, batch: Batch) -> None:
        tp = self.tp
        if first.magic != batch.magic:
            raise _reject(
                error_codes.INVALID_RECORD,
                f"Batch magic {batch.magic} is not the same as the first batch's magic byte "
                f"{first.magic} in topic partition {tp}",
            )
        if isinstance(batch, RecordBatchV2):
            count_from_offsets = batch.last_offset - batch.base_offset + 1
            if count_from_offsets <= 0:
                raise _reject(
                    error_codes.INVALID_RECORD,
                    f"Batch has an invalid offset range: [{batch.base_offset}, "
                    f"{batch.last_offset}] in topic partition {tp}",
                )
            count = batch.records_count
            if count <= 0:
                raise _reject(
                    error_codes.INVALID_RECORD,
                    f"Invalid reported count for record batch: {count} in topic partition {tp}",
                )
            if count_from_offsets != count:
                raise _reject(
                    error_codes.INVALID_RECORD,
                    f"Inconsistent batch offset range [{batch.base_offset}, {batch.last_offset}] "
                    f"and count of records {count} in topic partition {tp}",
                )
        if batch.is_control:
            raise _reject(
                error_codes.INVALID_RECORD,
                f"Clients are not allowed to write control records in topic partition {tp}",
            )
        if batch.has_producer_id and batch.base_sequence < 0:
            raise _reject(
                error_codes.INVALID_RECORD,
                f"Invalid sequence number {batch.base_sequence} in record batch with producerId "
                f"{batch.producer_id} in topic partition {tp}",
            )
        if batch.is_transactional and self.to_magic < MAGIC_V2:
            raise _reject(
                error_codes.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                f"Transactional records cannot be used with magic version {self.to_magic}",
            )
        if batch.has_producer_id and self.to_magic < MAGIC_V2:
            raise _reject(
                error_codes.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                f"Idempotent records cannot be used with magic version {self.to_magic}",
            )

    def _record_error(
        self, batch: Batch, record: Record, index: int
    ) -> tuple[int, RecordError] | None:
        tp = self.tp
        if record.magic != batch.magic:
            return error_codes.INVALID_RECORD, RecordError(
                index,
                f"Record {record.kafka_str()}'s magic does not match outer magic {batch.magic} "
                f"in topic partition {tp}",
            )
        if batch.magic <= MAGIC_V1 and batch.is_compressed and not record.crc_valid:
            raise _reject(
                error_codes.CORRUPT_MESSAGE,
                f"Record is corrupt (stored crc = {record.crc}, computed crc = "
                f"{record.computed_crc})",
            )
        if self.config.compacted and not record.has_key:
            return error_codes.INVALID_RECORD, RecordError(
                index,
                f"Compacted topic cannot accept message without key in topic partition {tp}",
            )
        return self._timestamp_error(batch, record, index)

    def _timestamp_error(
        self, batch: Batch, record: Record, index: int
    ) -> tuple[int, RecordError] | None:
        config = self.config
        now = self.now
        if config.timestamp_type == TimestampType.CREATE_TIME and record.timestamp != NO_TIMESTAMP:
            diff = _java_long(now - record.timestamp)
            if diff > config.timestamp_before_max_ms or -diff > config.timestamp_after_max_ms:
                low = _java_long(now - config.timestamp_before_max_ms)
                high = _java_long(now + config.timestamp_after_max_ms)
                return error_codes.INVALID_TIMESTAMP, RecordError(
                    index,
                    f"Timestamp {record.timestamp} of message with offset {record.offset} is out "
                    f"of range. The timestamp should be within [{low}, {high}]",
                )
        elif batch.timestamp_type == TimestampType.LOG_APPEND_TIME:
            return error_codes.INVALID_TIMESTAMP, RecordError(
                index,
                f"Invalid timestamp type in message {record.kafka_str()}. Producer should not set "
                "timestamp type to LogAppendTime.",
            )
        return None

    def _records_of(self, batch: Batch) -> list[Record]:
        """Validate a batch's records; reject the append if any fails (processRecordErrors)."""
        records = batch.records()
        errors: list[tuple[int, RecordError]] = []
        # The hot path: a v2 record that no rule can reject is recognised with a few
        # comparisons; anything else goes through the rules below one by one. Inside
        # [low, high] Java's long arithmetic cannot overflow, so the answers agree.
        config = self.config
        fast = isinstance(batch, RecordBatchV2)
        need_key = config.compacted
        create_time = config.timestamp_type == TimestampType.CREATE_TIME
        any_time_ok = not create_time and batch.timestamp_type != TimestampType.LOG_APPEND_TIME
        no_time_ok = batch.timestamp_type != TimestampType.LOG_APPEND_TIME
        low = self.now - config.timestamp_before_max_ms
        high = self.now + config.timestamp_after_max_ms
        for index, record in enumerate(records):
            if fast and not (need_key and record.key is None):
                ts = record.timestamp
                if any_time_ok or (
                    (low <= ts <= high) if ts != NO_TIMESTAMP and create_time else no_time_ok
                ):
                    continue
            if self.source != CompressionType.NONE and record.is_compressed:
                error: tuple[int, RecordError] | None = (
                    error_codes.INVALID_RECORD,
                    RecordError(
                        index,
                        "Compressed outer record should not have an inner record with a "
                        f"compression attribute set: {record.kafka_str()}",
                    ),
                )
            else:
                error = self._record_error(batch, record, index)
            if error is not None:
                if not self.record_errors_supported:
                    # Before KIP-467 the first bad record failed the batch at once.
                    code = error[0]
                    if code == error_codes.INVALID_RECORD:
                        code = error_codes.CORRUPT_MESSAGE
                    raise _reject(code, error[1].message or "")
                errors.append(error)
        if errors:
            raise _Reject(_record_validation_error(errors))
        return records

    def _v2_timestamps(self, batch: RecordBatchV2) -> tuple[int, int, int]:
        """An uncompressed v2 batch's record count, max timestamp and the index of the first
        record holding it (-1: none above NO_TIMESTAMP), its records validated.

        The quick walk (``scan_records``) settles the common batch: well formed, no headers,
        every record inside the rules by its extremes alone. Anything else is decoded record
        by record (`_records_of`), which finds the same answer or the error to send.
        """
        if batch.timestamp_type != TimestampType.LOG_APPEND_TIME:
            scan = scan_records(batch.records_body(), batch.records_count)
            if scan is not None and self._scan_passes(batch, scan):
                max_ts = batch.base_timestamp + scan.max_timestamp_delta
                if max_ts > NO_TIMESTAMP:
                    return scan.count, max_ts, scan.index_of_max
                return scan.count, NO_TIMESTAMP, -1
        max_ts, index_of_max = NO_TIMESTAMP, -1
        records = self._records_of(batch)
        for i, record in enumerate(records):
            if record.timestamp > max_ts:
                max_ts, index_of_max = record.timestamp, i
        return len(records), max_ts, index_of_max

    def _scan_passes(self, batch: RecordBatchV2, scan: RecordsScan) -> bool:
        """No record rule can refuse the scanned records (the fast test of `_records_of`,
        applied to the extremes: inside [low, high] Java's long arithmetic cannot overflow)."""
        config = self.config
        if config.compacted and scan.any_null_key:
            return False
        if config.timestamp_type != TimestampType.CREATE_TIME:
            return True  # LogAppendTime topic, CreateTime batch: the broker stamps its time
        low = self.now - config.timestamp_before_max_ms
        high = self.now + config.timestamp_after_max_ms
        base = batch.base_timestamp
        return low <= base + scan.min_timestamp_delta and base + scan.max_timestamp_delta <= high

    # -- the three paths --------------------------------------------------------------------

    def _assign_non_compressed(self) -> ValidatedAppend:
        first = self._first_batch(CompressionType.NONE)
        max_timestamp = NO_TIMESTAMP
        offset_of_max = -1
        log_append = self.config.timestamp_type == TimestampType.LOG_APPEND_TIME
        out: list[bytes] = []
        producers: list[ProducerBatchInfo] = []
        for batch in self.batches:
            self._validate_batch(first, batch)
            batch_first = self.counter
            max_batch_ts = NO_TIMESTAMP
            offset_of_max_batch = -1
            if isinstance(batch, RecordBatchV2):
                # Offsets are consecutive from the counter, whatever the deltas said.
                count, max_batch_ts, index_of_max = self._v2_timestamps(batch)
                if index_of_max >= 0:
                    offset_of_max_batch = batch_first + index_of_max
                self.counter += count
                last = self.counter - 1
                ts = (
                    (TimestampType.LOG_APPEND_TIME, self.now)
                    if log_append
                    else (self.config.timestamp_type, max_batch_ts)
                )
                out.append(
                    batch.with_header(
                        base_offset=last - batch.last_offset_delta,
                        partition_leader_epoch=self.leader_epoch,
                        max_timestamp=ts,
                    )
                )
                producers.append(_producer_info(batch, batch_first, last, count))
            else:
                # An uncompressed legacy entry is one record.
                record = self._records_of(batch)[0]
                offset = self.counter
                self.counter += 1
                if batch.magic > MAGIC_V0:
                    max_batch_ts = record.timestamp
                    offset_of_max_batch = offset
                    ts = (
                        (TimestampType.LOG_APPEND_TIME, self.now)
                        if log_append
                        else (self.config.timestamp_type, max_batch_ts)
                    )
                    out.append(batch.with_offset_and_timestamp(offset, ts))
                else:
                    out.append(batch.with_offset_and_timestamp(offset))
            if batch.magic > MAGIC_V0 and max_batch_ts > max_timestamp:
                max_timestamp = max_batch_ts
                offset_of_max = offset_of_max_batch
        if log_append:
            max_timestamp = self.now
            offset_of_max = self.counter - 1 if self.to_magic >= MAGIC_V2 else self.initial
        return self._result(b"".join(out), max_timestamp, offset_of_max, False, producers)

    def _convert_non_compressed(self) -> ValidatedAppend:
        first = self._first_batch(CompressionType.NONE)
        validated: list[Record] = []
        for batch in self.batches:
            self._validate_batch(first, batch)
            validated.extend(self._records_of(batch))
        return self._build(first, validated)

    def _compressed(self) -> ValidatedAppend:
        if self.target == CompressionType.ZSTD and not release_at_least(self.release, (2, 1)):
            raise _reject(
                error_codes.UNSUPPORTED_COMPRESSION_TYPE,
                "Produce requests to inter.broker.protocol.version < 2.1 broker are not "
                "allowed to use ZStandard compression",
            )
        in_place = self.source == self.target
        first = self._first_batch(self.source)
        if first.magic < self.to_magic:
            in_place = False
        if self.to_magic == MAGIC_V0:
            in_place = False
        max_timestamp = NO_TIMESTAMP
        offset_of_max = -1
        expected_inner = 0
        validated: list[Record] = []
        for batch in self.batches:
            self._validate_batch(first, batch)
            for record in self._records_of(batch):
                if batch.magic > MAGIC_V0 and self.to_magic > MAGIC_V0:
                    if record.timestamp > max_timestamp:
                        max_timestamp = record.timestamp
                        offset_of_max = self.initial + len(validated)
                    # Old clients' v1 inner offsets may be wrong: Kafka rebuilds, not rejects.
                    if record.offset != expected_inner:
                        in_place = False
                expected_inner += 1
                validated.append(record)
        if not in_place:
            return self._build(first, validated)
        self.counter += len(validated)
        last = self.counter - 1
        if self.config.timestamp_type == TimestampType.LOG_APPEND_TIME:
            max_timestamp = self.now
            offset_of_max = self.initial
        ts = (self.config.timestamp_type, max_timestamp)
        if isinstance(first, RecordBatchV2):
            stored = first.with_header(
                base_offset=last - first.last_offset_delta,
                partition_leader_epoch=self.leader_epoch,
                max_timestamp=ts,
            )
            producers = [_producer_info(first, self.initial, last, len(validated))]
        else:
            stored = first.with_offset_and_timestamp(last, ts)
            producers = []
        return self._result(stored, max_timestamp, offset_of_max, False, producers)

    def _build(self, first: Batch, validated: list[Record]) -> ValidatedAppend:
        """Kafka's ``buildRecordsAndAssignOffsets``: one new batch (or message set)."""
        magic = max(self.to_magic, first.magic)
        log_append = self.config.timestamp_type == TimestampType.LOG_APPEND_TIME
        base = self.counter
        new = [
            NewRecord(base + i, r.timestamp, r.key, r.value, r.headers)
            for i, r in enumerate(validated)
        ]
        self.counter += len(new)
        if magic >= MAGIC_V2:
            stored = encode_batch(
                new,
                base_offset=base,
                compression=self.target,
                timestamp_type=self.config.timestamp_type,
                log_append_time=self.now,
                producer_id=first.producer_id,
                producer_epoch=first.producer_epoch,
                base_sequence=first.base_sequence,
                transactional=first.is_transactional,
                partition_leader_epoch=self.leader_epoch,
            )
            producers = [_producer_info(first, base, self.counter - 1, len(new))]
        else:
            stored = encode_message_set(
                new,
                magic=magic,
                compression=self.target,
                timestamp_type=self.config.timestamp_type,
                log_append_time=self.now,
            )
            producers = []
        if log_append:
            max_timestamp, offset_of_max = self.now, base
        else:
            max_timestamp, offset_of_max = NO_TIMESTAMP, -1
            if magic > MAGIC_V0:
                for record in new:
                    if record.timestamp > max_timestamp:
                        max_timestamp, offset_of_max = record.timestamp, record.offset
        return self._result(stored, max_timestamp, offset_of_max, True, producers)

    def _result(
        self,
        stored: bytes,
        max_timestamp: int,
        offset_of_max: int,
        converted: bool,
        producers: list[ProducerBatchInfo],
    ) -> ValidatedAppend:
        log_append = self.config.timestamp_type == TimestampType.LOG_APPEND_TIME
        return ValidatedAppend(
            base_offset=self.initial,
            last_offset=self.counter - 1,
            max_timestamp=max_timestamp,
            offset_of_max_timestamp=offset_of_max,
            log_append_time=self.now if log_append else NO_TIMESTAMP,
            records=stored,
            record_count=self.counter - self.initial,
            source_compression=self.source,
            target_compression=self.target,
            converted=converted,
            producer=tuple(p for p in producers if p.producer_id >= 0),
        )


def _producer_info(batch: Batch, first: int, last: int, count: int) -> ProducerBatchInfo:
    return ProducerBatchInfo(
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        first_offset=first,
        last_offset=last,
        record_count=count,
        is_transactional=batch.is_transactional,
    )


def _record_validation_error(errors: list[tuple[int, RecordError]]) -> AppendError:
    """Kafka's ``processRecordErrors``: one error for the batch, every record error kept."""
    record_errors = tuple(e for _, e in errors)
    if any(code == error_codes.INVALID_TIMESTAMP for code, _ in errors):
        return AppendError(
            error_codes.INVALID_TIMESTAMP,
            "One or more records have been rejected due to invalid timestamp",
            record_errors,
            custom_message=True,
        )
    shown = ", ".join(e.kafka_str() for e in record_errors[:3])
    return AppendError(
        error_codes.INVALID_RECORD,
        f"One or more records have been rejected due to {len(record_errors)} record errors in "
        f"total, and only showing the first three errors at most: [{shown}]",
        record_errors,
        custom_message=True,
    )


def _java_long(value: int) -> int:
    """Java's long arithmetic wraps: ``now + Long.MAX_VALUE`` prints as a negative number."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value
