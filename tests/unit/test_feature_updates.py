"""KIP-584 UpdateFeatures validation (zkbroker.broker.rules.feature_updates), both generations of
Kafka's KafkaController.validateFeatureUpdate: 2.7-3.2 (ranges, allow_downgrade) and 3.3-3.9
(levels, upgrade types). A ZooKeeper broker supports no feature, so only deletes can succeed."""

from __future__ import annotations

import pytest

from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.update_features import FeatureUpdateKey
from zkbroker.broker.rules.feature_updates import (
    NONE_ERROR,
    SAFE_DOWNGRADE,
    UNKNOWN_UPGRADE_TYPE,
    UNSAFE_DOWNGRADE,
    UPGRADE,
    FeatureError,
    FeatureUpdate,
    FinalizedLevel,
    failed_errors,
    plan,
    updates_from_request,
    upgrade_type_of,
)

OLD = (2, 8)
NEW = (3, 9)
NOT_SUPPORTED = FeatureError(
    ec.INVALID_REQUEST,
    "Could not apply finalized feature update because the provided feature is not supported.",
)


def one(
    release: tuple[int, ...], existing: dict[str, FinalizedLevel], update: FeatureUpdate
) -> tuple[FeatureError, dict[str, FinalizedLevel]]:
    result = plan(release, existing, [update])
    return result.errors[update.feature], result.target


def invalid(message: str) -> FeatureError:
    return FeatureError(ec.INVALID_REQUEST, message)


@pytest.mark.parametrize("release", [OLD, NEW])
def test_upgrades_are_never_supported_by_a_zookeeper_broker(release: tuple[int, ...]) -> None:
    assert one(release, {}, FeatureUpdate("metadata.version", 7)) == (NOT_SUPPORTED, {})
    existing = {"f": FinalizedLevel(2, 1)}
    assert one(release, existing, FeatureUpdate("f", 3)) == (NOT_SUPPORTED, existing)


@pytest.mark.parametrize("release", [OLD, NEW])
def test_empty_name(release: tuple[int, ...]) -> None:
    error, _ = one(release, {}, FeatureUpdate("", 0, allow_downgrade=True))
    assert error == invalid("Feature name can not be empty.")


def test_old_rules_delete_and_refusals() -> None:
    existing = {"f": FinalizedLevel(3, 2)}
    delete = FeatureUpdate("f", 0, allow_downgrade=True)
    assert one(OLD, existing, delete) == (NONE_ERROR, {})
    assert one(OLD, {}, delete)[0] == invalid("Can not delete non-existing finalized feature.")
    assert one(OLD, existing, FeatureUpdate("f", -1))[0] == invalid(
        "Can not provide maxVersionLevel: -1 less than 1 without setting the allowDowngrade "
        "flag to true in the request."
    )
    assert one(OLD, existing, FeatureUpdate("f", 3))[0] == invalid(
        "Can not upgrade a finalized feature from existing maxVersionLevel:3 to the same value."
    )
    assert one(OLD, existing, FeatureUpdate("f", 3, allow_downgrade=True))[0] == invalid(
        "Can not downgrade a finalized feature from existing maxVersionLevel:3 to the same value."
    )
    assert one(OLD, existing, FeatureUpdate("f", 2))[0] == invalid(
        "Can not downgrade finalized feature from existing maxVersionLevel:3 to provided "
        "maxVersionLevel:2 without setting the allowDowngrade flag in the request."
    )
    assert one(OLD, existing, FeatureUpdate("f", 4, allow_downgrade=True))[0] == invalid(
        "When the allowDowngrade flag set in the request, the provided maxVersionLevel:4 can "
        "not be greater than existing maxVersionLevel:3."
    )
    assert one(OLD, existing, FeatureUpdate("f", 1, allow_downgrade=True))[0] == invalid(
        "Can not downgrade finalized feature to maxVersionLevel:1 because it's lower than the "
        "existing minVersionLevel:2."
    )
    # A valid downgrade still needs the feature to be supported.
    assert one(OLD, existing, FeatureUpdate("f", 2, allow_downgrade=True))[0] == NOT_SUPPORTED


