#!/bin/sh
# tools/rlx-plot draws real runs: an rlx-bench --json sweep beside Open MPI
# (bench/osu_allreduce built with mpicc, run over TCP) as a busbw chart; a
# train --log-json run as loss and accuracy curves; a merged trace as a
# timeline with one lane per rank and one bar per collective. Each SVG is
# parsed as XML and its marks counted against the input; bad input is a
# clear error.
. "$(dirname "$0")/lib.sh"
src=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}

svg_count() { # file xpath-ish: count elements of a tag with a class
  python3 - "$1" "$2" "$3" <<'EOF'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()          # well-formed, or this raises
ns = "{http://www.w3.org/2000/svg}"
tag, cls = sys.argv[2], sys.argv[3]
print(sum(1 for e in root.iter(ns + tag) if cls in ("*", e.get("class"))))
EOF
}

# busbw: rlxcoll, and Open MPI on the same sizes when mpicc is here
timeout 60 "$RLXRUN" --no-tag-output -n 2 "$top_builddir/bench/rlx-bench" -b 8 -e 1048576 -f 4 \
  -n 5 -w 1 --json >"$TMP/rlx.json" 2>"$TMP/err" || { cat "$TMP/err"; fail "rlx-bench"; }
series="rlxcoll=$TMP/rlx.json"
want=1
if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
  mpicc.openmpi -O2 -DUSE_MPI -o "$TMP/osu_mpi" "$src/bench/osu_allreduce.c" || fail "mpicc"
  timeout 120 mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1 --mca btl tcp,self \
    -n 2 "$TMP/osu_mpi" 1048576 >"$TMP/mpi.txt" 2>"$TMP/err" || { cat "$TMP/err"; fail "Open MPI run"; }
  series="$series Open_MPI_TCP=$TMP/mpi.txt"
  want=2
fi
"$PLOT" busbw -o "$TMP/busbw.svg" --nranks 2 $series || fail "rlx-plot busbw"
[ "$(svg_count "$TMP/busbw.svg" polyline series)" -eq $want ] || fail "busbw: expected $want series"
npts=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$TMP/rlx.json")
[ "$(svg_count "$TMP/busbw.svg" circle '*')" -ge "$npts" ] || fail "busbw: points missing"

# curve: 2 short epochs of train
timeout 120 "$RLXRUN" -n 2 "$TRAIN" --synthetic --epochs 2 --train-limit 2048 --batch 32 \
  --backend cpu --log-json "$TMP/log.jsonl" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "train"; }
steps=$(grep -c '"type":"step"' "$TMP/log.jsonl")
[ "$(grep -c '"type":"epoch"' "$TMP/log.jsonl")" -eq 2 ] || fail "train log: not 2 epochs"
[ "$steps" -eq 64 ] || fail "train log: $steps steps, want 2 x 2048 / (32 x 2)"
"$PLOT" curve -o "$TMP/curve.svg" "$TMP/log.jsonl" || fail "rlx-plot curve"
python3 - "$TMP/curve.svg" "$steps" <<'EOF' || fail "curve svg"
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
lines = {e.get("class"): e for e in root.iter(ns + "polyline")}
assert len(lines["steps"].get("points").split()) == int(sys.argv[2]), "one point per step"
assert len(lines["test_acc"].get("points").split()) == 2, "one point per epoch"
EOF

# timeline: a traced scripted job on 4 ranks
timeout 60 "$RLXRUN" -n 4 --trace "$TMP/t.json" "$OBSERVE" script >"$TMP/out" 2>&1 ||
  { cat "$TMP/out"; fail "traced job"; }
"$PLOT" timeline -o "$TMP/t.svg" "$TMP/t.json" >"$TMP/out" || fail "rlx-plot timeline"
cat "$TMP/out"
[ "$(svg_count "$TMP/t.svg" rect call)" -eq 64 ] || fail "timeline: want 16 calls x 4 ranks"
[ "$(svg_count "$TMP/t.svg" rect wait)" -gt 0 ] || fail "timeline: no waits"
for r in 0 1 2 3; do grep -q ">rank $r</text>" "$TMP/t.svg" || fail "timeline: no lane for rank $r"; done
"$PLOT" timeline -o "$TMP/w.svg" --from 0 --to 0.001 "$TMP/t.json" >/dev/null || fail "window"

# bad input: a clear message, non-zero
echo "not json" >"$TMP/bad"
"$PLOT" timeline -o "$TMP/x.svg" "$TMP/bad" 2>"$TMP/err" && fail "bad trace accepted"
grep -q "is not a Chrome trace" "$TMP/err" || fail "no clear timeline error"
"$PLOT" curve -o "$TMP/x.svg" "$TMP/bad" 2>"$TMP/err" && fail "bad log accepted"
grep -q "not a JSON line" "$TMP/err" || fail "no clear curve error"
echo "plots: ok"
