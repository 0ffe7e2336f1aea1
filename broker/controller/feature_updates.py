"""UpdateFeatures (KIP-584) as a controller event: validate against `/feature`, rewrite it.

Kafka's KafkaController.processFeatureUpdatesWithActiveController (2.7-3.9): the existing
finalized features are those of an enabled `/feature` (none when it is disabled or absent), the
updates are validated by `zkbroker.broker.rules.feature_updates.plan`, and `/feature` is rewritten
with status enabled, in the release's format (v1 up to 3.2, v2 from 3.3), only when the target
features differ. The write is fenced on `/controller_epoch` like every controller write here
(Kafka's own setData is unconditional); a controller that lost its epoch raises
ControllerMovedError, which the handler answers NOT_CONTROLLER. Any other failure of the write
turns the valid updates into FEATURE_UPDATE_FAILED, as Kafka's catch clause does.

Deliberately not here: waiting for the feature cache to reach the new epoch (the handler waits
on its broker's metadata image, outside the controller queue, so other events keep flowing),
and a ZooKeeper broker exiting when `/feature` finalizes a feature it does not support (Kafka's
FinalizedFeatureChangeListener): zkbroker brokers keep serving.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from zkbroker.broker.log import get_logger
from zkbroker.broker.rules.feature_updates import (
    FeatureError,
    FeatureUpdate,
    FinalizedLevel,
    failed_errors,
    level_only,
    plan,
)
from zkbroker.zk_layout import ControllerMovedError, ZkConnectionError, ZnodeFormatError
from zkbroker.zk_layout.nodes.controller import (
    FEATURE_STATUS_ENABLED,
    FeatureLevel,
    FeatureNode,
    FeatureState,
)

if TYPE_CHECKING:
    from zkbroker.broker.controller.controller import Controller

_log = get_logger(__name__)


@dataclass(frozen=True)
class FeatureUpdateOutcome:
    """Per feature its error; `written_epoch` is the data version `/feature` got (the new
    finalized features epoch), None when nothing was written."""

    errors: dict[str, FeatureError]
    written_epoch: int | None


async def existing_features(controller: Controller) -> dict[str, FinalizedLevel]:
    """The finalized features of `/feature`, as the controller's feature cache holds them."""
    got = await controller.store.get(FeatureNode.path())
    if got is None:
        return {}
    data, _stat = got
    try:
        state = FeatureNode.decode(data)
    except ZnodeFormatError:
        # Kafka's cache refuses such a node and keeps nothing finalized.
        return {}
    if not state.enabled:
        return {}
    drop_min = level_only(controller.release)
    return {
        name: FinalizedLevel(level.max_version_level, None if drop_min else level.min_version_level)
        for name, level in state.features.items()
    }


async def update_features(
    controller: Controller, updates: list[FeatureUpdate]
) -> FeatureUpdateOutcome:
    """One UpdateFeatures request, run as a controller event."""
    existing = await existing_features(controller)
    decided = plan(controller.release, existing, updates)
    if decided.target == existing:
        return FeatureUpdateOutcome(decided.errors, None)
    release = controller.release
    state = FeatureState(
        FEATURE_STATUS_ENABLED,
        {
            name: FeatureLevel(level.max_level, level.min_level)
            for name, level in decided.target.items()
        },
    )
    try:
        data = FeatureNode.encode(state, release)
        stat = await controller.fenced_set(FeatureNode.path(), data, -1)
    except (ControllerMovedError, ZkConnectionError):
        # A lost epoch is NOT_CONTROLLER; ZooKeeper trouble is the registry's retriable answer
        # (Kafka retries its write until connected, or resigns on session expiry).
        raise
    except Exception as e:  # Kafka: `case e: Exception` around the write
        _log.warning("controller.feature_update_failed", reason=repr(e))
        return FeatureUpdateOutcome(failed_errors(decided.errors), None)
    _log.info(
        "controller.features_updated",
        features={n: level.max_level for n, level in decided.target.items()},
        epoch=stat.version,
    )
    return FeatureUpdateOutcome(decided.errors, stat.version)
