#!/bin/sh
# A running job grows (rlxrun --max-np, rlx_comm_grow, rlxrun --join):
#  1. 2 ranks grow to 4; one is killed and the survivors shrink to 3; one
#     joins again: every collective right at each size (grow_check);
#     1b. a job of one rank grows to 2, in its segment taken over;
#  2. a joiner stopped and then killed while the job admits it: the job
#     goes on meanwhile (no grow waits for it), leaves it out alike on
#     every rank and takes the next one;
#  3. a member stopped and then killed while the others are in
#     rlx_comm_grow: every survivor's grow fails naming it, they shrink,
#     and the joiners (given back to the rendezvous) are admitted after;
#     3b. a member killed between the admission's halves: the survivors
#     shrink and the admission ends on the shrunk communicator;
#  4. two groups of joiners back to back: 2 -> 6;
#  5. a wrong key, a job that does not grow, a bad RLX_JOIN: refused,
#     named, and the job goes on;
#  6. by hand (RLX_MAX_NP, RLX_JOIN=1, rank 0 hosting the rendezvous).
. "$(dirname "$0")/lib.sh"
GROW="$top_builddir/tests/integration/grow_check"
export TMPDIR="$TMP"

# start_job N PLAN [rlxrun flags]: the job in the background, its output in
# $TMP/job; sets JOB (rlxrun's pid) and JOINFILE.
start_job() {
  n=$1 plan=$2
  shift 2
  # (removed first: the shell goes on before the child truncates it, and
  # join_file must not read an earlier case's address there)
  rm -f "$TMP/job"
  timeout 90 "$RLXRUN" -n "$n" --enable-recovery --max-np 8 "$@" "$GROW" "$plan" >"$TMP/job" 2>&1 &
  JOB=$!
  JOINFILE=$(join_file "$TMP/job" 10) || exit 1
}

# join K PLAN OUT: K joiners in the background.
join() {
  rm -f "$3"
  timeout 90 "$RLXRUN" --join "$JOINFILE" -n "$1" "$GROW" "$2" >"$3" 2>&1 &
}

passes() { grep -c "grow_check: rank [0-9]*: PASS at size $2" "$1"; }

# join_stopped GO CASE: one joiner of $PLAN (which begins wait=GO) in the
# background, output in $TMP/j1, stopped (SIGSTOP) while it waits at the
# rendezvous; then the members go on (GO is made). Sets jpid.
join_stopped() {
  join 1 "$PLAN" "$TMP/j1"
  wait_for "$TMP/job" "asks to join" 1
  sleep 0.3
  jpid=$(pgrep -f "grow_check wait=$1" | while read p; do
    grep -q RLX_JOIN=1 /proc/$p/environ 2>/dev/null && echo $p; done | head -1)
  [ -n "$jpid" ] || fail "$2: no joiner process"
  kill -STOP "$jpid"
  touch "$1"
}

# all_pass CASE SIZE M J: the job ends well; M of its ranks and J joiners
# ($TMP/j1 and $TMP/j2, then in $TMP/joiners) passed at SIZE.
all_pass() {
  wait $JOB || { cat "$TMP/job" "$TMP/j1" "$TMP/j2"; fail "$1: the job exited $?"; }
  sleep 0.5
  cat "$TMP/j1" "$TMP/j2" >"$TMP/joiners"
  [ "$(passes "$TMP/job" $2)" = $3 ] && [ "$(passes "$TMP/joiners" $2)" = $4 ] ||
    { cat "$TMP/job" "$TMP/joiners"; fail "$1: not every rank passed at size $2"; }
}

pid_of() { # pid_of FILE RANK: the pid rank RANK of the job printed
  sed -n "s/^\[$2\] grow_check: rank $2 (pid \([0-9]*\))/\1/p" "$1"
}

# ---- 1. 2 -> 4, kill one -> 3, one joins -> 4
PLAN="grow=4,kill=1,grow=4"
export RLX_LOG=info # (where each communicator's collectives run)
start_job 2 "$PLAN"
join 2 "$PLAN" "$TMP/j1"
wait_for "$TMP/job" "size 3: collectives right" 1
join 1 "$PLAN" "$TMP/j2"
all_pass 1 4 1 3
for s in 2 4 3; do
  grep -q "rank 0: size $s: collectives right" "$TMP/job" || { cat "$TMP/job"; fail "1: no size $s"; }
