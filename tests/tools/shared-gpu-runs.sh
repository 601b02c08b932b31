#!/usr/bin/env bash
# Catalogue runs on the GPU machine, on the idle GPU and beside neighbours: the measurement behind
# issue 25 and docs/measurements.md, "A shared GPU: the catalogue beside three neighbours". A tool for the GPU machine, not part of the crate.
#
#   bash tests/tools/shared-gpu-runs.sh BIN IDLE CLI MATMUL COPIES [RECORD_DIR]
#
# BIN is the stream-litmus binary; IDLE, CLI, MATMUL and COPIES are how many catalogue runs to make
# on the idle GPU, beside a loop of catalogue runs, beside a PyTorch loop of bf16 matrix products
# and beside a PyTorch loop of page-locked copies both ways (tests/tools/neighbour.py). With
# RECORD_DIR, the first run beside each neighbour (contended-NEIGHBOUR.json.gz, for fixtures) and
# every run with a wrong decided verdict (wrong-NEIGHBOUR-RUN.json.gz, for the analysis) are
# copied there. Every run writes its results file, so the wall includes writing it.
#
# Prints one line per run: the neighbour, wall seconds (the process's, its results file included,
# and the run's own, from its summary), wrong decided verdicts (a claim reported
# unexpected whose verdict is Holds or Violated) and the run's own decided line.
set -uo pipefail
bin=$(readlink -f "$1"); idle=$2; cli=$3; matmul=$4; copies=$5; record=${6:-}
here=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

runs() { # NEIGHBOUR COUNT
  local i log json t0 t1 wrong
  for ((i = 1; i <= $2; i++)); do
    log=/tmp/shared-gpu-$1-$i.log
    json=/tmp/shared-gpu-$1-$i.json.gz
    t0=$(date +%s.%N)
    "$bin" --json "$json" >"$log" 2>&1
    t1=$(date +%s.%N)
    wrong=$(awk '$1 == "FAIL" && ($3 == "Holds" || $3 == "Violated")' "$log" | wc -l)
    if [ -n "$record" ] && [ "$i" = 1 ] && [ "$1" != idle ]; then
      cp "$json" "$record/contended-$1.json.gz"
    fi
    if [ -n "$record" ] && [ "$wrong" -gt 0 ]; then
      cp "$json" "$record/wrong-$1-$i.json.gz"
    fi
    printf '%-7s %2d  wall %5.2f s (own %s s)  wrong %d  %s\n' "$1" "$i" "$(awk "BEGIN { print $t1 - $t0 }")" \
      "$(awk '$1 == "time" && $2 == "wall" { print $3; exit }' "$log")" "$wrong" "$(grep -m1 '^decided ' "$log")"
    awk '$1 == "FAIL" && ($3 == "Holds" || $3 == "Violated")' "$log" | cut -c1-400
  done
}

# A neighbour runs in its own process group, so that stopping it stops all of it.
beside() { # NEIGHBOUR COUNT COMMAND...
  local name=$1 count=$2 pid
  shift 2
  [ "$count" -gt 0 ] || return 0
  setsid "$@" >/tmp/neighbour-$name.log 2>&1 &
  pid=$!
  # Until the neighbour's work runs (the Python neighbour says so; the loop is busy at once).
  for _ in $(seq 60); do
    grep -q 'neighbour: busy' /tmp/neighbour-$name.log 2>/dev/null && break
    [ "$name" = cli ] && { sleep 2; break; }
    sleep 1
  done
  runs "$name" "$count"
  kill -- -"$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  tail -n 1 /tmp/neighbour-$name.log
}

runs idle "$idle"
beside cli "$cli" bash -c "while :; do '$bin' >/dev/null 2>&1; done"
beside matmul "$matmul" python3 "$here/neighbour.py" matmul 600
beside copies "$copies" python3 "$here/neighbour.py" copies 600
runs idle "$idle"
