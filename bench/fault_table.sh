#!/bin/sh
# The faults table of the closing notes: each fault injected RUNS times;
# a run is "detected" when every surviving rank's call failed with the right
# error; times are from each survivor's call start to its failure (for
# killbig, less the 30 ms rank 1 spends in the call before it dies); "wrong
# data" counts ranks that returned a result that was not right.
#   bench/fault_table.sh BUILD_DIR     (frame faults need a build configured
#   RUNS=5                               with --enable-fault-injection)
set -u
build=$(cd "$1" && pwd)
RUNS=${RUNS:-5}
RLXRUN="$build/bin/rlxrun/rlxrun"
FAULT="$build/tests/integration/fault_check"
out=$(mktemp -d "${TMPDIR:-/tmp}/rlxfaults.XXXXXX")
trap 'rm -rf "$out"' EXIT

# row LABEL N SURVIVORS OFFSET ENV... -- ARGS...
row() {
  label=$1 n=$2 surv=$3 off=$4
  shift 4
  envs=""
  while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
  shift
  : >"$out/times"
  det=0 wrong=0
  for r in $(seq 1 "$RUNS"); do
    env $envs timeout 120 "$RLXRUN" -n "$n" --grace 10 --timeout 60 "$FAULT" "$@" >"$out/o" 2>&1
    pass=$(grep -c 'fault_check: rank [0-9]*: PASS' "$out/o")
    [ "$pass" -ge "$surv" ] && det=$((det + 1))
    wrong=$((wrong + $(grep -c 'WRONG DATA' "$out/o")))
    sed -n 's/.*fault_check: rank [0-9]*: .* after \([0-9.]*\) s.*/\1/p' "$out/o" >>"$out/times"
  done
  python3 - "$label" "$RUNS" "$det" "$wrong" "$off" "$out/times" <<'EOF'
import statistics, sys
label, runs, det, wrong, off, path = sys.argv[1:]
t = [max(0.0, float(x) - float(off)) for x in open(path).read().split()]
med = f"{statistics.median(t):.2f}" if t else "-"
worst = f"{max(t):.2f}" if t else "-"
print(f"| {label} | {runs} | {det}/{runs} | {med} | {worst} | {wrong} |")
EOF
}

echo "| fault injected | runs | detected on every survivor | median s | worst s | ranks with wrong data |"
echo "|---|---|---|---|---|---|"
row "rank 1 SIGKILLed, 8 B allreduce, 4 ranks" 4 3 0 X=1 -- kill
row "rank 1 SIGKILLed 30 ms into a 64 MiB allreduce, 4 ranks" 4 3 0.03 X=1 -- killbig
row "rank 1 passes another count, 4 ranks (all fail)" 4 4 0 X=1 -- mismatch
row "rank 1 never calls, RLX_TIMEOUT=2, 4 ranks" 4 3 0 RLX_TIMEOUT=2 -- timeout
row "rank 1 stopped (SIGSTOP, sockets open), 3 ranks: heartbeats" 3 2 0 X=1 -- stop
if grep -q "define RLX_FAULT_INJECTION 1" "$build/config.h"; then
  for tr in unix tcp; do
    for a in flip truncate drop; do
      want=lost
      [ $a = flip ] && want=corrupt
      for f in 3 40; do
        row "$tr: $a at frame $f of a 8 MiB allreduce, 4 ranks" 4 4 0 RLX_CMA=off RLX_TRANSPORT=$tr \
          RLX_FAULT_FRAME=$a:$f:1 -- frame $want
      done
    done
  done
fi
