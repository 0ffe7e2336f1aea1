"""Controller nodes: ``/controller`` (ephemeral, JSON v1/v2), ``/controller_epoch`` (plain decimal
text, not JSON) and ``/feature`` (KIP-584 finalized features, JSON v1/v2).

* ``/controller``: v1 ``{"version":1,"brokerid":1,"timestamp":"<ms>"}`` up to 3.3; from 3.4 v2
  adds ``"kraftControllerEpoch":-1`` (KIP-866; -1 for a ZooKeeper controller). Readers use only
  ``brokerid``; ``timestamp`` is read leniently and ``version`` is not checked, as in Kafka.
* ``/controller_epoch``: ``b"1"``. Missing means "create it as 0"; every election writes epoch+1.
  Its ZooKeeper *data version* is the ``epochZkVersion`` that fences controller writes.
* ``/feature``: v1 entries ``{"min_version_level":a,"max_version_level":b}`` (2.7 to 3.2), v2
  entries ``{"max_version_level":b}`` (3.3+), with ``status`` 1 (enabled) or 0 (disabled, written
  when IBP < 2.7). Decoding applies Kafka's checks (version 1-2, status present and 0/1,
  features present, v1 needs both levels, levels >= 1 and max >= min).

Deliberately not here: the election itself (``ZkStore.elect_controller``) and failover logic.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Final

from zkbroker.zk_layout import codec_json as cj
from zkbroker.zk_layout.errors import ZnodeFormatError
from zkbroker.zk_layout.nodes.base import NodeKind, ZNode, check_version
from zkbroker.zk_layout.release import Release, release_at_least

INITIAL_CONTROLLER_EPOCH: Final = 0
FEATURE_STATUS_DISABLED: Final = 0
FEATURE_STATUS_ENABLED: Final = 1


@dataclass(frozen=True)
class ControllerInfo:
    broker_id: int
    timestamp_ms: int = -1
    kraft_controller_epoch: int = -1

    @classmethod
    def now(cls, broker_id: int) -> ControllerInfo:
        return cls(broker_id, time.time_ns() // 1_000_000)


@dataclass(frozen=True)
class FeatureLevel:
    """Finalized version range of one feature; ``min_version_level`` is None when read from a v2
    node (3.3+ dropped it)."""

    max_version_level: int
    min_version_level: int | None = None


@dataclass(frozen=True)
class FeatureState:
    """Content of ``/feature``. ``version`` is the format version decoded (None in memory)."""

    status: int
    features: dict[str, FeatureLevel] = field(default_factory=dict)
    version: int | None = None

    @property
    def enabled(self) -> bool:
        return self.status == FEATURE_STATUS_ENABLED

    @classmethod
    def for_release(cls, release: Release) -> FeatureState:
        """What a controller of ``release`` writes at failover when no features are finalized:
        enabled from 2.7 on, disabled below (KIP-584)."""
        enabled = release_at_least(release, (2, 7))
        return cls(FEATURE_STATUS_ENABLED if enabled else FEATURE_STATUS_DISABLED)


class ControllerNode(ZNode[ControllerInfo], name="controller"):
    FORMAT_VERSIONS = (1, 2)
    KIND = NodeKind.EPHEMERAL

    @classmethod
    def written_version(cls, release: Release) -> int:
        return 2 if release_at_least(release, (3, 4)) else 1

    @classmethod
    def encode(cls, value: ControllerInfo, release: Release) -> bytes:
        version = cls.written_version(release)
        doc: dict[str, Any] = {
            "version": version,
            "brokerid": value.broker_id,
            "timestamp": str(value.timestamp_ms),
        }
        if version >= 2:
            doc["kraftControllerEpoch"] = value.kraft_controller_epoch
        return cj.dumps(doc)

    @classmethod
    def decode(cls, data: bytes) -> ControllerInfo:
        where = cls.PATTERN
        doc = cj.parse_object(data, where)
        return ControllerInfo(
            broker_id=cj.get_int(doc, "brokerid", where),
            timestamp_ms=cj.lenient_timestamp(doc.get("timestamp")),
            kraft_controller_epoch=cj.get_opt_int(doc, "kraftControllerEpoch", where, -1),
        )


class ControllerEpochNode(ZNode[int], name="controller_epoch"):
    FORMAT_VERSIONS = (0,)

    @classmethod
    def written_version(cls, release: Release) -> int:
        return 0

    @classmethod
    def encode(cls, value: int, release: Release) -> bytes:
        return str(value).encode("ascii")

    @classmethod
    def decode(cls, data: bytes) -> int:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ZnodeFormatError(cls.PATTERN, "not UTF-8 text") from None
        return cj.parse_decimal_int(text, cls.PATTERN, "the controller epoch")


class FeatureNode(ZNode[FeatureState], name="feature"):
    FORMAT_VERSIONS = (1, 2)

    @staticmethod
    def enabled_empty() -> FeatureState:
        """Status enabled, no finalized features: what a 2.7+ controller writes at failover."""
        return FeatureState(FEATURE_STATUS_ENABLED)

    @classmethod
    def written_version(cls, release: Release) -> int:
        """v2 from 3.3 (IBP_3_3_IV0). Releases before 2.7 never create the node themselves."""
        return 2 if release_at_least(release, (3, 3)) else 1

    @classmethod
    def encode(cls, value: FeatureState, release: Release) -> bytes:
        version = cls.written_version(release)
        features: dict[str, dict[str, int]] = {}
        for name, level in value.features.items():
            if version == 1:
                # Kafka 3.3+ writing v1 knows only the max and stores it as both bounds.
                low = (
                    level.max_version_level
                    if level.min_version_level is None
                    else (level.min_version_level)
                )
                features[name] = {
                    "min_version_level": low,
                    "max_version_level": level.max_version_level,
                }
            else:
                features[name] = {"max_version_level": level.max_version_level}
        return cj.dumps({"version": version, "status": value.status, "features": features})

    @classmethod
    def decode(cls, data: bytes) -> FeatureState:
        where = cls.PATTERN
        doc = cj.parse_object(data, where)
        version = check_version(where, cj.get_int(doc, "version", where), cls.FORMAT_VERSIONS)
        if doc.get("status") is None:
            raise ZnodeFormatError(where, "status can not be absent")
        status = cj.get_int(doc, "status", where)
        if status not in (FEATURE_STATUS_DISABLED, FEATURE_STATUS_ENABLED):
            raise ZnodeFormatError(where, f"malformed status {status}")
        if doc.get("features") is None:
            raise ZnodeFormatError(where, "features map can not be absent")
        features: dict[str, FeatureLevel] = {}
        for name, raw in cj.get_object(doc, "features", where).items():
            levels = cj.as_object(raw, where, f"feature {name!r}")
            if "max_version_level" not in levels:
                raise ZnodeFormatError(where, f"max_version_level absent for feature {name!r}")
            high = cj.get_int(levels, "max_version_level", where)
            low: int | None = None
            if version == 1:
                if "min_version_level" not in levels:
                    raise ZnodeFormatError(where, f"min_version_level absent for feature {name!r}")
                low = cj.get_int(levels, "min_version_level", where)
                if low < 1 or high < low:
                    raise ZnodeFormatError(
                        where, f"feature {name!r}: expected 1 <= min <= max, got {low}..{high}"
                    )
            if high < 1:
                raise ZnodeFormatError(where, f"feature {name!r}: max_version_level {high} < 1")
            features[name] = FeatureLevel(high, low)
        return FeatureState(status, features, version)
