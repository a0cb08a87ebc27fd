#!/usr/bin/env bash
# Build GASAL2 (github:nahmedraja/GASAL2, 106d94e) on the lent GPU machine, from source carried with the
# working tree, for bench_sw_affine.py --gasal2. Prints the test program's path last.
#
# Here, once (the folder is git-ignored through .git/info/exclude):
#   echo /.gasal2/ >> .git/info/exclude
#   git clone -q "$(search tool's fetch of github:nahmedraja/GASAL2)" .gasal2
# On the device (carry .gasal2):
#   gasal2=$(bash benchmarks/gasal2_device.sh | tail -1)
#   python benchmarks/bench_sw_affine.py --out DIR --sections parasail,gasal2 --gasal2 "$gasal2" --gasal2-pairs 32768
#
# The build is GASAL2's own (configure.sh, make) in a copy, with three changes: -Werror taken out of both
# Makefiles (CUDA 13 warns; "-Xptxas -Werror" as a pair, or -Xptxas would take the next option as its
# argument), the library built for sm_90 with queries of up to 128 bases and N as 0x4E, and the test
# program linked with -lgasal before -lcudart (the linker drops a shared libcudart named before the static
# library that needs it).
set -euo pipefail
here=${GASAL2_FILES:-.gasal2}
build=${GASAL2_BUILD:-/tmp/gasal2-build}
cuda=$(readlink -f "${CUDA_HOME:-/usr/local/cuda}")
[ -f "$here/configure.sh" ] || { echo "no $here/configure.sh: see this script's header" >&2; exit 2; }
rm -rf "$build" && mkdir -p "$build" && cp -r "$here"/. "$build"
cd "$build"
sed -i 's/-Xptxas -Werror//g; s/-Werror//g' Makefile test_prog/Makefile
sed -i 's/-lcudart -lgasal/-lgasal -lcudart/' test_prog/Makefile
./configure.sh "$cuda" > configure.log || { cat configure.log >&2; exit 1; }
make GPU_SM_ARCH=sm_90 MAX_QUERY_LEN=128 N_CODE=0x4E > build.log 2>&1 || { tail -5 build.log >&2; exit 1; }
(cd test_prog && make test_prog.out >> ../build.log 2>&1) || { tail -5 build.log >&2; exit 1; }
echo "$build/test_prog/test_prog.out"
