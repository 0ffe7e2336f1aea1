"""The transaction coordinator's decisions: each request's checks and error codes, pure code.

Follows Kafka 3.9's ``TransactionCoordinator.scala``: ``handleInitProducerId`` with
``prepareInitProducerIdTransit``, ``handleAddPartitionsToTransaction``,
``handleVerifyPartitionsInTransaction``, ``endTransaction`` before and after its log append (the
TV1 path: what ZooKeeper mode runs), ``abortTimedOutTransactions``, and
``TransactionStateManager``'s timeout, expiry and transaction-timeout checks; KafkaApis's
PRODUCER_FENCED downgrade for old request versions (docs/kafka-behaviour.md §17). KIPs: KIP-98,
KIP-360 (InitProducerId with the producer's id and epoch), KIP-588 (PRODUCER_FENCED, 2.7),
KIP-890 part 1 (verify-only AddPartitionsToTxn, 3.6).

A decision returns an error code (NONE: answered without a write) or the `TxnTransit` to
append, leaving the metadata's transition pending (``zkbroker.broker.rules.transactions.state``).
Error codes are Kafka 3.9's coordinator's; `fenced_error` gives what the emulated release and
the request version answer instead of PRODUCER_FENCED.

Deliberately not here: the transaction log and loading it, producer id allocation
(``next_producer_id`` is passed in), sending markers, the wire, timers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.rules.jvm_collections import java_abs_hash
from zkbroker.broker.rules.transactions.state import (
    EXPIRATION_ALLOWED,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    IllegalTransition,
    TopicPartition,
    TxnMetadata,
    TxnState,
    TxnTransit,
    is_epoch_exhausted,
)
from zkbroker.zk_layout.release import Release, release_at_least

S = TxnState


def partition_for(transactional_id: str, partition_count: int) -> int:
    """TransactionStateManager.partitionFor: ``Utils.abs(id.hashCode) % transaction.state.log
    .num.partitions`` (Integer.MIN_VALUE maps to 0)."""
    return java_abs_hash(transactional_id) % partition_count


def valid_timeout(timeout_ms: int, max_timeout_ms: int) -> bool:
    """TransactionStateManager.validateTransactionTimeoutMs: 0 < timeout <= the maximum."""
    return 0 < timeout_ms <= max_timeout_ms


@dataclass(frozen=True, slots=True)
class InitResult:
    """InitProducerId's outcome: an error, or a transit to append. ``fence`` means the transit
    is an epoch fence of an ongoing transaction: the caller aborts it (`end_txn` with
    ``from_client=False``) and answers CONCURRENT_TRANSACTIONS so the client retries."""

    error: int = ec.NONE
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    metadata: TxnMetadata | None = None  # new metadata the caller must store (first use)
    transit: TxnTransit | None = None
    fence: bool = False


def init_producer_id(
    metadata: TxnMetadata | None,
    transactional_id: str | None,
    timeout_ms: int,
    max_timeout_ms: int,
    expected: tuple[int, int] | None,
    next_producer_id: Callable[[], int],
    now: int,
) -> InitResult:
    """handleInitProducerId; ``expected`` is InitProducerId v3+'s (producer id, epoch), KIP-360."""
    if transactional_id is None:
        # Idempotent producer: always a fresh producer id at epoch 0.
        return InitResult(producer_id=next_producer_id(), producer_epoch=0)
    if transactional_id == "":
        return InitResult(ec.INVALID_REQUEST)
    if not valid_timeout(timeout_ms, max_timeout_ms):
        return InitResult(ec.INVALID_TRANSACTION_TIMEOUT)
    created = None
    if metadata is None:
        created = metadata = TxnMetadata(transactional_id, next_producer_id(), timeout_ms, now)
    got = _init_transit(metadata, timeout_ms, expected, next_producer_id, now)
    if isinstance(got, int):
        return InitResult(got, metadata=created)
    return InitResult(
        producer_id=got.producer_id,
        producer_epoch=got.producer_epoch,
        metadata=created,
        transit=got,
        fence=got.state is S.PREPARE_EPOCH_FENCE,
    )