def test_new_rules_delete_and_refusals() -> None:
    existing = {"f": FinalizedLevel(3)}
    for kind in (SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        assert one(NEW, existing, FeatureUpdate("f", 0, upgrade_type=kind)) == (NONE_ERROR, {})
    assert one(NEW, {}, FeatureUpdate("f", 0, upgrade_type=SAFE_DOWNGRADE))[0] == invalid(
        "Can not delete non-existing finalized feature."
    )
    assert one(NEW, existing, FeatureUpdate("f", 0))[0] == invalid(
        "Can not provide versionLevel: 0 less than 1 without setting the SAFE downgradeType in "
        "the request."
    )
    assert one(NEW, existing, FeatureUpdate("f", 1, upgrade_type=UNKNOWN_UPGRADE_TYPE))[
        0
    ] == invalid("Received unknown upgrade type.")
    assert one(NEW, existing, FeatureUpdate("f", 3, upgrade_type=SAFE_DOWNGRADE))[0] == invalid(
        "Can not downgrade a finalized feature from existing versionLevel:3 to the same value."
    )
    assert one(NEW, existing, FeatureUpdate("f", 3, upgrade_type=UNSAFE_DOWNGRADE))[0] == invalid(
        "Can not upgrade a finalized feature from existing versionLevel:3 to the same value."
    )
    # An unsafe downgrade is refused by the ZooKeeper controller as "not SAFE".
    assert one(NEW, existing, FeatureUpdate("f", 2, upgrade_type=UNSAFE_DOWNGRADE))[0] == invalid(
        "Can not downgrade finalized feature from existing versionLevel:3 to provided "
        "versionLevel:2 without setting the downgradeType to SAFE in the request."
    )
    assert one(NEW, existing, FeatureUpdate("f", 4, upgrade_type=SAFE_DOWNGRADE))[0] == invalid(
        "When the downgradeType is set to SAFE in the request, the provided versionLevel:4 can "
        "not be greater than existing versionLevel:3."
    )
    # No minimum any more: a downgrade to 1 reaches the support check.
    assert one(NEW, existing, FeatureUpdate("f", 1, upgrade_type=SAFE_DOWNGRADE))[0] == (
        NOT_SUPPORTED
    )


def test_plan_validates_against_existing_and_keeps_the_rest() -> None:
    existing = {"a": FinalizedLevel(1, 1), "b": FinalizedLevel(2, 1)}
    result = plan(
        OLD,
        existing,
        [FeatureUpdate("a", 0, allow_downgrade=True), FeatureUpdate("c", 1)],
    )
    assert result.errors == {"a": NONE_ERROR, "c": NOT_SUPPORTED}
    assert result.target == {"b": FinalizedLevel(2, 1)}
    # Deleting twice in one request: both checked against the features before the request.
    twice = [FeatureUpdate("a", 0, allow_downgrade=True)] * 2
    assert plan(OLD, existing, twice).errors == {"a": NONE_ERROR}


def test_upgrade_type_of() -> None:
    assert upgrade_type_of(0, False, 3) == UPGRADE
    assert upgrade_type_of(0, True, 1) == SAFE_DOWNGRADE
    assert [upgrade_type_of(1, False, t) for t in (0, 1, 2, 3, 4, -1)] == [
        UNKNOWN_UPGRADE_TYPE,
        UPGRADE,
        SAFE_DOWNGRADE,
        UNSAFE_DOWNGRADE,
        UNKNOWN_UPGRADE_TYPE,
        UNKNOWN_UPGRADE_TYPE,
    ]


def test_updates_from_request_per_generation() -> None:
    keys = [
        FeatureUpdateKey(feature="f", max_version_level=0, allow_downgrade=True),
        FeatureUpdateKey(feature="f", max_version_level=5, allow_downgrade=False),
    ]
    # 2.7-3.2 read every entry as it is.
    assert updates_from_request(OLD, 0, keys) == [
        FeatureUpdate("f", 0, allow_downgrade=True),
        FeatureUpdate("f", 5),
    ]
    # 3.3+ look each entry up by name: the first entry of that name, twice.
    assert (
        updates_from_request(NEW, 0, keys)
        == [FeatureUpdate("f", 0, upgrade_type=SAFE_DOWNGRADE)] * 2
    )
    v1 = [FeatureUpdateKey(feature="g", max_version_level=0, upgrade_type=3)]
    assert updates_from_request(NEW, 1, v1) == [FeatureUpdate("g", 0, upgrade_type=3)]


def test_failed_errors_only_replace_successes() -> None:
    errors = {"a": NONE_ERROR, "b": NOT_SUPPORTED}
    assert failed_errors(errors) == {
        "a": FeatureError(
            ec.FEATURE_UPDATE_FAILED,
            "Unable to update finalized features due to an unexpected server error.",
        ),
        "b": NOT_SUPPORTED,
    }
