#!/usr/bin/env bash
# The image's entrypoint: `zkbroker run` with two listeners built from ZKBROKER_* variables,
# its stdout also kept in $ZKBROKER_RUN_DIR/run.out (for zkbroker-zk and the healthcheck).
#
#   EXTERNAL  for clients on the host: binds $ZKBROKER_LISTEN_HOST:$ZKBROKER_PORT+i, advertised
#             as $ZKBROKER_ADVERTISED_HOST:$ZKBROKER_PORT+i (publish the same port numbers);
#   INTERNAL  for other containers: binds $ZKBROKER_LISTEN_HOST:$ZKBROKER_INTERNAL_PORT+i,
#             advertised as $ZKBROKER_INTERNAL_HOST (the container's host name by default);
#             ZKBROKER_INTERNAL_PORT=none leaves it out.
#
# Arguments starting with "-" are added to `zkbroker run` (after $ZKBROKER_ARGS); any other
# command runs instead (`docker run IMAGE zkbroker fault list ...`, `docker run -it IMAGE bash`;
# Bitnami's /opt/bitnami/scripts/kafka/run.sh is a link to /etc/confluent/docker/run).
# Given --listener, --host or --port yourself, the image adds no listeners of its own.
#
# Without arguments, an environment in Confluent's or Bitnami's terms (KAFKA_*, KAFKA_CFG_*,
# ZOOKEEPER_*, ZOO_*, ALLOW_ANONYMOUS_LOGIN, or COMPONENT=kafka|zookeeper) starts that image's
# role instead, one Kafka broker or one ZooKeeper, through /etc/confluent/docker/run (README.md,
# "Replacing a ZooKeeper-mode Kafka image"); image_conventions' `detect` tells the role.
# Otherwise, the ZKBROKER_* cluster below.
set -euo pipefail

if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  exec "$@"
fi

if [ $# -eq 0 ]; then
  role=""
  case ${COMPONENT:-} in
    kafka | zookeeper) role=$COMPONENT ;;
  esac
  # Only an environment naming another image's variables costs detect's Python start.
  for name in $(compgen -e); do
    case $role:$name in
      :KAFKA_* | :ZOOKEEPER_* | :ZOO_* | :ALLOW_ANONYMOUS_LOGIN | :ALLOW_PLAINTEXT_LISTENER)
        detected=$(/opt/zkbroker/bin/python -m zkbroker.broker.cli.image_conventions detect || true)
        case $detected in
          *-kafka) role=kafka ;;
          *-zookeeper) role=zookeeper ;;
        esac
        break
        ;;
    esac
  done
  if [ -n "$role" ]; then
    export ZKBROKER_IMAGE_ROLE=$role
    exec /etc/confluent/docker/run
  fi
fi

brokers=${ZKBROKER_BROKERS:-3}
listen_host=${ZKBROKER_LISTEN_HOST:-0.0.0.0}
port=${ZKBROKER_PORT:-9092}
advertised_host=${ZKBROKER_ADVERTISED_HOST:-127.0.0.1}
external_protocol=${ZKBROKER_EXTERNAL_PROTOCOL:-PLAINTEXT}
internal_port=${ZKBROKER_INTERNAL_PORT:-29092}
internal_host=${ZKBROKER_INTERNAL_HOST:-$(hostname)}
run_dir=${ZKBROKER_RUN_DIR:-/tmp/zkbroker}

# shellcheck disable=SC2206  # ZKBROKER_ARGS is split on blanks on purpose
extra=(${ZKBROKER_ARGS:-} "$@")
args=(--kafka-version "${ZKBROKER_KAFKA_VERSION:-3.9}")
own_listeners=1
own_brokers=1
for arg in "${extra[@]}"; do
  case $arg in
    --listener | --listener=* | --host | --host=* | --port | --port=*) own_listeners=0 ;;
    --broker-ids | --broker-ids=*) own_brokers=0 ;;
  esac
done
[ "$own_brokers" = 1 ] && args+=(--brokers "$brokers")
if [ "$own_listeners" = 1 ]; then
  args+=(--listener "EXTERNAL://$listen_host:$port" --advertised-listener "EXTERNAL://$advertised_host:$port")
  map="EXTERNAL:$external_protocol"
  inter=EXTERNAL
  if [ -n "$internal_port" ] && [ "$internal_port" != none ]; then
    args+=(--listener "INTERNAL://$listen_host:$internal_port" --advertised-listener "INTERNAL://$internal_host:$internal_port")
    map="$map,INTERNAL:PLAINTEXT"
    inter=INTERNAL
  fi
  args+=(--broker-config "listener.security.protocol.map=$map"
         --broker-config "inter.broker.listener.name=$inter")
fi

mkdir -p "$run_dir"
: > "$run_dir/run.out"
# exec keeps zkbroker as PID 1 (it stops cleanly on SIGTERM); tee copies its stdout (the
# bootstrap_servers= and zookeeper= lines) for `zkbroker-zk` and the healthcheck.
exec /opt/zkbroker/bin/zkbroker run "${args[@]}" "${extra[@]}" > >(tee -a "$run_dir/run.out")