def _init_transit(
    meta: TxnMetadata,
    timeout_ms: int,
    expected: tuple[int, int] | None,
    next_producer_id: Callable[[], int],
    now: int,
) -> TxnTransit | int:
    """prepareInitProducerIdTransit."""
    if meta.pending:
        return ec.CONCURRENT_TRANSACTIONS
    if expected is not None:
        pid, epoch = expected
        # Accept: a just-created id; the current producer id (its epoch is checked on bump);
        # the previous id with an exhausted epoch (a retried rotation).
        valid = (
            meta.producer_epoch == NO_PRODUCER_EPOCH
            or pid == meta.producer_id
            or (pid == meta.last_producer_id and is_epoch_exhausted(epoch))
        )
        if not valid:
            return ec.PRODUCER_FENCED
    if meta.state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
        return ec.CONCURRENT_TRANSACTIONS
    if meta.state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT, S.EMPTY):
        if is_epoch_exhausted(meta.producer_epoch) and (
            expected is None or expected[1] == meta.producer_epoch
        ):
            return meta.prepare_producer_id_rotation(
                next_producer_id(), timeout_ms, now, record_last_epoch=expected is not None
            )
        return meta.prepare_increment_epoch(
            timeout_ms, None if expected is None else expected[1], now
        )
    if meta.state is S.ONGOING:
        # Fence the running producer: abort its transaction first; the bumped epoch is never
        # returned (the retry bumps again, rotating the id if that exhausts the epochs).
        return meta.prepare_fence_epoch()
    raise IllegalTransition(
        f"Found transactionalId {meta.transactional_id} with state {meta.state.label}. "
        "This is illegal as we should never have transitioned to this state."
    )


def add_partitions(
    meta: TxnMetadata | None,
    transactional_id: str | None,
    producer_id: int,
    producer_epoch: int,
    partitions: Iterable[TopicPartition],
    now: int,
) -> TxnTransit | int:
    """handleAddPartitionsToTransaction (also AddOffsetsToTxn, with the offsets partition)."""
    if not transactional_id:
        return ec.INVALID_REQUEST
    if meta is None or meta.producer_id != producer_id:
        return ec.INVALID_PRODUCER_ID_MAPPING
    if meta.producer_epoch != producer_epoch:
        return ec.PRODUCER_FENCED
    if meta.pending or meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
        return ec.CONCURRENT_TRANSACTIONS
    wanted = frozenset(partitions)
    if meta.state is S.ONGOING and wanted <= meta.partitions:
        return ec.NONE  # already in the transaction: answered without a write
    return meta.prepare_add_partitions(wanted, now)


def verify_partitions(
    meta: TxnMetadata | None,
    transactional_id: str | None,
    producer_id: int,
    producer_epoch: int,
    partitions: Iterable[TopicPartition],
    release: Release,
) -> dict[TopicPartition, int]:
    """handleVerifyPartitionsInTransaction (AddPartitionsToTxn v4+ verify-only, KIP-890 part 1,
    3.6+). A partition not in the transaction answers TRANSACTION_ABORTABLE from 3.8 (KIP-890's
    abortable error), INVALID_TXN_STATE in 3.6-3.7. Pending transitions are not checked: the
    partition leader validates again on append."""
    wanted = list(partitions)
    if not transactional_id:
        return dict.fromkeys(wanted, ec.INVALID_REQUEST)
    error = ec.NONE
    if meta is None or meta.producer_id != producer_id:
        error = ec.INVALID_PRODUCER_ID_MAPPING
    elif meta.producer_epoch != producer_epoch:
        error = ec.PRODUCER_FENCED
    elif meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
        error = ec.CONCURRENT_TRANSACTIONS
    if error != ec.NONE or meta is None:
        return dict.fromkeys(wanted, error)
    missing = (
        ec.TRANSACTION_ABORTABLE if release_at_least(release, (3, 8)) else ec.INVALID_TXN_STATE
    )
    return {tp: ec.NONE if tp in meta.partitions else missing for tp in wanted}


