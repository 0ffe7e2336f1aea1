#!/usr/bin/env bash
# Start or stop a private Docker engine for `make docker-test`, when no engine answers.
#
#   eval "$(scripts/docker/dockerd.sh start)"   # prints DOCKER_HOST=...; starts dockerd only if
#                                               # neither $DOCKER_HOST nor the default socket answers
#   scripts/docker/dockerd.sh stop              # stops the engine this script started, nothing else
#
# The engine is Debian's dockerd run as root with --bridge=none --iptables=false
# --ip-forward=false (no NAT, no firewall changes, and the host's IPv4 forwarding left as it
# is; containers use --network host or user-defined bridges, which tests/docker seals: see its
# conftest.py), its own socket, pid file and exec root under $ZKBROKER_DOCKER_RUN, and its own
# data root (kept, so images and the build cache survive between runs). Published ports work
# through docker-proxy. It does not install Docker (the Makefile does).
set -euo pipefail

RUN=${ZKBROKER_DOCKER_RUN:-/run/zkbroker-docker}
DATA=${ZKBROKER_DOCKER_DATA:-/var/lib/zkbroker-docker}
SOCKET=$RUN/docker.sock
PIDFILE=$RUN/dockerd.pid
SUDO=$([ "$(id -u)" -eq 0 ] || echo sudo)

answers() { timeout 5 docker ${1:+--host "$1"} version >/dev/null 2>&1; }

start() {
  if [ -n "${DOCKER_HOST:-}" ] && answers "$DOCKER_HOST"; then
    echo "DOCKER_HOST=$DOCKER_HOST"; return
  fi
  if [ -z "${DOCKER_HOST:-}" ] && [ -S /var/run/docker.sock ] && answers unix:///var/run/docker.sock; then
    echo "DOCKER_HOST=unix:///var/run/docker.sock"; return
  fi
  if [ -S "$SOCKET" ] && answers "unix://$SOCKET"; then
    echo "DOCKER_HOST=unix://$SOCKET"; return
  fi
  command -v dockerd >/dev/null || { echo "dockerd is missing: apt-get install docker.io" >&2; exit 1; }
  $SUDO mkdir -p "$RUN" "$DATA"
  echo "starting dockerd on unix://$SOCKET (log: $RUN/dockerd.log)" >&2
  # setsid: the engine outlives this shell; `stop` ends it by its pid file.
  $SUDO setsid dockerd --bridge=none --iptables=false --ip6tables=false --ip-forward=false \
    --data-root "$DATA" --exec-root "$RUN/exec" --pidfile "$PIDFILE" \
    -H "unix://$SOCKET" >"$RUN/dockerd.log" 2>&1 < /dev/null &
  for _ in $(seq 150); do
    if answers "unix://$SOCKET"; then
      $SUDO touch "$RUN/started-by-zkbroker"
      echo "DOCKER_HOST=unix://$SOCKET"; return
    fi
    sleep 0.2
  done
  echo "dockerd did not answer within 30 s; its log ends with:" >&2
  tail -n 20 "$RUN/dockerd.log" >&2
  stop
  exit 1
}

stop() {
  [ -f "$PIDFILE" ] || return 0
  local pid
  pid=$(cat "$PIDFILE")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    echo "stopping dockerd (pid $pid)" >&2
    $SUDO kill -TERM "$pid"
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -0 "$pid" 2>/dev/null && $SUDO kill -KILL "$pid"
  fi
  $SUDO rm -f "$RUN/started-by-zkbroker" "$PIDFILE"
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
