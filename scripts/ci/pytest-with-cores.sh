#!/usr/bin/env bash
# `make test`'s pytest, with core files kept: when the command dies by a signal (status > 128),
# every thread's backtrace (gdb's `thread apply all bt`) from the core file(s) it left, then
# exit with its status all the same.
#
# Usage: scripts/ci/pytest-with-cores.sh COMMAND [ARGS...]     (e.g. .venv/bin/pytest -q)
# PYTHON: the binary gdb reads the cores with (default: COMMAND's #! interpreter, else COMMAND).
# CORE_PATTERN_FILE: where the core pattern is read (default /proc/sys/kernel/core_pattern).
#
# Core files are found by /proc/sys/kernel/core_pattern: a name (`core`, `core.%p`, ...; plus
# `.<pid>` with core_uses_pid) is written in the crashing process's cwd, so those newer than
# this run are looked for in the cwd and in pytest's temporary dirs (a test may have chdir'd
# there), and in the pattern's own dir when it names one. A pattern starting with `|` hands
# cores to a program (systemd-coredump, apport): this says so, and how to get them there.
# PYTHONFAULTHANDLER=1 (unless set): pytest turns its faulthandler off as it finishes and turns
# back on one that was on from the start, so a crash at interpreter exit still prints stacks.
set -uo pipefail

if [ $# -eq 0 ]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi

say() { echo "pytest-with-cores: $*" >&2; }

if ! ulimit -c unlimited 2>/dev/null; then
  ulimit -c "$(ulimit -H -c)" 2>/dev/null || true
  say "core files limited to $(ulimit -c) blocks (the hard limit refuses unlimited)"
fi
export PYTHONFAULTHANDLER=${PYTHONFAULTHANDLER:-1}

started=$(mktemp "${TMPDIR:-/tmp}/pytest-with-cores.XXXXXX")
trap 'rm -f "$started"' EXIT
cwd=$PWD

"$@"
status=$?

if [ "$status" -le 128 ]; then
  exit "$status"
fi

signal=$(kill -l $((status - 128)) 2>/dev/null || echo "$((status - 128))")
say "$1 died by signal $signal (exit status $status)"

pattern=$(cat "${CORE_PATTERN_FILE:-/proc/sys/kernel/core_pattern}" 2>/dev/null || echo core)
uses_pid=$(cat /proc/sys/kernel/core_uses_pid 2>/dev/null || echo 0)
case $pattern in
  '|'*)
    say "no core file to read here: core_pattern hands cores to a program: $pattern"
    case $pattern in
      *systemd-coredump*) say "list them with \`coredumpctl list\`, read one with \`coredumpctl gdb PID\`" ;;
      *apport*) say "apport keeps them as crash reports in /var/crash (apport-unpack, then gdb)" ;;
    esac
    say "to get core files in the cwd: echo core | sudo tee /proc/sys/kernel/core_pattern"
    exit "$status"
    ;;
esac

# The pattern's file name with every %-specifier as a wildcard, and its dir (relative: to the
# crashing process's cwd).
name=${pattern##*/}
name=$(printf '%s' "$name" | sed 's/%./*/g')
dir=.
case $pattern in */*) dir=${pattern%/*} ;; esac
case $dir in
  /*) search=("$dir") ;;
  .) search=("$cwd") ;;
  *) search=("$cwd/$dir") ;;
esac
tmp_root="${TMPDIR:-/tmp}/pytest-of-$(id -un)"
if [ "${dir:0:1}" != / ] && [ -d "$tmp_root" ]; then
  search+=("$tmp_root")
fi

# The cwd may be inside pytest's temporary dirs: each core once.
cores=()
declare -A seen=()
while IFS= read -r -d '' core; do
  core=$(readlink -f "$core")
  [ -n "${seen[$core]:-}" ] && continue
  seen[$core]=1
  cores+=("$core")
done < <(find "${search[@]}" -maxdepth 4 -type f -newer "$started" \
  \( -name "$name" -o -name "core.[0-9]*" \) -print0 2>/dev/null)

if [ ${#cores[@]} -eq 0 ]; then
  say "no core file newer than this run (core_pattern: $pattern, core_uses_pid: $uses_pid," \
    "ulimit -c: $(ulimit -c); looked in: ${search[*]})"
  case $signal in
    KILL | TERM | INT | HUP | PIPE | ALRM | USR1 | USR2) say "signal $signal does not dump core" ;;
  esac
  exit "$status"
fi

python=${PYTHON:-}
if [ -z "$python" ]; then
  exe=$(command -v "$1" || echo "$1")
  if [ "$(head -c 2 "$exe" 2>/dev/null)" = "#!" ]; then
    read -r python arg _ < <(head -n 1 "$exe" | cut -c 3-)
    if [ "${python##*/}" = env ] && [ -n "${arg:-}" ]; then
      python=$(command -v "$arg" || echo "$arg")
    fi
  else
    python=$exe
  fi
fi

if ! command -v gdb >/dev/null; then
  say "gdb is not installed (apt-get install gdb); core files kept: ${cores[*]}"
  exit "$status"
fi

# CPython's gdb extension (python3.X-gdb.py beside the real binary, or python3.X-dbg's under
# gdb's data dir) adds `py-bt`: each thread's Python stack.
real=$(readlink -f "$python" 2>/dev/null || echo "$python")
gdb_args=(-batch -nx -iex "add-auto-load-safe-path ${real%/*}" -ex 'set pagination off')
py_bt=()
if gdb "${gdb_args[@]}" -ex 'help py-bt' "$real" >/dev/null 2>&1; then
  py_bt=(-ex 'echo \n--- Python stacks (py-bt) ---\n' -ex 'thread apply all py-bt')
fi

for core in "${cores[@]}"; do
  say "backtraces of every thread in $core (read with $real):"
  timeout 600 gdb "${gdb_args[@]}" -ex 'thread apply all bt' "${py_bt[@]}" "$real" "$core" 2>&1
  say "end of $core (kept)"
done
exit "$status"
