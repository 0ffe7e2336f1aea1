"""KIP-584 UpdateFeatures as a ZooKeeper-mode controller validates it: pure decisions.

`plan` answers, from the finalized features `/feature` holds and the request's updates, what
Kafka's `KafkaController.processFeatureUpdatesWithActiveController` would: one `FeatureError`
per feature name (Kafka's texts) and the features to write back. Two generations of the rules,
2.7-3.2 (version ranges) and 3.3-3.9 (levels, `upgrade_type`); a ZooKeeper-mode broker supports
no feature, so only deleting a finalized one succeeds (docs/kafka-behaviour.md §1.6).

Not here: reading or writing `/feature`, the controller check and the wait for the feature
cache (`zkbroker.broker.controller.feature_updates`, `zkbroker.handlers.update_features`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.messages.update_features import FeatureUpdateKey
from zkbroker.zk_layout.release import Release, release_at_least

UPGRADE: Final = 1
SAFE_DOWNGRADE: Final = 2
UNSAFE_DOWNGRADE: Final = 3
UNKNOWN_UPGRADE_TYPE: Final = 0


@dataclass(frozen=True)
class FinalizedLevel:
    """One finalized feature: its max level, and its min level where the release keeps one
    (2.7-3.2; None from 3.3, whose controller knows only the level)."""

    max_level: int
    min_level: int | None = None


@dataclass(frozen=True)
class FeatureUpdate:
    """One FeatureUpdateKey as the controller of the release reads it."""

    feature: str
    level: int
    # 2.7-3.2: the v0 flag; 3.3+: derived from it (v0) or the wire's upgrade_type (v1).
    allow_downgrade: bool = False
    upgrade_type: int = UPGRADE


@dataclass(frozen=True)
class FeatureError:
    code: int
    message: str | None


@dataclass(frozen=True)
class FeaturePlan:
    """Per feature name, its error (NONE for a valid update); `target` is what `/feature` should
    hold afterwards, equal to the existing features when nothing is to be written."""

    errors: dict[str, FeatureError]
    target: dict[str, FinalizedLevel]


NONE_ERROR: Final = FeatureError(error_codes.NONE, "NONE")


def level_only(release: Release) -> bool:
    """3.3 (IBP_3_3_IV0, FeatureZNode v2) dropped the finalized minimum."""
    return release_at_least(release, (3, 3))


def upgrade_type_of(version: int, allow_downgrade: bool, wire_upgrade_type: int) -> int:
    """UpdateFeaturesRequest.getFeature (3.3+): v0's flag, or v1's code (unknown -> 0)."""
    if version == 0:
        return SAFE_DOWNGRADE if allow_downgrade else UPGRADE
    if wire_upgrade_type in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return wire_upgrade_type
    return UNKNOWN_UPGRADE_TYPE


def updates_from_request(
    release: Release, version: int, keys: Iterable[FeatureUpdateKey]
) -> list[FeatureUpdate]:
    """The request's FeatureUpdateKeys as the release's controller reads them: 2.7-3.2 take
    each entry as it is; 3.3+ resolve each entry by name to the first entry of that name."""
    entries = list(keys)
    if not level_only(release):
        return [
            FeatureUpdate(k.feature, k.max_version_level, allow_downgrade=k.allow_downgrade)
            for k in entries
        ]
    first: dict[str, FeatureUpdateKey] = {}
    for k in entries:
        first.setdefault(k.feature, k)
    updates = []
    for k in entries:
        chosen = first[k.feature]
        kind = upgrade_type_of(version, chosen.allow_downgrade, chosen.upgrade_type)
        updates.append(FeatureUpdate(chosen.feature, chosen.max_version_level, upgrade_type=kind))
    return updates


def _invalid(message: str) -> FeatureError:
    return FeatureError(error_codes.INVALID_REQUEST, message)


_NOT_SUPPORTED: Final = _invalid(
    "Could not apply finalized feature update because the provided feature is not supported."
)
_DELETE_MISSING: Final = _invalid("Can not delete non-existing finalized feature.")


def _new_level(update: FeatureUpdate) -> FeatureError | FinalizedLevel:
    """newFinalizedVersion(Range)OrIncompatibilityError: a ZooKeeper broker's supported
    features are empty, so no feature can be finalized at any level."""
    return _NOT_SUPPORTED


def _validate_range(
    update: FeatureUpdate, existing: FinalizedLevel | None
) -> FeatureError | FinalizedLevel | None:
    """2.7-3.2's validateFeatureUpdate. Returns the error, the new level, or None (delete)."""
    if update.feature == "":
        return _invalid("Feature name can not be empty.")
    if update.level < 1 and update.allow_downgrade:
        return None if existing is not None else _DELETE_MISSING
    if update.level < 1:
        return _invalid(
            f"Can not provide maxVersionLevel: {update.level} less than 1 without setting the "
            "allowDowngrade flag to true in the request."
        )
    if existing is None:
        return _new_level(update)
    verb = "downgrade" if update.allow_downgrade else "upgrade"
    if update.level == existing.max_level:
        return _invalid(
            f"Can not {verb} a finalized feature from existing "
            f"maxVersionLevel:{existing.max_level} to the same value."
        )
    if update.level < existing.max_level and not update.allow_downgrade:
        return _invalid(
            f"Can not downgrade finalized feature from existing "
            f"maxVersionLevel:{existing.max_level} to provided maxVersionLevel:{update.level}"
            " without setting the allowDowngrade flag in the request."
        )
    if update.allow_downgrade and update.level > existing.max_level:
        return _invalid(
            "When the allowDowngrade flag set in the request, the provided "
            f"maxVersionLevel:{update.level} can not be greater than existing "
            f"maxVersionLevel:{existing.max_level}."
        )
    low = existing.min_level if existing.min_level is not None else existing.max_level
    if update.level < low:
        return _invalid(
            f"Can not downgrade finalized feature to maxVersionLevel:{update.level} because "
            f"it's lower than the existing minVersionLevel:{low}."
        )
    return _new_level(update)


