"""The transaction coordinator's pure parts: its settings from broker configs, which endpoint of
a peer it dials, and the unknown-partition rule of AddPartitionsToTxn."""

from __future__ import annotations

from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.peers.client import endpoint_of
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.transactions.config import TxnConfig, txn_config
from zkbroker.broker.transactions.coordinator import unknown_partitions
from zkbroker.zk_layout import BrokerInfo, Endpoint


def test_defaults_follow_the_release() -> None:
    assert txn_config(lambda _: None, (3, 9)) == TxnConfig()
    # KAFKA-9144 lowered the abort interval from 60 s to 10 s in 2.5.
    assert txn_config(lambda _: None, (2, 4)).abort_interval_ms == 60_000


def test_configured_values_win_and_garbage_keeps_the_default() -> None:
    configured = {
        "transaction.max.timeout.ms": "5000",
        "transaction.state.log.num.partitions": "7",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "oops",
        "transactional.id.expiration.ms": " 60000 ",
    }
    config = txn_config(configured.get, (3, 9))
    assert config.max_timeout_ms == 5000
    assert config.num_partitions == 7
    assert config.abort_interval_ms == 10_000
    assert config.id_expiration_ms == 60_000


def _image(*endpoints: Endpoint) -> MetadataImage:
    image = MetadataImage()
    image.brokers[1] = BrokerInfo.create(1, endpoints)
    return image


def test_endpoint_is_the_inter_broker_listener_only() -> None:
    sasl = Endpoint("SASL", "h1", 9093, "SASL_PLAINTEXT")
    plain = Endpoint("PLAIN", None, 9092, "PLAINTEXT")
    assert endpoint_of(_image(sasl, plain), 1, "SASL") == ("h1", 9093)
    assert endpoint_of(_image(sasl, plain), 1, "PLAIN") == ("127.0.0.1", 9092)
    # Kafka never dials another listener than the inter-broker one (tests/unit/test_peer_client.py).
    assert endpoint_of(_image(sasl, plain), 1, "OTHER") is None
    assert endpoint_of(_image(sasl), 2, "SASL") is None


def test_unknown_partitions_fail_the_whole_transaction() -> None:
    image = MetadataImage()
    assert unknown_partitions(image, []) is None
    assert unknown_partitions(image, [("t", 0)]) == {("t", 0): ec.UNKNOWN_TOPIC_OR_PARTITION}
