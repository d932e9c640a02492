# Shared by the integration tests: where the programs are, and helpers.
# Every job runs under `timeout`, so a hang fails the test in bounded time.
set -u
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
RLXRUN="$top_builddir/bin/rlxrun/rlxrun"
CHECK="$top_builddir/tests/integration/coll_check"
HELLO="$top_builddir/examples/hello"
STRANGER="$top_builddir/tests/integration/stranger"
TRAIN="$top_builddir/examples/train"
OBSERVE="$top_builddir/tests/integration/observe_check"
PLOT="${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tools/rlx-plot"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rlxtest.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
unset RLX_RANK RLX_SIZE RLX_LOCAL_RANK RLX_LOCAL_SIZE RLX_RENDEZVOUS RLX_JOB_KEY RLX_LAUNCHER
unset RLX_TRANSPORT RLX_LOG RLX_TIMEOUT RLX_ALLREDUCE_ALGO RLX_TRACE RLX_STATS RLX_FLIGHT RLX_FLIGHT_DUMP
unset RLX_SHM_COLL RLX_BCAST_ALGO RLX_ALLGATHER_ALGO

# coll_check's flags for n ranks: every dtype x op at the 1M+3 count on 3
# ranks (not a power of two: every algorithm's path); elsewhere the big
# count goes with sum for every dtype and every op for float32 (the
# reductions are test_reduce's), and above 4 ranks it is 256K+3 (still
# several by-reference and ring segments). On 2 cores, 5-8 ranks of the
# full matrix took 2-2.5 min each. COLL_FLAGS overrides.
coll_flags() {
  if [ -n "${COLL_FLAGS:-}" ]; then echo "$COLL_FLAGS"
  elif [ "$1" -eq 3 ]; then echo "--random --big-all"
  elif [ "$1" -le 4 ]; then echo "--random"
  else echo "--random --counts 0,1,7,1023,262147"; fi
}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# A free TCP port on loopback (asks the kernel, then releases it).
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# The rlxcoll Python package as it would be installed, from this tree:
# $TMP/py/rlxcoll holds the sources' .py files and the built extension.
# Skips the test (77) when the build has no Python module, or a module
# named in $@ (numpy, torch) is missing.
py_stage() {
  so="$top_builddir/python/rlxcoll/.libs/_rlxcoll.so"
  [ -n "${PYTHON:-}" ] && [ "$PYTHON" != : ] && [ -f "$so" ] ||
    { echo "skipped: built without the Python module (python3-dev)"; exit 77; }
  src=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
  mkdir -p "$TMP/py/rlxcoll"
  ln -sf "$src/python/rlxcoll/__init__.py" "$src/python/rlxcoll/torch.py" "$so" "$TMP/py/rlxcoll/"
  export PYTHONPATH="$TMP/py" LD_LIBRARY_PATH="$top_builddir/lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  for m in "$@"; do
    "$PYTHON" -c "import $m" 2>/dev/null ||
      { echo "skipped: $PYTHON cannot import $m (apt-get install python3-$m)"; exit 77; }
  done
  PYTESTS="$src/tests/python"
}

# wait_for FILE PATTERN [COUNT [SECONDS]]: until COUNT lines of FILE match
# PATTERN (default 1, within 30 s); else FILE's content and a failure.
wait_for() {
  _w=0
  while _c=$(grep -c -- "$2" "$1" 2>/dev/null); [ "${_c:-0}" -lt "${3:-1}" ]; do
    _w=$((_w + 1))
    [ $_w -lt $((${4:-30} * 10)) ] || { cat "$1" >&2; fail "waited ${4:-30} s for '$2' in $1"; }
    sleep 0.1
  done
}

# join_file OUT [SECONDS]: the file a job started with rlxrun --max-np
# names for joiners, once its rlxrun (writing to OUT) said it.
join_file() {
  wait_for "$1" "rlxrun --join .* -n K" 1 "${2:-30}"
  sed -n 's/.*rlxrun --join \([^ ]*\) -n K.*/\1/p' "$1"
}

# params_rel A B TOL: two float32 parameter files of one length whose
# difference's norm is at most TOL of B's norm; prints the count and the
# relative difference.
params_rel() {
  python3 - "$1" "$2" "$3" <<'PY'
import sys, array, math
a, b = (array.array('f', open(f, 'rb').read()) for f in sys.argv[1:3])
assert len(a) == len(b) and len(a) > 0, "lengths %d %d" % (len(a), len(b))
d = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
n = math.sqrt(sum(y * y for y in b))
print("%d parameters, relative difference %.3g" % (len(a), d / n))
sys.exit(0 if d <= float(sys.argv[3]) * n else 1)
PY
}

# params_close A B: two float32 parameter files (train --dump-params) equal
# within 1e-5 relative to the largest; prints the difference.
params_close() {
  python3 - "$1" "$2" <<'PY'
import array, sys
a, b = array.array("f"), array.array("f")
a.frombytes(open(sys.argv[1], "rb").read()); b.frombytes(open(sys.argv[2], "rb").read())
m = max(abs(v) for v in a)
d = max(abs(x - y) for x, y in zip(a, b)) / m
print("%.2e" % d)
sys.exit(0 if len(a) == len(b) and d <= 1e-5 else 1)
PY
}
