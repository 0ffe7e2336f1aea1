#!/usr/bin/env bash
# Build zkbroker's image (IMAGE, default zkbroker:latest) on the engine DOCKER_HOST names.
#
# BASE (default debian:bookworm-slim) is used when present or pullable; a failed pull fails
# fast (PULL_TIMEOUT s) and the local stand-in made by build-base.sh from Debian packages is
# used instead. CAs in /usr/local/share/ca-certificates (a TLS-intercepting proxy's) are
# passed to the build stages' pip as EXTRA_CA_CERTS; the final image does not keep them.
set -euo pipefail
cd "$(dirname "$0")/../.."

IMAGE=${IMAGE:-zkbroker:latest}
BASE=${BASE:-debian:bookworm-slim}
LOCAL_BASE=${LOCAL_BASE:-zkbroker-local/debian:bookworm-slim}
PULL_TIMEOUT=${PULL_TIMEOUT:-30}

if docker image inspect "$BASE" >/dev/null 2>&1; then
  base=$BASE
elif timeout "$PULL_TIMEOUT" docker pull -q "$BASE" >/dev/null 2>&1; then
  base=$BASE
else
  echo "cannot pull $BASE: using the local stand-in $LOCAL_BASE" >&2
  BASE_TAG=$LOCAL_BASE scripts/docker/build-base.sh
  base=$LOCAL_BASE
fi

extra_ca=""
for cert in /usr/local/share/ca-certificates/*.crt; do
  [ -f "$cert" ] && extra_ca+="$(cat "$cert")"$'\n'
done

started=$(date +%s%N)
# DOCKER_BUILDKIT=0: the classic builder, which every engine has (no buildx plugin needed).
DOCKER_BUILDKIT=0 docker build --network host --force-rm \
  --build-arg "BASE=$base" --build-arg "EXTRA_CA_CERTS=$extra_ca" -t "$IMAGE" .
elapsed_ms=$(( ($(date +%s%N) - started) / 1000000 ))
echo "built $IMAGE on $base in $((elapsed_ms / 1000)).$(( elapsed_ms % 1000 / 100 )) s:" \
  "$(docker image inspect -f '{{.Size}}' "$IMAGE") bytes"
