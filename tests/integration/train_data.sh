#!/bin/sh
# Data problems are clear errors or the announced synthetic fallback, never
# a crash: a missing directory, a truncated file, a file of the wrong kind,
# images and labels that disagree; and bad flags are usage errors.
. "$(dirname "$0")/lib.sh"
SRC=/usr/share/datasets/fashion-mnist
small="--steps 5 --train-limit 2048 --backend cpu --hidden 32"

# Absent: the leader says so and trains on the synthetic set.
timeout 60 "$RLXRUN" -n 2 "$TRAIN" $small --data "$TMP/nowhere" >"$TMP/out" 2>&1 ||
  { cat "$TMP/out"; fail "missing data did not fall back"; }
grep -q "no train-images-idx3-ubyte.gz in $TMP/nowhere; using a synthetic set (seed 42)" "$TMP/out" ||
  { cat "$TMP/out"; fail "fallback not announced"; }
grep -q "synthetic train set (seed 42)" "$TMP/out" || fail "synthetic set not named"

# Asked for: no complaint, and learnable: the test split shares the
# training split's classes.
timeout 60 "$TRAIN" --synthetic --backend cpu --epochs 1 >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "--synthetic"; }
cat "$TMP/out"
grep -q "using a synthetic set" "$TMP/out" && fail "asked-for synthetic set announced as a fallback"
acc=$(sed -n 's/.*epoch 1\/1: .* test \([0-9.]*\)%.*/\1/p' "$TMP/out")
python3 -c "import sys; sys.exit(0 if float('$acc') > 70 else 1)" || fail "synthetic test accuracy $acc%"

# expect_error DIR PATTERN: train fails with exit 1 (not a signal) and says PATTERN.
expect_error() {
  timeout 60 "$RLXRUN" -n 2 "$TRAIN" $small --data "$1" >"$TMP/out" 2>&1
  rc=$?
  cat "$TMP/out"
  [ $rc = 1 ] || fail "$2: exit code $rc, want 1"
  grep -q "$2" "$TMP/out" || fail "no message '$2'"
}
mkdir -p "$TMP/trunc" "$TMP/wrong" "$TMP/short"
for f in "$SRC"/*.gz; do ln -s "$f" "$TMP/trunc/"; ln -s "$f" "$TMP/wrong/"; ln -s "$f" "$TMP/short/"; done

# Truncated: half of the images file.
rm "$TMP/trunc/train-images-idx3-ubyte.gz"
zcat "$SRC/train-images-idx3-ubyte.gz" | head -c 20000000 | gzip -1 >"$TMP/trunc/train-images-idx3-ubyte.gz"
expect_error "$TMP/trunc" "train-images-idx3-ubyte.gz is truncated: the pixels take 47040000 bytes, it ends after 19999984"
# A gzip stream cut short.
rm "$TMP/trunc/train-images-idx3-ubyte.gz"
head -c 1000000 "$SRC/train-images-idx3-ubyte.gz" >"$TMP/trunc/train-images-idx3-ubyte.gz"
expect_error "$TMP/trunc" "train-images-idx3-ubyte.gz"

# The wrong kind of file: labels where the images should be.
rm "$TMP/wrong/train-images-idx3-ubyte.gz"
cp "$SRC/train-labels-idx1-ubyte.gz" "$TMP/wrong/train-images-idx3-ubyte.gz"
expect_error "$TMP/wrong" "is not an IDX image file (magic 0x00000801, want 0x00000803)"

# Uncompressed files are read too; labels that do not match the images fail.
rm "$TMP/short/t10k-labels-idx1-ubyte.gz"
zcat "$SRC/train-labels-idx1-ubyte.gz" >"$TMP/short/t10k-labels-idx1-ubyte"
expect_error "$TMP/short" "has 60000 labels for 10000 images"

# Bad flags: usage and exit 2, before any rank work.
for bad in "--batch 0" "--lr x" "--hidden 0" "--wire f8" "--epochs" "--frobnicate" "--seed 1.5"; do
  timeout 20 "$TRAIN" $bad >"$TMP/out" 2>&1
  rc=$?
  [ $rc = 2 ] || { cat "$TMP/out"; fail "'$bad': exit $rc, want 2"; }
  grep -q "usage: train" "$TMP/out" || fail "'$bad': no usage"
done
RLX_DEVICE=tpu timeout 20 "$TRAIN" --steps 1 >"$TMP/out" 2>&1 && fail "RLX_DEVICE=tpu accepted"
grep -q "device 'tpu' is not one of auto, cpu, gpu, opencl" "$TMP/out" || { cat "$TMP/out"; fail "bad RLX_DEVICE message"; }
echo "train data: ok"