@dataclass(frozen=True, slots=True)
class EndResult:
    """EndTxn before its append: an error code (NONE: already complete, nothing to write), or
    a transit to append; ``epoch_fence`` is passed to `TxnMetadata.abandon_transition` (it is
    False before 2.6, where a failed fence was not remembered and the next one bumped again)."""

    error: int = ec.NONE
    transit: TxnTransit | None = None
    epoch_fence: bool = False


def end_txn(
    meta: TxnMetadata | None,
    transactional_id: str | None,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    now: int,
    from_client: bool = True,
    release: Release = (3, 9),
) -> EndResult:
    """endTransaction's pre-append step (TV1 path, what ZooKeeper mode runs). ``from_client``
    is False when the coordinator itself aborts (a fence or a timeout), with the bumped epoch;
    that abort must follow the fence with no other request in between (no ``await``)."""
    if not transactional_id:
        return EndResult(ec.INVALID_REQUEST)
    if meta is None or meta.producer_id != producer_id:
        return EndResult(ec.INVALID_PRODUCER_ID_MAPPING)
    # 2.6+: a client's epoch must match exactly; the coordinator's own abort may carry the
    # fenced (higher) epoch. Before 2.6 only an older epoch is refused here, and a newer one
    # is refused after the append (`end_txn_appended`). (0.11.0.0 and 0.11.0.1 were strict;
    # the 0.11 line follows its later patches.)
    strict = from_client and release_at_least(release, (2, 6))
    if (strict and producer_epoch != meta.producer_epoch) or producer_epoch < meta.producer_epoch:
        return EndResult(ec.PRODUCER_FENCED)
    if meta.pending and meta.pending_state is not S.PREPARE_EPOCH_FENCE:
        return EndResult(ec.CONCURRENT_TRANSACTIONS)
    state = meta.state
    if state is S.ONGOING:
        target = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
        fence = False
        if target is S.PREPARE_ABORT and meta.pending_state is S.PREPARE_EPOCH_FENCE:
            # The fence becomes the abort: clear it and write the bumped epoch with the abort.
            fence = release_at_least(release, (2, 6))
            meta.pending_state = None
            meta.producer_epoch = producer_epoch
            meta.last_producer_epoch = NO_PRODUCER_EPOCH
        return EndResult(transit=meta.prepare_abort_or_commit(target, now), epoch_fence=fence)
    done, preparing = (
        (S.COMPLETE_COMMIT, S.PREPARE_COMMIT) if commit else (S.COMPLETE_ABORT, S.PREPARE_ABORT)
    )
    if state is done:
        return EndResult(ec.NONE)  # a retry of a completed EndTxn
    if state is preparing:
        return EndResult(ec.CONCURRENT_TRANSACTIONS)
    if state in (S.DEAD, S.PREPARE_EPOCH_FENCE):
        raise IllegalTransition(
            f"Found transactionalId {meta.transactional_id} with state {state.label}. "
            "This is illegal as we should never have transitioned to this state."
        )
    return EndResult(ec.INVALID_TXN_STATE)  # Empty, or the other outcome's state


def end_txn_appended(
    meta: TxnMetadata,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch_at_append: int,
    coordinator_epoch_now: int,
    now: int,
) -> TxnTransit | int:
    """endTransaction after PrepareCommit/PrepareAbort was appended: the transit to
    CompleteCommit/CompleteAbort to write once every marker is written (the client is answered
    NONE as soon as this returns a transit), or an error for the client. ``producer_id`` and
    ``producer_epoch`` are the request's: before 2.6 a client's newer epoch gets here with the
    state already PrepareCommit/PrepareAbort and is fenced, leaving the transaction prepared
    without markers until the coordinator loads the log again (Kafka 0.11.0.2 to 2.5)."""
    if coordinator_epoch_at_append != coordinator_epoch_now:
        return ec.NOT_COORDINATOR  # the partition moved while the append was in flight
    if meta.producer_id != producer_id:
        return ec.INVALID_PRODUCER_ID_MAPPING
    if meta.producer_epoch != producer_epoch:
        return ec.PRODUCER_FENCED
    if meta.pending:
        return ec.CONCURRENT_TRANSACTIONS
    wanted = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
    if meta.state is wanted:
        return meta.prepare_complete(now)
    if meta.state in (S.DEAD, S.PREPARE_EPOCH_FENCE):
        raise IllegalTransition(
            f"Found transactionalId {meta.transactional_id} with state {meta.state.label}. "
            "This is illegal as we should never have transitioned to this state."
        )
    return ec.INVALID_TXN_STATE


