#!/bin/sh
# rlxrun --bind-to / --report-bindings, and the library's own report of
# the binding it finds (RLX_LOG=info).
. "$(dirname "$0")/lib.sh"
cores=$(lstopo-no-graphics --only core 2>/dev/null | wc -l)
[ "$cores" -ge 1 ] || cores=$(nproc)
n=$cores
[ $n -gt 4 ] && n=4
# Ranks fit the cores: bound to one core each by default.
timeout 60 "$RLXRUN" -n $n --report-bindings -x RLX_LOG=info "$HELLO" >"$TMP/out" 2>&1 ||
  { cat "$TMP/out"; fail "bound run"; }
cat "$TMP/out"
for r in $(seq 0 $((n - 1))); do
  grep -q "rlxrun: rank $r bound to core $r: \[" "$TMP/out" || fail "rank $r's binding not reported"
  grep -q "\[$r\] rlxcoll\[$r\] info: rank $r of $n, .*bound to cpus" "$TMP/out" ||
    fail "rank $r does not see its binding"
done
# Oversubscribed: not bound by default.
timeout 60 "$RLXRUN" -n $((cores + 2)) --report-bindings -x RLX_LOG=info "$HELLO" >"$TMP/out" 2>&1 ||
  { cat "$TMP/out"; fail "oversubscribed run"; }
grep -q "rlxrun: rank 0 not bound (--bind-to none)" "$TMP/out" || { cat "$TMP/out"; fail "oversubscribed ranks bound"; }
grep -q "not bound: cpus" "$TMP/out" || fail "library does not report being unbound"
# NUMA nodes, and a bad value.
timeout 60 "$RLXRUN" -n 2 --bind-to numa --report-bindings "$HELLO" >"$TMP/out" 2>&1 ||
  { cat "$TMP/out"; fail "--bind-to numa"; }
grep -q "rlxrun: rank 1 bound to NUMA node [0-9]*: \[" "$TMP/out" || { cat "$TMP/out"; fail "numa report"; }
timeout 20 "$RLXRUN" -n 2 --bind-to socket "$HELLO" >"$TMP/out" 2>&1
[ $? = 2 ] || fail "--bind-to socket accepted"
grep -q 'expected core, numa or none' "$TMP/out" || fail "no clear message for --bind-to socket"
echo "binding: ok"
