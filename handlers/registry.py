"""The one table of API handlers, and the per-release view of it that ApiVersions advertises.

`HANDLERS` maps each API key to its module's entry (version range, handler, whole-request
error response). The modules are found, not listed: every top-level module of
`zkbroker.handlers` but `registry` and `context` declares its `API_KEY` (docs/design.md, "Add
an API key"); a missing or unknown key, two modules for one key, or a key without a
ZooKeeper-trouble family stops the import. `api_table(release)` narrows it to what that
release's ZooKeeper-mode broker advertises (`zkbroker.broker.protocol.releases`); the server
accepts or refuses a request's version by the same table. Each handler is wrapped so that
ZooKeeper trouble gets its family's retriable error (`zkbroker.handlers.support.zk_trouble`),
and a write over jute.maxbuffer (nothing written) INVALID_REQUEST.

Not here: decoding, the unsupported-version answers (the server), the handlers themselves.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any

from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import API_SPECS, error_codes
from zkbroker.broker.protocol.api_keys import API_KEYS, ApiKey
from zkbroker.broker.protocol.releases import Release, advertised_range
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import zk_trouble
from zkbroker.zk_layout import ZkConnectionError
from zkbroker.zk_layout.store import RequestTooLargeError

_log = get_logger(__name__)

Handle = Callable[[RequestContext, Any], Awaitable[Any]]
ErrorResponse = Callable[[Any, int, int, "str | None"], Any]


@dataclass(frozen=True)
class HandlerEntry:
    api_key: int
    min_version: int
    max_version: int
    handle: Handle
    # (request, version, error_code, error_message) -> response with the error everywhere.
    error_response: ErrorResponse

    @property
    def name(self) -> str:
        return API_SPECS[self.api_key].name

    @property
    def key(self) -> ApiKey:
        return ApiKey(self.api_key)


def _guarded(module: Any) -> Handle:
    """`module.handle`, with ZooKeeper trouble answered as the API family's retriable error
    (`zkbroker.handlers.support.zk_trouble`) instead of reaching the listener as a failure."""
    handle, error_response, api_key = module.handle, module.error_response, module.API_KEY

    async def guarded(ctx: RequestContext, request: Any) -> Any:
        try:
            return await handle(ctx, request)
        except RequestTooLargeError as e:
            # A write over ZooKeeper's jute.maxbuffer, refused before it was sent: nothing was
            # written (CreateTopics/CreatePartitions answer INVALID_PARTITIONS themselves).
            _log.warning("request.too_large_for_zookeeper", api_key=api_key, reason=str(e))
            return error_response(request, ctx.version, error_codes.INVALID_REQUEST, str(e))
        except ZkConnectionError as e:
            code = zk_trouble.error_for(api_key, e)
            _log.warning(
                "request.zookeeper_trouble",
                api_key=api_key,
                family=zk_trouble.family(api_key),
                broker_id=ctx.broker.broker_id,
                correlation_id=ctx.header.correlation_id,
                answered=error_codes.name_of(code),
                reason=str(e),
            )
            return error_response(request, ctx.version, code, None)

    return guarded


def _entry(module: Any) -> HandlerEntry:
    return HandlerEntry(
        api_key=module.API_KEY,
        min_version=module.MIN_VERSION,
        max_version=module.MAX_VERSION,
        handle=_guarded(module),
        error_response=module.error_response,
    )


# Modules of the handlers package that are not API modules (besides `support/`, a package).
NOT_API_MODULES = frozenset({"registry", "context"})


def _api_modules() -> list[Any]:
    """Every API module of the handlers package: each top-level module but the registry and
    the context, imported by name; each declares the `API_KEY` it answers."""
    import zkbroker.handlers as package

    modules = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.ispkg or info.name in NOT_API_MODULES or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        if not isinstance(getattr(module, "API_KEY", None), int):
            raise TypeError(f"{module.__name__}: an API module declares its API_KEY")
        modules.append(module)
    return modules


def _handlers() -> Mapping[int, HandlerEntry]:
    entries: dict[int, HandlerEntry] = {}
    for module in _api_modules():
        key = module.API_KEY
        if key not in API_KEYS:
            raise ValueError(f"{module.__name__}: API key {key} is not in the ApiKey table")
        if key in entries:
            raise ValueError(f"{module.__name__}: API key {key} has two handler modules")
        if ApiKey(key) not in zk_trouble.FAMILIES:
            raise ValueError(f"{module.__name__}: API key {key} has no zk_trouble.FAMILIES entry")
        entries[key] = _entry(module)
    return MappingProxyType(dict(sorted(entries.items())))


HANDLERS: Mapping[int, HandlerEntry] = _handlers()


@dataclass(frozen=True)
class ApiTable:
    """What one emulated release accepts and advertises: api key -> (entry, min, max)."""

    release: Release
    ranges: Mapping[int, tuple[int, int]]

    def entry(self, api_key: int) -> HandlerEntry | None:
        return HANDLERS.get(api_key) if api_key in self.ranges else None

    def supports(self, api_key: int, version: int) -> bool:
        bounds = self.ranges.get(api_key)
        return bounds is not None and bounds[0] <= version <= bounds[1]


@cache
def api_table(release: Release) -> ApiTable:
    ranges: dict[int, tuple[int, int]] = {}
    for key, entry in sorted(HANDLERS.items()):
        released = advertised_range(release, key)
        if released is None:
            continue
        low, high = max(released[0], entry.min_version), min(released[1], entry.max_version)
        if low <= high:
            ranges[key] = (low, high)
    return ApiTable(release=release, ranges=ranges)
