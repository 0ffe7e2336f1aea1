"""Replaying a ``__transaction_state`` partition into the transactional ids it holds.

Follows Kafka 3.9's ``TransactionStateManager.loadTransactionMetadata`` (docs/kafka-behaviour.md
§17): records are read in offset order, the last value of a transactional id wins, a tombstone
removes it, and a key of an unknown version is skipped with a warning (Kafka: a leftover of an
aborted upgrade). A record that cannot be read (no key, a bad value) ends the load with an error
logged, keeping what was read before it, as Kafka's catch around its loop does. After loading,
ids left in PrepareCommit or PrepareAbort still owe their markers (`owing_markers`): the
coordinator sends them and then completes the transaction, as
``loadTransactionsForTxnTopicPartition`` does.

Deliberately not here: reading the log (the caller passes key/value pairs, e.g. from
``zkbroker.broker.storage``), the coordinator epoch, and sending markers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from zkbroker.broker.log import get_logger
from zkbroker.broker.rules.transactions.state import IllegalTransition, TxnMetadata, TxnState
from zkbroker.broker.transactions import transaction_log_codec as rec

_log = get_logger(__name__)


def replay(entries: Iterable[tuple[bytes | None, bytes | None]]) -> dict[str, TxnMetadata]:
    """The transactional ids a partition's (key, value) records leave, in offset order."""
    loaded: dict[str, TxnMetadata] = {}
    for key, value in entries:
        try:
            if key is None:
                raise rec.TxnRecordFormatError("Transaction state log's key should not be null")
            transactional_id = rec.decode_key(key)
            if transactional_id is None:
                _log.warning(
                    "unknown transaction log key version skipped",
                    version=int.from_bytes(key[:2], "big", signed=True),
                )
                continue
            stored = rec.decode_value(value)
            if stored is None:
                loaded.pop(transactional_id, None)
            else:
                loaded[transactional_id] = rec.metadata_of(transactional_id, stored)
        except (rec.TxnRecordFormatError, IllegalTransition) as e:
            _log.error("error loading transactions from the transaction log", error=str(e))
            break
    return loaded


def owing_markers(loaded: Mapping[str, TxnMetadata]) -> list[TxnMetadata]:
    """Ids whose commit or abort was decided but whose markers may not all be written."""
    return [
        m for m in loaded.values() if m.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
    ]
