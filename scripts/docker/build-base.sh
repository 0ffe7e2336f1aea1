#!/usr/bin/env bash
# Build a local stand-in for an official Debian base image, from Debian packages only:
# `mmdebstrap --variant=minbase` from a Debian mirror, then `docker import`.
#
# For engines that cannot reach an image registry. The result is close to debian:bookworm-slim
# (minbase, no apt lists, no documentation or man pages), tagged under a local name so it is
# never mistaken for the official image:
#
#   scripts/docker/build-base.sh                  # -> zkbroker-local/debian:bookworm-slim
#   BASE_TAG=my/debian:12 scripts/docker/build-base.sh
#
# It does not pull, push or build zkbroker's image itself (see `make docker-build`).
# Needs root (mmdebstrap's root mode) and a running Docker engine (DOCKER_HOST is honoured).
set -euo pipefail

SUITE=${SUITE:-bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
BASE_TAG=${BASE_TAG:-zkbroker-local/debian:${SUITE}-slim}

if [ "${FORCE:-0}" != 1 ] && docker image inspect "$BASE_TAG" >/dev/null 2>&1; then
  echo "base image $BASE_TAG exists (FORCE=1 rebuilds it)"
  exit 0
fi
command -v mmdebstrap >/dev/null || { echo "mmdebstrap is missing: apt-get install mmdebstrap" >&2; exit 1; }

# What debian:*-slim leaves out: documentation, man pages, translations (copyright files stay).
excludes=(
  'path-exclude=/usr/share/doc/*'
  'path-include=/usr/share/doc/*/copyright'
  'path-exclude=/usr/share/man/*'
  'path-exclude=/usr/share/info/*'
  'path-exclude=/usr/share/locale/*'
  'path-include=/usr/share/locale/locale.alias'
  'path-exclude=/usr/share/lintian/*'
)
dpkgopts=()
for rule in "${excludes[@]}"; do dpkgopts+=(--dpkgopt="$rule"); done

started=$(date +%s)
echo "building $BASE_TAG from $MIRROR ($SUITE, minbase)"
# mmdebstrap removes apt's lists and caches itself; the hook keeps the dpkg excludes in the
# image so later `apt-get install`s in a Dockerfile leave documentation out too.
# The merged-usr hook sets up /usr-merge directly; without it apt satisfies usr-is-merged with
# the usrmerge package, which brings 30 MB of Perl.
hooks=()
[ -d /usr/share/mmdebstrap/hooks/merged-usr ] && hooks=(--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr)
mmdebstrap --variant=minbase --quiet "${hooks[@]}" "${dpkgopts[@]}" \
  --aptopt='Acquire::Retries "3"' \
  --customize-hook='rm -rf "$1"/var/log/* "$1"/var/cache/ldconfig/aux-cache' \
  "$SUITE" - \
  "deb $MIRROR $SUITE main" \
  "deb $MIRROR $SUITE-updates main" \
  "deb $SECURITY_MIRROR $SUITE-security main" |
  docker import --change 'CMD ["bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --message "mmdebstrap --variant=minbase $SUITE ($MIRROR)" - "$BASE_TAG"
echo "built $BASE_TAG in $(( $(date +%s) - started )) s: $(docker image inspect -f '{{.Size}}' "$BASE_TAG") bytes"
