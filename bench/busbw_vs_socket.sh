#!/bin/bash
# Large-message bus bandwidth of rlxcoll's allreduce against the Unix-socket
# bandwidth between two processes (bench/sockbw, both directions at once),
# in one run. The socket is measured twice: through one 256 KiB buffer (the
# data stays in the cache: the kernel's copy speed) and walking through
# 64 MiB buffers (the data comes from memory, as a 64 MiB allreduce's must).
# rlxcoll: rlx-bench 16-64 MiB, float32 sum, for each n in NS (default 2),
# by reference (RLX_CMA=on) and through the socket (RLX_CMA=off).
#   bench/busbw_vs_socket.sh [build_dir]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src}" && pwd)
NS=${NS:-2}
make -C "$build" bench/sockbw bench/rlx-bench >/dev/null
hot=$("$build/bench/sockbw" 2048 256 0 | sed 's/.*: \([0-9.]*\) GB.*/\1/')
mem=$("$build/bench/sockbw" 2048 256 64 | sed 's/.*: \([0-9.]*\) GB.*/\1/')
echo "unix socket, 2 processes, per direction: $hot GB/s cache-hot (256 KiB buffer), $mem GB/s through 64 MiB buffers"
printf '%3s %-9s %10s %10s %8s %14s %14s\n' n payloads bytes "time (us)" busbw "of cache-hot" "of 64 MiB"
for n in $NS; do
  for cma in on off; do
    RLX_CMA=$cma timeout 300 "$build/bin/rlxrun/rlxrun" -n "$n" --no-tag-output \
      "$build/bench/rlx-bench" -b 16M -e 64M -f 2 -c 0 | grep -v '^#' |
      awk -v n="$n" -v c="$cma" -v hot="$hot" -v mem="$mem" '{
        printf "%3d %-9s %10d %10.1f %8.3f %13.0f%% %13.0f%%\n", n,
               (c == "on" ? "by-ref" : "socket"), $1, $6, $8, 100 * $8 / hot, 100 * $8 / mem }'
  done
done
