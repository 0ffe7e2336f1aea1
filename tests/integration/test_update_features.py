"""UpdateFeatures (KIP-584) over TCP against a real ZooKeeper: what a ZooKeeper-mode controller
answers, what it writes to `/feature`, and how ApiVersions reflects it (finalized features and
their epoch = the znode's data version; supported features always empty).

No client library sends UpdateFeatures (only Java's Admin.updateFeatures), so the requests are
wire requests; `/feature` is read and written with kazoo."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient

from tests.integration.helpers import wait_until
from tests.integration.test_controller import controller_client, other_client
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest
from zkbroker.broker.protocol.messages.update_features import (
    FeatureUpdateKey,
    UpdateFeaturesRequest,
)
from zkbroker.broker.toolkit.wire import WireClient

NOT_SUPPORTED = (
    "Could not apply finalized feature update because the provided feature is not supported."
)


def api_versions(client: WireClient) -> Any:
    request = ApiVersionsRequest(client_software_name="tests", client_software_version="1")
    return client.request(3, request)


def results(response: Any) -> dict[str, tuple[int, str | None]]:
    return {r.feature: (r.error_code, r.error_message) for r in response.results}


def update(client: WireClient, version: int, *keys: FeatureUpdateKey, **fields: Any) -> Any:
    return client.request(version, UpdateFeaturesRequest(feature_updates=list(keys), **fields))


def settled(cluster: Cluster, kazoo: KazooClient) -> int:
    """Wait for the controller's failover write of `/feature`; its data version."""
    wait_until(lambda: cluster.engine.controller_id >= 0)
    wait_until(lambda: cluster.engine.image.finalized_features_epoch >= 0)
    return int(kazoo.get("/feature")[1].version)


def finalize(cluster: Cluster, kazoo: KazooClient, doc: dict[str, Any]) -> int:
    """Write `/feature` as another tool would; wait until the brokers' images have it."""
    settled(cluster, kazoo)
    stat = kazoo.set("/feature", json.dumps(doc).encode())
    wait_until(lambda: cluster.engine.image.finalized_features_epoch == stat.version)
    return int(stat.version)


def test_a_broker_other_than_the_controller_answers_not_controller(cluster: Cluster) -> None:
    wait_until(lambda: cluster.engine.controller_id >= 0)
    with other_client(cluster) as client:
        answer = update(client, 0, FeatureUpdateKey(feature="f", max_version_level=1))
    assert (answer.error_code, answer.error_message, answer.results) == (
        ec.NOT_CONTROLLER,
        "This is not the correct controller for this cluster.",
        [],
    )


@pytest.mark.kafka_version("2.8")
def test_refusals_on_2_8_leave_feature_untouched(cluster: Cluster, kazoo: KazooClient) -> None:
    version = settled(cluster, kazoo)
    with controller_client(cluster) as client:
        answer = update(
            client,
            0,
            FeatureUpdateKey(feature="metadata.version", max_version_level=7),
            FeatureUpdateKey(feature="", max_version_level=1),
            FeatureUpdateKey(feature="gone", max_version_level=0, allow_downgrade=True),
            FeatureUpdateKey(feature="low", max_version_level=0),
        )
        assert (answer.error_code, answer.error_message) == (ec.NONE, None)
        assert results(answer) == {
            "metadata.version": (ec.INVALID_REQUEST, NOT_SUPPORTED),
            "": (ec.INVALID_REQUEST, "Feature name can not be empty."),
            "gone": (ec.INVALID_REQUEST, "Can not delete non-existing finalized feature."),
            "low": (
                ec.INVALID_REQUEST,
                "Can not provide maxVersionLevel: 0 less than 1 without setting the "
                "allowDowngrade flag to true in the request.",
            ),
        }
        data, stat = kazoo.get("/feature")
        assert stat.version == version
        assert json.loads(data) == {"version": 1, "status": 1, "features": {}}
        # ApiVersions: nothing supported, nothing finalized, the epoch is the znode's version.
        versions = api_versions(client)
        assert (versions.supported_features, versions.finalized_features) == ([], [])
        assert versions.finalized_features_epoch == version
        advertised = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        assert advertised[57] == (0, 0)


@pytest.mark.kafka_version("2.8")
def test_deleting_a_finalized_feature_rewrites_feature_on_2_8(
    cluster: Cluster, kazoo: KazooClient
) -> None:
    levels = {"min_version_level": 1, "max_version_level": 3}
    before = finalize(
        cluster, kazoo, {"version": 1, "status": 1, "features": {"f": levels, "g": levels}}
    )
    with controller_client(cluster) as client:
        shown = api_versions(client)
        assert shown.finalized_features_epoch == before
        assert {
            (f.name, f.min_version_level, f.max_version_level) for f in shown.finalized_features
        } == {
            ("f", 1, 3),
            ("g", 1, 3),
        }
        answer = update(
            client,
            0,
            FeatureUpdateKey(feature="f", max_version_level=0, allow_downgrade=True),
            FeatureUpdateKey(feature="g", max_version_level=3),
            FeatureUpdateKey(feature="h", max_version_level=2),
        )
        assert results(answer) == {
            "f": (ec.NONE, "NONE"),
            "g": (
                ec.INVALID_REQUEST,
                "Can not upgrade a finalized feature from existing maxVersionLevel:3 to the "
                "same value.",
            ),
            "h": (ec.INVALID_REQUEST, NOT_SUPPORTED),
        }
        data, stat = kazoo.get("/feature")
        assert stat.version == before + 1
        assert json.loads(data) == {"version": 1, "status": 1, "features": {"g": levels}}
        # The response came once this broker's cache had the new epoch.
        shown = api_versions(client)
        assert shown.finalized_features_epoch == before + 1
        assert [f.name for f in shown.finalized_features] == ["g"]
        # Nothing left to change: no write.
        again = update(
            client, 0, FeatureUpdateKey(feature="f", max_version_level=0, allow_downgrade=True)
        )
        assert results(again) == {
            "f": (ec.INVALID_REQUEST, "Can not delete non-existing finalized feature.")
        }
        assert kazoo.get("/feature")[1].version == before + 1


