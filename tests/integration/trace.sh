#!/bin/sh
# RLX_TRACE and rlxrun --trace: the merged timeline of a scripted job is
# valid Chrome trace JSON with one track group per rank, every collective of
# the script in order on each rank (ends after starts, no overlap, sequence
# numbers counting up), waits and connection set-up recorded; the per-rank
# parts are gone; RLX_TRACE without rlxrun leaves one valid file per rank;
# a trace file that cannot be written is a clear error from rlx_init.
. "$(dirname "$0")/lib.sh"

check_trace() { # file nranks transport
  python3 - "$@" <<'EOF' || fail "trace $1 is wrong"
import json, sys
path, n, transport = sys.argv[1], int(sys.argv[2]), sys.argv[3]
d = json.load(open(path))            # valid JSON, or this raises
ev = d["traceEvents"]
script = (["rlx_allreduce"] * 8 + ["rlx_bcast"] * 2 + ["rlx_barrier"] * 4 +
          ["rlx_allgather", "rlx_finalize"])
ranks = sorted({e["pid"] for e in ev})
assert ranks == list(range(n)), f"tracks for ranks {ranks}, want 0..{n-1}"
for r in range(n):
    mine = [e for e in ev if e["pid"] == r]
    names = [e["args"]["name"] for e in mine if e["ph"] == "M" and e["name"] == "process_name"]
    assert names == [f"rank {r}"], f"rank {r}: process name {names}"
    calls = sorted((e for e in mine if e["ph"] == "X" and e["cat"] == "collective"),
                   key=lambda e: e["ts"])
    got = [e["name"] for e in calls]
    assert got == script, f"rank {r}: calls {got}"
    seqs = [e["args"]["seq"] for e in calls]
    assert seqs == list(range(len(script))), f"rank {r}: seq {seqs}"
    for a, b in zip(calls, calls[1:]):
        assert a["ts"] + a["dur"] <= b["ts"] + 0.002, f"rank {r}: {a['name']} overlaps the next"
    assert all(e["dur"] >= 0 for e in mine if e["ph"] == "X"), "an end before its start"
    assert all(e["args"]["status"] == "ok" for e in calls)
    algos = {e["args"]["algorithm"] for e in calls}
    want = {"shm"} if transport == "shm" else {"ring", "rabenseifner", "recursive-doubling"}
    assert algos & want, algos
    waits = [e for e in mine if e["ph"] == "X" and e["cat"] == "wait"]
    assert waits, f"rank {r}: no waits recorded"
    for w in waits:  # every wait lies inside a call of the same sequence number
        c = calls[w["args"]["seq"]]
        assert c["ts"] - 0.002 <= w["ts"] and w["ts"] + w["dur"] <= c["ts"] + c["dur"] + 0.002, \
            f"rank {r}: wait {w} outside its call"
    conns = [e for e in mine if e["ph"] == "X" and e["cat"] == "connect"]
    assert conns and all(e["args"]["transport"] == transport for e in conns), \
        f"rank {r}: connections {conns}"
    assert any(e["name"] == "rlx_init" for e in mine), f"rank {r}: no rlx_init span"
print(f"trace ok: {len(ev)} events, {n} ranks, {transport}")
EOF
}

timeout 60 "$RLXRUN" -n 4 --trace "$TMP/job.json" "$OBSERVE" script >"$TMP/out" 2>&1 ||
  { cat "$TMP/out"; fail "traced job failed"; }
cat "$TMP/out"
grep -q "rlxrun: trace: [0-9]* events of 4 rank(s) in $TMP/job.json" "$TMP/out" || fail "no merge line"
check_trace "$TMP/job.json" 4 shm
ls "$TMP"/job.json.* 2>/dev/null && fail "per-rank parts left behind"

RLX_TRANSPORT=tcp timeout 60 "$RLXRUN" -n 3 --trace "$TMP/tcp.json" "$OBSERVE" script \
  >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "traced job over tcp failed"; }
check_trace "$TMP/tcp.json" 3 tcp

# Without rlxrun's merge: a valid file per rank.
RLX_TRACE="$TMP/own" timeout 60 "$RLXRUN" -n 2 "$OBSERVE" script >"$TMP/out" 2>&1 ||
  { cat "$TMP/out"; fail "RLX_TRACE job failed"; }
for r in 0 1; do
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert {e['pid'] for e in d['traceEvents']} == {$r}" \
    "$TMP/own.$r" || fail "RLX_TRACE part $r"
done

# A trace that cannot be written: rlx_init says which file.
RLX_TRACE=/nonexistent/dir/t timeout 30 "$HELLO" >"$TMP/out" 2>&1 && fail "unwritable trace accepted"
cat "$TMP/out"
grep -q "RLX_TRACE: cannot write /nonexistent/dir/t.0" "$TMP/out" || fail "no clear trace error"
echo "trace: ok"
