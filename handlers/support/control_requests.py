"""The epochs a ZooKeeper-mode broker checks on the controller's requests to it
(LeaderAndIsr, StopReplica, UpdateMetadata).

Kafka's broker keeps the last controller epoch it saw (ReplicaManager.controllerEpoch) and
its own broker epoch (the czxid of its `/brokers/ids/<id>` registration, KIP-380). zkbroker's
brokers learn the controller's decisions from ZooKeeper, not from requests, so the last
controller epoch "seen" is `/controller_epoch` (0, Kafka's InitialControllerEpoch, before any
controller ran), and the broker epoch is read from the registration. Both are read from
ZooKeeper per request: these keys come from controllers, not from a client's hot path.

Deliberately not here: the per-API answers (each handler module).
See docs/kafka-behaviour.md §20.
"""

from __future__ import annotations

from dataclasses import dataclass

from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import error_codes
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.zk_layout.nodes import BrokerIdNode, ControllerEpochNode
from zkbroker.zk_layout.release import Release

_log = get_logger(__name__)

# AbstractControlRequest.UNKNOWN_BROKER_EPOCH: a controller older than KIP-380 sends it.
UNKNOWN_BROKER_EPOCH = -1
# KafkaController.InitialControllerEpoch.
INITIAL_CONTROLLER_EPOCH = 0
# LeaderAndIsr.NoEpoch and LeaderAndIsr.EpochDuringDelete (StopReplica v3+ sentinels).
NO_EPOCH = -1
EPOCH_DURING_DELETE = -2


@dataclass(frozen=True)
class BrokerEpochs:
    controller_epoch: int  # the last controller epoch this broker knows
    broker_epoch: int  # this broker's registration czxid; -1 when not registered


async def read_epochs(ctx: RequestContext) -> BrokerEpochs:
    store = ctx.broker.store
    epoch_node = await store.get(ControllerEpochNode.path())
    controller_epoch = (
        ControllerEpochNode.decode(epoch_node[0])
        if epoch_node is not None
        else INITIAL_CONTROLLER_EPOCH
    )
    registration = await store.get(BrokerIdNode.path(ctx.broker.broker_id))
    broker_epoch = int(registration[1].czxid) if registration is not None else -1
    return BrokerEpochs(controller_epoch=controller_epoch, broker_epoch=broker_epoch)


def broker_epoch_error(request_epoch: int, own_epoch: int, release: Release) -> int | None:
    """KafkaApis.isBrokerEpochStale: an epoch below this broker's registration is
    STALE_BROKER_EPOCH; -1 (a pre-KIP-380 controller) is never checked. A newer one is
    accepted from 2.6 (KAFKA-9839: the controller may learn of a re-registration before the
    broker does); 2.2-2.5 threw IllegalStateException, answered UNKNOWN_SERVER_ERROR."""
    if request_epoch == UNKNOWN_BROKER_EPOCH:
        return None
    if request_epoch < own_epoch:
        return error_codes.STALE_BROKER_EPOCH
    if request_epoch > own_epoch and release < (2, 6):
        return error_codes.UNKNOWN_SERVER_ERROR
    return None


async def epoch_error(
    ctx: RequestContext, api: str, controller_epoch: int, broker_epoch: int
) -> int | None:
    """The request's broker epoch, then its controller epoch, against this broker's (logged
    when refused): the error code, or None to go on."""
    epochs = await read_epochs(ctx)
    release = ctx.broker.settings.kafka_version
    code = broker_epoch_error(broker_epoch, epochs.broker_epoch, release)
    if code is None and controller_epoch < epochs.controller_epoch:
        code = error_codes.STALE_CONTROLLER_EPOCH
    if code is not None:
        log_refused(ctx, api, code, controller_epoch, broker_epoch)
    return code


async def refusal(
    ctx: RequestContext, api: str, controller_epoch: int, broker_epoch: int
) -> int | None:
    """What KafkaApis checks first on every control request: CLUSTER_ACTION on the cluster
    (else CLUSTER_AUTHORIZATION_FAILED), then the epochs (`epoch_error`); None to go on."""
    if not auth.authorize_cluster(ctx, auth.CLUSTER_ACTION):  # authorizeClusterOperation
        return error_codes.CLUSTER_AUTHORIZATION_FAILED
    return await epoch_error(ctx, api, controller_epoch, broker_epoch)


def log_refused(
    ctx: RequestContext, api: str, code: int, controller_epoch: int, broker_epoch: int
) -> None:
    """One line per refused control request, as Kafka's state-change log warns of them."""
    _log.info(
        "control_request.refused",
        api=api,
        broker_id=ctx.broker.broker_id,
        error=error_codes.name_of(code),
        request_controller_epoch=controller_epoch,
        request_broker_epoch=broker_epoch,
        peer=ctx.connection.peer,
    )