def _validate_level(
    update: FeatureUpdate, existing: FinalizedLevel | None
) -> FeatureError | FinalizedLevel | None:
    """3.3-3.9's validateFeatureUpdate (levels only, upgrade types)."""
    if update.feature == "":
        return _invalid("Feature name can not be empty.")
    if update.upgrade_type == UNKNOWN_UPGRADE_TYPE:
        return _invalid("Received unknown upgrade type.")
    if update.level < 1 and update.upgrade_type != UPGRADE:
        return None if existing is not None else _DELETE_MISSING
    if update.level < 1:
        return _invalid(
            f"Can not provide versionLevel: {update.level} less than 1 without setting the "
            "SAFE downgradeType in the request."
        )
    if existing is None:
        return _new_level(update)
    current = existing.max_level
    if update.level == current:
        verb = "downgrade" if update.upgrade_type == SAFE_DOWNGRADE else "upgrade"
        return _invalid(
            f"Can not {verb} a finalized feature from existing versionLevel:{current} "
            "to the same value."
        )
    if update.level < current and update.upgrade_type != SAFE_DOWNGRADE:
        return _invalid(
            f"Can not downgrade finalized feature from existing versionLevel:{current} to "
            f"provided versionLevel:{update.level} without setting the downgradeType to SAFE "
            "in the request."
        )
    if update.upgrade_type != UPGRADE and update.level > current:
        return _invalid(
            "When the downgradeType is set to SAFE in the request, the provided "
            f"versionLevel:{update.level} can not be greater than existing "
            f"versionLevel:{current}."
        )
    return _new_level(update)


def plan(
    release: Release,
    existing: Mapping[str, FinalizedLevel],
    updates: Iterable[FeatureUpdate],
) -> FeaturePlan:
    """Validate every update against `existing` (never against earlier updates of the same
    request, as Kafka) and fold the valid ones into the target features."""
    validate = _validate_level if level_only(release) else _validate_range
    target = dict(existing)
    errors: dict[str, FeatureError] = {}
    for update in updates:
        outcome = validate(update, existing.get(update.feature))
        if isinstance(outcome, FeatureError):
            errors[update.feature] = outcome
            continue
        if outcome is None:
            target.pop(update.feature, None)
        else:
            target[update.feature] = outcome
        errors[update.feature] = NONE_ERROR
    return FeaturePlan(errors, target)


def failed_errors(errors: Mapping[str, FeatureError]) -> dict[str, FeatureError]:
    """The errors once writing `/feature` (or waiting for it) failed: every valid update
    becomes FEATURE_UPDATE_FAILED, the others keep their error (Kafka's catch clause)."""
    fail = FeatureError(error_codes.FEATURE_UPDATE_FAILED, FEATURE_UPDATE_FAILED_MESSAGE)
    return {name: fail if e.code == error_codes.NONE else e for name, e in errors.items()}


# Errors.FEATURE_UPDATE_FAILED's message (Errors.java 2.7-3.9), sent as it is by
# `new ApiError(Errors.FEATURE_UPDATE_FAILED)`.
FEATURE_UPDATE_FAILED_MESSAGE: Final = (
    "Unable to update finalized features due to an unexpected server error."
)
