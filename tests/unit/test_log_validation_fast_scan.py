"""The C-reader fast path gives what the exact validator gives, and leaves every refusal to it.

`broker.protocol.records.fast_scan` reads uncompressed v2 timestamps with aiokafka's compiled
reader; `validate_append` must answer byte for byte as it does without it (the exact reader),
for valid batches and for batches the rules or the record reader refuse.
"""

from __future__ import annotations

import struct
import time

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.protocol.records import NewRecord, TimestampType, encode_batch, fast_scan
from broker.rules.log_validation import LogConfig, validate_append

NOW = 1_700_000_000_000

pytestmark = pytest.mark.skipif(
    not fast_scan.available(), reason="aiokafka's compiled record reader is not installed"
)


def _both(payload: bytes, config: LogConfig) -> tuple[object, object]:
    fast = validate_append(payload, topic_partition="t-0", next_offset=7, now_ms=NOW, config=config)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(fast_scan, "_CBatch", None)
        exact = validate_append(
            payload, topic_partition="t-0", next_offset=7, now_ms=NOW, config=config
        )
    return fast, exact


records = st.lists(
    st.tuples(
        st.integers(min_value=-1, max_value=NOW + 10**9),
        st.one_of(st.none(), st.binary(max_size=20)),
        st.one_of(st.none(), st.binary(max_size=50)),
        st.lists(
            st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=5))), max_size=2
        ),
    ),
    min_size=1,
    max_size=30,
)
configs = st.sampled_from(
    [
        LogConfig(),
        LogConfig(timestamp_type=TimestampType.LOG_APPEND_TIME),
        LogConfig(timestamp_before_max_ms=3_600_000, timestamp_after_max_ms=3_600_000),
        LogConfig(compacted=True),
    ]
)


@settings(max_examples=200, deadline=None)
@given(specs=records, config=configs, producer=st.booleans())
def test_valid_and_refused_batches_answer_alike(
    specs: list, config: LogConfig, producer: bool
) -> None:
    batch = encode_batch(
        [
            NewRecord(i, ts, key, value, tuple((k.encode(), v) for k, v in headers))
            for i, (ts, key, value, headers) in enumerate(specs)
        ],
        producer_id=5 if producer else -1,
        producer_epoch=0 if producer else -1,
        base_sequence=0 if producer else -1,
    )
    fast, exact = _both(batch, config)
    assert fast == exact


def _recrc(batch: bytearray) -> bytes:
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return bytes(batch)


def test_a_record_that_lies_about_its_length_gets_kafkas_error() -> None:
    batch = bytearray(encode_batch([NewRecord(0, NOW, b"k", b"value")]))
    batch[61] += 2  # the first record's length varint (zigzag): two bytes more than it holds
    fast, exact = _both(_recrc(batch), LogConfig())
    assert fast == exact
    assert getattr(fast, "code", None) is not None  # refused, by the exact reader's words


def test_the_fast_path_is_taken_for_a_plain_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = fast_scan.record_timestamps

    def spy(batch: object) -> object:
        result = real(batch)  # type: ignore[arg-type]
        calls.append(result is not None)
        return result

    monkeypatch.setattr(fast_scan, "record_timestamps", spy)
    now = int(time.time() * 1000)
    batch = encode_batch([NewRecord(i, now, None, b"x") for i in range(10)])
    validate_append(batch, topic_partition="t-0", next_offset=0, now_ms=now, config=LogConfig())
    assert calls == [True]
