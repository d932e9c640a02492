#!/bin/sh
# The compute layer's step time against PyTorch, for the two MLPs of the
# benchmark (784-256-10 and 784-1024-1024-10) at batch 256 and 1024.
# BACKENDS: train_step backends to time (default "cpu opencl");
# TORCH: torch devices to time ("cuda cpu"; empty to skip); STEP: the
# train_step binary. One line per run, like:
#   backend="cpu" model=784-256-10 params=203530 batch=1024 step_us=9238.2 samples_per_s=110844
: "${STEP:=$(dirname "$0")/train_step}"
: "${BACKENDS:=cpu opencl}"
: "${TORCH:=}"
for h in 256 1024,1024; do
  for b in 256 1024; do
    for be in $BACKENDS; do
      OPENBLAS_NUM_THREADS=1 "$STEP" --backend "$be" --hidden $h --batch $b --steps 50 --warmup 5
    done
    for dev in $TORCH; do
      if [ "$dev" = cpu ]; then
        python3 "$(dirname "$0")/torch_mlp_step.py" cpu $h $b 1
      else
        python3 "$(dirname "$0")/torch_mlp_step.py" "$dev" $h $b
      fi
    done
  done
done