done
# the two joiners follow the members: ranks 2 and 3 (admitted together, or
# one at a time when the second reached the rendezvous a grow later)
grep -q "joined as rank 2 of [34]" "$TMP/j1" && grep -q "joined as rank 3 of 4" "$TMP/j1" ||
  { cat "$TMP/job" "$TMP/j1"; fail "1: joiners do not follow the members"; }
grep -q "joined as rank 3 of 4" "$TMP/j2" || { cat "$TMP/j2"; fail "1: the last joiner is not rank 3 of 4"; }
# each grown communicator took over the segment of the one it grew from:
# the members kept theirs (both at the first growth, from the world's; the
# survivors at the last, from the shrunk one's), and the joiners mapped it
[ "$(grep -c 'shared segment of communicator [0-9]* (taken over)' "$TMP/job")" -ge 3 ] &&
  grep -q "collectives in the job's shared segment (taken over)" "$TMP/j1" &&
  grep -q "collectives in the job's shared segment (taken over)" "$TMP/j2" ||
  { cat "$TMP/job" "$TMP/j1" "$TMP/j2"; fail "1: a grown communicator did not take the segment over"; }
# the members' 2-rank segment made its slots at once (large allreduces run
# point to point at 2 ranks: the grown communicator's first would fault
# them in, in the admission's step)
[ "$(grep -c 'communicator 0: 2 ranks, collectives in shared memory; its slots and result made' "$TMP/job")" = 2 ] ||
  { cat "$TMP/job"; fail "1: the 2-rank segment's slots were not made at its set-up"; }
# and members and joiners finalized together, on the grown communicator
# (before: the members on the world, the joiners waiting for them until
# they left, "lost rank N during rlx_finalize()")
! grep -h "during rlx_finalize" "$TMP/job" "$TMP/j1" "$TMP/j2" ||
  { cat "$TMP/job" "$TMP/j1" "$TMP/j2"; fail "1: members and joiners did not finalize together"; }
unset RLX_LOG
echo "1. 2 -> 4 -> 3 -> 4: every collective right at each size, in the segment taken over; $(grep -m1 -o 'joined as rank 3 of 4 after [0-9.]* s' "$TMP/j2")"

# ---- 1b. a job of one rank grows to 2: its segment, made at rlx_init for
# the joiner (a one-rank job's own calls never use it), is taken over
PLAN="grow=2"
export RLX_LOG=info
start_job 1 "$PLAN"
join 1 "$PLAN" "$TMP/j1"
: >"$TMP/j2"
all_pass 1b 2 1 1
grep -q "communicator 0: 1 rank, a shared segment for up to 8 ready for joiners" "$TMP/job" &&
  grep -q 'communicator [0-9]*: 2 ranks, collectives in the shared segment of communicator [0-9]* (taken over)' "$TMP/job" &&
  grep -q "collectives in the job's shared segment (taken over)" "$TMP/j1" ||
  { cat "$TMP/job" "$TMP/j1"; fail "1b: 1 -> 2 did not take the one-rank job's segment over"; }
# and both sides' scratch was made at rlx_init (the 2-rank ring's first
# large allreduce would fault a fresh one in, in the admission's step):
# the member's world, handed on by each grow, and the joiner's world
grep -q "communicator 0: its calls' scratch, 2048 KiB, made at rlx_init" "$TMP/job" &&
  grep -q "communicator [0-9]*: its calls' scratch, 2048 KiB, made at rlx_init" "$TMP/j1" ||
  { cat "$TMP/job" "$TMP/j1"; fail "1b: no scratch made at rlx_init"; }
unset RLX_LOG
echo "1b. 1 -> 2: every collective right, in the one-rank job's segment taken over"

# ---- 2. a joiner dies while the job admits it
PLAN="wait=$TMP/go2,grow=3"
export RLX_LOG=warn # (the members say whom they left out)
start_job 2 "$PLAN"
join_stopped "$TMP/go2" 2
sleep 1.5
kill -9 "$jpid"
t0=$(date +%s.%N)
join 1 "$PLAN" "$TMP/j2"
wait $JOB || { cat "$TMP/job" "$TMP/j2"; fail "2: the job exited $?"; }
sleep 0.5
[ "$(passes "$TMP/job" 3)" = 2 ] && [ "$(passes "$TMP/j2" 3)" = 1 ] ||
  { cat "$TMP/job" "$TMP/j2"; fail "2: not every rank passed at size 3"; }
