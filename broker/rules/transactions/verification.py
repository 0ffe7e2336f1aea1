"""KIP-890 part 1 (3.6+): what a partition leader answers when the transaction coordinator's
verification of a transactional write fails, per release and request version.

Follows ``AddPartitionsToTxnManager`` (the coordinator's per-partition codes as the leader
receives them), ``ReplicaManager`` (Produce's translation of the transient ones) and
``GroupMetadataManager.maybeConvertOffsetCommitError`` (TxnOffsetCommit), of 3.6.2, 3.7.1,
3.8.0 and 3.9.0 (docs/kafka-behaviour.md §17).

Deliberately not here: deciding whether a write needs verifying, asking the coordinator, and
the coordinator's own answers (``zkbroker.broker.rules.transactions.decisions``).
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.rules.groups.offsets import convert_offset_commit_error
from zkbroker.zk_layout.release import Release, release_at_least

#: Produce and the group coordinator verify from 3.6 (Produce) and 3.7 (TxnOffsetCommit).
PRODUCE_VERIFICATION_RELEASE: Release = (3, 6)
TXN_OFFSET_COMMIT_VERIFICATION_RELEASE: Release = (3, 7)

# The request versions that may read TRANSACTION_ABORTABLE (3.8+'s genericError operation).
_ABORTABLE_PRODUCE_VERSION = 11
_ABORTABLE_TXN_OFFSET_COMMIT_VERSION = 4

# The coordinator's transient answers; the leader turns them into NOT_ENOUGH_REPLICAS, which
# every producer retries without looking the coordinator up again.
_TRANSIENT = frozenset(
    {
        ec.CONCURRENT_TRANSACTIONS,
        ec.COORDINATOR_LOAD_IN_PROGRESS,
        ec.COORDINATOR_NOT_AVAILABLE,
        ec.NOT_COORDINATOR,
    }
)

def received(code: int, release: Release, abortable_readable: bool) -> int:
    """The code ``AddPartitionsToTxnManager`` hands the leader for one partition: the client
    expects INVALID_PRODUCER_EPOCH, not PRODUCER_FENCED; a whole-request CLUSTER_AUTHORIZATION
    _FAILED (the leader may not verify) is INVALID_TXN_STATE; from 3.8 TRANSACTION_ABORTABLE
    reaches only requests new enough to read it, the others get INVALID_TXN_STATE; every
    other code is passed through unchanged (INVALID_PRODUCER_ID_MAPPING of an unknown id too)."""
    if code == ec.PRODUCER_FENCED:
        return ec.INVALID_PRODUCER_EPOCH
    if code == ec.CLUSTER_AUTHORIZATION_FAILED:
        return ec.INVALID_TXN_STATE
    if code == ec.TRANSACTION_ABORTABLE and not (
        abortable_readable and release_at_least(release, (3, 8))
    ):
        return ec.INVALID_TXN_STATE
    return code


def produce_error(code: int, release: Release, version: int) -> int:
    """Produce's answer for a partition whose verification failed (``ReplicaManager``): the
    transient codes become NOT_ENOUGH_REPLICAS, NETWORK_EXCEPTION among them from 3.7 (as of
    3.7.1); the rest as received."""
    code = received(code, release, version >= _ABORTABLE_PRODUCE_VERSION)
    if code in _TRANSIENT or (code == ec.NETWORK_EXCEPTION and release_at_least(release, (3, 7))):
        return ec.NOT_ENOUGH_REPLICAS
    return code


def txn_offset_commit_error(code: int, release: Release, version: int) -> int:
    """TxnOffsetCommit's answer when verifying the group's offsets partition failed (3.7+;
    3.6's ZooKeeper-mode group coordinator did not verify). In 3.7 the verification itself
    turned the transient codes into NOT_ENOUGH_REPLICAS (then COORDINATOR_NOT_AVAILABLE);
    from 3.8 they reach the client as the coordinator answered them."""
    code = received(code, release, version >= _ABORTABLE_TXN_OFFSET_COMMIT_VERSION)
    if code in _TRANSIENT and not release_at_least(release, (3, 8)):
        code = ec.NOT_ENOUGH_REPLICAS
    return convert_offset_commit_error(code)
