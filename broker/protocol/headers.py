"""Request/response header versions and the request-header decoder.

The header version is not in the message specs; Kafka's generator decides it:

* request header v2 if the API version is flexible, else v1; v0 (no client id) only for
  ControlledShutdown v0. "Flexible" is judged from the first flexible version, so a
  request above the highest known version (ApiVersions v9) still gets header v2; an unknown api
  key gets v1, which is what a broker needs to answer UNSUPPORTED_VERSION or close cleanly.
* response header v1 if the API version is flexible, else v0, except ApiVersions (18): its
  response header is always v0, so that any client can read the reply to a probe.

Deliberately not here: body encoding (``codec``) and the request/response entry points that
combine header and body (``request_codec``).
"""

from __future__ import annotations

import functools
import struct

from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.checked import Context
from zkbroker.broker.protocol.codec import Buffer, as_bytes, decode_with
from zkbroker.broker.protocol.messages import API_SPECS
from zkbroker.broker.protocol.messages.headers import REQUEST_HEADER, RequestHeader

_KEY_AND_VERSION = struct.Struct(">hh")


def request_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0  # its non-standard header: no client id (ControlledShutdownRequest.json)
    spec = API_SPECS.get(api_key)
    return 2 if spec is not None and spec.is_flexible(api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.API_VERSIONS:
        return 0
    spec = API_SPECS.get(api_key)
    return 1 if spec is not None and spec.is_flexible(api_version) else 0


def decode_header_bytes(data: bytes) -> tuple[RequestHeader, int]:
    """``decode_request_header`` for a buffer already converted to bytes."""
    if len(data) >= 4:
        api_key, api_version = _KEY_AND_VERSION.unpack_from(data, 0)
        version, ctx = _header_shape(api_key, api_version)
    else:
        version = 1
        ctx = Context("RequestHeader v1", None, None)
    header, offset = decode_with(REQUEST_HEADER, version, data, 0, ctx)
    return header, offset


@functools.lru_cache(maxsize=1024)
def _header_shape(api_key: int, api_version: int) -> tuple[int, Context]:
    """The header version of a request and what its decoding errors say: the same for every
    request of a key and version, so not formatted per request (the cache is bounded: the
    pair comes from the client)."""
    version = request_header_version(api_key, api_version)
    label = f"RequestHeader v{version} (api key {api_key}, version {api_version})"
    return version, Context(label, api_key, api_version)


def decode_request_header(buf: Buffer) -> tuple[RequestHeader, int]:
    """Decode the request header at the start of ``buf`` (a frame without its size prefix).

    Returns the header and the offset where the body starts. Raises only CodecError.
    """
    return decode_header_bytes(as_bytes(buf))