# the job went on while the joiner was stopped: no grow call waited for it
! grep -q "rlx_comm_grow took" "$TMP/job" || { cat "$TMP/job"; fail "2: a grow waited on the stopped joiner"; }
[ "$(grep -c '1 of 1 joining rank(s) left out: lost during their admission' "$TMP/job")" = 2 ] ||
  { cat "$TMP/job"; fail "2: the killed joiner was not left out on both members"; }
unset RLX_LOG
echo "2. a joiner stopped, then killed during its admission: the job went on meanwhile, left it out alike, and admitted the next one"

# ---- 3. a member dies while the others are in rlx_comm_grow
PLAN="wait=$TMP/go3,grow=4"
start_job 3 "$PLAN"
wait_for "$TMP/job" "rank 2 (pid" 1
join 2 "$PLAN" "$TMP/j1"
wait_for "$TMP/job" "asks to join" 2
mpid=$(pid_of "$TMP/job" 2)
[ -n "$mpid" ] || { cat "$TMP/job"; fail "3: no pid for rank 2"; }
kill -STOP "$mpid"
touch "$TMP/go3"
sleep 1
kill -9 "$mpid"
wait $JOB || { cat "$TMP/job" "$TMP/j1"; fail "3: the job exited $?"; }
sleep 0.5
[ "$(passes "$TMP/job" 4)" = 2 ] && [ "$(passes "$TMP/j1" 4)" = 2 ] ||
  { cat "$TMP/job" "$TMP/j1"; fail "3: not every survivor passed at size 4"; }
[ "$(grep -c 'rlx_comm_grow: peer lost: .*lost rank 2 during rlx_comm_grow.*; shrinking' "$TMP/job")" = 2 ] ||
  { cat "$TMP/job"; fail "3: the members' grow did not fail naming rank 2"; }
echo "3. a member killed during rlx_comm_grow: both survivors' grow failed naming it; shrunk to 2, then 2 joiners admitted: 4"

# ---- 3b. a member dies between the admission's halves: a joiner stopped
# before it could connect keeps the admission open while the job goes on;
# a member is killed; the survivors shrink, and when the joiner goes on,
# the admission ends on the shrunk communicator (3 - 1 + 1), then another
# joiner makes it 4
PLAN="wait=$TMP/go3b,grow=4"
start_job 3 "$PLAN"
wait_for "$TMP/job" "rank 2 (pid" 1
join_stopped "$TMP/go3b" 3b
wait_for "$TMP/job" "admitted (generation 1)" 1
sleep 0.5
mpid=$(pid_of "$TMP/job" 2)
[ -n "$mpid" ] || { cat "$TMP/job"; fail "3b: no pid for rank 2"; }
kill -9 "$mpid"
wait_for "$TMP/job" "; shrinking" 2
kill -CONT "$jpid"
wait_for "$TMP/j1" "joined as rank 2 of 3" 1 ||
  { cat "$TMP/job" "$TMP/j1"; fail "3b: the joiner was not admitted into the shrunk job"; }
join 1 "$PLAN" "$TMP/j2"
all_pass 3b 4 2 2
echo "3b. a member killed between the halves: the survivors shrank, the stopped joiner's admission ended on them (3 of 3), the next made 4"

# ---- 4. two groups back to back
PLAN="grow=6"
start_job 2 "$PLAN"
join 2 "$PLAN" "$TMP/j1"
wait_for "$TMP/job" "admitted (generation 1)" 1
join 2 "$PLAN" "$TMP/j2"
all_pass 4 6 2 4
echo "4. two groups back to back: 2 -> 6 ($(grep -c 'admitted (generation' "$TMP/job") admission(s))"

# ---- 5. refused: a wrong key; a job that does not grow; bad settings
PLAN="wait=$TMP/go5,grow=3"
start_job 2 "$PLAN"
addr=$(head -1 "$JOINFILE")
RLX_JOIN=1 RLX_RENDEZVOUS=$addr RLX_JOB_KEY=wrong RLX_INIT_TIMEOUT=5 timeout 30 "$GROW" grow=3 >"$TMP/bad" 2>&1 &&
  fail "5: a joiner with a wrong key got in"
grep -q "rlx_init: authentication failed: joining rank: .*wrong job key" "$TMP/bad" ||
  { cat "$TMP/bad"; fail "5: the wrong key was not named"; }
