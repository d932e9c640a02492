#!/bin/bash
# Issue 36: a whole run of examples/train on one GPU against PyTorch on the
# same machine, one call, interleaved: samples/s of the third of 3 epochs (EPOCHS below)
# of Fashion-MNIST (lr 0.05, momentum 0.9), both MLPs, batch 64, 256 and
# 1024:
#   rlx-dev    rlxrun -n 1 train --backend gpu (the data on the device, the default)
#   rlx-host   the same with --data-on-device 0 (each batch built and uploaded)
#   rlx-2      rlxrun -n 2 train --backend gpu with RLX_DEVICE_SHARE=1: two
#              ranks sharing the one GPU in one context (the second computes
#              in the first's process), gradients averaged on the device
#   rlx-2x     the same with a context each (RLX_DEVICE_SHARE=0: time-sliced,
#              the gradients averaged on the host)
#   rlx-2b     the same with --bucket-kb 64 (buckets allreduced as backward makes them)
#   torch      bench/torch_train_loop.py graph: the data on the GPU, the
#              whole step (its gather included) in one CUDA graph
# BIN holds rlxrun and train (LIB their libraries, OCL_ICD_VENDORS the
# GPU's ICD), DATA the dataset; ROUNDS (1), HIDDEN ("256 1024,1024"),
# BATCHES ("64 256 1024"), KINDS ("rlx-dev rlx-host rlx-2 torch"); a kind
# KIND:VAR=VALUE runs KIND with VAR set (rlx-dev:RLX_GEMM_SHAPE=8x4x8x16);
# EPOCHS (3): with more, the median of epochs 3..EPOCHS instead of the
# third alone (an epoch is 0.03-0.2 s on an H100 or H200, and a single one
# moves by 25-40% from round to round).
# One line per run:  kind hidden batch samples_per_s step_us
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
: "${BIN:?}" "${DATA:?}"
ROUNDS=${ROUNDS:-1}
HIDDEN=${HIDDEN:-"256 1024,1024"}
BATCHES=${BATCHES:-"64 256 1024"}
KINDS=${KINDS:-"rlx-dev rlx-host rlx-2 torch"}
EPOCHS=${EPOCHS:-3}
[ "$EPOCHS" -ge 3 ] 2>/dev/null || { echo "train_e2e: EPOCHS is a number from 3" >&2; exit 2; }
# samples/s of epochs 3..EPOCHS (one per line) -> their median
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
RLXENV=(env LD_LIBRARY_PATH="${LIB:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
train() { # RANKS HIDDEN BATCH ARGS...: samples/s of epochs 3..EPOCHS
  local n=$1 h=$2 b=$3
  shift 3
  "${RLXENV[@]}" ${KINDVAR:+"$KINDVAR"} timeout 300 "$BIN/rlxrun" -n "$n" --bind-to none "$BIN/train" --backend gpu \
    --data "$DATA" --epochs "$EPOCHS" --hidden "$h" --batch "$b" "$@" 2>&1 | tee -a "${LOG:-/dev/null}" |
    sed -n 's/.*epoch \([0-9]*\)\/[0-9]*: .*, \([0-9]*\) samples\/s.*/\1 \2/p' |
    awk '$1 >= 3 && !seen[$1]++ { print $2 }' | median
}
for r in $(seq 1 "$ROUNDS"); do
  for h in $HIDDEN; do
    for b in $BATCHES; do
      for k in $KINDS; do
        base=${k%%:*} KINDVAR=
        [ "$base" = "$k" ] || KINDVAR=${k#*:}
        case $base in
        rlx-dev) s=$(train 1 "$h" "$b" --data-on-device 1) ;;
        rlx-host) s=$(train 1 "$h" "$b" --data-on-device 0) ;;
        rlx-2) s=$(RLX_DEVICE_SHARE=1 train 2 "$h" "$b") ;;
        rlx-2x) s=$(RLX_DEVICE_SHARE=0 train 2 "$h" "$b") ;;
        rlx-2b) s=$(train 2 "$h" "$b" --bucket-kb 64) ;;
        torch)
          s=$(timeout 300 python3 "$src/bench/torch_train_loop.py" graph "$DATA" "$EPOCHS" "$h" "$b" 2>&1 |
            tee -a "${LOG:-/dev/null}" | sed -n 's/.*epoch \([0-9]*\): .*us, \([0-9]*\) samples\/s.*/\1 \2/p' |
            awk '$1 >= 3 { print $2 }' | median)
          ;;
        esac
        n=1
        case $base in rlx-2*) n=2 ;; esac
        if [ -n "$s" ]; then
          awk -v k="$k" -v h="$h" -v b="$b" -v s="$s" -v n="$n" \
            'BEGIN { printf "%s %s %d %d %.1f\n", k, h, b, s, 1e6 * b * n / s }'
        else
          echo "$k $h $b failed"
        fi
      done
    done
  done
done
