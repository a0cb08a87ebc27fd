#!/usr/bin/env bash
# Build Cas-OFFinder 2.4 for the lent GPU machine's GPU (OpenCL on NVIDIA's driver), from files carried
# with the working tree, since that machine reaches no package registry. Prints the binary's path last.
#
# Here, once (a machine with apt; the folder is git-ignored through .git/info/exclude):
#   echo /.casoffinder/ >> .git/info/exclude
#   mkdir -p .casoffinder/debs && (cd .casoffinder/debs &&
#     apt-get download ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers opencl-clhpp-headers)
#   mkdir -p .casoffinder/src && git -C "$(search tool's fetch of github:snugel/cas-offinder)" archive release |
#     tar -x -C .casoffinder/src
# On the device (carry .casoffinder):
#   cof=$(bash benchmarks/casoffinder_device.sh | tail -1)
#   python benchmarks/bench_real_references.py ... --cas-offinder "$cof" --cas-offinder-device G
#
# The OpenCL loader and headers are unpacked into a prefix of their own (not /), the loader is pointed at
# NVIDIA's OpenCL driver (libnvidia-opencl.so.1, which the driver's libraries hold) through OCL_ICD_VENDORS,
# and Cas-OFFinder is built against them. OPENCL_DRIVER=/path/to/lib.so tests the build with another
# driver (pocl's libpocl.so.2 on a machine without a GPU).
set -euo pipefail
here=${CASOFFINDER_FILES:-.casoffinder}
prefix=${CASOFFINDER_PREFIX:-/tmp/casoffinder-opencl}
build=${CASOFFINDER_BUILD:-/tmp/casoffinder-build}
[ -d "$here/debs" ] && [ -d "$here/src" ] || { echo "no $here/debs or $here/src: see this script's header" >&2; exit 2; }

mkdir -p "$prefix/vendors"
for deb in "$here"/debs/*.deb; do dpkg -x "$deb" "$prefix"; done
libdir=$prefix/usr/lib/x86_64-linux-gnu

driver=${OPENCL_DRIVER:-}
if [ -z "$driver" ]; then
    driver=$(ldconfig -p | awk '/libnvidia-opencl\.so\.1/ {print $NF; exit}')
fi
if [ -z "$driver" ]; then
    driver=$(find /usr/local/nvidia /usr/lib /usr/lib64 -name 'libnvidia-opencl.so.1' 2>/dev/null | head -n 1 || true)
fi
[ -n "$driver" ] || { echo "NVIDIA's OpenCL driver (libnvidia-opencl.so.1) is not on this machine" >&2; exit 3; }
echo "$driver" > "$prefix/vendors/driver.icd"
echo "OpenCL driver: $driver" >&2

rm -rf "$build" && mkdir -p "$build" && cp -r "$here/src/." "$build/"
mkdir -p "$build/build"
(cd "$build/build" &&
    cmake -DCMAKE_POLICY_VERSION_MINIMUM=3.5 -DCMAKE_BUILD_TYPE=Release \
          -DOpenCL_INCLUDE_DIR="$prefix/usr/include" -DOpenCL_LIBRARY="$libdir/libOpenCL.so" .. >&2 &&
    make -j"$(nproc)" >&2)

# A wrapper that sets the loader's environment, so callers run it as the plain binary.
cat > "$build/cas-offinder" <<WRAPPER
#!/usr/bin/env bash
export OCL_ICD_VENDORS="$prefix/vendors" LD_LIBRARY_PATH="$libdir\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
exec "$build/build/cas-offinder" "\$@"
WRAPPER
chmod +x "$build/cas-offinder"
"$build/cas-offinder" 2>&1 | grep -i -A3 "available device" >&2 || true
echo "$build/cas-offinder"
