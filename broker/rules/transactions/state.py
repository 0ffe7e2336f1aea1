"""The transaction coordinator's state machine: states, transitions, and their checks.

Follows Kafka 3.9's ``TransactionMetadata.scala``: the eight states with their ids and valid
previous states, the ``prepare*`` transitions (epoch bump with KIP-360's rules, producer id
rotation when the epoch is exhausted, epoch fence, adding partitions, prepare/complete commit
or abort, Dead) and ``completeTransitionTo``'s checks (docs/kafka-behaviour.md §17).

A ``prepare_*`` call computes a `TxnTransit` (the record to append to ``__transaction_state``)
and marks it pending; once the append succeeds the caller runs `complete_transition`, and when
it fails `abandon_transition`. While a transition is pending every other request answers
CONCURRENT_TRANSACTIONS (``zkbroker.broker.rules.transactions.decisions``), as Kafka's pendingState
does. A transition Kafka treats as a bug (IllegalStateException) raises `IllegalTransition`.

Deliberately not here: which request leads to which transition and its error codes
(``zkbroker.broker.rules.transactions.decisions``), the stored form
(``zkbroker.broker.transactions.transaction_log_codec``), producer id allocation, the wire, timers.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

from zkbroker.broker.protocol import error_codes as ec

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
INT16_MAX = (1 << 15) - 1

TopicPartition = tuple[str, int]


class TxnState(enum.Enum):
    """Kafka's TransactionState; the value is the id stored in the log value."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def label(self) -> str:
        """The name DescribeTransactions/ListTransactions show ("PrepareCommit")."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def from_id(cls, state_id: int) -> TxnState:
        try:
            return cls(state_id)
        except ValueError:
            raise IllegalTransition(
                f"Unknown transaction state id {state_id} from the transaction status message"
            ) from None


S = TxnState
# TransactionMetadata.scala: each state's validPreviousStates.
VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}
# isExpirationAllowed: the states in which an idle transactional id may be expired.
EXPIRATION_ALLOWED = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})


class IllegalTransition(RuntimeError):
    """A transition Kafka treats as a bug (IllegalStateException): never a client's error."""


def is_epoch_exhausted(epoch: int) -> bool:
    """Short.MaxValue stays free so the coordinator can always fence (isEpochExhausted)."""
    return epoch >= INT16_MAX - 1


