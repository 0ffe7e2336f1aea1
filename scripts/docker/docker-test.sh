#!/usr/bin/env bash
# `make docker-test`: an engine (started here when none answers, and then stopped here on any
# exit), the image (local base when no registry answers), then pytest on tests/docker.
#
# Everything the tests start they stop; the engine is stopped only when this script started it.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/../.."

before=$(ls /run/zkbroker-docker/started-by-zkbroker 2>/dev/null || true)
env_line=$(scripts/docker/dockerd.sh start)
export "${env_line?}"
if [ -z "$before" ] && [ -e "${ZKBROKER_DOCKER_RUN:-/run/zkbroker-docker}/started-by-zkbroker" ] \
   && [ "$DOCKER_HOST" = "unix://${ZKBROKER_DOCKER_RUN:-/run/zkbroker-docker}/docker.sock" ]; then
  trap 'scripts/docker/dockerd.sh stop' EXIT
fi
echo "Docker engine: $DOCKER_HOST"

scripts/docker/build-image.sh

# Ryuk's image cannot be pulled where no registry answers; the tests remove what they start.
export TESTCONTAINERS_RYUK_DISABLED=${TESTCONTAINERS_RYUK_DISABLED:-true}
export ZKBROKER_IMAGE=${IMAGE:-zkbroker:latest}
export ZKBROKER_DOCKER_TESTS=1
.venv/bin/pytest tests/docker -p no:cacheprovider "$@"
