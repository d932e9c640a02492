#!/bin/sh
# PyTorch's own distributed suite (distributed_test.py, Debian's torch
# 1.13) against rlx, through tests/python/torch_suite.py: every group
# created as rlx while the suite's own checks see "gloo", so it runs what it
# runs for Gloo. Here a subset on 3 ranks (one test of each kind the
# backend added for the suite: messages, gather/scatter, coalesced and
# sparse calls, subgroups, object collectives, timeouts); each must pass,
# none may fail or err. bench/torch_suite.sh runs the whole suite beside
# Gloo at 2 and 3 ranks (README, "PyTorch's own test suite").
. "$(dirname "$0")/lib.sh"
py_stage numpy torch
TESTS_CI="test_send_recv_any_source test_send_recv_with_tag test_batch_isend_irecv_gloo_tags
test_gather_group test_scatter_group test_all_gather_coalesced_group
test_all_reduce_coalesced_group_max test_sparse_all_reduce_sum test_barrier_timeout_full_group
test_all_reduce_group_sum test_all_gather_object_subgroup test_scatter_object_list"
want=$(echo $TESTS_CI | wc -w)
args=
for t in $TESTS_CI; do args="$args -k $t"; done
TEMP_DIR="$TMP" timeout 600 "$PYTHON" "$PYTESTS/torch_suite.py" --exact -n 3 $args >"$TMP/out" 2>"$TMP/err"
summary=$(tail -1 "$TMP/out")
echo "$summary"
case "$summary" in
  "torch_suite: backend rlx as gloo, n=3: $want passed, 0 failed, 0 errors, 0 skipped") ;;
  *) cat "$TMP/out"; grep -v "^INFO:" "$TMP/err" | tail -60; fail "torch's suite: not all $want passed" ;;
esac
echo "python torch suite: ok"
