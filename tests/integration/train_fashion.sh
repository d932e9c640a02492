#!/bin/sh
# The quick start's promise: rlxrun -n 4 ./examples/train with default
# flags reaches at least 85% test accuracy on Fashion-MNIST in 3 epochs.
. "$(dirname "$0")/lib.sh"
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] ||
  fail "Fashion-MNIST missing: apt-get install dataset-fashion-mnist"
start=$(date +%s)
timeout 900 "$RLXRUN" -n 4 --timeout 880 "$TRAIN" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "train failed"; }
cat "$TMP/out"
acc=$(sed -n 's/.*epoch 3\/3: .* test \([0-9.]*\)%.*/\1/p' "$TMP/out")
[ -n "$acc" ] || fail "no third epoch"
python3 -c "import sys; sys.exit(0 if float('$acc') >= 85 else 1)" || fail "test accuracy $acc% < 85%"
echo "train on Fashion-MNIST: $acc% after 3 epochs, $(( $(date +%s) - start )) s: ok"
