#!/bin/bash
# The joint step on a GPU (issue 36): two ranks sharing the device
# (RLX_DEVICE_SHARE=1) whose shared steps run joint, one pass over both
# batches, against the same with RLX_JOINT_STEP=0 (each member's pass,
# then their average) and with a context per rank (RLX_DEVICE_SHARE=0):
# the parameters after one epoch of each model and batch, compared bit
# for bit, and how many steps ran joint (RLX_COMPUTE_PROFILE=host).
# BIN holds rlxrun and train (LIB their libraries), DATA the dataset;
# HIDDEN ("256 1024,1024"), BATCHES ("64 256 1024").
#   BIN=... LIB=... DATA=... bench/joint_bits.sh
set -uo pipefail
: "${BIN:?}" "${DATA:?}"
HIDDEN=${HIDDEN:-"256 1024,1024"}
BATCHES=${BATCHES:-"64 256 1024"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
for h in $HIDDEN; do
  for b in $BATCHES; do
    for mode in joint parts own; do
      share=1 joint=1
      [ $mode = parts ] && joint=0
      [ $mode = own ] && share=0
      env LD_LIBRARY_PATH="${LIB:-}" RLX_DEVICE_SHARE=$share RLX_JOINT_STEP=$joint \
        RLX_COMPUTE_PROFILE=host timeout 300 "$BIN/rlxrun" -n 2 --bind-to none "$BIN/train" \
        --backend gpu --data "$DATA" --epochs 1 --hidden "$h" --batch "$b" \
        --dump-params "$tmp/$mode" >"$tmp/$mode.out" 2>&1 || { tail -5 "$tmp/$mode.out"; bad=1; }
    done
    joint=$(sed -n 's/.*; \([0-9]*\) joint .*/\1/p' "$tmp/joint.out" | head -1)
    steps=$(sed -n 's/.*shared steps: \([0-9]*\);.*/\1/p' "$tmp/joint.out" | head -1)
    same() { cmp -s "$tmp/joint" "$tmp/$1" && echo same || { bad=1; echo DIFFERENT; }; }
    echo "$h batch $b: ${joint:-?} of ${steps:-?} shared steps joint; parameters against" \
      "RLX_JOINT_STEP=0: $(same parts), against a context per rank: $(same own)"
  done
done
exit $bad
