#!/bin/sh
# rlxcoll.torch, the "rlx" backend of torch.distributed (Debian's
# python3-torch): every collective and op on 2 and 4 ranks
# (tests/python/check_torch.py), init_process_group("rlx") from rlxrun's
# environment with no MASTER_ADDR, and from torchrun's; DistributedDataParallel on 4 ranks over
# rlx and over gloo end 20 steps with the same parameters (within 1e-6
# relative); examples/train.py reaches 85% in 3 epochs.
. "$(dirname "$0")/lib.sh"
py_stage numpy torch
for n in 2 4; do
  timeout 300 "$RLXRUN" -n $n "$PYTHON" "$PYTESTS/check_torch.py" ops >"$TMP/out" 2>&1 ||
    { cat "$TMP/out"; fail "ops on $n ranks"; }
  [ "$(grep -c 'check_torch: rank [0-9]*: PASS' "$TMP/out")" = $n ] || { cat "$TMP/out"; fail "ops on $n"; }
done
echo "every collective and op right on 2 and 4 ranks"
# The environment torchrun gives its workers (MASTER_ADDR, RANK, ...; Debian's
# torchrun itself fails on its Python 3.11 before starting any): rlxcoll is
# wired through torch's store.
port=$(free_port)
for r in 0 1; do
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 \
    timeout 120 "$PYTHON" "$PYTESTS/check_torch.py" ops >"$TMP/tr$r" 2>&1 &
done
wait
for r in 0 1; do
  grep -q "check_torch: rank $r: PASS" "$TMP/tr$r" || { cat "$TMP/tr$r"; fail "torchrun's environment: rank $r"; }
done
echo "under torchrun's environment (MASTER_ADDR set): wired through torch's store, every call right"
timeout 300 "$RLXRUN" -n 4 "$PYTHON" "$PYTESTS/check_torch.py" ddp rlx "$TMP/rlx.npy" >"$TMP/out" 2>&1 ||
  { cat "$TMP/out"; fail "DDP over rlx"; }
GLOO_PORT=$(free_port) timeout 300 "$RLXRUN" -n 4 -x GLOO_PORT "$PYTHON" "$PYTESTS/check_torch.py" \
  ddp gloo "$TMP/gloo.npy" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "DDP over gloo"; }
diff=$("$PYTHON" -c "import numpy as np; a, b = np.load('$TMP/rlx.npy'), np.load('$TMP/gloo.npy'); print(float(np.abs(a - b).max() / np.abs(b).max()))")
"$PYTHON" -c "import sys; sys.exit(0 if $diff <= 1e-6 else 1)" || fail "DDP: rlx and gloo differ by $diff"
echo "DDP, 4 ranks, 20 steps: rlx and gloo parameters within $diff relative"
src=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
timeout 600 "$RLXRUN" -n 4 "$PYTHON" "$src/examples/train.py" --epochs 3 >"$TMP/out" 2>&1 ||
  { cat "$TMP/out"; fail "examples/train.py"; }
cat "$TMP/out"
acc=$(sed -n 's/.*epoch 3\/3: .* test \([0-9.]*\)%.*/\1/p' "$TMP/out")
"$PYTHON" -c "import sys; sys.exit(0 if float('${acc:-0}') >= 85 else 1)" || fail "train.py: test accuracy ${acc:-none}"
echo "python torch: ok"
