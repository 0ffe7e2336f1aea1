"""kafkajs (Node.js) over SASL_SSL with SCRAM-SHA-512 and PLAIN against zkbroker, and its
error for a wrong password (tests/js/security_checks.js does the work)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from zkbroker import Cluster
from zkbroker.broker.security.cluster_security import Security

JS = Path(__file__).resolve().parents[1] / "js"


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_kafkajs_sasl_ssl(cluster_factory: Callable[..., Cluster]) -> None:
    if not (JS / "node_modules" / "kafkajs").is_dir():
        pytest.fail("kafkajs is not installed: run `make test` (npm ci --prefix tests/js)")
    security = Security(
        protocol="SASL_SSL", mechanisms=("SCRAM-SHA-512", "PLAIN"), users={"js": "js-secret"}
    )
    cluster = cluster_factory(brokers=1, kafka_version=(3, 9), security=security)
    prepared = cluster.security
    assert prepared is not None and prepared.ca_file is not None
    done = subprocess.run(
        ["node", str(JS / "security_checks.js"), cluster.bootstrap_servers, prepared.ca_file,
         "js", "js-secret"],
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    seen = json.loads(done.stdout)
    assert seen["scram-sha-512"] == ["js-scram-sha-512"]
    assert seen["plain"] == ["js-plain"]
    name, message = seen["wrong"]
    assert name == "KafkaJSSASLAuthenticationError"
    assert message.endswith(
        "Authentication failed during authentication due to invalid credentials with SASL "
        "mechanism SCRAM-SHA-512"
    )
