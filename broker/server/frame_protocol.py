"""One connection's bytes as Kafka frames: an asyncio Protocol that splits what it reads into
size-prefixed requests under the memory rules, and writes answers with flow control.

The consumer pulls frames: `take_frame()` returns the next whole request or None, and
`on_frames` is called whenever one may have become available (bytes arrived, pool memory was
freed, the connection ended). `read_frame()` waits for one (the SASL exchange). Frames are
handed over in the callback that read them, so an answer that needs no waiting is written
before the loop polls again (no task wake-up per request).

Memory (README "Limits", docs/kafka-behaviour.md §0 "Connection limits"): a request of at most
UNPOOLED_REQUEST_BYTES is always read. A larger one first reserves its announced size in
`RequestMemory` (queued.max.request.bytes, Kafka's non-strict pool): the connection stops
reading until it gets it, then reads into one buffer of that size (an anonymous mapping above
MAPPED_REQUEST_BYTES, whose pages go back to the system when it closes). While a request is in
flight, at most BUFFERED_BYTES of the next ones are buffered before reading pauses (Kafka mutes
the channel). Any bytes read count as activity for `connections.max.idle.ms`.

Not here: what a frame means (the listener's connection and the request pipeline), TLS (the
transport), admission and idle expiry (`zkbroker.broker.server.listener`).
"""

from __future__ import annotations

import asyncio
import mmap
from collections.abc import Callable
from typing import cast

from zkbroker.broker.protocol.framing import SIZE_BYTES, frame_size, size_prefixed
from zkbroker.broker.server.admission import (
    IdleConnections,
    RequestMemoryPool,
    RequestRead,
)

# Requests above this size are read into an anonymous mapping, smaller large ones into a heap
# buffer. glibc's malloc serves sizes from 32 MiB with mmap anyway, faulting in (and
# zero-filling) every page at once; below, it reuses heap memory, and mapping instead measured
# twice as slow to read.
MAPPED_REQUEST_BYTES = 32 << 20
# Bytes of later requests buffered while one is in flight before reading pauses (what an
# asyncio stream with its default limit buffers).
BUFFERED_BYTES = 128 << 10
# Answers above this size are written after their size prefix, not copied behind it: a second
# send costs less than copying them.
UNCOPIED_ANSWER_BYTES = 64 << 10


class RequestMemory:
    """A listener's queued.max.request.bytes pool and the connections waiting on it."""

    def __init__(self, pool: RequestMemoryPool) -> None:
        self.pool = pool
        self._waiting: set[FrameProtocol] = set()

    def reserve(self, size: int, waiter: FrameProtocol) -> bool:
        """Reserve `size` bytes; False (and `waiter` is told when memory is freed) if the pool
        is used up."""
        if self.pool.try_allocate(size):
            self._waiting.discard(waiter)
            return True
        self._waiting.add(waiter)
        return False

    def release(self, size: int) -> None:
        if not self.pool.pooled(size):
            return
        self.pool.release(size)
        waiting, self._waiting = self._waiting, set()
        loop = asyncio.get_running_loop()
        for waiter in waiting:  # each tries again; those that fail wait again
            loop.call_soon(waiter.notify)

    def forget(self, waiter: FrameProtocol) -> None:
        self._waiting.discard(waiter)


