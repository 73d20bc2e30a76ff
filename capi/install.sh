#!/usr/bin/env bash
# Installs the C ABI into a prefix laid out as DOCA's install is, so that C code and DOCA's
# own build files find it as they find DOCA:
#
#   capi/install.sh /tmp/doca-emu            (any prefix; /opt/mellanox/doca as root)
#   capi/install.sh --api-level 2.5 /tmp/doca-2.5
#   export PKG_CONFIG_PATH=/tmp/doca-emu/lib/x86_64-linux-gnu/pkgconfig
#   cc app.c $(pkg-config --cflags --libs doca)
#
# What it lays out (<ma> is the multiarch name, e.g. x86_64-linux-gnu):
#   lib/<ma>/libdoca_capi.so                    the library (and libdoca_capi.a when built)
#   lib/<ma>/libdoca_<name>.so.2, .so           DOCA's library names, for each API the library has
#   lib/<ma>/pkgconfig/doca.pc                  one file for all of DOCA (2.5/2.6's way; kept at 2.7+)
#   lib/<ma>/pkgconfig/doca-<name>.pc           API level 2.7+ only: one file per library (doca-common, ...)
#   lib/<ma>/pkgconfig/{host,dpu,any}/*.pc      the same files for one side each (see below)
#   lib/pkgconfig                               a link to lib/<ma>/pkgconfig
#   include/doca_*.h                            the headers
#   include/{host,dpu,any}/doca_build_config.h  the build configuration of each side
#   tools/doca_caps, tools/doca_emu             the emulated machine; the live view of a running one
#   include/doca_emu_api_level.h                the install's API level, fixed (see below)
#   applications/VERSION                        the level's DOCA version, which sample meson files read
#   share/doca-emu/installed                    marks the prefix as ours (a reinstall is allowed)
#
# Sides: a program is built for the host (DOCA_ARCH_HOST) or for the DPU (DOCA_ARCH_DPU), as
# with DOCA's two packages. The .pc files at the top are the host's (as on an x86 host with
# DOCA); lib/<ma>/pkgconfig/dpu/ holds the DPU's, so an unchanged meson project builds the
# DPU program with PKG_CONFIG_PATH=<prefix>/lib/<ma>/pkgconfig/dpu. Or, with any file:
# pkg-config --define-variable=doca_emu_side=dpu. "any" builds a program for neither side
# (DOCA_EMU_SIDE or the first device it opens decides at run time).
#
# A prefix that holds a real DOCA is refused, untouched: a doca_*.h header not written by
# doca-emu, or a libdoca_common.so* that is not a link to our library.
#
# API level: an install serves one DOCA API level, 2.5, 2.6 or 2.7 (2.7 and later: the comch
# names, the per-library .pc files). A few doca_cc functions have the same name and another
# shape in 2.5 (size_t sizes, callbacks taking a size_t length or a bool): the headers of a 2.5
# install declare the 2.5 shapes, routed to the library's <name>_v25 symbols; at 2.6 and 2.7
# they declare 2.6's. --api-level picks it (2.5, 2.6, 2.7; a later version such as 2.9 or 3.3
# means 2.7); the default is the level of the claimed DOCA version (core/DOCA_VERSION). The
# .pc files and applications/VERSION carry the level's version: the claimed version when it is
# of that level, else <major>.<minor>.0 (2.5.0, 2.7.0).
#
# --lib DIR installs the libdoca_capi.so (and doca_caps, doca_emu) already built in DIR (or its parent)
# instead of building them; without it they are built in release mode into cargo's target
# folder (CARGO_TARGET_DIR honoured).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

# The DOCA version this emulator claims (its API: the 2.6 names, with the 2.5 and 2.7+ ones):
# one value, in core/DOCA_VERSION (also what `-v` and doca_caps print).
doca_version="$(tr -d '[:space:]' < "$here/../core/DOCA_VERSION")"

die() { echo "capi/install.sh: $*" >&2; exit 1; }
usage="usage: capi/install.sh [--lib DIR] [--api-level 2.5|2.6|2.7] PREFIX"

lib_dir=""
api_level=""
while [ $# -gt 1 ]; do
    case "$1" in
        --lib) lib_dir="$2"; shift 2 ;;
        --api-level) api_level="$2"; shift 2 ;;
        *) break ;;
    esac