def test_v1_on_3_9_upgrade_types_and_validate_only_ignored(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    cluster = cluster_factory(broker_ids=(0,), kafka_version=(3, 9))
    level = {"max_version_level": 4}
    features = {"a": level, "b": level, "c": level}
    before = finalize(cluster, kazoo, {"version": 2, "status": 1, "features": features})
    with controller_client(cluster) as client:
        advertised = {k.api_key: k.max_version for k in api_versions(client).api_keys}
        assert advertised[57] == 1
        answer = update(
            client,
            1,
            FeatureUpdateKey(feature="a", max_version_level=0, upgrade_type=2),
            FeatureUpdateKey(feature="b", max_version_level=2, upgrade_type=3),
            FeatureUpdateKey(feature="c", max_version_level=1, upgrade_type=9),
            validate_only=True,
        )
        assert results(answer) == {
            "a": (ec.NONE, "NONE"),
            "b": (
                ec.INVALID_REQUEST,
                "Can not downgrade finalized feature from existing versionLevel:4 to provided "
                "versionLevel:2 without setting the downgradeType to SAFE in the request.",
            ),
            "c": (ec.INVALID_REQUEST, "Received unknown upgrade type."),
        }
        # validate_only is not read by a ZooKeeper controller: "a" is gone, in the v2 format.
        data, stat = kazoo.get("/feature")
        assert stat.version == before + 1
        assert json.loads(data) == {"version": 2, "status": 1, "features": {"b": level, "c": level}}
        # v0 on 3.9: allow_downgrade is a SAFE downgrade.
        answer = update(
            client, 0, FeatureUpdateKey(feature="b", max_version_level=0, allow_downgrade=True)
        )
        assert results(answer) == {"b": (ec.NONE, "NONE")}
        shown = api_versions(client)
        assert shown.finalized_features_epoch == before + 2
        assert [(f.name, f.max_version_level) for f in shown.finalized_features] == [("c", 4)]


def test_timeout_zero_answers_feature_update_failed_after_writing(
    cluster: Cluster, kazoo: KazooClient
) -> None:
    levels = {"min_version_level": 1, "max_version_level": 2}
    before = finalize(cluster, kazoo, {"version": 1, "status": 1, "features": {"f": levels}})
    with controller_client(cluster) as client:
        answer = update(
            client,
            0,
            FeatureUpdateKey(feature="f", max_version_level=0, allow_downgrade=True),
            timeout_ms=0,
        )
        # Kafka's waitUntilEpochOrThrow gives up at once unless the cache already has the
        # epoch: a race there as here (this broker's watch may deliver before the check).
        # Either way the node was written.
        assert results(answer)["f"] in (
            (
                ec.FEATURE_UPDATE_FAILED,
                "Unable to update finalized features due to an unexpected server error.",
            ),
            (ec.NONE, "NONE"),
        )
    assert kazoo.get("/feature")[1].version == before + 1


@pytest.mark.parametrize("release", [(2, 6), (2, 7)])
def test_advertised_from_2_7(
    cluster_factory: Callable[..., Cluster], release: tuple[int, int]
) -> None:
    cluster = cluster_factory(broker_ids=(0,), kafka_version=release)
    with controller_client(cluster) as client:
        keys = {k.api_key: k.max_version for k in api_versions(client).api_keys}
    assert keys.get(57) == (0 if release == (2, 7) else None)


@pytest.mark.kafka_version("2.8")
def test_finalized_features_survive_a_controller_failover(
    cluster: Cluster, kazoo: KazooClient
) -> None:
    # Kafka's enableFeatureVersioning keeps an enabled `/feature`'s finalized features; a new
    # controller that rewrote it empty would undo every UpdateFeatures at each failover.
    levels = {"min_version_level": 1, "max_version_level": 3}
    doc = {"version": 1, "status": 1, "features": {"f": levels}}
    version = finalize(cluster, kazoo, doc)
    old_controller = cluster.engine.controller_id
    cluster.stop_broker(old_controller)
    wait_until(lambda: cluster.engine.controller_id not in (-1, old_controller))
    wait_until(lambda: int(kazoo.get("/controller_epoch")[0]) >= 2)
    data, stat = kazoo.get("/feature")
    assert json.loads(data) == doc
    assert stat.version == version
    with controller_client(cluster) as client:
        shown = api_versions(client)
    assert [(f.name, f.max_version_level) for f in shown.finalized_features] == [("f", 3)]
