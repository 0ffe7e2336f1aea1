"""The one table of API handlers, the per-release view of it that ApiVersions advertises, and
README.md's API table rendered from both.

`HANDLERS` maps each API key to its module's entry. The modules are found, not listed: every
top-level module of `zkbroker.handlers` but `registry` and `context` is an API module
(docs/design.md, "Add an API key") and declares `API_KEY` (an `ApiKey`), `ZK_TROUBLE_FAMILY` (a
`zk_trouble.Family`), `README_NOTE` (its row's notes in README.md), `handle` and `error_response`;
a missing declaration, two modules for one key, or a module writing its own version range stops the
import. Versions are the release history's (`zkbroker.broker.protocol.releases`, Kafka's behaviour
§9): `api_table(release)` is what that release's ZooKeeper-mode broker advertises, narrowed only
where a module declares `MAX_VERSION_CAP` (it serves fewer versions than Kafka did); the server
accepts or refuses a request's version by the same table. Each handler is wrapped so that ZooKeeper
trouble gets its family's retriable error (`zkbroker.handlers.support.zk_trouble`), and a write
over jute.maxbuffer (nothing written) INVALID_REQUEST.

Not here: decoding, the unsupported-version answers (the server), the handlers themselves,
rewriting README.md (scripts/readme_api_table.py).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType, ModuleType
from typing import Any

from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import API_SPECS, error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.releases import DEFAULT_RELEASE, advertised_range
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support.zk_trouble import Family, error_for
from zkbroker.zk_layout import ZkConnectionError
from zkbroker.zk_layout.release import Release
from zkbroker.zk_layout.store import RequestTooLargeError

_log = get_logger(__name__)

Handle = Callable[[RequestContext, Any], Awaitable[Any]]
ErrorResponse = Callable[[Any, int, int, "str | None"], Any]


@dataclass(frozen=True)
class HandlerEntry:
    api_key: ApiKey
    handle: Handle
    # (request, version, error_code, error_message) -> response with the error everywhere.
    error_response: ErrorResponse
    zk_trouble_family: Family
    readme_note: str
    # The highest version the handler serves, where that is below Kafka's (None: all of them).
    max_version_cap: int | None = None

    @property
    def name(self) -> str:
        return API_SPECS[self.api_key].name

    def range_in(self, release: Release) -> tuple[int, int] | None:
        """`(min, max)` that `release` advertises for this key, None when it advertises none:
        the release history's range, narrowed by the cap."""
        released = advertised_range(release, self.api_key)
        if released is None:
            return None
        low, high = released
        if self.max_version_cap is not None:
            high = min(high, self.max_version_cap)
        return (low, high) if low <= high else None


def _guarded(module: ModuleType) -> Handle:
    """`module.handle`, with ZooKeeper trouble answered as the API family's retriable error
    (`zkbroker.handlers.support.zk_trouble`) instead of reaching the listener as a failure."""
    handle, error_response = module.handle, module.error_response
    family: Family = module.ZK_TROUBLE_FAMILY
    api_key = int(module.API_KEY)  # logged as the number, as the request's header carries it

    async def guarded(ctx: RequestContext, request: Any) -> Any:
        try:
            return await handle(ctx, request)
        except RequestTooLargeError as e:
            # A write over ZooKeeper's jute.maxbuffer, refused before it was sent: nothing was
            # written (CreateTopics/CreatePartitions answer INVALID_PARTITIONS themselves).
            _log.warning("request.too_large_for_zookeeper", api_key=api_key, reason=str(e))
            return error_response(request, ctx.version, error_codes.INVALID_REQUEST, str(e))
        except ZkConnectionError as e:
            code = error_for(family, e)
            _log.warning(
                "request.zookeeper_trouble",
                api_key=api_key,
                family=family.value,
                broker_id=ctx.broker.broker_id,
                correlation_id=ctx.header.correlation_id,
                answered=error_codes.name_of(code),
                reason=str(e),
            )
            return error_response(request, ctx.version, code, None)

    return guarded


