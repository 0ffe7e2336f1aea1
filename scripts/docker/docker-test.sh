#!/usr/bin/env bash
# `make docker-test`: pytest on tests/docker with an engine and the image
# (scripts/docker/with-engine.sh starts and stops what it needs). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/../.."
export ZKBROKER_DOCKER_TESTS=1
exec scripts/docker/with-engine.sh .venv/bin/pytest tests/docker -p no:cacheprovider "$@"
