"""UpdateFeatures (KIP-584; v1's upgrade type and validate_only KIP-778), on `/feature`.

As a ZooKeeper-mode broker answers it (`KafkaApis.handleUpdateFeatures`,
`KafkaController.processFeatureUpdates`, 2.7-3.9): ALTER on the cluster with an authorizer
(else CLUSTER_AUTHORIZATION_FAILED, no results); NOT_CONTROLLER with no results off the active
controller, also when it moves meanwhile; each update validated against `/feature`'s finalized
features (`zkbroker.broker.rules.feature_updates`: a ZooKeeper broker supports no feature, so
upgrades are refused and only deletions apply) and the node rewritten only on a change
(`zkbroker.broker.controller.feature_updates`). After a write it waits up to timeout_ms for the
image to hold the new epoch (`featureCache.waitUntilEpochOrThrow`), else the valid updates are
FEATURE_UPDATE_FAILED though written. v1's validate_only is ignored, as the ZooKeeper controller
does. Results follow the request's order (Kafka's a hash map's).

Not emulated: an inter.broker.protocol.version below 2.7 (zkbroker's IBP is its release's).
"""

from __future__ import annotations

from zkbroker.broker.controller.feature_updates import FeatureUpdateOutcome, update_features
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.update_features import (
    UpdatableFeatureResult,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
)
from zkbroker.broker.rules.api_error import message_for
from zkbroker.broker.rules.feature_updates import failed_errors, updates_from_request
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.zk_trouble import Family
from zkbroker.zk_layout import ControllerMovedError

API_KEY = ApiKey.UPDATE_FEATURES
ZK_TROUBLE_FAMILY = Family.CONTROLLER
README_NOTE = (
    "KIP-584, from 2.7 (v1 from 3.3): the controller validates each update against "
    "`/feature` with Kafka's messages and rewrites the node (v1/v2 per release); a "
    'ZooKeeper broker supports no feature, so upgrades are INVALID_REQUEST "not supported" '
    "and only deleting a finalized feature applies; waits for the new epoch within "
    "`timeout_ms` (else FEATURE_UPDATE_FAILED); ApiVersions shows the finalized features "
    "and epoch; NOT_CONTROLLER elsewhere"
)


def _not_controller() -> UpdateFeaturesResponse:
    # `new ApiError(Errors.NOT_CONTROLLER)`: the default message is sent as it is.
    return UpdateFeaturesResponse(
        error_code=error_codes.NOT_CONTROLLER,
        error_message=error_codes.DEFAULT_MESSAGES[error_codes.NOT_CONTROLLER],
    )


async def handle(ctx: RequestContext, request: UpdateFeaturesRequest) -> UpdateFeaturesResponse:
    if not auth.authorize_cluster(ctx, auth.ALTER):  # KafkaApis: authorize(ALTER, CLUSTER)
        return error_response(request, ctx.version, error_codes.CLUSTER_AUTHORIZATION_FAILED, None)
    controller = ctx.broker.controller
    if controller is None:
        return _not_controller()
    updates = updates_from_request(ctx.release, ctx.version, request.feature_updates)
    try:
        outcome: FeatureUpdateOutcome = await controller.call(
            "UpdateFeatures", lambda c: update_features(c, updates)
        )
    except ControllerMovedError:
        return _not_controller()
    errors = outcome.errors
    epoch = outcome.written_epoch
    if epoch is not None:
        reached = await ctx.image.wait_for(
            lambda image: image.finalized_features_epoch >= epoch,
            max(request.timeout_ms, 0) / 1000,
        )
        if not reached:
            errors = failed_errors(errors)
    return UpdateFeaturesResponse(
        error_code=error_codes.NONE,
        error_message=None,
        results=[
            UpdatableFeatureResult(feature=name, error_code=e.code, error_message=e.message)
            for name, e in errors.items()
        ],
    )


def error_response(
    request: UpdateFeaturesRequest, version: int, code: int, message: str | None
) -> UpdateFeaturesResponse:
    # UpdateFeaturesRequest.getErrorResponse: ApiError.fromThrowable, no results.
    return UpdateFeaturesResponse(error_code=code, error_message=message_for(code, message))
