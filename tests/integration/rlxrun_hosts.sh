#!/bin/sh
# rlxrun's host list: local names start here, bad lists and hostfiles are
# usage errors that say what is wrong, and remote ranks get the job key on
# stdin, never on a command line (RLX_RSH replaced by a recorder that runs
# the command here).
. "$(dirname "$0")/lib.sh"
# Local names need no ssh.
timeout 60 "$RLXRUN" --host localhost:2,127.0.0.1 -n 3 "$HELLO" >"$TMP/out" 2>&1 ||
  { cat "$TMP/out"; fail "--host localhost:2,127.0.0.1"; }
grep -q "sum of ranks = 3$" "$TMP/out" || fail "local hosts result"
# usage_error ARGS... PATTERN: exit 2 and the message.
usage_error() {
  pat=$1
  shift
  timeout 20 "$RLXRUN" "$@" "$HELLO" >"$TMP/out" 2>&1
  rc=$?
  [ $rc = 2 ] || { cat "$TMP/out"; fail "rlxrun $*: exit $rc, want 2"; }
  grep -q "$pat" "$TMP/out" || { cat "$TMP/out"; fail "rlxrun $*: no '$pat'"; }
}
usage_error "but the hosts have 3 slot(s)" --host a:2,b -n 4
usage_error "slots after ':' must be a number" --host a:x -n 1
usage_error "0 slots for a; want 1 to 4096" --host a:0 -n 1
usage_error "is not a host name" --host 'a b' -n 1
usage_error "hostfile $TMP/none: No such file" --hostfile "$TMP/none" -n 1
printf '# two nodes\nn1 slots=2\nn2 slots=two\n' >"$TMP/hf"
usage_error "$TMP/hf:3: 'slots=two' is not slots=N" --hostfile "$TMP/hf" -n 1
printf '# nothing\n\n' >"$TMP/hf"
usage_error "names no host" --hostfile "$TMP/hf" -n 1
# Every option's value is checked and named (long options with one dash
# or two, values as the next word or after '=').
usage_error 'rlxrun: -n "zero": expected a rank count' -np zero
usage_error 'rlxrun: --grace "abc": expected seconds' -n 1 --grace=abc
usage_error 'rlxrun: --timeout "-1": expected seconds' -n 1 -timeout -1
usage_error 'rlxrun: --bind-to "socket": expected core, numa or none' --bind-to=socket -n 1
usage_error 'rlxrun: -x "=v": expected VAR or VAR=VALUE' -x =v -n 1
usage_error 'rlxrun: unknown option "--frobnicate"' --frobnicate -n 1
usage_error 'rlxrun: --max-np 1 is less than -n 2' --max-np=1 -n 2
timeout 20 "$RLXRUN" -n 1 --bind-to >"$TMP/out" 2>&1
[ $? = 2 ] && grep -q 'rlxrun: --bind-to needs a value' "$TMP/out" || { cat "$TMP/out"; fail "a missing value"; }
timeout 20 "$RLXRUN" -np=2 --timeout=20 --no-tag-output "$HELLO" >"$TMP/out" 2>&1 &&
  grep -q "^hello from rank 1 of 2" "$TMP/out" || { cat "$TMP/out"; fail "-np=2 --timeout=20"; }

# Remote ranks through a recording RLX_RSH that runs the command here.
cat >"$TMP/rsh" <<'SH'
#!/bin/sh
host=$1
shift
printf '%s\n' "$host $*" >>"$(dirname "$0")/rsh.log"
exec sh -c "$1"
SH
chmod +x "$TMP/rsh"
printf 'far1 slots=2 max_slots=4\nfar2\n' >"$TMP/hf"
RLX_RSH="$TMP/rsh" timeout 60 "$RLXRUN" --hostfile "$TMP/hf" -n 3 -x RLX_LOG=info "$HELLO" \
  >"$TMP/out" 2>&1 || { cat "$TMP/out" "$TMP/rsh.log"; fail "remote ranks through RLX_RSH"; }
grep -q "sum of ranks = 3$" "$TMP/out" || fail "remote result"
[ "$(grep -c '^far1 ' "$TMP/rsh.log")" = 2 ] || { cat "$TMP/rsh.log"; fail "far1 should start 2 ranks"; }
[ "$(grep -c '^far2 ' "$TMP/rsh.log")" = 1 ] || fail "far2 should start 1 rank"
grep -q "'RLX_RANK=2' 'RLX_SIZE=3' 'RLX_LOCAL_RANK=0' 'RLX_LOCAL_SIZE=1'" "$TMP/rsh.log" ||
  { cat "$TMP/rsh.log"; fail "rank 2's launch variables"; }
grep -q "'RLX_LOG=info'" "$TMP/rsh.log" || fail "-x export not passed"
grep -q "RLX_JOB_KEY=[0-9a-f]" "$TMP/rsh.log" && fail "the job key is on the remote command line"
grep -q "read -r RLX_JOB_KEY" "$TMP/rsh.log" || fail "the key is not read from stdin"
echo "rlxrun hosts: ok"
