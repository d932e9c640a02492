#!/bin/bash
# Where a small 2-rank allreduce over TCP spends its time, against
# bench/tcp_floor's bare exchange of the same bytes: bench/tcp_timeline.so
# preloaded into both (its comment says what it records), ROUNDS
# interleaved rounds (default 3) at BYTES (default 8), read by
# bench/tcp_timeline.py: per rank, the sending syscall, the wait for the
# peer's data, and the program's own time between the read and its next
# send (the library's path, for rlxcoll; ~nothing for the floor).
#   bench/tcp_timeline.sh [build_dir]   (PACK=DIR: binaries of
#   bench/pack_build.sh, for the lent machines; DEPS=DIR as in tcp_floor.sh)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src}" && pwd)
ROUNDS=${ROUNDS:-3}
BYTES=${BYTES:-8}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. "$src/bench/tcp_bins.sh"
cc -O2 -shared -fPIC -o "$out/tcp_timeline.so" "$src/bench/tcp_timeline.c" -ldl
echo "# 2 ranks, $BYTES B, TCP on one host ($(nproc) cores): rlxcoll (RLX_TRANSPORT=tcp, OSU-style client) and tcp_floor"
for r in $(seq 1 "$ROUNDS"); do
  rm -f "$out"/tl.*
  RLX_TRANSPORT=tcp LD_PRELOAD="$out/tcp_timeline.so" TCP_TIMELINE="$out/tl" \
    rlx timeout 300 "$RLXRUN" -n 2 --no-tag-output "$OSU" "$BYTES" "$BYTES" >/dev/null
  LABEL="rlxcoll round $r: " python3 "$src/bench/tcp_timeline.py" "$out"/tl.*
  rm -f "$out"/tl.*
  LD_PRELOAD="$out/tcp_timeline.so" TCP_TIMELINE="$out/tl" rlx timeout 300 "$FLOOR" "$BYTES" "$BYTES" >/dev/null
  LABEL="floor   round $r: " python3 "$src/bench/tcp_timeline.py" "$out"/tl.*
done
