#!/bin/sh
# PyTorch's own distributed suite (distributed_test.py's _DistTestBase,
# through tests/python/torch_suite.py) for Gloo and for rlx, side by side:
# each backend's totals, and every test Gloo passes that rlx does not,
# which must be none but the ones torch itself ties to the name "gloo"
# (README, "PyTorch's own test suite"). About 15 minutes per backend and
# size on a 2-core machine.
#   bench/torch_suite.sh [SIZES]   (default "2 3"; build first: make)
# Results: bench/results/torch-suite-<date>.txt. Exit 1 if rlx misses any
# test Gloo passes (other than the six).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/rlxcoll"
ln -s "$top/python/rlxcoll/__init__.py" "$top/python/rlxcoll/torch.py" \
  "$top/python/rlxcoll/.libs/_rlxcoll.so" "$stage/rlxcoll/"
export PYTHONPATH="$stage" LD_LIBRARY_PATH="$top/lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# torch 1.13 ties these six to the name "gloo": dist.monitored_barrier raises
# "monitored_barrier is only implemented for GLOO backend" for any other
# (distributed_c10d.py), and test_get_backend wants get_backend() to be
# "gloo". No third-party backend can pass them.
NAMED="test_monitored_barrier_failure_order test_monitored_barrier_gloo
test_monitored_barrier_gloo_rank_0_timeout test_monitored_barrier_gloo_subgroup
test_monitored_barrier_wait_all_ranks test_get_backend"
out="$here/results/torch-suite-$(date +%Y-%m-%d).txt"
mkdir -p "$here/results"
: >"$out"
bad=0
for n in ${1:-2 3}; do
  for b in gloo rlx; do
    "$PYTHON" "$top/tests/python/torch_suite.py" --backend $b -n $n >"$stage/$b.$n" 2>"$stage/$b.$n.err"
    tail -1 "$stage/$b.$n" | tee -a "$out"
    grep -E '\.\.\. ok$' "$stage/$b.$n" | sed 's/ (.*//' | sort >"$stage/$b.$n.ok"
  done
  missing=$(comm -23 "$stage/gloo.$n.ok" "$stage/rlx.$n.ok")
  for t in $missing; do
    case " $(echo $NAMED) " in
      *" $t "*) echo "n=$n: $t: passes for gloo only (torch ties it to the name gloo)" | tee -a "$out" ;;
      *) echo "n=$n: $t: passes for gloo, NOT for rlx" | tee -a "$out"; bad=1 ;;
    esac
  done
  extra=$(comm -13 "$stage/gloo.$n.ok" "$stage/rlx.$n.ok" | wc -l)
  echo "n=$n: rlx passes every test gloo passes but those above; $extra more than gloo" | tee -a "$out"
  # a test's verdict may come lines after its name (the spawned processes print between)
  for b in gloo rlx; do
    awk '/^test_/ {t = $1} /(ERROR|FAIL)$/ && t {print t; t = ""}' "$stage/$b.$n" | sort -u >"$stage/$b.$n.bad"
  done
  both=$(comm -12 "$stage/gloo.$n.bad" "$stage/rlx.$n.bad" | wc -l)
  echo "n=$n: $both tests fail or err for both (this machine's torch and Python)" | tee -a "$out"
  comm -13 "$stage/gloo.$n.bad" "$stage/rlx.$n.bad" | sed "s/^/n=$n: fails or errs for rlx only: /" | tee -a "$out"
done
exit $bad