done
[ $# -eq 1 ] || die "$usage"
prefix="$1"
case "$prefix" in -*) die "$usage" ;; esac

# The level of a DOCA version (major.minor[.patch]): 25, 26 or 27 (2.7 and later).
level_of() {
    local major minor
    IFS=. read -r major minor _ <<<"$1"
    [[ "$major" =~ ^[0-9]+$ && "$minor" =~ ^[0-9]+$ ]] || return 1
    if [ "$major" -lt 2 ] || { [ "$major" -eq 2 ] && [ "$minor" -lt 5 ]; }; then
        return 1
    elif [ "$major" -eq 2 ] && [ "$minor" -le 6 ]; then
        echo "2$minor"
    else
        echo 27
    fi
}
claimed_level="$(level_of "$doca_version")" || die "core/DOCA_VERSION ($doca_version) has no API level"
if [ -z "$api_level" ]; then
    level="$claimed_level"
else
    level="$(level_of "$api_level")" || die "--api-level $api_level: not 2.5, 2.6 or 2.7 (or later)"
fi
level_name="${level:0:1}.${level:1:1}"
if [ "$level" = "$claimed_level" ]; then
    level_version="$doca_version"
else
    level_version="$level_name.0"
fi

# Refuse a real DOCA before anything is built or written.
if [ -d "$prefix" ]; then
    for h in "$prefix"/include/doca_*.h; do
        [ -f "$h" ] || continue
        head -n 1 "$h" | grep -q 'doca-emu' \
            || die "$prefix holds a DOCA install ($h is not doca-emu's): refusing to write into it"
    done
    for so in "$prefix"/lib/libdoca_common.so* "$prefix"/lib/*/libdoca_common.so*; do
        [ -e "$so" ] || [ -L "$so" ] || continue
        target="$(readlink -f "$so")"
        [ "$(basename "$target")" = "libdoca_capi.so" ] \
            || die "$prefix holds a DOCA install ($so is not doca-emu's): refusing to write into it"
    done
fi

if [ -z "$lib_dir" ]; then
    # Built here, with cargo's progress shown, into cargo's own target folder (which
    # CARGO_TARGET_DIR may move): the library and the doca_caps and doca_emu tools.
    echo "building the C library, doca_caps and doca_emu (release; the first build takes a few minutes)..." >&2
    (cd "$here/.." && cargo build --release -p doca-capi \
        && cargo build --release -p doca-samples --bin doca_caps \
        && cargo build --release -p doca-emu-tool --bin doca_emu) || die "cargo build failed"
    target_dir="$(cd "$here/.." && cargo metadata --format-version 1 --no-deps \
        | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
    [ -n "$target_dir" ] || target_dir="${CARGO_TARGET_DIR:-$here/../target}"
    lib_dir="$target_dir/release"
fi
[ -f "$lib_dir/libdoca_capi.so" ] || die "no libdoca_capi.so in $lib_dir"

cc="${CC:-cc}"
multiarch="$("$cc" -print-multiarch 2>/dev/null || true)"
[ -n "$multiarch" ] || multiarch="$(uname -m)-linux-gnu"

mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"
libdir="$prefix/lib/$multiarch"
pcdir="$libdir/pkgconfig"
mkdir -p "$libdir" "$pcdir" "$prefix/include" "$prefix/applications" "$prefix/share/doca-emu"

cp "$lib_dir/libdoca_capi.so" "$libdir/"
if [ -f "$lib_dir/libdoca_capi.a" ]; then cp "$lib_dir/libdoca_capi.a" "$libdir/"; fi

# DOCA's library names (soname libdoca_<name>.so.2, and the .so link a linker looks for),
# for each API the library exports: a probe symbol of each.
libs=""
while read -r name pc probe; do
    if grep -qa "$probe" "$libdir/libdoca_capi.so"; then
        ln -sf libdoca_capi.so "$libdir/lib$name.so.2"
        ln -sf "lib$name.so.2" "$libdir/lib$name.so"
        libs="$libs $pc"
    fi
done <<'LIBS'
doca_common doca-common doca_pe_create
doca_argp doca-argp doca_argp_init
doca_cc doca-cc doca_cc_server_create
doca_comm_channel doca-comm-channel doca_comm_channel_ep_create
doca_comch doca-comch doca_cc_server_create
doca_dma doca-dma doca_dma_create
doca_sha doca-sha doca_sha_create
doca_aes_gcm doca-aes-gcm doca_aes_gcm_create
doca_compress doca-compress doca_compress_create
doca_erasure_coding doca-erasure-coding doca_ec_create
doca_rdma doca-rdma doca_rdma_create
LIBS

cp "$here"/include/*.h "$prefix/include/"
# The level, fixed: a program that asks for another one does not build.
awk -v level="$level" -v name="$level_name" '
    /^#ifndef DOCA_EMU_API_LEVEL$/ && !done { skip = 1; next }
    skip && /^#endif$/ {
        skip = 0; done = 1
        print "/* This install'"'"'s level (capi/install.sh --api-level " name "). */"
        print "#if defined(DOCA_EMU_API_LEVEL) && DOCA_EMU_API_LEVEL != " level
        print "#error \"doca-emu: this install declares DOCA API level " name " (DOCA_EMU_API_LEVEL " level "): install another level for another\""
        print "#endif"
        print "#undef DOCA_EMU_API_LEVEL"
        print "#define DOCA_EMU_API_LEVEL " level
        next
    }
    skip { next }
    { print }
    END { if (!done) exit 1 }
