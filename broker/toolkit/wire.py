"""A minimal blocking Kafka wire client for tests, built on zkbroker's own codec.

It speaks real TCP to a real broker: frames a request, sends it, reads the size-prefixed
answer and decodes it. Tests use it where a client library cannot send what the test needs
(a specific version, a malformed frame, pipelined requests).
"""

from __future__ import annotations

import socket
from typing import Any

from zkbroker.broker.protocol import RequestHeader, decode_response, encode_request
from zkbroker.broker.protocol.framing import SIZE_BYTES, frame_size, size_prefixed

# A test client trusts the broker under test; the bound only stops a corrupt size prefix from
# making it wait for gigabytes.
MAX_RESPONSE_BYTES = 256 * 1024 * 1024


class WireClient:
    def __init__(self, host: str, port: int, client_id: str = "zkbroker-tests") -> None:
        self.sock = socket.create_connection((host, port), timeout=10)
        self.client_id = client_id
        self._correlation = 0

    @classmethod
    def to(cls, bootstrap: str) -> WireClient:
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        return cls(host, int(port))

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def frame(self, api_key: int, version: int, body: Any) -> tuple[int, bytes]:
        self._correlation += 1
        header = RequestHeader(
            api_key=api_key,
            api_version=version,
            correlation_id=self._correlation,
            client_id=self.client_id,
        )
        payload = encode_request(header, body)
        return self._correlation, size_prefixed(payload)

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_frame(self) -> bytes:
        return self._read(frame_size(self._read(SIZE_BYTES), MAX_RESPONSE_BYTES, what="response"))

    def request(self, version: int, body: Any) -> Any:
        correlation, data = self.frame(body.API_KEY, version, body)
        self.send_raw(data)
        got, response = decode_response(body.API_KEY, version, self.recv_frame())
        assert got == correlation
        return response

    def is_closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True when the broker closed the connection (EOF) within `timeout`."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False

    def _read(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)
