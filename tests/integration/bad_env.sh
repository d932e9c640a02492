#!/bin/sh
# A bad RLX_* value makes rlx_init fail with a message naming the variable.
. "$(dirname "$0")/lib.sh"
check() {
  var=$1; val=$2
  env "$var=$val" timeout 10 "$HELLO" >"$TMP/out" 2>&1 && fail "$var=$val accepted"
  grep -q "$var" "$TMP/out" || { cat "$TMP/out"; fail "$var=$val: message does not name $var"; }
  echo "$var=$val: $(cat "$TMP/out")"
}
check RLX_TIMEOUT abc
check RLX_INIT_TIMEOUT -1
check RLX_TRANSPORT carrier-pigeon
check RLX_ALLREDUCE_ALGO magic
check RLX_LOG loud
check RLX_SPIN_US -3
check RLX_CMA_HOLD_MS 1.5
check RLX_CMA_HOLD_MS 3600001
check RLX_PROGRESS_BIND core
check RLX_WIRE f8
check RLX_SHM_COLL yes
check RLX_SHRINK_QUORUM most
check RLX_BCAST_ALGO ring
check RLX_ALLGATHER_ALGO binomial
check RLX_RANK 5
# Set but empty is a bad value too (rlxrun never passes one).
check RLX_TIMEOUT ""
check RLX_MAX_NP ""
check RLX_JOIN ""
# A job of one opens no listener, but RLX_IFACE is checked all the same:
# alone, and from rlxrun (which gives it a rendezvous).
check RLX_IFACE nonexistent0
RLX_IFACE=nonexistent0 timeout 20 "$RLXRUN" -n 1 "$HELLO" >"$TMP/out" 2>&1 && fail "rlxrun -n 1: RLX_IFACE=nonexistent0 accepted"
grep -q 'RLX_IFACE="nonexistent0" matches no interface' "$TMP/out" || { cat "$TMP/out"; fail "rlxrun -n 1: RLX_IFACE"; }
RLX_RANK=0 RLX_SIZE=2 RLX_RENDEZVOUS=127.0.0.1:1 timeout 10 "$HELLO" >"$TMP/out" 2>&1 && fail "no job key accepted"
grep -q RLX_JOB_KEY "$TMP/out" || fail "missing RLX_JOB_KEY not named"
# A bad device is refused by librlxcompute, and its detail reaches
# rlx_errmsg() in a program that links both libraries (one shared buffer).
RLX_DEVICE=abacus timeout 30 "$TRAIN" --steps 1 >"$TMP/out" 2>&1 && fail "RLX_DEVICE=abacus accepted"
grep -q "device 'abacus' is not one of auto, cpu, gpu, opencl" "$TMP/out" ||
  { cat "$TMP/out"; fail "RLX_DEVICE=abacus: librlxcompute's detail lost"; }
echo "RLX_DEVICE=abacus: $(tail -1 "$TMP/out")"
echo "bad environment: ok"