# What an API module declares, and the type of each; `MAX_VERSION_CAP` is optional.
_DECLARED: Mapping[str, type] = MappingProxyType(
    {"API_KEY": ApiKey, "ZK_TROUBLE_FAMILY": Family, "README_NOTE": str}
)
# Names that would be a second source of the version range beside the release history.
_NOT_DECLARED = ("MIN_VERSION", "MAX_VERSION")


def entry_of(module: ModuleType) -> HandlerEntry:
    """The registry's entry for an API module; a TypeError for a missing or mistyped
    declaration, or for a version range written in the module."""
    for name, kind in _DECLARED.items():
        if not isinstance(getattr(module, name, None), kind):
            raise TypeError(f"{module.__name__}: an API module declares {name} ({kind.__name__})")
    for name in _NOT_DECLARED:
        if hasattr(module, name):
            raise TypeError(
                f"{module.__name__}: {name} is the release history's "
                "(zkbroker.broker.protocol.releases); declare MAX_VERSION_CAP to serve less"
            )
    cap = getattr(module, "MAX_VERSION_CAP", None)
    if cap is not None and not isinstance(cap, int):
        raise TypeError(f"{module.__name__}: MAX_VERSION_CAP is a version number")
    return HandlerEntry(
        api_key=module.API_KEY,
        handle=_guarded(module),
        error_response=module.error_response,
        zk_trouble_family=module.ZK_TROUBLE_FAMILY,
        readme_note=module.README_NOTE,
        max_version_cap=cap,
    )


# Modules of the handlers package that are not API modules (besides `support/`, a package).
NOT_API_MODULES = frozenset({"registry", "context"})


def _api_modules() -> list[ModuleType]:
    """Every API module of the handlers package: each top-level module but the registry and
    the context, imported by name."""
    import zkbroker.handlers as package

    modules = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.ispkg or info.name in NOT_API_MODULES or info.name.startswith("_"):
            continue
        modules.append(importlib.import_module(f"{package.__name__}.{info.name}"))
    return modules


def _handlers() -> Mapping[ApiKey, HandlerEntry]:
    entries: dict[ApiKey, HandlerEntry] = {}
    for module in _api_modules():
        entry = entry_of(module)
        if entry.api_key in entries:
            raise ValueError(f"{module.__name__}: {entry.api_key.name} has two handler modules")
        entries[entry.api_key] = entry
    return MappingProxyType(dict(sorted(entries.items())))


HANDLERS: Mapping[ApiKey, HandlerEntry] = _handlers()


@dataclass(frozen=True)
class ApiTable:
    """What one emulated release accepts and advertises: api key -> (entry, min, max)."""

    release: Release
    ranges: Mapping[int, tuple[int, int]]

    def entry(self, api_key: int) -> HandlerEntry | None:
        return HANDLERS.get(ApiKey(api_key)) if api_key in self.ranges else None

    def supports(self, api_key: int, version: int) -> bool:
        bounds = self.ranges.get(api_key)
        return bounds is not None and bounds[0] <= version <= bounds[1]


@cache
def api_table(release: Release) -> ApiTable:
    ranges: dict[int, tuple[int, int]] = {}
    for key, entry in HANDLERS.items():
        bounds = entry.range_in(release)
        if bounds is not None:
            ranges[int(key)] = bounds
    return ApiTable(release=release, ranges=ranges)


README_TABLE_HEADER = ("| API | key | versions | notes |", "|---|---:|---|---|")


def readme_api_table(release: Release = DEFAULT_RELEASE) -> str:
    """README.md's API table ("What it emulates"): one row per key `release` advertises, in key
    order, with its versions and its module's README_NOTE."""
    lines = list(README_TABLE_HEADER)
    for key, (low, high) in sorted(api_table(release).ranges.items()):
        versions = f"{low}" if low == high else f"{low}\N{EN DASH}{high}"
        entry = HANDLERS[ApiKey(key)]
        lines.append(f"| {entry.name} | {key} | {versions} | {entry.readme_note} |")
    return "\n".join(lines) + "\n"
