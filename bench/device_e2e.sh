#!/bin/bash
# Issue 36's runs on a lent GPU host, from a pack made here by
# bench/pack_gpu.sh (PACK: bin/ with rlxrun, train, gemm_shapes; lib/ with
# librlxcoll, librlxcompute, libclblast, the ICD loader libOpenCL and the
# runtime libraries the host may lack; data/ with Fashion-MNIST): points
# the ICD loader at NVIDIA's OpenCL, says which device the library
# computes on, then runs
# bench/train_e2e.sh (rlx-dev, rlx-2, torch; both MLPs, batches 64, 256,
# 1024; its ROUNDS, KINDS, HIDDEN, BATCHES and EPOCHS pass through), or
# with "shapes" bench/gemm_shapes.sh, with "share" bench/share_modes.sh,
# with "joint" bench/joint_bits.sh (its HIDDEN and BATCHES pass through).
# Output under OUT.
#   PACK=.devp/gpu OUT=/tmp/out bench/device_e2e.sh [e2e|shapes|share|joint]
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
G=$(cd "${PACK:?a pack folder}" && pwd)
OUT=${OUT:?an output folder}
mkdir -p /tmp/ocl "$OUT"
for p in /usr/lib/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 \
  /usr/local/nvidia/lib64/libnvidia-opencl.so.1; do
  [ -e "$p" ] && { echo "$p" >/tmp/ocl/nvidia.icd; break; }
done
export OCL_ICD_VENDORS=/tmp/ocl LD_LIBRARY_PATH=$G/lib
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
RLX_LOG=info timeout 120 "$G/bin/rlxrun" -n 1 "$G/bin/train" --backend gpu --data "$G/data" --steps 5 2>&1 |
  grep -iE "computes|device|error|fallback" | head -5
if [ "${1:-e2e}" = joint ]; then
  BIN=$G/bin LIB=$G/lib DATA=$G/data bash "$src/bench/joint_bits.sh" 2>&1 | tee "$OUT/joint.txt"
elif [ "${1:-e2e}" = share ]; then
  BIN=$G/bin DATA=$G/data bash "$src/bench/share_modes.sh" 2>&1 | tee "$OUT/share.txt"
elif [ "${1:-e2e}" = shapes ]; then
  GEMM=$G/bin/gemm_shapes bash "$src/bench/gemm_shapes.sh" 2>&1 | tee "$OUT/shapes.txt" | tail -40
else
  BIN=$G/bin LIB=$G/lib DATA=$G/data ROUNDS=${ROUNDS:-1} KINDS=${KINDS:-"rlx-dev rlx-2 torch"} \
    LOG=$OUT/e2e.log bash "$src/bench/train_e2e.sh" 2>&1 | tee "$OUT/e2e.txt"
fi
