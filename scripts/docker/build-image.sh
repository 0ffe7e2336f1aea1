#!/usr/bin/env bash
# Build zkbroker's image (IMAGE, default zkbroker:latest) on the engine DOCKER_HOST names.
#
# BASE (default debian:bookworm-slim) is used when present or pullable; a failed pull fails
# fast (PULL_TIMEOUT s) and the local stand-in made by build-base.sh from Debian packages is
# used instead. CAs in /usr/local/share/ca-certificates (a TLS-intercepting proxy's) are
# passed to the build stages' pip as EXTRA_CA_CERTS; the final image does not keep them.
#
# Release tags: the image is also tagged <name>:<Kafka release> (zkbroker:3.9), an image of
# its own per release whose only difference is ENV ZKBROKER_KAFKA_VERSION=<release>, so that
# `image: zkbroker:3.6` replaces `confluentinc/cp-kafka:7.6.0` in a compose file or a
# testcontainers module. By default only the default release's tag; RELEASE_TAGS=1 (or the
# argument --release-tags) makes one for every release zkbroker emulates (0.10.0 ... 3.9).
set -euo pipefail
cd "$(dirname "$0")/../.."

release_tags=${RELEASE_TAGS:-0}
for arg in "$@"; do
  case $arg in
    --release-tags) release_tags=1 ;;
    *) echo "usage: $0 [--release-tags]" >&2; exit 2 ;;
  esac
done

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

# The releases, from the image just built (what its `zkbroker run --kafka-version` accepts).
if [ "$release_tags" = 1 ]; then
  query='print(*(release_name(r) for r in RELEASES))'
else
  query='print(release_name(DEFAULT_RELEASE))'
fi
releases=$(docker run --rm --network none --entrypoint /opt/zkbroker/bin/python "$IMAGE" -c \
  "from zkbroker.broker.protocol.releases import DEFAULT_RELEASE, RELEASES
from zkbroker.zk_layout.release import release_name
$query")
name=$IMAGE
# Drop the tag (not a registry's :port): the part after the last / keeps the name's tag.
case ${IMAGE##*/} in
  *:*) name=${IMAGE%:*} ;;
esac
tagged=()
for release in $releases; do
  # Its output (the classic builder's deprecation notice included) only when it fails.
  if ! out=$(printf 'FROM %s\nENV ZKBROKER_KAFKA_VERSION=%s\n' "$IMAGE" "$release" |
    DOCKER_BUILDKIT=0 docker build -q --force-rm -t "$name:$release" - 2>&1); then
    echo "$out" >&2
    exit 1
  fi
  tagged+=("$name:$release")
done
echo "tagged ${#tagged[@]} release image(s): ${tagged[*]}"