join 1 "$PLAN" "$TMP/j1"
wait_for "$TMP/job" "asks to join" 1
touch "$TMP/go5"
wait $JOB || { cat "$TMP/job" "$TMP/j1"; fail "5: the job exited $?"; }
grep -q "rendezvous: dropped connection from 127.0.0.1: closed in the handshake.*wrong job key" "$TMP/job" ||
  { cat "$TMP/job"; fail "5: the job's rlxrun did not log the stranger"; }
echo "   the job's rlxrun: $(grep -m1 'rendezvous: dropped connection' "$TMP/job")"
[ "$(passes "$TMP/job" 3)" = 2 ] || { cat "$TMP/job"; fail "5: the job did not go on after the stranger"; }
RLX_JOIN=1 RLX_RANK=0 RLX_RENDEZVOUS=127.0.0.1:1 RLX_JOB_KEY=k "$GROW" grow=3 >"$TMP/bad" 2>&1
grep -q "RLX_JOIN=1 with RLX_RANK set" "$TMP/bad" || { cat "$TMP/bad"; fail "5: RLX_JOIN with RLX_RANK"; }
RLX_JOIN=yes RLX_RENDEZVOUS=127.0.0.1:1 RLX_JOB_KEY=k "$GROW" grow=3 >"$TMP/bad" 2>&1
grep -q 'RLX_JOIN="yes" is not valid' "$TMP/bad" || { cat "$TMP/bad"; fail "5: a bad RLX_JOIN"; }
RLX_RANK=0 RLX_SIZE=2 RLX_MAX_NP=1 RLX_RENDEZVOUS=127.0.0.1:1 RLX_JOB_KEY=k "$GROW" grow=3 >"$TMP/bad" 2>&1
grep -q 'RLX_MAX_NP="1" is not valid: at least RLX_SIZE' "$TMP/bad" || { cat "$TMP/bad"; fail "5: RLX_MAX_NP < RLX_SIZE"; }
"$RLXRUN" -n 3 --max-np 2 "$GROW" x >"$TMP/bad" 2>&1 && fail "5: --max-np below -n"
grep -q "max-np 2 is less than -n 3" "$TMP/bad" || fail "5: --max-np below -n not named"
echo "5. a wrong key refused and logged while the job went on; bad settings named"

# ---- 6. by hand: rank 0 hosts the rendezvous
port=$(free_port)
for r in 0 1; do
  RLX_RANK=$r RLX_SIZE=2 RLX_MAX_NP=3 RLX_RENDEZVOUS=127.0.0.1:$port RLX_JOB_KEY=hand \
    timeout 60 "$GROW" grow=3 >"$TMP/h$r" 2>&1 &
done
RLX_JOIN=1 RLX_RENDEZVOUS=127.0.0.1:$port RLX_JOB_KEY=hand timeout 60 "$GROW" grow=3 >"$TMP/h2" 2>&1 ||
  { cat "$TMP/h0" "$TMP/h2"; fail "6: the joiner by hand failed"; }
wait
for r in 0 1 2; do
  grep -q "PASS at size 3" "$TMP/h$r" || { cat "$TMP/h$r"; fail "6: rank $r by hand"; }
done
echo "6. by hand: 2 -> 3"
# a job that does not grow refuses a joiner with the right key, saying why
port=$(free_port)
for r in 0 1; do
  RLX_RANK=$r RLX_SIZE=2 RLX_RENDEZVOUS=127.0.0.1:$port RLX_JOB_KEY=hand \
    timeout 60 "$GROW" "wait=$TMP/go6" >"$TMP/h$r" 2>&1 &
done
RLX_JOIN=1 RLX_RENDEZVOUS=127.0.0.1:$port RLX_JOB_KEY=hand timeout 60 "$GROW" grow=3 >"$TMP/bad" 2>&1 &&
  fail "6: a job without RLX_MAX_NP took a joiner"
touch "$TMP/go6"
wait
grep -q "rlx_init: bootstrap failed: joining rank: the rendezvous refused this rank: the job does not take new ranks" "$TMP/bad" ||
  { cat "$TMP/bad"; fail "6: refused without the reason"; }
for r in 0 1; do
  grep -q "PASS at size 2" "$TMP/h$r" || { cat "$TMP/h$r"; fail "6: rank $r of the job that does not grow"; }
done
echo "   a job without RLX_MAX_NP: $(grep -o 'the rendezvous refused.*' "$TMP/bad")"
echo "grow: ok"
