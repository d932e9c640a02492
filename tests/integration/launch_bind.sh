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
# The progress thread (named rlx-progress) runs beside a bound rank's core
# while the host has a free core per local rank with RLX_PROGRESS_BIND=spare,
# on the rank's core with RLX_PROGRESS_BIND=rank (the default): read from
# the threads' own affinity in /proc while the rank sleeps after a call.
progress_cpus() { # $1: RLX_PROGRESS_BIND ("": unset); prints "main=LIST progress=LIST"
  timeout 60 env ${1:+RLX_PROGRESS_BIND=$1} "$RLXRUN" -n 1 -x RLX_LOG=info "$OBSERVE" sleep 4 \
    >"$TMP/out.$1" 2>&1 &
  job=$!
  pid= i=0
  while [ -z "$pid" ] && [ $i -lt 100 ]; do
    grep -q "progress thread" "$TMP/out.$1" && pid=$(pgrep -x observe_check | head -1)
    i=$((i + 1)); sleep 0.1
  done
  [ -n "$pid" ] || { cat "$TMP/out.$1"; fail "RLX_PROGRESS_BIND=$1: no rank to look at"; }
  main=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$pid/status)
  prog=
  for t in /proc/$pid/task/*; do
    [ "$(cat $t/comm)" = rlx-progress ] && prog=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' $t/status)
  done
  wait $job || { cat "$TMP/out.$1"; fail "RLX_PROGRESS_BIND=$1 run"; }
  echo "main=$main progress=$prog"
}
if [ "$cores" -ge 2 ]; then
  got=$(progress_cpus spare)
  echo "RLX_PROGRESS_BIND=spare: $got"
  case "$got" in
  "main=0 progress=1-"*|"main=0 progress=1") ;;
  *) cat "$TMP/out.spare"; fail "the progress thread is not beside rank 0's core 0: $got" ;;
  esac
  grep -q "progress thread on cpus 1, polling while calls are in flight" "$TMP/out.spare" || fail "the placement is not reported"
  got=$(progress_cpus rank)
  echo "RLX_PROGRESS_BIND=rank: $got"
  [ "$got" = "main=0 progress=0" ] || { cat "$TMP/out.rank"; fail "RLX_PROGRESS_BIND=rank: $got"; }
  grep -q "progress thread with the rank" "$TMP/out.rank" || fail "RLX_PROGRESS_BIND=rank not reported"
  got=$(progress_cpus "")
  echo "RLX_PROGRESS_BIND unset: $got"
  [ "$got" = "main=0 progress=0" ] || { cat "$TMP/out."; fail "the progress thread moved by default: $got"; }
fi
# A job that may grow says which cpus its ranks take; a joiner keeps off
# them (bound to the rest, all at once), and is not bound where the job
# takes every core. (The joiner waits for an admission that never comes:
# killed once seen.)
joiner_cpus() { # $1: the job's rank count; prints the joiner's Cpus_allowed_list
  rm -f "$TMP/job.$1" "$TMP/joiner.$1"
  timeout 60 "$RLXRUN" -n $1 --max-np $(($1 + 1)) "$OBSERVE" sleep 6 >"$TMP/job.$1" 2>&1 &
  job=$!
  jf= i=0
  while [ -z "$jf" ] && [ $i -lt 100 ]; do
    jf=$(sed -n 's/.*rlxrun --join \([^ ]*\) -n K.*/\1/p' "$TMP/job.$1"); i=$((i + 1)); sleep 0.1
  done
  [ -n "$jf" ] || { cat "$TMP/job.$1"; fail "no join file from a job of $1"; }
  cp "$jf" "$TMP/joinfile.$1"
  timeout 30 "$RLXRUN" --join "$jf" -n 1 --report-bindings "$HELLO" >"$TMP/joiner.$1" 2>&1 &
  joiner=$!
  pid= i=0
  while [ -z "$pid" ] && [ $i -lt 100 ]; do
    pid=$(pgrep -P $joiner -x hello | head -1)
    [ -z "$pid" ] && pid=$(pgrep -P "$(pgrep -P $joiner | head -1)" -x hello 2>/dev/null | head -1)
    i=$((i + 1)); sleep 0.1
  done
  [ -n "$pid" ] || { cat "$TMP/joiner.$1"; fail "no joiner to look at"; }
  sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$pid/status
  kill $joiner 2>/dev/null; wait $joiner 2>/dev/null
  kill $job 2>/dev/null; wait $job 2>/dev/null
}
if [ "$cores" -ge 2 ] && [ "$(nproc)" = "$cores" ]; then
  got=$(joiner_cpus 1)
  echo "a joiner beside a job of 1: cpus $got"
  grep -qx "cpus 0" "$TMP/joinfile.1" || { cat "$TMP/joinfile.1"; fail "the join file does not say the job takes cpu 0"; }
  [ "$got" = "1-$((cores - 1))" ] || [ "$got" = 1 ] || { cat "$TMP/joiner.1"; fail "the joiner is not off the job's core 0: $got"; }
  grep -q "rlxrun: joining rank 0 bound to the cores the job's ranks do not take: \[\./B" "$TMP/joiner.1" ||
    { cat "$TMP/joiner.1"; fail "the joiner's binding is not reported"; }
  got=$(joiner_cpus $cores)
  echo "a joiner beside a job of $cores: cpus $got"
  [ "$got" = "0-$((cores - 1))" ] || { cat "$TMP/joiner.$cores"; fail "a joiner bound on a full host: $got"; }
  grep -qx "cpus 0-$((cores - 1))" "$TMP/joinfile.$cores" || { cat "$TMP/joinfile.$cores"; fail "the full job's join file"; }
  grep -q "joining rank 0 not bound: the job's ranks take every core" "$TMP/joiner.$cores" ||
    { cat "$TMP/joiner.$cores"; fail "the unbound joiner is not reported"; }
fi
# Ranks that take every core: the progress thread stays with its rank.
timeout 60 env RLX_PROGRESS_BIND=spare "$RLXRUN" -n $cores -x RLX_LOG=info "$HELLO" >"$TMP/out" 2>&1 ||
  { cat "$TMP/out"; fail "full run"; }
grep -q "progress thread with the rank" "$TMP/out" || { cat "$TMP/out"; fail "progress thread moved off a full host"; }
# NUMA nodes, and a bad value.
timeout 60 "$RLXRUN" -n 2 --bind-to numa --report-bindings "$HELLO" >"$TMP/out" 2>&1 ||
  { cat "$TMP/out"; fail "--bind-to numa"; }
grep -q "rlxrun: rank 1 bound to NUMA node [0-9]*: \[" "$TMP/out" || { cat "$TMP/out"; fail "numa report"; }
timeout 20 "$RLXRUN" -n 2 --bind-to socket "$HELLO" >"$TMP/out" 2>&1
[ $? = 2 ] || fail "--bind-to socket accepted"
grep -q 'expected core, numa or none' "$TMP/out" || fail "no clear message for --bind-to socket"
echo "binding: ok"