' "$here/include/doca_emu_api_level.h" > "$prefix/include/doca_emu_api_level.h" \
    || die "capi/include/doca_emu_api_level.h has no default level block"
for side in host dpu any; do
    mkdir -p "$prefix/include/$side"
    cp "$here/include/$side/doca_build_config.h" "$prefix/include/$side/"
done

# One .pc file: $1 its name, $2 the side it defaults to.
write_pc() {
    cat <<PC
prefix=$prefix
libdir=\${prefix}/lib/$multiarch
includedir=\${prefix}/include
doca_emu_side=$2

Name: $1
Description: DOCA Core and Comm Channel emulated in software (doca-emu C ABI), built for the \${doca_emu_side} side
Version: $level_version
Cflags: -I\${includedir} -I\${includedir}/\${doca_emu_side} -DDOCA_ALLOW_EXPERIMENTAL_API
Libs: -L\${libdir} -ldoca_capi -Wl,-rpath,\${libdir}
PC
}
# The per-library files are 2.7's way: a lower level gets doca.pc alone (and loses any left by
# an earlier install of a higher level into this prefix).
for side in "" host/ dpu/ any/; do
    rm -f "$pcdir/$side"doca-*.pc
done
if [ "$level" -lt 27 ]; then
    libs=""
fi
for pc in doca $libs; do
    write_pc "$pc" host > "$pcdir/$pc.pc"
    for side in host dpu any; do
        mkdir -p "$pcdir/$side"
        write_pc "$pc" "$side" > "$pcdir/$side/$pc.pc"
    done
done
if [ ! -e "$prefix/lib/pkgconfig" ] || [ -L "$prefix/lib/pkgconfig" ]; then
    ln -sfn "$multiarch/pkgconfig" "$prefix/lib/pkgconfig"
fi

# DOCA ships its tools with the SDK (tools/doca_caps): ours, built beside the library —
# doca_caps (the emulated machine) and doca_emu (the live view of a running emulation).
for tool in doca_caps doca_emu; do
    found=""
    for c in "$lib_dir/$tool" "$lib_dir/../$tool"; do
        if [ -x "$c" ]; then found="$c"; break; fi
    done
    if [ -n "$found" ]; then
        mkdir -p "$prefix/tools"
        cp "$found" "$prefix/tools/$tool"
    else
        echo "capi/install.sh: no $tool beside $lib_dir: tools/$tool not installed" \
            "(cargo build --release --bin $tool builds it)" >&2
    fi
done

echo "$level_version" > "$prefix/applications/VERSION"
echo "doca-emu C ABI, DOCA API level $level_name ($level_version), library of DOCA $doca_version, $multiarch" \
    > "$prefix/share/doca-emu/installed"
echo "installed DOCA API level $level_name into $prefix (pkg-config: $pcdir, or $pcdir/dpu for the DPU side)"