class FrameProtocol(asyncio.Protocol):
    """The frames of one connection (see the module docstring)."""

    def __init__(
        self,
        connection_id: str,
        memory: RequestMemory,
        idle: IdleConnections,
        reading: RequestRead,
    ) -> None:
        self.connection_id = connection_id
        self._memory = memory
        self._idle = idle
        self._now = asyncio.get_running_loop().time
        self.reading = reading
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        # The large request being read into its own buffer, and how much of it has come.
        self._large: bytearray | mmap.mmap | None = None
        self._large_view: memoryview | None = None
        self._ready: bytes | None = None  # a large request read whole, not yet taken
        self._paused = False
        self._write_paused = False
        self._drained: asyncio.Future[None] | None = None
        self._waiter: asyncio.Future[None] | None = None
        # Set by the consumer: called once the transport is attached; when a frame may be
        # ready; and while it handles one.
        self.on_made: Callable[[], None] | None = None
        self.on_frames: Callable[[], None] | None = None
        self.in_flight = False
        self.ended = False  # the peer closed, or the connection was lost
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.error: Exception | None = None

    # ---- asyncio.Protocol --------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Not an isinstance check: uvloop's transports are not asyncio.Transport subclasses.
        self.transport = cast(asyncio.Transport, transport)
        if self.on_made is not None:
            self.on_made()

    def data_received(self, data: bytes) -> None:
        if not self.in_flight:
            # Any bytes are activity (Kafka's selector); a request in flight is not idle.
            self._idle.touch(self.connection_id, self._now())
        large = self._large_view
        if large is not None:
            data = self._fill(large, data)
            if not data:
                self.notify()
                return
        self._buffer += data
        if len(self._buffer) > BUFFERED_BYTES and not self._paused and self.transport:
            self._paused = True
            self.transport.pause_reading()
        self.notify()

    def eof_received(self) -> bool | None:
        self.ended = True
        self.notify()
        # Half-closed: keep the transport open so the requests already read are answered
        # before the connection closes (the consumer closes it once no frame is left). Over
        # TLS the transport closes itself whatever this returns.
        return self.transport is not None and self.transport.get_extra_info("sslcontext") is None

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self.error = exc
        self._drop_large()
        self._memory.forget(self)
        if not self.lost.done():
            self.lost.set_result(None)
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_exception(ConnectionResetError("connection lost"))
        self.notify()

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    # ---- for the consumer --------------------------------------------------------------

    def notify(self) -> None:
        """Wake whoever waits for a frame: `read_frame`, else the consumer's `on_frames`."""
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)
            return
        if self.on_frames is not None and not self.in_flight:
            self.on_frames()

    def take_frame(self, max_bytes: int) -> bytes | None:
        """The next whole request, or None until more bytes (or pool memory) come; FrameRefused
        for a size Kafka refuses. After the end of the stream, None for good (`end_reason`)."""
        ready = self._ready
        if ready is not None:
            self._ready = None
            return ready
        if self._large is not None:
            return None  # still reading a large one
        buffer = self._buffer
        if len(buffer) < SIZE_BYTES:
            return None
        size = frame_size(bytes(buffer[:SIZE_BYTES]), max_bytes)
        reading = self.reading
        if size > self._memory.pool.unpooled_bytes:
            return self._start_large(size)
        end = SIZE_BYTES + size
        if len(buffer) < end:
            reading.size, reading.received = size, -1
            self._resume_if_room()
            return None
        frame = bytes(buffer[SIZE_BYTES:end])
        del buffer[:end]
        reading.size = 0
        self._resume_if_room()
        return frame

    def end_reason(self) -> str:
        """Why the stream ended, once `ended` and no frame is left."""
        if self._buffer and len(self._buffer) < SIZE_BYTES:
            return "connection ended inside a size prefix"
        if self._buffer or self._large is not None or self.reading.waiting_for_pool:
            return "connection ended inside a request"
        return "closed by client"

    async def read_frame(self, max_bytes: int) -> bytes:
        """The next request, waiting for it: asyncio.IncompleteReadError at the stream's end,
        FrameRefused for a size Kafka refuses."""
        while True:
            frame = self.take_frame(max_bytes)
            if frame is not None:
                return frame
            if self.ended:
                raise asyncio.IncompleteReadError(bytes(self._buffer), None)
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter

    def write_frame(self, payload: bytes) -> None:
        """Send `payload` behind its size prefix. A large answer (a Fetch's records) is
        written after the prefix rather than copied behind it."""
        transport = self.transport
        if transport is None:
            return
        if len(payload) > UNCOPIED_ANSWER_BYTES:
            transport.write(len(payload).to_bytes(SIZE_BYTES, "big"))
            transport.write(payload)
        else:
            transport.write(size_prefixed(payload))

    async def drain(self) -> None:
        """Wait while the transport's write buffer is above its high-water mark."""
        if self.ended and self.error is not None:
            raise ConnectionResetError("connection lost")
        if not self._write_paused:
            return
        if self._drained is None:
            self._drained = asyncio.get_running_loop().create_future()
        await self._drained

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    # ---- large requests ----------------------------------------------------------------

    def _start_large(self, size: int) -> bytes | None:
        """Reserve a large request's size, then read it into its own buffer (module
        docstring): all or nothing, so a request that got its share depends only on its own
        client, and large requests never hold parts of the pool while each waits for more."""
        reading = self.reading
        reading.size = size
        if not self._memory.reserve(size, self):
            reading.waiting_for_pool = True
            reading.received = 0
            if not self._paused and self.transport is not None:
                self._paused = True
                self.transport.pause_reading()
            return None
        reading.waiting_for_pool = False
        buffer: bytearray | mmap.mmap = (
            mmap.mmap(-1, size) if size > MAPPED_REQUEST_BYTES else bytearray(size)
        )
        self._large, self._large_view = buffer, memoryview(buffer)
        reading.received = 0
        rest = bytes(self._buffer[SIZE_BYTES:])
        self._buffer.clear()
        rest = self._fill(self._large_view, rest)
        self._buffer += rest
        self._resume_if_room()
        ready, self._ready = self._ready, None
        return ready

    def _fill(self, view: memoryview, data: bytes) -> bytes:
        """Copy what `data` holds of the large request into its buffer; the rest is returned.
        When the request is whole it is kept for `take_frame`'s caller."""
        reading = self.reading
        got = reading.received
        take = min(len(view) - got, len(data))
        view[got : got + take] = data[:take]
        got += take
        reading.received = got
        if got == len(view):
            self._ready = bytes(view)
            self._drop_large()
            reading.size = 0
        return data[take:]

    def _drop_large(self) -> None:
        large, view = self._large, self._large_view
        if large is None:
            return
        self._large = self._large_view = None
        assert view is not None
        size = len(large)  # before closing: a closed mapping has no length
        view.release()
        if isinstance(large, mmap.mmap):
            large.close()
        self._memory.release(size)

    def _resume_if_room(self) -> None:
        if (
            self._paused
            and len(self._buffer) <= BUFFERED_BYTES
            and not self.reading.waiting_for_pool
            and self.transport is not None
        ):
            self._paused = False
            self.transport.resume_reading()
