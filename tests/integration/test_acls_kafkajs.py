"""kafkajs' admin ACL calls (createAcls, describeAcls with ANY and MATCH, deleteAcls) against
zkbroker with AclAuthorizer (tests/js/acl_checks.js does the work)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from zkbroker import Cluster

JS = Path(__file__).resolve().parents[1] / "js"
AUTHORIZER = ("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer")


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_kafkajs_acls(cluster_factory: Callable[..., Cluster]) -> None:
    if not (JS / "node_modules" / "kafkajs").is_dir():
        pytest.fail("kafkajs is not installed: run `make test` (npm ci --prefix tests/js)")
    cluster = cluster_factory(
        brokers=1,
        kafka_version=(3, 9),
        broker_configs=(AUTHORIZER, ("super.users", "User:ANONYMOUS")),
    )
    done = subprocess.run(
        ["node", str(JS / "acl_checks.js"), cluster.bootstrap_servers],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    seen = json.loads(done.stdout)
    assert seen["created"] is True
    assert seen["described"] == [
        {
            "resourceType": 2,
            "resourceName": "js-",
            "resourcePatternType": 4,
            "acls": [{"principal": "User:js", "host": "*", "operation": 4, "permissionType": 3}],
        }
    ]
    assert seen["matched"] == 1
    [deleted] = seen["deleted"]
    assert deleted["errorCode"] == 0
    assert [a["resourceName"] for a in deleted["matchingAcls"]] == ["js-"]
    assert seen["after"] == []
