"""The transaction state machine and the coordinator's decisions, as Kafka 3.9's
TransactionMetadata.scala and TransactionCoordinator.scala make them (docs/kafka-behaviour.md §17).
Each table row names the Kafka rule it follows."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.rules.transactions import decisions as td
from zkbroker.broker.rules.transactions.state import (
    EXPIRATION_ALLOWED,
    INT16_MAX,
    VALID_PREVIOUS,
    IllegalTransition,
    TxnMetadata,
    TxnState,
    TxnTransit,
    is_epoch_exhausted,
)

S = TxnState
MAX_TIMEOUT = 900_000
TP0, TP1 = ("t", 0), ("t", 1)


def ids(start: int = 1000) -> Callable[[], int]:
    counter = itertools.count(start)
    return lambda: next(counter)


def meta(
    state: TxnState = S.EMPTY,
    epoch: int = 0,
    partitions: set[tuple[str, int]] | None = None,
    **kw: int,
) -> TxnMetadata:
    m = TxnMetadata("tid", 7, 60_000, 0, state=state, producer_epoch=epoch, **kw)
    m.partitions = set(partitions or ())
    if state is not S.EMPTY:
        m.start_timestamp = kw.get("start_timestamp", 0)
    return m


def applied(m: TxnMetadata, transit: TxnTransit | int) -> TxnMetadata:
    assert isinstance(transit, TxnTransit), transit
    m.complete_transition(transit)
    return m


# ---- the states ---------------------------------------------------------------------------


def test_state_ids_and_names() -> None:
    # TransactionState.fromId and the names DescribeTransactions shows.
    assert [(s.value, s.label) for s in S] == [
        (0, "Empty"),
        (1, "Ongoing"),
        (2, "PrepareCommit"),
        (3, "PrepareAbort"),
        (4, "CompleteCommit"),
        (5, "CompleteAbort"),
        (6, "Dead"),
        (7, "PrepareEpochFence"),
    ]
    with pytest.raises(IllegalTransition, match="Unknown transaction state id 8"):
        S.from_id(8)


def test_valid_previous_states() -> None:
    # TransactionMetadata.scala: each case object's validPreviousStates.
    E, O, PC, PA, CC, CA, D, F = S  # noqa: E741
    assert {
        E: {E, CC, CA},
        O: {O, E, CC, CA},
        PC: {O},
        PA: {O, F},
        CC: {PC},
        CA: {PA},
        D: {E, CA, CC},
        F: {O},
    } == VALID_PREVIOUS
    assert {E, CC, CA} == EXPIRATION_ALLOWED


def test_epoch_exhaustion_keeps_max_for_fencing() -> None:
    # isEpochExhausted: epoch >= Short.MaxValue - 1.
    assert not is_epoch_exhausted(INT16_MAX - 2)
    assert is_epoch_exhausted(INT16_MAX - 1)


def test_prepare_checks_valid_previous_state() -> None:
    m = meta(S.EMPTY)
    with pytest.raises(IllegalTransition, match="not a valid previous state"):
        m.prepare_abort_or_commit(S.PREPARE_COMMIT, 1)


def test_one_pending_transition_at_a_time() -> None:
    m = meta(S.EMPTY)
    m.prepare_add_partitions({TP0}, 1)
    with pytest.raises(IllegalTransition, match="already a pending state Ongoing"):
        m.prepare_add_partitions({TP1}, 2)


def test_complete_without_pending_is_a_bug() -> None:
    m = meta(S.EMPTY)
    t = m.prepare_add_partitions({TP0}, 1)
    m.complete_transition(t)
    with pytest.raises(IllegalTransition, match="does not have a pending state"):
        m.complete_transition(t)


def test_complete_checks_the_transit() -> None:
    # completeTransitionTo: Ongoing must keep the epoch and only add partitions.
    m = meta(S.EMPTY, epoch=3)
    t = m.prepare_add_partitions({TP0}, 1)
    bad = TxnTransit(t.producer_id, 7, 4, -1, t.timeout_ms, S.ONGOING, t.partitions, 1, 1)
    with pytest.raises(IllegalTransition, match="unexpected metadata"):
        m.complete_transition(bad)


def test_dead_is_never_completed() -> None:
    m = meta(S.COMPLETE_COMMIT)
    t = m.prepare_dead()
    with pytest.raises(IllegalTransition, match="being expired"):
        m.complete_transition(t)


def test_abandoned_transition_clears_pending() -> None:
    m = meta(S.EMPTY)
    m.prepare_add_partitions({TP0}, 1)
    m.abandon_transition()
    assert m.pending_state is None and m.state is S.EMPTY and m.partitions == set()


# ---- InitProducerId (handleInitProducerId / prepareInitProducerIdTransit) --------------------


def init(
    m: TxnMetadata | None,
    expected: tuple[int, int] | None = None,
    timeout: int = 60_000,
    tid: str | None = "tid",
    gen: Callable[[], int] | None = None,
) -> td.InitResult:
    return td.init_producer_id(m, tid, timeout, MAX_TIMEOUT, expected, gen or ids(), 50)


def test_init_without_transactional_id_is_a_fresh_idempotent_producer() -> None:
    assert init(None, tid=None) == td.InitResult(producer_id=1000, producer_epoch=0)


@pytest.mark.parametrize(
    ("tid", "timeout", "code"),
    [
        ("", 1000, ec.INVALID_REQUEST),  # empty transactional id
        ("tid", 0, ec.INVALID_TRANSACTION_TIMEOUT),  # timeout must be > 0
        ("tid", -5, ec.INVALID_TRANSACTION_TIMEOUT),
        ("tid", MAX_TIMEOUT + 1, ec.INVALID_TRANSACTION_TIMEOUT),  # > transaction.max.timeout.ms
    ],
)
def test_init_rejects(tid: str, timeout: int, code: int) -> None:
    assert init(None, tid=tid, timeout=timeout).error == code


def test_init_accepts_the_maximum_timeout() -> None:
    assert init(None, timeout=MAX_TIMEOUT).error == ec.NONE


def test_init_new_id_gets_epoch_0() -> None:
    got = init(None)
    assert (got.error, got.producer_id, got.producer_epoch, got.fence) == (ec.NONE, 1000, 0, False)
    assert got.metadata is not None and got.transit is not None
    m = applied(got.metadata, got.transit)
    assert (m.producer_id, m.producer_epoch, m.last_producer_epoch, m.state) == (
        1000,
        0,
        -1,
        S.EMPTY,
    )
    assert m.last_update_timestamp == 50


@pytest.mark.parametrize("state", [S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT])
def test_init_bumps_the_epoch_and_fences_the_previous_producer(state: TxnState) -> None:
    m = meta(state, epoch=4, last_producer_epoch=3)
    got = init(m)
    assert (got.producer_id, got.producer_epoch, got.metadata) == (7, 5, None)
    applied(m, got.transit or 0)
    # A new producer instance (no expected epoch) clears the last epoch
    # (prepareIncrementProducerEpoch).
    assert (m.producer_epoch, m.last_producer_epoch, m.state, m.partitions) == (
        5,
        -1,
        S.EMPTY,
        set(),
    )
    assert m.timeout_ms == 60_000


def test_init_records_the_new_timeout() -> None:
    m = meta(S.EMPTY)
    applied(m, init(m, timeout=1234).transit or 0)
    assert m.timeout_ms == 1234


# KIP-360: InitProducerId v3+ carries the producer's current id and epoch.
@pytest.mark.parametrize(
    ("expected", "code", "epoch", "last_epoch"),
    [
        ((7, 4), ec.NONE, 5, 4),  # the same producer recovering: bump, remember 4
        ((7, 3), ec.NONE, 4, 3),  # a retry of a bump that succeeded: same epoch, no bump
        ((7, 2), ec.PRODUCER_FENCED, -1, -1),  # neither current nor previous epoch
        ((8, 4), ec.PRODUCER_FENCED, -1, -1),  # another producer id
    ],
)
def test_init_with_expected_producer(
    expected: tuple[int, int], code: int, epoch: int, last_epoch: int
) -> None:
    m = meta(S.EMPTY, epoch=4, last_producer_epoch=3)
    got = init(m, expected=expected)
    assert (got.error, got.producer_epoch) == (code, epoch)
    if code == ec.NONE:
        applied(m, got.transit or 0)
        assert m.last_producer_epoch == last_epoch


def test_init_with_expected_producer_on_a_new_id_is_accepted() -> None:
    # isValidProducerId case 1: a just-created id (epoch -1) takes any expected producer.
    got = init(None, expected=(55, 9))
    assert (got.error, got.producer_id, got.producer_epoch) == (ec.NONE, 1000, 0)


@pytest.mark.parametrize("expected", [None, (7, INT16_MAX - 1)])
def test_init_rotates_the_producer_id_when_the_epoch_is_exhausted(
    expected: tuple[int, int] | None,
) -> None:
    m = meta(S.COMPLETE_COMMIT, epoch=INT16_MAX - 1)
    got = init(m, expected=expected, gen=ids(2000))
    assert (got.producer_id, got.producer_epoch) == (2000, 0)
    applied(m, got.transit or 0)
    assert (m.producer_id, m.last_producer_id) == (2000, 7)
    # prepareProducerIdRotation(recordLastEpoch = expected given)
    assert m.last_producer_epoch == (-1 if expected is None else INT16_MAX - 1)
    # The retried request (its answer was lost) with the old id and exhausted epoch: the same
    # new id and epoch come back, no second rotation.
    if expected is not None:
        again = init(m, expected=expected, gen=ids(3000))
        assert (again.error, again.producer_id, again.producer_epoch) == (ec.NONE, 2000, 0)


def test_init_with_exhausted_epoch_and_another_expected_epoch_is_a_bug() -> None:
    # Kafka falls through to prepareIncrementProducerEpoch, which throws IllegalStateException
    # (the client gets UNKNOWN_SERVER_ERROR): the same here, for the wiring to answer alike.
    m = meta(S.EMPTY, epoch=INT16_MAX - 1, last_producer_epoch=INT16_MAX - 2)
    with pytest.raises(IllegalTransition, match="Cannot allocate any more producer epochs"):
        init(m, expected=(7, 5))


@pytest.mark.parametrize("state", [S.PREPARE_COMMIT, S.PREPARE_ABORT])
def test_init_while_completing_is_concurrent(state: TxnState) -> None:
    assert init(meta(state, partitions={TP0})).error == ec.CONCURRENT_TRANSACTIONS


def test_init_while_a_transition_is_pending_is_concurrent() -> None:
    m = meta(S.EMPTY)
    m.prepare_add_partitions({TP0}, 1)
    assert init(m).error == ec.CONCURRENT_TRANSACTIONS


def test_init_during_a_transaction_fences_and_aborts_it() -> None:
    m = meta(S.ONGOING, epoch=4, partitions={TP0, TP1})
    got = init(m)
    # The fence's epoch (5) is never returned to the client: it is told to retry.
    assert got.fence and got.transit is not None
    assert (got.transit.state, got.transit.producer_epoch) == (S.PREPARE_EPOCH_FENCE, 5)
    assert m.pending_state is S.PREPARE_EPOCH_FENCE
    end = td.end_txn(m, "tid", 7, 5, commit=False, now=60, from_client=False)
    assert end.epoch_fence and end.transit is not None
    assert (end.transit.state, end.transit.producer_epoch) == (S.PREPARE_ABORT, 5)
    applied(m, end.transit)
    assert (m.state, m.producer_epoch, m.last_producer_epoch) == (S.PREPARE_ABORT, 5, -1)
    # The old producer (epoch 4) is now fenced everywhere.
    assert td.add_partitions(m, "tid", 7, 4, {TP0}, 61) == ec.PRODUCER_FENCED
    # The retrying new producer waits for the abort to complete ...
    assert init(m).error == ec.CONCURRENT_TRANSACTIONS
    applied(m, td.end_txn_appended(m, 7, 5, False, 0, 0, 62))
    # ... then gets epoch 6.
    assert init(m).producer_epoch == 6


def test_failed_fence_is_not_bumped_twice() -> None:
    m = meta(S.ONGOING, epoch=4, partitions={TP0})
    fence = init(m).transit
    assert fence is not None
    end = td.end_txn(m, "tid", 7, fence.producer_epoch, False, 60, from_client=False)
    m.abandon_transition(end.epoch_fence)  # the abort's log write failed
    assert m.has_failed_epoch_fence and m.producer_epoch == 5
    again = init(m).transit
    assert again is not None and again.producer_epoch == 5


def test_init_on_dead_is_a_bug() -> None:
    with pytest.raises(IllegalTransition, match="should never have transitioned"):
        init(meta(S.DEAD))


# ---- AddPartitionsToTxn / AddOffsetsToTxn (handleAddPartitionsToTransaction) -----------------


@pytest.mark.parametrize(
    ("m", "pid", "epoch", "tid", "code"),
    [
        (None, 7, 0, "tid", ec.INVALID_PRODUCER_ID_MAPPING),  # unknown transactional id
        (meta(), 7, 0, "", ec.INVALID_REQUEST),
        (meta(), 8, 0, "tid", ec.INVALID_PRODUCER_ID_MAPPING),  # other producer id
        (meta(epoch=3), 7, 2, "tid", ec.PRODUCER_FENCED),  # older epoch
        (meta(epoch=3), 7, 4, "tid", ec.PRODUCER_FENCED),  # any other epoch
        (meta(S.PREPARE_COMMIT, partitions={TP0}), 7, 0, "tid", ec.CONCURRENT_TRANSACTIONS),
        (meta(S.PREPARE_ABORT, partitions={TP0}), 7, 0, "tid", ec.CONCURRENT_TRANSACTIONS),
        (meta(S.ONGOING, partitions={TP0, TP1}), 7, 0, "tid", ec.NONE),  # already added
    ],
)
def test_add_partitions_answers(
    m: TxnMetadata | None, pid: int, epoch: int, tid: str, code: int
) -> None:
    assert td.add_partitions(m, tid, pid, epoch, {TP0}, 9) == code


def test_add_partitions_while_pending_is_concurrent() -> None:
    m = meta()
    m.prepare_add_partitions({TP1}, 1)
    assert td.add_partitions(m, "tid", 7, 0, {TP0}, 9) == ec.CONCURRENT_TRANSACTIONS


@pytest.mark.parametrize("state", [S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT])
def test_first_partition_starts_the_transaction(state: TxnState) -> None:
    m = meta(state, start_timestamp=3)
    applied(m, td.add_partitions(m, "tid", 7, 0, {TP0}, 9))
    assert (m.state, m.partitions, m.start_timestamp, m.last_update_timestamp) == (
        S.ONGOING,
        {TP0},
        9,
        9,
    )


def test_more_partitions_keep_the_start() -> None:
    m = meta(S.ONGOING, partitions={TP0}, start_timestamp=3)
    applied(m, td.add_partitions(m, "tid", 7, 0, {TP1}, 9))
    assert (m.partitions, m.start_timestamp, m.last_update_timestamp) == ({TP0, TP1}, 3, 9)


# ---- verify-only AddPartitionsToTxn (KIP-890 part 1, handleVerifyPartitionsInTransaction) ---


@pytest.mark.parametrize(
    ("release", "missing"),
    [
        ((3, 9), ec.TRANSACTION_ABORTABLE),
        ((3, 8), ec.TRANSACTION_ABORTABLE),
        ((3, 6), ec.INVALID_TXN_STATE),
    ],
)
def test_verify_partitions(release: tuple[int, ...], missing: int) -> None:
    m = meta(S.ONGOING, partitions={TP0})
    assert td.verify_partitions(m, "tid", 7, 0, [TP0, TP1], release) == {TP0: ec.NONE, TP1: missing}


@pytest.mark.parametrize(
    ("m", "pid", "epoch", "tid", "code"),
    [
        (None, 7, 0, "tid", ec.INVALID_PRODUCER_ID_MAPPING),
        (meta(S.ONGOING), 7, 0, "", ec.INVALID_REQUEST),
        (meta(S.ONGOING), 8, 0, "tid", ec.INVALID_PRODUCER_ID_MAPPING),
        (meta(S.ONGOING), 7, 1, "tid", ec.PRODUCER_FENCED),
        (meta(S.PREPARE_COMMIT), 7, 0, "tid", ec.CONCURRENT_TRANSACTIONS),
    ],
)
def test_verify_partitions_errors_apply_to_every_partition(
    m: TxnMetadata | None, pid: int, epoch: int, tid: str, code: int
) -> None:
    assert td.verify_partitions(m, tid, pid, epoch, [TP0, TP1], (3, 9)) == {TP0: code, TP1: code}


# ---- EndTxn (endTransaction, TV1) ----------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "commit", "code", "target"),
    [
        (S.ONGOING, True, ec.NONE, S.PREPARE_COMMIT),
        (S.ONGOING, False, ec.NONE, S.PREPARE_ABORT),
        (S.COMPLETE_COMMIT, True, ec.NONE, None),  # a retried commit: done already
        (S.COMPLETE_COMMIT, False, ec.INVALID_TXN_STATE, None),
        (S.COMPLETE_ABORT, False, ec.NONE, None),
        (S.COMPLETE_ABORT, True, ec.INVALID_TXN_STATE, None),
        (S.PREPARE_COMMIT, True, ec.CONCURRENT_TRANSACTIONS, None),  # markers being written
        (S.PREPARE_COMMIT, False, ec.INVALID_TXN_STATE, None),
        (S.PREPARE_ABORT, False, ec.CONCURRENT_TRANSACTIONS, None),
        (S.PREPARE_ABORT, True, ec.INVALID_TXN_STATE, None),
        (S.EMPTY, True, ec.INVALID_TXN_STATE, None),  # no transaction to end
        (S.EMPTY, False, ec.INVALID_TXN_STATE, None),
    ],
)
def test_end_txn_by_state(
    state: TxnState, commit: bool, code: int, target: TxnState | None
) -> None:
    m = meta(state, partitions={TP0} if state is not S.EMPTY else None)
    got = td.end_txn(m, "tid", 7, 0, commit, 9)
    assert got.error == code
    assert (got.transit.state if got.transit else None) is target


@pytest.mark.parametrize(
    ("m", "pid", "epoch", "tid", "from_client", "code"),
    [
        (None, 7, 0, "tid", True, ec.INVALID_PRODUCER_ID_MAPPING),
        (meta(S.ONGOING), 7, 0, "", True, ec.INVALID_REQUEST),
        (meta(S.ONGOING), 8, 0, "tid", True, ec.INVALID_PRODUCER_ID_MAPPING),
        (meta(S.ONGOING, epoch=2), 7, 1, "tid", True, ec.PRODUCER_FENCED),
        (meta(S.ONGOING, epoch=2), 7, 3, "tid", True, ec.PRODUCER_FENCED),  # strict for clients
        (meta(S.ONGOING, epoch=2), 7, 1, "tid", False, ec.PRODUCER_FENCED),
    ],
)
def test_end_txn_errors(
    m: TxnMetadata | None, pid: int, epoch: int, tid: str, from_client: bool, code: int
) -> None:
    assert td.end_txn(m, tid, pid, epoch, True, 9, from_client).error == code


@pytest.mark.parametrize(
    ("release", "code"),
    [((2, 5), ec.NONE), ((2, 6), ec.PRODUCER_FENCED), ((3, 9), ec.PRODUCER_FENCED)],
)
def test_end_txn_with_a_newer_client_epoch(release: tuple[int, ...], code: int) -> None:
    # Before 2.6 endTransaction fenced only an older epoch; 2.6+ require the current one.
    m = meta(S.ONGOING, epoch=2, partitions={TP0})
    assert td.end_txn(m, "tid", 7, 3, True, 9, release=release).error == code


@pytest.mark.parametrize(("release", "remembered"), [((2, 5), False), ((2, 6), True)])
def test_failed_fence_is_remembered_from_2_6(release: tuple[int, ...], remembered: bool) -> None:
    m = meta(S.ONGOING, epoch=4, partitions={TP0})
    got = td.abort_timed_out(m, 7, 70_000, release=release)
    m.abandon_transition(got.epoch_fence)
    assert m.has_failed_epoch_fence is remembered
    fence = m.prepare_fence_epoch()
    assert fence.producer_epoch == (5 if remembered else 6)


def test_end_txn_while_pending_is_concurrent() -> None:
    m = meta(S.ONGOING, partitions={TP0})
    m.prepare_add_partitions({TP1}, 1)
    assert td.end_txn(m, "tid", 7, 0, True, 9).error == ec.CONCURRENT_TRANSACTIONS


def test_commit_lifecycle_and_its_records() -> None:
    created = init(None)
    m = created.metadata
    assert m is not None
    applied(m, created.transit or 0)
    applied(m, td.add_partitions(m, "tid", 1000, 0, {TP0, TP1}, 60))
    end = td.end_txn(m, "tid", 1000, 0, True, 70)
    applied(m, end.transit or 0)
    assert m.state is S.PREPARE_COMMIT and m.partitions == {TP0, TP1}
    done = td.end_txn_appended(m, 1000, 0, True, 3, 3, 80)
    applied(m, done)
    assert (m.state, m.partitions, m.start_timestamp, m.last_update_timestamp) == (
        S.COMPLETE_COMMIT,
        set(),
        60,
        80,
    )
    # The next transaction starts from CompleteCommit.
    applied(m, td.add_partitions(m, "tid", 1000, 0, {TP1}, 90))
    assert (m.state, m.start_timestamp) == (S.ONGOING, 90)


@pytest.mark.parametrize(
    ("pid", "epoch", "commit", "at_append", "now_epoch", "code"),
    [
        (7, 0, True, 1, 2, ec.NOT_COORDINATOR),  # the coordinator moved during the append
        (8, 0, True, 1, 1, ec.INVALID_PRODUCER_ID_MAPPING),
        (7, 1, True, 1, 1, ec.PRODUCER_FENCED),
        (7, 0, False, 1, 1, ec.INVALID_TXN_STATE),  # PrepareCommit but abort
    ],
)
def test_end_txn_after_append_errors(
    pid: int, epoch: int, commit: bool, at_append: int, now_epoch: int, code: int
) -> None:
    m = meta(S.PREPARE_COMMIT, partitions={TP0})
    assert td.end_txn_appended(m, pid, epoch, commit, at_append, now_epoch, 9) == code


# ---- timeouts and expiry ------------------------------------------------------------------


def test_timed_out_transactions() -> None:
    late = meta(S.ONGOING, partitions={TP0}, start_timestamp=0)
    on_time = meta(S.ONGOING, partitions={TP0}, start_timestamp=1)
    pending = meta(S.ONGOING, partitions={TP0}, start_timestamp=0)
    pending.prepare_add_partitions({TP1}, 5)
    idle = meta(S.EMPTY)
    # start + transaction.timeout.ms < now
    assert td.timed_out([late, on_time, pending, idle], 60_001) == [late]


def test_abort_timed_out_fences_then_aborts() -> None:
    m = meta(S.ONGOING, epoch=4, partitions={TP0})
    got = td.abort_timed_out(m, 7, 70_000)
    assert got.epoch_fence and got.transit is not None
    assert (got.transit.state, got.transit.producer_epoch) == (S.PREPARE_ABORT, 5)
    applied(m, got.transit)
    # The producer's next request with its old epoch is fenced.
    assert td.end_txn(m, "tid", 7, 4, True, 70_001).error == ec.PRODUCER_FENCED


def test_abort_timed_out_skips_a_moved_or_pending_id() -> None:
    m = meta(S.ONGOING, partitions={TP0})
    assert td.abort_timed_out(m, 8, 70_000) == td.EndResult()
    m.prepare_add_partitions({TP1}, 1)
    assert td.abort_timed_out(m, 7, 70_000) == td.EndResult()


def test_expired_ids() -> None:
    old = [meta(s, partitions=None) for s in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT)]
    ongoing = meta(S.ONGOING, partitions={TP0})
    recent = meta(S.EMPTY)
    recent.last_update_timestamp = 2
    # transactional.id.expiration.ms: last update <= now - expiration
    assert td.expired([*old, ongoing, recent], 1001, 1000) == old


# ---- fencing codes per release and request version (KIP-588) ------------------------------


@pytest.mark.parametrize(
    ("release", "api_key", "version", "code"),
    [
        ((2, 6), 22, 3, ec.INVALID_PRODUCER_EPOCH),  # no PRODUCER_FENCED before 2.7
        ((2, 7), 22, 3, ec.INVALID_PRODUCER_EPOCH),  # InitProducerId < v4
        ((2, 7), 22, 4, ec.PRODUCER_FENCED),
        ((3, 9), 24, 1, ec.INVALID_PRODUCER_EPOCH),  # AddPartitionsToTxn < v2
        ((3, 9), 24, 2, ec.PRODUCER_FENCED),
        ((3, 9), 25, 1, ec.INVALID_PRODUCER_EPOCH),  # AddOffsetsToTxn < v2
        ((3, 9), 26, 1, ec.INVALID_PRODUCER_EPOCH),  # EndTxn < v2
        ((3, 9), 26, 3, ec.PRODUCER_FENCED),
    ],
)
def test_fenced_error(release: tuple[int, ...], api_key: int, version: int, code: int) -> None:
    assert td.fenced_error(ec.PRODUCER_FENCED, release, api_key, version) == code


def test_fenced_error_leaves_other_codes() -> None:
    assert td.fenced_error(ec.CONCURRENT_TRANSACTIONS, (2, 0), 26, 0) == ec.CONCURRENT_TRANSACTIONS


# ---- the transaction log partition of an id (TransactionStateManager.partitionFor) ---------


def java_hash(text: str) -> int:
    h = 0
    for ch in text:  # BMP characters: one UTF-16 unit each
        h = (31 * h + ord(ch)) % (1 << 32)
    return h - (1 << 32) if h >= 1 << 31 else h


@pytest.mark.parametrize("tid", ["tid", "my-transactional-id", "orders-app-0", "é-txn"])
def test_partition_for(tid: str) -> None:
    assert td.partition_for(tid, 50) == abs(java_hash(tid)) % 50


def test_partition_for_min_int_hash() -> None:
    # Utils.abs maps Integer.MIN_VALUE (this string's hashCode) to 0.
    assert java_hash("polygenelubricants") == -(1 << 31)
    assert td.partition_for("polygenelubricants", 7) == 0
