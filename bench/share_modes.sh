#!/bin/bash
# Issue 36: where two models sharing one GPU lose against one, in one
# process (bench/step_shared: no sockets, no train loop) and through
# train. BIN holds step_shared, rlxrun and train, DATA the dataset (as
# bench/device_e2e.sh share sets them); ROUNDS (2), HIDDEN ("256 1024,1024"),
# BATCHES ("64 256"). Per model and batch, interleaved, us a step of
#   one      one model alone (rlx_model_step)
#   shared   two models, a thread each, rlx_model_step_shared
#   own      two models, a thread each, each its own step (no average)
#   serial   two models, one thread stepping each in turn (no average)
# then a 2-rank train at each model, batch 64, with RLX_COMPUTE_PROFILE=host:
# the shared step's host side (who waits, the last member's queuing).
set -uo pipefail
: "${BIN:?}" "${DATA:?}"
ROUNDS=${ROUNDS:-2}
HIDDEN=${HIDDEN:-"256 1024,1024"}
BATCHES=${BATCHES:-"64 256"}
for r in $(seq 1 "$ROUNDS"); do
  for h in $HIDDEN; do
    for b in $BATCHES; do
      S="$BIN/step_shared --backend opencl --hidden $h --batch $b --steps 2000 --warmup 200"
      for mode in one shared own serial; do
        case $mode in
        one) args="--members 1" ;;
        shared) args="--members 2" ;;
        own) args="--members 2 --own 1" ;;
        serial) args="--members 2 --own 1 --serial 1" ;;
        esac
        echo "round $r $mode $(timeout 120 $S $args 2>&1 | tail -n 1)"
      done
    done
  done
done
for h in $HIDDEN; do
  echo "== train, 2 ranks sharing the GPU, RLX_COMPUTE_PROFILE=host, $h, batch 64"
  RLX_COMPUTE_PROFILE=host RLX_DEVICE_SHARE=1 timeout 120 "$BIN/rlxrun" -n 2 --bind-to none \
    "$BIN/train" --backend gpu --data "$DATA" --epochs 3 --hidden "$h" --batch 64 2>&1 |
    grep -E "rlx: |samples/s"
done
