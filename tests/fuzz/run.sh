#!/bin/sh
# Build the libFuzzer targets with clang (-fsanitize=fuzzer,address,undefined)
# and run each for FUZZ_SECONDS (default 60) from the seed corpus in
# tests/fuzz/corpus_*; any crash, leak or abort fails. Prints the executions.
#   tests/fuzz/run.sh [seconds]
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
secs=${1:-${FUZZ_SECONDS:-60}}
CC=${FUZZ_CC:-clang}
command -v "$CC" >/dev/null || { echo "fuzz: $CC missing: apt-get install clang"; exit 1; }
out=$(mktemp -d "${TMPDIR:-/tmp}/rlxfuzz.XXXXXX")
trap 'rm -rf "$out"' EXIT
flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE -I$top/include -I$top/lib"
common="$top/lib/transport/frame.c $top/lib/transport/crc32c.c $top/lib/coll/call.c $top/lib/base/dtype.c"
$CC $flags -o "$out/fuzz_frame" "$here/fuzz_frame.c" $common || exit 1
$CC $flags -o "$out/fuzz_handshake" "$here/fuzz_handshake.c" "$top/lib/bootstrap/handshake.c" \
  $(pkg-config --cflags --libs libsodium) || exit 1
status=0
for t in frame handshake; do
  mkdir -p "$out/corpus_$t"
  cp "$here/corpus_$t"/* "$out/corpus_$t/" 2>/dev/null
  "$out/fuzz_$t" -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$out/crash_$t-" \
    "$out/corpus_$t" >"$out/log_$t" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/log_$t")
  if [ $rc -ne 0 ]; then
    tail -40 "$out/log_$t"
    echo "fuzz_$t: CRASH after ${execs:-?} executions"
    status=1
  else
    echo "fuzz_$t: ${execs:-?} executions in $secs s, no crash"
  fi
done
exit $status
