#!/bin/bash
# Issue 26, round 2: the Smith-Waterman work's whole device call (METHOD.md: one script that checks and
# times everything in one lease). From the repository root, with seqsift importable:
#   OUT=DIR bash benchmarks/run_sw_device.sh
# 1. the GPU tests of the SW kernels and the screen (pytest -m gpu), 2. bench_sw_affine.py's kernels and
# threshold sections, 3. the end-to-end screen (bench_screen_e2e.py), 4. seqsift bench's screen rows of
# the kernels that changed (the table auto uses). Each step has its own time limit; all write under $OUT.
set -o pipefail
OUT=${OUT:-/tmp/sw-device}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
step() {   # step NAME SECONDS COMMAND...
    local name=$1 limit=$2; shift 2
    local began=$SECONDS
    timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
    local code=$?
    STEPS="$STEPS
== $name: exit $code in $((SECONDS - began)) s"
}
step tests "${SW_TEST_S:-170}" python -m pytest -q -x -m gpu -p no:cacheprovider tests/test_gpu_sw_affine.py
step kernels "${SW_KERNEL_S:-120}" python benchmarks/bench_sw_affine.py --out /tmp/affine \
    --sections kernels,threshold --repeats 7
cp /tmp/affine/sw_affine.json "$OUT/" 2>/dev/null
step e2e "${SW_E2E_S:-150}" python benchmarks/bench_screen_e2e.py --out /tmp/e2e --kernel-reads 10000
cp /tmp/e2e/screen_e2e.json "$OUT/" 2>/dev/null
step table "${SW_TABLE_S:-120}" python benchmarks/bench_sw_affine.py --out /tmp/table --sections table \
    --table-algorithms sw-dpx,sw-dpx-affine
cp /tmp/table/sw_table_rows.json "$OUT/" 2>/dev/null
tail -3 "$OUT/tests.log"; grep -E "cells|failed|differ|e2e|kernel alone" "$OUT/kernels.log" "$OUT/e2e.log" | cut -c1-220
echo "$STEPS"
