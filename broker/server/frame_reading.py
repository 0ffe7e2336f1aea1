"""Reading a size-prefixed Kafka frame's size from a stream, for the listener and the SASL
authenticator (the checks themselves are `zkbroker.broker.protocol.framing.frame_size`)."""

from __future__ import annotations

import asyncio

from zkbroker.broker.protocol.framing import SIZE_BYTES, frame_size


async def read_frame_size(reader: asyncio.StreamReader, max_bytes: int) -> int:
    """The next frame's size: IncompleteReadError at the stream's end, FrameRefused if bad."""
    return frame_size(await reader.readexactly(SIZE_BYTES), max_bytes)
