#!/bin/sh
# A one-node Slurm (munged, slurmctld, slurmd) under a temporary folder:
# srun --mpi=pmix starts ranks that bootstrap through PMIx, and rlxrun
# inside an allocation hands its spawn to srun. Daemons are stopped by PID.
. "$(dirname "$0")/lib.sh"
for p in slurmctld slurmd munged srun salloc sinfo; do
  command -v $p >/dev/null || [ -x /usr/sbin/$p ] ||
    fail "$p missing: apt-get install slurmctld slurmd slurm-client munge"
done
S="$TMP/slurm"
mkdir -p "$S/state" "$S/spool" "$S/tmpfs"
# munged runs as the munge user, who cannot enter $TMP (0700): its own folder.
M=$(mktemp -d /tmp/rlxmunge.XXXXXX)
chown munge:munge "$M"
chmod 711 "$M" # the socket must be reachable by everyone; the key stays 0400
host=$(hostname)
cat >"$S/slurm.conf" <<CONF
ClusterName=rlxtest
SlurmctldHost=$host
SlurmUser=root
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
AuthInfo=socket=$M/munge.socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
MailProg=/bin/true
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
TmpFS=$S/tmpfs
ReturnToService=2
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=10 State=UP
CONF
export SLURM_CONF="$S/slurm.conf"
pids=""
cleanup() {
  for p in $pids; do kill "$p" 2>/dev/null; done
  sleep 0.5
  for p in $pids; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$TMP" "$M"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
# munge: our own key and socket, so a machine's munged is left alone.
dd if=/dev/urandom of="$M/munge.key" bs=1024 count=1 2>/dev/null
chown munge:munge "$M/munge.key"
chmod 400 "$M/munge.key"
runuser -u munge -- /usr/sbin/munged -F --key-file="$M/munge.key" --socket="$M/munge.socket" \
  --pid-file="$M/munged.pid" --log-file="$M/munged.log" --seed-file="$M/seed" \
  2>"$S/munged.err" &
pids="$!"
i=0
until [ -S "$M/munge.socket" ]; do
  i=$((i + 1))
  [ $i -lt 50 ] || { cat "$S/munged.err" "$M/munged.log"; fail "munged did not start"; }
  sleep 0.1
done
/usr/sbin/slurmctld -D -f "$SLURM_CONF" >"$S/ctld.out" 2>&1 &
pids="$pids $!"
/usr/sbin/slurmd -D -f "$SLURM_CONF" >"$S/d.out" 2>&1 &
pids="$pids $!"
i=0
until [ "$(timeout 5 sinfo -h -N -o %T 2>/dev/null)" = idle ]; do
  i=$((i + 1))
  [ $i -lt 100 ] || { cat "$S"/*.log "$S"/*.out "$S/munged.err" 2>/dev/null | tail -30; fail "slurm never came up"; }
  sleep 0.2
done
start=$(date +%s)
echo "srun --mpi=list offers: $(srun --mpi=list 2>&1 | tr '\n' ' ')"

timeout 120 srun --mpi=pmix -n 4 --overcommit "$HELLO" >"$TMP/out" 2>&1 ||
  { cat "$TMP/out"; fail "srun --mpi=pmix -n 4 hello"; }
cat "$TMP/out"
for r in 0 1 2 3; do
  grep -q "hello from rank $r of 4 .*sum of ranks = 6$" "$TMP/out" || fail "srun: rank $r"
done

timeout 120 srun --mpi=pmix -n 4 --overcommit "$TRAIN" --backend cpu --steps 10 --train-limit 4096 \
  --hidden 32 >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "srun --mpi=pmix -n 4 train"; }
grep -q "train: 4 rank(s), leader rank" "$TMP/out" || { cat "$TMP/out"; fail "train under srun"; }
grep -q "stopped after step 10 (--steps)" "$TMP/out" || { cat "$TMP/out"; fail "train steps under srun"; }

timeout 120 salloc -n 4 --overcommit "$RLXRUN" -n 4 "$HELLO" >"$TMP/out" 2>&1 ||
  { cat "$TMP/out"; fail "salloc ... rlxrun -n 4 hello"; }
cat "$TMP/out"
grep -q "rlxrun: inside Slurm job [0-9]*: starting 4 rank(s) with srun" "$TMP/out" ||
  fail "rlxrun did not hand the spawn to srun"
for r in 0 1 2 3; do
  grep -q "hello from rank $r of 4 .*sum of ranks = 6$" "$TMP/out" || fail "salloc rlxrun: rank $r"
done
echo "slurm: srun and salloc+rlxrun in $(( $(date +%s) - start )) s: ok"