@dataclass(frozen=True, slots=True)
class TxnTransit:
    """The target of a transition (Kafka's TxnTransitMetadata): what gets written."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    start_timestamp: int
    last_update_timestamp: int


@dataclass(slots=True)
class TxnMetadata:
    """One transactional id's state (Kafka's TransactionMetadata)."""

    transactional_id: str
    producer_id: int
    timeout_ms: int
    last_update_timestamp: int
    state: TxnState = S.EMPTY
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    partitions: set[TopicPartition] = field(default_factory=set)
    start_timestamp: int = -1
    pending_state: TxnState | None = None
    # A fence whose log write failed: the next fence reuses the bumped epoch (never returned).
    has_failed_epoch_fence: bool = False

    @property
    def pending(self) -> bool:
        return self.pending_state is not None

    @property
    def has_pending_transaction(self) -> bool:
        return self.state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT)

    # ---- prepare: compute the transit, mark it pending (TransactionMetadata.prepare*) -------

    def _prepare(
        self,
        state: TxnState,
        producer_id: int,
        epoch: int,
        last_epoch: int,
        timeout_ms: int,
        partitions: frozenset[TopicPartition],
        start: int,
        now: int,
    ) -> TxnTransit:
        if self.pending_state is not None:
            raise IllegalTransition(
                f"Preparing transaction state transition to {state.label} while it already a "
                f"pending state {self.pending_state.label}"
            )
        if producer_id < 0:
            raise IllegalTransition(f"Illegal new producer id {producer_id}")
        if state is not S.DEAD and epoch < 0:
            raise IllegalTransition(f"Illegal new producer epoch {epoch}")
        if self.state not in VALID_PREVIOUS[state]:
            raise IllegalTransition(
                f"Preparing transaction state transition to {state.label} failed since the "
                f"target state {state.label} is not a valid previous state of the current "
                f"state {self.state.label}"
            )
        self.pending_state = state
        # last_producer_id is the id before this transition, as Kafka's prepareTransitionTo.
        return TxnTransit(
            producer_id,
            self.producer_id,
            epoch,
            last_epoch,
            timeout_ms,
            state,
            partitions,
            start,
            now,
        )

    def prepare_fence_epoch(self) -> TxnTransit:
        if self.producer_epoch == INT16_MAX:
            raise IllegalTransition(
                "Cannot fence producer with epoch equal to Short.MaxValue since this would overflow"
            )
        epoch = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(
            S.PREPARE_EPOCH_FENCE,
            self.producer_id,
            epoch,
            NO_PRODUCER_EPOCH,
            self.timeout_ms,
            frozenset(self.partitions),
            self.start_timestamp,
            self.last_update_timestamp,
        )

    def prepare_increment_epoch(
        self, timeout_ms: int, expected_epoch: int | None, now: int
    ) -> TxnTransit | int:
        """Bump the epoch (KIP-360 rules when the producer sent its epoch); PRODUCER_FENCED
        if its epoch is neither the current nor the previous one."""
        if is_epoch_exhausted(self.producer_epoch):
            raise IllegalTransition(
                f"Cannot allocate any more producer epochs for producerId {self.producer_id}"
            )
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH  # a new producer instance fences the old
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch  # the same producer recovering
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch  # a retried bump
        else:
            return ec.PRODUCER_FENCED
        return self._prepare(
            S.EMPTY, self.producer_id, epoch, last, timeout_ms, frozenset(), -1, now
        )

    def prepare_producer_id_rotation(
        self, new_producer_id: int, timeout_ms: int, now: int, record_last_epoch: bool
    ) -> TxnTransit:
        if self.has_pending_transaction:
            raise IllegalTransition(
                "Cannot rotate producer ids while a transaction is still pending"
            )
        last = self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH
        return self._prepare(S.EMPTY, new_producer_id, 0, last, timeout_ms, frozenset(), -1, now)

    def prepare_add_partitions(self, added: Iterable[TopicPartition], now: int) -> TxnTransit:
        # A transaction starts when its first partition is added.
        start = now if self.state in EXPIRATION_ALLOWED else self.start_timestamp
        return self._prepare(
            S.ONGOING,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            frozenset(self.partitions) | frozenset(added),
            start,
            now,
        )

    def prepare_abort_or_commit(self, state: TxnState, now: int) -> TxnTransit:
        return self._prepare(
            state,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            frozenset(self.partitions),
            self.start_timestamp,
            now,
        )

    def prepare_complete(self, now: int) -> TxnTransit:
        state = S.COMPLETE_COMMIT if self.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
        self.has_failed_epoch_fence = False
        return self._prepare(
            state,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            frozenset(),
            self.start_timestamp,
            now,
        )

    def prepare_dead(self) -> TxnTransit:
        return self._prepare(
            S.DEAD,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            frozenset(),
            self.start_timestamp,
            self.last_update_timestamp,
        )

    # ---- complete: the transit was appended (completeTransitionTo) ---------------------------

    def complete_transition(self, transit: TxnTransit) -> None:
        """The pending transit was appended: check it against the metadata as Kafka's
        completeTransitionTo does for its target state (IllegalTransition when it does not
        fit), then take it on."""
        to = self.pending_state
        if to is None:
            raise IllegalTransition(
                f"TransactionalId {self.transactional_id} completing transaction state "
                "transition while it does not have a pending state"
            )
        if to is not transit.state:
            self._failure(transit)
        if to is S.EMPTY:  # from InitProducerId
            self._complete_init(transit)
        elif to is S.ONGOING:  # from AddPartitionsToTxn / AddOffsetsToTxn
            self._complete_add(transit)
        elif to in (S.PREPARE_ABORT, S.PREPARE_COMMIT):  # from EndTxn
            if (
                not self._same_producer(transit)
                or self.partitions != transit.partitions
                or self.timeout_ms != transit.timeout_ms
                or self.start_timestamp != transit.start_timestamp
            ):
                self._failure(transit)
        elif to in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT):  # markers written
            self._complete_end(transit)
        elif to is S.PREPARE_EPOCH_FENCE:
            # Never completed: EndTxn(abort) replaces it with PrepareAbort before any write.
            self._failure(transit)
        else:  # Dead: an expired id is removed from the cache, never completed
            raise IllegalTransition(
                f"TransactionalId {self.transactional_id} is trying to complete a transition to "
                f"{to.label}. This means that the transactionalId was being expired, and the "
                f"only acceptable completion of this operation is to remove the transaction "
                f"metadata from the cache, not to persist the {to.label} in the log."
            )
        self.last_update_timestamp = transit.last_update_timestamp
        self.pending_state = None
        self.state = to

    def _same_producer(self, transit: TxnTransit) -> bool:
        return (
            transit.producer_epoch == self.producer_epoch
            and transit.producer_id == self.producer_id
        )

    def _complete_init(self, transit: TxnTransit) -> None:
        """To Empty: the epoch stays or is bumped by one (a new producer id starts at 0), with
        no partitions and no start time."""
        bump = transit.producer_epoch == self.producer_epoch + 1 or (
            transit.producer_epoch == 0 and transit.producer_id != self.producer_id
        )
        if (
            (self.producer_epoch != transit.producer_epoch and not bump)
            or transit.partitions
            or transit.start_timestamp != -1
        ):
            self._failure(transit)
        self.timeout_ms = transit.timeout_ms
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.producer_id = transit.producer_id
        self.last_producer_id = transit.last_producer_id

    def _complete_add(self, transit: TxnTransit) -> None:
        """To Ongoing: the same producer, partitions only added, the same timeout."""
        if (
            not self._same_producer(transit)
            or not self.partitions <= transit.partitions
            or self.timeout_ms != transit.timeout_ms
        ):
            self._failure(transit)
        self.start_timestamp = transit.start_timestamp
        self.partitions |= transit.partitions

    def _complete_end(self, transit: TxnTransit) -> None:
        """To CompleteCommit / CompleteAbort: the same producer and timeout, a start time kept;
        the transaction's partitions are done."""
        if (
            not self._same_producer(transit)
            or self.timeout_ms != transit.timeout_ms
            or transit.start_timestamp == -1
        ):
            self._failure(transit)
        self.start_timestamp = transit.start_timestamp
        self.partitions.clear()

    def abandon_transition(self, epoch_fence: bool = False) -> None:
        """The append failed (TransactionStateManager.appendTransactionToLog's error path);
        a failed epoch fence is remembered so the next one does not bump again."""
        self.pending_state = None
        if epoch_fence:
            self.has_failed_epoch_fence = True

    def _failure(self, transit: TxnTransit) -> None:
        raise IllegalTransition(
            f"TransactionalId {self.transactional_id} failed transition to state {transit} "
            "due to unexpected metadata"
        )
