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
started_engine=0
if [ -z "$before" ] && [ -e "${ZKBROKER_DOCKER_RUN:-/run/zkbroker-docker}/started-by-zkbroker" ] \
   && [ "$DOCKER_HOST" = "unix://${ZKBROKER_DOCKER_RUN:-/run/zkbroker-docker}/docker.sock" ]; then
  started_engine=1
fi
# The tests label what they create zkbroker-test=<this run>; whatever a killed or timed-out run
# left with that label (containers, then networks) goes on exit, before the engine stops.
export ZKBROKER_DOCKER_RUN_ID="run-$$-$(date +%s)"
cleanup() {
  local label="label=zkbroker-test=$ZKBROKER_DOCKER_RUN_ID"
  { docker ps -aq --filter "$label" | xargs -r docker rm -f; } >/dev/null 2>&1 || true
  { docker network ls -q --filter "$label" | xargs -r docker network rm; } >/dev/null 2>&1 || true
  if [ "$started_engine" = 1 ]; then scripts/docker/dockerd.sh stop; fi
}
trap cleanup EXIT
echo "Docker engine: $DOCKER_HOST"

scripts/docker/build-image.sh

# Ryuk's image cannot be pulled where no registry answers; the tests remove what they start.
export TESTCONTAINERS_RYUK_DISABLED=${TESTCONTAINERS_RYUK_DISABLED:-true}
export ZKBROKER_IMAGE=${IMAGE:-zkbroker:latest}
export ZKBROKER_DOCKER_TESTS=1
.venv/bin/pytest tests/docker -p no:cacheprovider "$@"
