#!/bin/bash
# The torch tests on another machine's torch (the lent machine's 2.11,
# Python 3.12), from a build made here: the extension is compiled there
# against that Python; librlxcoll, rlxrun and the Debian libraries they
# need come in a carried folder (DIR/lib: librlxcoll.so.0, libuv, hwloc,
# sodium, isal, pmix with libevent, munge and udev; DIR/bin: rlxrun).
#   bench/torch2_tests.sh [DIR]   (default .devp; results under $OUT)
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
D=$(cd "${1:-.devp}" && pwd)
: "${OUT:=/tmp}"
mkdir -p /tmp/py/rlxcoll
cp python/rlxcoll/__init__.py python/rlxcoll/torch.py /tmp/py/rlxcoll/
gcc -shared -fPIC -O2 $(python3-config --includes) -Iinclude python/rlxcoll/_rlxcoll.c \
  python/rlxcoll/collectives.c \
  -o /tmp/py/rlxcoll/_rlxcoll$(python3-config --extension-suffix) $D/lib/librlxcoll.so.0 \
  -Wl,-rpath,$D/lib || exit 1
export PYTHONPATH=/tmp/py LD_LIBRARY_PATH=$D/lib
python3 -c 'import torch; print("torch", torch.__version__)'
R=$D/bin/rlxrun
st=0
for tr in auto unix tcp; do
  shm=auto; [ $tr = unix ] && shm=off
  RLX_TRANSPORT=$tr RLX_SHM_COLL=$shm RLX_TIMEOUT=3 timeout 120 $R -n 2 python3 tests/python/check_torch_errors.py > $OUT/errors-$tr.txt 2>&1 || st=1
  grep -c "WRONG" $OUT/errors-$tr.txt; grep "PASS\|FAIL" $OUT/errors-$tr.txt
done
for n in 2 4; do timeout 120 $R -n $n python3 tests/python/check_torch.py ops 2>&1 | grep "PASS\|FAIL\|rror" | head -8; done
timeout 120 $R -n 4 python3 tests/python/check_torch.py ddp rlx /tmp/rlx.npy 2>&1 | grep "PASS\|FAIL\|rror" | head
exit $st
