"""The generated KIP-896 tables (`zkbroker.broker.protocol.removed_in_4`) against the specs.

Read with this test's own small loader: every zkBroker *Request.json with a
deprecatedVersions, and for REMOVED_IN_4_0 Kafka 4.x's own request specs as kafka-python
ships them (the versions 3.9 defined and 4.x no longer does), for the APIs zkbroker serves.
The spec comparisons need ../shared/kafka-message-specs (tests/shared_data.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.shared_data import kafka_message_specs
from zkbroker.broker.protocol import API_SPECS
from zkbroker.broker.protocol.removed_in_4 import DEPRECATED_IN_3_9, REMOVED_IN_4_0

REPO = Path(__file__).resolve().parents[2]
SPEC_DIR = kafka_message_specs()
needs_specs = pytest.mark.needs_shared


def _load(path: Path) -> dict:
    text = "\n".join(
        line for line in path.read_text().splitlines() if not line.strip().startswith("//")
    )
    return json.loads(text)


def _range(text: str) -> tuple[int, int]:
    low, _, high = text.partition("-")
    return int(low), int(high or low)


@needs_specs
def test_deprecated_ranges_are_the_specs() -> None:
    expected = {}
    for path in SPEC_DIR.glob("*Request.json"):
        spec = _load(path)
        if "zkBroker" in spec.get("listeners", []) and "deprecatedVersions" in spec:
            low, high = _range(spec["deprecatedVersions"])
            expected[spec["apiKey"]] = (spec["name"][: -len("Request")], low, high)
    assert expected == DEPRECATED_IN_3_9
    assert len(expected) == 23


@needs_specs
def test_generated_module_is_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "generate_messages.py"), str(SPEC_DIR), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_removed_in_4_matches_kafka_4_specs() -> None:
    """Every deprecated API with a 4.x spec: removed = deprecated and no longer defined."""
    kafka = pytest.importorskip("kafka")
    resources = Path(kafka.__file__).parent / "protocol" / "schemas" / "resources"
    if not resources.is_dir():
        pytest.skip("this kafka-python ships no 4.x message specs")
    checked = 0
    for key, (name, low, high) in DEPRECATED_IN_3_9.items():
        path = resources / f"{name}Request.json"
        if not path.exists():
            continue
        low4, high4 = _range(_load(path)["validVersions"])
        gone = [v for v in range(low, high + 1) if v < low4 or v > high4]
        if gone:
            assert REMOVED_IN_4_0[key] == (name, gone[0], gone[-1])
        else:
            assert key not in REMOVED_IN_4_0, name
        checked += 1
    assert checked >= 15
    # Among the APIs zkbroker serves, as the specs' README says: Metadata v0-3 stayed.
    assert 3 in DEPRECATED_IN_3_9 and 3 not in REMOVED_IN_4_0
    # Produce v0-2, Fetch v0-3, ListOffsets v0, OffsetForLeaderEpoch v0-1, the log-dir APIs
    # v0, the ACL APIs v0 and the delegation-token APIs v0 went too.
    served = {0, 1, 2, 8, 9, 19, 20, 23, 29, 30, 31, 32, 34, 35, 38, 39, 40, 41}
    assert {k for k in REMOVED_IN_4_0 if k in API_SPECS} == served