def timed_out(metas: Iterable[TxnMetadata], now: int) -> list[TxnMetadata]:
    """TransactionStateManager.timedOutTransactions: ongoing, nothing pending, and started
    more than its timeout ago."""
    return [
        m
        for m in metas
        if not m.pending and m.state is S.ONGOING and m.start_timestamp + m.timeout_ms < now
    ]


def abort_timed_out(
    meta: TxnMetadata, producer_id: int, now: int, release: Release = (3, 9)
) -> EndResult:
    """abortTimedOutTransactions for one id: fence the epoch, then abort with the bumped epoch
    as the coordinator (nothing happens if the id moved on or a transition is pending)."""
    if meta.producer_id != producer_id or meta.pending:
        return EndResult(ec.NONE)
    fence = meta.prepare_fence_epoch()
    return end_txn(
        meta,
        meta.transactional_id,
        fence.producer_id,
        fence.producer_epoch,
        commit=False,
        now=now,
        from_client=False,
        release=release,
    )


def expired(metas: Iterable[TxnMetadata], now: int, expiration_ms: int) -> list[TxnMetadata]:
    """Ids idle longer than transactional.id.expiration.ms in a state that allows it; the caller
    prepares Dead, writes a tombstone, then drops the metadata."""
    return [
        m
        for m in metas
        if not m.pending
        and m.state in EXPIRATION_ALLOWED
        and m.last_update_timestamp <= now - expiration_ms
    ]


# KafkaApis (2.7+, KIP-588): request versions below these cannot read PRODUCER_FENCED and get
# INVALID_PRODUCER_EPOCH instead.
PRODUCER_FENCED_SINCE_VERSION: dict[int, int] = {
    ApiKey.INIT_PRODUCER_ID: 4,
    ApiKey.ADD_PARTITIONS_TO_TXN: 2,
    ApiKey.ADD_OFFSETS_TO_TXN: 2,
    ApiKey.END_TXN: 2,
}


def fenced_error(error: int, release: Release, api_key: int, api_version: int) -> int:
    """The code a fenced request gets: releases before 2.7 have no PRODUCER_FENCED (their
    coordinator answered INVALID_PRODUCER_EPOCH), and 2.7+ keep it from old request versions."""
    if error != ec.PRODUCER_FENCED:
        return error
    if not release_at_least(release, (2, 7)):
        return ec.INVALID_PRODUCER_EPOCH
    if api_version < PRODUCER_FENCED_SINCE_VERSION.get(api_key, 0):
        return ec.INVALID_PRODUCER_EPOCH
    return error


# TransactionStateManager.appendTransactionToLog: the log append's code as the request answers
# it (a timed-out append too is COORDINATOR_NOT_AVAILABLE, for the client to retry).
_APPEND_CONVERTED = {
    ec.UNKNOWN_TOPIC_OR_PARTITION: ec.COORDINATOR_NOT_AVAILABLE,
    ec.NOT_ENOUGH_REPLICAS: ec.COORDINATOR_NOT_AVAILABLE,
    ec.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ec.COORDINATOR_NOT_AVAILABLE,
    ec.REQUEST_TIMED_OUT: ec.COORDINATOR_NOT_AVAILABLE,
    ec.NOT_LEADER_OR_FOLLOWER: ec.NOT_COORDINATOR,
    ec.KAFKA_STORAGE_ERROR: ec.NOT_COORDINATOR,
    ec.MESSAGE_TOO_LARGE: ec.UNKNOWN_SERVER_ERROR,
    ec.RECORD_LIST_TOO_LARGE: ec.UNKNOWN_SERVER_ERROR,
}


def append_error(code: int) -> int:
    """A request's answer when its transaction log append failed or did not reach the ISR."""
    return _APPEND_CONVERTED.get(code, code)
