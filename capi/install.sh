#!/usr/bin/env bash
# Installs the C ABI into a prefix: the library (also under DOCA's library names), the
# headers, and pkg-config files, so that C code finds it as it finds DOCA:
#
#   capi/install.sh /opt/doca-emu
#   PKG_CONFIG_PATH=/opt/doca-emu/lib/pkgconfig cc app.c $(pkg-config --cflags --libs doca)
#
# --lib DIR installs the libdoca_capi.so already built in DIR instead of building it (release).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lib_dir=""
if [ "${1:-}" = "--lib" ]; then
    lib_dir="$2"
    shift 2
fi
prefix="${1:?usage: capi/install.sh [--lib DIR] PREFIX}"
if [ -z "$lib_dir" ]; then
    (cd "$here/.." && cargo build --release -q -p doca-capi)
    lib_dir="$here/../target/release"
fi
[ -f "$lib_dir/libdoca_capi.so" ] || { echo "no libdoca_capi.so in $lib_dir" >&2; exit 1; }
mkdir -p "$prefix/lib/pkgconfig" "$prefix/include"
prefix="$(cd "$prefix" && pwd)"
cp "$lib_dir/libdoca_capi.so" "$prefix/lib/"
[ -f "$lib_dir/libdoca_capi.a" ] && cp "$lib_dir/libdoca_capi.a" "$prefix/lib/"
# DOCA's library names, for build files that link them by name (the APIs provided so far).
for name in doca_common doca_cc doca_argp doca_comm_channel doca_comch; do
    ln -sf libdoca_capi.so "$prefix/lib/lib$name.so"
done
cp "$here"/include/*.h "$prefix/include/"
for pc in doca doca-common doca-cc doca-argp doca-comm-channel doca-comch; do
    cat > "$prefix/lib/pkgconfig/$pc.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: $pc
Description: DOCA Core and Comm Channel emulated in software (doca-emu C ABI)
Version: 2.6.0
Cflags: -I\${includedir} -DDOCA_ALLOW_EXPERIMENTAL_API
Libs: -L\${libdir} -ldoca_capi -Wl,-rpath,\${libdir}
PC
done
echo "installed into $prefix"
