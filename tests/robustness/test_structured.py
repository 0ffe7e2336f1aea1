"""Structured fuzzing: hypothesis builds valid-shaped requests for every API key and version
the broker serves (`zkbroker.handlers.registry`, Kafka 3.9's ranges) from the message definitions
(`strategies`), sends them over a real socket to the controller of a real cluster on a real
ZooKeeper, and checks what Kafka guarantees for a request that parses:

- it is answered, in order, with a response that decodes at the request's version and
  carries the request's correlation id (Kafka closes a connection only on what does not
  parse, which these requests always do);
- the broker logs no traceback and no `request.failed` (a handler that raises answers
  UNKNOWN_SERVER_ERROR, which is for Kafka's own internal failures, not for odd input);
- the health client's Metadata, on a connection of its own, is answered within 1 s.

One test per (API key, version), so a failure names both; `ZKBROKER_FUZZ=long` draws
hundreds of examples each instead of a few. Replay with the seed printed at the start.

Deliberately not here: byte-level mutations (`test_mutation.py`), hostile clients
(`test_hostile.py`), the hazards being fixed now (`test_known_bugs.py`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import assume, given, seed
from hypothesis import strategies as st

from tests.robustness.conftest import FIGURES, FUZZ_SETTINGS, SEED, target
from tests.robustness.frames import (
    PROBE_CORRELATION_ID,
    api_name,
    closes_after_decoding,
    hazard,
    is_silent,
    may_wait,
    probe_frame,
    served_pairs,
)
from tests.robustness.probes import Closed, FrameConn, HealthMonitor, LogWatch, frame_of
from tests.robustness.strategies import request_strategy
from zkbroker import Cluster
from zkbroker.broker.protocol import decode_response

pytestmark = [
    pytest.mark.robustness,
    pytest.mark.integration,
    # The brokers' threads (kazoo's retry jitter, the controller) use the global `random`
    # while a request is drawn; hypothesis sees its state move and blames the strategy.
    pytest.mark.filterwarnings(
        "ignore:Do not use the `random` module:hypothesis.errors.HypothesisDeprecationWarning"
    ),
]

PAIRS = served_pairs()
ANSWER_TIMEOUT_S = 30.0
WAIT_GRACE_S = 3.0


class StructuredClient:
    """One connection to the target broker, reopened only if a test failure closed it."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.conn: FrameConn | None = None
        self.correlation = itertools.count(1)
        self.sent = 0

    def exchange(self, api_key: int, version: int, body: Any) -> tuple[int, int, Any]:
        """(correlation id sent, correlation id answered, decoded answer)."""
        if self.conn is None:
            self.conn = FrameConn(self.host, self.port, timeout=ANSWER_TIMEOUT_S)
        correlation = next(self.correlation) & 0x7FFFFFFF
        frame = frame_of(api_key, version, body, correlation, "structured")
        self.sent += 1
        silent = is_silent(api_key, body)
        waits = may_wait(api_key, body)
        # A request Kafka may hold (a JoinGroup waiting for its rebalance, a long-polling
        # Fetch) is given a few seconds; still held then, it counts as answered later.
        self.conn.sock.settimeout(WAIT_GRACE_S if waits else ANSWER_TIMEOUT_S)
        try:
            self.conn.send(frame + (probe_frame() if silent else b""))
            answer = self.conn.recv_frame()
            if silent:
                # Kafka answers acks=0 with nothing: the next answer is the probe's.
                got, _ = decode_response(18, 0, answer)
                return correlation, correlation if got == PROBE_CORRELATION_ID else got, None
        except TimeoutError:
            self.conn.close()
            self.conn = None
            if waits:
                return correlation, correlation, None
            raise
        except (Closed, OSError):
            self.conn.close()
            self.conn = None
            if silent:
                # A failed acks=0 produce: Kafka closes the connection so the client notices.
                return correlation, correlation, None
            raise
        got, response = decode_response(api_key, version, answer)
        return correlation, got, response

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


@pytest.fixture(scope="module")
def structured(fuzz_cluster: Cluster) -> Iterator[tuple[StructuredClient, HealthMonitor]]:
    host, port = target(fuzz_cluster)
    client = StructuredClient(host, port)
    health = HealthMonitor(host, port).start()
    try:
        yield client, health
    finally:
        health.stop()
        client.close()
        FIGURES.append(f"structured: {client.sent} requests over {len(PAIRS)} API versions")
        FIGURES.append(health.figures().line().replace("health:", "health (structured):"))


@pytest.mark.parametrize(
    ("api_key", "version"), PAIRS, ids=[f"{api_name(k)}-v{v}" for k, v in PAIRS]
)
@seed(SEED)
@FUZZ_SETTINGS
@given(data=st.data())
def test_structured_request(
    api_key: int,
    version: int,
    data: st.DataObject,
    structured: tuple[StructuredClient, HealthMonitor],
    log_watch: LogWatch,
) -> None:
    client, health = structured
    body = data.draw(request_strategy(api_key, version), label="request")
    assume(hazard(api_key, body) is None)
    closes = closes_after_decoding(api_key, body)
    if closes is not None:
        with pytest.raises(Closed):  # as Kafka closes it
            client.exchange(api_key, version, body)
        assert log_watch.take() == []
        assert health.failures == []
        return
    try:
        sent, got, _ = client.exchange(api_key, version, body)
    except Closed:
        pytest.fail(f"the broker closed the connection on a valid {api_name(api_key)} v{version}")
    assert got == sent
    assert log_watch.take() == []
    assert health.failures == []
