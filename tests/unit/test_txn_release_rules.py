"""Transaction rules that changed between releases (docs/kafka-behaviour.md §17): EndTxn with a
newer producer epoch (TransactionCoordinator.endTransaction, 2.5 against 2.6), and what a
partition leader answers when KIP-890 verification fails (AddPartitionsToTxnManager,
ReplicaManager and maybeConvertOffsetCommitError of 3.6 to 3.9)."""

from __future__ import annotations

import pytest

from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.rules.transactions import decisions as td
from zkbroker.broker.rules.transactions.state import TxnMetadata, TxnState
from zkbroker.broker.rules.transactions.verification import (
    produce_error,
    txn_offset_commit_error,
)
from zkbroker.zk_layout.release import Release

S = TxnState
TP0 = ("t", 0)


def ongoing(epoch: int) -> TxnMetadata:
    m = TxnMetadata("tid", 7, 60_000, 0, state=S.ONGOING, producer_epoch=epoch)
    m.partitions = {TP0}
    return m


@pytest.mark.parametrize("release", [(0, 11, 0), (1, 0), (2, 4), (2, 5)])
def test_before_2_6_a_newer_epoch_is_refused_after_prepare_commit(release: Release) -> None:
    m = ongoing(epoch=2)
    got = td.end_txn(m, "tid", 7, 3, True, 9, release=release)
    assert got.error == ec.NONE and got.transit is not None
    assert got.transit.producer_epoch == 2  # written with the stored epoch
    m.complete_transition(got.transit)
    after = td.end_txn_appended(m, 7, 3, True, 1, 1, 10)
    assert after == ec.PRODUCER_FENCED
    assert td.fenced_error(after, release, ApiKey.END_TXN, 1) == ec.INVALID_PRODUCER_EPOCH
    # Left prepared: the same producer's retry is concurrent, nothing completes it.
    assert (m.state, m.pending) == (S.PREPARE_COMMIT, False)
    assert td.end_txn(m, "tid", 7, 2, True, 11, release=release).error == (
        ec.CONCURRENT_TRANSACTIONS
    )


@pytest.mark.parametrize(
    ("release", "version", "code"),
    [
        ((2, 6), 1, ec.INVALID_PRODUCER_EPOCH),
        ((2, 7), 1, ec.INVALID_PRODUCER_EPOCH),
        ((2, 7), 2, ec.PRODUCER_FENCED),
        ((3, 9), 4, ec.PRODUCER_FENCED),
    ],
)
def test_from_2_6_a_newer_epoch_is_refused_before_any_write(
    release: Release, version: int, code: int
) -> None:
    m = ongoing(epoch=2)
    got = td.end_txn(m, "tid", 7, 3, True, 9, release=release)
    assert got.transit is None and not m.pending and m.state is S.ONGOING
    assert td.fenced_error(got.error, release, ApiKey.END_TXN, version) == code


