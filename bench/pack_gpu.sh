#!/bin/bash
# Pack a build tree's training programs for a lent GPU host (the layout
# bench/device_e2e.sh takes as PACK): bin/ with rlxrun, train, train_step,
# gemm_shapes and step_shared; lib/ with the tree's two libraries and every shared
# library they and the programs load from this machine but the C and C++
# runtimes (the host has its own: CLBlast, the ICD loader libOpenCL,
# libuv, hwloc, PMIx and the rest come along); data/ with Fashion-MNIST.
# The host's NVIDIA OpenCL is found there by device_e2e.sh.
#   bench/pack_gpu.sh . .devp/gpu
set -euo pipefail
build=$(cd "${1:?build tree}" && pwd) dest=${2:?destination folder}
data=${DATA:-/usr/share/datasets/fashion-mnist}
bins="$build/bin/rlxrun/rlxrun $build/examples/train $build/bench/train_step $build/bench/gemm_shapes $build/bench/step_shared"
for b in $bins; do
  file -L "$b" | grep -q ELF || { echo "pack_gpu: $b is not a program (build the tree first)" >&2; exit 1; }
done
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib" "$dest/data"
cp $bins "$dest/bin/"
# (resolved here, with the tree's own libraries first)
LD_LIBRARY_PATH="$build/lib/.libs" ldd $bins | awk '/=> \// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so' |
  while read -r so; do cp -L "$so" "$dest/lib/"; done
cp "$data"/*-ubyte.gz "$dest/data/"
echo "pack_gpu: $(ls "$dest/bin" | wc -l) programs, $(ls "$dest/lib" | wc -l) libraries, $(du -sh "$dest" | cut -f1) in $dest"
