#!/bin/bash
# Instructions, data reads and data writes a call of a collective runs
# outside its waits, per rank, under callgrind: 2 ranks run
# bench/osu_coll.c's loop (COLL at BYTES) with OSU_REPEAT 1 and 3, the
# collection on inside rlx_COLL (or MPI_COLL over Open MPI's vader, LIB=mpi);
# the difference of the two runs over the calls between them (osu_coll.c's
# count at BYTES, with its warm-up, twice), less
# the functions that wait (spins, polls, futexes: their count is the
# other rank's time, not this call's work). A pack from
# bench/pack_build.sh (PACK) runs ours.
#   PACK=.devp/now bench/call_instructions.sh scatterv 8 [rlx|mpi]
set -euo pipefail
coll=${1:?collective (osu_coll.c name)} bytes=${2:?bytes} lib=${3:-rlx}
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
wait_fns="wait_for|:reached|engine_wait|p2p_progress|shm_progress|:drain|record_at|ring_read|read_alloc"
wait_fns="$wait_fns|sched_yield|poll|futex|loop_lock|wait_cell_room|spin|rlx__shmg_wait|opal_progress"
wait_fns="$wait_fns|\\?\\?\\?:0x[0-9a-f]* .*mca_btl_vader.so" # (vader's polling has no symbol)
if [ "$lib" = mpi ]; then
  mpicc -O2 -DUSE_MPI -o "$out/coll" "$src/bench/osu_coll.c" -I"$src/bench"
  fn=$(echo "$coll" | sed 's/^./\U&/')
fi
for rep in 1 3; do
  mkdir -p "$out/$rep"
  if [ "$lib" = mpi ]; then
    OSU_REPEAT=$rep timeout 300 mpirun --allow-run-as-root --mca pml ob1 --mca btl vader,self -n 2 \
      valgrind --tool=callgrind --cache-sim=yes --toggle-collect="MPI_$fn" --toggle-collect="PMPI_$fn" \
      --callgrind-out-file="$out/$rep/o.%p" "$out/coll" "$coll" "$bytes" "$bytes" >/dev/null 2>&1
  else
    P=${PACK:?a pack from bench/pack_build.sh}
    OSU_REPEAT=$rep timeout 300 "$P/bin/rlxrun" -n 2 valgrind --tool=callgrind --cache-sim=yes \
      --toggle-collect="rlx_$coll" --callgrind-out-file="$out/$rep/o.%p" \
      "$P/bin/osu_coll_rlx" "$coll" "$bytes" "$bytes" >/dev/null 2>&1
  fi
done
for rep in 1 3; do
  i=0
  for f in $(ls "$out/$rep"/o.* | awk -F. '{print $NF, $0}' | sort -n | cut -d' ' -f2); do # (rank 0 first: started first)
    callgrind_annotate --auto=no --threshold=100 --show=Ir,Dr,Dw "$f" 2>/dev/null |
      grep -E "^ *[0-9,]+ " | grep -v "PROGRAM TOTALS" | grep -vE "$wait_fns" | sed 's/([^)]*)//g' |
      awk -v r=$rep -v i=$i '{for (k = 1; k <= 3; k++) gsub(",", "", $k); ir += $1; dr += $2; dw += $3}
        END {print r, i, ir, dr, dw}'
    i=$((i + 1))
  done
done | awk -v calls="$(awk -v b="$bytes" 'BEGIN { i = int(268435456 / (b * 2)); if (i > 20000) i = 20000
  if (i < 5) i = 5; print 2 * (i + int(i / 10) + 2) }')" '{v[$1 " " $2] = $3 " " $4 " " $5} END {
  for (i = 0; i < 2; i++) {
    split(v["1 " i], a); split(v["3 " i], b)
    printf "rank %d: %.0f instructions, %.0f reads, %.0f writes a call\n", i, (b[1] - a[1]) / calls,
      (b[2] - a[2]) / calls, (b[3] - a[3]) / calls
  }}'
