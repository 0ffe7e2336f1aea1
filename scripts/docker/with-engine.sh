#!/usr/bin/env bash
# Run a command with a Docker engine and zkbroker's image: an engine (started here when none
# answers, and then stopped here on any exit), the image and its default release tag (on a
# local base when no registry answers), then COMMAND with DOCKER_HOST and ZKBROKER_IMAGE set.
# `make docker-test` runs pytest on tests/docker through it, `make bench-image` the image bench.
#
# Everything the command starts it stops; containers and networks labelled
# zkbroker-test=$ZKBROKER_DOCKER_RUN_ID that a killed run left are removed on exit, before the
# engine stops (only when this script started it).
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

# Ryuk's image cannot be pulled where no registry answers; what is started is removed here.
export TESTCONTAINERS_RYUK_DISABLED=${TESTCONTAINERS_RYUK_DISABLED:-true}
# testcontainers (Python and Node) reach published ports on this address, not on a bridge's
# gateway (Python takes this VM for a container and would): the traffic stays on loopback.
export TESTCONTAINERS_HOST_OVERRIDE=${TESTCONTAINERS_HOST_OVERRIDE:-127.0.0.1}
export TESTCONTAINERS_CONNECTION_MODE=${TESTCONTAINERS_CONNECTION_MODE:-docker_host}
export ZKBROKER_IMAGE=${IMAGE:-zkbroker:latest}
"$@"
