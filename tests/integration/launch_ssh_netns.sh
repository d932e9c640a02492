#!/bin/sh
# Hosts as network namespaces: three namespaces on a bridge (10.99.0.0/24,
# their own hostnames and /etc/hosts), sshd in two of them on keys made
# here, rlxrun started in the third with --host nsa:2,nsb:2. Ranks on one
# host must talk through shared memory and across hosts over TCP (the library's
# own report), results must be right, also with 2% packet loss (nftables)
# and a rate limit (tc tbf). Follows TESTBED.md's SAFETY: a blackhole route
# for the subnet in the root namespace first, clients only inside
# namespaces, everything removed in the trap.
. "$(dirname "$0")/lib.sh"
for c in ip nft tc nsenter unshare ssh ssh-keygen; do
  command -v $c >/dev/null || fail "$c missing: apt-get install iproute2 nftables openssh-server"
done
[ -x /usr/sbin/sshd ] || fail "sshd missing: apt-get install openssh-server"
[ "$(id -u)" = 0 ] || { echo "skipped: needs root for network namespaces"; exit 77; }
NET=10.99.0
P=rlx$$
pids=""
cleanup() {
  for p in $pids; do kill "$p" 2>/dev/null; done
  sleep 0.2
  for p in $pids; do kill -9 "$p" 2>/dev/null; done
  for n in a b c br; do ip netns del $P$n 2>/dev/null; done
  ip route del blackhole $NET.0/24 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
# SAFETY 2: nothing for the test subnet leaves this machine from the root namespace.
ip route add blackhole $NET.0/24 || fail "cannot add the blackhole route for $NET.0/24"

ip netns add ${P}br
ip -n ${P}br link add br0 type bridge
ip -n ${P}br link set br0 up
i=1
for h in a b c; do
  ip netns add $P$h
  ip link add $P$h-p type veth peer name eth0 netns $P$h
  ip link set $P$h-p netns ${P}br
  ip -n ${P}br link set $P$h-p master br0 up
  ip -n $P$h addr add $NET.$i/24 dev eth0
  ip -n $P$h link set eth0 up
  ip -n $P$h link set lo up
  i=$((i + 1))
done
printf '127.0.0.1 localhost\n%s.1 nsa\n%s.2 nsb\n%s.3 nsc\n' $NET $NET $NET >"$TMP/hosts"

# Keys made here; sshd per host on port 2222.
ssh-keygen -q -t ed25519 -N '' -f "$TMP/hostkey" || fail "ssh-keygen"
ssh-keygen -q -t ed25519 -N '' -f "$TMP/userkey" || fail "ssh-keygen"
cp "$TMP/userkey.pub" "$TMP/authorized_keys"
mkdir -p /run/sshd
i=1
for h in a b; do
  cat >"$TMP/sshd_$h" <<CONF
Port 2222
ListenAddress $NET.$i
HostKey $TMP/hostkey
AuthorizedKeysFile $TMP/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
CONF
  nsenter --net=/run/netns/$P$h unshare --uts --mount --propagation private \
    sh -c "hostname ns$h && mount --bind $TMP/hosts /etc/hosts && exec /usr/sbin/sshd -D -e -f $TMP/sshd_$h" \
    2>"$TMP/sshd_$h.log" &
  pids="$pids $!"
  i=$((i + 1))
done
cat >"$TMP/ssh_config" <<CONF
Host *
  Port 2222
  User root
  IdentityFile $TMP/userkey
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
  BatchMode yes
  ConnectTimeout 5
CONF
# in_c CMD: run a shell command as host nsc (its own hostname and hosts file).
in_c() {
  timeout 180 nsenter --net=/run/netns/${P}c unshare --uts --mount --propagation private \
    sh -c "hostname nsc && mount --bind $TMP/hosts /etc/hosts && $1"
}
i=0
until in_c "ssh -F $TMP/ssh_config nsa true && ssh -F $TMP/ssh_config nsb true" 2>/dev/null; do
  i=$((i + 1))
  [ $i -lt 50 ] || { cat "$TMP"/sshd_*.log; fail "sshd in the namespaces never answered"; }
  sleep 0.2
done

start=$(date +%s)
export RLX_RSH="ssh -F $TMP/ssh_config"
printf 'nsa slots=2\nnsb slots=2\n' >"$TMP/hostfile"
HOSTS="--host nsa:2,nsb:2"
run_hello() { # $1: label
  in_c "cd $top_builddir && $RLXRUN $HOSTS -n 4 --timeout 150 -x RLX_LOG=info $HELLO" \
    >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "$1: rlxrun --host nsa:2,nsb:2 hello"; }
  for r in 0 1 2 3; do
    grep -q "hello from rank $r of 4 .*sum of ranks = 6$" "$TMP/out" || { cat "$TMP/out"; fail "$1: rank $r"; }
  done
  # Ranks 0,1 on nsa and 2,3 on nsb: shared memory within a host, TCP across.
  grep -q "^\[0\] .*transports: shm 1; tcp 2,3 (host nsa/" "$TMP/out" || { cat "$TMP/out"; fail "$1: rank 0's transports"; }
  grep -q "^\[3\] .*transports: shm 2; tcp 0,1 (host nsb/" "$TMP/out" || { cat "$TMP/out"; fail "$1: rank 3's transports"; }
  grep -q "^\[2\] .*listening on tcp $NET.2:" "$TMP/out" || { cat "$TMP/out"; fail "$1: rank 2 not on nsb's address"; }
}
run_train() { # $1: label, $2: parameters file
  in_c "cd $top_builddir && $RLXRUN $HOSTS -n 4 --timeout 150 $TRAIN --backend cpu --steps 10 --train-limit 4096 --hidden 64 --dump-params $2" \
    >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "$1: train across hosts"; }
  grep -q "stopped after step 10 (--steps)" "$TMP/out" || { cat "$TMP/out"; fail "$1: train steps"; }
}
run_hello clean
run_train clean "$TMP/p.clean"
# Every collective right across the hosts (shared-memory rings within
# each, TCP between; a communicator across hosts runs point to point).
in_c "cd $top_builddir && $RLXRUN $HOSTS -n 4 --timeout 150 $CHECK --random --counts 0,1,7,1023,65537" \
  >"$TMP/out" 2>&1 || { tail -30 "$TMP/out"; fail "collectives across hosts"; }