@pytest.mark.parametrize(
    ("coordinator", "release", "version", "answer"),
    [
        # AddPartitionsToTxnManager: an unknown id's INVALID_PRODUCER_ID_MAPPING unchanged.
        (ec.INVALID_PRODUCER_ID_MAPPING, (3, 6), 9, ec.INVALID_PRODUCER_ID_MAPPING),
        (ec.INVALID_PRODUCER_ID_MAPPING, (3, 9), 11, ec.INVALID_PRODUCER_ID_MAPPING),
        (ec.PRODUCER_FENCED, (3, 6), 9, ec.INVALID_PRODUCER_EPOCH),
        (ec.INVALID_TXN_STATE, (3, 7), 10, ec.INVALID_TXN_STATE),
        (ec.CLUSTER_AUTHORIZATION_FAILED, (3, 9), 11, ec.INVALID_TXN_STATE),
        (ec.INVALID_REQUEST, (3, 9), 11, ec.INVALID_REQUEST),
        # TRANSACTION_ABORTABLE reaches Produce v11+ only (3.8's genericError).
        (ec.TRANSACTION_ABORTABLE, (3, 8), 10, ec.INVALID_TXN_STATE),
        (ec.TRANSACTION_ABORTABLE, (3, 8), 11, ec.TRANSACTION_ABORTABLE),
        (ec.TRANSACTION_ABORTABLE, (3, 9), 11, ec.TRANSACTION_ABORTABLE),
        # ReplicaManager: transient codes become NOT_ENOUGH_REPLICAS.
        (ec.CONCURRENT_TRANSACTIONS, (3, 6), 9, ec.NOT_ENOUGH_REPLICAS),
        (ec.COORDINATOR_NOT_AVAILABLE, (3, 9), 11, ec.NOT_ENOUGH_REPLICAS),
        (ec.NOT_COORDINATOR, (3, 8), 11, ec.NOT_ENOUGH_REPLICAS),
        (ec.COORDINATOR_LOAD_IN_PROGRESS, (3, 7), 10, ec.NOT_ENOUGH_REPLICAS),
        # NETWORK_EXCEPTION joined them in 3.7.1.
        (ec.NETWORK_EXCEPTION, (3, 6), 9, ec.NETWORK_EXCEPTION),
        (ec.NETWORK_EXCEPTION, (3, 7), 10, ec.NOT_ENOUGH_REPLICAS),
        (ec.NETWORK_EXCEPTION, (3, 9), 11, ec.NOT_ENOUGH_REPLICAS),
    ],
)
def test_produce_verification_errors(
    coordinator: int, release: Release, version: int, answer: int
) -> None:
    assert produce_error(coordinator, release, version) == answer


@pytest.mark.parametrize(
    ("coordinator", "release", "version", "answer"),
    [
        (ec.INVALID_PRODUCER_ID_MAPPING, (3, 7), 3, ec.INVALID_PRODUCER_ID_MAPPING),
        (ec.INVALID_PRODUCER_ID_MAPPING, (3, 9), 4, ec.INVALID_PRODUCER_ID_MAPPING),
        (ec.PRODUCER_FENCED, (3, 9), 4, ec.INVALID_PRODUCER_EPOCH),
        (ec.INVALID_TXN_STATE, (3, 7), 3, ec.INVALID_TXN_STATE),
        (ec.TRANSACTION_ABORTABLE, (3, 8), 3, ec.INVALID_TXN_STATE),
        (ec.TRANSACTION_ABORTABLE, (3, 8), 4, ec.TRANSACTION_ABORTABLE),
        # 3.7 mapped the transient codes to NOT_ENOUGH_REPLICAS, then COORDINATOR_NOT_AVAILABLE.
        (ec.CONCURRENT_TRANSACTIONS, (3, 7), 3, ec.COORDINATOR_NOT_AVAILABLE),
        (ec.NOT_COORDINATOR, (3, 7), 3, ec.COORDINATOR_NOT_AVAILABLE),
        # 3.8+ pass them through.
        (ec.CONCURRENT_TRANSACTIONS, (3, 8), 4, ec.CONCURRENT_TRANSACTIONS),
        (ec.NOT_COORDINATOR, (3, 9), 3, ec.NOT_COORDINATOR),
        (ec.COORDINATOR_NOT_AVAILABLE, (3, 9), 4, ec.COORDINATOR_NOT_AVAILABLE),
        (ec.NETWORK_EXCEPTION, (3, 7), 3, ec.COORDINATOR_LOAD_IN_PROGRESS),
        (ec.NETWORK_EXCEPTION, (3, 9), 4, ec.COORDINATOR_LOAD_IN_PROGRESS),
        (ec.UNKNOWN_TOPIC_OR_PARTITION, (3, 9), 4, ec.COORDINATOR_NOT_AVAILABLE),
    ],
)
def test_txn_offset_commit_verification_errors(
    coordinator: int, release: Release, version: int, answer: int
) -> None:
    assert txn_offset_commit_error(coordinator, release, version) == answer
