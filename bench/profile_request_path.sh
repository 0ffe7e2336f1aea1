#!/bin/sh
# Where the broker's time goes on the Metadata path: py-spy samples the `zkbroker run` process
# of bench/request_path.py while the bench runs, first into a flame graph (OUT.svg), then into
# collapsed stacks (OUT.txt, one line per stack and its sample count, for grepping and sums).
# One sampler at a time: two on one process disturb each other. py-spy may need ptrace rights.
# Usage: bench/profile_request_path.sh [OUT.svg]
set -eu
cd "$(dirname "$0")/.."
out=${1:-flame.svg}
pidfile=$(mktemp)
rm -f "$pidfile"
.venv/bin/python bench/request_path.py --rounds 20 --pid-file "$pidfile" &
bench=$!
while [ ! -s "$pidfile" ]; do sleep 0.2; done
pid=$(cat "$pidfile")
.venv/bin/py-spy record --pid "$pid" --rate 500 --duration 4 --nonblocking -o "$out"
.venv/bin/py-spy record --pid "$pid" --rate 500 --duration 4 --nonblocking -f raw \
    -o "${out%.svg}.txt"
wait "$bench"
rm -f "$pidfile"
