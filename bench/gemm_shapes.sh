#!/bin/bash
# gemm_tiles' work-group shapes on one OpenCL device against cuBLAS
# (PyTorch on CUDA, when there): bench/gemm_shapes for each model and
# batch, then bench/torch_gemm_shapes.py on the same products, then per
# model and batch the shape whose products take least in all (the value
# for RLX_GEMM_SHAPE, or for lib/compute/gemm_shape.c's table of devices).
#   GEMM=bench/gemm_shapes MODELS="1024,1024:1024 1024,1024:256" bench/gemm_shapes.sh
# SHAPES: the shapes tried (the default first: the library's own).
# BASELINE: another kernels.cl whose first shape runs first, the
# reference for the bits (its lines "base ..."); GEMM_OPTIONS: more build
# options for the library's source (-DNAME=VALUE: an experiment's switch).
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
GEMM=${GEMM:-$src/bench/gemm_shapes}
MODELS=${MODELS:-"1024,1024:1024 1024,1024:256 256:1024 256:256"}
SHAPES=${SHAPES:-"4x4x16x16 4x4x16x8 4x4x16x32 8x4x16x16 8x4x16x16/128 4x8x16x16 4x8x16x16/128 8x4x8x16 8x4x8x32 4x8x8x16 8x8x8x16 8x8x8x16/128 8x8x16x8 8x8x16x8/128 8x8x16x16/128"}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for mb in $MODELS; do
  h=${mb%%:*} b=${mb#*:}
  echo "== $h $b" | tee -a "$out"
  timeout 300 "$GEMM" --hidden "$h" --batch "$b" --reps 50 --shapes "$SHAPES" \
    ${BASELINE:+--baseline "$BASELINE"} ${GEMM_OPTIONS:+--options "$GEMM_OPTIONS"} 2>&1 | tee -a "$out"
  if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    timeout 300 python3 "$src/bench/torch_gemm_shapes.py" --hidden "$h" --batch "$b" --reps 50 2>&1 |
      tee -a "$out"
  fi
done
# per model and batch: each shape's products summed, the least named
# beside the first shape's (the library's own), the baseline's and cuBLAS's
awk '/^== / {key = $2 " " $3; next}
     /^base / {for (i = 1; i < NF; i++) if ($(i + 1) == "us") bt[key] += $i; next}
     / us / && !/^torch/ {if (!(key in first)) first[key] = $1
                          for (i = 1; i < NF; i++) if ($(i + 1) == "us") t[key "|" $1] += $i}
     /^torch / {for (i = 1; i < NF; i++) if ($(i + 1) == "us") cu[key] += $i}
     END {for (k in t) {split(k, p, "|"); if (!(p[1] in best) || t[k] < t[best[p[1]]]) best[p[1]] = k}
          for (m in best) {split(best[m], p, "|")
            printf "fastest for %s: %s, %.1f us of products (the first, %s, %.1f%s%s)\n", m, p[2],
                   t[best[m]], first[m], t[m "|" first[m]],
                   (m in bt) ? sprintf(", the baseline %.1f", bt[m]) : "",
                   (m in cu) ? sprintf(", cuBLAS %.1f", cu[m]) : ""}}' "$out"