grep -q "0 failures in all" "$TMP/out" || { tail -30 "$TMP/out"; fail "collectives across hosts: no summary"; }
echo "clean: hello, train and every collective across 2 hosts in $(( $(date +%s) - start )) s"

# A job on nsa that may grow takes a rank joining from another host (nsc,
# where rlxrun runs): it reaches the rendezvous and the members over TCP.
GROW="$top_builddir/tests/integration/grow_check"
in_c "cd $top_builddir && $RLXRUN --host nsa:2 -n 2 --enable-recovery --max-np 3 --timeout 120 $GROW grow=3" \
  >"$TMP/out" 2>&1 &
job=$!
joinfile=$(join_file "$TMP/out") || exit 1
in_c "cd $top_builddir && RLX_LOG=info $RLXRUN --join $joinfile -n 1 --timeout 120 $GROW grow=3" \
  >"$TMP/joiner" 2>&1 || { cat "$TMP/out" "$TMP/joiner"; fail "join: the joiner from nsc failed"; }
wait $job || { cat "$TMP/out" "$TMP/joiner"; fail "join: the job on nsa failed"; }
[ "$(grep -c 'grow_check: rank [01]: PASS at size 3' "$TMP/out")" = 2 ] &&
  grep -q 'grow_check: rank 2: PASS at size 3' "$TMP/joiner" ||
  { cat "$TMP/out" "$TMP/joiner"; fail "join: not every rank passed at size 3"; }
grep -q "transports: tcp 0,1 (host nsc/" "$TMP/joiner" ||
  { cat "$TMP/joiner"; fail "join: the joiner on nsc did not reach nsa's ranks over TCP"; }
echo "a rank joining from another host (nsc) over TCP: 2 -> 3, every collective right"

# 2% loss on every packet into nsa and nsb, and 100 Mbit/s out of them.
for h in a b; do
  printf 'table inet rlxloss {\n chain input {\n  type filter hook input priority 0;\n  numgen random mod 100 < 2 drop\n }\n}\n' |
    ip netns exec $P$h nft -f - || fail "nft in ns$h"
  tc -n $P$h qdisc add dev eth0 root tbf rate 100mbit burst 64kb latency 100ms || fail "tc in ns$h"
done
start=$(date +%s)
HOSTS="--hostfile $TMP/hostfile"
run_hello impaired
run_train impaired "$TMP/p.lossy"
cmp "$TMP/p.clean" "$TMP/p.lossy" || fail "training across lossy links reached different parameters"
echo "2% loss + 100 Mbit/s: same results, bitwise, in $(( $(date +%s) - start )) s"

