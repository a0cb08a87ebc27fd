#!/bin/bash
# Issue 26: the Smith-Waterman work's whole device call (METHOD.md: one script that checks and times
# everything in one lease). From the repository root, with seqsift importable, .gasal2 carried (see
# gasal2_device.sh; without it the GASAL2 record is skipped):
#   OUT=DIR bash benchmarks/run_sw_device.sh
# 1. GASAL2 built in the background; 2. bench_sw_affine.py's kernels, threshold and q-gram sections;
# 3. the end-to-end screen (bench_screen_e2e.py) three times, the first filling CuPy's kernel cache on a
# fresh host; 4. the peers (parasail, GASAL2); 5. the GPU tests of the SW kernels (SW_TESTS=0: none).
# Each step has its own time limit; all write under $OUT. The device tool brings back only a few files of
# its own $OUT, so there run it as  OUT=/tmp/sw PACK=$OUT/sw.tgz bash benchmarks/run_sw_device.sh  (PACK: one
# archive of everything under OUT) and unpack it here. Then, here:
#   python benchmarks/sw_gpu_results.py --kernels $OUT/sw_affine.json --e2e $OUT/screen_e2e_3.json \
#       --peers $OUT/peers/sw_affine.json --sass ... --issue ...   (the counts of sw_sass.py)
set -o pipefail
OUT=${OUT:-/tmp/sw-device}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
step() {   # step NAME SECONDS COMMAND...
    local name=$1 limit=$2; shift 2
    local began=$SECONDS
    timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
    local code=$?
    STEPS="$STEPS
== $name: exit $code in $((SECONDS - began)) s"
}
[ -d .gasal2 ] && (bash benchmarks/gasal2_device.sh > "$OUT/gasal2_build.log" 2>&1) &
build=$!
step kernels "${SW_KERNEL_S:-200}" python benchmarks/bench_sw_affine.py --out "$OUT" \
    --sections kernels,threshold,qgram --repeats 7
for run in 1 2 3; do
    step "e2e_$run" "${SW_E2E_S:-100}" python benchmarks/bench_screen_e2e.py --out /tmp/e2e --kernel-reads 10000
    cp /tmp/e2e/screen_e2e.json "$OUT/screen_e2e_$run.json" 2>/dev/null
done
wait $build
gasal2=$(tail -1 "$OUT/gasal2_build.log" 2>/dev/null)
[ -x "$gasal2" ] || gasal2=
step peers "${SW_PEERS_S:-150}" python benchmarks/bench_sw_affine.py --out "$OUT/peers" --sections parasail,gasal2 \
    ${gasal2:+--gasal2 "$gasal2"} --gasal2-pairs 32768
[ "${SW_TESTS:-1}" = 1 ] && step tests "${SW_TEST_S:-330}" python -m pytest -q -m gpu -p no:cacheprovider \
    tests/test_gpu_sw.py tests/test_gpu_sw_affine.py tests/test_gpu_sw_qgram.py tests/test_gpu_sw_half.py
tail -3 "$OUT/tests.log" 2>/dev/null
grep -hE "cells|differ|GASAL2|seqsift /|failed|e2e|kernel alone" "$OUT"/kernels.log "$OUT"/e2e_*.log "$OUT"/peers.log | cut -c1-220
echo "$STEPS"
if [ -n "${PACK:-}" ]; then tar -C "$OUT" -czf "$PACK" .; fi