# A partition: nsb's link is cut while every rank is alive, sockets open.
# Each side must find the other gone by missing heartbeats (10 s), then
# shrink within its limit (8 s; a blocking connect() to a cut host waited
# out the kernel's SYN retries before, 134.6-135.0 s with RLX_TIMEOUT=20),
# and at most one side goes on (rlx_comm_shrink(3), the quorum): with two
# ranks on each side, the side that still reaches the rendezvous (rlxrun's,
# in nsc) goes on and nsb's stops; with one rank on nsa and two on nsb,
# nsb's majority goes on without the rendezvous and nsa's one stops though
# it reaches it. Both sides of each run are checked; nsb's ranks say so
# once the link is back (their ssh sessions carry it), and everyone leaves
# a mark in a shared directory when done.
FAULT="$top_builddir/tests/integration/fault_check"
# Both jobs run at once, through one cut (most of each is the wait for
# the heartbeats).
# cut_start TAG SPEC N: start fault_check cut on SPEC.
cut_start() {
  mkdir "$TMP/done.$1"
  # (--timeout 90 and up to 40 s to get ready: starting 4 ranks over ssh on
  # a loaded 2-core host took more than 14 s)
  in_c "cd $top_builddir && FAULT_DONE_DIR=$TMP/done.$1 RLX_LOG=info $RLXRUN --host $2 -n $3 --timeout 90 --grace 1 -x FAULT_DONE_DIR $FAULT cut" \
    >"$TMP/out.$1" 2>&1 &
  cut_jobs="$cut_jobs $!"
}
# cut_check TAG SPEC N WINNERS LOSERS LOSER_REASON
cut_check() {
  out="$TMP/out.$1"
  grep -v "^\[[0-9]*\] .*rlxcoll: \(debug\|info\)" "$out" | grep -v "^rlxrun: rendezvous: witnessed" >"$TMP/said"
  for r in $4 $5; do
    grep -q "fault_check: rank $r: PASS" "$out" || { cat "$out"; fail "cut $2: rank $r did not find the other side gone"; }
  done
  awk -v k="${RLX_TEST_TIME_SCALE:-1}" '/fault_check: rank [0-9]: peer lost after/ { split($0, a, "after "); split(a[2], b, " s"); if (b[1] + 0 > 13.0 * k) bad = 1 }
       END { exit bad }' "$out" || { cat "$TMP/said"; fail "cut $2: a rank took more than 13 s to find the partition"; }
  awk -v k="${RLX_TEST_TIME_SCALE:-1}" '/fault_check: rank [0-9]: shrink .* after/ { split($0, a, " after "); split(a[2], b, " s"); if (b[1] + 0 > 11.0 * k) bad = 1 }
       END { exit bad }' "$out" || { cat "$TMP/said"; fail "cut $2: a shrink overran its 8 s limit"; }
  for r in $4; do
    grep -q "fault_check: rank $r: shrink success after [0-9.]* s: this side goes on, $(echo $4 | wc -w) ranks (allreduce: success" "$out" ||
      { cat "$TMP/said"; fail "cut $2: rank $r's side did not go on"; }
  done
  for r in $5; do
    grep -q "fault_check: rank $r: shrink peer lost after [0-9.]* s: rlx_comm_shrink: rank [0-9] reaches $(echo $5 | wc -w) of $3 ranks .*$6.*this side stops" "$out" ||
      { cat "$TMP/said"; fail "cut $2: rank $r's side did not stop naming the partition"; }
  done
  echo "cut $2: ranks $4 go on, $5 stop; $(grep -m1 -o "rank [0-9] reaches .*" "$out" | head -c 200)"
}
cut_jobs=
cut_start a nsa:2,nsb:2 4
cut_start b nsa:1,nsb:2 3
i=0
until [ "$(cat "$TMP/out.a" "$TMP/out.b" | grep -c 'fault_check: rank [0-9]: ready')" = 7 ]; do
  i=$((i + 1))
  [ $i -lt 400 ] || { cat "$TMP/out.a" "$TMP/out.b"; fail "cut: ranks never got ready"; }
  sleep 0.1
done
ip -n ${P}b link set eth0 down
touch "$TMP/done.a/cut" "$TMP/done.b/cut"
i=0
until [ "$(ls "$TMP/done.a" "$TMP/done.b" | grep -c '^done\.')" = 7 ] || [ $i -ge 600 ]; do
  i=$((i + 1))
  sleep 0.1
done
# the link back: nsb's ranks' words come through, and rlxrun ends
ip -n ${P}b link set eth0 up
for j in $cut_jobs; do wait $j; done
cut_check a nsa:2,nsb:2 4 "0 1" "2 3" "cannot reach the rendezvous"
cut_check b nsa:1,nsb:2 3 "1 2" "0" "fewer than half"
echo "ssh across network namespaces: ok"
